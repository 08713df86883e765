"""The stores one engine reads and writes: the repository's, the user's global one and the team's.

Each is opened once, on first use, and shared by the threads of a long-lived process. Reads go to all of them (the
global one unless turned off); a team store that does not answer is left out of reads for a minute, its error kept
in `team_error`, so local work goes on while the team's storage is away.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..config import Settings
from ..embedding.embed import Embedder
from ..errors import CortexError, DamagedDatabase
from ..locations import default_global_db_uri
from ..records import Memory, StoreStats
from .database import Database, RemoteOptions
from .failures import is_unreachable, unreachable_error
from .memory_rows import now
from .sql import quote
from .store import MemoryStore

T = TypeVar("T")

TEAM_RETRY_SECONDS = 60
"""How long a team store that did not answer is left out: finding out costs a few request timeouts."""


class StoreSet:
    def __init__(self, settings: Settings, db_uri: str, embedder: Embedder, on_change: Callable[[], None]) -> None:
        self.settings = settings
        self.db_uri = db_uri
        self._embedder = embedder
        self._on_change = on_change
        self._lock = threading.Lock()
        self._open: dict[str, MemoryStore] = {}
        self._team_retry_at = 0.0
        self.team_error = ""
        """Why the team store was left out of the last read (empty when it answered or none is configured)."""

    def open(self, uri: str, create: bool) -> MemoryStore:
        with self._lock:
            if uri not in self._open:
                remote = RemoteOptions(self.settings.team_endpoint, self.settings.remote_timeout_seconds,
                                       self.settings.remote_consistency_seconds, self.settings.credentials)
                db = Database(uri, create=create, lock_timeout=self.settings.lock_timeout,
                              compact_every=self.settings.compact_every, remote=remote)
                self._open[uri] = MemoryStore(db, self._embedder, self.settings.max_text_bytes,
                                              on_change=self._on_change)
            return self._open[uri]

    def is_open(self, uri: str) -> bool:
        with self._lock:
            return uri in self._open

    def opened(self) -> list[MemoryStore]:
        with self._lock:
            return list(self._open.values())

    def databases(self) -> list[Database]:
        with self._lock:
            return list({id(s.db): s.db for s in self._open.values()}.values())

    def repo(self, create: bool = False) -> MemoryStore:
        return self.open(self.db_uri, create)

    def global_store(self, create: bool = False) -> MemoryStore | None:
        uri = self.settings.global_db or default_global_db_uri()
        if uri == self.db_uri:
            return None
        try:
            return self.open(uri, create)
        except DamagedDatabase:
            raise
        except CortexError:
            if create:
                raise
            return None

    def team_store(self, create: bool = False) -> MemoryStore:
        """The team's shared store (settings `team_db`); raises a one-line error when unset or unreachable."""
        if not self.settings.team_db:
            raise CortexError("no team store configured: set team_db in config.toml or CORTEX_TEAM_DB")
        return self.open(self.settings.team_db, create)

    def reading(self) -> list[MemoryStore]:
        """The stores reads consult: the repository's, then the global one unless turned off, then the team's
        (left out while it does not answer)."""
        found = [self.repo()]
        if self.settings.use_global:
            other = self.global_store()
            if other is not None:
                found.append(other)
        if self.settings.team_db and self.settings.team_db != self.db_uri and time.monotonic() >= self._team_retry_at:
            try:
                found.append(self.team_store(create=True))
                self.team_error = ""
            except CortexError as exc:
                self._team_left_out(exc)
        return found

    def read(self, store: MemoryStore, read: Callable[..., list[T]], *args, **kwargs) -> list[T]:
        """`read(*args, **kwargs)` of one of `reading()`'s stores; a team store that stops answering after it was
        opened (a long-lived process opened it while it answered) is left out of this read and the next minute's,
        as one that did not answer when opened."""
        try:
            return read(*args, **kwargs)
        except Exception as exc:
            if store.db.uri != self.settings.team_db or not is_unreachable(exc):
                raise
            self._team_left_out(exc if isinstance(exc, CortexError) else unreachable_error(store.db.uri, exc))
            return []

    def _team_left_out(self, error: CortexError) -> None:
        self.team_error, self._team_retry_at = str(error), time.monotonic() + TEAM_RETRY_SECONDS

    def owner(self, memory_id: str) -> MemoryStore:
        for store in self.reading():
            if store.find(memory_id) is not None:
                return store
        raise CortexError(f"no memory with id {memory_id!r}")

    def history(self, key: str) -> list[Memory]:
        for store in self.reading():
            try:
                return store.history(key)
            except CortexError:
                continue
        raise CortexError(f"no memory with key or id {key!r}")

    def forget_key(self, key: str, purge: bool = False) -> list[Memory]:
        for store in self.reading():
            if store.count(f"source_key = {quote(key)}"):
                return store.forget(key=key, purge=purge)
        raise CortexError(f"no memory with key {key!r}")

    def accessed(self, memories: Sequence[Memory]) -> None:
        """Record that an answer showed these memories (written in batches, after answers: see access.py). The
        team's store is shared and remote: a read there stays a read."""
        stamp = now()
        by_store: dict[str, list[str]] = {}
        for m in memories:
            by_store.setdefault(m.store, []).append(m.id)
        for store in self.opened():
            if store.db.uri == self.settings.team_db:
                continue
            ids = by_store.get("repo" if store.db.uri == self.db_uri else "global")
            if ids:
                store.access.seen(ids, stamp)

    def flush_access(self) -> int:
        """Write the access times still pending."""
        return sum(store.access.flush() for store in self.opened())

    def stats(self) -> list[StoreStats]:
        return [store.stats() for store in self.reading()]

    def gc(self) -> int:
        """Every table of every store read compacted now (the code index's too, which lives in the repository's
        database); returns the old versions removed."""
        self.flush_access()
        for store in self.reading():
            store.db.prune_receipts()
        return sum(store.db.compact_everything() for store in self.reading())
