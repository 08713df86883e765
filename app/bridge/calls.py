"""The dashboard's calls on the engine: one typed protocol, two implementations.

`local.EngineBridge` answers them over an engine in this process; `remote.RemoteBridge` forwards each one to the
repository's resident server, which answers it with an `EngineBridge` over its warm engine. The server accepts
exactly these calls (`CALLS`), so a call added here is a call both sides have, and nothing else crosses.
Arguments and answers are plain data (`core.requests`, `core.answers`, `core.records`, `core.context.items`):
standard library values and the engine's own dataclasses, never an engine object.

Indexing and watching are not calls: the server runs the repository's one index pass and watcher and tells every
attached process what happens (see `hosted`). Copying and assembling a context stay in the dashboard's process:
they need its terminal, not the engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # light at run time: an attached dashboard imports this and none of the engine
    from ...core.answers import (
        IndexProgress,
        IndexReport,
        IndexStatus,
        Neighbour,
        RepoMap,
        SearchResults,
        Timeline,
        WatchUpdate,
        WhatToKnow,
    )
    from ...core.clipboard import CopyResult
    from ...core.context.assemble import Assembled
    from ...core.context.items import Selection
    from ...core.keys import Key
    from ...core.records import Memory, MemoryDraft, RememberResult
    from ...core.requests import MapRequest, SearchRequest, SelectRequest


class EngineCalls(ABC):
    """What a dashboard asks of the engine. Every call blocks: the dashboard runs them in thread workers."""

    @abstractmethod
    def open(self) -> None:
        """Create or open the database and its code-index tables, before any other call reads them."""

    @abstractmethod
    def warm_model(self) -> None:
        """Load the embedding model, so that the first search does not wait for it."""

    @abstractmethod
    def what(self, session: str | None = None) -> WhatToKnow:
        """What should I know: branch memories, notes on changed files, open tasks, recent work; of session
        memories, those of `session` only."""

    @abstractmethod
    def search(self, request: SearchRequest) -> SearchResults:
        """A smart search, inline filters in its text included."""

    @abstractmethod
    def graph(self, node: Key | None, session: str | None = None) -> tuple[Key, str, list[Neighbour]]:
        """(centre, its label, its neighbours): around `node`, or the working change's most connected file."""

    @abstractmethod
    def timeline(self, with_memories: bool = True) -> Timeline:
        """The branch's commits, with the memories made at each when `with_memories`."""

    @abstractmethod
    def select(self, request: SelectRequest) -> Selection:
        """Files, chunks and memories for a task under a token budget."""

    @abstractmethod
    def repo_map(self, request: MapRequest) -> RepoMap:
        """The repository's most important definitions toward a focus, within a token budget."""

    @abstractmethod
    def memory(self, memory_id: str) -> Memory:
        """One memory by id: for the keys that act on a memory a pane lists by id alone (the graph)."""

    @abstractmethod
    def remember(self, draft: MemoryDraft, check_near: bool = False, write_id: str = "") -> RememberResult:
        """Store a memory; with `check_near`, one that says what an active memory says is not stored and that memory
        is answered (outcome `near_duplicate`). Each write here takes the `write_id` of the user's action: a call
        again with it (after a lost answer) is answered from the first, never made twice (core/usecases/write_once.py);
        "" makes one up."""

    @abstractmethod
    def revise(self, memory_id: str, draft: MemoryDraft, write_id: str = "") -> RememberResult:
        """Store a new version of a memory."""

    @abstractmethod
    def forget(self, memory_id: str, write_id: str = "") -> None:
        """Soft-delete a memory."""

    @abstractmethod
    def restore(self, memory: Memory, write_id: str = "") -> Memory:
        """Undo a soft forget: the memory is active again under the same id."""

    @abstractmethod
    def set_task_state(self, memory_id: str, state: str, write_id: str = "") -> None:
        """Open or close a task."""

    @abstractmethod
    def confirm(self, memory_id: str, write_id: str = "") -> Memory:
        """Say a memory still holds after its code changed: its code is recorded again as it is now."""

    @abstractmethod
    def changed_files(self) -> tuple[str, ...]:
        """The files of the working change (staged, modified, untracked) that the code index holds, the first few:
        a new memory's form offers them."""


CALLS: frozenset[str] = frozenset(EngineCalls.__abstractmethods__)
"""The calls an attached dashboard may make of the resident server."""


@dataclass(frozen=True)
class WatchEvents:
    """What the repository's watcher tells a dashboard, each on a thread of the bridge's (post a message from it)."""

    update: Callable[[WatchUpdate], None]
    """Files changed in the work tree (or HEAD moved) and the index took them in."""
    memories: Callable[[], None]
    """A memory was written, revised or forgotten, by whichever process (a shell, an agent, another dashboard)."""
    replaced: Callable[[], None]
    """The database was deleted or replaced (`rm -rf .cortex`): what the panes show is gone."""
    indexed: Callable[[IndexReport, IndexStatus], None]
    """An index pass after the first ended (the one that follows a replaced database)."""
    failed: Callable[[str], None]
    """The watcher stopped, or the server went away; one line."""


class Bridge(EngineCalls):
    """What the dashboard holds: the engine calls, the repository's index pass and watcher, and the work that stays
    in the dashboard's own process."""

    @property
    @abstractmethod
    def root(self) -> Path:
        """The repository's root."""

    @property
    @abstractmethod
    def theme(self) -> str:
        """The dashboard theme the settings name."""

    session = ""
    """The dashboard session this bridge asked the start-up's calls for ahead of the dashboard (`tui.early`), which
    the dashboard then takes as its own; "" when it asked nothing ahead."""

    opens_itself = False
    """True when whoever answers the calls opens the database before the first one reads it (the resident server
    does, once per engine): the dashboard then asks for its panes without an `open` call first."""

    @abstractmethod
    def index(self, progress: Callable[[IndexProgress], None],
              should_stop: Callable[[], bool]) -> tuple[IndexReport | None, IndexStatus | None]:
        """Bring the index up to date (the server's one pass, when attached); then its status. (None, None) when
        `should_stop` said so first."""

    @abstractmethod
    def start_watcher(self, events: WatchEvents) -> None:
        """Keep the index fresh and tell `events` what changes, until `stop`."""

    @abstractmethod
    def stop(self) -> None:
        """Stop watching (the dashboard is closing)."""

    def assemble(self, selection: Selection, fmt: str) -> Assembled:
        from ...core.context.assemble import assemble

        return assemble(selection, fmt)

    def copy(self, assembled: Assembled, osc52: Callable[[str], None]) -> CopyResult:
        from ...core.clipboard import copy

        return copy(assembled.text, osc52=osc52, fallback_dir=self.root / ".cortex" / "clipboard", suffix=assembled.suffix)
