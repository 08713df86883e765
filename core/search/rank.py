"""Ranking: reciprocal rank fusion of the candidate lists, then explicit boosts from the git context and time.

Every number that moves a result is kept in its breakdown, so a person (or `--explain`) can see why it ranks there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from ..config import SearchWeights
from ..git.gitctx import GitContext

K = TypeVar("K")
"""What a list ranks: a search's candidates (`candidates.Candidate`), or anything hashable."""

RRF_K = 10
"""Smaller than the customary 60 so a list's top ranks count for more than agreement far down two lists."""
LIST_WEIGHTS = {"vector": 0.5, "text": 1.0, "change": 2.0, "symbol": 2.0, "named": 1.0, "word_name": 0.5}
"""Full-text evidence (names, identifiers, rare words) outweighs the small embedding model's similarity. K and these
weights were chosen on LoCoMo dev (`cortex bench locomo`); there is no held-out split to confirm them. `change`
(the working change's own chunks and memories) exists only for searches with no query, which are about it: it
outweighs a first place in both other lists, so the working change leads. `symbol` (the chunks defining a name
the query gives, credited by how exactly they define it) outweighs the first full-text hit likewise, so a
definition leads its uses. `named` (chunks of a file whose name is a query word, in full-text order) counts as
much as full text. The weights of `symbol` and `named` were chosen on the search dev tasks (`cortex bench
search`). `word_name` (chunks defining a name a question says as a plain word) counts half as much: it supports
full text, it does not lead it. The dev tasks hold no questions, so its weight was chosen on the case list (at
1.0 two of its questions lost first place, at 0.5 none), the list its gain is reported on."""
BOOST_BAND = (0.5, 0.8)
"""Git and time boosts are bounded to the candidates that match the query about as well as the best does: in full
from 0.8 of the best relevance, fading to nothing at 0.5 (chosen on the search dev tasks). A modified file's or a
recent memory's weak match is not lifted over a strong match elsewhere."""


@dataclass
class Fused:
    """A candidate's fused relevance, its rank in each list it appeared in (1-based), and the share of the query's
    words it contains when full-text search found it."""

    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    coverage: float | None = None


def fuse(lists: dict[str, list[K]], credit: dict[str, dict[K, float]] | None = None) -> dict[K, Fused]:
    """One list per signal (`vector`, `text`, `change`), each holding memories and code alike so both compete on
    one scale. A rank counts in proportion to the strength of its evidence (`credit`, 0..1 per list and key): a
    full-text hit by the share of the query's words it contains, a vector hit by how clearly it is similar."""
    credit = credit or {}
    fused: dict[K, Fused] = {}
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
    def from_context(cls, ctx: GitContext | None) -> GitSignals:
        now = datetime.now(UTC)
        if ctx is None:
            return cls(frozenset(), frozenset(), "", now)
        return cls(frozenset(ctx.changed_files), _recent_paths(ctx.recent_files), ctx.branch, now)


_RECENT_KEPT = 4
_recent: tuple[tuple[tuple, frozenset[str]], ...] = ()
"""The last recent-files tuples seen (search and selection read histories of different lengths) and their paths
as sets. A context is read again only when the tree changes, so searches in between get the same tuple: a
commit of 5,000 files made this set 12 ms of every search (the scale benchmark's tree, in one commit)."""


def _recent_paths(touches: tuple) -> frozenset[str]:
    global _recent
    kept = _recent
    for seen, paths in kept:
        if seen is touches:
            return paths
    paths = frozenset(f.path for f in touches)
    _recent = ((touches, paths), *kept[:_RECENT_KEPT - 1])  # one assignment: readers see the old or the new
    return paths


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


def bounded(boosts: dict[str, float], relevance: float, top: float) -> dict[str, float]:
    """The boosts a candidate of this relevance keeps, when the best candidate's relevance is `top`: lifts only
    for the candidates near the top (`BOOST_BAND`), so context reorders real matches and lifts no weak one."""
    low, high = BOOST_BAND
    share = relevance / top if top > 0 else 0.0
    keep = min(1.0, max(0.0, (share - low) / (high - low)))
    if keep >= 1.0:
        return boosts
    return {name: round(value * keep, 4) for name, value in boosts.items() if value * keep != 0}


FILE_SHARE = 0.5
"""How much a chunk gains from its file's share of all the matching evidence: a file whose several chunks match
is about the question, a lone chunk matching in passing is not."""
FILE_CHUNKS = 3
"""A file's evidence is its best few chunks' fused scores, so a long file does not win by length."""


def file_prior(paths: dict[K, str], scores: dict[K, float]) -> dict[K, float]:
    """The file-level prior each code candidate gets (key -> added share of relevance): its file's share of the
    fused evidence (best `FILE_CHUNKS` chunks each) relative to the best file's."""
    by_file: dict[str, list[float]] = {}
    for key, path in paths.items():
        by_file.setdefault(path, []).append(scores[key])
    evidence = {path: sum(sorted(values, reverse=True)[:FILE_CHUNKS]) for path, values in by_file.items()}
    best = max(evidence.values(), default=0.0) or 1.0
    return {key: round(FILE_SHARE * evidence[path] / best, 4) for key, path in paths.items()}


def total_score(relevance: float, boosts: dict[str, float]) -> float:
    """Boosts multiply relevance, so context lifts relevant results but never floats an irrelevant one to the top,
    and creates nothing: a candidate is one only when a query word or the query's meaning matched it. Penalties
    together take a score to 0 at most (a changelog's `role -1.00` beside a reranker's penalty showed -0.005)."""
    return relevance * max(0.0, 1.0 + sum(boosts.values()))
