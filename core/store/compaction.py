"""Compaction off the write path: a background thread in the long-lived processes (resident server, watcher, MCP
server, dashboard) compacts due tables once writes have paused.

Writes only note that a table was written (`Database.note_written`); a compaction of a large table rewrites it
and can take minutes, so no `remember` or index batch may wait for one. The thread wakes when a write is noted,
waits until this process has made no commit for `idle_s`, then compacts whatever is due, one table at a time. It
also looks every `period_s` without a note, for writes other processes made (a one-shot `cortex remember`).
Writes that never pause (several agents remembering while the watcher re-indexes) do not hold compaction off for
longer than `max_wait_s`: waiting for a pause that never came let `.cortex` grow to 3.1 times its compacted size in
five minutes, where compacting alongside the writes keeps it under twice (`cortex bench disk`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from .database import WRITES_NOTED, Database

IDLE_S = 2.0
PERIOD_S = 60.0
MAX_WAIT_S = 20.0


class Compactor:
    """One background thread compacting the databases `databases()` returns (re-read each turn: stores open
    lazily). Errors go to `on_error` and the thread carries on: a failed compaction is tried again later."""

    def __init__(self, databases: Callable[[], list[Database]], on_error: Callable[[str], None] | None = None,
                 idle_s: float = IDLE_S, period_s: float = PERIOD_S, max_wait_s: float = MAX_WAIT_S) -> None:
        self.databases = databases
        self.on_error = on_error
        self.idle_s = idle_s
        self.period_s = period_s
        self.max_wait_s = max_wait_s
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
        """Until this process's writes pause for `idle_s`, or `max_wait_s` have passed without one (a compaction
        runs beside writes safely: appends do not conflict with it, and other writes retry their commit)."""
        give_up = time.monotonic() + self.max_wait_s
        while not self._stop.is_set():
            now = time.monotonic()
            quiet = now - max((db.last_commit for db in self.databases()), default=0.0)
            if quiet >= self.idle_s or now >= give_up:
                return
            self._stop.wait(min(self.idle_s - quiet, give_up - now))
