"""What the docs and the code's own prose point at exists.

Links. Every relative markdown link in README.md and docs/*.md names a file that exists, and its `#anchor` (on the
same page or another) is the anchor of a heading there, computed as GitHub computes it: lower-cased, every
character but letters, digits, `_`, `-` and spaces dropped, spaces made `-`, a repeated heading given `-1`, `-2`.

Names. The texts read are README.md and docs/*.md (outside fenced code blocks), and the docstrings, attribute
docstrings and `#` comments of core/, app/, widgets/ and themes/. docs/benchmarks-history.md is left out: it is a
dated record, and the names in a dated section are those of the code of that day. A reference is:

- a backticked span, or in running text a bare `cortex_tui.` dotted name, a `core.` one whose next part is a
  module's lower-case name (`core.quotePath` is git's setting), or a path from `core/`, `app/`, `widgets/`,
  `themes/`, `tests/` or `docs/`. Trailing `()`, punctuation and a `:LINE` or `:LINE-LINE` suffix are
  dropped first. A span holding a space, a quote, `=`, `<`, `*`, `$`, brackets or the like is a command, a shell
  or code snippet or a placeholder, not a reference, and is skipped.
- a path (it holds `/`): checked when its first folder is one of the repository's own top folders (it must exist
  from the root) or one of the product's package folders (`cli/parser.py`, `bridge/remote.py`: it must be the tail
  of a real path). A path in another project (`flask/json/tag.py`, `src/click/core.py`) starts elsewhere and is
  not checked, and neither is a bare file name (`views.py`): the texts quote other projects' files by name.
- a dotted name (`core.search.rank`, `Engine.select`, `bridge.EngineBridge`): checked when it is about the
  product, that is when its first part is `cortex_tui`, a top folder, a product module or package (`search`,
  `bridge`), or a product class (`Engine`), or when a later part is a product module or class (so a module name
  that is gone, `remote_bridge.RemoteBridge`, is caught by the class it names). It is not checked when it is a
  setting (`search.neighbour`: a path through `Settings`' fields), or when its first part is a module outside the
  product (`os.environ`, `http.client`: a module of ours of the same name does not count when the outside one
  has that attribute), or when it is one of the few other projects' names listed in FOREIGN (werkzeug's
  `Request.get_data`: we have a `Request` too).
  It resolves when a prefix of its parts is the tail of a product module's dotted name (`search.rank` is
  `core.search.rank`) and the rest are names in that module, then members of the classes they name (methods,
  class attributes, fields, `self.x` set in a method, inherited from product bases); or when its first part is a
  product class and the rest are its members. A name bound to something that is not a class (a function, an
  instance) ends the check: its attributes are not known without running it. A lower-case first part that is
  not `cortex_tui`, `core`, `widgets` or `themes` may be a variable (`results.query`, a Textual `app.record`):
  its next part must then be a member of some product class.
- a lone name (`engine_calls`, `validate_call`) is not checked: one word is a function, a variable, a key or
  another library's function as often as a module of ours.

A name that is not about the product is skipped rather than guessed at: a CLI command, a config key, a value, a
shell snippet or another project's function is not a reference.

Lists. Where a doc lists what the code has, it lists all of it: the MCP tools (README's "Tools:" and docs/mcp.md's
table), the commands the resident server runs (docs/usage.md's "Served:"), the settings (docs/configuration.md's
table, or its `[table]` for a group), the dependencies of pyproject.toml (docs/dependencies.md) and the modules at
the root of app/ (docs/architecture.md).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import pytest
from cortex_tui.core.config import Settings
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("core", "app", "widgets", "themes")
TOP_FOLDERS = {*PRODUCT, "tests", "docs", "cortex_tui", ".ci"}
# First parts that name the product and nothing else (`app` is also every Textual program's app object).
STRICT = {"cortex_tui", "core", "widgets", "themes"}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
HISTORY = ROOT / "docs" / "benchmarks-history.md"


# ---------------------------------------------------------------- links


def github_anchor(heading: str) -> str:
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def heading_anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
            continue
        match = None if in_fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            base = github_anchor(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def prose_lines(path: Path) -> list[tuple[int, str]]:
    """A markdown file's lines outside fenced code blocks, numbered from 1."""
    lines, in_fence = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            lines.append((number, line))
    return lines


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for number, line in prose_lines(path):
        # Backticked text is code, and `[x](y)` in it is no link.
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if re.match(r"[a-z]+:", target):
                continue
            file_part, _, anchor = target.partition("#")
            target_path = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(root)}:{number}: {target}"
            if not target_path.exists():
                broken.append(f"{where} (no such file)")
            elif anchor and (target_path.suffix != ".md" or anchor not in heading_anchors(target_path)):
                broken.append(f"{where} (no such heading)")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_every_relative_link_and_anchor_resolves(path):
    assert broken_links(path) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "other.md").write_text("# The Title — `cortex x` (2026)\n## Notes\n## Notes\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](other.md#the-title--cortex-x-2026) [b](other.md#notes-1) [c](other.md#gone) [d](missing.md)\n"
        "```\n[e](missing2.md)\n```\n[f](https://example.com) `[g](nothing.md)` [h](#nowhere)\n"
    )
    assert [problem.split(": ", 1)[1] for problem in broken_links(page, root=tmp_path)] == [
        "other.md#gone (no such heading)",
        "missing.md (no such file)",
        "#nowhere (no such heading)",
    ]


# ---------------------------------------------------------------- what the product defines


@dataclass
class ClassInfo:
    members: set[str] = field(default_factory=set)
    bases: list[str] = field(default_factory=list)


@dataclass
class Product:
    modules: dict[str, dict[str, str]]  # dotted module name -> its names -> "class", "module", "imported" or "other"
    classes: dict[str, list[ClassInfo]]  # class name -> every class of that name
    files: list[str]  # paths of every product and test file, from the root
    packages: set[str]  # names of the product's package folders


def _class_info(node: ast.ClassDef) -> ClassInfo:
    info = ClassInfo(bases=[b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases])
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            info.members.add(item.name)
        elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            info.members.add(item.target.id)
        elif isinstance(item, ast.Assign):
            info.members.update(t.id for t in item.targets if isinstance(t, ast.Name))
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Assign, ast.AnnAssign)):
            targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    info.members.add(target.attr)
    return info


def top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """A module's statements, those under a top-level `if` (`TYPE_CHECKING`) or `try` included."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += top_level(node.body) + top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += top_level(node.body) + top_level(node.orelse) + top_level(node.finalbody)
            for handler in node.handlers:
                out += top_level(handler.body)
    return out


@cache
def product() -> Product:
    modules: dict[str, dict[str, str]] = {}
    classes: dict[str, list[ClassInfo]] = {}
    packages: set[str] = set()
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
                packages.add(parts[-1])
            names: dict[str, str] = {}
            for node in top_level(ast.parse(path.read_text(encoding="utf-8")).body):
                if isinstance(node, ast.ClassDef):
                    names[node.name] = "class"
                    classes.setdefault(node.name, []).append(_class_info(node))
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    names[node.name] = "other"
                elif isinstance(node, ast.Assign):
                    names.update((t.id, "other") for t in node.targets if isinstance(t, ast.Name))
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    names[node.target.id] = "other"
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    # An imported name is an attribute of the module too; what it is, is looked up by name.
                    for alias in node.names:
                        name = (alias.asname or alias.name).split(".")[0]
                        names.setdefault(name, "imported")
            modules[".".join(parts)] = names
    for name in list(modules):
        # A package's modules are its attributes.
        if "." in name:
            parent, _, leaf = name.rpartition(".")
            modules.setdefault(parent, {})[leaf] = "module"
    files = [
        str(p.relative_to(ROOT))
        for folder in (*PRODUCT, "tests", "cortex_tui")
        for p in (ROOT / folder).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    ]
    return Product(modules, classes, files, packages)


def class_members(name: str, seen: frozenset[str] = frozenset()) -> set[str] | None:
    """Every member of the product's classes called `name`, their product bases' included; None: no such class."""
    infos = product().classes.get(name)
    if infos is None:
        return None
    members: set[str] = set()
    for info in infos:
        members |= info.members
        for base in info.bases:
            if base not in seen and base != name:
                members |= class_members(base, seen | {name}) or set()
    return members


@cache
def settings_keys() -> set[str]:
    """Every setting's dotted key (`search.neighbour`, `retention.kinds`)."""
    keys: set[str] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in model.model_fields.items():
            key = f"{prefix}{name.rstrip('_')}"
            keys.add(key)
            kind = info.annotation
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                walk(kind, key + ".")

    walk(Settings, "")
    return keys


def is_setting(parts: list[str]) -> bool:
    keys = settings_keys()
    return any(".".join(parts[:n]) in keys for n in range(2, len(parts) + 1))


def _resolve_members(kind: str, name: str, rest: list[str]) -> bool:
    """Whether `rest` names members, one inside the other, of what `name` (of `kind`) is."""
    for part in rest:
        if kind != "class":
            return True  # a function's or an instance's attributes are not known without running it
        members = class_members(name)
        if members is None or part not in members:
            return False
        kind = "class" if part in product().classes else "other"
        name = part
    return True


def _module_names(tail: list[str]) -> list[str]:
    """The product modules whose dotted name ends with `tail`."""
    suffix = ".".join(tail)
    return [m for m in product().modules if m == suffix or m.endswith("." + suffix)]


def any_member(name: str) -> bool:
    """Whether some product class has a member `name`."""
    return any(name in info.members for infos in product().classes.values() for info in infos)


def resolves(parts: list[str]) -> bool:
    if parts[0] == "cortex_tui":
        parts = parts[1:]
        if not parts:
            return True
    for n in range(len(parts), 0, -1):
        for module in _module_names(parts[:n]):
            rest = parts[n:]
            if not rest:
                return True
            kind = product().modules[module].get(rest[0])
            if kind == "imported":
                kind = "class" if rest[0] in product().classes else "other"
            if kind not in (None, "module") and _resolve_members(kind, rest[0], rest[1:]):
                return True
    if parts[0] in product().classes:
        return _resolve_members("class", parts[0], parts[1:])
    # A lower-case first part that is not one of the product's folders may be a variable (`results.query`,
    # Textual's `app.record`) holding an instance of one of our classes: its member must exist on some class.
    return parts[0] not in STRICT and parts[0][0].islower() and any_member(parts[1])


@cache
def _leaves() -> frozenset[str]:
    return frozenset(m.rpartition(".")[2] for m in product().modules)


@cache
def external(parts: tuple[str, ...]) -> bool:
    """Whether the name is an attribute or submodule of a module outside the product (`os.environ`, `http.client`,
    `secrets.token_urlsafe`: the standard library's `http` and `secrets`, not ours)."""
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    if spec is None or str(spec.origin or "").startswith(str(ROOT)):
        return False
    if parts[0] not in _leaves() or len(parts) == 1:
        return True
    try:
        return importlib.util.find_spec(".".join(parts[:2])) is not None
    except (ImportError, ValueError):
        pass
    try:
        return hasattr(importlib.import_module(parts[0]), parts[1])
    except ImportError:
        return False


def about_the_product(parts: list[str]) -> bool:
    if is_setting(parts) or f"{parts[0]}.{parts[1]}" in FOREIGN or external(tuple(parts)):
        return False
    ours = _leaves() | set(product().classes) | {"cortex_tui", *TOP_FOLDERS}
    return any(part in ours for part in parts)


# ---------------------------------------------------------------- references


SPAN = re.compile(r"`([^`]+)`")
# In running text only the unambiguous: `core.` followed by a module's lower-case name (`core.quotePath` is git's
# setting), `cortex_tui.`, and paths from the product's top folders.
BARE_DOTTED = re.compile(r"(?<![\w./-])(?:cortex_tui(?:\.[A-Za-z_]\w*)+|core\.[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)*)\b")
BARE_PATH = re.compile(r"(?<![\w./-])(?:core|app|widgets|themes|tests|docs)/[\w./-]*\w")
DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
NOT_A_NAME = re.compile(r"""[\s'"=<>*$(){}\[\]|!?@#%^&+~,;\\]""")
FILE_SUFFIXES = {"py", "md", "json", "jsonl", "toml", "yml", "yaml", "txt", "lock", "js", "ts", "go", "rs", "lance",
                 "cfg", "ini", "sh", "html", "css", "manifest", "onnx", "whl", "gz", "log", "sock", "pyi"}
# Other projects' names that share a product class's name (werkzeug's `Request`).
FOREIGN = {"Request.get_data", "Request.stream"}


def clean(span: str) -> str:
    span = span.strip()
    span = re.sub(r"\(\)$", "", span)
    span = re.sub(r"[.,;:]+$", "", span)
    return re.sub(r":\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$", "", span)


def path_problem(path: str) -> str | None:
    path = path.removeprefix("./")
    first = path.split("/")[0]
    if first in TOP_FOLDERS:
        return None if (ROOT / path.rstrip("/")).exists() else "no such file"
    if first in product().packages and (path.endswith(".py") or path.endswith("/")):
        tail = "/" + path.rstrip("/")
        found = any(("/" + f).endswith(tail) or (tail + "/") in ("/" + f) for f in product().files)
        return None if found else "no such file"
    return None


def problem(span: str) -> str | None:
    """Why `span` names nothing that exists, or None (it does, or it is no reference)."""
    span = clean(span)
    if not span or NOT_A_NAME.search(span):
        return None
    if "/" in span:
        return path_problem(span)
    if not DOTTED.fullmatch(span) or span.rpartition(".")[2] in FILE_SUFFIXES:
        return None
    parts = span.split(".")
    if not about_the_product(parts):
        return None
    return None if resolves(parts) else "names nothing in the product"


def texts(path: Path) -> list[tuple[int, str]]:
    """The prose of a file with the line each piece starts on: a markdown file's paragraphs outside fenced code
    (a backticked span may run over a line break), a Python file's comments and docstrings (any string that is a
    statement of its own)."""
    if path.suffix == ".md":
        paragraphs: list[tuple[int, str]] = []
        for number, line in prose_lines(path):
            if paragraphs and line.strip() and paragraphs[-1][1] and number == paragraphs[-1][0] + paragraphs[-1][
                    1].count("\n") + 1:
                paragraphs[-1] = (paragraphs[-1][0], paragraphs[-1][1] + "\n" + line)
            elif line.strip():
                paragraphs.append((number, line))
        return paragraphs
    source = path.read_text(encoding="utf-8")
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.append((node.lineno, node.value.value))
    return found


def stale_names(path: Path) -> list[str]:
    """`file:line: `name` why` for every reference in `path` that names nothing."""
    stale = []
    for start, text in texts(path):
        spans = [(m.start(), m.group(1)) for m in SPAN.finditer(text)]
        outside = SPAN.sub(lambda m: " " * len(m.group(0)), text)
        spans += [(m.start(), m.group(0)) for m in (*BARE_DOTTED.finditer(outside), *BARE_PATH.finditer(outside))]
        for offset, span in sorted(spans):
            why = problem(span)
            if why:
                line = start + text[:offset].count("\n")
                stale.append(f"{path.relative_to(ROOT)}:{line}: `{clean(span)}` {why}")
    return stale


def code_files() -> list[Path]:
    return [p for folder in PRODUCT for p in sorted((ROOT / folder).rglob("*.py"))]


@pytest.mark.parametrize("path", [p for p in DOCS if p != HISTORY], ids=lambda p: p.name)
def test_every_name_a_doc_gives_exists(path):
    assert stale_names(path) == []


def test_every_name_a_docstring_or_comment_gives_exists():
    assert [finding for path in code_files() for finding in stale_names(path)] == []


@pytest.mark.parametrize("span, stale", [
    ("bridge.EngineBridge", True),
    ("remote_bridge.RemoteBridge", True),
    ("core.items", True),
    ("core/sessions.py", True),
    ("core.select.Item", True),
    ("core.what", True),
    ("Engine.no_such_method", True),
    ("cli/gone.py", True),
    ("app/bridge/calls.py:3-6", False),
    ("core.search.rank", False),
    ("cortex_tui.core.search.rank.fuse", False),
    ("search.rank", False),
    ("Engine.select", False),
    ("Engine.select()", False),
    ("bridge.local.EngineBridge", False),
    ("local.EngineBridge", False),
    ("Request.get_data", False),
    ("search.neighbour", False),
    ("os.environ", False),
    ("http.client", False),
    ("cortex ss", False),
    ("flask/json/tag.py", False),
    ("cli/parser.py", False),
])
def test_what_counts_as_a_stale_reference(span, stale):
    assert (problem(span) is not None) == stale


# ---------------------------------------------------------------- lists the docs keep of what the code has


def backticked(text: str) -> set[str]:
    """The first word of every backticked span in `text` (`remember(text, kind)` -> `remember`)."""
    return {re.split(r"[\s(/]", span.strip())[0] for span in SPAN.findall(text)}


def paragraph(path: Path, opening: str) -> str:
    """The paragraph (or list item) of `path` that starts with `opening`."""
    text = path.read_text(encoding="utf-8")
    start = text.index(opening)
    end = re.search(r"\n(?:\s*\n|- |\| )", text[start + len(opening):])
    return text[start: start + len(opening) + (end.start() if end else len(text))]


def table_rows(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("| ")]


def test_every_mcp_tool_is_named_in_the_readme_and_in_mcp_md():
    from cortex_tui.app.mcp.tools import TOOL_ALIASES, TOOL_CALLS

    tools = {*TOOL_CALLS, *TOOL_ALIASES}
    readme = backticked(paragraph(ROOT / "README.md", "Tools: "))
    mcp_table = backticked("\n".join(row.split(" | ")[0] for row in table_rows(ROOT / "docs" / "mcp.md")))
    assert (tools - readme, tools - mcp_table) == (set(), set())


def test_every_served_command_is_named_where_usage_md_lists_them():
    from cortex_tui.app.cli.client import SERVED

    served = backticked(paragraph(ROOT / "docs" / "usage.md", "- **Served:**").partition("**In-process")[0])
    assert SERVED - served == set()


def test_every_setting_has_a_row_in_configuration_md():
    rows = "\n".join(row.split(" | ")[0] for row in table_rows(ROOT / "docs" / "configuration.md"))
    documented = {name for name in re.findall(r"`([\w.]+)`", rows)}
    tables = {name for name, info in Settings.model_fields.items() if isinstance(info.annotation, type)
              and issubclass(info.annotation, BaseModel)}
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert [name for name in Settings.model_fields if name not in documented and name not in tables] == []
    assert [name for name in tables if f"[{name}]" not in text] == []


def test_every_dependency_has_a_row_in_dependencies_md():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [*project["dependencies"], *(d for extra in project["optional-dependencies"].values() for d in extra)]
    names = {re.split(r"[^A-Za-z0-9_.-]", requirement)[0].lower() for requirement in wanted}
    first_column = [row.split(" | ")[0].lower() for row in table_rows(ROOT / "docs" / "dependencies.md")]
    words = {word for cell in first_column for word in re.findall(r"[a-z0-9_.-]+", cell)}
    grammars = next(cell for cell in first_column if "grammar" in cell)
    missing = [name for name in sorted(names) if name not in words
               and not (name.startswith("tree-sitter-") and name.removeprefix("tree-sitter-") in grammars)]
    assert missing == []


def test_every_module_at_the_root_of_app_is_named_in_architecture_md():
    row = next(line for line in table_rows(ROOT / "docs" / "architecture.md") if line.startswith("| `app/` (root)"))
    modules = {p.name for p in (ROOT / "app").glob("*.py") if p.name != "__init__.py"}
    assert modules - backticked(row) == set()
