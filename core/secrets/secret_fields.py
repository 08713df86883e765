"""Which stored fields refuse a secret and which redact it.

Free text that a person or an agent wrote (a memory's text, title, tags, key and context; an agent's goal, branch
purpose, roadmap, steps and commit summaries) is refused with a one-line error naming the field: nothing is lost,
the caller still holds the text, and nothing is stored that the caller did not write. Structural fields name things
that exist and cannot be renamed by the caller (a memory's files and symbols; file contents, paths and commit
messages read from the repository): there only the secret is replaced, so the rest stays findable.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields, is_dataclass, replace
from typing import Any, TypeVar

from ..errors import CortexError
from ..records import Memory, MemoryDraft
from ..text import text_hash
from .secrets import SecretHit, find_secrets, redact, redacted

T = TypeVar("T")

_UNSEEN = dict.fromkeys([*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, 0x200B, 0x200C, 0x200D, 0x2060,
                         0xFEFF])
"""Characters that a terminal or a reader does not show (controls, zero-width ones): a secret split by one
(`AKIA<backspace>Z7QW...`) is shown whole, so free text is also checked with them removed."""


def _secret_in(value: str) -> tuple[SecretHit, str] | None:
    """The first secret of value and the text it was found in (value, or value without `_UNSEEN`)."""
    hits = find_secrets(value)
    if not hits:
        seen = value.translate(_UNSEEN)
        if seen != value:  # a second scan only for text that holds such characters (a megabyte memory is scanned once)
            value, hits = seen, find_secrets(seen)
    return (hits[0], value) if hits else None


def _first_secret(value: str) -> SecretHit | None:
    found = _secret_in(value)
    return found[0] if found else None


def secret_line(value: str) -> int | None:
    """How many lines of value come before its first secret (0: on its first line), or None when it holds none:
    an import names the line of a file where the secret is, not where its section begins. `_UNSEEN` keeps newlines,
    so the count is the same in the text the secret was found in."""
    found = _secret_in(value)
    return found[1].count("\n", 0, found[0].start) if found else None


def draft_secret(draft: MemoryDraft) -> str | None:
    """Why a draft must be refused (`title: GitHub token`), or None when its free-text fields are clean."""
    named = [("text", draft.text), ("title", draft.title), ("key", draft.source_key), ("context", draft.context)]
    named += [("tags", tag) for tag in draft.tags]
    for name, value in named:
        hit = _first_secret(value)
        if hit:
            return f"{name}: {hit.kind}"
    return None


def secure_draft(draft: MemoryDraft) -> MemoryDraft:
    """The draft to store: refused if a free-text field holds a secret, with secrets in paths and symbols redacted."""
    reason = draft_secret(draft)
    if reason:
        name, kind = reason.split(": ", 1)
        raise CortexError(f"the memory's {name} looks like it contains {_a_secret(kind)}; it was not stored")
    return replace(draft, files=tuple(redacted(f) for f in draft.files),
                   symbols=tuple(redacted(s) for s in draft.symbols))


def refuse_secrets(**named: str | None) -> None:
    """Refuse agent text: `refuse_secrets(goal=goal)` raises a one-line error naming the first field with a secret."""
    for name, value in named.items():
        hit = _first_secret(value or "")
        if hit:
            raise CortexError(f"the {name.replace('_', ' ')} looks like it contains {_a_secret(hit.kind)}; "
                              "nothing was stored")


def _a_secret(kind: str) -> str:
    """`a secret (AWS access key)`; the generic rules' kind, `secret`, would only repeat the word."""
    return "a secret" if kind.strip().lower() == "secret" else f"a secret ({kind})"


def record_texts(records: Iterable[object]) -> dict[str, str]:
    """Every text field of some dataclass records, named `kind.field#i`, for `refuse_secrets(**record_texts(...))`."""
    out: dict[str, str] = {}
    for i, record in enumerate(records):
        if is_dataclass(record):
            for f in fields(record):
                value = getattr(record, f.name)
                if isinstance(value, str) and value:
                    out[f"{type(record).__name__.lower()} {f.name} #{i + 1}"] = value
    return out


def redact_item(item: T) -> tuple[T, int]:
    """A context item (`core.context.items.Item`) with secrets redacted in its text, path and memory title, and how many
    there were. Stored rows are clean already; this covers rows kept from before a rule existed."""
    # Read as Any: the secrets layer sits below context selection and may not import its Item type.
    fields_of: Any = item
    text, in_text = redact(fields_of.text)
    path, in_path = redact(fields_of.path)
    memory, in_title = fields_of.memory, 0
    if memory is not None:
        title, in_title = redact(memory.title)
        memory = replace(memory, title=title) if in_title else memory
    count = in_text + in_path + in_title
    return (replace(fields_of, text=text, path=path, memory=memory) if count else item), count


def scrub_memory(memory: Memory) -> tuple[Memory, int]:
    """A memory stored before a rule caught its secret, with every secret redacted in every field, and how many
    there were. Its text changed, so its vector no longer matches it: the model is cleared, which puts it in the
    queue of memories to embed again (full-text finds it meanwhile)."""
    count = 0

    def clean(value: str) -> str:
        nonlocal count
        out, found = redact(value)
        count += found
        return out

    scrubbed = replace(
        memory, text=clean(memory.text), title=clean(memory.title), context=clean(memory.context),
        source_key=clean(memory.source_key), tags=[clean(t) for t in memory.tags],
        files=[clean(f) for f in memory.files], symbols=[clean(s) for s in memory.symbols],
    )
    if not count:
        return memory, 0
    return replace(scrubbed, text_hash=text_hash(scrubbed.text), vector_model=""), count
