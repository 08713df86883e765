"""Compaction off the write path: a background thread in the long-lived processes (resident server, watcher, MCP
server, dashboard) compacts due tables once writes have paused.

Writes only note that a table was written (`Database.note_written`); a compaction of a large table rewrites it
and can take minutes, so no `remember` or index batch may wait for one. The thread wakes when a write is noted,
waits until this process has made no commit for `idle_s`, then compacts whatever is due, one table at a time. It
also looks every `period_s` without a note, for writes other processes made (a one-shot `cortex remember`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .database import WRITES_NOTED, Database

IDLE_S = 2.0
PERIOD_S = 60.0


class Compactor:
    """One background thread compacting the databases `databases()` returns (re-read each turn: stores open
    lazily). Errors go to `on_error` and the thread carries on: a failed compaction is tried again later."""

    def __init__(self, databases: Callable[[], list[Database]], on_error: Callable[[str], None] | None = None,
                 idle_s: float = IDLE_S, period_s: float = PERIOD_S) -> None:
        self.databases = databases
        self.on_error = on_error
        self.idle_s = idle_s
        self.period_s = period_s
        self.compacted = 0
        """Compactions made so far (for tests and status lines)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Compactor":
        self._thread = threading.Thread(target=self._run, name="cortex-compact", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        WRITES_NOTED.wake()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        seen = -1  # the first turn looks at once: writes made before this compactor started may have left tables due
        while not self._stop.is_set():
            seen = WRITES_NOTED.wait(seen, self.period_s, self._stop)
            if self._stop.is_set():
                break
            self._wait_for_pause()
            for db in self.databases():
                if self._stop.is_set():
                    break
                try:
                    self.compacted += len(db.compact_due())
                except Exception as exc:  # never take the host process down; the next turn tries again
                    if self.on_error:
                        self.on_error(f"compaction of {db.uri} failed: {str(exc).splitlines()[0][:200]}")

    def _wait_for_pause(self) -> None:
        while not self._stop.is_set():
            quiet = time.monotonic() - max((db.last_commit for db in self.databases()), default=0.0)
            if quiet >= self.idle_s:
                return
            self._stop.wait(self.idle_s - quiet)
