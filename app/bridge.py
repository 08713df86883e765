"""The dashboard's door to the engine: every call here blocks, so the screen runs them in thread workers.

Widgets never see LanceDB, git or the watcher; they receive the engine's dataclasses in messages.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from ..core.answers import (
    IndexProgress, IndexReport, IndexStatus, Neighbour, SearchResults, Timeline, WatchUpdate, WhatToKnow,
)
from ..core.assemble import Assembled, assemble
from ..core.clipboard import CopyResult, copy
from ..core.engine import Engine
from ..core.errors import CortexError, DatabaseLocked
from ..core.graph import default_centre, neighbours, node_label, resolve_node
from ..core.query import Filters, parse_since, split_inline_filters
from ..core.records import Memory, MemoryDraft, RememberResult
from ..core.select import Selection
from ..core.watch import IndexWatcher


def _needs_repository(method):
    """A repository deleted (or moved) while the dashboard is open gives one clear error instead of git's or
    LanceDB's; the panes keep what they showed."""

    @functools.wraps(method)
    def guarded(self, *args, **kwargs):
        if not self.engine.root.is_dir():
            raise CortexError(f"{self.engine.root} no longer exists (deleted or moved): the panes show what was "
                              "loaded before; reopen cortex-tui where the repository is now")
        return method(self, *args, **kwargs)

    return guarded


class EngineBridge:
    """One engine per dashboard, shared by its workers; LanceDB and the model are safe to use from threads."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.watcher: IndexWatcher | None = None

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
        report = index.update(embed=True, progress=progress, priority=self.engine.git().changed_files,
                              should_stop=should_stop)
        self.engine.reembed_memories(should_stop)
        return report, index.status()

    def start_watcher(self, on_update: Callable[[WatchUpdate], None], on_error: Callable[[str], None]) -> None:
        if self.watcher is None:
            index = self.engine.code_index(create=True)
            self.watcher = IndexWatcher(index, on_update, on_error, self.engine.settings.watch_debounce_ms).start()
            self.engine.compact_in_background(on_error)

    def stop(self) -> None:
        if self.watcher is not None:
            self.watcher.stop(timeout=2)

    @_needs_repository
    def what(self) -> WhatToKnow:
        return self.engine.what()

    @_needs_repository
    def search(self, text: str, limit: int = 30) -> SearchResults:
        query, inline = split_inline_filters(text)
        since = inline.get("since", [None])[-1]
        filters = Filters(
            kinds=tuple(inline.get("kind", [])), tags=tuple(inline.get("tag", [])), files=tuple(inline.get("file", [])),
            branch=(inline.get("branch") or [None])[-1], since=parse_since(since) if since else None,
        )
        return self.engine.search(query, filters, limit)

    @_needs_repository
    def graph(self, node: str | None) -> tuple[str, str, list[Neighbour]]:
        graph = self.engine.graph()
        centre = resolve_node(graph, node) if node else default_centre(graph, self.engine.git().changed_files)
        return centre, node_label(graph, centre), neighbours(graph, centre, 1, limit=80)

    @_needs_repository
    def timeline(self, with_memories: bool = True) -> Timeline:
        return self.engine.timeline(with_memories=with_memories)

    @_needs_repository
    def select(self, task: str, budget: int, pins: frozenset[str], excluded: frozenset[str], fmt: str) -> Selection:
        return self.engine.select(task, budget, pins=pins, excluded=excluded, fmt=fmt)

    def assemble(self, selection: Selection, fmt: str) -> Assembled:
        return assemble(selection, fmt)

    def copy(self, text: str, osc52: Callable[[str], None]) -> CopyResult:
        return copy(text, osc52=osc52, fallback_dir=self.engine.root / ".cortex" / "clipboard")

    @_needs_repository
    def remember(self, draft: MemoryDraft) -> RememberResult:
        return self.engine.remember(draft)

    @_needs_repository
    def revise(self, memory_id: str, draft: MemoryDraft) -> RememberResult:
        return self.engine.revise(memory_id, draft)

    @_needs_repository
    def forget(self, memory_id: str) -> None:
        self.engine.forget(memory_id)

    @_needs_repository
    def restore(self, memory: Memory) -> RememberResult:
        """Undo a soft forget: the forgotten text comes back as the next version of its key, so `cortex history`
        shows the forgotten version and the restored one."""
        draft = MemoryDraft(text=memory.text, kind=memory.kind, title=memory.title, tags=tuple(memory.tags),
                            files=tuple(memory.files), symbols=tuple(memory.symbols), scope=memory.scope,
                            task_state=memory.task_state, context=memory.context)
        return self.engine.revise(memory.id, draft)

    @_needs_repository
    def set_task_state(self, memory_id: str, state: str) -> None:
        self.engine.set_task_state(memory_id, state)

    @_needs_repository
    def changed_files(self) -> tuple[str, ...]:
        return self.engine.git().changed_files
