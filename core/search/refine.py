"""The step between fusion and the answer: time words and the reranker adjust the fused top-N.

It runs on hits that are already read (text, dates), adds its reasons to each hit's boosts so `--explain` shows
them, and re-sorts. The reranker's entry is a penalty, `rerank` = -w * (1 - coverage) / (1 + w): a candidate
whose own text covers the whole query loses nothing, one that covers none loses w / (1 + w) of its score, and the
git boosts keep their full weight beside it (w is `code_rerank` for code chunks, `rerank` for memories). A time
window is a boost (`date`). Both multiply relevance, so neither can make a non-match appear. Last, a file's further
code hits yield a share of their score (`repeat`), so the top shows the other files that match too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from ..config import SearchWeights
from .dates import TimeWindow, anchored_window, parse_dates
from .query import parse_query
from .rank import total_score
from .rerank import coverage

if TYPE_CHECKING:
    from ..answers import SearchHit

ANCHOR_MIN_COVERAGE = 0.6
"""`before the trip` is dated by the candidate that covers most of `the trip`, and only if it covers this much."""


@dataclass(frozen=True)
class Refined:
    """Hits in their final order and what the step noticed (a time window, an event it dated)."""

    hits: list
    notes: tuple[str, ...]


def depth(weights: SearchWeights, limit: int) -> int:
    """How many fused candidates the step needs to see."""
    return max(limit, weights.rerank_depth) if weights.rerank or weights.code_rerank else limit


def refine(hits: list[SearchHit], query: str, terms: tuple[str, ...], weights: SearchWeights,
           reference: datetime | None = None, alternates: dict[str, tuple[str, ...]] | None = None) -> Refined:
    """`alternates`: words code may say for a query word (`synonyms`), which cover it as it does."""
    if not hits:
        return Refined(hits, ())
    extra: list[dict[str, float]] = [{} for _ in hits]
    notes: list[str] = []
    window = _window(hits, query, reference or datetime.now(UTC))
    if window is not None and weights.date_window:
        notes.append(f"time window {window.describe()}")
        for boost, hit in zip(extra, hits):
            if hit.memory is not None and window.contains(hit.memory.created_at):
                boost["date"] = weights.date_window
    if weights.rerank or weights.code_rerank:
        # Every read hit is reranked (at least `rerank_depth`): a hit left out would escape the penalty.
        shares = coverage(terms, [_own_text(h) for h in hits], alternates)
        for boost, share, hit in zip(extra, shares, hits):
            w = weights.code_rerank if hit.source == "code" and weights.code_rerank else weights.rerank
            if share < 1.0 and w:
                boost["rerank"] = round(-w * (1.0 - share) / (1.0 + w), 4)
    if weights.neighbour:
        _lift_neighbours(hits, extra, weights.neighbour)
    out = [_boosted(hit, boost) for hit, boost in zip(hits, extra)]
    out.sort(key=lambda h: h.score.total, reverse=True)
    if weights.file_repeat < 1.0:
        out = _spread_files(out, weights.file_repeat)
    return Refined(out, tuple(notes))


def _boosted(hit: SearchHit, boost: dict[str, float]) -> SearchHit:
    if not boost:
        return hit
    boosts = {**hit.score.boosts, **boost}
    return replace(hit, score=replace(hit.score, boosts=boosts, total=total_score(hit.score.relevance, boosts)))


def _spread_files(hits: list[SearchHit], keep: float) -> list[SearchHit]:
    """The n-th code hit of a file (in the order given, from the second on) keeps `keep` ** (n - 1) of its score,
    as a `repeat` entry, so a file's weaker chunks yield to another file's close match: a top three of one file
    shows one place where a top three of three files shows three (on the search dev tasks, every 7th embedded:
    file@3 0.786 -> 0.857, chunk@3 0.571 -> 0.643; every 3rd lexical: file@3 0.758 -> 0.818, chunk@3 0.576 ->
    0.545). A file's own chunks keep their order."""
    seen: dict[str, int] = {}
    out = []
    for hit in hits:
        if hit.source != "code":
            out.append(hit)
            continue
        earlier = seen.get(hit.path, 0)
        seen[hit.path] = earlier + 1
        factor = max(0.0, 1.0 + sum(hit.score.boosts.values()))
        out.append(_boosted(hit, {"repeat": round(factor * (keep ** earlier - 1.0), 4)}) if earlier else hit)
    out.sort(key=lambda h: h.score.total, reverse=True)
    return out


def _lift_neighbours(hits: list[SearchHit], extra: list[dict[str, float]], weight: float) -> None:
    """A memory whose context quotes another candidate (the turn it answers, the step before it) gains `weight`
    times that candidate's score: a reply ("Salads and homemade desserts") rarely repeats the question's words."""
    scores = [total_score(h.score.relevance, {**h.score.boosts, **b}) for h, b in zip(hits, extra)]
    for i, hit in enumerate(hits):
        context = hit.memory.context if hit.memory is not None else ""
        if not context or not hit.score.relevance:
            continue
        quoted = [scores[j] for j, other in enumerate(hits)
                  if j != i and other.memory is not None and other.text and len(other.text) <= len(context)
                  and other.text in context]
        if quoted:
            extra[i]["neighbour"] = round(weight * max(quoted) / hit.score.relevance, 4)


def _own_text(hit: SearchHit) -> str:
    """What a hit says itself: a memory's title and text, a chunk's symbols and code (not neighbours or paths)."""
    if hit.memory is not None:
        return f"{hit.title}\n{hit.text}"
    return f"{' '.join(hit.symbols)}\n{hit.text}"


def _window(hits: list[SearchHit], query: str, reference: datetime) -> TimeWindow | None:
    asked = parse_dates(query, reference)
    if asked.window is not None or asked.anchor is None:
        return asked.window
    # `after the accident`: date the event by the memory among the candidates that best says it.
    memories = [h for h in hits if h.memory is not None]
    event_terms = parse_query(asked.anchor.event).terms
    if not memories or not event_terms:
        return None
    shares = coverage(event_terms, [_own_text(h) for h in memories])
    best = max(range(len(memories)), key=lambda i: (shares[i], -i))
    if shares[best] < ANCHOR_MIN_COVERAGE:
        return None
    memory = memories[best].memory
    assert memory is not None  # memories holds only hits with one
    return anchored_window(asked.anchor, memory.created_at)
