"""The engine facade: one object per repository that the CLI, the dashboard, the MCP server and the Python API
(docs/api.md) share.

It resolves where things live (repository root, database) and owns the embedder, the `Workspace` the use cases work
in (`core/usecases/`) and the background compactor; each operation here hands a use case its workspace and the
caller's request.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar, Unpack

from .agentlog.agentlog import AgentLog
from .answers import RepoMap, Snapshot, Timeline, WhatToKnow
from .config import RETAINED_SCOPES, SearchWeights, Settings, load_settings
from .embedding.embed import Embedder
from .errors import UnusableLocation
from .git import gitctx
from .index.index import CodeIndex
from .locations import default_db_uri, is_remote_uri
from .records import Memory, MemoryDraft, RememberResult, StoreStats
from .requests import MapRequest, SearchRequest, SelectRequest
from .search.query import Filters
from .search.search import Searcher, SearchResults
from .store.failures import again_if_gone
from .store.receipts import Receipt
from .store.reembed import reembed
from .store.store import GitPosition, MemoryStore
from .usecases import context, finding, overview, write_once
from .usecases import memories as memory_cases  # `memories` names arguments here
from .usecases.workspace import Workspace

T = TypeVar("T")

if TYPE_CHECKING:
    from .context.select import Selection
    from .graph.graph_reads import GraphReads
    from .store.compaction import Compactor
    from .store.team import TeamMemory
    from .usecases.context import SelectShaping


class Engine:
    """Everything cortex knows about one repository (or plain directory)."""

    def __init__(self, path: Path | str = ".", db: str | None = None, settings: Settings | None = None) -> None:
        start = Path(path).expanduser()
        if not start.exists():
            raise UnusableLocation(f"path {start} does not exist")
        self.settings = settings or load_settings()
        self.repo_root = gitctx.repo_root(start.resolve())
        self.root = self.repo_root or start.resolve()
        self.db_uri = db or self.settings.db or default_db_uri(self.root)
        self.embedder = Embedder(self.settings.embed_model, self.settings.embed_model_path,
                                 threads=self.settings.embed_threads, batch_size=self.settings.embed_batch)
        self._memory_listeners: list[Callable[[], None]] = []
        self.workspace = Workspace(self.root, self.repo_root, self.db_uri, self.settings, self.embedder,
                                   self._memories_changed)
        """What the use cases work in: the stores, the code index and agent log opened on first use, the caches."""
        self._compactor: Compactor | None = None

    # --- locations -------------------------------------------------------------------------------------------------

    @property
    def is_repo(self) -> bool:
        return self.repo_root is not None

    def git(self, max_commits: int = 20, history_out: Future | None = None) -> gitctx.GitContext:
        return self.workspace.git(max_commits, history_out)

    def position(self) -> GitPosition:
        return self.workspace.position()

    @property
    def read_only(self) -> bool:
        """The owner took the repository database's write permission away (`chmod -R a-w .cortex/db`): it is
        opened for reading, and a write is refused in one line instead of the tree being made writable again."""
        from .store.private_dir import owner_made_read_only

        path = Path(self.db_uri)
        return not is_remote_uri(self.db_uri) and path.is_dir() and owner_made_read_only(path)

    @property
    def read_only_note(self) -> str:
        from .store.database import read_only_note

        return read_only_note(self.db_uri)

    def init(self) -> MemoryStore:
        """Create the database and keep `.cortex/` out of git through `.git/info/exclude` (never a tracked file)."""
        return self.workspace.init()

    # --- stores and the parts opened on first use ------------------------------------------------------------------

    def on_memories_changed(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each write through this engine that changes a memory (any store, any caller)."""
        with self.workspace.lock:
            self._memory_listeners.append(listener)

    def _memories_changed(self) -> None:
        for listener in list(self._memory_listeners):
            listener()

    def store(self, create: bool = False) -> MemoryStore:
        """The repository's store; writers create it (and the `.git/info/exclude` line) on first use."""
        return self.workspace.store(create)

    def has_store(self) -> bool:
        """Whether the repository's store exists (a remote one is taken to: only opening it can tell)."""
        return self.workspace.has_store()

    def stores(self) -> list[MemoryStore]:
        """The stores reads consult: the repository's, then the global one unless turned off, then the team's
        (left out while it does not answer: `team_error` says why), so local work goes on."""
        return self.workspace.reading()

    def team_store(self, create: bool = False) -> MemoryStore:
        """The team's shared store (settings `team_db`); raises a one-line error when unset or unreachable."""
        return self.workspace.stores.team_store(create)

    @property
    def team_error(self) -> str:
        """Why the team store was left out of the last read (empty when it answered or none is configured)."""
        return self.workspace.stores.team_error

    def team(self) -> TeamMemory:
        """Team writes: to the team store, or queued in `.cortex/` while it is unreachable."""
        return self.workspace.team()

    def code_index(self, create: bool = False) -> CodeIndex:
        """The repository's code index (in the same database as its memories)."""
        return self.workspace.code_index(create)

    def has_index(self) -> bool:
        return self.workspace.has_index()

    def agent_log(self, create: bool = False) -> AgentLog:
        """The agent context controller, in the repository's database beside the memories it mirrors into."""
        return self.workspace.agent_log(create)

    def searcher(self, weights: SearchWeights | None = None) -> Searcher:
        """`weights`: other than the settings' (selection reads search with its own)."""
        return self.workspace.searcher(weights)

    # --- memories (core/usecases/memories.py) ----------------------------------------------------------------------

    def remember(self, draft: MemoryDraft, check_near: bool = False) -> RememberResult:
        """`check_near`: answer an active memory of the scope that says the same (outcome `near_duplicate`) instead
        of storing the draft."""
        return memory_cases.remember(self.workspace, draft, check_near)

    def remember_many(self, drafts: Sequence[MemoryDraft],
                      progress: Callable[[int, int], None] | None = None) -> list[RememberResult]:
        return memory_cases.remember_many(self.workspace, drafts, progress)

    def import_exact(self, memories: Sequence[Memory], progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Exported memories restored as they were, each in the store its scope belongs to; returns the ids added."""
        return memory_cases.restore_exported(self.workspace, memories, progress)

    def revise(self, memory_id: str, draft: MemoryDraft) -> RememberResult:
        """Edit a memory by storing a new version; a memory without a key gets one so its history is kept."""
        return memory_cases.revise(self.workspace, memory_id, draft)

    def confirm(self, memory_id: str) -> Memory:
        """Say a memory still holds for its code as it is now: its anchors are recorded again, here and now."""
        return memory_cases.confirm(self.workspace, memory_id)

    def checked(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories, each marked when the code it is anchored to changed since (see core/anchors)."""
        return self.workspace.checked(memories)

    def get(self, memory_id: str) -> Memory:
        return memory_cases.get(self.workspace, memory_id)

    def list_memories(self, session: str | None = None, kind: str | None = None, tag: str | None = None,
                      status: str | None = "active", scope: str | None = None, limit: int | None = None,
                      where: str | None = None) -> list[Memory]:
        """Memories newest first. `session`: the reader's (see core/store/sessions.py); `status` may also be a task
        state (`open`, `done`) or `all`."""
        return memory_cases.list_memories(self.workspace, session, kind, tag, status, scope, limit, where)

    def history(self, key: str) -> list[Memory]:
        return self.workspace.stores.history(key)

    def forget(self, memory_id: str | None = None, key: str | None = None, purge: bool = False) -> list[Memory]:
        return memory_cases.forget(self.workspace, memory_id, key, purge)

    def unforget(self, memory_id: str) -> Memory:
        """Undo a soft forget: the memory is active again under the same id."""
        return memory_cases.unforget(self.workspace, memory_id)

    def set_task_state(self, memory_id: str, state: str) -> Memory:
        return self.workspace.stores.owner(memory_id).set_task_state(memory_id, state)

    def retention(self, dry_run: bool = True, scopes: Sequence[str] = RETAINED_SCOPES) -> list[Memory]:
        """The memories the retention policy drops in `scopes`; unless `dry_run`, forgets them."""
        return memory_cases.retention(self.workspace, dry_run, scopes)

    def receipt(self, write_id: str, mark: str = "") -> Receipt | None:
        """The receipt of the write with this id in any store this engine reads, or None when none committed it;
        of several, the one whose command had the fingerprint `mark` (see core/write_ids.py)."""
        return memory_cases.receipt(self.workspace, write_id, mark)

    def write_once(self, write_id: str, mark: str, make: Callable[[], T], named: bool,
                   earlier: Callable[[Receipt], T], kept: Callable[[T], str] | None = None) -> T:
        """`make()` stored under `write_id` and the fingerprint `mark`, at most once when the caller `named` the id
        (see core/usecases/write_once.py)."""
        return write_once.once(self.workspace, write_id, mark, make, named, earlier, kept)

    def written_memory(self, write_id: str) -> Memory | None:
        """The memory the write with this id stored, if any."""
        return write_once.written_memory(self.workspace, write_id)

    def record_receipt(self, write_id: str, output: list[list] | None) -> None:
        """Keep a committed write's output in the repository's database, for a retry with the same id to print."""
        self.store().db.record_receipt(write_id, output)

    def flush_access(self) -> int:
        """Write the access times still pending (a long-lived process letting go of the engine)."""
        return self.workspace.stores.flush_access()

    def reembed_memories(self, should_stop: Callable[[], bool] | None = None) -> int:
        """Embed again, with the configured model, the memories another model embedded (after a model change);
        returns how many. Meant for background workers: search finds those memories by full text meanwhile."""
        return sum(reembed(store, should_stop=should_stop) for store in self.workspace.existing_stores())

    # --- finding, context, overview (core/usecases/) ---------------------------------------------------------------

    def search(self, query: str = "", filters: Filters = Filters(), limit: int = 20, expand: bool = False,
               llm_filter: bool = False) -> SearchResults:
        """`llm_filter`: let the configured model reorder the top candidates by pointing at them (off by default).
        A search that a compaction in another process pulled a file from under is made once more (`again_if_gone`)."""
        return again_if_gone(lambda: finding.search(self.workspace, query, filters, limit, expand, llm_filter))

    def smart_search(self, request: SearchRequest) -> SearchResults:
        """A search as a front end asked for it, inline filters and all (see `SearchRequest.parsed`)."""
        return again_if_gone(lambda: finding.smart_search(self.workspace, request))

    def select_context(self, request: SelectRequest) -> Selection:
        """A selection as a front end asked for it; the budget holds for the requested format exactly. Made once
        more when a compaction in another process pulled a file from under it (`again_if_gone`)."""
        return again_if_gone(lambda: context.select_context(self.workspace, request))

    def select(self, task: str, budget: int = 12000, **shaping: Unpack[SelectShaping]) -> Selection:
        """`select_context` for a task and budget, shaped by `SelectRequest`'s other fields by name."""
        return self.select_context(SelectRequest(task, budget, **shaping))

    def repo_map(self, request: MapRequest) -> RepoMap:
        """The repository's most important definitions for the request's focus, fitted to its budget exactly (read
        once more after a concurrent compaction, as every read here: `again_if_gone`)."""
        return again_if_gone(lambda: context.repo_map(self.workspace, request))

    def snapshot(self, budget: int = 1000, session: str | None = None) -> Snapshot:
        """What an agent should load first, within `budget` tokens; the same state gives the same text."""
        return again_if_gone(lambda: context.snapshot(self.workspace, budget, session))

    def what(self, per_section: int = 10, session: str | None = None) -> WhatToKnow:
        """The dashboard's first pane: branch, changed files, open tasks, recent memories and commits."""
        return again_if_gone(lambda: overview.what(self.workspace, per_section, session))

    def timeline(self, max_commits: int = 50, with_memories: bool = True) -> Timeline:
        return again_if_gone(lambda: overview.timeline(self.workspace, max_commits, with_memories))

    def graph(self, max_commits: int = 200, session: str | None = None) -> GraphReads:
        """The memory graph's reads, each neighbourhood read on demand."""
        return overview.graph(self.workspace, max_commits, session)

    # --- upkeep ----------------------------------------------------------------------------------------------------

    def stats(self) -> list[StoreStats]:
        return self.workspace.stores.stats()

    def gc(self) -> int:
        return self.workspace.stores.gc()

    def compact_in_background(self, on_error: Callable[[str], None] | None = None) -> None:
        """For long-lived processes: start (once) the thread that compacts this engine's databases when writes
        pause. One-shot commands never start it, and their writes never compact (see core/store/compaction.py)."""
        from .store.compaction import Compactor

        with self.workspace.lock:
            if self._compactor is None:
                self._compactor = Compactor(self.workspace.stores.databases, on_error).start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop this engine's background thread (the compactor), for a long-lived process letting go of the engine;
        calls still work afterwards, they just no longer compact in the background."""
        with self.workspace.lock:
            compactor, self._compactor = self._compactor, None
        if compactor is not None:
            compactor.stop(timeout)
        for db in self.workspace.stores.databases():
            with contextlib.suppress(Exception):  # a cache batch lost costs a later lookup, never the close
                db.flush_held()
        self.flush_access()

    def release_caches(self) -> None:
        """Let go of what is built again on demand (selection's import graph, the map's symbol graph, search's
        defined names: about 25 MiB on a 2,000-file repository; the embedding model, about 30 MiB once the C heap
        is trimmed), for a long-lived process after a quiet spell; the next use builds or loads its own."""
        self.workspace.caches.forget()
        self.embedder.unload()

    def compact_due(self) -> int:
        """Compact the due tables of the databases opened so far, now (`cortex index` at its end)."""
        return sum(len(db.compact_due()) for db in self.workspace.stores.databases())
