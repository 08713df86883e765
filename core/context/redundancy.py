"""How much of one piece of context another already says: the redundancy term of selection's objective.

Two items are near-duplicates when most of the distinct words of the smaller one appear in the larger (a function
and the wrapper that calls it with the same arguments, two translations of a doc whose code and identifiers are the
same, a memory stored twice in other words). Containment over distinct words rather than Jaccard: a wrapper is
short, so a symmetric measure would call it different from the function it repeats. Pieces with few distinct words
(an import line, a one-line getter) are never called duplicates: their overlap is chance.
"""

from __future__ import annotations

from collections.abc import Iterable

from .regions import words

MIN_WORDS = 8
"""Pieces with fewer distinct words than this are never near-duplicates of anything."""
FLOOR = 0.6
"""Containment at or below this costs nothing: related code shares vocabulary without repeating itself."""
NEAR_DUPLICATE = 0.8
"""Containment from which two pieces count as near-duplicates (the benchmark's measure)."""


def vocabulary(text: str) -> frozenset[str]:
    return frozenset(words(text))


def containment(a: frozenset[str], b: frozenset[str]) -> float:
    """Share of the smaller vocabulary found in the larger; 0 when either is too small to judge."""
    if len(a) < MIN_WORDS or len(b) < MIN_WORDS:
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) / len(small)


def redundancy(candidate: frozenset[str], chosen: Iterable[frozenset[str]]) -> float:
    """The share (0..1) of a candidate's gain that what is already chosen says: 0 up to FLOOR containment with the
    closest chosen piece, rising to 1 for a piece wholly contained in it. Only grows as more is chosen, so gain
    times (1 - redundancy) has diminishing returns (the objective stays submodular)."""
    closest = max((containment(candidate, c) for c in chosen), default=0.0)
    return max(0.0, (closest - FLOOR) / (1.0 - FLOOR))


def near_duplicate_share(texts: list[str]) -> float:
    """Share of the pieces that are near-duplicates of another piece in the same list (0 for fewer than two)."""
    vocabs = [vocabulary(t) for t in texts]
    if len(vocabs) < 2:
        return 0.0
    dup = sum(any(containment(v, w) >= NEAR_DUPLICATE for j, w in enumerate(vocabs) if j != i) for i, v in enumerate(vocabs))
    return dup / len(vocabs)
