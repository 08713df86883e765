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
from ..records import Memory
from ..secrets.secret_fields import redact_item
from ..secrets.secrets import redacted
from ..tokens import count_tokens
from .items import Item, Selection

FORMATS = ("markdown", "xml", "json")
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


def ordered(items: list[Item]) -> list[Item]:
    """Memories first (oldest first), then files grouped by directory, each file's parts in line order."""
    memories = sorted((i for i in items if i.kind == "memory"), key=lambda i: (_memory(i).created_at, i.key))
    code = sorted((i for i in items if i.kind != "memory"), key=lambda i: (i.path.rsplit("/", 1)[0] if "/" in i.path else "", i.path))
    return memories + code


def document(task: str, commit: str, encoding: str, items: list[Item], fmt: str) -> Document:
    """Redact, order, render and count: the document exactly as it is printed or copied."""
    clean: list[Item] = []
    redactions = 0
    task = redacted(task)
    for item in items:
        item, n = redact_item(item)
        redactions += n
        clean.append(item)
    kept = ordered(clean)
    if not kept:
        return Document("", 0, [], 0)
    text = _render(task, commit, encoding, kept, fmt)
    return Document(text, count_tokens(text, encoding), kept, redactions)


def assemble(selection: Selection, fmt: str = "markdown") -> Assembled:
    check_format(fmt)
    items = list(selection.chosen)
    dropped: list[Item] = []
    while True:
        doc = document(selection.task, selection.commit, selection.encoding, items, fmt)
        if doc.tokens <= selection.budget or not items:
            break
        weakest = min(items, key=lambda i: (i.value, -i.tokens))
        items.remove(weakest)
        dropped.append(weakest)
    return Assembled(doc.text, fmt, doc.tokens, doc.items, doc.redactions, dropped)


def item_overhead(task: str, commit: str, encoding: str, item: Item, fmt: str) -> int:
    """Tokens an item's header and separators add to a document, measured by rendering it with an empty text."""
    empty = replace(item, text="")
    base = count_tokens(_render(task, commit, encoding, [], fmt), encoding)
    return count_tokens(_render(task, commit, encoding, [empty], fmt), encoding) - base


def text_cost(text: str, encoding: str, fmt: str) -> int:
    """Tokens a text takes inside a document of this format (json escapes newlines and quotes)."""
    if fmt == "json":
        return count_tokens(json.dumps(text, ensure_ascii=False)[1:-1], encoding)
    return count_tokens(text, encoding)


def _render(task: str, commit: str, encoding: str, items: list[Item], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({
            "task": task, "commit": commit, "encoding": encoding, "items": [_json_item(i, commit) for i in items],
        }, ensure_ascii=False, indent=1)
    if fmt == "xml":
        parts = [f'<context task="{_attr(task[:200])}" commit="{commit[:12]}">']
        for i in items:
            if i.kind == "memory":
                m = _memory(i)
                changed = f' code_changed_since="{_attr(m.code_change.summary)}"' if m.code_change is not None else ""
                parts.append(f'<memory id="{m.id}" kind="{m.kind}" date="{m.created_at:%Y-%m-%d}" title="{_attr(m.title)}"'
                             f'{changed}>{_cdata(i.text)}</memory>')
            else:
                parts.append(f'<file path="{_attr(i.path)}" lines="{_spans(i)}" kind="{i.kind}" commit="{commit[:12]}">'
                             f"{_cdata(i.text)}</file>")
        parts.append("</context>")
        return "\n".join(parts) + "\n"
    first = task.strip().splitlines()[0][:200] if task.strip() else ""
    parts = [f"# Context for: {first}", ""]
    for i in items:
        if i.kind == "memory":
            m = _memory(i)
            parts += [f"## Memory {m.id} · {m.kind} · {m.created_at:%Y-%m-%d} · {m.title}", ""]
            if m.code_change is not None:
                parts += [f"(code changed since this was written: {m.code_change.summary})", ""]
            parts += [i.text.rstrip("\n"), ""]
        else:
            at = f" @ {commit[:8]}" if commit else ""
            label = " (relevant regions; the rest elided)" if i.kind == "reduced" else ""
            fence = _fence(i.text)
            lang = _LANG.get("." + i.path.rsplit(".", 1)[-1], "") if "." in i.path else ""
            parts += [f"## {i.path}:{_spans(i)}{at}{label}", "", f"{fence}{lang}", i.text.rstrip("\n"), fence, ""]
    return "\n".join(parts)


def _json_item(i: Item, commit: str) -> dict:
    if i.kind == "memory":
        m = _memory(i)
        return {"kind": "memory", "id": m.id, "memory_kind": m.kind, "title": m.title, "date": m.created_at.isoformat(),
                "code_changed_since": m.code_change.summary if m.code_change is not None else None, "text": i.text}
    return {"kind": i.kind, "path": i.path, "lines": _spans(i), "commit": commit, "text": i.text}


def _memory(i: Item) -> Memory:
    assert i.memory is not None, "an item of kind memory carries its memory"
    return i.memory


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
