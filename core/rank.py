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
LIST_WEIGHTS = {"vector": 0.5, "text": 1.0, "change": 2.0}
"""Full-text evidence (names, identifiers, rare words) outweighs the small embedding model's similarity. K and these
weights were chosen on LoCoMo dev (`cortex bench locomo`); there is no held-out split to confirm them. `change`
(the working change's own chunks and memories) exists only for searches with no query, which are about it: it
outweighs a first place in both other lists, so the working change leads."""


@dataclass
class Fused:
    """A candidate's fused relevance, its rank in each list it appeared in (1-based), and the share of the query's
    words it contains when full-text search found it."""

    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    coverage: float | None = None


def fuse(lists: dict[str, list[str]], credit: dict[str, dict[str, float]] | None = None) -> dict[str, Fused]:
    """One list per signal (`vector`, `text`, `change`), each holding memories and code alike so both compete on
    one scale. A rank counts in proportion to the strength of its evidence (`credit`, 0..1 per list and key): a
    full-text hit by the share of the query's words it contains, a vector hit by how clearly it is similar."""
    credit = credit or {}
    fused: dict[str, Fused] = {}
    for name, keys in lists.items():
        weight = LIST_WEIGHTS.get(name, 1.0)
        strength = credit.get(name, {})
        for rank, key in enumerate(keys, 1):
            entry = fused.setdefault(key, Fused())
            if name in entry.ranks:
                continue
            entry.ranks[name] = rank
            share = strength.get(key, 1.0)
            if name == "text":
                entry.coverage = share
            entry.score += share * weight / (RRF_K + rank)
    return fused


def similarity_credit(similarity: float, floor: float, strong: float) -> float:
    """0 at the floor of a match, 1 from `strong` up: rank alone would make the best of poor candidates look sure."""
    return min(1.0, max(0.0, (similarity - floor) / (strong - floor)))


def best_possible(signals: Iterable[str]) -> float:
    """The fused score of a candidate ranked first in every signal searched, with every query word matched;
    relevance is reported as a share of it, so a hit found by one signal alone never looks like a perfect match."""
    return sum(LIST_WEIGHTS.get(name, 1.0) / (RRF_K + 1) for name in signals)


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
    """Boosts multiply relevance, so context lifts relevant results but never floats an irrelevant one to the top,
    and creates nothing: a candidate is one only when a query word or the query's meaning matched it."""
    return relevance * (1.0 + sum(boosts.values()))
