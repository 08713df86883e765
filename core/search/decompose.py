"""Query decomposition for multi-hop questions, without a model: a question that joins several things ("What have
Caroline and Melanie both painted?", "When did Melanie hike after the roadtrip?") is split into its parts, each part
is searched on its own, and the lists (the whole question's first) are fused by reciprocal rank.

A part is what one clause or one of several joined names asks about: an evidence turn that answers one half of a
question rarely shares enough words with the whole of it to reach the top. Parts are built from the question's own
words only, so every part is a plain search and nothing is invented.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from ..answers import SearchHit, SearchResults
from .query import STOP_WORDS

RRF_K = 10
"""As in `rank.RRF_K`: a list's top ranks count for more than agreement far down several lists."""
WHOLE_WEIGHT = 2.0
"""The whole question's list counts this much against 1 for each part's: a part is a narrower question, and the
whole one still ranks best what answers all of it."""
MAX_PARTS = 4
_CLAUSE = re.compile(r",|;|\b(?:after|before|since|because|while|during|until|from|whereas|but)\b", re.IGNORECASE)
_JOINED = re.compile(r"\b([A-Z][\w'’-]*)\s+(?:and|&)\s+([A-Z][\w'’-]*)")
_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][a-zA-Z'’-]+)")
_WORD = re.compile(r"[\w'’-]+")
_OPENERS = frozenset("what when where who whom whose which why how did does do is are was were has have had can "
                     "could would should will".split())


def _content(text: str) -> list[str]:
    return [w for w in _WORD.findall(text) if w.lower() not in STOP_WORDS and w.lower() not in _OPENERS]


def _names(text: str) -> list[str]:
    """Capitalised words past the first: the people, places and things a question is about."""
    seen: list[str] = []
    for match in _NAME.finditer(text):
        name = re.sub(r"['’]s$", "", match.group(1))
        if name.lower() not in _OPENERS and name not in seen:
            seen.append(name)
    return seen


def parts(question: str) -> tuple[str, ...]:
    """The sub-questions of a question, or () when it does not split: each name of "A and B" in turn in place of
    the pair, then each clause (split at commas and words like after, before, because, from); a clause that names
    nobody is given the question's first name, so "after the roadtrip" is searched as "Melanie roadtrip"."""
    text = " ".join(question.split()).rstrip("?!. ")
    found: list[str] = []
    joined = _JOINED.search(text)
    if joined:
        found.extend(text[:joined.start()] + name + text[joined.end():] for name in joined.groups())
        text_for_clauses = text[:joined.start()] + joined.group(1) + text[joined.end():]
    else:
        text_for_clauses = text
    clauses = [c.strip() for c in _CLAUSE.split(text_for_clauses) if c and c.strip()]
    if len(clauses) > 1:
        names = _names(text)
        for clause in clauses:
            words = _content(clause)
            if names and not _names(clause) and not any(n in clause for n in names):
                words = [names[0], *words]
            found.append(" ".join(words))
    whole = " ".join(_content(text)).lower()
    unique: list[str] = []
    for part in found:
        key = " ".join(_content(part)).lower()
        if len(_content(part)) >= 2 and key != whole and key not in [" ".join(_content(u)).lower() for u in unique]:
            unique.append(part)
    return tuple(unique[:MAX_PARTS])


def fuse_lists(lists: list[list[SearchHit]], weights: list[float]) -> list[SearchHit]:
    """Reciprocal rank fusion of hit lists, each hit kept as the first list that found it had it (the whole
    question's, with its score breakdown, when it found it)."""
    score: dict[tuple[str, str], float] = {}
    first: dict[tuple[str, str], SearchHit] = {}
    for hits, weight in zip(lists, weights, strict=True):
        for rank, hit in enumerate(hits, 1):
            key = (hit.source, hit.id)
            first.setdefault(key, hit)
            score[key] = score.get(key, 0.0) + weight / (RRF_K + rank)
    return [first[key] for key in sorted(score, key=lambda k: -score[k])]


def decomposed(search: Callable[[str], SearchResults], question: str, limit: int) -> SearchResults:
    """`search(question)`, and when the question splits, its parts searched too and the lists fused; a note says
    into what it was split."""
    whole = search(question)
    split = parts(question)
    if not split or not whole.hits and whole.implicit:
        return whole
    answers = [search(part) for part in split]
    hits = fuse_lists([whole.hits] + [a.hits for a in answers], [WHOLE_WEIGHT] + [1.0] * len(answers))[:limit]
    said = "; ".join(repr(p) for p in split)
    return replace(whole, hits=hits, elapsed_ms=whole.elapsed_ms + sum(a.elapsed_ms for a in answers),
                   notes=whole.notes + (f"multi-part question: also searched {said}, results fused",))
