"""The dashboard's door to the engine when the repository's resident server owns it.

Every engine call of the protocol (`calls.EngineCalls`) is forwarded to the server's warm engine
(`link.remote.Remote`) by a method of the same signature: written out, so that the type checker holds each one to
the protocol's declaration (a generated forwarder is invisible to it). The server is the
repository's one index watcher: `index` subscribes to it and reports its progress, `start_watcher` passes on what it
tells (updates, memories written by any process, a replaced database and the pass that follows). Copying and
assembling a context stay here (`calls.Bridge`): they need this terminal, not the engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.answers import IndexProgress
from ...core.write_ids import new_id
from ..link import connection, protocol
from ..link.messages import Failed, Indexed, Memories, Progress, Replaced, Reply, Update
from ..link.remote import LostAnswer, Remote, RemoteError, Subscription
from .calls import Bridge, WatchEvents

if TYPE_CHECKING:  # light at run time, as `calls` is: an attached dashboard imports none of the engine
    from ...core.answers import Neighbour, RepoMap, SearchResults, Timeline, WhatToKnow
    from ...core.context.items import Selection
    from ...core.keys import Key
    from ...core.records import Memory, MemoryDraft, RememberResult
    from ...core.requests import MapRequest, SearchRequest, SelectRequest

RESUBSCRIBE_SECONDS = 2.0


class RemoteBridge(Bridge):
    """A `Bridge` whose engine lives in the resident server."""

    opens_itself = True

    def __init__(self, remote: Remote) -> None:
        self.remote = remote
        self._subscription: Subscription | None = None
        self._stopped = threading.Event()

    @property
    def root(self) -> Path:
        return self.remote.root

    @property
    def theme(self) -> str:
        """The dashboard theme the settings name, read without pydantic (a tenth of this process's start-up); a
        broken config file leaves the default, and the server reports the file."""
        try:
            return str(connection.config_value("theme", ""))
        except Exception:  # noqa: BLE001 - whatever a broken file raises, the theme is not worth failing for
            return ""

    # --- the engine's calls, answered by the server ------------------------------------------------------------

    def _call(self, name: str, *args: object) -> Any:
        """`name` of the protocol, asked of the server: its answer, or the server's exception raised here."""
        return self.remote.call("bridge", name, *args)

    def open(self) -> None:
        self._call("open")

    def warm_model(self) -> None:
        self._call("warm_model")

    def what(self, session: str | None = None) -> WhatToKnow:
        return self._call("what", session)

    def search(self, request: SearchRequest) -> SearchResults:
        return self._call("search", request)

    def graph(self, node: Key | None, session: str | None = None) -> tuple[Key, str, list[Neighbour]]:
        return self._call("graph", node, session)

    def timeline(self, with_memories: bool = True) -> Timeline:
        return self._call("timeline", with_memories)

    def select(self, request: SelectRequest) -> Selection:
        return self._call("select", request)

    def repo_map(self, request: MapRequest) -> RepoMap:
        return self._call("repo_map", request)

    def memory(self, memory_id: str) -> Memory:
        return self._call("memory", memory_id)

    def _write(self, name: str, write_id: str, *args: object) -> Any:
        """A write of one user action, under one write id (made up here when the caller has none): when the server
        is lost before its answer, the call is made once more with the same id, which the server answers from the
        first attempt if it committed, so the action is stored exactly once (core/usecases/write_once.py)."""
        write_id = write_id or new_id()
        try:
            return self.remote.call("bridge", name, *args, write_id=write_id)
        except LostAnswer:
            return self.remote.call("bridge", name, *args, write_id=write_id)

    def remember(self, draft: MemoryDraft, check_near: bool = False, write_id: str = "") -> RememberResult:
        return self._write("remember", write_id, draft, check_near)

    def revise(self, memory_id: str, draft: MemoryDraft, write_id: str = "") -> RememberResult:
        return self._write("revise", write_id, memory_id, draft)

    def forget(self, memory_id: str, write_id: str = "") -> None:
        self._write("forget", write_id, memory_id)

    def restore(self, memory: Memory, write_id: str = "") -> Memory:
        return self._write("restore", write_id, memory)

    def set_task_state(self, memory_id: str, state: str, write_id: str = "") -> None:
        self._write("set_task_state", write_id, memory_id, state)

    def confirm(self, memory_id: str, write_id: str = "") -> Memory:
        return self._write("confirm", write_id, memory_id)

    def changed_files(self) -> tuple[str, ...]:
        return self._call("changed_files")

    # --- the server's watcher ------------------------------------------------------------------------------------

    def index(self, progress: Callable, should_stop: Callable[[], bool]):
        """The server's index pass as this dashboard sees it: its progress, then (report, status). (None, None) when
        the dashboard stopped waiting (it is closing)."""
        self._subscription = self.remote.watch()
        for event in self._subscription:
            if should_stop() or self._stopped.is_set():
                return None, None
            if isinstance(event, Progress):
                progress(IndexProgress(phase=event.phase, done=event.done, total=event.total))
            elif isinstance(event, Indexed):
                return protocol.unpack(event.payload)
            elif isinstance(event, Failed):
                from ...core.errors import CortexError

                self._subscription.close()
                raise CortexError(event.message)
        if self._stopped.is_set():
            return None, None
        raise RemoteError("lost the resident server while it indexed")

    def start_watcher(self, events: WatchEvents) -> None:
        threading.Thread(target=self._follow, args=(events,), name="cortex-follow", daemon=True).start()

    def _follow(self, events: WatchEvents) -> None:
        """Pass the server's events on; when the server goes (replaced, crashed, idle) subscribe to its successor,
        which starts its own watcher (and whose first `indexed` is a pass the panes have not seen)."""
        told = False
        while not self._stopped.is_set():
            subscription = self._subscription
            if subscription is not None:
                for event in subscription:
                    _tell(events, event)
            if self._stopped.wait(RESUBSCRIBE_SECONDS):
                return
            try:
                self._subscription = self.remote.watch()
                told = False
            except RemoteError as exc:
                self._subscription = None
                if not told:  # once, not every retry
                    events.failed(f"{exc}; the panes update again once it is back")
                told = True

    def stop(self) -> None:
        self._stopped.set()
        if self._subscription is not None:
            self._subscription.close()


def _tell(events: WatchEvents, event: Reply) -> None:
    if isinstance(event, Update):
        events.update(protocol.unpack(event.payload))
    elif isinstance(event, Memories):
        events.memories()
    elif isinstance(event, Replaced):
        events.replaced()
    elif isinstance(event, Indexed):
        events.indexed(*protocol.unpack(event.payload))
    elif isinstance(event, Failed):
        events.failed(event.message)
