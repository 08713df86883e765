"""The embedding cache: vectors in the repository's database, keyed by model and content hash, so a text is
embedded once whichever table (memories, chunks) it comes from."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import later
from .database import Database
from .schema import VECTOR_CACHE_SCHEMA
from .sql import in_filter, quote


class LanceVectorCache:
    """Embedding cache in the same database, keyed by model and content hash."""

    def __init__(self, db: Database, after_answer: bool = False) -> None:
        """`after_answer`: new vectors may be committed after the command's answer (see put_vectors)."""
        self.db = db
        self.after_answer = after_answer
        self.table = db.open_table("vector_cache", VECTOR_CACHE_SCHEMA, key=["hash", "model"])

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for lo in range(0, len(hashes), 500):
            part = hashes[lo : lo + 500]
            where = f"model = {quote(model)} AND ({in_filter('hash', part)})"
            for row in self.table.search().where(where).select(["hash", "vector"]).limit(len(part)).to_list():
                found[row["hash"]] = np.asarray(row["vector"], dtype=np.float32)
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        rows = [{"hash": h, "model": model, "vector": v.tolist()} for h, v in vectors.items()]
        # Repeated after a lost race, an append may store a vector twice; a lookup takes either copy.
        def commit() -> None:
            self.db.write(lambda: self.db.add(self.table, rows, idempotent=True))

        if self.after_answer:
            # Nothing a command answers reads the cache, so the resident server commits it after answering (a
            # separate commit, ~18 ms of a warm `remember`); a lookup before then misses and embeds the text
            # again, to the same vector.
            later.after_answer(commit)
        else:
            commit()
