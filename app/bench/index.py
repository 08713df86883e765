"""`cortex bench index --repo PATH`: indexing speed, embedding speed, size on disk, peak RSS, save-to-searchable.

The repository is read in place and never written: the database lives in a temporary directory, and the
save-to-searchable loop edits a temporary copy of the repository's files under a running watcher.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.config import Settings
from ...core.embedding.embed import Embedder
from ...core.git.gitctx import repo_root
from ...core.index.embed_scope import LEXICAL_ONLY_WHERE
from ...core.index.index import CodeIndex
from ...core.index.walk import list_files
from ...core.index.watch import IndexWatcher
from ...core.store.database import Database
from ...core.tokens import count_tokens


@dataclass(frozen=True)
class IndexBench:
    """Numbers printed by `cortex bench index`."""

    repo: str
    tokenizer_load_seconds: float
    files: int
    chunks: int
    skipped: int
    lexical_seconds: float
    files_per_s: float
    chunks_per_s: float
    first_search_seconds: float
    embedded: int
    embed_seconds: float
    embeddings_per_s: float
    lexical_only: int
    """Chunks the embedding rule keeps lexical only (`index.embed_scope`): never embedded."""
    fully_embedded_seconds: float | None
    """Measured when every chunk the rule embeds was embedded; otherwise estimated from the rate (see
    `embed_estimated`)."""
    embed_estimated: bool
    db_mb: float
    peak_rss_mb: float
    reindex_unchanged_seconds: float
    save_to_searchable_p50_ms: float
    save_to_searchable_p95_ms: float
    edits: int


def _fts_finds(index: CodeIndex, token: str) -> bool:
    rows = index.chunks.search(token, query_type="fts", fts_columns="text").select(["id", "_score"]).limit(1).to_list()
    return bool(rows)


def run(repo: Path, edits: int = 20, embed_limit: int | None = None, settings: Settings | None = None) -> IndexBench:
    settings = settings or Settings()
    repo = repo.resolve()
    root = repo_root(repo)
    is_repo = root is not None and root == repo
    embedder = Embedder(settings.embed_model, settings.embed_model_path, settings.embed_threads, settings.embed_batch)
    embedder.embed_uncached(["warm up"])
    t0 = time.perf_counter()
    count_tokens("warm up")
    tokenizer_load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        db = Database(str(Path(tmp) / "db"), create=True)
        index = CodeIndex(db, embedder, repo, is_repo)
        start = time.perf_counter()
        report = index.update(embed=False)
        lexical = time.perf_counter() - start
        probe = next(iter(index.chunks.search().select(["symbols"]).where("array_length(symbols) > 0").limit(1).to_list()), None)
        token = probe["symbols"][0].split(".")[-1] if probe else "def"
        _fts_finds(index, token)
        first_search = time.perf_counter() - start
        total_chunks = index.chunks.count_rows()
        lexical_only = index.chunks.count_rows(LEXICAL_ONLY_WHERE)
        wanted = total_chunks - lexical_only
        t0 = time.perf_counter()
        embedded = index.embed_pending(limit=embed_limit)
        embed_seconds = time.perf_counter() - t0
        rate = embedded / embed_seconds if embed_seconds > 0 else 0.0
        complete = embedded >= wanted
        fully = first_search + embed_seconds if complete else (first_search + wanted / rate if rate else None)
        t0 = time.perf_counter()
        index.update(embed=False)
        reindex = time.perf_counter() - t0
        size = db.disk_bytes()
        assert size is not None  # a local database, in a temporary directory
        db_mb = size / 1e6
        latencies = _save_to_searchable(repo, is_repo, embedder, Path(tmp), edits)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    latencies.sort()
    return IndexBench(
        repo=str(repo),
        tokenizer_load_seconds=tokenizer_load,
        files=report.changed,
        chunks=total_chunks,
        skipped=len(report.skipped),
        lexical_seconds=lexical,
        files_per_s=report.changed / lexical if lexical else 0.0,
        chunks_per_s=total_chunks / lexical if lexical else 0.0,
        first_search_seconds=first_search,
        embedded=embedded,
        embed_seconds=embed_seconds,
        embeddings_per_s=rate,
        lexical_only=lexical_only,
        fully_embedded_seconds=fully,
        embed_estimated=not complete,
        db_mb=db_mb,
        peak_rss_mb=peak,
        reindex_unchanged_seconds=reindex,
        save_to_searchable_p50_ms=statistics.median(latencies) if latencies else float("nan"),
        save_to_searchable_p95_ms=latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan"),
        edits=len(latencies),
    )


def _save_to_searchable(repo: Path, is_repo: bool, embedder: Embedder, tmp: Path, edits: int) -> list[float]:
    """Copy the indexable files, index the copy, then save one file N times and time until the edit is found."""
    copy = tmp / "copy"
    for listed in list_files(repo, is_repo).files:
        target = copy / listed.path
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(repo / listed.path, target)
        except OSError:
            continue
    db = Database(str(tmp / "watch-db"), create=True)
    index = CodeIndex(db, embedder, copy, is_repo=False)
    index.update(embed=False)
    victim = next((p for p in sorted(copy.rglob("*.py")) if p.stat().st_size < 20_000), None) or next(copy.rglob("*.*"))
    original = victim.read_text(encoding="utf-8", errors="replace")
    latencies: list[float] = []
    with IndexWatcher(index, debounce_ms=Settings().watch_debounce_ms, embed=False) as watcher:
        watcher.ready.wait(10)
        for i in range(edits):
            token = f"cortexprobe{i}zq"
            start = time.perf_counter()
            victim.write_text(original + f"\n# {token}\n", encoding="utf-8")
            while time.perf_counter() - start < 10:
                if _fts_finds(index, token):
                    latencies.append((time.perf_counter() - start) * 1000)
                    break
                time.sleep(0.02)
    return latencies


def rows(b: IndexBench) -> list[tuple[str, str]]:
    full = f"{b.fully_embedded_seconds:.0f} s" + (" (estimated from the rate)" if b.embed_estimated else "") if b.fully_embedded_seconds else "n/a"
    return [
        ("repository", b.repo),
        ("tokenizer load (once per process)", f"{b.tokenizer_load_seconds:.2f} s"),
        ("files indexed / skipped", f"{b.files} / {b.skipped}"),
        ("chunks / lexical only by design", f"{b.chunks} / {b.lexical_only}"),
        ("lexical index", f"{b.lexical_seconds:.2f} s ({b.files_per_s:.0f} files/s, {b.chunks_per_s:.0f} chunks/s)"),
        ("time until first searchable", f"{b.first_search_seconds:.2f} s"),
        ("embeddings", f"{b.embedded} in {b.embed_seconds:.1f} s ({b.embeddings_per_s:.1f}/s)"),
        ("time until fully embedded (every chunk to embed)", full),
        ("re-index, nothing changed", f"{b.reindex_unchanged_seconds:.2f} s"),
        ("database size", f"{b.db_mb:.1f} MB"),
        ("peak RSS", f"{b.peak_rss_mb:.0f} MB"),
        ("save-to-searchable", f"p50 {b.save_to_searchable_p50_ms:.0f} ms, p95 {b.save_to_searchable_p95_ms:.0f} ms ({b.edits} saves)"),
    ]
