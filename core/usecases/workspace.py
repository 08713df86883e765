"""What every use case works with: one repository's locations, settings, embedder and stores, the parts opened on
first use (the code index, the agent log) and the caches built from them, and the clock.

The engine makes one `Workspace` and hands it to each use case; nothing here knows the engine, so a use case never
calls back into it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..agentlog.agent_workspace import AgentFiles
from ..agentlog.agentlog import AgentLog
from ..anchors.anchoring import Anchoring
from ..config import SearchWeights, Settings
from ..context.repo_map import SymbolGraphCache
from ..context.select_files import ImportGraphCache
from ..embedding.embed import Embedder
from ..errors import DatabaseLocked, NoDatabase, ReadOnlyDatabase
from ..git import gitctx
from ..git.exclude import exclude_cortex_dir
from ..index.index import CodeIndex
from ..locations import is_remote_uri, team_queue_file
from ..pool import READS
from ..records import Memory
from ..search.definitions import DefinedNames
from ..search.search import Searcher
from ..store.store import GitPosition, MemoryStore
from ..store.store_set import StoreSet

if TYPE_CHECKING:
    from ..store.team import TeamMemory

NOT_OPENED = (NoDatabase, ReadOnlyDatabase, DatabaseLocked)
"""Why a database's tables cannot be opened now with nothing wrong with it: none was made yet; a read-only one lacks
them (they cannot be made); another process holds the write lock they would be made under. Reads that can do
without them answer "nothing yet"; a damaged database says so."""


@dataclass
class Caches:
    """What is built again on demand once let go (`Engine.release_caches`)."""

    import_graph: ImportGraphCache = field(default_factory=ImportGraphCache)
    """Selection's import graph, built once per version of the files table (any process's writes move it)."""
    defined_names: DefinedNames = field(default_factory=DefinedNames)
    """Search's vocabulary of defined names, read once per version of the chunks table (names typed with a slip)."""
    symbol_graph: SymbolGraphCache = field(default_factory=SymbolGraphCache)
    """The repository map's definition -> reference graph, built once per version of the chunks table."""

    def forget(self) -> None:
        for cache in (self.import_graph, self.symbol_graph, self.defined_names):
            cache.forget()


def utc_now() -> datetime:
    return datetime.now(UTC)


class Workspace:
    """One repository (or plain directory) and its database, as the use cases read and write it."""

    def __init__(self, root: Path, repo_root: Path | None, db_uri: str, settings: Settings, embedder: Embedder,
                 on_memories_changed: Callable[[], None], clock: Callable[[], datetime] = utc_now) -> None:
        self.root = root
        self.repo_root = repo_root
        self.db_uri = db_uri
        self.settings = settings
        self.embedder = embedder
        self.clock = clock
        # Dashboard workers and MCP threads share one engine: its lazy set-up (the code index, the agent log) happens
        # under one lock; the stores have their own (StoreSet).
        self.lock = threading.RLock()
        self.stores = StoreSet(settings, db_uri, embedder, on_memories_changed)
        self.anchoring = Anchoring(root, repo_root is not None, self._definers)
        self.caches = Caches()
        self._index: CodeIndex | None = None
        self._agent_log: AgentLog | None = None

    @property
    def is_repo(self) -> bool:
        return self.repo_root is not None

    def git(self, max_commits: int = 20, history_out: Future | None = None) -> gitctx.GitContext:
        # While a watcher keeps the index live, its count of changes tells when the working change must be read
        # again (a `git status` of the whole tree); without one, every call reads it.
        index = self._index
        return gitctx.read_git_context(self.root, max_commits, index.generation() if index is not None else None,
                                       history_out)

    def position(self) -> GitPosition:
        return GitPosition(*gitctx.position(self.root))

    # --- stores ----------------------------------------------------------------------------------------------------

    def init(self) -> MemoryStore:
        store = self.stores.repo(create=True)
        if self.repo_root is not None:
            exclude_cortex_dir(self.root)
        return store

    def store(self, create: bool = False) -> MemoryStore:
        """The repository's store; writers create it (and the `.git/info/exclude` line) on first use."""
        if create and not self.stores.is_open(self.db_uri):
            return self.init()
        return self.stores.repo(create)

    def has_store(self) -> bool:
        """Whether the repository's store exists (a remote one is taken to: only opening it can tell)."""
        return self.stores.is_open(self.db_uri) or is_remote_uri(self.db_uri) or Path(self.db_uri).exists()

    def store_for(self, scope: str) -> MemoryStore:
        """The store a scope's memories are written to (session memories stay in the repository's)."""
        if scope == "team":
            return self.stores.team_store(create=True)
        if scope == "global":
            store = self.stores.global_store(create=True)
            if store is not None:
                return store
        return self.store(create=True)

    def reading(self) -> list[MemoryStore]:
        """The stores reads consult (see `StoreSet.reading`)."""
        return self.stores.reading()

    def stores_if_any(self) -> list[MemoryStore]:
        """The stores reads consult, or none before anything was written here (see `NOT_OPENED`); a damaged
        database is never taken for one not made yet."""
        try:
            return self.reading()
        except NOT_OPENED:
            return []

    def existing_stores(self) -> list[MemoryStore]:
        """The stores reads consult; before anything was written here, a one-line error saying what to run."""
        try:
            return self.reading()
        except NoDatabase as exc:
            raise NoDatabase(f"nothing indexed or remembered yet in {self.root}: run `cortex index` or "
                             "`cortex remember`") from exc

    def team(self) -> TeamMemory:
        """Team writes: to the team store, or queued in `.cortex/` while it is unreachable."""
        from ..store.team import TeamMemory, TeamQueue

        # Writers create the repository's store (and its `.git/info/exclude` line) on first use; the queue lives
        # beside it, and reads need it even on a machine that has only written to the team.
        self.store(create=True)
        queue = TeamQueue(team_queue_file(self.root), self.settings.lock_timeout)
        return TeamMemory(lambda: self.stores.team_store(create=True), queue, self.settings.max_text_bytes)

    # --- the parts opened on first use -----------------------------------------------------------------------------

    def code_index(self, create: bool = False) -> CodeIndex:
        """The repository's code index (in the same database as its memories)."""
        with self.lock:
            if self._index is None:
                db = self.store(create=create).db
                self._index = CodeIndex(
                    db, self.embedder, self.root, self.is_repo, self.settings.max_file_bytes, self.settings.encoding
                )
                if self.settings.team_db:
                    from ..store.team import SharedVectorCache

                    team = self.stores.team_store
                    self._index.vector_cache = SharedVectorCache(self._index.vector_cache, lambda: team(create=True).vector_cache)
            return self._index

    def has_index(self) -> bool:
        try:
            index = self.code_index()
        except NOT_OPENED:
            return False
        return index.has_files()

    def agent_log(self, create: bool = False) -> AgentLog:
        """The agent context controller (in the repository's database, beside the memories it mirrors into), keeping
        its live files (setting `agent_dir`) in step."""
        with self.lock:
            if self._agent_log is None:
                store = self.store(create=create)
                where = self.settings.agent_dir.strip()
                files = AgentFiles(self.root / Path(where).expanduser()) if where else None
                self._agent_log = AgentLog(store.db, store, self.position, files)
            return self._agent_log

    def searcher(self, weights: SearchWeights | None = None) -> Searcher:
        """`weights`: other than the settings' (selection reads search with its own)."""
        index = self.code_index() if self.has_index() else None
        stores = self.existing_stores()
        # In the background: the first search overlaps it, the later ones find the full-text indexes in memory.
        for db, table in [(s.db, s.table) for s in stores] + ([(index.db, index.chunks)] if index is not None else []):
            READS.submit(db.prewarm_text_index, table)
        return Searcher(stores, index, self.embedder, weights or self.settings.search, self.caches.defined_names)

    # --- anchors: the code a memory describes, and whether it changed since (core/anchors) -------------------------

    def _definers(self, symbols: Sequence[str]) -> tuple[str, ...]:
        if not self.has_index():
            return ()
        from ..search.definitions import definers

        rows = definers(self.code_index().chunks, symbols, None, ["path"])
        return tuple(dict.fromkeys(r["path"] for r in rows))[:8]

    def checked(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories, each marked when the code it is anchored to changed since (see core/anchors)."""
        return self.anchoring.checked(memories)
