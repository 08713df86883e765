"""Near-duplicates: a new memory that says what an active one says, caught before it is written.

Two texts say the same thing when their embeddings are close (cosine similarity of the stored document vectors),
most of the shorter one's content words are in the other, and they carry the same numbers and the same negations
("tokens expire after 3600 s" is not "after 7200 s"; "Revert X" is not "X"). Thresholds were measured with a
script over 916 distinct commit subjects of click, rich and cobra (nearest neighbour of each) and hand-written
paraphrase pairs: see docs/how-it-works.md.
"""

from __future__ import annotations

import re

SIMILARITY = 0.88
"""Cosine similarity of the two texts' embeddings at or above which they may say the same thing."""
WORD_OVERLAP = 0.5
"""Share of the shorter text's content words the other has."""
MIN_WORDS = 4
"""Texts with fewer content words say too little to be judged the same: "client a note 1" is not "client b note 1"."""
CONTEXT_OVERLAP = 0.8
"""Without vectors (a context's memories), the word overlap alone at which two memories say the same thing."""
_STOP = frozenset("a an the of to in on for and or is are be was were it this that with as by at from into now we our".split())
_NEGATIONS = frozenset({"not", "no", "never", "revert", "don't", "dont", "cannot", "can't", "without", "nor"})
_WORD = re.compile(r"[a-z0-9']+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """The share of the shorter text's content words the other has; 0 when either has fewer than MIN_WORDS."""
    wa, wb = content_words(a), content_words(b)
    if min(len(wa), len(wb)) < MIN_WORDS:
        return 0.0
    return len(wa & wb) / min(len(wa), len(wb))


def same_claims(a: str, b: str) -> bool:
    """The same numbers and the same negations: what a paraphrase keeps and a different statement changes."""
    la, lb = a.lower(), b.lower()
    return (set(_NUMBER.findall(la)) == set(_NUMBER.findall(lb))
            and bool(set(_WORD.findall(la)) & _NEGATIONS) == bool(set(_WORD.findall(lb)) & _NEGATIONS))


def says_the_same(a: str, b: str, similarity: float) -> bool:
    return similarity >= SIMILARITY and word_overlap(a, b) >= WORD_OVERLAP and same_claims(a, b)


def texts_say_the_same(a: str, b: str) -> bool:
    """For memories without their vectors at hand: nearly all words shared, the same numbers and negations."""
    return word_overlap(a, b) >= CONTEXT_OVERLAP and same_claims(a, b)
