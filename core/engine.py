"""The engine facade: one object per repository that the CLI, the dashboard and the MCP server share.

It resolves where things live (repository root, database), owns the embedder, and composes the parts for each
operation a front end calls: which stores (`core/store/store_set.py`), the git context, the index, search, selection,
the graph and the anchors. It is the one module past ~450 lines on purpose: every operation the CLI, the dashboard
and the MCP server share is listed here once, each a few lines handing parts what they need.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from .agentlog.agent_workspace import AgentFiles
from .agentlog.agentlog import AgentLog
from .anchors.anchoring import Anchoring
from .config import RETAINED_SCOPES, SearchWeights, Settings, load_settings
from .context.repo_map import SymbolGraphCache
from .context.select_files import FileReads, ImportGraphCache
from .embedding.embed import Embedder
from .errors import CortexError, DamagedDatabase, UnusableLocation
from .git import gitctx
from .git.exclude import exclude_cortex_dir
from .index.index import CodeIndex
from .locations import default_db_uri, is_remote_uri, team_queue_file
from .pool import READS
from .records import Memory, MemoryDraft, RememberResult, StoreStats
from .requests import MapRequest, SearchRequest, SelectRequest
from .search.definitions import DefinedNames
from .search.query import Filters
from .search.search import GitInputs, Searcher, SearchResults
from .secrets.secret_fields import secure_draft
from .store import receipts
from .store.exact_import import import_exact
from .store.memory_rows import validate_draft
from .store.receipts import Receipt
from .store.reembed import reembed
from .store.sessions import narrowed, visible_where
from .store.store import GitPosition, MemoryStore
from .store.store_set import StoreSet

if TYPE_CHECKING:
    from .store.compaction import Compactor


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
        self.embedder = Embedder(
            self.settings.embed_model,
            self.settings.embed_model_path,
            threads=self.settings.embed_threads,
            batch_size=self.settings.embed_batch,
        )
        # Dashboard workers and MCP threads share one engine: its lazy set-up (the code index, the agent log, the
        # compactor) happens under one lock; the stores have their own (StoreSet).
        self._lock = threading.RLock()
        self._memory_listeners: list[Callable[[], None]] = []
        self._stores = StoreSet(self.settings, self.db_uri, self.embedder, self._memories_changed)
        self._index: CodeIndex | None = None
        self._agent_log: AgentLog | None = None
        self.anchoring = Anchoring(self.root, self.repo_root is not None, self._definers)
        self._compactor: Compactor | None = None
        self._import_graph = ImportGraphCache()
        """Selection's import graph, built once per version of the files table (any process's writes move it)."""
        self._defined_names = DefinedNames()
        """Search's vocabulary of defined names, read once per version of the chunks table (names typed with a slip)."""
        self._symbol_graph = SymbolGraphCache()
        """The repository map's definition -> reference graph, built once per version of the chunks table."""

    # --- locations -----------------------------------------------------------------------------------------------

    @property
    def is_repo(self) -> bool:
        return self.repo_root is not None

    def git(self, max_commits: int = 20, history_out: Future | None = None) -> gitctx.GitContext:
        # While a watcher keeps the index live, its count of changes tells when the working change must be read
        # again (a `git status` of the whole tree); without one, every call reads it.
        index = self._index
        return gitctx.read_git_context(self.root, max_commits, index.generation() if index is not None else None,
                                       history_out)

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
        store = self._stores.repo(create=True)
        if self.repo_root is not None:
            exclude_cortex_dir(self.root)
        return store

    # --- stores --------------------------------------------------------------------------------------------------

    def on_memories_changed(self, listener: Callable[[], None]) -> None:
        """Call `listener` after each write through this engine that changes a memory (any store, any caller)."""
        with self._lock:
            self._memory_listeners.append(listener)

    def _memories_changed(self) -> None:
        for listener in list(self._memory_listeners):
            listener()

    def store(self, create: bool = False) -> MemoryStore:
        """The repository's store; writers create it (and the `.git/info/exclude` line) on first use."""
        if create and not self._stores.is_open(self.db_uri):
            return self.init()
        return self._stores.repo(create)

    def has_store(self) -> bool:
        """Whether the repository's store exists (a remote one is taken to: only opening it can tell)."""
        return self._stores.is_open(self.db_uri) or is_remote_uri(self.db_uri) or Path(self.db_uri).exists()

    def code_index(self, create: bool = False) -> CodeIndex:
        """The repository's code index (in the same database as its memories)."""
        with self._lock:
            if self._index is None:
                db = self.store(create=create).db
                self._index = CodeIndex(
                    db, self.embedder, self.root, self.is_repo, self.settings.max_file_bytes, self.settings.encoding
                )
                if self.settings.team_db:
                    from .store.team import SharedVectorCache

                    team = self.team_store
                    self._index.vector_cache = SharedVectorCache(self._index.vector_cache, lambda: team(create=True).vector_cache)
            return self._index

    def agent_log(self, create: bool = False) -> AgentLog:
        """The agent context controller (in the repository's database, beside the memories it mirrors into), keeping
        its live files (setting `agent_dir`) in step."""
        with self._lock:
            if self._agent_log is None:
                store = self.store(create=create)
                where = self.settings.agent_dir.strip()
                files = AgentFiles(self.root / Path(where).expanduser()) if where else None
                self._agent_log = AgentLog(store.db, store, self.position, files)
            return self._agent_log

    def team_store(self, create: bool = False) -> MemoryStore:
        """The team's shared store (settings `team_db`); raises a one-line error when unset or unreachable."""
        return self._stores.team_store(create)

    @property
    def team_error(self) -> str:
        """Why the team store was left out of the last read (empty when it answered or none is configured)."""
        return self._stores.team_error

    def team(self):
        """Team writes: to the team store, or queued in `.cortex/` while it is unreachable."""
        from .store.team import TeamMemory, TeamQueue

        # Writers create the repository's store (and its `.git/info/exclude` line) on first use; the queue lives
        # beside it, and reads need it even on a machine that has only written to the team.
        self.store(create=True)
        queue = TeamQueue(team_queue_file(self.root), self.settings.lock_timeout)
        return TeamMemory(lambda: self.team_store(create=True), queue, self.settings.max_text_bytes)

    def stores(self) -> list[MemoryStore]:
        """The stores reads consult: the repository's, then the global one unless turned off, then the team's
        (left out while it does not answer: `team_error` says why), so local work goes on."""
        return self._stores.reading()

    def _store_for(self, scope: str) -> MemoryStore:
        if scope == "team":
            return self.team_store(create=True)
        if scope == "global":
            store = self._stores.global_store(create=True)
            if store is not None:
                return store
        return self.store(create=True)

    # --- memory operations ---------------------------------------------------------------------------------------

    def position(self) -> GitPosition:
        return GitPosition(*gitctx.position(self.root))

    def remember(self, draft: MemoryDraft, check_near: bool = False) -> RememberResult:
        """`check_near`: when an active memory of the scope says the same in other words, store nothing and answer
        it (outcome `near_duplicate`), so the caller can make this a new version of it or keep both. A draft with a
        key names its versions itself (the same key is a new version, another key is kept apart): it is not checked."""
        if draft.scope == "session" and not draft.session:
            raise CortexError("a session memory needs its session: give --session ID or set CORTEX_SESSION")
        # Refused before anything is opened or embedded: a near-duplicate check would otherwise embed the secret
        # and keep its vector in the cache (the store checks again, for its other callers). The size first: the
        # scan of a 20 MB text took minutes.
        validate_draft(draft, self.settings.max_text_bytes)
        draft = secure_draft(draft)
        pos = self.position()
        draft = self.anchoring.anchored([draft], pos.commit)[0]
        if check_near and draft.scope != "team" and not draft.source_key:
            store = self._store_for(draft.scope)
            match = store.near(draft, store.embed_draft(draft))
            if match is not None:
                return RememberResult(self.checked([match])[0], "near_duplicate")
        if draft.scope == "team":
            return self.team().remember_many([draft], pos)[0]
        result = self._store_for(draft.scope).remember(draft, pos)
        if self.settings.retention.prunes(draft.scope):
            self.retention(dry_run=False, scopes=(draft.scope,))  # a count per kind while within the caps
        return result

    # --- anchors: the code a memory describes, and whether it changed since (core/anchors) ---------------------

    def _definers(self, symbols: Sequence[str]) -> tuple[str, ...]:
        if not self.has_index():
            return ()
        from .search.definitions import definers

        rows = definers(self.code_index().chunks, symbols, None, ["path"])
        return tuple(dict.fromkeys(r["path"] for r in rows))[:8]

    def checked(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories, each marked when the code it is anchored to changed since (see core/anchors)."""
        return self.anchoring.checked(memories)

    def confirm(self, memory_id: str) -> Memory:
        """Say a memory still holds for its code as it is now: its anchors are recorded again, here and now."""
        store = self._stores.owner(memory_id)
        anchors = self.anchoring.renewed(store.get(memory_id), self.position().commit)
        return self.checked([store.set_anchors(memory_id, anchors)])[0]

    def remember_many(
        self, drafts: Sequence[MemoryDraft], progress: Callable[[int, int], None] | None = None
    ) -> list[RememberResult]:
        pos = self.position()
        drafts = self.anchoring.anchored(drafts, pos.commit)
        results: list[RememberResult | None] = [None] * len(drafts)
        for scope in ("repo", "global", "team"):
            picked = [i for i, d in enumerate(drafts) if _store_name(d.scope) == scope]
            if picked:
                chosen = [drafts[i] for i in picked]
                done = (self.team().remember_many(chosen, pos) if scope == "team"
                        else self._store_for(scope).remember_many(chosen, pos, progress))
                for i, result in zip(picked, done):
                    results[i] = result
        pruned = tuple({d.scope for d in drafts if self.settings.retention.prunes(d.scope)})
        if pruned:
            self.retention(dry_run=False, scopes=pruned)  # as after one `remember`: imports and syncs are held too
        return [r for r in results if r is not None]

    def import_exact(self, memories: Sequence[Memory], progress: Callable[[int, int], None] | None = None) -> list[str]:
        """Exported memories restored as they were, each in the store its scope belongs to; returns the ids added."""
        added: list[str] = []
        for scope in ("repo", "global", "team"):
            picked = [m for m in memories if _store_name(m.scope) == scope]
            if picked:
                added += import_exact(self._store_for(scope), picked, progress)
        return added

    # --- receipts: whether a write with an id committed (core/store/receipts.py) --------------------------------

    def receipt(self, write_id: str) -> Receipt | None:
        """The receipt of the write with this id in any store this engine reads (the one its scope went to), or
        None when none committed it."""
        for store in self._stores_if_any():
            found = receipts.find(store.db, write_id)
            if found is not None:
                return found
        return None

    def record_receipt(self, write_id: str, output: builtins.list[builtins.list] | None) -> None:
        """Keep a committed write's output in the repository's database, for a retry with the same id to print."""
        self.store().db.record_receipt(write_id, output)

    def get(self, memory_id: str) -> Memory:
        memory = self._stores.owner(memory_id).get(memory_id)
        self._stores.accessed([memory])
        return self.checked([memory])[0]

    def flush_access(self) -> int:
        """Write the access times still pending (a long-lived process letting go of the engine)."""
        return self._stores.flush_access()

    def retention(self, dry_run: bool = True, scopes: Sequence[str] = RETAINED_SCOPES) -> list[Memory]:
        """The memories the retention policy drops (settings `retention`: a cap per scope and kind, per session for
        scope `session`, least recently accessed out first; an age past which an unread memory goes; `pinned`
        exempt) in `scopes`; unless `dry_run`, forgets them (kept in history as deleted) and counts them in the
        store's stats. The team store is never pruned: it is shared, and no one teammate's settings decide for it."""
        self.flush_access()
        policy = self.settings.retention
        dropped: list[Memory] = []
        for store, held in self._retained_stores(scopes):
            found: dict[str, Memory] = {}
            for scope in held:
                found |= {m.id: m for m in store.over_cap(scope, policy.caps(scope))}
                if (days := policy.max_age(scope)) > 0:
                    cutoff = datetime.now(UTC) - timedelta(days=days)
                    found |= {m.id: m for m in store.unread_since(scope, cutoff)}
            if not dry_run:
                store.prune(list(found.values()))
            dropped += found.values()
        return dropped

    def _retained_stores(self, scopes: Sequence[str]) -> list[tuple[MemoryStore, tuple[str, ...]]]:
        """Each existing store that may hold one of `scopes` the policy prunes, with those scopes. Global memories
        live in the user's global store when there is one, else in the repository's."""
        policy = self.settings.retention
        pruned = [scope for scope in RETAINED_SCOPES if scope in scopes and policy.prunes(scope)]
        stores: list[tuple[MemoryStore, tuple[str, ...]]] = []
        if "global" in pruned and (found := self._stores.global_store(create=False)) is not None:
            stores.append((found, ("global",)))
            pruned.remove("global")
        if pruned and self.has_store():
            stores.append((self.store(), tuple(pruned)))
        return stores

    def list(self, session: str | None = None, **filters) -> list[Memory]:
        """`session`: the reader's (see core/store/sessions.py); the other filters are `MemoryStore.list`'s."""
        limit = filters.pop("limit", None)
        filters["where"] = narrowed(filters.get("where"), session)
        # Each store returns at most `limit` (pushed into its read), then the union is cut to `limit` again.
        found = [m for store in self.stores() for m in self._stores.read(store, store.list, **filters, limit=limit)]
        found.sort(key=lambda m: (m.created_at, m.version), reverse=True)
        return self.checked(found[:limit] if limit else found)

    def history(self, key: str) -> builtins.list[Memory]:
        return self._stores.history(key)

    def forget(self, memory_id: str | None = None, key: str | None = None, purge: bool = False) -> builtins.list[Memory]:
        if memory_id:
            return self._stores.owner(memory_id).forget(memory_id, purge=purge)
        if not key:
            raise CortexError("give the id or the key of the memory to forget")
        return self._stores.forget_key(key, purge)

    def set_task_state(self, memory_id: str, state: str) -> Memory:
        return self._stores.owner(memory_id).set_task_state(memory_id, state)

    def reembed_memories(self, should_stop: Callable[[], bool] | None = None) -> int:
        """Embed again, with the configured model, the memories another model embedded (after a model change);
        returns how many. Meant for background workers: search finds those memories by full text meanwhile."""
        return sum(reembed(store, should_stop=should_stop) for store in self._existing_stores())

    def has_index(self) -> bool:
        try:
            index = self.code_index()
        except DamagedDatabase:
            raise
        except CortexError:
            return False
        return index.has_files()

    def searcher(self, weights: SearchWeights | None = None) -> Searcher:
        """`weights`: other than the settings' (selection reads search with its own)."""
        index = self.code_index() if self.has_index() else None
        stores = self._existing_stores()
        # In the background: the first search overlaps it, the later ones find the full-text indexes in memory.
        for db, table in [(s.db, s.table) for s in stores] + ([(index.db, index.chunks)] if index is not None else []):
            READS.submit(db.prewarm_text_index, table)
        return Searcher(stores, index, self.embedder, weights or self.settings.search, self._defined_names)

    def _stores_if_any(self) -> builtins.list[MemoryStore]:
        """The stores reads consult, or none before anything was written here; a damaged database is never taken
        for one not made yet (it says so)."""
        try:
            return self.stores()
        except DamagedDatabase:
            raise
        except CortexError:
            return []

    def _existing_stores(self) -> builtins.list[MemoryStore]:
        try:
            return self.stores()
        except CortexError as exc:
            if "no cortex database" in str(exc):
                raise CortexError(f"nothing indexed or remembered yet in {self.root}: run `cortex index` or `cortex remember`") from exc
            raise

    def search(self, query: str = "", filters: Filters = Filters(), limit: int = 20, expand: bool = False,
               llm_filter: bool = False) -> SearchResults:
        """`llm_filter`: let the configured model reorder the top candidates by pointing at them (off by default)."""
        from .search.llm_filter import LLMFilterConfig, filter_results

        llm = LLMFilterConfig.from_settings(self.settings) if llm_filter else None
        shown = max(limit, llm.candidates) if llm is not None and llm.configured else limit
        searcher = self.searcher()
        # Freshness (a listing of the tree unless a watcher keeps the index live) and the working change (a
        # `git status` of the tree) run beside the query embedding and the search instead of before them.
        status = READS.submit(searcher.index.status) if searcher.index is not None else None
        # One job opens the repository once: it hands over the history (all ranking needs) before `git status`.
        history: Future = Future()
        git = READS.submit(self.git, history_out=history)
        results = searcher.search(query, filters, shown, GitInputs(git.result, history.result))
        fresh = status.result().fresh if status is not None else None
        results = replace(results, index_fresh=fresh)
        checker = self.anchoring.checker()
        if checker is not None:
            from .anchors.checker import flag_hits

            results = replace(results, hits=flag_hits(checker, results.hits))
        self._stores.accessed([h.memory for h in results.hits if h.memory is not None])
        if llm is not None:
            results = filter_results(results, llm)
            results = replace(results, hits=results.hits[:limit])
        if expand:
            from .graph.graph import expand_results

            results = expand_results(self.graph(session=filters.session), results)
        return results

    def smart_search(self, request: SearchRequest) -> SearchResults:
        """A search as a front end asked for it, inline filters and all (see `SearchRequest.parsed`)."""
        query, filters = request.parsed()
        results = self.search(query, filters, request.limit, expand=request.expand, llm_filter=request.llm_filter)
        if request.filters.past_sessions != "beside":
            return results
        # The second list: the same search of the sessions alone (the first leaves them out).
        beside = replace(request, filters=replace(request.filters, past_sessions="only"), expand=False)
        words, narrowed_to_sessions = beside.parsed()
        sessions = self.search(words, narrowed_to_sessions, request.limit, llm_filter=request.llm_filter)
        return replace(results, past_sessions=tuple(sessions.hits))

    def select(self, task: str, budget: int = 12000, **shaping):
        """`select_context` for a task and budget, shaped by `SelectRequest`'s other fields by name."""
        return self.select_context(SelectRequest(task, budget, **shaping))

    def graph(self, max_commits: int = 200, session: str | None = None):
        """The memory graph's reads (`GraphReads`): each neighbourhood is read on demand, filtered and limited in
        LanceDB, so nothing is built whole or rebuilt after a save; the history is git's, cached per ref change.
        `session`: the reader's (other sessions' session memories are left out)."""
        from .graph.graph_reads import GraphReads

        index = self.code_index() if self.has_index() else None
        return GraphReads(self._existing_stores(), index.files if index is not None else None,
                          gitctx.read_history(self.root, max_commits).commits, checked=self.checked,
                          active=narrowed("status = 'active'", session) or "status = 'active'")

    def select_context(self, request: SelectRequest):
        """A selection as a front end asked for it; the budget holds for the requested format exactly.
        The engine gathers what selection reads (`SelectInputs`); the feature itself never calls back here."""
        from .context.select import SelectInputs, check_request, choose, load_chunks

        task, budget = request.task, request.budget
        check_request(task, budget, request.include_tests, request.fmt, request.purpose)
        notes: list[str] = []
        if not self.has_index():
            # Behind another pass that is indexing this database (the dashboard's), this waits for it and finds
            # nothing left to do.
            report = self.code_index(create=True).update(embed=False)
            if report.changed:
                notes.append(f"nothing was indexed yet: indexed {report.changed} files lexically first")
        index = self.code_index()
        git = self.git(20)
        if not index.refresh(git.changed_files):
            notes.append("an indexing pass is running: files with uncommitted changes show their last indexed text")
        # Selection weighs a file's chunks itself (its regions read search's scores): the spreading of a file's
        # further hits and the stricter reranking of code, set for a list a person reads, cost it edit recall
        # (every 3rd dev task: 0.854 -> 0.838), so it reads search as its weights were chosen with.
        searcher = self.searcher(self.settings.search.model_copy(update={"file_repeat": 1.0, "code_rerank": 0.0}))
        query = task[:4000]
        with_vectors = index.chunks.count_rows("embedded = true") > 0
        memory_hits = searcher.search(query, Filters(memories_only=True, session=request.session), limit=20, git=GitInputs.of(git)).hits if searcher.stores else []
        checker = self.anchoring.checker()
        if checker is not None:
            from .anchors.checker import flag_hits

            memory_hits = flag_hits(checker, memory_hits)
        inputs = SelectInputs(
            task=task,
            files=FileReads(index.files, self._import_graph),
            code_hits=searcher.search(query, Filters(code_only=True), limit=120, git=GitInputs.of(git)).hits,
            memory_hits=memory_hits,
            changed=list(git.changed_files),
            commit=git.head,
            encoding=self.settings.encoding,
            chunks=lambda paths: load_chunks(index.chunks, paths, with_vectors),
            query_vector=lambda: self.embedder.embed_one(query),
            pinned_memories=self._pinned_memories(request.pinned("memory"), request.session, memory_hits),
        )
        selection = choose(inputs, request, self.settings.select)
        self._stores.accessed([i.memory for i in selection.chosen if i.memory is not None])
        return replace(selection, notes=notes + selection.notes)

    def _pinned_memories(self, memory_ids: frozenset[str], session: str | None, hits) -> builtins.list[Memory]:
        """The pinned memories search did not return, as they are now: a pin follows an edited memory to the newest
        version of its key and lets go of a forgotten one, and another session's session memory stays out."""
        from .store.sql import quote

        found = {h.memory.id for h in hits if h.memory is not None}
        out: builtins.list[Memory] = []
        for memory_id in sorted(memory_ids):
            if memory_id in found:
                continue
            try:
                store = self._stores.owner(memory_id)
            except CortexError:
                continue  # a pin of a memory no store holds any more
            pinned = store.find(memory_id)
            if pinned is None:
                continue
            where = f"id = {quote(memory_id)}" if pinned.status == "active" or not pinned.source_key \
                else f"source_key = {quote(pinned.source_key)}"
            now = store.query(narrowed(f"({where}) AND status = 'active'", session), 1)
            out += [m for m in now if m.id not in found and m not in out]
        return self.checked(out)

    def repo_map(self, request: MapRequest):
        """The repository's most important definitions for the request's focus (the working change when it has
        none), fitted to its budget exactly (`RepoMap`)."""
        from .context.repo_map import SEARCH_HITS, MapInputs, build_map, resolve_focus

        if request.budget <= 0:
            raise CortexError(f"budget must be a positive number of tokens (got {request.budget})")
        if not self.has_index():
            self.code_index(create=True).update(embed=False)
        index = self.code_index()
        state = self._symbol_graph.get(index.chunks)
        git = self.git(20)

        def search(text: str) -> list:
            return self.searcher().search(text[:4000], Filters(code_only=True), limit=SEARCH_HITS, git=GitInputs.of(git)).hits

        files = FileReads(index.files, self._import_graph)
        focus = resolve_focus(request.focus, state.graph, list(git.changed_files), search, files.named)
        inputs = MapInputs(state.graph, focus.seeds, focus.mentioned, focus.files, state.signatures,
                           self.settings.encoding, focus.leads)
        return build_map(inputs, request.budget, request.focus)

    def snapshot(self, budget: int = 1000, session: str | None = None):
        """What an agent should load first (`Snapshot`), within `budget` tokens; the same state gives the same text.
        `session`: the reader's (other sessions' session memories are left out)."""
        from .graph.snapshot import SnapshotInputs, build_snapshot
        from .records import COMMIT_TAG
        from .store.sql import sql_list

        git = self.git(20)
        changed = list(git.changed_files)
        stores = self._stores_if_any()

        def newest(where: str, limit: int) -> builtins.list[Memory]:
            visible = narrowed(where, session)
            found = [m for store in stores for m in self._stores.read(store, store.newest, visible, limit)]
            return sorted(found, key=lambda m: (-m.updated_at.timestamp(), m.id))[:limit]

        tasks = newest("status = 'active' AND kind = 'task' AND task_state = 'open'", 20)
        decisions = newest(f"status = 'active' AND kind = 'decision' AND array_has_any(files, {sql_list(changed)})", 10) if changed else []
        decisions = self.checked(decisions)  # a decision about code that changed since says so
        commits = newest(f"status = 'active' AND array_has_any(tags, {sql_list([COMMIT_TAG])})", 1)
        inputs = SnapshotInputs(git, tasks, decisions, commits[0] if commits else None,
                                lambda left: self.repo_map(MapRequest(left)), self.settings.encoding, budget)
        return build_snapshot(inputs)

    def revise(self, memory_id: str, draft: MemoryDraft) -> RememberResult:
        """Edit a memory by storing a new version; a memory without a key gets one so its history is kept."""
        validate_draft(draft, self.settings.max_text_bytes)  # before reading the memory or scanning the draft
        store = self._stores.owner(memory_id)
        old = store.get(memory_id)
        key = old.source_key or f"memory:{old.id}"
        if not old.source_key:
            store.set_source_key(old.id, key)
        pos = self.position()
        draft = self.anchoring.anchored([replace(draft, source_key=key, scope=old.scope, session=old.session)], pos.commit)[0]
        return store.remember(draft, pos)

    def timeline(self, max_commits: int = 50, with_memories: bool = True):
        from .graph.timeline import branch_timeline

        git = self.git(max_commits)
        stores = self._stores_if_any() if with_memories else []
        return branch_timeline(git, stores)

    def what(self, per_section: int = 10, session: str | None = None):
        """`session`: the reader's (other sessions' session memories are left out)."""
        from .graph.what import what_should_i_know

        git = self.git(50)
        stores = self._stores_if_any()
        indexed = self.has_index()
        importers = self.code_index().importers if indexed else (lambda paths: {})
        w = what_should_i_know(git, stores, importers, indexed, per_section, visible_where(session))
        self._stores.accessed(w.branch_memories + w.file_memories + w.open_tasks + w.recent_memories)
        # Each section keeps its order, memories whose code changed since after the others.
        fresh_first = self.anchoring.fresh_first
        return replace(w, branch_memories=fresh_first(w.branch_memories), file_memories=fresh_first(w.file_memories),
                       open_tasks=self.checked(w.open_tasks), recent_memories=fresh_first(w.recent_memories))

    def stats(self) -> builtins.list[StoreStats]:
        return self._stores.stats()

    def gc(self) -> int:
        return self._stores.gc()

    def compact_in_background(self, on_error: Callable[[str], None] | None = None) -> None:
        """For long-lived processes: start (once) the thread that compacts this engine's databases when writes
        pause. One-shot commands never start it, and their writes never compact (see core/store/compaction.py)."""
        from .store.compaction import Compactor

        with self._lock:
            if self._compactor is None:
                self._compactor = Compactor(self._stores.databases, on_error).start()

    def close(self, timeout: float = 5.0) -> None:
        """Stop this engine's background thread (the compactor), for a long-lived process letting go of the engine;
        calls still work afterwards, they just no longer compact in the background."""
        with self._lock:
            compactor, self._compactor = self._compactor, None
        if compactor is not None:
            compactor.stop(timeout)
        self.flush_access()

    def release_caches(self) -> None:
        """Let go of what is built again on demand (selection's import graph, the map's symbol graph, search's
        defined names: about 25 MiB on a 2,000-file repository; the embedding model, about 30 MiB once the C heap
        is trimmed), for a long-lived process after a quiet spell; the next selection, map or slip lookup builds
        its own, the next embedding loads the model again."""
        for cache in (self._import_graph, self._symbol_graph, self._defined_names):
            cache.forget()
        self.embedder.unload()

    def compact_due(self) -> int:
        """Compact the due tables of the databases opened so far, now (`cortex index` at its end)."""
        return sum(len(db.compact_due()) for db in self._stores.databases())


def _store_name(scope: str) -> str:
    """The store a scope's memories are written to (session memories stay in the repository's)."""
    return scope if scope in ("global", "team") else "repo"
