"""Ranking: reciprocal rank fusion of the candidate lists, then explicit boosts from the git context and time.

Every number that moves a result is kept in its breakdown, so a person (or `--explain`) can see why it ranks there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from .config import SearchWeights
from .gitctx import GitContext

RRF_K = 10
"""Smaller than the customary 60 so a list's top ranks count for more than agreement far down two lists."""
LIST_WEIGHTS = {"vector": 0.5, "text": 1.0}
"""Full-text evidence (names, identifiers, rare words) outweighs the small embedding model's similarity. K and these
weights were chosen on LoCoMo dev (`cortex bench locomo`); there is no held-out split to confirm them."""


@dataclass
class Fused:
    """A candidate's fused relevance and its rank in each list it appeared in (1-based)."""

    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)


def fuse(lists: dict[str, list[str]]) -> dict[str, Fused]:
    """Lists are named `<source>.<kind>` (`memory.vector`, `code.text`); ranks are reported by kind."""
    fused: dict[str, Fused] = {}
    for full_name, ids in lists.items():
        name = full_name.rsplit(".", 1)[-1]
        weight = LIST_WEIGHTS.get(name, 1.0)
        for rank, key in enumerate(ids, 1):
            entry = fused.setdefault(key, Fused())
            if name not in entry.ranks:
                entry.ranks[name] = rank
                entry.score += weight / (RRF_K + rank)
    return fused


def best_possible(lists: Iterable[str]) -> float:
    """The fused score of a candidate ranked first in every list; relevance is reported as a share of it."""
    return sum(LIST_WEIGHTS.get(name.rsplit(".", 1)[-1], 1.0) / (RRF_K + 1) for name in lists)


@dataclass(frozen=True)
class GitSignals:
    """The parts of the git context that boost results, as sets for quick lookups."""

    changed: frozenset[str]
    recent: frozenset[str]
    branch: str
    now: datetime

    @classmethod
    def from_context(cls, ctx: GitContext | None) -> "GitSignals":
        now = datetime.now(timezone.utc)
        if ctx is None:
            return cls(frozenset(), frozenset(), "", now)
        return cls(frozenset(ctx.changed_files), frozenset(f.path for f in ctx.recent_files), ctx.branch, now)


def boosts_for(
    files: Iterable[str],
    branch: str | None,
    touched: datetime | None,
    signals: GitSignals,
    weights: SearchWeights,
) -> dict[str, float]:
    """The boosts a result earns: working-change files, current branch, recently committed files, recency."""
    files = set(files)
    out: dict[str, float] = {}
    if files & signals.changed:
        out["modified_file"] = weights.modified_file
    elif files & signals.recent:
        out["recent_commit_file"] = weights.recent_commit_file
    if branch and signals.branch and branch == signals.branch:
        out["branch"] = weights.branch
    if touched is not None:
        age = signals.now - touched
        if age <= timedelta(hours=1):
            out["recency"] = weights.recency_hour
        elif age <= timedelta(days=1):
            out["recency"] = weights.recency_day
        elif age <= timedelta(weeks=1):
            out["recency"] = weights.recency_week
    return out


def total_score(relevance: float, boosts: dict[str, float]) -> float:
    """Boosts multiply relevance, so context lifts relevant results but never floats an irrelevant one to the top."""
    return relevance * (1.0 + sum(boosts.values()))
