"""The dashboard's door to the engine when the repository's resident server owns it.

Same methods and answers as `EngineBridge`, asked of the server's warm engine (`remote.Remote`). The server is the
repository's one index watcher: `index` subscribes to it and reports its progress, `start_watcher` passes its
updates on. Copying and assembling a context stay here: they need this terminal, not the engine.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from . import connection
from .remote import Remote, RemoteError, Subscription

RESUBSCRIBE_SECONDS = 2.0


class RemoteBridge:
    """An `EngineBridge` whose engine lives in the resident server."""

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

    def _call(self, method: str, *args, **kwargs):
        return self.remote.call("bridge", method, *args, **kwargs)

    def open(self) -> None:
        self._call("open")

    def warm_model(self) -> None:
        self._call("warm_model")

    def what(self):
        return self._call("what")

    def search(self, text: str, limit: int = 30):
        return self._call("search", text, limit)

    def graph(self, node: str | None):
        return self._call("graph", node)

    def timeline(self, with_memories: bool = True):
        return self._call("timeline", with_memories=with_memories)

    def select(self, task: str, budget: int, pins: frozenset[str], excluded: frozenset[str], fmt: str):
        return self._call("select", task, budget, pins, excluded, fmt)

    def remember(self, draft):
        return self._call("remember", draft)

    def revise(self, memory_id: str, draft):
        return self._call("revise", memory_id, draft)

    def forget(self, memory_id: str) -> None:
        self._call("forget", memory_id)

    def restore(self, memory):
        return self._call("restore", memory)

    def set_task_state(self, memory_id: str, state: str) -> None:
        self._call("set_task_state", memory_id, state)

    def changed_files(self) -> tuple[str, ...]:
        return self._call("changed_files")

    def assemble(self, selection, fmt: str):
        from ..core.assemble import assemble

        return assemble(selection, fmt)

    def copy(self, text: str, osc52: Callable[[str], None]):
        from ..core.clipboard import copy

        return copy(text, osc52=osc52, fallback_dir=self.root / ".cortex" / "clipboard")

    # --- the server's watcher ------------------------------------------------------------------------------------

    def index(self, progress: Callable, should_stop: Callable[[], bool]):
        """The server's index pass as this dashboard sees it: its progress, then (report, status). (None, None) when
        the dashboard stopped waiting (it is closing)."""
        self._subscription = self.remote.watch()
        for kind, value in self._subscription:
            if should_stop() or self._stopped.is_set():
                return None, None
            if kind == "progress":
                progress(value)
            elif kind == "indexed":
                return value
            elif kind == "failed":
                from ..core.errors import CortexError

                self._subscription.close()
                raise CortexError(value)
        if self._stopped.is_set():
            return None, None
        raise RemoteError("lost the resident server while it indexed")

    def start_watcher(self, on_update: Callable, on_error: Callable[[str], None]) -> None:
        threading.Thread(target=self._follow, args=(on_update, on_error), name="cortex-follow", daemon=True).start()

    def _follow(self, on_update: Callable, on_error: Callable[[str], None]) -> None:
        """Pass the server's updates on; when the server goes (replaced, crashed, idle) subscribe to its successor,
        which starts its own watcher."""
        told = False
        while not self._stopped.is_set():
            subscription = self._subscription
            if subscription is not None:
                for kind, value in subscription:
                    if kind == "update":
                        on_update(value)
                    elif kind == "failed":
                        on_error(value)
            if self._stopped.wait(RESUBSCRIBE_SECONDS):
                return
            try:
                self._subscription = self.remote.watch()
                told = False
            except RemoteError as exc:
                self._subscription = None
                if not told:  # once, not every retry
                    on_error(f"{exc}; the panes update again once it is back")
                told = True

    def stop(self) -> None:
        self._stopped.set()
        if self._subscription is not None:
            self._subscription.close()
