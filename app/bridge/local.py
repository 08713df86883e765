"""The dashboard's door to an engine in its own process (the `Bridge` of `calls.py`, the calls it implements).

Every call here blocks, so the screen runs them in thread workers. Widgets never see LanceDB, git or the watcher;
they receive the engine's dataclasses in messages. The resident server answers an attached dashboard's calls with
one of these over its warm engine.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ...core.answers import (
    IndexProgress,
    IndexReport,
    IndexStatus,
    Neighbour,
    RepoMap,
    SearchResults,
    Timeline,
    WhatToKnow,
)
from ...core.context.select import Selection
from ...core.engine import Engine
from ...core.errors import CortexError, DatabaseLocked
from ...core.graph.graph import default_centre, neighbours, node_label, resolve_node
from ...core.index.watch import IndexWatcher
from ...core.keys import Key
from ...core.records import Memory, MemoryDraft, RememberResult
from ...core.requests import MapRequest, SearchRequest, SelectRequest
from .calls import Bridge, WatchEvents
from .index_process import PassCaller, run_index_pass

T = TypeVar("T")


def _needs_repository(method):
    """A repository deleted (or moved) while the dashboard is open gives one clear error instead of git's or
    LanceDB's; the panes keep what they showed."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if not still_there(self.engine.root, self.engine.is_repo):
            raise repository_gone(self.engine.root)
        return method(self, *args, **kwargs)

    return guarded


def still_there(root: Path, is_repo: bool) -> bool:
    """The directory is there, and so is its `.git` if it was a repository: a write in flight when the repository
    was deleted can make `.cortex/` again, never the repository."""
    return root.is_dir() and (not is_repo or (root / ".git").exists())


def repository_gone(root: Path) -> CortexError:
    return CortexError(f"{root} no longer exists (deleted or moved): the panes show what was loaded before; reopen "
                       "cortex-tui where the repository is now")


FORM_FILES = 5
"""How many files of the working change a new memory's form offers (a long change's list would be noise)."""


class EngineBridge(Bridge):
    """One engine per dashboard, shared by its workers; LanceDB and the model are safe to use from threads."""

    def __init__(self, engine: Engine, owns_engine: bool = True) -> None:
        self.engine = engine
        self.watcher: IndexWatcher | None = None
        self.owns_engine = owns_engine
        """A dashboard's own engine: when its database is removed, this bridge opens the new one and indexes it. The
        resident server's bridges leave that to the server, whose engine cache hands out the new engine."""

    @property
    def root(self) -> Path:
        return self.engine.root

    @property
    def theme(self) -> str:
        """The dashboard theme the settings name."""
        return self.engine.settings.theme

    def open(self) -> None:
        """Create or open the database and its code-index tables (this imports LanceDB, seconds on a cold start);
        before any other worker, so workers starting together never race to create them (a reader that lists a
        table another thread is still creating fails with "Table 'edges' was not found")."""
        self.engine.init()
        try:
            self.engine.code_index(create=True)
        except DatabaseLocked:
            pass  # another process is writing: the panes read what exists, and the indexing worker reports the lock

    def warm_model(self) -> None:
        self.engine.embedder.embed_uncached(["warm"])

    @_needs_repository
    def index(self, progress: Callable[[IndexProgress], None],
              should_stop: Callable[[], bool]) -> tuple[IndexReport, IndexStatus]:
        """Bring the index up to date (lexical pass first, then embeddings, working change first); then its status,
        whose file count is the one `cortex index --status` prints (the report's `listed` also counts the files
        that were listed but skipped, binary or not UTF-8)."""
        index = self.engine.code_index(create=True)
        report = run_index_pass(self.engine, True, PassCaller(progress, should_stop))
        return report, index.status()

    def start_watcher(self, events: WatchEvents) -> None:
        if self.watcher is None:
            index = self.engine.code_index(create=True)
            self.watcher = IndexWatcher(index, events.update, events.failed, self.engine.settings.watch_debounce_ms,
                                        database=self.engine.db_uri,
                                        on_database=lambda change: self._database_changed(events, change)).start()
            self.engine.compact_in_background(events.failed)

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop(timeout=2)

    def _database_changed(self, events: WatchEvents, change: str) -> None:
        """The watcher's word on the database (see `IndexWatcher` in core/index/watch.py), on the watcher's thread."""
        if change == "memories":
            events.memories()
        elif not self.owns_engine:
            events.replaced()
        else:
            # Stopping the watcher joins its thread, which is this one: the new engine is opened from another.
            watcher = self.watcher
            threading.Thread(target=self._reopen, args=(events, watcher), name="cortex-reopen", daemon=True).start()

    def _reopen(self, events: WatchEvents, watcher: IndexWatcher | None) -> None:
        """The database was removed: a new engine (whose first write makes the new database), told to the panes,
        then its index pass and its watcher, as the resident server does for attached dashboards."""
        if watcher is None or watcher is not self.watcher:
            return  # told twice while the removal was under way: the first told the panes
        self.watcher = None
        watcher.stop(timeout=2)
        old = self.engine
        try:
            self.engine = Engine(old.root, db=old.db_uri, settings=old.settings)
        except CortexError as exc:  # the repository went with its database: said once, as a watcher failure
            events.failed(str(exc))
            return
        old.close()
        events.replaced()
        try:
            self.open()
            report, status = self.index(lambda _progress: None, lambda: False)
        except Exception as exc:  # noqa: BLE001 - told to the panes like any watcher failure
            events.failed(f"indexing the new database failed: {exc}")
            return
        events.indexed(report, status)
        self.start_watcher(events)

    @_needs_repository
    def what(self, session: str | None = None) -> WhatToKnow:
        return self.engine.what(session=session)

    @_needs_repository
    def search(self, request: SearchRequest) -> SearchResults:
        return self.engine.smart_search(request)

    @_needs_repository
    def graph(self, node: Key | None, session: str | None = None) -> tuple[Key, str, list[Neighbour]]:
        graph = self.engine.graph(session=session)
        centre = resolve_node(graph, node) if node else default_centre(graph, self.engine.git().changed_files)
        return centre, node_label(graph, centre), neighbours(graph, centre, 1, limit=80)

    @_needs_repository
    def timeline(self, with_memories: bool = True) -> Timeline:
        return self.engine.timeline(with_memories=with_memories)

    @_needs_repository
    def select(self, request: SelectRequest) -> Selection:
        return self.engine.select_context(request)

    @_needs_repository
    def repo_map(self, request: MapRequest) -> RepoMap:
        return self.engine.repo_map(request)

    @_needs_repository
    def memory(self, memory_id: str) -> Memory:
        return self.engine.get(memory_id)

    # --- writes: one write id per user action (see `_once`) --------------------------------------------------

    def _once(self, write_id: str, kind: str, make: Callable[[], T], earlier: Callable[[str], T], **arguments) -> T:
        """`make()` stored under the action's write id (a new one when ""): a call again with the same id, after
        its answer was lost, answers `earlier(write_id)` instead of writing again (core/usecases/write_once.py)."""
        from ...core.write_ids import checked, fingerprint, new_id

        named = bool(write_id)
        write_id = checked(write_id, "write id") if named else new_id()
        return self.engine.write_once(write_id, fingerprint(f"dashboard-{kind}", arguments), make, named,
                                      lambda _receipt: earlier(write_id))

    def _stored(self, write_id: str) -> RememberResult:
        """The answer of a remember or revise that committed earlier, read back from the memory it stored."""
        memory = self.engine.written_memory(write_id)
        if memory is None:  # a team write still queued: no memory to show yet
            raise CortexError(f"write {write_id} was queued earlier; it will be written when the team store answers")
        return RememberResult(memory, "new_version" if memory.version > 1 else "created")

    @_needs_repository
    def remember(self, draft: MemoryDraft, check_near: bool = False, write_id: str = "") -> RememberResult:
        return self._once(write_id, "remember", lambda: self.engine.remember(draft, check_near=check_near),
                          self._stored, draft=repr(draft), check_near=check_near)

    @_needs_repository
    def revise(self, memory_id: str, draft: MemoryDraft, write_id: str = "") -> RememberResult:
        return self._once(write_id, "revise", lambda: self.engine.revise(memory_id, draft), self._stored,
                          memory_id=memory_id, draft=repr(draft))

    @_needs_repository
    def forget(self, memory_id: str, write_id: str = "") -> None:
        self._once(write_id, "forget", lambda: self.engine.forget(memory_id), lambda _id: None, memory_id=memory_id)

    @_needs_repository
    def restore(self, memory: Memory, write_id: str = "") -> Memory:
        """Undo a soft forget: the memory is active again under the same id (a new version would have a new id,
        and whatever held the old one would lose it)."""
        return self._once(write_id, "restore", lambda: self.engine.unforget(memory.id),
                          lambda _id: self.engine.get(memory.id), memory_id=memory.id)

    @_needs_repository
    def set_task_state(self, memory_id: str, state: str, write_id: str = "") -> None:
        self._once(write_id, "set_task_state", lambda: self.engine.set_task_state(memory_id, state), lambda _id: None,
                   memory_id=memory_id, state=state)

    @_needs_repository
    def confirm(self, memory_id: str, write_id: str = "") -> Memory:
        return self._once(write_id, "confirm", lambda: self.engine.confirm(memory_id),
                          lambda _id: self.engine.get(memory_id), memory_id=memory_id)

    @_needs_repository
    def changed_files(self) -> tuple[str, ...]:
        """The working change's files that the code index holds, at most FORM_FILES in git's order: what a new
        memory is most likely about, and what its anchors can point at. A file the index skipped (binary, not
        UTF-8, generated, secret, too large), ignored or deleted is not offered."""
        from ...core.index.indexed_paths import read_indexed

        changed = self.engine.git().changed_files
        if not changed or not self.engine.has_index():
            return ()
        index = self.engine.code_index()
        held = read_indexed(index.files, index.chunks, index.skipped_table, set(changed)).stat
        return tuple(path for path in changed if path in held)[:FORM_FILES]

