"""Access times of memories, recorded in batches: reads say which memories they showed, and one update per batch
writes their `accessed_at`, after the answer (or on a thread of its own) and at most once per `FLUSH_EVERY_S` (a
busy agent's searches would otherwise each make a table version).

Each batch is a new version of the memories table whose rewritten rows the table's indexes no longer cover until
compaction, and searches slow down with every one (10k items, a batch every 10 s: search p50 +8%, measured query by
query against batches held back). So a batch comes at most once a minute, and a memory whose read this process
wrote in the last `RESTAMP_AFTER_S` keeps that time: an agent's searches show the same memories again and again,
and retention and ranking read access times in days."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from datetime import datetime

from .. import later

FLUSH_EVERY_S = 60.0
FLUSH_AT = 500
"""Ids pending at which a batch is written whatever the time since the last one."""
RESTAMP_AFTER_S = 600.0
"""A memory read again within this long of its last written read keeps that read's time."""


class AccessLog:
    """The ids read since the last batch, and when; `write(batch, wait)` stores one batch and says whether it did
    (`wait=False`: only if no other writer holds the lock at that moment)."""

    def __init__(self, write) -> None:
        self._write = write
        self._pending: dict[str, datetime] = {}
        self._written: dict[str, float] = {}
        """When (monotonic) this process last wrote each memory's access time, within `RESTAMP_AFTER_S`."""
        self._last = 0.0
        self._lock = threading.Lock()

    def seen(self, ids: Iterable[str], stamp: datetime) -> None:
        with self._lock:
            now = time.monotonic()
            for memory_id in ids:
                written = self._written.get(memory_id)
                if written is None or now - written >= RESTAMP_AFTER_S:
                    self._pending[memory_id] = stamp
            due = self._pending and (len(self._pending) >= FLUSH_AT or time.monotonic() - self._last >= FLUSH_EVERY_S)
        if not due:
            return
        if later.collecting():
            later.after_answer(self.flush)
        else:
            # A dashboard or MCP call, or a one-shot command: the write goes to a thread of its own, off the answer.
            # Not a daemon: a process ending normally waits for its one commit, where a daemon thread still inside
            # LanceDB when the interpreter finalises aborts it (SIGABRT in about one library script in five). And
            # it takes the lock only if it is free, so that wait is never one for another writer (up to
            # `lock_timeout`, 30 s): the batch then waits for the next flush.
            threading.Thread(target=self.flush, kwargs={"wait": False}, name="access-times").start()

    def flush(self, wait: bool = True) -> int:
        """Write what is pending now (one commit); returns how many memories it stamped. `wait=False`: not if
        another writer holds the lock, and what was pending stays so."""
        with self._lock:
            batch, self._pending = self._pending, {}
            self._last = time.monotonic()
            self._written = {i: t for i, t in self._written.items() if self._last - t < RESTAMP_AFTER_S}
            self._written.update(dict.fromkeys(batch, self._last))
        if not batch:
            return 0
        try:
            written = self._write(batch, wait)
        except Exception:  # noqa: BLE001 - a database this process may only read: access times are best effort
            return 0
        if not written:
            with self._lock:
                for memory_id, stamp in batch.items():
                    self._pending.setdefault(memory_id, stamp)
                    self._written.pop(memory_id, None)
            return 0
        return len(batch)
