"""The embedding cache: vectors in the repository's database, keyed by model and content hash, so a text is
embedded once whichever table (memories, chunks) it comes from."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import numpy as np

from .. import later
from .database import Database
from .schema import VECTOR_CACHE_SCHEMA
from .sql import in_filter, quote

FLUSH_AT = 256
"""Vectors held back at which a batch is committed whatever its age."""
FLUSH_EVERY_S = 10.0
"""Age of the oldest vector held back at which a batch is committed after the next answer."""


class LanceVectorCache:
    """Embedding cache in the same database, keyed by model and content hash."""

    def __init__(self, db: Database, after_answer: bool = False) -> None:
        """`after_answer`: new vectors may wait for a batch committed after an answer (see put_vectors)."""
        self.db = db
        self.after_answer = after_answer
        self.table = db.open_table("vector_cache", VECTOR_CACHE_SCHEMA, key=["hash", "model"])
        self._held: dict[tuple[str, str], np.ndarray] = {}
        """Vectors not committed yet, by (model, hash): lookups find them here meanwhile."""
        self._held_since = 0.0
        self._lock = threading.Lock()
        if after_answer:
            db.hold_back(self.flush)

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for h in hashes:
                if (held := self._held.get((model, h))) is not None:
                    found[h] = held
        hashes = [h for h in hashes if h not in found]
        for lo in range(0, len(hashes), 500):
            part = hashes[lo : lo + 500]
            where = f"model = {quote(model)} AND ({in_filter('hash', part)})"
            for row in self.table.search().where(where).select(["hash", "vector"]).limit(len(part)).to_list():
                found[row["hash"]] = np.asarray(row["vector"], dtype=np.float32)
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        if self.db.read_only:
            return  # the owner made the database read-only: a cache stores nothing there
        if self.after_answer and later.collecting():
            # A resident server's command: nothing it answers reads the cache, and each commit of its own was a
            # table version per `remember` (the manifests of three writers' versions were most of the cache's
            # size on disk under sustained writes). So the vectors wait for a batch: committed after an answer
            # once `FLUSH_AT` wait or the oldest is `FLUSH_EVERY_S` old, else by the background compactor when
            # writes pause (see `Database.hold_back`), or when the server stops. A server killed meanwhile loses
            # them: a later lookup misses and embeds the text again, to the same vector.
            with self._lock:
                if not self._held:
                    self._held_since = time.monotonic()
                self._held.update({(model, h): v for h, v in vectors.items()})
                due = len(self._held) >= FLUSH_AT or time.monotonic() - self._held_since >= FLUSH_EVERY_S
            if due:
                later.after_answer(self.flush)
            return
        self._commit([(model, h, v) for h, v in vectors.items()])

    def flush(self) -> int:
        """Commit the vectors held back, in one commit; returns how many."""
        with self._lock:
            held, self._held = self._held, {}
        self._commit([(model, h, v) for (model, h), v in held.items()])
        return len(held)

    def _commit(self, vectors: list[tuple[str, str, np.ndarray]]) -> None:
        if not vectors:
            return
        rows = [{"hash": h, "model": model, "vector": v.tolist()} for model, h, v in vectors]
        # Repeated after a lost race, an append may store a vector twice; a lookup takes either copy.
        self.db.write(lambda: self.db.add(self.table, rows, idempotent=True))
