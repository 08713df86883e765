"""Reranking the fused top-N by how much of the query each candidate says itself.

No cross-encoder ships inside an installable package (see the README), so the reranker is lexical and measured:
full-text search matched a candidate on its `words` column, which also holds its neighbours' words (a memory's
context, a chunk's path); this asks how much of the query the candidate's *own* text covers. Each query term is
weighted by how rare it is among the candidates (an IDF over the pool, not the whole table): a name every
candidate shares counts for little, the one word that tells them apart counts for a lot. The result is a share
in 0..1 that multiplies the fused relevance, so it reorders real matches and never lifts a non-match.

Cost: tokenising N texts once each; see the README for p50/p95 at N = 30.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from ..text import split_identifier
from .synonyms import covered

DEPTH = 30
"""How many fused candidates are reranked; chosen on LoCoMo dev, where 20 to 50 scored the same."""
MAX_CHARS = 20_000
"""Only the start of a candidate is read: enough for any chunk or note, and a megabyte memory costs no more."""
_WORD = re.compile(r"[A-Za-z0-9_]+")
_SUFFIXES = ("ing", "ed", "es", "s")


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A deliberately light stemmer (`painting`/`painted`/`paints` -> `paint`): query and text go through the
    same one, so it only has to be consistent, not linguistic. Kept per word: a search's candidates repeat their
    vocabulary, and stemming 500 words a search was two thirds of the reranker's time."""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> frozenset[str]:
    """Stemmed words of a text, with the parts of compound identifiers (`parseConfig` -> parse, config)."""
    return _words(text[:MAX_CHARS])


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    # Kept per text: a long-lived process (the resident server, the dashboard) meets the same chunks query after
    # query, and tokenising 30 of them is most of a warm search's own time.
    out: set[str] = set()
    # Each distinct token once: code repeats its names, and splitting identifiers is the costly part.
    for token in set(_WORD.findall(text)):
        out.add(stem(token.lower()))
        if "_" in token or not (token.islower() or token.isupper()):
            out.update(stem(p) for p in split_identifier(token))
    return frozenset(out)


def coverage(terms: Sequence[str], texts: Sequence[str],
             alternates: Mapping[str, Sequence[str]] | None = None) -> list[float]:
    """For each text, the share of the query's pool-IDF weight that its own words cover (0..1). `alternates`: a
    term -> words that cover it as it does (`synonyms`; a term is covered once however many of them a text holds)."""
    alternates = alternates or {}
    wanted = {stem(t.lower()): frozenset(stem(a) for a in alternates.get(t.lower(), ())) for t in terms if t}
    if not wanted or not texts:
        return [0.0] * len(texts)
    bags = [words(t) for t in texts]
    held = [{t: share for t, others in wanted.items() if (share := covered(t, others, bag))} for bag in bags]
    n = len(bags)
    idf = {t: math.log(1.0 + n / (1.0 + sum(t in here for here in held))) for t in wanted}
    total = sum(idf.values())
    return [sum(w * here[t] for t, w in idf.items() if t in here) / total for here in held]
