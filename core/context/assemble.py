"""Rendering a selection as one verbatim context document with provenance: markdown, xml or json.

Items are never rewritten or summarised. Before rendering, every item is scanned again for secrets and any match is
redacted (and counted). `document` is the one way a context is rendered and counted: selection uses it to fit the
budget in the chosen format, so the count it reports is the count of what is copied. Rendering a selection in
another format than it was fitted to may not fit; items are then dropped from the end until it does.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from ..errors import CortexError
from ..keys import Key
from ..secrets.secret_fields import redact_item
from ..secrets.secrets import redacted
from ..text import one_line
from ..tokens import count_tokens
from .items import Item, Selection
from .purpose_names import DEFAULT
from .purposes import Section, memory_of, sections

FORMATS = ("markdown", "xml", "json")
WORKING_TREE = "working tree"
"""What a file of the working change is labelled with instead of a commit: its text has not been committed."""
SUFFIXES = {"markdown": ".md", "xml": ".xml", "json": ".json"}
"""The file name ending of each format, for a context saved to a file."""
_LANG = {".py": "python", ".js": "javascript", ".ts": "typescript", ".tsx": "tsx", ".go": "go", ".rs": "rust",
         ".java": "java", ".rb": "ruby", ".c": "c", ".h": "c", ".cpp": "cpp", ".hpp": "cpp", ".md": "markdown",
         ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".sh": "bash"}


@dataclass(frozen=True)
class Assembled:
    """The rendered context and what it took."""

    text: str
    format: str
    tokens: int
    items: list[Item]
    redactions: int
    dropped: list[Item]
    """Items removed because the rendered document (headers included) would have exceeded the budget."""
    shares: Shares | None = None
    """Each item's exact share of `tokens` (`token_shares`), for a meter that shows them; None until computed."""

    @property
    def suffix(self) -> str:
        return SUFFIXES[self.format]


@dataclass(frozen=True)
class Document:
    """One rendering: the text, its exact token count, and how many secrets were redacted on the way."""

    text: str
    tokens: int
    items: list[Item]
    redactions: int


def check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise CortexError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")


@dataclass(frozen=True)
class Layout:
    """How a document is written: its format and the purpose its sections are laid out for (`purposes.py`)."""

    fmt: str = "markdown"
    purpose: str = DEFAULT


def document(task: str, commit: str, encoding: str, items: list[Item], layout: Layout) -> Document:
    """Redact, lay out in sections, render and count: the document exactly as it is printed or copied."""
    clean: list[Item] = []
    redactions = 0
    task = redacted(task)
    for item in items:
        item, n = redact_item(item)
        redactions += n
        clean.append(item)
    laid_out = sections(clean, layout.purpose)
    kept = [i for section in laid_out for i in section.items]
    if not kept:
        return Document("", 0, [], 0)
    text = _render(task, commit, encoding, laid_out, layout)
    return Document(text, count_tokens(text, encoding), kept, redactions)


def assemble(selection: Selection, fmt: str = "markdown") -> Assembled:
    """The selection rendered in `fmt`, laid out for the purpose it was selected for."""
    check_format(fmt)
    layout = Layout(fmt, selection.purpose)
    items = list(selection.chosen)
    dropped: list[Item] = []
    while True:
        doc = document(selection.task, selection.commit, selection.encoding, items, layout)
        if doc.tokens <= selection.budget or not items:
            break
        weakest = min(items, key=lambda i: (i.value, -i.tokens))
        items.remove(weakest)
        dropped.append(weakest)
    return Assembled(doc.text, fmt, doc.tokens, doc.items, doc.redactions, dropped)


@dataclass(frozen=True)
class Shares:
    """An assembled document's tokens split exactly: each item's (its text, its header, and any section heading or
    sources line it is the first to need) and the frame they all share (the title line, the format's wrapper).
    `frame + sum(items.values())` is the document's token count, so a meter's rows and total always add up."""

    frame: int
    items: dict[Key, int]


def token_shares(selection: Selection, assembled: Assembled) -> Shares:
    """Each item's share, as the document grows by it: the items are added one at a time in the order the document
    lays them out, and each is charged what the document's exact count grew by. Items counted one by one cannot be
    summed instead: a section heading is shared, and tokens merge across an item's edges."""
    if not assembled.items:
        return Shares(assembled.tokens, {})
    layout = Layout(assembled.format, selection.purpose)
    task = redacted(selection.task)

    def tokens(items: list[Item]) -> int:
        return count_tokens(_render(task, selection.commit, selection.encoding, sections(items, layout.purpose), layout),
                            selection.encoding)

    frame = previous = tokens([])
    shares: dict[Key, int] = {}
    for n, item in enumerate(assembled.items, 1):
        # The whole document's count is the one `assembled` carries (the same render): the shares end exactly there.
        now = assembled.tokens if n == len(assembled.items) else tokens(assembled.items[:n])
        shares[item.key] = now - previous
        previous = now
    return Shares(frame, shares)


def item_overhead(task: str, commit: str, encoding: str, item: Item, layout: Layout) -> int:
    """Tokens an item's header and separators (its section's heading included) add to a document, measured by
    rendering it with an empty text."""
    empty = replace(item, text="")
    base = base_cost(task, commit, encoding, layout)
    return count_tokens(_render(task, commit, encoding, sections([empty], layout.purpose), layout), encoding) - base


def base_cost(task: str, commit: str, encoding: str, layout: Layout) -> int:
    """Tokens of the document before any item (its title line, the format's frame): what the first item pays
    beside its own header."""
    return count_tokens(_render(task, commit, encoding, [], layout), encoding)


def text_cost(text: str, encoding: str, fmt: str) -> int:
    """Tokens a text takes inside a document of this format (json escapes newlines and quotes)."""
    if fmt == "json":
        return count_tokens(json.dumps(text, ensure_ascii=False)[1:-1], encoding)
    return count_tokens(text, encoding)


def _render(task: str, commit: str, encoding: str, laid_out: list[Section], layout: Layout) -> str:
    # Research numbers every item: the sources list and the items' headings cite each other.
    numbered = layout.purpose == "research"
    items = [i for section in laid_out for i in section.items]
    number = {id(i): n for n, i in enumerate(items, 1)} if numbered else {}
    if layout.fmt == "json":
        return json.dumps({
            "task": task, "commit": commit, "encoding": encoding,
            **({"purpose": layout.purpose} if layout.purpose != DEFAULT else {}),
            **({"sources": [{"n": number[id(i)], "source": _source(i, commit)} for i in items]} if numbered else {}),
            "items": [_json_item(i, commit, section.name, number.get(id(i)))
                      for section in laid_out for i in section.items],
        }, ensure_ascii=False, indent=1)
    if layout.fmt == "xml":
        purpose = f' purpose="{layout.purpose}"' if layout.purpose != DEFAULT else ""
        parts = [f'<context task="{_attr(task[:200])}" commit="{commit[:12]}"{purpose}>']
        if numbered and items:
            # The numbered list the items' `n` cite, as markdown's "Sources" section gives it.
            parts += ["<sources>"] + [f'<source n="{number[id(i)]}">{_attr(_source(i, commit))}</source>'
                                      for i in items] + ["</sources>"]
        for section in laid_out:
            if section.name:
                parts.append(f'<section name="{_attr(section.name)}">')
            parts += [_xml_item(i, commit, number.get(id(i))) for i in section.items]
            if section.name:
                parts.append("</section>")
        parts.append("</context>")
        return "\n".join(parts) + "\n"
    first = task.strip().splitlines()[0][:200] if task.strip() else ""
    parts = [f"# Context for: {first}", ""]
    if numbered and items:
        parts += ["# Sources", ""] + [f"[{number[id(i)]}] {_source(i, commit)}" for i in items] + [""]
    for section in laid_out:
        if section.name:
            parts += [f"# {section.name}", ""]
        for i in section.items:
            cite = f"[{number[id(i)]}] " if numbered else ""
            if i.kind == "memory":
                m = _memory(i)
                parts += [f"## {cite}Memory {m.id} · {m.kind} · {m.created_at:%Y-%m-%d} · {m.title}", ""]
                if m.code_change is not None:
                    parts += [f"(code changed since this was written: {m.code_change.summary})", ""]
                parts += [i.text.rstrip("\n"), ""]
            else:
                at = f" @ {_read_at(i, commit, 8)}" if commit else ""
                label = " (relevant regions; the rest elided)" if i.kind == "reduced" else ""
                fence = _fence(i.text)
                lang = _LANG.get("." + i.path.rsplit(".", 1)[-1], "") if "." in i.path else ""
                parts += [f"## {cite}{one_line(i.path)}:{_spans(i)}{at}{label}", "", f"{fence}{lang}", i.text.rstrip("\n"), fence,
                          ""]
    return "\n".join(parts)


def _source(i: Item, commit: str) -> str:
    """One line of the research sources list: where the item comes from, as exactly as it is known."""
    if i.kind == "memory":
        m = _memory(i)
        files = f", about {', '.join(m.files[:5])}" if m.files else ""
        return one_line(f"memory {m.id} ({m.kind}, {m.created_at:%Y-%m-%d}{files}): {m.title}")
    at = f" at commit {commit[:12]}" if commit and not i.uncommitted else f" ({WORKING_TREE})"
    return f"{one_line(i.path)} lines {_spans(i)}{at}"


def _xml_item(i: Item, commit: str, number: int | None) -> str:
    n = f' n="{number}"' if number is not None else ""
    if i.kind == "memory":
        m = _memory(i)
        changed = f' code_changed_since="{_attr(m.code_change.summary)}"' if m.code_change is not None else ""
        return (f'<memory{n} id="{m.id}" kind="{m.kind}" date="{m.created_at:%Y-%m-%d}" title="{_attr(m.title)}"'
                f'{changed}>{_cdata(i.text)}</memory>')
    return (f'<file{n} path="{_attr(i.path)}" lines="{_spans(i)}" kind="{i.kind}" commit="{_read_at(i, commit, 12)}">'
            f"{_cdata(i.text)}</file>")


def _json_item(i: Item, commit: str, section: str, number: int | None) -> dict:
    shaped = {**({"section": section} if section else {}), **({"source": number} if number is not None else {})}
    if i.kind == "memory":
        m = _memory(i)
        return {"kind": "memory", "id": m.id, "memory_kind": m.kind, "title": m.title, "date": m.created_at.isoformat(),
                "code_changed_since": m.code_change.summary if m.code_change is not None else None, **shaped,
                "text": i.text}
    return {"kind": i.kind, "path": i.path, "lines": _spans(i), "commit": _read_at(i, commit, len(commit)), **shaped, "text": i.text}


def _read_at(i: Item, commit: str, width: int) -> str:
    """Where a file's text was read: the commit (its first `width` characters), or the working tree for a file
    with uncommitted changes."""
    return WORKING_TREE if i.uncommitted else commit[:width]


_memory = memory_of


def _spans(i: Item) -> str:
    return ",".join(f"{a}-{b}" for a, b in i.ranges)


def _fence(text: str) -> str:
    """A backtick fence longer than any run of backticks in the text, so the text stays verbatim inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _attr(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def _cdata(text: str) -> str:
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"
