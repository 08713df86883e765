"""The Python API as docs/api.md shows it: the page's examples, run in its order in one namespace inside a small git
repository, each saying what the page says it prints; and `import cortex_tui` alone loads none of the engine."""

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import cortex_tui

from .conftest import SHOP_FILES, commit_file

PAGE = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def test_the_pages_examples_run_in_a_repository_and_print_what_it_says(repo, monkeypatch):
    for path, text in SHOP_FILES.items():
        commit_file(repo, path, text, f"Add {path}")
    monkeypatch.chdir(repo)
    page = PAGE.read_text(encoding="utf-8")
    names = re.search(r"```\nfrom cortex_tui import (.*)\n```", page).group(1).split(", ")
    assert sorted(names) == sorted(cortex_tui.__all__), "the page names every public name"
    namespace: dict = {}
    printed = []
    for example in re.findall(r"```python\n(.*?)```", page, re.S):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(example, str(PAGE), "exec"), namespace)
        printed.append(out.getvalue())
    opened, remembered, searched, selected, overview, refused = printed

    assert re.fullmatch(r"4 files indexed into \d+ chunks, 0 embeddings pending\n", opened)
    created, versioned = remembered.splitlines()
    assert created == f"created {namespace['result'].memory.id}" and versioned == "new_version"
    first = searched.splitlines()[0]
    assert re.fullmatch(r"\d\.\d{3} (memory|code  ) \S+ .*", first) and "shop/pricing.py" in searched
    assert "['Prices include a 20% tax; never add it twice.']" in searched
    document = namespace["document"]
    assert "file shop/pricing.py" in selected and "def price_of(sku):" in document.text
    assert f"\n{document.tokens} tokens\n{document.text[:300]}\n" in selected and document.tokens <= 2000
    assert overview.startswith("main ['Add a fuel surcharge to the cart total.']\n")
    assert "def price_of(sku):" in overview, "the map toward the cart shows what it calls"
    assert refused.startswith("refused: ") and "gossip" in refused and len(refused.splitlines()) == 1


def test_the_engine_loads_when_the_api_is_first_used_not_when_the_package_is_imported():
    """The thin client imports the package for its version, on every command: that must not import the engine."""
    script = ("import sys, cortex_tui\n"
              "def loaded(): return sorted(m for m in sys.modules if m.startswith(('cortex_tui.', 'lancedb')))\n"
              "print(loaded(), cortex_tui.__version__)\n"
              "from cortex_tui import Engine\n"
              "print(Engine.__module__, 'cortex_tui.core.engine' in loaded())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.stdout.splitlines() == [f"[] {cortex_tui.__version__}", "cortex_tui.core.engine True"], done.stderr
