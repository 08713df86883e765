"""A vector cache on disk shared by every task of a benchmark run (and by later runs).

Each localisation task indexes a fresh tree in a temporary database, but consecutive commits of one repository
share almost all their chunks: keyed by content hash, a chunk is embedded once for the whole benchmark.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class DiskVectorCache:
    """SQLite file of (model, content hash) -> float32 vector; satisfies `embed.VectorCache`."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path)
        self.db.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT, hash TEXT, vector BLOB, PRIMARY KEY (model, hash))")

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for lo in range(0, len(hashes), 500):
            part = list(hashes[lo : lo + 500])
            marks = ",".join("?" * len(part))
            for h, blob in self.db.execute(f"SELECT hash, vector FROM vectors WHERE model = ? AND hash IN ({marks})", [model, *part]):
                found[h] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        with self.db:
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                [(model, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in vectors.items()])

    def close(self) -> None:
        self.db.close()
