"""Rendering a selection as one verbatim context document with provenance: markdown, xml or json.

Items are never rewritten or summarised. Before rendering, every item is scanned again for secrets and any match is
redacted (and counted). The rendered document is counted exactly, and items are dropped from the end until it fits
the budget, so the promise "never over budget" holds for what is actually copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace

from .errors import CortexError
from .secrets import redact
from .select import Item, Selection
from .tokens import count_tokens

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


def ordered(items: list[Item]) -> list[Item]:
    """Memories first (oldest first), then files grouped by directory, each file's parts in line order."""
    memories = sorted((i for i in items if i.kind == "memory"), key=lambda i: (i.memory.created_at, i.key))
    code = sorted((i for i in items if i.kind != "memory"), key=lambda i: (i.path.rsplit("/", 1)[0] if "/" in i.path else "", i.path))
    return memories + code


def assemble(selection: Selection, fmt: str = "markdown") -> Assembled:
    if fmt not in FORMATS:
        raise CortexError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    clean: list[Item] = []
    redactions = 0
    for item in selection.chosen:
        text, n = redact(item.text)
        redactions += n
        clean.append(replace(item, text=text) if n else item)
    kept = ordered(clean)
    dropped: list[Item] = []
    while True:
        text = _render(selection, kept, fmt)
        tokens = count_tokens(text, selection.encoding)
        if tokens <= selection.budget or not kept:
            break
        weakest = min(kept, key=lambda i: (i.value, -i.tokens))
        kept.remove(weakest)
        dropped.append(weakest)
    if not kept:
        text, tokens = "", 0
    return Assembled(text, fmt, tokens, kept, redactions, dropped)


def _render(selection: Selection, items: list[Item], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({
            "task": selection.task, "commit": selection.commit, "encoding": selection.encoding,
            "items": [_json_item(i, selection.commit) for i in items],
        }, ensure_ascii=False, indent=1)
    if fmt == "xml":
        parts = [f'<context task="{_attr(selection.task[:200])}" commit="{selection.commit[:12]}">']
        for i in items:
            if i.kind == "memory":
                m = i.memory
                parts.append(f'<memory id="{m.id}" kind="{m.kind}" date="{m.created_at:%Y-%m-%d}" title="{_attr(m.title)}">'
                             f"{_cdata(i.text)}</memory>")
            else:
                parts.append(f'<file path="{_attr(i.path)}" lines="{_spans(i)}" kind="{i.kind}" commit="{selection.commit[:12]}">'
                             f"{_cdata(i.text)}</file>")
        parts.append("</context>")
        return "\n".join(parts) + "\n"
    first = selection.task.strip().splitlines()[0][:200] if selection.task.strip() else ""
    parts = [f"# Context for: {first}", ""]
    for i in items:
        if i.kind == "memory":
            m = i.memory
            parts += [f"## Memory {m.id} · {m.kind} · {m.created_at:%Y-%m-%d} · {m.title}", "", i.text.rstrip("\n"), ""]
        else:
            at = f" @ {selection.commit[:8]}" if selection.commit else ""
            label = {"reduced": " (relevant parts; other definitions as signatures)", "chunk": ""}.get(i.kind, "")
            fence = _fence(i.text)
            lang = _LANG.get("." + i.path.rsplit(".", 1)[-1], "") if "." in i.path else ""
            parts += [f"## {i.path}:{_spans(i)}{at}{label}", "", f"{fence}{lang}", i.text.rstrip("\n"), fence, ""]
    return "\n".join(parts)


def _json_item(i: Item, commit: str) -> dict:
    if i.kind == "memory":
        m = i.memory
        return {"kind": "memory", "id": m.id, "memory_kind": m.kind, "title": m.title, "date": m.created_at.isoformat(), "text": i.text}
    return {"kind": i.kind, "path": i.path, "lines": _spans(i), "commit": commit, "text": i.text}


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
