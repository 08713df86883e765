"""`cortex bench scale`: the engine on a large work tree and a large store, beside the raw LanceDB floor.

The work tree is a real repository's indexable files replicated under distinct directories (`copy0/`, `copy1/`,
...) until it holds the asked number of files, committed to a fresh git repository. Memories are synthetic rows
with clustered unit vectors written straight into the table (embedding a million texts would take days on two
cores). Code chunks get no vectors (the lexical pass alone), so code search is full-text here. Queries are
embedded by the real model, as in use. Everything lives in a temporary directory; the source is only read.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ...core import later
from ...core.engine import Engine
from ...core.errors import CortexError
from ...core.index.walk import list_files
from ...core.index.watch import IndexWatcher
from ...core.records import MemoryDraft
from ...core.store.store import MEMORY_BITMAPS, MEMORY_BTREES, MEMORY_LABEL_LISTS
from .search import _VOCAB, synthetic_memory_rows

if TYPE_CHECKING:
    from lancedb.query import MatchQuery  # `import lancedb` costs seconds: imported where a query is made

DIM = 384


@dataclass(frozen=True)
class ScaleBench:
    """One run's numbers (milliseconds unless named otherwise)."""

    files: int
    memories: int
    index_seconds: float
    peak_rss_mb: float
    search_p50: float
    search_p95: float
    floor_p50: float
    floor_p95: float
    what_p50: float
    what_p95: float
    remember_p50: float
    remember_p95: float
    """In-process: the embedding cache's commit is part of the answer."""
    served_remember_p50: float
    served_remember_p95: float
    """As the resident server answers it: work nothing in the answer needs (the cache commit) after the answer."""
    select_p50: float
    select_p95: float
    status_live_p50: float
    status_listing_p50: float
    save_searchable_p50: float
    save_searchable_p95: float
    touched: int
    touch_seconds: float
    touch_versions: int
    idle_cpu_percent: float
    """The watcher thread's own CPU while nothing changes."""
    idle_process_cpu_percent: float
    """The whole process meanwhile (LanceDB's and the model runtime's threads included)."""


IDLE_SECONDS = 30
"""How long an idle watcher is measured, once the last save has been applied."""


def _pct(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples) or [0.0]
    return statistics.median(samples), samples[int(0.95 * (len(samples) - 1))]


def _timed(fn, runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def build_tree(source: Path, target: Path, files: int) -> int:
    """Replicate the source repository's indexable files until `files` exist; returns how many were written."""
    is_repo = (source / ".git").exists()
    picked = [f.path for f in list_files(source, is_repo).files if f.size <= 100_000]
    if not picked:
        raise SystemExit(f"no indexable files in {source}")
    written = 0
    copy = 0
    while written < files:
        for rel in picked:
            if written >= files:
                break
            dest = target / f"copy{copy}" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / rel, dest)
            written += 1
        copy += 1
    git = ["git", "-c", "user.email=bench@example.com", "-c", "user.name=bench"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=target, check=True)
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "Scale tree"], cwd=target, check=True)
    return written


def fill_memories(engine: Engine, count: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    words = random.Random(seed)
    centres = rng.standard_normal((64, DIM)).astype(np.float32)
    store = engine.store(create=True)
    now = datetime.now(UTC)
    for lo in range(0, count, 20_000):
        n = min(20_000, count - lo)
        store.table.add(synthetic_memory_rows(rng, words, centres, lo, n, store.embedder.model_id, now, days=365,
                                              prefix="s", branches=["main", "feature/x"], folder="copy0"))
    store.db.ensure_text_indexes(store.table)
    store.table.optimize()
    store.db.ensure_search_indexes(store.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)


def _floor(engine: Engine, query: str) -> None:
    """The same work with no engine around it: embed the query, one vector and one full-text read per table. The
    query is embedded afresh, as a search embeds a query it has not seen (each timed query is new to both): the
    engine's cache of recent queries (`Embedder.embed_one`) held the one the search had just embedded, so the floor
    left out work the search did."""
    vector = engine.embedder.embed_uncached([query], query=True)[0]
    store, index = engine.store(), engine.code_index()
    store.table.search(vector).where("status = 'active'", prefilter=True).select(["id", "_distance"]).limit(50).to_list()
    for table in (store.table, index.chunks):
        table.search(_words_match(query), query_type="fts").select(["id", "_score"]).limit(50).to_list()


def _words_match(text: str) -> MatchQuery:
    """The engine's full-text query on the `words` column (core/search/search.py `_fts`)."""
    from lancedb.query import MatchQuery

    # The ignore, as in the engine: lancedb gives MatchQuery's defaults positionally (`pydantic.Field(1.0,
    # kw_only=True)`), which type checkers do not read as defaults, so they take those fields for required ones.
    return MatchQuery(text, "words")  # type: ignore[call-arg]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


KEPT = "built.json"
"""In a kept directory: what its tree and store were built from, so a run with other sizes builds afresh."""


def run(source: Path, files: int, memories: int, queries: int = 30, edits: int = 10, touch: int = 10_000,
        keep: Path | None = None, latency_only: bool = False) -> ScaleBench:
    """`keep`: build the tree and store there and leave them, or reuse them when they were built with the same
    sizes (the build is most of a run at 50,000 files: minutes). A reused build reports the index time and peak
    as 0. `latency_only`: measure search, `what`, remember, select and status only."""
    if keep is None:
        with tempfile.TemporaryDirectory() as tmp:
            return _run_in(Path(tmp), source, files, memories, queries, edits, touch, latency_only)
    keep.mkdir(parents=True, exist_ok=True)
    return _run_in(keep, source, files, memories, queries, edits, touch, latency_only)


def _build(home: Path, source: Path, files: int, memories: int) -> tuple[Engine, int, float, float]:
    """The tree, its lexical index and the memories under `home`, or those a kept run left there: the engine, the
    files, the index's seconds and the peak RSS (0 and 0 when reused)."""
    tree, db, marker = home / "tree", home / "db", home / KEPT
    wanted = {"files": files, "memories": memories, "source": str(source.resolve())}
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == wanted:
        engine = Engine(tree, db=str(db))
        # An index the code asks for since the build (a new scalar one) is built now, not by the first write timed.
        store = engine.store()
        store.db.ensure_search_indexes(store.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)
        return engine, files, 0.0, 0.0
    for old in (tree, db, marker):
        if old.is_dir():
            shutil.rmtree(old)
        old.unlink(missing_ok=True)
    tree.mkdir()
    files = build_tree(source, tree, files)
    engine = Engine(tree, db=str(db))
    index = engine.code_index(create=True)
    t0 = time.perf_counter()
    index.update(embed=False)
    index_seconds = time.perf_counter() - t0
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fill_memories(engine, memories)
    marker.write_text(json.dumps(wanted), encoding="utf-8")
    return engine, files, index_seconds, peak_rss


def _run_in(home: Path, source: Path, files: int, memories: int, queries: int, edits: int, touch: int,
            latency_only: bool) -> ScaleBench:
    engine, files, index_seconds, peak_rss = _build(home, source, files, memories)
    tree = home / "tree"
    index = engine.code_index()
    # The index as a user's is: `cortex index` compacts what is due at its end (a resident server's compactor too,
    # once writes pause). The index pass alone left the chunks in 141 fragments of about 1,700 rows, and a read of
    # 50 chunks read from up to 50 files (the code full-text read: 15 ms of CPU, 7 once compacted; the floor's too,
    # 7 -> 4). Untimed, like the build. (The memories were compacted by their build, `fill_memories`.)
    for table in (index.files, index.chunks, index.edges, index.skipped_table):
        index.db.compact_if_due(table)
    rng = random.Random(3)
    texts = [" ".join(rng.choice(_VOCAB) for _ in range(3)) for _ in range(queries)]
    # The warm-up's query is none of the timed ones: a query seen before is embedded from the engine's cache.
    warm = " ".join(rng.choice(_VOCAB) for _ in range(3))
    listing_status = _timed(index.status, 3)
    save: list[float] = []
    idle = idle_process = 0.0
    with IndexWatcher(index, embed=False) as watcher:
        watcher.ready.wait(30)
        # Timed once the watcher has caught up and keeps the index live, as a resident server's is: before that its
        # first pass (a listing and a comparison of every file) runs beside the first searches, and each search's
        # freshness check lists the whole tree too (at 50,000 files, most of a search's CPU). A listing that says
        # fresh comes sooner than that.
        while index.generation() is None or not index.status().fresh:
            time.sleep(0.1)
        engine.search(warm)
        engine.what()
        _floor(engine, warm)
        # Query by query, the search then its floor: on a shared machine the load drifts within a run, and two
        # blocks one after the other met different loads.
        search: list[float] = []
        floor: list[float] = []
        for q in texts:
            search += _timed(lambda: engine.search(q), 1)
            floor += _timed(lambda: _floor(engine, q), 1)
        what = _timed(engine.what, max(queries // 3, 3))
        remember = [t for i in range(edits) for t in _timed(
            lambda: engine.remember(MemoryDraft(text=f"scale note {i} {texts[i % len(texts)]}")), 1)]
        served = [_served_remember(engine, f"served note {i} {texts[i % len(texts)]}") for i in range(edits)]
        select = [t for q in texts[:5] for t in _timed(lambda: engine.select(q, 8000), 1)]
        status_live = _timed(index.status, 10)
        if not latency_only:
            save = _save_to_searchable(tree, index, edits)
            thread = watcher._thread
            if thread is None or thread.ident is None:
                raise CortexError("the index watcher's thread is not running")
            clock = time.pthread_getcpuclockid(thread.ident)
            cpu0, thread0, wall0 = _cpu_seconds(), time.clock_gettime(clock), time.perf_counter()
            time.sleep(IDLE_SECONDS)
            wall = time.perf_counter() - wall0
            idle = 100 * (time.clock_gettime(clock) - thread0) / wall
            idle_process = 100 * (_cpu_seconds() - cpu0) / wall
    touched, touch_seconds, touch_versions = (0, 0.0, 0) if latency_only else _touch(tree, index, touch)
    return ScaleBench(
        files, memories, index_seconds, peak_rss, *_pct(search), *_pct(floor), *_pct(what), *_pct(remember),
        *_pct(served), *_pct(select), _pct(status_live)[0], _pct(listing_status)[0], *_pct(save), touched, touch_seconds,
        touch_versions, idle, idle_process,
    )


def _served_remember(engine: Engine, text: str) -> float:
    """One `remember` timed as the server's command runner answers it (app/server/command_runner.py): what it
    leaves until after the answer is done after the clock stops."""
    with later.collected() as deferred:
        t0 = time.perf_counter()
        engine.remember(MemoryDraft(text=text))
        elapsed = (time.perf_counter() - t0) * 1000
    for job in deferred:
        job()
    return elapsed


def _save_to_searchable(tree: Path, index, edits: int) -> list[float]:
    victim = next(p for p in sorted((tree / "copy0").rglob("*.py")) if p.stat().st_size < 20_000)
    original = victim.read_text(encoding="utf-8")
    out = []
    for i in range(edits):
        token = _probe(i)
        start = time.perf_counter()
        victim.write_text(original + f"\n# {token}\n", encoding="utf-8")
        while time.perf_counter() - start < 30:
            if _found(index, token):
                out.append((time.perf_counter() - start) * 1000)
                break
            time.sleep(0.02)
    victim.write_text(original, encoding="utf-8")
    # The idle window that follows must not include re-indexing the restored file: wait until it is applied.
    start = time.perf_counter()
    while time.perf_counter() - start < 30 and _found(index, _probe(edits - 1)):
        time.sleep(0.05)
    time.sleep(1)
    return out


def _probe(i: int) -> str:
    """A word found nowhere else, letters only: the indexed `words` split identifiers at digits."""
    return f"scaleprobe{chr(97 + i // 26)}{chr(97 + i % 26)}"


def _found(index, token: str) -> bool:
    """Whether full-text search over code finds the token: the engine's own query on the indexed `words` column
    (the unindexed `text` column made every probe a scan of all chunks, ~1 s at 50k files)."""
    return bool(index.chunks.search(_words_match(token), query_type="fts").select(["id", "_score"]).limit(1).to_list())


def _touch(tree: Path, index, count: int) -> tuple[int, float, int]:
    """Touch `count` files without changing them and apply them as one watcher batch: seconds and new versions."""
    paths = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*") if p.is_file() and ".git" not in p.parts)[:count]
    stamp = time.time_ns()
    for rel in paths:
        os.utime(tree / rel, ns=(stamp, stamp))
    tables = (index.files, index.chunks, index.edges, index.skipped_table)
    before = sum(t.version for t in tables)
    t0 = time.perf_counter()
    index.update(only=paths, embed=False)
    return len(paths), time.perf_counter() - t0, sum(t.version for t in tables) - before


def rows(b: ScaleBench) -> list[tuple[str, str]]:
    return [
        ("work tree / memories", f"{b.files:,} files / {b.memories:,} memories"),
        ("lexical index of the tree", f"{b.index_seconds:.1f} s, peak RSS {b.peak_rss_mb:.0f} MB"),
        ("search p50 / p95", f"{b.search_p50:.0f} / {b.search_p95:.0f} ms"),
        ("raw LanceDB floor p50 / p95", f"{b.floor_p50:.0f} / {b.floor_p95:.0f} ms"),
        ("what p50 / p95", f"{b.what_p50:.0f} / {b.what_p95:.0f} ms"),
        ("remember p50 / p95: in-process / as served", f"{b.remember_p50:.0f} / {b.remember_p95:.0f} ms; "
                                                       f"{b.served_remember_p50:.0f} / {b.served_remember_p95:.0f} ms"),
        ("select p50 / p95", f"{b.select_p50:.0f} / {b.select_p95:.0f} ms"),
        ("status: live (watcher) / with a listing", f"{b.status_live_p50:.0f} / {b.status_listing_p50:.0f} ms"),
        ("save to searchable p50 / p95", f"{b.save_searchable_p50:.0f} / {b.save_searchable_p95:.0f} ms"),
        (f"touch {b.touched:,} unchanged files, re-index", f"{b.touch_seconds:.1f} s, {b.touch_versions} new table versions"),
        (f"idle CPU over {IDLE_SECONDS} s: watcher thread / process", f"{b.idle_cpu_percent:.2f} % / {b.idle_process_cpu_percent:.2f} %"),
    ]
