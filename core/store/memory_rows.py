"""A memory as a row of the memories table and back, the checks a draft passes before it is written, and the rule
by which readers show one memory per text and one active version per key."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .. import write_ids
from ..errors import CortexError
from ..records import KINDS, MEMORY_COLUMNS, SCOPES, TASK_STATES, Anchors, Memory, MemoryDraft
from ..sizes import check_sizes
from ..text import identifier_words, path_words
from .sessions import check_session

FIELDS = list(MEMORY_COLUMNS)


def now() -> datetime:
    return datetime.now(UTC)


def validate_draft(draft: MemoryDraft, max_bytes: int) -> None:
    """Cheap checks only (sizes first): every caller runs this before the secret scan, so a text too large to
    store is refused in milliseconds whatever it holds."""
    check_sizes(max_bytes, "memory", text=draft.text, title=draft.title, key=draft.source_key, context=draft.context,
                tags=",".join(draft.tags), files=",".join(draft.files), symbols=",".join(draft.symbols))
    if not draft.text or not draft.text.strip():
        raise CortexError("memory text is empty")
    if draft.kind not in KINDS:
        raise CortexError(f"unknown kind {draft.kind!r}; choose one of {', '.join(KINDS)}")
    if draft.task_state and draft.task_state not in TASK_STATES:
        raise CortexError(f"unknown task state {draft.task_state!r}; choose one of {', '.join(TASK_STATES)}")
    if draft.scope not in SCOPES:
        raise CortexError(f"unknown scope {draft.scope!r}; choose one of {', '.join(SCOPES)}")
    if draft.session:
        check_session(draft.session)


def row_to_memory(row: dict) -> Memory:
    fields: dict[str, Any] = {name: row.get(name) for name in FIELDS}
    for name in ("tags", "files", "symbols"):
        fields[name] = list(fields[name] or [])
    for name in ("title", "branch", "commit", "source_key", "task_state", "context", "session"):
        if fields[name] is None:
            fields[name] = ""
    for name in ("created_at", "updated_at", "accessed_at"):
        value = fields[name]
        if value is not None and value.tzinfo is None:
            fields[name] = value.replace(tzinfo=UTC)
    fields["anchors"] = Anchors.from_json(fields.get("anchors"))
    return Memory(**fields, vector=row.get("vector"), vector_model=row.get("vector_model"))


def embed_text(draft: MemoryDraft | Memory) -> str:
    return f"{draft.title}\n{draft.text}" if draft.title else draft.text


TITLE_CHARS = 80


def default_title(text: str) -> str:
    """The first line, cut to a title's length."""
    return clipped_title(text.strip().splitlines()[0].strip().lstrip("#").strip())


def clipped_title(line: str, most: int = TITLE_CHARS) -> str:
    """`line` cut at a word to at most `most` characters with one ellipsis character (a cut mid-word read as a typo,
    and a front end that cut again added a second "...")."""
    if len(line) <= most:
        return line
    cut = line[:most - 1]
    at_word = cut.rsplit(" ", 1)[0] if " " in cut[most // 2:] else cut
    return at_word.rstrip(" ,;:-") + "…"


def memory_words(row: dict) -> str:
    """The one full-text column of a memory: title, text, tags, file and symbol names, identifier parts, context."""
    symbols = " ".join(row["symbols"] or [])
    parts = identifier_words(f"{row['title']} {row['text']} {symbols}")
    paths = " ".join(path_words(p) for p in row["files"] or [])
    fields = [row["title"], row["text"], " ".join(row["tags"] or []), paths, symbols, parts, row.get("context") or ""]
    return "\n".join(f for f in fields if f)


def memory_to_row(memory: Memory) -> dict:
    row = {name: getattr(memory, name) for name in FIELDS}
    row["anchors"] = memory.anchors.to_json() if memory.anchors is not None else None
    row["vector"] = memory.vector
    row["vector_model"] = memory.vector_model
    row["words"] = memory_words(row)
    row[write_ids.COLUMN] = write_ids.current() or None
    return row


def without_repeats(memories: list[Memory]) -> list[Memory]:
    """One active memory per text, and one active version per key. Two machines writing to a shared store at once
    can both insert the same text, or each a new version of one key; the writer that commits last settles them
    (see core/store/team.py), but a writer killed between its commit and that step leaves the repeat until the text or
    key is written again. Readers show the row settling would keep: the smallest id of a text, and the highest
    version of a key (the smallest id among equal versions)."""
    keep: dict[tuple, tuple] = {}
    for m in memories:
        if m.status == "active":
            key, rank = _repeat_key(m)
            keep[key] = min(keep.get(key, rank), rank)
    return [m for m in memories if m.status != "active" or keep[_repeat_key(m)[0]] == _repeat_key(m)[1]]


def _repeat_key(m: Memory) -> tuple[tuple, tuple]:
    """What two active memories must share to be repeats, and the rank by which the smallest is kept."""
    if m.source_key:
        return ("source_key", m.source_key), (-m.version, m.id)
    return ("text", m.scope, m.session, m.text_hash), (0, m.id)
