"""Cutting a file into chunks along symbol boundaries (tree-sitter), or into overlapping line windows.

A chunk is a run of whole lines. Definitions become chunks of their own; a definition too large for one chunk
is split at its inner definitions (methods) or, failing that, into line windows; small neighbours are merged so
the index is not flooded with three-line fragments. A typing overload (`@overload def match(...) -> X: ...`) is
code but defines nothing: its implementation, under the same name, is what a search for the name wants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..tokens import count_tokens
from .languages import SPECS, has_grammar, parser_for

MAX_CHUNK_TOKENS = 500
MIN_CHUNK_TOKENS = 60
WINDOW_LINES = 60
WINDOW_OVERLAP = 10
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_MAX_REFS = 150


@dataclass
class Chunk:
    """A run of whole lines of one file (1-based, inclusive) with the symbols it defines and names it uses."""

    start_line: int
    end_line: int
    text: str
    symbols: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)
    tokens: int = 0
    kind: str = "code"
    """`code` (definitions), `preamble` (imports and top-level statements) or `window` (no grammar)."""


@dataclass
class _Span:
    start: int
    end: int
    symbols: list[str]
    kind: str
    opens: bool = False
    """It starts with a definition's header: merged into the chunk before it only where that chunk defines the same
    name (Rust's `struct X` before `impl X`), never into another definition's."""


def chunk_file(text: str, language: str, encoding: str = "cl100k_base") -> list[Chunk]:
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    spans: list[_Span] | None = None
    measure = _LineTokens(lines, encoding)
    if has_grammar(language):
        parser = parser_for(language)
        if parser is not None:
            tree = parser.parse(text.encode("utf-8"))
            spans = _symbol_spans(tree.root_node, language, lines, measure)
    if spans is None:
        spans = [_Span(a, b, [], "window") for a, b in _windows(0, len(lines))]
    chunks = []
    for span in _merge_small(spans, measure):
        body = "".join(lines[span.start : span.end])
        if not body.strip():
            continue
        chunks.append(
            Chunk(
                start_line=span.start + 1,
                end_line=span.end,
                text=body,
                symbols=span.symbols,
                refs=_refs(body, span.symbols),
                tokens=count_tokens(body, encoding),
                kind=span.kind,
            )
        )
    return chunks


def _windows(start: int, end: int) -> list[tuple[int, int]]:
    out, pos = [], start
    while pos < end:
        stop = min(pos + WINDOW_LINES, end)
        out.append((pos, stop))
        if stop == end:
            break
        pos = stop - WINDOW_OVERLAP
    return out


class _LineTokens:
    """Token counts of line ranges from per-line counts (prefix sums). Used only to decide where to cut and
    what to merge; every final chunk is counted exactly."""

    def __init__(self, lines: list[str], encoding: str) -> None:
        self.prefix = [0]
        for line in lines:
            self.prefix.append(self.prefix[-1] + count_tokens(line, encoding))

    def __call__(self, start: int, end: int) -> int:
        return self.prefix[end] - self.prefix[start]


def _symbol_spans(root, language: str, lines: list[str], measure: _LineTokens) -> list[_Span]:
    spec = SPECS[language]
    spans: list[_Span] = []
    pending_start: int | None = None

    def flush(upto: int) -> None:
        # Top-level code that defines nothing, cut into windows when large: a JavaScript test file is one
        # `describe(...)` call (express's `test/res.sendFile.js` was a chunk of 904 lines), a script is statements.
        nonlocal pending_start
        if pending_start is not None and upto > pending_start:
            cuts = [(pending_start, upto)] if measure(pending_start, upto) <= MAX_CHUNK_TOKENS else \
                _windows(pending_start, upto)
            spans.extend(_Span(a, b, [], "preamble") for a, b in cuts)
        pending_start = None

    stubs = overload_stubs(root.children, language)
    leads = _leading_comments(root.children)
    for node in root.children:
        start = node.start_point[0]
        if pending_start is not None and start < pending_start:
            start = pending_start
        name = definition_name(node, language) if node.type in spec.definitions else None
        if name is None:
            if pending_start is None:
                pending_start = start
            continue
        start = max(leads.get(node.start_byte, start), pending_start or 0)
        flush(start)
        if node.start_byte in stubs:
            spans.append(_Span(start, node.end_point[0] + 1, [], "code"))
            continue
        spans.extend(_definition_spans(node, name, language, measure, prefix="", start=start))
    flush(len(lines))
    spans.sort(key=lambda s: s.start)
    return _cover_gaps(spans, len(lines))


def _definition_spans(node, name: str, language: str, measure: _LineTokens, prefix: str,
                      start: int | None = None) -> list[_Span]:
    """`start`: the line its chunk opens at, when a comment or attribute above the definition belongs to it."""
    start, end = node.start_point[0] if start is None else start, node.end_point[0] + 1
    qualified = f"{prefix}{name}"
    if measure(start, end) <= MAX_CHUNK_TOKENS:
        return [_Span(start, end, [qualified, *_inner_names(node, language, qualified)], "code")]
    spec = SPECS[language]
    inner = [c for c in body_children(node) if c.type in spec.definitions and definition_name(c, language)]
    if not inner:
        return [_Span(a, b, [qualified] if a == start else [], "code") for a, b in _windows(start, end)]
    spans: list[_Span] = []
    cursor = start
    stubs = overload_stubs(inner, language)
    leads = _leading_comments(body_children(node))
    for child in inner:
        c_start = max(leads.get(child.start_byte, child.start_point[0]), cursor)
        if c_start > cursor:
            spans.append(_Span(cursor, c_start, [qualified] if cursor == start else [], "code"))
        child_end = child.end_point[0] + 1
        if child.start_byte in stubs:
            if child_end > c_start:
                spans.append(_Span(c_start, child_end, [], "code"))
        else:
            child_name = definition_name(child, language)
            assert child_name is not None  # inner holds only definitions with a name
            for span in _definition_spans(child, child_name, language, measure, f"{qualified}.", start=c_start):
                if span.end > c_start:  # a child starting on its sibling's last line starts after it
                    span.start = max(span.start, c_start)
                    spans.append(span)
        cursor = max(cursor, child_end)
    if cursor < end:
        spans.append(_Span(cursor, end, [], "code"))
    return _header_opens_first_member(spans, measure)


_LEADING = frozenset({"comment", "line_comment", "block_comment", "attribute_item"})
"""Siblings that belong to the definition right below them: its doc comment (`//`, `///`, `/** */`, `#`) and a
Rust attribute (`#[derive(Debug)]`)."""


def _leading_comments(siblings) -> dict[int, int]:
    """For each node preceded by comments or attributes on the lines right above it (at most one blank line
    between, as express leaves under each JSDoc block), the line they start at, by the node's start byte: a
    function's doc comment is read, embedded and found with the function. (Cut apart, gin's `ClientIP` doc comment
    ranked above `Context.ClientIP`, with no name, and the function's own rank fell behind it.) A comment sharing a
    line with the code before it stays with that code."""
    siblings = list(siblings)
    out: dict[int, int] = {}
    for i, node in enumerate(siblings):
        if node.type in _LEADING:
            continue
        lead, j = node.start_point[0], i - 1
        while j >= 0 and siblings[j].type in _LEADING and siblings[j].end_point[0] >= lead - 2:
            if j > 0 and siblings[j - 1].end_point[0] >= siblings[j].start_point[0]:
                break  # a trailing comment of the line before
            lead, j = siblings[j].start_point[0], j - 1
        if lead < node.start_point[0]:
            out[node.start_byte] = lead
    return out


def _header_opens_first_member(spans: list[_Span], measure: _LineTokens) -> list[_Span]:
    """A large definition's header (`class MultiPartParser:` and little else) is too small for a chunk of its own;
    merged as small chunks are, it would end the chunk before it, another definition's. It opens the chunk of its
    first member instead, where it is read with what it introduces."""
    if len(spans) < 2 or measure(spans[0].start, spans[0].end) >= MIN_CHUNK_TOKENS:
        return spans
    header, first = spans[0], spans[1]
    if measure(header.start, first.end) > MAX_CHUNK_TOKENS:
        header.opens = True  # a chunk of its own, then: still not the end of the one before
        return spans
    first.start, first.opens = header.start, True
    first.symbols = header.symbols + [s for s in first.symbols if s not in header.symbols]
    return spans[1:]


def _cover_gaps(spans: list[_Span], total: int) -> list[_Span]:
    """Lines between definitions (comments, blank runs) join the following span so no line is lost."""
    out: list[_Span] = []
    cursor = 0
    for span in spans:
        if span.start < cursor:
            span.start = cursor
        if span.end <= span.start:
            continue
        if span.start > cursor:
            span.start = cursor
        out.append(span)
        cursor = span.end
    if cursor < total:
        if out:
            out[-1].end = total
        else:
            out.append(_Span(0, total, [], "preamble"))
    return out


def _merge_small(spans: list[_Span], measure: _LineTokens) -> list[_Span]:
    merged: list[_Span] = []
    for span in spans:
        if merged and (not span.opens or span.symbols[:1] and span.symbols[0] in merged[-1].symbols):
            prev = merged[-1]
            small = measure(prev.start, prev.end) < MIN_CHUNK_TOKENS or measure(span.start, span.end) < MIN_CHUNK_TOKENS
            if small and prev.end >= span.start and measure(prev.start, span.end) <= MAX_CHUNK_TOKENS:
                prev.end = max(prev.end, span.end)
                prev.symbols = prev.symbols + [s for s in span.symbols if s not in prev.symbols]
                prev.kind = "code" if "code" in (prev.kind, span.kind) else prev.kind
                continue
        merged.append(span)
    return merged


def body_children(node):
    if node.type == "export_statement" and node.child_by_field_name("declaration") is not None:
        node = node.child_by_field_name("declaration")
    assigned = _assigned_value(node) if node.type == "expression_statement" else None
    if assigned is not None:
        node = assigned[1]  # `module.exports = class Foo {...}`: the class's members
    body = node.child_by_field_name("body")
    if node.type == "decorated_definition":
        inner = node.child_by_field_name("definition")
        body = inner.child_by_field_name("body") if inner is not None else None
    if body is None:
        for child in node.children:
            if child.type in {"declaration_list", "class_body", "field_declaration_list", "body_statement", "block"}:
                body = child
                break
    return body.children if body is not None else node.children


def _inner_names(node, language: str, qualified: str) -> list[str]:
    spec = SPECS[language]
    names = []
    children = body_children(node)
    stubs = overload_stubs(children, language)
    for child in children:
        if child.type in spec.definitions and child.start_byte not in stubs:
            name = definition_name(child, language)
            if name:
                names.append(f"{qualified}.{name}")
    return names


def overload_stubs(siblings, language: str) -> set[int]:
    """Where the Python typing overloads among `siblings` start (`@overload`, `@t.overload`, `@typing.overload`)
    whose implementation is beside them under the same name: signatures for type checkers, code that defines
    nothing. An overload with no implementation beside it (a `.pyi` stub file's) still defines its name. (Other
    languages' declarations without a body, such as TypeScript's overload signatures and C prototypes, are not
    definition nodes at all.)"""
    if not any(node.type == "decorated_definition" for node in siblings):
        return set()  # no decorator here (every file of a language without them): nothing to name twice
    overloads: list[tuple[int, str]] = []
    implemented: set[str] = set()
    for node in siblings:
        name = definition_name(node, language) if node.type in SPECS[language].definitions else None
        if name is None:
            continue
        if _is_overload(node):
            overloads.append((node.start_byte, name))
        else:
            implemented.add(name)
    return {start for start, name in overloads if name in implemented}


def _is_overload(node) -> bool:
    """Decorated by `overload` or `<module>.overload` (the decorator's expression: a comment after it is its child
    too, as in `@overload  # type: ignore[misc]`)."""
    if node.type != "decorated_definition":
        return False
    for decorator in (c for c in node.children if c.type == "decorator"):
        expression = next((c for c in decorator.named_children if c.type != "comment"), None)
        if expression is not None and _text(expression).rsplit(".", 1)[-1] == "overload":
            return True
    return False


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text is not None else ""


def definition_name(node, language: str) -> str | None:
    """The name a definition node introduces, or None when it introduces none worth indexing."""
    kind = node.type
    if kind == "export_statement":
        inner = node.child_by_field_name("declaration")
        if inner is None or inner.type not in SPECS[language].definitions:
            return None
        return definition_name(inner, language)
    if kind == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return definition_name(inner, language) if inner is not None else None
    if kind in {"lexical_declaration", "variable_declaration"}:
        for child in node.children:
            if child.type == "variable_declarator":
                value = child.child_by_field_name("value")
                if value is not None and value.type in {"arrow_function", "function_expression", "function", "class"}:
                    return _text(child.child_by_field_name("name")) or None
        return None
    if kind == "impl_item":
        trait, target = node.child_by_field_name("trait"), node.child_by_field_name("type")
        if trait is not None:  # each `impl From<u8> for Foo` apart from `impl From<u16> for Foo`
            return f"{_text(trait)} for {_text(target)}"
        return _type_name(target) or None
    if kind == "method_declaration" and language == "go":
        return _go_method_name(node)
    if kind == "expression_statement":
        return _assigned_function_name(node)
    if kind == "type_declaration":
        for child in node.children:
            if child.type in {"type_spec", "type_alias"}:
                return _text(child.child_by_field_name("name")) or None
        return None
    if kind == "template_declaration":
        for child in node.named_children:
            name = definition_name(child, language) if child.type in SPECS[language].definitions else None
            if name:
                return name
        return None
    if kind in {"function_definition"} and language in {"c", "cpp"}:
        declarator = node.child_by_field_name("declarator")
        while declarator is not None and declarator.child_by_field_name("declarator") is not None:
            declarator = declarator.child_by_field_name("declarator")
        return _text(declarator) or None
    if kind == "type_definition":
        return _text(node.child_by_field_name("declarator")) or None
    name = node.child_by_field_name("name")
    return _text(name) or None


def _type_name(node) -> str:
    """A type as its methods are named: without its generic arguments (`impl<'a, W> ReceiverBuffer<'a, W>` defines
    `ReceiverBuffer.poll`, which is what a person types) and without a Go receiver's pointer (`*Context`)."""
    if node is None:
        return ""
    while node.type in {"generic_type", "pointer_type"}:
        inner = node.child_by_field_name("type") or next((c for c in node.named_children if "type" in c.type), None)
        if inner is None:
            break
        node = inner
    return _text(node)


def _go_method_name(node) -> str | None:
    """`func (c *Context) Next()` defines `Context.Next`: a method is named with its receiver's type, as a Python
    or Rust method is with its class's (a bare `Next` answers `Context.Next` no better than any other `Next`)."""
    name = _text(node.child_by_field_name("name"))
    receiver = node.child_by_field_name("receiver")
    params = [c for c in receiver.named_children if c.type == "parameter_declaration"] if receiver is not None else []
    owner = _type_name(params[0].child_by_field_name("type")) if params else ""
    if not name:
        return None
    return f"{owner}.{name}" if owner else name


_FUNCTION_VALUES = frozenset({"function_expression", "function", "arrow_function", "generator_function", "class"})


def _assigned_function_name(node) -> str | None:
    """A JavaScript function defined by assignment, as much of Node's code is: `res.send = function send(body)`
    defines `res.send`, `View.prototype.lookup = function` defines `View.lookup`, `exports.parse = ...` defines
    `parse`; `module.exports = function createApplication()` the function's own name; in a chain (`req.get =
    req.header = function header`) the first name. Other statements define nothing."""
    assignment = _assigned_value(node)
    if assignment is None:
        return None
    left, right = assignment
    if left.type == "identifier":
        return _text(left) or None
    names = _member_names(left)
    parts = [part for part in names if part != "prototype"]
    if not parts or names[-1] == "prototype":  # `Foo.prototype = ...` replaces a prototype
        return None
    for module in (["module", "exports"], ["exports"]):
        if parts[:len(module)] == module:
            parts = parts[len(module):] or [_text(right.child_by_field_name("name"))]
            break
    return ".".join(parts) if all(parts) else None


def _assigned_value(node):
    """(the first assigned name, the function or class assigned) of an expression statement, or None."""
    assignment = node.named_children[0] if node.named_children else None
    if assignment is None or assignment.type != "assignment_expression":
        return None
    left, right = assignment.child_by_field_name("left"), assignment.child_by_field_name("right")
    while right is not None and right.type == "assignment_expression":
        right = right.child_by_field_name("right")
    if left is None or right is None or right.type not in _FUNCTION_VALUES:
        return None
    return left, right


def _member_names(node) -> list[str]:
    """The names of a member expression's chain (`a.b.c`, however it is spread over lines), or none when a part
    is computed (`a[b]`, a call, `this`)."""
    names: list[str] = []
    while node.type == "member_expression":
        prop = node.child_by_field_name("property")
        if prop is None or prop.type != "property_identifier":
            return []
        names.append(_text(prop))
        node = node.child_by_field_name("object")
    return [_text(node), *reversed(names)] if node.type == "identifier" else []


def _refs(body: str, symbols: list[str]) -> list[str]:
    own = {s.rsplit(".", 1)[-1] for s in symbols}
    seen: dict[str, None] = {}
    for match in _IDENT.finditer(body):
        word = match.group(0)
        if word not in own and word not in seen:
            seen[word] = None
            if len(seen) >= _MAX_REFS:
                break
    return list(seen)
