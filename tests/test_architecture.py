"""The layering rules hold: core never imports the UI, widgets never touch storage, git or the watcher."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = {
    "core": {"textual", "cortex_tui.app", "cortex_tui.widgets"},
    "widgets": {"lancedb", "pyarrow", "git", "watchfiles"},
}


def imported_modules(path: Path, package: str) -> set[str]:
    """Absolute names of everything a file imports, with relative imports resolved against its package."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            # `from . import cli` imports the module `cli` of the package (a name that is no module matches nothing).
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


@pytest.mark.parametrize("folder", sorted(RULES))
def test_layer_does_not_import_what_it_must_not(folder):
    offenders = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        rel = path.relative_to(ROOT / folder).with_suffix("")
        package = ".".join(["cortex_tui", folder, *rel.parts[:-1]])
        for name in imported_modules(path, package):
            if any(name == bad or name.startswith(bad + ".") for bad in RULES[folder]):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_the_rule_checker_catches_a_violation(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from ..app import cli\nimport textual.app\n")
    names = imported_modules(bad, "cortex_tui.core")
    assert {"cortex_tui.app", "textual.app"} <= names


def test_importing_the_engine_loads_no_textual():
    code = (
        "import sys, pkgutil, importlib, cortex_tui.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'cortex_tui.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] == 'textual'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def engine_importers() -> list[str]:
    """Core modules that import the engine facade. Features take what they need (git context, file rows, stores)
    and the engine composes them, so the call graph has no cycle; only benchmarks, which drive a whole engine, may."""
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        rel = path.relative_to(ROOT / "core").with_suffix("")
        if rel.parts in (("engine",),) or rel.parts[0] == "bench":
            continue
        package = ".".join(["cortex_tui", "core", *rel.parts[:-1]])
        if "cortex_tui.core.engine" in imported_modules(path, package):
            found.append(str(path.relative_to(ROOT)))
    return found


def test_no_feature_imports_the_engine():
    assert engine_importers() == []


def test_the_engine_import_check_sees_a_type_checking_import(tmp_path):
    feature = tmp_path / "feature.py"
    feature.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .engine import Engine\n")
    assert "cortex_tui.core.engine" in imported_modules(feature, "cortex_tui.core")


def import_cycle() -> list[str]:
    """A loop of the package's modules importing each other (function-level imports included), or [] when there is
    none: data flows one way, from git and files through the engine to the widgets, the app and its entry points."""
    from graphlib import CycleError, TopologicalSorter

    graph = {}
    for folder in ("core", "widgets", "app", "themes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            package = ".".join(["cortex_tui", folder, *rel.parts[:-1]])
            graph[".".join(["cortex_tui", folder, *rel.parts])] = imported_modules(path, package)
    try:
        TopologicalSorter({name: graph[name] & graph.keys() for name in graph}).prepare()
    except CycleError as exc:
        return exc.args[1]
    return []


def test_modules_import_each_other_one_way():
    assert import_cycle() == []


HANDLERS = ("cli/commands.py", "cli/agent_commands.py", "cli/serve_commands.py", "cli/main.py", "output.py",
            "mcp/tools.py", "bridge/local.py", "server/hosted.py")
"""What runs a command or a call inside the resident server, several at once."""
PROCESS_STATE = {("sys", "stdin"), ("sys", "stdout"), ("sys", "stderr"), ("os", "environ"), ("os", "getcwd"),
                 ("os", "chdir"), ("os", "getenv"), ("os", "putenv")}


def process_state_reads(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                (node.value.id, node.attr) in PROCESS_STATE:
            found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_command_handlers_take_their_streams_directory_and_environment_from_their_context():
    """The server runs commands side by side: a handler that read the process's streams, directory or environment
    would see another command's, or the server's."""
    assert [hit for name in HANDLERS for hit in process_state_reads(ROOT / "app" / name)] == []
