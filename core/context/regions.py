"""Which parts of a file a task is likely to change, and how a file reduced to those parts reads.

The parts are the index's chunks: spans of the parse tree (a definition, a method of a large class, the preamble),
so a region is always whole code, never a cut through a statement. A chunk's relevance combines what the task says
(its words by BM25 over the candidate chunks, the symbols it names), what search found (the chunk's fused score,
its embedding's cosine), and the reference edges the index stores (a chunk that calls a named symbol, or defines
one a named symbol's chunk uses).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..search.query import STOP_WORDS
from ..text import split_identifier
from .signatures import signature_lines

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Weights of a chunk's relevance signals (each in 0..1); set on the localisation dev set only.
W_WORDS = 1.0
W_SEARCH = 0.5
W_DEFINES = 1.0
W_CALLS = 0.35
W_CALLED = 0.2
W_SEMANTIC = 0.6
SIGNATURES_PER_GAP = 8
"""Signature lines a gap shows at most: the outline of what is left out, not a second copy of the file."""
SHARPNESS = 2.0
"""How strongly relevance concentrates a file's expected edit on its best chunks (0: in proportion to size)."""


@dataclass(frozen=True)
class Chunk:
    """One indexed chunk of a candidate file."""

    id: str
    path: str
    start_line: int
    end_line: int
    text: str
    symbols: tuple[str, ...]
    refs: tuple[str, ...]
    tokens: int
    vector: np.ndarray | None = None

    @property
    def short_symbols(self) -> set[str]:
        return {s.rsplit(".", 1)[-1].lower() for s in self.symbols}


@dataclass
class Relevance:
    """A chunk's relevance to the task (0..1 after weighting) and the signals behind it."""

    score: float = 0.0
    signals: dict[str, float] = field(default_factory=dict)


def words(text: str) -> list[str]:
    """Lower-case words and the parts of compound identifiers, stop words removed (what BM25 counts)."""
    return [term for word in _WORD.findall(text) for term in _word_terms(word)]


@lru_cache(maxsize=1 << 17)
def _word_terms(word: str) -> tuple[str, ...]:
    # Kept per word: a selection reads the words of every candidate file's text several times (5 selections at
    # 5,000 files: 1,331 texts, 294,000 words, half their CPU), and a code base says the same words over and over.
    lower = word.lower()
    out = [lower] if lower not in STOP_WORDS and len(lower) > 1 else []
    parts = split_identifier(word)
    if len(parts) > 1:
        out.extend(p for p in parts if p not in STOP_WORDS and len(p) > 1)
    return tuple(out)


def chunk_relevance(
    chunks: list[Chunk],
    task_terms: dict[str, float],
    named: set[str],
    hit_scores: dict[str, float],
    query_vector: np.ndarray | None,
) -> dict[str, Relevance]:
    """Relevance of every chunk of the candidate files. `task_terms` weighs the task's words, `named` holds the
    (lower-case, short) symbols the task names, `hit_scores` the search's fused score per chunk id."""
    bm25 = _bm25(chunks, task_terms)
    top_bm25 = max(bm25.values(), default=0.0) or 1.0
    top_hit = max(hit_scores.values(), default=0.0) or 1.0
    named_refs = {r.lower() for c in chunks if c.short_symbols & named for r in c.refs}
    cosines = _cosines(chunks, query_vector)
    out: dict[str, Relevance] = {}
    for c in chunks:
        refs = {r.lower() for r in c.refs}
        signals = {
            "words": bm25.get(c.id, 0.0) / top_bm25,
            "search": hit_scores.get(c.id, 0.0) / top_hit,
            "defines": 1.0 if c.short_symbols & named else 0.0,
            "calls": 1.0 if refs & named else 0.0,
            "called": 1.0 if c.short_symbols & named_refs and not c.short_symbols & named else 0.0,
            "semantic": cosines.get(c.id, 0.0),
        }
        score = (W_WORDS * signals["words"] + W_SEARCH * signals["search"] + W_DEFINES * signals["defines"]
                 + W_CALLS * signals["calls"] + W_CALLED * signals["called"] + W_SEMANTIC * signals["semantic"])
        out[c.id] = Relevance(score, signals)
    return out


def edit_shares(chunks: list[Chunk], relevance: dict[str, Relevance]) -> dict[str, float]:
    """How a file's chance of holding the edit splits over its chunks: in proportion to size (an edit is as likely
    on any line) times exp(sharpness x relevance). Shares of one file sum to 1."""
    weights = {c.id: max(c.tokens, 1) * math.exp(SHARPNESS * relevance[c.id].score) for c in chunks}
    total = sum(weights.values()) or 1.0
    return {cid: w / total for cid, w in weights.items()}


def _bm25(chunks: list[Chunk], task_terms: dict[str, float], k1: float = 1.2, b: float = 0.75) -> dict[str, float]:
    if not chunks or not task_terms:
        return {}
    counts = {c.id: Counter(words(c.text) + words(" ".join(c.symbols))) for c in chunks}
    lengths = {cid: sum(cnt.values()) for cid, cnt in counts.items()}
    avg = (sum(lengths.values()) / len(lengths)) or 1.0
    df: Counter = Counter()
    for cnt in counts.values():
        df.update(t for t in cnt if t in task_terms)
    n = len(chunks)
    out = {}
    for cid, cnt in counts.items():
        s = 0.0
        for term, weight in task_terms.items():
            tf = cnt.get(term, 0)
            if tf:
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                s += weight * idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[cid] / avg))
        out[cid] = s
    return out


def _cosines(chunks: list[Chunk], query: np.ndarray | None) -> dict[str, float]:
    """Cosine to the task, rescaled over the candidates to 0..1 (MiniLM cosines bunch up between 0.1 and 0.6)."""
    if query is None:
        return {}
    raw = {c.id: float(np.dot(c.vector, query)) for c in chunks if c.vector is not None}
    if not raw:
        return {}
    low, high = min(raw.values()), max(raw.values())
    span = (high - low) or 1.0
    return {cid: (v - low) / span for cid, v in raw.items()}


def reduced_text(chunks: list[Chunk], keep: set[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The kept chunks verbatim in line order; each gap becomes one line naming the lines and definitions left out."""
    ordered = sorted(chunks, key=lambda c: c.start_line)
    last_line = max((c.end_line for c in ordered), default=0)
    lines: dict[int, str] = {}
    for c in ordered:
        if c.id in keep:
            for offset, line in enumerate(c.text.splitlines(keepends=True)):
                lines.setdefault(c.start_line + offset, line if line.endswith("\n") else line + "\n")
    ranges = _ranges(sorted(lines))
    parts: list[str] = []
    cursor = 1
    for start, end in ranges:
        if start > cursor:
            parts.append(_gap(ordered, cursor, start - 1))
        parts.extend(lines[n] for n in range(start, end + 1))
        cursor = end + 1
    if cursor <= last_line:
        parts.append(_gap(ordered, cursor, last_line))
    return "".join(parts), tuple(ranges)


def whole_text(chunks: list[Chunk]) -> str:
    """Chunks overlap only for line windows; rebuild the file's lines once each."""
    lines: dict[int, str] = {}
    for c in sorted(chunks, key=lambda c: c.start_line):
        for offset, line in enumerate(c.text.splitlines(keepends=True)):
            lines.setdefault(c.start_line + offset, line)
    return "".join(lines[n] for n in sorted(lines))


def _ranges(numbers: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for n in numbers:
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def _gap(chunks: list[Chunk], start: int, end: int) -> str:
    """The lines left out, as the signatures of the definitions in them (`  line: signature`, as the repository
    map writes them), so the reader still sees what the rest of the file defines and where. Only the first few are
    read out of their chunks: a gap of a large file holds hundreds."""
    inside = [c for c in chunks if c.start_line >= start and c.end_line <= end and c.symbols]
    head = f"... (lines {start}-{end} omitted"
    if not inside:
        names = list(dict.fromkeys(s for c in chunks if c.start_line <= end and c.end_line >= start for s in c.symbols))
        shown = ", ".join(names[:6])
        more = f" and {len(names) - 6} more" if len(names) > 6 else ""
        return f"{head}{': ' + shown + more if shown else ''})\n"
    signatures: list[tuple[int, str]] = []
    read = 0
    for c in inside:
        if len(signatures) >= SIGNATURES_PER_GAP:
            break
        signatures += sorted(set(_signatures(c.text, c.start_line, c.symbols, c.path)))
        read += 1
    rest = len(signatures) - SIGNATURES_PER_GAP + sum(len(c.symbols) for c in inside[read:])
    lines = [f"{head}; the definitions there:)\n"]
    lines += [f"  {line}: {signature}\n" for line, signature in signatures[:SIGNATURES_PER_GAP]]
    if rest > 0:
        lines.append(f"  ... and {rest} more\n")
    return "".join(lines)


@lru_cache(maxsize=4096)
def _signatures(text: str, start_line: int, symbols: tuple[str, ...], path: str) -> tuple[tuple[int, str], ...]:
    """A chunk's signature lines; cached, since fitting a document renders the same gaps again and again."""
    return tuple(signature_lines(text, start_line, list(symbols), path).values())
