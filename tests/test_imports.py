"""Import resolution facts read from real configuration files."""

from cortex_tui.core.index.imports import RepoFacts, resolve_imports

TSCONFIG = """{
  "$schema": "https://json.schemastore.org/tsconfig",
  // path aliases used all over the app
  "compilerOptions": {
    "baseUrl": "./src", /* resolved from here */
    "paths": {"@core/*": ["core/*"], "@ui": ["ui/index.ts"],},
  },
}
"""


def _facts(tmp_path, files):
    for path, text in files.items():
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return RepoFacts.build(tmp_path, set(files))


def test_tsconfig_with_a_schema_url_keeps_its_path_aliases(tmp_path):
    facts = _facts(tmp_path, {
        "tsconfig.json": TSCONFIG,
        "src/core/store.ts": "export const store = 1\n",
        "src/ui/index.ts": "export const ui = 1\n",
        "src/app.ts": "import { store } from '@core/store'\nimport { ui } from '@ui'\n",
    })
    assert facts.ts_aliases == [("@core/*", ["src/core/*"]), ("@ui", ["src/ui/index.ts"])]
    app = (tmp_path / "src/app.ts").read_text()
    assert resolve_imports("src/app.ts", app, "typescript", facts) == ["src/core/store.ts", "src/ui/index.ts"]


def test_a_broken_or_odd_tsconfig_gives_no_aliases_and_no_error(tmp_path):
    for text in ("{ not json at all", "[1, 2]", '{"compilerOptions": {"baseUrl": 3, "paths": {"@x/*": "x/*"}}}', "\xff"):
        facts = _facts(tmp_path, {"tsconfig.json": text})
        assert facts.ts_aliases == []
