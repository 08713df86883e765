"""The engine's record types: what a memory is, and what writing one did."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

KINDS = ("decision", "note", "task", "fact", "observation", "link", "agent")
SCOPES = ("session", "repo", "global", "team")
STATUSES = ("active", "superseded", "deleted")
TASK_STATES = ("open", "done")
STEP_TAG, COMMIT_TAG = "agent-step", "agent-commit"
"""Tags of the memories the agent log writes: one per step, one per milestone commit."""


@dataclass(frozen=True)
class MemoryDraft:
    """What a caller wants remembered; the store fills in identity, git position and times."""

    text: str
    kind: str = "note"
    title: str = ""
    tags: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    symbols: tuple[str, ...] = ()
    source_key: str = ""
    scope: str = "repo"
    created_at: datetime | None = None
    """Set when importing something that happened earlier (an export, a conversation log)."""
    task_state: str = ""
    """For tasks: `open` (the default) or `done`, as kept by an export."""
    context: str = ""
    """Words that help find this memory but are not part of it (the turns around a conversation turn, the task an
    observation was made in). Searched by full-text search, never returned as the memory's text."""


VECTOR_FIELDS = ("vector", "vector_model")
"""A memory's embedding and the model that made it: storage detail, never part of what a memory says."""


@dataclass
class Memory:
    """One stored version of a memory."""

    id: str
    kind: str
    title: str
    text: str
    tags: list[str]
    files: list[str]
    symbols: list[str]
    branch: str
    commit: str
    scope: str
    source_key: str
    version: int
    status: str
    task_state: str
    created_at: datetime
    updated_at: datetime
    accessed_at: datetime
    text_hash: str
    context: str = ""
    vector: list[float] | None = field(default=None, repr=False)
    vector_model: str | None = field(default=None, repr=False)
    """The embedding model that made `vector` (None: written before models were recorded)."""

    @property
    def store(self) -> str:
        """Which store holds this memory: the engine writes each scope to its own store (session and repo
        memories to the repository's), so the scope names it."""
        return self.scope if self.scope in ("global", "team") else "repo"

    @property
    def is_open_task(self) -> bool:
        return self.kind == "task" and self.task_state == "open" and self.status == "active"

    def to_json(self) -> dict:
        """A JSON-ready view; the vector is left out."""
        out = {k: v for k, v in self.__dict__.items() if k not in VECTOR_FIELDS}
        out["store"] = self.store
        for key in ("created_at", "updated_at", "accessed_at"):
            out[key] = out[key].isoformat()
        return out


@dataclass(frozen=True)
class RememberResult:
    """The memory now stored, and whether it was created, versioned or an existing duplicate."""

    memory: Memory
    outcome: str
    """`created`, `new_version` (an older version under the same key was superseded) or `duplicate`."""


@dataclass(frozen=True)
class StoreStats:
    """Counts for `cortex stats`."""

    uri: str
    schema_version: int
    memories: int
    active: int
    by_kind: dict[str, int]
    open_tasks: int
    table_versions: int
    disk_bytes: int | None
