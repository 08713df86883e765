"""One vocabulary of ids: what search, context selection, the memory graph and the dashboard's panes name a memory,
a code chunk, a file, a symbol or a commit by.

A `Key` is a kind and an id, compared and hashed as such. It has one string form, the memory graph's node names
(`mem:<id>`, `chunk:<id>`, `file:<path>`, `sym:<name>`, `commit:<sha>`): what `cortex graph` and the MCP tool
accept and print. `str()` writes it and `Key.parse` reads it, here only; no other module splits an id at `:`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

KeyKind = Literal["memory", "chunk", "file", "symbol", "commit"]
KINDS: tuple[KeyKind, ...] = get_args(KeyKind)

_PREFIX: dict[KeyKind, str] = {"memory": "mem", "chunk": "chunk", "file": "file", "symbol": "sym", "commit": "commit"}
"""Each kind's prefix in the string form (the graph's short names for memories and symbols)."""
_KIND_OF: dict[str, KeyKind] = {prefix: kind for kind, prefix in _PREFIX.items()}


@dataclass(frozen=True, order=True, slots=True)
class Key:
    """A memory (by id), a code chunk (by id), a file (by its repository path), a symbol (qualified name) or a
    commit (full sha). Ordered by kind, then id."""

    kind: KeyKind
    id: str

    def __str__(self) -> str:
        return f"{_PREFIX[self.kind]}:{self.id}"

    def to_json(self) -> str:
        """JSON answers print a key in its string form (the CLI's and the MCP server's `plain` call this)."""
        return str(self)

    @classmethod
    def parse(cls, text: str) -> Key | None:
        """The key `text` writes in the string form; None when it names no kind (a bare path, id or sha)."""
        prefix, colon, ident = text.partition(":")
        kind = _KIND_OF.get(prefix)
        return cls(kind, ident) if kind is not None and colon else None

    @classmethod
    def memory(cls, memory_id: str) -> Key:
        return cls("memory", memory_id)

    @classmethod
    def file(cls, path: str) -> Key:
        return cls("file", path)
