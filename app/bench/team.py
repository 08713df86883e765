"""`cortex bench team`: write and search latency of a team store (object storage) beside a local store, with the
same synthetic memories, so the cost of the network round trips shows on its own."""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ...core.config import load_settings
from ...core.embedding.embed import Embedder
from ...core.errors import CortexError
from ...core.records import MemoryDraft
from ...core.search.search import Searcher
from ...core.store.database import Database, RemoteOptions
from ...core.store.store import MemoryStore
from .store import synthetic_texts


@dataclass(frozen=True)
class TeamBench:
    """One store's numbers: `local` or `team`."""

    store: str
    uri: str
    writes: int
    write_p50_ms: float
    write_p95_ms: float
    searches: int
    search_p50_ms: float
    search_p95_ms: float


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _measure(name: str, store: MemoryStore, texts: list[str], searches: int) -> TeamBench:
    writes = []
    for text in texts:
        start = time.perf_counter()
        store.remember(MemoryDraft(text=text, scope="team" if name == "team" else "repo"))
        writes.append((time.perf_counter() - start) * 1000)
    searcher = Searcher([store], None, store.embedder, load_settings().search)
    reads = []
    for text in texts[:searches]:
        start = time.perf_counter()
        searcher.search(" ".join(text.split()[2:6]), limit=10)
        reads.append((time.perf_counter() - start) * 1000)
    return TeamBench(name, store.db.uri, len(writes), statistics.median(writes), _p95(writes), len(reads),
                     statistics.median(reads) if reads else 0.0, _p95(reads) if reads else 0.0)


def run(uri: str | None, writes: int = 30, searches: int = 30) -> list[TeamBench]:
    """Both stores get fresh databases: the team one under a new prefix of the given URI, removed from nothing
    (object stores keep it; the prefix is printed so it can be deleted)."""
    settings = load_settings()
    base = uri or settings.team_db
    if not base:
        raise CortexError("bench team needs --uri s3://bucket/prefix or the team_db setting")
    embedder = Embedder(settings.embed_model, settings.embed_model_path, settings.embed_threads, settings.embed_batch)
    texts = synthetic_texts(max(writes, 1))
    embedder.embed(texts)  # load the model and warm the runtime outside the timed writes
    remote = RemoteOptions(settings.team_endpoint, settings.remote_timeout_seconds, settings.remote_consistency_seconds,
                           settings.credentials)
    team_uri = f"{base.rstrip('/')}/bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory(prefix="cortex-bench-team-") as tmp:
        local = MemoryStore(Database(str(Path(tmp) / "db"), create=True), embedder)
        team = MemoryStore(Database(team_uri, create=True, remote=remote), embedder)
        return [_measure("local", local, texts, searches), _measure("team", team, texts, searches)]
