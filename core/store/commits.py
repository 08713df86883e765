"""How writers take turns: named locks across processes, commits retried when they lost a race, the count of
commits (and crash injection at the Nth), and the note a write leaves for background compaction."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from ..errors import CortexError, DatabaseLocked
from .failures import is_commit_conflict

T = TypeVar("T")
CRASH_ENV = "CORTEX_CRASH_AFTER_COMMITS"
ATTEMPTS = 6


class _CommitCounter:
    """Commits made by this process; with CORTEX_CRASH_AFTER_COMMITS=N it SIGKILLs itself after the Nth."""

    def __init__(self) -> None:
        self.count = 0
        self.crash_after = int(os.environ.get(CRASH_ENV) or 0)

    def committed(self) -> None:
        self.count += 1
        if self.crash_after and self.count >= self.crash_after:
            # SIGKILL, not an exception: no finally block, lock release or atexit hook may tidy up after a crash.
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


COMMITS = _CommitCounter()


class _WriteNotes:
    """A count of the writes that may have made a table due for compaction, in any database of this process, that
    background compactors wait on (see core/store/compaction.py). A count, not an event: with several compactors in one
    process (the server's engines), one clearing an event could swallow the write another was waiting for, or the
    stop another was woken for."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    def note(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def seen(self) -> int:
        return self._count

    def wake(self) -> None:
        """Wake every waiter without noting a write (a compactor is stopping: each looks at its own stop flag)."""
        with self._changed:
            self._changed.notify_all()

    def wait(self, seen: int, timeout: float, stop: threading.Event) -> int:
        """Until a write is noted after `seen`, `stop` is set or `timeout` passes; returns the count to wait after
        next time."""
        with self._changed:
            self._changed.wait_for(lambda: self._count != seen or stop.is_set(), timeout)
            return self._count


WRITES_NOTED = _WriteNotes()


def retried(fn: Callable[[], T], idempotent: bool) -> T:
    """`fn()` (one LanceDB commit), made again with jittered backoff while it loses a race to another writer,
    when `idempotent`; see `Database.commit`."""
    for attempt in range(ATTEMPTS):
        try:
            return fn()
        except Exception as exc:
            if not idempotent or attempt == ATTEMPTS - 1 or not is_commit_conflict(exc):
                raise
            # Jittered, so writers that lost to each other do not retry in step and collide again.
            time.sleep(0.05 * 2**attempt * (0.5 + random.random()))
    raise AssertionError("unreachable")


@contextlib.contextmanager
def file_lock(folder: Path, name: str, wait: float, what: str) -> Iterator[None]:
    """An exclusive lock across processes: a file in `folder`. `filelock` takes an OS lock (flock, or LockFileEx
    on Windows) that the kernel drops when its holder dies, so a killed process never leaves the database locked.
    Not reentrant. `wait`: seconds, for as long as it takes when negative. `what` names the database in errors."""
    import filelock  # with the database: not for commands that only parse

    _still_there(folder, what)
    lock = filelock.FileLock(folder / name, timeout=wait, thread_local=False)
    try:
        lock.acquire(poll_interval=0.02)
    except filelock.Timeout:
        raise DatabaseLocked(f"database {what} is locked by another cortex process (waited {wait:.0f}s)") from None
    except OSError as exc:
        raise CortexError(f"cannot write to database {what}: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        lock.release()


def _still_there(folder: Path, what: str) -> None:
    """`filelock` makes a lock file's missing directories: a lock taken after the database (or the repository
    around it) was deleted would bring its path back, and a repository removed while cortex works in it would
    reappear as `.cortex/db` alone."""
    if not folder.is_dir():
        raise CortexError(f"database {what} no longer exists")


@contextlib.contextmanager
def try_file_lock(folder: Path, name: str) -> Iterator[bool]:
    """The named lock if no other process holds it now (yields True), else yields False at once."""
    import filelock

    _still_there(folder, str(folder))
    lock = filelock.FileLock(folder / name, timeout=0, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
