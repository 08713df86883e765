"""How much of one piece of context another already says: the redundancy term of selection's objective.

A piece is a near-duplicate of another when most of its distinct words appear in the other (a wrapper that calls
a function with the same arguments, a copy of a function, a translation of a doc whose code and identifiers are the
same, a memory stored twice in other words). The measure is directed, the share of the candidate's own words: a
wrapper is mostly said by the function it wraps, but a long function is not said by a short chunk it happens to
contain, so the function still goes in after the wrapper. Pieces with few distinct words (an import line, a one-line
getter) are never called duplicates: their overlap is chance.
"""

from __future__ import annotations

from collections.abc import Iterable

from .regions import words

MIN_WORDS = 8
"""Pieces with fewer distinct words than this are never near-duplicates of anything."""
FLOOR = 0.6
"""Coverage at or below this costs nothing: related code shares vocabulary without repeating itself."""
NEAR_DUPLICATE = 0.8
"""Coverage from which a piece counts as a near-duplicate of another (the benchmark's measure)."""
COPY = 0.95
"""Coverage, both ways, from which a piece is a copy of one already chosen (a copied file, a vendored module): it
stays out whatever its gain, since it would tell the reader nothing new. Both ways: a small wrapper whose every
word a large module holds is not a copy of it (its gain is only discounted)."""


def vocabulary(text: str) -> frozenset[str]:
    return frozenset(words(text))


def covered(piece: frozenset[str], by: frozenset[str]) -> float:
    """Share of a piece's distinct words that `by` holds; 0 for a piece too small to judge."""
    if len(piece) < MIN_WORDS:
        return 0.0
    return len(piece & by) / len(piece)


def is_copy(piece: frozenset[str], other: frozenset[str]) -> bool:
    return covered(piece, other) >= COPY and covered(other, piece) >= COPY


def redundancy(candidate: frozenset[str], chosen: Iterable[frozenset[str]]) -> float:
    """The share (0..1) of a candidate's gain that what is already chosen says: 0 while the chosen piece that covers
    most of it covers at most FLOOR of its words, rising to 1 for a candidate wholly covered. Only grows as more is
    chosen, so gain times (1 - redundancy) has diminishing returns (the objective stays submodular)."""
    closest = max((covered(candidate, c) for c in chosen), default=0.0)
    return max(0.0, (closest - FLOOR) / (1.0 - FLOOR))


def near_duplicate_share(texts: list[str]) -> float:
    """Share of the pieces that another piece of the same list covers for NEAR_DUPLICATE of their words or more."""
    vocabs = [vocabulary(t) for t in texts]
    if len(vocabs) < 2:
        return 0.0
    dup = sum(any(covered(v, w) >= NEAR_DUPLICATE for j, w in enumerate(vocabs) if j != i) for i, v in enumerate(vocabs))
    return dup / len(vocabs)
