"""The engine's record types: what a memory is, and what writing one did."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

KINDS = ("decision", "note", "task", "fact", "observation", "link", "agent")
SCOPES = ("session", "repo", "global", "team")
PAST_SESSION_TAG = "claude-code"
"""The tag of an imported past agent session's turns (`cortex import --claude-sessions`)."""
PAST_SESSIONS = ("mixed", "without", "only", "beside")
"""How a search treats them: in with the rest, left out, alone, or as a second list beside the rest."""
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
    anchors: Anchors | None = None
    """What the memory describes as it was when written; the engine records it (a caller leaves it None)."""
    session: str = ""
    """For scope `session`: the session that writes it (an agent's session, a dashboard run); reads in other
    sessions do not show it (see `core/store/sessions.py`)."""


@dataclass(frozen=True)
class SymbolAnchor:
    """A definition as a memory saw it: its qualified name, 1-based inclusive lines and a hash of its text."""

    name: str
    start: int
    end: int
    hash: str


@dataclass(frozen=True)
class FileAnchor:
    """A file as a memory saw it: its git blob id and the anchored definitions in it."""

    path: str
    blob: str
    symbols: tuple[SymbolAnchor, ...] = ()


@dataclass(frozen=True)
class Anchors:
    """The code a memory describes, recorded when it was written (or confirmed), at commit `commit`."""

    commit: str
    files: tuple[FileAnchor, ...]

    def to_json(self) -> str:
        return json.dumps({"commit": self.commit, "files": [
            {"path": f.path, "blob": f.blob, "symbols": [[s.name, s.start, s.end, s.hash] for s in f.symbols]}
            for f in self.files]}, separators=(",", ":"))

    @staticmethod
    def from_json(text: str | None) -> Anchors | None:
        if not text:
            return None
        data = json.loads(text)
        return Anchors(data.get("commit", ""), tuple(
            FileAnchor(f["path"], f["blob"], tuple(SymbolAnchor(n, a, b, h) for n, a, b, h in f.get("symbols", [])))
            for f in data.get("files", [])))


@dataclass(frozen=True)
class CodeChange:
    """How the code a memory is anchored to changed since it was written: `summary` is the one line shown."""

    summary: str
    state: str
    """`changed` (a definition or anchored file differs), `deleted` (a symbol or file is gone) or `renamed`."""
    symbol: str = ""
    path: str = ""
    commit: str = ""
    """The commit that made the change (short id), or empty when the change is not committed yet."""
    added: int = 0
    removed: int = 0
    in_progress: bool = False
    """The change is the work going on now (uncommitted, or on the current branch's own commits): the memory is
    what matters now, flagged, not stale."""

    def to_json(self) -> dict:
        return dict(self.__dict__)


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
    session: str = ""
    """The session a memory of scope `session` belongs to (empty for other scopes, and for session memories
    written before sessions had ids, which every read shows)."""
    vector: list[float] | None = field(default=None, repr=False)
    vector_model: str | None = field(default=None, repr=False)
    """The embedding model that made `vector` (None: written before models were recorded)."""
    anchors: Anchors | None = field(default=None, repr=False)
    """The code this memory describes, as it was when written or last confirmed (None: not about code)."""
    code_change: CodeChange | None = None
    """Set on a memory in an answer when its anchored code changed since (never stored: checked per answer)."""

    @property
    def store(self) -> str:
        """Which store holds this memory: the engine writes each scope to its own store (session and repo
        memories to the repository's), so the scope names it."""
        return self.scope if self.scope in ("global", "team") else "repo"

    @property
    def is_open_task(self) -> bool:
        return self.kind == "task" and self.task_state == "open" and self.status == "active"

    @property
    def code_changed(self) -> bool:
        """Whether the code this memory describes changed since it was written or confirmed (as last checked)."""
        return self.code_change is not None

    def to_json(self) -> dict:
        """A JSON-ready view; the vector is left out."""
        out = {k: v for k, v in self.__dict__.items() if k not in VECTOR_FIELDS}
        out["store"] = self.store
        out["anchors"] = json.loads(self.anchors.to_json()) if self.anchors is not None else None
        out["code_change"] = self.code_change.to_json() if self.code_change is not None else None
        for key in ("created_at", "updated_at", "accessed_at"):
            out[key] = out[key].isoformat()
        return out


@dataclass(frozen=True)
class RememberResult:
    """The memory now stored, and whether it was created, versioned or an existing duplicate."""

    memory: Memory
    outcome: str
    """`created`, `new_version` (an older version under the same key was superseded), `duplicate`, or
    `near_duplicate` (nothing stored: `memory` is the active memory that says the same in other words)."""


@dataclass(frozen=True)
class LastPruned:
    """When a retention policy last forgot memories in a store, and how many."""

    at: datetime
    count: int


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
    pruned: int = 0
    """Memories a retention policy has forgotten here, ever (`cortex gc`, or after a `remember`)."""
    last_pruned: LastPruned | None = None


MEMORY_COLUMNS = tuple(f for f in Memory.__dataclass_fields__ if f not in (*VECTOR_FIELDS, "code_change"))
"""The columns a memory's row holds besides its vector (`anchors` as JSON text; a code change is never stored)."""
