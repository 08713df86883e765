"""`cortex bench select --repo PATH`: latency of `select` on an indexed repository (p50/p95 over several tasks)."""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.engine import Engine
from .localize import mine_tasks


@dataclass(frozen=True)
class SelectBench:
    """Numbers printed by `cortex bench select`."""

    repo: str
    files: int
    tasks: int
    budget: int
    p50_s: float
    p95_s: float


def run(repo: Path, budget: int = 12000, tasks: int = 20) -> SelectBench:
    """Tasks are commit messages mined from the repository's history; the index is built once, lexically, in a
    temporary database, and every selection runs against that warm index as the dashboard or server would."""
    texts = [t.task for t in mine_tasks(repo, limit=tasks)] or ["fix the error handling of the main entry point"]
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(repo, db=str(Path(tmp) / "db"))
        report = engine.code_index(create=True).update(embed=False)
        engine.select(texts[0], budget)
        times = []
        for text in texts:
            t0 = time.perf_counter()
            engine.select(text, budget)
            times.append(time.perf_counter() - t0)
    times.sort()
    return SelectBench(str(repo), report.changed, len(times), budget, statistics.median(times), times[int(0.95 * (len(times) - 1))])
