"""The layering rules hold: core never imports the UI, widgets never touch storage, git or the watcher."""

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
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


def test_the_engine_imports_lancedb_without_its_rest_client(tmp_path):
    """LanceDB's REST namespace client (half of its import time) is never loaded by the engine's own work, and is
    there whole for anything that asks for it afterwards; the `overrides` stand-in and pydantic's deferred builds
    last only while LanceDB imports (a model made afterwards builds at once, the real package still imports)."""
    code = (
        "import sys\n"
        "from cortex_tui.core.engine import Engine\n"
        "from cortex_tui.core.records import MemoryDraft\n"
        f"engine = Engine({str(tmp_path)!r})\n"
        "engine.remember(MemoryDraft(text='Invoices are numbered per year', kind='decision'))\n"
        "found = engine.search('invoice numbering')\n"
        "print(found.hits[0].text, engine.store().db.conn.list_tables().tables)\n"
        "print('lance_namespace_urllib3_client.api' in sys.modules, 'overrides' in sys.modules)\n"
        "import pydantic, lance_namespace\n"
        "print(lance_namespace.AlterTableDropColumnsRequest.__pydantic_complete__)  # unused here: never built\n"
        "print(lance_namespace.ListTablesResponse(tables=['t']).tables)  # a deferred model validates on first use\n"
        "class Later(pydantic.BaseModel):\n"
        "    n: int\n"
        "print(Later.__pydantic_complete__, Later.model_config.get('defer_build'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("Invoices are numbered per year [") and "'memories'" in out[0]
    assert out[1:] == ["False False", "False", "['t']", "True None"]
    whole = (
        "import sys\n"
        "from cortex_tui.core.lancedb_loader import load_lancedb\n"
        "load_lancedb()\n"
        "import lance_namespace_urllib3_client as client\n"
        "print(client.ApiClient.__name__)\n"
        "real = sys.modules['lance_namespace_urllib3_client']  # what the client's own modules import\n"
        "print(real.models.ListTablesResponse.__name__)\n"
        "from overrides import EnforceOverrides, override\n"
        "print(type(EnforceOverrides).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", whole], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["ApiClient", "ListTablesResponse", "EnforceOverridesMeta"]


def engine_importers() -> list[str]:
    """Core modules that import the engine facade. Features take what they need (git context, file rows, stores)
    and the engine composes them, so the call graph has no cycle."""
    found = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        rel = path.relative_to(ROOT / "core").with_suffix("")
        if rel.parts == ("engine",):
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


def module_graph() -> dict[str, set[str]]:
    """Every module of the package and what it imports (function-level and TYPE_CHECKING imports included)."""
    graph = {}
    for folder in ("core", "widgets", "app", "themes"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            package = ".".join(["cortex_tui", folder, *rel.parts[:-1]])
            graph[".".join(["cortex_tui", folder, *rel.parts])] = imported_modules(path, package)
    # The package itself (its version, and the Python API's names on first use).
    graph["cortex_tui"] = imported_modules(ROOT / "cortex_tui" / "__init__.py", "cortex_tui")
    return graph


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """A loop of the package's modules (or groups) importing each other, or [] when there is none: data flows one
    way, from git and files through the engine to the widgets, the app and its entry points."""
    try:
        TopologicalSorter({name: graph[name] & graph.keys() for name in graph}).prepare()
    except CycleError as exc:
        return exc.args[1]
    return []


def test_modules_import_each_other_one_way():
    assert import_cycle(module_graph()) == []


# The parts of the package (a subpackage each, see docs/architecture.md) and which parts each may import. Modules at
# the root of core/ that are plain vocabulary (errors, records, text, locations, config, tokens, ...) form `core`;
# the root modules that compose parts are parts of their own. `app` is app/'s root (printing, process edges).
ROOT_PARTS = {"core.engine", "core.answers", "core.requests", "core.doctor"}
CORE_VOCABULARY = {"core"}
MAY_IMPORT = {
    "cortex_tui": {"core", "core.context", "core.requests", "core.engine"},
    "core": set(),
    "core.secrets": {"core"},
    "core.embedding": {"core"},
    "core.store": {"core", "core.secrets", "core.embedding"},
    "core.git": {"core", "core.secrets"},
    "core.answers": {"core", "core.git"},
    "core.agentlog": {"core", "core.secrets", "core.store"},
    "core.index": {"core", "core.secrets", "core.embedding", "core.store", "core.git", "core.answers"},
    "core.search": {"core", "core.embedding", "core.store", "core.git", "core.answers", "core.index"},
    "core.anchors": {"core", "core.answers", "core.git", "core.index"},
    "core.requests": {"core", "core.search"},
    "core.context": {"core", "core.secrets", "core.store", "core.search", "core.requests", "core.answers"},
    "core.graph": {"core", "core.embedding", "core.store", "core.git", "core.answers", "core.search"},
    "core.doctor": {"core", "core.secrets", "core.embedding", "core.store", "core.index"},
    "core.usecases": {"core", "core.secrets", "core.embedding", "core.store", "core.git", "core.answers",
                      "core.agentlog", "core.index", "core.search", "core.requests", "core.context", "core.graph",
                      "core.anchors"},
    "core.engine": {"core", "core.embedding", "core.store", "core.git", "core.answers", "core.agentlog",
                    "core.index", "core.search", "core.requests", "core.context", "core.graph", "core.usecases"},
    "themes": set(),
    "widgets": {"core", "core.answers", "core.context"},
    "app": {"core", "core.secrets", "core.answers", "core.index"},
    "app.link": {"cortex_tui", "core"},
    "app.bridge": {"app.link", "core", "core.answers", "core.requests", "core.context", "core.graph", "core.index",
                   "core.engine"},
    "app.mcp": {"app", "app.link", "core", "core.requests", "core.context", "core.graph", "core.index",
                "core.engine"},
    "app.tui": {"app", "app.link", "app.bridge", "widgets", "themes", "core", "core.answers", "core.index",
                "core.requests", "core.context", "core.git", "core.engine"},
    "app.bench": {"app", "app.link", "app.bridge", "app.tui", "widgets", "core", "core.secrets", "core.embedding",
                  "core.store", "core.git", "core.index", "core.search", "core.context", "core.requests", "core.anchors", "core.engine"},
    "app.cli": {"app", "app.link", "app.bridge", "app.mcp", "app.bench", "core", "core.secrets", "core.answers",
                "core.requests", "core.agentlog", "core.context", "core.graph", "core.index", "core.store", "core.doctor", "core.engine"},
    "app.server": {"cortex_tui", "app", "app.link", "app.bridge", "app.mcp", "app.cli", "core", "core.git",
                   "core.engine"},
}
"""Read as layers, bottom up: core's vocabulary; secrets and the embedding model; the store; git; the answers;
agent log, index; search; context selection and the graph; the use cases composing them; the engine, their
facade. Above the engine: the socket link (what the thin client imports), the engine bridge, MCP, the dashboard,
benchmarks, the CLI (which registers `cortex mcp` and `cortex bench`) and the resident server (which runs CLI
commands and MCP tools)."""


def part_of(module: str) -> str | None:
    """The part a module (or a name imported from one) belongs to; None for the bare package names."""
    parts = module.split(".")
    if parts[0] != "cortex_tui":
        return None
    if len(parts) == 1:
        return "cortex_tui"
    if len(parts) == 2:
        return None  # `from .. import x` names the package; its modules are listed as well
    if parts[1] in ("core", "app") and (ROOT / parts[1] / parts[2]).is_dir():
        return f"{parts[1]}.{parts[2]}"
    if f"{parts[1]}.{parts[2]}" in ROOT_PARTS:
        return f"{parts[1]}.{parts[2]}"
    return parts[1]


def part_graph(graph: dict[str, set[str]]) -> dict[str, dict[str, list[str]]]:
    """part -> {imported part: the modules that import it}."""
    parts: dict[str, dict[str, list[str]]] = {}
    for module, names in graph.items():
        mine = part_of(module)
        edges = parts.setdefault(mine, {})
        for name in names:
            other = part_of(name)
            if other is not None and other != mine:
                edges.setdefault(other, []).append(module)
    return parts


def rule_breaks(graph: dict[str, set[str]]) -> list[str]:
    return [f"{part} imports {other} ({', '.join(sorted(set(modules)))})"
            for part, edges in sorted(part_graph(graph).items())
            for other, modules in sorted(edges.items()) if other not in MAY_IMPORT.get(part, ())]


def test_every_part_is_in_the_rule_table():
    assert set(part_graph(module_graph())) <= MAY_IMPORT.keys()


def test_parts_import_only_what_the_rule_table_allows():
    assert rule_breaks(module_graph()) == []


def test_parts_import_each_other_one_way():
    """The rule table itself and the imports as they are both run one way (no two parts import each other)."""
    assert import_cycle({part: set(edges) for part, edges in MAY_IMPORT.items()}) == []
    assert import_cycle({part: set(edges) for part, edges in part_graph(module_graph()).items()}) == []


def test_the_part_checker_catches_a_violation():
    """The store importing search (a layer above it), and two parts importing each other, are both caught."""
    graph = {"cortex_tui.core.store.store": {"cortex_tui.core.search.search.Searcher"},
             "cortex_tui.core.search.search": {"cortex_tui.core.store.store.MemoryStore"}}
    assert rule_breaks(graph) == ["core.store imports core.search (cortex_tui.core.store.store)"]
    parts = {part: set(edges) for part, edges in part_graph(graph).items()}
    assert set(import_cycle(parts)) == {"core.search", "core.store"}
    assert part_of("cortex_tui.core.errors.CortexError") == "core"
    assert part_of("cortex_tui.app.server.serve") == "app.server"


def command_modules() -> dict[str, Path]:
    """Every module the command registry (`cli.parser.COMMAND_MODULES`) names, by name: where each command's
    handlers are, served or not (a command may be served later), so that a new one is checked without a list here."""
    import importlib

    from cortex_tui.app.cli import parser

    return {module: Path(importlib.import_module(module, "cortex_tui.app.cli").__file__).resolve()
            for module in parser.COMMAND_MODULES}


SERVER_PATHS = ("command.py", "cli/main.py", "output.py", "mcp/tools.py", "bridge/local.py", "server/hosted.py")
"""What the resident server runs every command and call through, besides the commands' own modules."""
HANDLERS = (*sorted(str(path.relative_to(ROOT / "app")) for path in command_modules().values()), *SERVER_PATHS)
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


def test_every_served_command_is_declared_in_a_checked_module():
    """Each command the thin client sends to the server (`client.SERVED`) is in the registry, so its module is in
    HANDLERS: `map` and `snapshot` (cli/session_commands.py) were once served and missed by a hand-kept list."""
    from cortex_tui.app.cli import client, parser

    declared = {name for names in parser.COMMAND_MODULES.values() for name in names}
    assert client.SERVED - declared == set()
    assert "cli/session_commands.py" in HANDLERS


def test_command_handlers_take_their_streams_directory_and_environment_from_their_context():
    """The server runs commands side by side: a handler that read the process's streams, directory or environment
    would see another command's, or the server's."""
    assert [hit for name in HANDLERS for hit in process_state_reads(ROOT / "app" / name)] == []
