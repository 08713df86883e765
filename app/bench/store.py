"""`cortex bench store`: write throughput and latency of the memory store, embedding speed, model load time."""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.config import Settings
from ...core.embedding.embed import Embedder
from ...core.records import MemoryDraft
from ...core.store.database import Database
from ...core.store.store import MemoryStore

_WORDS = (
    "parser cache index branch commit token budget search graph vector memory decision retry timeout queue "
    "schema migration config watcher embed chunk symbol import module test fixture latency throughput lock"
).split()


@dataclass(frozen=True)
class StoreBench:
    """Numbers printed by `cortex bench store`."""

    model_load_s: float
    embed_chunks_per_s: float
    remember_batch_per_s: float
    batch_size: int
    single_p50_ms: float
    single_p95_ms: float
    singles: int


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    import random

    rng = random.Random(seed)
    return [f"memory {i}: " + " ".join(rng.choice(_WORDS) for _ in range(40)) for i in range(n)]


def run(batch: int = 1000, singles: int = 100, settings: Settings | None = None) -> StoreBench:
    settings = settings or Settings()
    embedder = Embedder(settings.embed_model, settings.embed_model_path, settings.embed_threads, settings.embed_batch)
    start = time.perf_counter()
    embedder.embed_uncached(["warm up"])
    load = time.perf_counter() - start
    probe = synthetic_texts(256, seed=1)
    start = time.perf_counter()
    embedder.embed_uncached(probe)
    embed_rate = len(probe) / (time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(str(Path(tmp) / "db"), create=True)
        store = MemoryStore(db, embedder)
        drafts = [MemoryDraft(text=t) for t in synthetic_texts(batch, seed=2)]
        start = time.perf_counter()
        store.remember_many(drafts)
        batch_rate = batch / (time.perf_counter() - start)
        latencies = []
        for text in synthetic_texts(singles, seed=3):
            t0 = time.perf_counter()
            store.remember(MemoryDraft(text=text))
            latencies.append((time.perf_counter() - t0) * 1000)
    latencies.sort()
    return StoreBench(
        model_load_s=load,
        embed_chunks_per_s=embed_rate,
        remember_batch_per_s=batch_rate,
        batch_size=batch,
        single_p50_ms=statistics.median(latencies),
        single_p95_ms=latencies[int(0.95 * (len(latencies) - 1))],
        singles=singles,
    )
