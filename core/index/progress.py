"""Index progress as people read it: the phase, how far it is, the rate and an estimate of what is left.

The index reports bare events (`IndexProgress`: a phase, done, total); a front end that shows them keeps one
`ProgressClock`, which times each phase from its first event. The dashboard's top bar shows its line, and `cortex
index` on a terminal can show the same figures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..answers import IndexProgress

UNITS = {"reading": "files", "writing": "files", "embedding": "chunks", "importing": "memories", "checking": "bytes"}
MIN_SECONDS = 2.0
"""No rate or estimate before a phase has run this long: the first batch (model loading) says little."""


@dataclass(frozen=True)
class ProgressEstimate:
    """One progress event with its rate (items per second) and estimated seconds left, when they can be told."""

    progress: IndexProgress
    rate: float | None = None
    remaining: float | None = None

    def line(self) -> str:
        """`embedding 640/2,048 chunks (31%) · 24/s · about 1 min left`."""
        p = self.progress
        if not p.total:
            return p.phase
        parts = [f"{p.phase} {p.done:,}/{p.total:,} {UNITS.get(p.phase, '')}".rstrip()
                 + f" ({100 * p.done // max(p.total, 1)}%)"]
        if self.rate is not None:
            parts.append(f"{self.rate:,.0f}/s" if self.rate >= 10 else f"{self.rate:.1f}/s")
        if self.remaining is not None:
            parts.append(f"about {duration(self.remaining)} left")
        return " · ".join(parts)


class ProgressClock:
    """Times each phase from its first event; a new phase (or a count going back) starts the clock again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.phase = ""
        self.started = 0.0
        self.first_done = 0

    def update(self, progress: IndexProgress) -> ProgressEstimate:
        now = self.clock()
        if progress.phase != self.phase or progress.done < self.first_done:
            self.phase, self.started, self.first_done = progress.phase, now, progress.done
        elapsed = now - self.started
        moved = progress.done - self.first_done
        if not progress.total or elapsed < MIN_SECONDS or moved <= 0:
            return ProgressEstimate(progress)
        rate = moved / elapsed
        if progress.done >= progress.total:
            return ProgressEstimate(progress, rate)  # done: nothing is left, not "about 1 s"
        return ProgressEstimate(progress, rate, (progress.total - progress.done) / rate)


def duration(seconds: float) -> str:
    """Words for a wait: `40 s`, `3 min`, `1 h 20 min`."""
    if seconds < 60:
        return f"{max(round(seconds), 1)} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"
