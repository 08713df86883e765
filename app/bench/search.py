"""`cortex bench search`: latency of `search` and `what` at 10k and 100k stored items, and a new process's first search.

Items are synthetic (half memories, half code chunks) with clustered unit vectors, written straight into the tables
so the benchmark measures retrieval, not hours of embedding. Queries are embedded by the real model, as in use.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from ...core.engine import Engine
from ...core.index.chunk_rows import CHUNK_BITMAPS, CHUNK_BTREES, CHUNK_LABEL_LISTS, defined_names
from ...core.records import Memory
from ...core.store.memory_rows import memory_to_row
from ...core.store.store import MEMORY_BITMAPS, MEMORY_BTREES, MEMORY_LABEL_LISTS
from ...core.text import chunk_words

_VOCAB = (
    "parser cache index branch commit token budget search graph vector memory decision retry timeout queue schema "
    "migration config watcher embed chunk symbol import module test fixture latency throughput lock session user "
    "account invoice payment render widget layout theme palette keyboard binding router handler request response"
).split()
DIM = 384


@dataclass(frozen=True)
class SearchBench:
    """Latencies at one scale."""

    items: int
    ann_index: bool
    search_p50_ms: float
    search_p95_ms: float
    what_p50_ms: float
    what_p95_ms: float


def _vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picks = centres[rng.integers(0, len(centres), n)]
    v = picks + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def synthetic_memory_rows(rng: np.random.Generator, words: random.Random, centres: np.ndarray, lo: int, n: int,
                          model_id: str, now: datetime, days: int, prefix: str, branches: list[str],
                          folder: str) -> list[dict]:
    """Rows `lo`..`lo + n` of a synthetic store: 30 words each, vectors clustered around `centres`, made in the
    last `days`, each tied to one file under `folder`. The search and scale benchmarks fill their stores with it."""
    vecs = _vectors(rng, n, centres)
    rows = []
    for i in range(n):
        text = " ".join(words.choice(_VOCAB) for _ in range(30))
        stamp = now - timedelta(minutes=words.randint(0, 60 * 24 * days))
        rows.append(memory_to_row(Memory(
            id=f"{prefix}{lo + i:011d}", kind=words.choice(["decision", "note", "task", "fact"]), title=text[:40],
            text=text, tags=[words.choice(_VOCAB)], files=[f"{folder}/{words.choice(_VOCAB)}.py"], symbols=[],
            branch=words.choice(branches), commit="", scope="repo", source_key="", version=1, status="active",
            task_state="open", created_at=stamp, updated_at=stamp, accessed_at=stamp, text_hash=f"h{lo + i}",
            vector=vecs[i].tolist(), vector_model=model_id,
        )))
    return rows


def _fill(engine: Engine, items: int, seed: int = 11) -> bool:
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    centres = rng.standard_normal((64, DIM)).astype(np.float32)
    store = engine.store(create=True)
    index = engine.code_index(create=True)
    half = items // 2
    now = datetime.now(UTC)
    branches = ["main", "feature/search", "fix/cache"]
    for lo in range(0, half, 10_000):
        n = min(10_000, half - lo)
        store.table.add(synthetic_memory_rows(rng, words, centres, lo, n, engine.embedder.model_id, now, days=60,
                                              prefix="m", branches=branches, folder="src"))
        vecs = _vectors(rng, n, centres)
        chunks = []
        for i in range(n):
            name = "".join(w.capitalize() for w in (words.choice(_VOCAB), words.choice(_VOCAB)))
            text = f"def {name}(x):\n    " + " ".join(words.choice(_VOCAB) for _ in range(40))
            chunks.append({
                "id": f"c{lo + i:015d}", "path": f"src/{words.choice(_VOCAB)}/{words.choice(_VOCAB)}.py", "language": "python",
                "kind": "code", "start_line": 1, "end_line": 2, "symbols": [name], "names": defined_names([name]), "refs": [], "text": text,
                "words": chunk_words(f"src/{lo + i}.py", text), "tokens": 60, "hash": f"c{lo + i}", "is_test": False, "embedded": True,
                "vector": vecs[i].tolist(), "vector_model": engine.embedder.model_id,
            })
        index.chunks.add(chunks)
    engine.store().db.ensure_text_indexes(store.table)
    engine.store().db.ensure_text_indexes(index.chunks)
    store.table.optimize()
    index.chunks.optimize()
    ann = engine.store().db.ensure_search_indexes(store.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)
    ann = engine.store().db.ensure_search_indexes(index.chunks, CHUNK_BITMAPS, CHUNK_LABEL_LISTS, CHUNK_BTREES) or ann
    index.files.add([{"path": "src/app.py", "language": "python", "size": 10, "mtime_ns": 0, "blob": "x",
                      "last_commit_time": None, "last_author": "", "is_test": False, "imports": [], "symbols": [],
                      "tokens": 1, "chunks": 1, "indexed_at": now}])
    return any("ivf" in i.index_type.lower() for t in (store.table, index.chunks) for i in t.list_indices())


def _percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def run_scale(items: int, queries: int = 40) -> SearchBench:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        engine = Engine(repo, db=str(Path(tmp) / "db"))
        ann = _fill(engine, items)
        rng = random.Random(5)
        texts = [" ".join(rng.choice(_VOCAB) for _ in range(4)) for _ in range(queries)]
        engine.search(texts[0])
        engine.what()
        search_ms, what_ms = [], []
        for text in texts:
            t0 = time.perf_counter()
            engine.search(text)
            search_ms.append((time.perf_counter() - t0) * 1000)
        for _ in range(queries // 2):
            t0 = time.perf_counter()
            engine.what()
            what_ms.append((time.perf_counter() - t0) * 1000)
    s50, s95 = _percentiles(search_ms)
    w50, w95 = _percentiles(what_ms)
    return SearchBench(items, ann, s50, s95, w50, w95)


def cold_start(items: int = 2_000) -> float:
    """Seconds for a new `cortex search` process to answer (interpreter, imports, model load, first query)."""
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
        db = str(Path(tmp) / "db")
        _fill(Engine(repo, db=db), items)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", "search", "parser cache retry", "-C", str(repo),
                        "--db", db, "--json"], check=True, capture_output=True)
        return time.perf_counter() - t0
