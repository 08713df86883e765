"""Imports of a source file resolved to files of the same repository, per language.

Extraction is by pattern over the text (robust on code that does not parse); resolution needs the set of all
indexed paths and a few repository facts (Go module path, tsconfig path aliases).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

import json5

_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)", re.M)
_PY_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([^\n#;]+))", re.M)
_JS_SPEC = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\bexport\s+\*\s+from\s*)['"]([^'"]+)['"]""")
_GO_BLOCK = re.compile(r"^import\s*\(([^)]*)\)", re.M | re.S)
_GO_SINGLE = re.compile(r'^import\s+(?:\w+\s+)?"([^"]+)"', re.M)
_GO_QUOTED = re.compile(r'"([^"]+)"')
_RS_MOD = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
_RS_USE = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?use\s+((?:crate|self|super)(?:::\w+)+)", re.M)
_JAVA = re.compile(r"^\s*import\s+(?:static\s+)?([\w.]+)(\.\*)?\s*;", re.M)
_C_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_RB = re.compile(r"""^\s*(require_relative|require)\s*\(?\s*['"]([^'"]+)['"]""", re.M)
_JS_EXTS = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", "/index.ts", "/index.tsx", "/index.js", "/index.jsx")


@dataclass
class RepoFacts:
    """What resolution needs to know about the whole repository."""

    paths: set[str]
    go_modules: dict[str, str] = field(default_factory=dict)
    """Go module path -> directory holding its go.mod."""
    ts_aliases: list[tuple[str, list[str]]] = field(default_factory=list)
    """tsconfig `paths` patterns (with `*`) -> target patterns relative to the repository root."""
    py_modules: dict[str, list[str]] = field(default_factory=dict)
    """Dotted module name suffixes -> files, so `pkg.mod` resolves under any source root (src/, lib/)."""
    by_basename: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def build(cls, root: Path, paths: set[str]) -> RepoFacts:
        facts = cls(paths=set())
        facts.update(root, added=paths)
        return facts

    def update(self, root: Path, added: set[str] | frozenset[str] = frozenset(),
               removed: set[str] | frozenset[str] = frozenset(), edited: set[str] | frozenset[str] = frozenset()) -> None:
        """Bring the facts in line with paths that appeared or went (and files among `edited` whose content
        changed), in time proportional to those paths: a watcher's batch must not rebuild the facts of a
        50k-file tree. Module configs (go.mod, tsconfig) are few: any of them touched re-reads all of them."""
        gone, new = removed & self.paths, added - self.paths
        for path in gone:
            self.paths.discard(path)
            _drop(self.by_basename, posixpath.basename(path), path)
            for name in _py_names(path):
                _drop(self.py_modules, name, path)
        grown: set[str] = set()
        for path in new:
            self.paths.add(path)
            self.by_basename.setdefault(posixpath.basename(path), []).append(path)
            for name in _py_names(path):
                self.py_modules.setdefault(name, []).append(path)
                grown.add(name)
        for name in grown:
            self.py_modules[name].sort(key=lambda p: (p.count("/"), p))
        if any(_is_config(p) for p in gone | new | (edited & self.paths)):
            self.go_modules, self.ts_aliases = {}, []
            for path in sorted(p for p in self.paths if _is_config(p)):
                if posixpath.basename(path) == "go.mod":
                    match = re.search(r"^module\s+(\S+)", _read(root / path), re.M)
                    if match:
                        self.go_modules[match.group(1)] = posixpath.dirname(path)
                else:
                    self.ts_aliases.extend(_ts_aliases(root, path))


_CONFIG = re.compile(r"(^|/)([tj]sconfig(\.[\w-]+)?\.json|go\.mod)$")


def _is_config(path: str) -> bool:
    return _CONFIG.search(path) is not None


def _py_names(path: str) -> list[str]:
    """The dotted names a Python file can be imported by (every suffix of its module path)."""
    if not path.endswith((".py", ".pyi")):
        return []
    parts = path[: path.rfind(".")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return [".".join(parts[i:]) for i in range(len(parts))]


def _drop(mapping: dict[str, list[str]], key: str, path: str) -> None:
    files = mapping.get(key)
    if files and path in files:
        files.remove(path)
        if not files:
            del mapping[key]


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _ts_aliases(root: Path, config_path: str) -> list[tuple[str, list[str]]]:
    # tsconfig is JSONC (comments, trailing commas). A real parser, because stripping `//` comments by pattern
    # also eats the `//` of a `"$schema": "https://..."` line and loses every alias after it.
    try:
        config = json5.loads(_read(root / config_path))
    except ValueError:
        return []
    options = config.get("compilerOptions") if isinstance(config, dict) else None
    if not isinstance(options, dict):
        return []
    base_url = options.get("baseUrl", ".")
    base = posixpath.normpath(posixpath.join(posixpath.dirname(config_path), base_url if isinstance(base_url, str) else "."))
    base = "" if base == "." else base
    out = []
    paths = options.get("paths")
    for pattern, targets in (paths.items() if isinstance(paths, dict) else ()):
        if isinstance(targets, list):
            out.append((pattern, [posixpath.normpath(posixpath.join(base, t)) for t in targets if isinstance(t, str)]))
    return out


def resolve_imports(path: str, text: str, language: str, facts: RepoFacts) -> list[str]:
    """Repository files that `path` imports, in first-seen order, never itself."""
    resolver = _RESOLVERS.get(language)
    if resolver is None:
        return []
    found = [p for p in resolver(path, text, facts) if p in facts.paths and p != path]
    return list(dict.fromkeys(found))


def _python(path: str, text: str, facts: RepoFacts):
    package = posixpath.dirname(path)
    for match in _PY_IMPORT.finditer(text):
        for item in match.group(1).split(","):
            yield from _py_module(item.split(" as ")[0].strip(), facts)
    for match in _PY_FROM.finditer(text):
        dots, module, names = match.group(1), match.group(2), match.group(3) or match.group(4)
        names = [n.split(" as ")[0].strip() for n in names.replace("\n", " ").split(",") if n.strip()]
        if dots:
            base = package
            for _ in range(len(dots) - 1):
                base = posixpath.dirname(base)
            target = posixpath.join(base, *module.split(".")) if module else base
            yield from _py_file(target, facts)
            for name in names:
                yield from _py_file(posixpath.join(target, name), facts)
        else:
            yield from _py_module(module, facts)
            for name in names:
                yield from _py_module(f"{module}.{name}", facts, exact_only=True)


def _py_file(target: str, facts: RepoFacts):
    for candidate in (f"{target}.py", f"{target}/__init__.py", f"{target}.pyi"):
        if candidate in facts.paths:
            yield candidate
            return


def _py_module(module: str, facts: RepoFacts, exact_only: bool = False):
    files = facts.py_modules.get(module)
    if files:
        yield files[0]
    elif not exact_only and "." in module:
        yield from _py_module(module.rsplit(".", 1)[0], facts, exact_only=True)


def _js(path: str, text: str, facts: RepoFacts):
    here = posixpath.dirname(path)
    for match in _JS_SPEC.finditer(text):
        spec = match.group(1)
        if spec.startswith("."):
            yield from _js_file(posixpath.normpath(posixpath.join(here, spec)), facts)
            continue
        for pattern, targets in facts.ts_aliases:
            prefix, star, suffix = pattern.partition("*")
            if star and spec.startswith(prefix) and spec.endswith(suffix):
                middle = spec[len(prefix) : len(spec) - len(suffix)] if suffix else spec[len(prefix) :]
                for target in targets:
                    yield from _js_file(target.replace("*", middle), facts)
            elif not star and spec == pattern:
                for target in targets:
                    yield from _js_file(target, facts)


def _js_file(base: str, facts: RepoFacts):
    stem = base[: base.rfind(".")] if base.endswith((".js", ".jsx", ".mjs")) else None
    for ext in _JS_EXTS:
        if base + ext in facts.paths:
            yield base + ext
            return
    if stem:
        for ext in (".ts", ".tsx"):
            if stem + ext in facts.paths:
                yield stem + ext
                return


def _go(path: str, text: str, facts: RepoFacts):
    specs = _GO_SINGLE.findall(text)
    for block in _GO_BLOCK.findall(text):
        specs.extend(_GO_QUOTED.findall(block))
    for spec in specs:
        for module, directory in facts.go_modules.items():
            if spec == module or spec.startswith(module + "/"):
                target = posixpath.normpath(posixpath.join(directory, spec[len(module) :].lstrip("/")))
                target = "" if target == "." else target
                for candidate in sorted(facts.paths):
                    if posixpath.dirname(candidate) == target and candidate.endswith(".go") and not candidate.endswith("_test.go"):
                        yield candidate


def _rust(path: str, text: str, facts: RepoFacts):
    here = posixpath.dirname(path)
    name = posixpath.basename(path)
    mod_dir = here if name in {"lib.rs", "main.rs", "mod.rs"} else posixpath.join(here, name[:-3])
    for module in _RS_MOD.findall(text):
        for candidate in (f"{mod_dir}/{module}.rs", f"{mod_dir}/{module}/mod.rs"):
            if candidate in facts.paths:
                yield candidate
                break
    crate_root = _crate_src(path)
    for use in _RS_USE.findall(text):
        parts = use.split("::")
        if parts[0] == "crate":
            base = crate_root
        elif parts[0] == "self":
            base = mod_dir
        else:
            base = posixpath.dirname(mod_dir)
        segments = parts[1:]
        for n in range(len(segments), 0, -1):
            stem = posixpath.join(base, *segments[:n])
            hit = next((c for c in (f"{stem}.rs", f"{stem}/mod.rs") if c in facts.paths), None)
            if hit:
                yield hit
                break


def _crate_src(path: str) -> str:
    parts = path.split("/")
    if "src" in parts:
        return "/".join(parts[: len(parts) - 1 - parts[::-1].index("src")] + ["src"])
    return posixpath.dirname(path)


def _java(path: str, text: str, facts: RepoFacts):
    for name, star in _JAVA.findall(text):
        rel = name.replace(".", "/")
        if star:
            for candidate in facts.paths:
                if candidate.endswith(".java") and posixpath.dirname(candidate).endswith(rel):
                    yield candidate
            continue
        for candidate in facts.by_basename.get(rel.rsplit("/", 1)[-1] + ".java", []):
            if candidate.endswith(rel + ".java"):
                yield candidate


def _c(path: str, text: str, facts: RepoFacts):
    here = posixpath.dirname(path)
    for inc in _C_INCLUDE.findall(text):
        local = posixpath.normpath(posixpath.join(here, inc))
        if local in facts.paths:
            yield local
            continue
        matches = [c for c in facts.by_basename.get(posixpath.basename(inc), []) if c.endswith(inc)]
        if matches:
            yield min(matches, key=len)


def _ruby(path: str, text: str, facts: RepoFacts):
    here = posixpath.dirname(path)
    for how, spec in _RB.findall(text):
        spec = spec if spec.endswith(".rb") else spec + ".rb"
        if how == "require_relative":
            yield posixpath.normpath(posixpath.join(here, spec))
        else:
            for candidate in (f"lib/{spec}", spec):
                if candidate in facts.paths:
                    yield candidate
                    break


_RESOLVERS = {
    "python": _python,
    "javascript": _js,
    "typescript": _js,
    "tsx": _js,
    "go": _go,
    "rust": _rust,
    "java": _java,
    "c": _c,
    "cpp": _c,
    "ruby": _ruby,
}
