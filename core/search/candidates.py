"""A search's candidates as one list per signal, across memories and code, on scales that mean the same for both:
cosine similarity for vectors; for full text the hit's BM25 score as a share of its own table's best (raw BM25 is
not comparable across tables: a store of five memories gives every word a tiny IDF), the share of the query's words
it contains breaking ties and crediting its rank in `rank.fuse`; the working change by file; definers of the
query's names by how well they answer them. (Ordering full text by the share of words first cost 2 points of R@1
on LoCoMo dev: BM25 weighs rare words.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from ..index.chunk_rows import defined_names
from ..text import word_stems
from .definitions import definition_match, near_match
from .query import joined_name
from .synonyms import ALTERNATE_SHARE, covered

CONTEXT_BOOST = 0.3
"""How much a full-text candidate's BM25 score grows when it holds every branch-name and commit-subject word (in
proportion for some): a nudge among the items that match the query, never a match by itself."""
MATCH_SIMILARITY = 0.25
"""A hit no query word matched must be at least this similar in meaning. Measured on pallets/click: nonsense
queries ("xylophone quantum zeppelin", "purple elephant dancing") reach 0.19-0.23 against code chunks (short,
identifier-heavy texts sit closer to everything), unrelated memories 0.0-0.15, while a paraphrase with no shared
word ("which storage engine did we choose" / "LanceDB was picked as our embedded vector database") scores 0.30."""

Source = int | None
"""What a read searched: a memory store (its place among the stores searched), or None for the code index."""
Found = list[tuple[Source, str, list[dict]]]
"""(source, signal, rows) of each read: signal `vector`, `text`, `symbol` or `change`."""


class Candidate(NamedTuple):
    """A row a search found: a code chunk, or a memory of one of the stores searched (one id may be in two).
    Rows a list orders alike go code first, then by store and id. A tuple, not a `Key` and a store: a search hashes
    and compares its candidates thousands of times, and a tuple does both in C (`rank.fuse` over 750 list entries
    took about as long as with the `memory0:`/`code:` strings this replaced, and half as long as with a dataclass)."""

    kind: Literal["chunk", "memory"]
    store: int
    """The memory's store (its place among the stores searched); 0 for a code chunk."""
    id: str

    @classmethod
    def of(cls, source: Source, row_id: str) -> Candidate:
        return cls("chunk", 0, row_id) if source is None else cls("memory", source, row_id)

    @property
    def is_memory(self) -> bool:
        return self.kind == "memory"


@dataclass(frozen=True)
class QueryTerms:
    """What the candidates are ordered against."""

    stems: frozenset[str]
    """The query's word stems."""
    changed: list[str] = field(default_factory=list)
    """The working change's files, in order (a search with no query)."""
    context: frozenset[str] = frozenset()
    """The git context's word stems (branch name, commit subjects)."""
    names: frozenset[str] = frozenset()
    """Names the query gives in code form."""
    typed: str = ""
    """The query as typed, for names nothing defines as typed (`near_match`)."""
    said: frozenset[str] = frozenset()
    """The plain words a question says, lower-cased (`match` in "how does the router match a URL"), and the words
    code may say for them (`synonyms`: `stream` for "body")."""
    file_words: frozenset[str] = frozenset()
    """The stems of the query's words that may name a file (`query.file_naming_stems`)."""
    alternates: dict[str, frozenset[str]] = field(default_factory=dict)
    """A query word's stem -> the stems of the words code may say for it (`synonyms`): a hit holding one covers
    the word."""


@dataclass
class CandidateLists:
    lists: dict[str, list[Candidate]]
    """Candidates per signal, best first."""
    rows: dict[Candidate, dict]
    similarity: dict[Candidate, float] = field(default_factory=dict)
    coverage: dict[Candidate, float] = field(default_factory=dict)
    """The share of the query's words a full-text hit holds."""
    defines: dict[Candidate, float] = field(default_factory=dict)
    """How well a definer's symbols answer the query's names."""


def candidate_lists(found: Found, terms: QueryTerms) -> CandidateLists:
    """Every candidate in the list of each signal that found it. A full-text hit holding the git-context words has
    its BM25 score raised by up to CONTEXT_BOOST first."""
    row_stems = _text_stems(found, terms.context)
    top_bm25 = {source: max((float(r["_score"]) for r in rows), default=1.0)
                for source, signal, rows in found if signal == "text"}
    out = CandidateLists({}, {})
    entries: dict[str, list[tuple[tuple, Candidate]]] = {}
    # The working change and the definers are ordered by how much of the query they matched, so full-text lists
    # go first.
    for source, signal, rows in sorted(found, key=lambda job: {"symbol": 1, "change": 2}.get(job[1], 0)):
        for row in rows:
            key = Candidate.of(source, row["id"])
            order = _order(out, key, source, signal, row, terms, row_stems, top_bm25)
            if order is None:
                continue
            out.rows.setdefault(key, row)
            entries.setdefault(signal, []).append((order, key))
    out.lists = {signal: [key for _, key in sorted(found_here)] for signal, found_here in entries.items()}
    named = _named_files(out, terms.file_words)
    if named:
        out.lists["named"] = named
    said = _definers_of_said(out, terms.said)
    if said:
        out.lists["word_name"] = said
    if "change" in out.lists:
        out.lists["change"] = _round_robin(out.lists["change"], entries["change"])
    return out


def _text_stems(found: Found, context: frozenset[str]) -> dict[int, frozenset[str]]:
    """The word stems of each full-text row (read from its `words`, which leaves the row), with the git-context
    boost applied to its BM25 score."""
    row_stems: dict[int, frozenset[str]] = {}
    for _, signal, rows in found:
        for row in rows if signal == "text" else ():
            row_stems[id(row)] = word_stems(row.pop("words", ""))
            if context:
                share = len(context & row_stems[id(row)]) / len(context)
                row["_score"] = float(row["_score"]) * (1.0 + CONTEXT_BOOST * share)
    return row_stems


def _order(out: CandidateLists, key: Candidate, source: Source, signal: str, row: dict, terms: QueryTerms,
           row_stems: dict[int, frozenset[str]], top_bm25: dict[Source, float]) -> tuple | None:
    """The row's place in its signal's list (smaller first), recording its credit; None when it does not belong."""
    if signal == "vector":
        sim = max(-1.0, 1.0 - float(row["_distance"]) / 2.0)
        if sim < MATCH_SIMILARITY:
            return None
        out.similarity[key] = sim
        return (-sim,)
    if signal == "symbol":
        symbols = row["symbols"] or []
        match = definition_match(symbols, terms.names) or near_match(symbols, terms.typed)
        if match <= 0:
            return None
        out.defines[key] = match
        # Among equal definers the fuller one: an implementation before its typing overloads.
        return (-match, -out.coverage.get(key, 0.0), row["start_line"] - row["end_line"], row["path"])
    if signal == "text":
        held = row_stems[id(row)]
        matched = sum(covered(stem, terms.alternates.get(stem, frozenset()), held) for stem in terms.stems)
        # Full-text search matched a query word (or a word standing for one) even if it lies past the part read here.
        matched = matched or (ALTERNATE_SHARE if terms.alternates else 1.0)
        out.coverage[key] = matched / max(len(terms.stems), 1)
        return (-float(row["_score"]) / (top_bm25[source] or 1.0), -out.coverage[key])
    files = [row["path"]] if source is None else [f for f in row["files"] or [] if f in terms.changed]
    return (min(terms.changed.index(f) for f in files), -out.coverage.get(key, 0.0), row.get("start_line", 0))


def _named_files(found: CandidateLists, stems: frozenset[str]) -> list[Candidate]:
    """A file the query names by a word of its file name (`reloader` -> `_reloader.py`; not by a part of a
    camelCase or snake_case name, `query.file_naming_stems`: the misspelled `wrtieCommands` lost to `command.go`)
    is about what is asked: one
    chunk of it, in full-text order, the one defining a name the query gives if there is one
    (`View.dispatch_request` in `views.py`), else its best full-text chunk. (Every chunk of it, as before, let a
    word as common as `type` fill the top with `types.py`: on every 3rd dev task, lexical, file@3 0.606 -> 0.697.)"""
    text_order = {key: n for n, key in enumerate(found.lists.get("text", []))}
    chosen: dict[str, Candidate] = {}
    for key in sorted(text_order, key=lambda k: -found.defines.get(k, 0.0)):
        path = None if key.is_memory else found.rows[key]["path"]
        if path is not None and path not in chosen and _file_words(path) & stems:
            chosen[path] = key
    return sorted(chosen.values(), key=text_order.__getitem__)


def _definers_of_said(found: CandidateLists, words: frozenset[str]) -> list[Candidate]:
    """Full-text candidates that define a name a question says as a plain word ("how does the router *match* a
    URL" -> `MapAdapter.match`), in full-text order: the operation asked about, where a longer neighbour may
    repeat more of the question's words in passing."""
    if not words:
        return []
    return [key for key in found.lists.get("text", []) if not key.is_memory
            and not words.isdisjoint(defined_names(found.rows[key]["symbols"] or ()))]


def _file_words(path: str) -> frozenset[str]:
    """The stems of a file's own name, not its folders': its words and the whole name joined
    (`src/multipart_parser.py` -> multipart, parser, multipartparser)."""
    name = path.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0] if "." in name else name
    return word_stems(f"{stem.replace('_', ' ').replace('-', ' ')} {joined_name(stem)}")


def _round_robin(keys: list[Candidate], entries: list[tuple[tuple, Candidate]]) -> list[Candidate]:
    """The working change's items, one file at a time: each file's best-matching item, then each one's second...,
    so one long modified file cannot fill the list before the others appear."""
    file_of = {key: order[0] for order, key in entries}
    turn: dict[Candidate, int] = {}
    seen: dict[int, int] = {}
    for key in keys:  # already ordered by file, then query words matched, then line
        turn[key] = seen.get(file_of[key], 0)
        seen[file_of[key]] = turn[key] + 1
    return sorted(keys, key=lambda k: (turn[k], file_of[k]))
