"""Smart search: one query over memories and code, vector + full-text candidates fused by RRF, re-ranked by git
context and time, each hit with its score breakdown. Stored text is returned verbatim.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from ..answers import ScoreBreakdown, SearchHit, SearchResults
from ..config import SearchWeights
from ..embedding.embed import Embedder
from ..errors import DamagedDatabase
from ..git.gitctx import MAIN_BRANCHES, GitContext, implicit_query
from ..index.index import CodeIndex
from ..pool import READS
from ..records import MEMORY_COLUMNS, Memory
from ..store.batch_reads import read_together
from ..store.database import Database
from ..store.memory_rows import row_to_memory, without_repeats
from ..store.sessions import visible_where
from ..store.sql import in_filter, quote, sql_list, timestamp
from ..store.store import MemoryStore
from ..text import query_stems
from .candidates import MATCH_SIMILARITY, Candidate, CandidateLists, Found, QueryTerms, Source, candidate_lists
from .definitions import DefinedNames, definers_query, definition_match, near_definers
from .query import Filters, code_names, file_naming_stems, parse_query, said_words
from .rank import GitSignals, best_possible, boosts_for, bounded, file_prior, fuse, similarity_credit, total_score
from .refine import depth, refine
from .roles import asked_topics, role_weight
from .snippet import best_window
from .synonyms import alternatives

CANDIDATES = 50
CHANGED_FILES = 10
"""Files of the working change a search with no query is about (untracked scratch files can be many)."""
STRONG_SIMILARITY = 0.6
"""From here a vector hit earns its rank's full weight (click's shell-completion docs score 0.58-0.68 for "shell
completion zsh"); between the floor and here, a share of it."""
_CHUNK_LIGHT = ["id", "path", "symbols", "start_line", "end_line", "is_test", "_rowid"]
"""What ranking reads of a code chunk, and its row id: the winners' text is taken by it (`_winner_rows`)."""
_CHUNK_SHOWN = ["id", "text", "tokens"]
"""What a code hit shows besides what ranking read."""
_CHUNK_WHOLE = [c for c in _CHUNK_LIGHT if c != "_rowid"] + _CHUNK_SHOWN[1:]
_MEMORY_COLUMNS = list(MEMORY_COLUMNS)
_MEMORY_LIGHT = ["id", "files", "branch", "updated_at", "accessed_at", "_rowid"]
"""What ranking reads of a memory, and its row id: the rest of the winners' rows is taken by it (`_winner_rows`)."""
_MEMORY_REST = ["id"] + [c for c in _MEMORY_COLUMNS if c not in _MEMORY_LIGHT]


@dataclass(frozen=True)
class GitInputs:
    """The git context a search ranks with, read when the search first needs it. The caller may still be reading it
    (`git status` over a large tree is the slowest part of a search), so each is a function that returns it when
    ready; the search asks for `history` (the branch and recent commits, all ranking needs) beside its reads, and
    for the whole `context` only for a search with no query or for the boosts."""

    context: Callable[[], GitContext | None] = lambda: None
    history: Callable[[], GitContext | None] | None = None
    """None: the history is the context's."""

    @classmethod
    def of(cls, git: GitContext | None) -> GitInputs:
        """A context already read."""
        return cls(lambda: git)


def _pending(counts: Future | None) -> int:
    return counts.result()[1] if counts is not None else 0


def context_terms(ctx: GitContext | None) -> tuple[str, ...]:
    """Words folded into every search at low weight: the branch name and recent commit subjects."""
    if ctx is None or not ctx.is_repo:
        return ()
    branch = "" if ctx.branch in MAIN_BRANCHES else ctx.branch
    text = " ".join([branch.replace("/", " ").replace("-", " ")] + [c.subject for c in ctx.commits[:3]])
    return parse_query(text).terms


class Searcher:
    """Runs searches over a repository's stores and code index."""

    def __init__(
        self,
        stores: list[MemoryStore],
        index: CodeIndex | None,
        embedder: Embedder,
        weights: SearchWeights | None = None,
        names: DefinedNames | None = None,
    ) -> None:
        self.stores = stores
        self.index = index
        self.embedder = embedder
        self.weights = weights or SearchWeights()
        self.names = names or DefinedNames()
        """The index's defined names, for a name typed with a slip (the engine's, kept across searches)."""

    def search(
        self,
        query: str = "",
        filters: Filters = Filters(),
        limit: int = 20,
        git: GitInputs = GitInputs(),
        index_fresh: bool | None = None,
        signals: tuple[str, ...] = ("vector", "text", "context"),
        boost: bool = True,
        now: datetime | None = None,
        unscored: bool = False,
    ) -> SearchResults:
        """`unscored`: keep hits whose penalties took their score to 0 (a selection weighs them as evidence; a list
        a person reads is better without them). `signals` and `boost` exist so benchmarks can run the single-signal
        baselines through the same code;
        `now` is the reference date of time words in the query (default: the current time). A query's candidates
        need no git context, and ranking them only the history, so they are read while the caller may still be
        reading the whole context (see GitInputs); only the boosts wait for it. (Longer than most on purpose: the
        query embedding, the git context and the reads run side by side, and the order of the waits here is what
        keeps them overlapped.)"""
        inputs = git
        start = time.perf_counter()
        notes: list[str] = []
        implicit = not query.strip()
        context = inputs.context() if implicit else None
        text = implicit_query(context) if implicit else query
        parsed = parse_query(text)
        # How many code chunks exist and wait for an embedding: looked up once, beside the query embedding.
        counts = READS.submit(self.index.chunk_counts) if self.index is not None else None
        if parsed.empty:
            reason = "no query given and no git context to build one from" if implicit else "the query has no searchable words"
            return SearchResults(query, implicit, (), [], index_fresh, _pending(counts), 0.0, (reason,))
        use_vector, use_text = "vector" in signals, "text" in signals
        # The query embedding, a git context still being read and the full-text reads overlap.
        embedding = READS.submit(self.embedder.embed_one, parsed.text) if use_vector else None
        # A search with no query is about the working change: its own chunks and memories are a list of their own.
        changed = list(context.changed_files[:CHANGED_FILES]) if implicit and context is not None else []
        # Names the query gives in code form are looked up among the chunks' defined symbols.
        names = _asked_names(text) if not implicit and use_text else frozenset()
        said = said_words(parsed.text) - {n.lower() for n in names} if not implicit else frozenset()
        # A question's everyday words are also looked for as the words code says for them (`synonyms`).
        alternates = alternatives(said)
        searched_terms = tuple(dict.fromkeys(parsed.terms + tuple(w for ws in alternates.values() for w in ws)))
        found = self._candidates(searched_terms, embedding, filters, changed, use_text, counts, names)
        found = self._near_names(found, text, names, filters)
        chunks, pending = counts.result() if counts is not None else (0, 0)
        # The git-context words weigh only in ranking the candidates, so the history is read beside the reads.
        history = inputs.history() if inputs.history is not None else None
        if not implicit:
            context = inputs.context()
        words_from = history if history is not None else context
        extra = tuple(t for t in context_terms(words_from) if t not in parsed.terms) if "context" in signals else ()
        stems = query_stems(parsed.terms)
        alternate_stems = {stem: query_stems(alternates[word]) for word in alternates for stem in query_stems((word,))}
        found_lists = candidate_lists(found, QueryTerms(stems, changed, query_stems(extra), names, text,
                                                        said.union(*alternates.values()),
                                                        file_naming_stems(parsed.text), alternate_stems))
        searched = [name for name, used in (("vector", use_vector), ("text", use_text), ("change", bool(changed)),
                                            ("symbol", "symbol" in found_lists.lists),
                                            ("named", "named" in found_lists.lists),
                                            ("word_name", "word_name" in found_lists.lists)) if used]
        git_signals = GitSignals.from_context(context) if boost else None
        # Tests, docs, changelogs and the like rank below source unless the query is about them (its words, a path
        # it names or a file filter under them): the roles selection ranks files by.
        topics = asked_topics(text, filters.files)
        scores = self._scores(found_lists, best_possible(searched) or 1.0, git_signals, topics, prior=not implicit)
        rows = found_lists.rows
        # The reranker reads how much of the query a hit covers: a no-query search has no query of the user's to
        # cover (its words come from the git context), so it keeps the working change's order.
        rerank = boost and not implicit
        ranked = sorted(scores, key=lambda k: scores[k].total, reverse=True)[:depth(self.weights, limit) if rerank else limit]
        hits = self._materialise(ranked, scores, rows)
        if rerank:
            refined = refine(hits, text, parsed.terms, self.weights, now, alternates)
            hits = refined.hits[:limit]
            notes.extend(refined.notes)
        # A hit whose penalties took its score to 0 (a test or an SVG that shares one word of two with the query)
        # says nothing a person reading the list needs: it does not fill it. A selection keeps them: cut there too,
        # they cost dev edit recall at 12,000 tokens 0.833 -> 0.788.
        if not unscored:
            hits = [hit for hit in hits if hit.score.total > 0]
        # Snippets for the hits returned only: the reranker reads whole texts, and a third of the candidates it
        # ranked are cut (a search stemmed every line of 30 texts to show 10).
        shown = stems.union(*alternate_stems.values())
        hits = [_with_snippet(hit, shown, names) for hit in hits]
        if not hits:
            subject = "what you are working on" if implicit else repr(query.strip())
            if filters.narrows():
                notes.append(f"no match for {subject} among what the filters keep")
            else:
                notes.append(f"no match for {subject}: no word of it is in the index and nothing is close in meaning")
        stale = self._embedding_notes(notes, chunks, pending)
        return SearchResults(
            query=query, implicit=implicit, terms=parsed.terms, hits=hits, index_fresh=index_fresh,
            embeddings_pending=pending + stale, elapsed_ms=(time.perf_counter() - start) * 1000, notes=tuple(notes),
        )

    def _scores(self, found: CandidateLists, best: float, git_signals: GitSignals | None, topics: dict[str, bool],
                prior: bool) -> dict[Candidate, ScoreBreakdown]:
        """Each candidate's score: its lists fused, its file's evidence as a prior (`prior`: a query of the user's),
        then relevance and the bounded boosts (`_score`)."""
        closeness = {key: similarity_credit(sim, MATCH_SIMILARITY, STRONG_SIMILARITY)
                     for key, sim in found.similarity.items()}
        fused = fuse(found.lists, {"text": found.coverage, "vector": closeness, "symbol": found.defines,
                                   "word_name": found.coverage})
        if prior:
            _apply_file_prior(fused, found.rows)
        top = max((f.score for f in fused.values()), default=0.0) / best
        return {key: self._score(key, found.rows[key], fused[key], best, found.similarity.get(key), git_signals,
                                 topics, top)
                for key in fused}

    def _embedding_notes(self, notes: list[str], chunks: int, pending: int) -> int:
        """Say when matches are lexical only for want of vectors; how many memories wait for the current model."""
        if pending and chunks == pending:
            notes.append("code embeddings are still being computed; code matches are lexical only")
        stale = sum(store.stale_vectors() for store in self.stores)
        if stale:
            notes.append(f"{stale} memories wait to be embedded by {self.embedder.model_id} (the model changed); "
                         "until then they are found by their words only")
        return stale

    def _candidates(
        self, terms: tuple[str, ...], embedding: Future | None, filters: Filters, changed: list[str], use_text: bool,
        counts: Future | None, names: frozenset[str] = frozenset(),
    ) -> Found:
        """Every candidate list, as (source, signal, rows), read from all tables at once (code rows whole, memory
        rows light: see `_materialise`). `embedding`: the query vector being computed (None: no vector reads);
        `counts`: the code chunks and those waiting for an embedding, being counted. The full-text and working-change
        reads need neither, so they start first and overlap both."""
        # (source, signal, the query's builder (None: a vector read, built once the vector is ready), its arguments)
        plan: list[tuple[Source, str, Callable[..., Any] | None, tuple]] = []  # in the order the lists are fused
        model = quote(self.embedder.model_id)
        if not filters.code_only:
            where = _memory_where(filters)
            for n, store in enumerate(self.stores):
                if embedding is not None:
                    # Only vectors of the query's own model are comparable with it.
                    mine = " AND ".join(filter(None, [where, f"vector_model = {model}"]))
                    plan.append((n, "vector", None, (store.table, mine, _MEMORY_LIGHT, store.db)))
                if use_text:
                    plan.append((n, "text", _fts_query, (store.table, terms, where, _MEMORY_LIGHT)))
                if changed:
                    tied = " AND ".join(filter(None, [where, f"array_has_any(files, {sql_list(changed)})"]))
                    plan.append((n, "change", _rows_query, (store.table, tied, _MEMORY_LIGHT)))
        code_ok = self.index is not None and not (filters.memories_only or filters.kinds or filters.tags or filters.branch
                                                  or filters.since or filters.keys)
        if code_ok:
            assert self.index is not None  # code_ok says so
            where = _code_where(filters)
            table = self.index.chunks
            vec_where = " AND ".join(filter(None, ["embedded = true", f"vector_model = {model}", f"({where})" if where else ""]))
            if embedding is not None:
                plan.append((None, "vector", None, (table, vec_where, _CHUNK_LIGHT, self.index.db)))
            if use_text:
                plan.append((None, "text", _fts_query, (table, terms, where, _CHUNK_LIGHT)))
            if names:
                plan.append((None, "symbol", definers_query, (table, names, where, _CHUNK_LIGHT)))
            if changed:
                mine = " AND ".join(filter(None, [f"({where})" if where else "", f"({in_filter('path', changed)})"]))
                plan.append((None, "change", _rows_query, (table, mine, _CHUNK_LIGHT)))
        # The reads that need no query vector go to LanceDB together (`read_together`: one hand-off for all), in
        # the pool, so they overlap the query embedding; the vector reads follow together once it is ready.
        later = [i for i, (_, signal, _, _) in enumerate(plan) if signal == "vector"]
        first = [i for i in range(len(plan)) if i not in later]
        text_rows = READS.submit(_read_all, [(plan[i][2], plan[i][3]) for i in first])
        rows: dict[int, list[dict]] = {}
        if embedding is not None:
            vector = embedding.result()
            chunks, pending = counts.result() if counts is not None else (0, 0)
            # Before the first code embedding lands there is nothing to compare with (and no index on `embedded`
            # yet, so the filter alone would scan every chunk).
            later = [i for i in later if plan[i][0] is not None or chunks > pending]
            rows.update(zip(later, _vector_reads([plan[i][3] for i in later], vector)))
        rows.update(zip(first, text_rows.result()))
        return [(plan[i][0], plan[i][1], rows[i]) for i in sorted(rows)]

    def _near_names(self, found: Found, text: str, names: frozenset[str], filters: Filters) -> Found:
        """A query that is one name nothing defines as typed (a slip, or the start of a name): the chunks defining
        a name close to it, from the symbols and the full-text candidates, stand in for the definers."""
        typed = text.strip()
        # Only where code was searched by name (no memory-only or narrowed search) and nothing defines the name.
        searched = any(source is None and signal == "symbol" for source, signal, _ in found)
        if not names or " " in typed or not searched or any(signal == "symbol" and rows for _, signal, rows in found):
            return found
        text_rows = [r for source, signal, rows in found if source is None and signal == "text" for r in rows]
        assert self.index is not None  # code was searched
        near = near_definers(self.index.chunks, typed, _code_where(filters), _CHUNK_LIGHT, text_rows, self.names)
        return [*found, (None, "symbol", near)] if near else found

    def _score(self, key: Candidate, row: dict, fused, best: float, sim: float | None, signals: GitSignals | None,
               topics: dict[str, bool], top: float) -> ScoreBreakdown:
        relevance = fused.score / best
        boosts: dict[str, float] = {}
        if signals is not None:
            if key.is_memory:
                touched = max(_utc(row["updated_at"]), _utc(row["accessed_at"]))
                boosts = boosts_for(row["files"] or [], row["branch"], touched, signals, self.weights)
            else:
                boosts = boosts_for([row["path"]], None, None, signals, self.weights)
            boosts = bounded(boosts, relevance, top)
        if not key.is_memory:
            weight = role_weight(row["path"], row["is_test"], topics)
            if weight < 1.0:
                boosts = {**boosts, "role": weight - 1.0}
        return ScoreBreakdown(dict(fused.ranks), relevance, sim, boosts, total_score(relevance, boosts), fused.coverage)

    def _materialise(self, keys: list[Candidate], scores: dict[Candidate, ScoreBreakdown],
                     read: dict[Candidate, dict]) -> list[SearchHit]:
        """The winners' hits. Candidates carry ids and the few fields ranking needs (`read`); the rest of the
        winners' rows is read here (`_winner_rows`). (Code candidates used to be read with their text: a code
        full-text read cost 21 ms of CPU at 50,000 files against 9 for ids alone. Wide memory reads cost more
        than they saved: their full-text read alone doubled, 8 -> 17 ms with 100,000 memories.)"""
        wanted: dict[Source, list[str]] = {}
        for key in keys:
            wanted.setdefault(key.store if key.is_memory else None, []).append(key.id)
        full = self._winner_rows(wanted, read)
        # Two machines writing one text or key of a shared store at once leave a repeat until one of them settles
        # it: each store's memories show only the row settling keeps.
        kept: dict[Candidate, Memory] = {}
        for store, ids in wanted.items():
            if store is None:
                continue
            memories = [row_to_memory(full[c]) for c in (Candidate.of(store, i) for i in ids) if c in full]
            kept.update((Candidate.of(store, m.id), m) for m in without_repeats(memories))
        hits = []
        for key in keys:
            row = full.get(key)
            if row is None or (key.is_memory and key not in kept):
                continue
            score = scores[key]
            if key.is_memory:
                memory = kept[key]
                hits.append(SearchHit("memory", memory.id, memory.kind, memory.title, memory.text, score,
                                      symbols=tuple(memory.symbols), memory=memory))
            else:
                hits.append(SearchHit(
                    "code", row["id"], "code", ", ".join(row["symbols"][:3]) or row["path"], row["text"], score,
                    path=row["path"], start_line=row["start_line"], end_line=row["end_line"], symbols=tuple(row["symbols"]),
                    tokens=row["tokens"], is_test=row["is_test"],
                ))
        return hits

    def _winner_rows(self, wanted: dict[Source, list[str]], read: dict[Candidate, dict]) -> dict[Candidate, dict]:
        """The winners' whole rows: what their reads left out (a memory's text and the rest of its row, a chunk's
        text) taken by the row ids those reads gave, every table's in one hand-off to LanceDB (`read_together`),
        and joined to what was read. A filter on `id` over 1,000,000 memories cost 92 ms of CPU against 20 for the
        take; and a take costs by the value, so what the reads gave is not taken again. A row updated, deleted or
        moved by a compaction since the search read it is not at its row id any more (the take leaves it out):
        those few are read whole by `id`, in a second hand-off (a chunk gone since is no hit)."""
        takes = read_together([self._table(source).take_row_ids([read[Candidate.of(source, i)]["_rowid"] for i in ids])
                               .select(_MEMORY_REST if source is not None else _CHUNK_SHOWN)
                               for source, ids in wanted.items()])
        full: dict[Candidate, dict] = {}
        for source, rows in zip(wanted, takes):
            asked = set(wanted[source])
            for row in rows:
                key = Candidate.of(source, row["id"])
                if row["id"] in asked:
                    full[key] = {**read[key], **row}
        missed = {source: [i for i in ids if Candidate.of(source, i) not in full] for source, ids in wanted.items()}
        missed = {source: ids for source, ids in missed.items() if ids}
        fetched = read_together([self._table(source).search().where(in_filter("id", ids))
                                 .select(_MEMORY_COLUMNS if source is not None else _CHUNK_WHOLE).limit(len(ids))
                                 for source, ids in missed.items()])
        for source, rows in zip(missed, fetched):
            full.update((Candidate.of(source, row["id"]), row) for row in rows)
        return full

    def _table(self, source: Source):
        if source is not None:
            return self.stores[source].table
        assert self.index is not None  # code was searched
        return self.index.chunks


def _with_snippet(hit: SearchHit, stems: frozenset[str], names: frozenset[str]) -> SearchHit:
    if hit.source == "memory":
        return replace(hit, snippet=best_window(hit.text, stems))
    return replace(hit, snippet=best_window(hit.text, stems, hit.start_line, focus=_defined_here(hit.symbols, names)))


def _apply_file_prior(fused: dict, rows: dict[Candidate, dict]) -> None:
    """Code candidates are reordered by their file's evidence (`rank.file_prior`), then scaled so the best code
    candidate keeps its relevance: memories and code stay on one scale."""
    paths = {key: rows[key]["path"] for key in fused if not key.is_memory}
    if not paths:
        return
    before = max(fused[key].score for key in paths)
    prior = file_prior(paths, {key: fused[key].score for key in paths})
    for key, gain in prior.items():
        fused[key].score *= 1.0 + gain
    after = max(fused[key].score for key in paths)
    for key in paths:
        fused[key].score *= before / after if after else 1.0


def _asked_names(text: str) -> frozenset[str]:
    """The names a query gives in code form, less the owner of a qualified one (`MapAdapter.match` asks for the
    method, not the class). A query that is one qualified name asks for that owner's method only, not for any
    `match` (which the qualified name credits at half, `definitions.definition_match`): fastify's
    `Schemas.getSchemas` was answered by `SchemaController.getSchemas`, whose file says the name more. In a longer
    text a dotted token is not always a name (a link's `#method.file_name`), so its last part stays asked too."""
    names = code_names(text)
    one = text.strip() if " " not in text.strip() else None
    return frozenset(n for n in names if not any(m.startswith(n + ".") or (m == one and m.endswith("." + n))
                                                 for m in names))


def _defined_here(symbols: Sequence[str], names: frozenset[str]) -> str | None:
    """The symbol (`Owner.name` when qualified) this chunk defines that answers the query's names best, where its
    snippet should open."""
    best = max(symbols or (), key=lambda symbol: definition_match((symbol,), names), default=None)
    return best if best is not None and definition_match((best,), names) > 0 else None


def _utc(stamp: datetime) -> datetime:

    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


# No row count or index listing before a query: LanceDB answers an empty table with no rows, and a table whose
# full-text index is not built yet (a first write still settling) by scanning `words` unindexed.


def _vector_query(table, vector, where: str | None, columns: list[str]):
    query = table.search(vector).select(columns + ["_distance"]).limit(CANDIDATES)
    return query.where(where, prefilter=True) if where else query


def _vector_reads(reads: list[tuple], vector) -> list[list[dict]]:
    """The vector reads `(table, where, columns, db)`, made together (`read_together`), each answer checked for
    damaged vectors (`_bad_vectors`); one that finds some is made again on its own (`_vector`, which says so if
    the damage stays)."""
    versions = [table.version for table, *_ in reads]
    answers = read_together([_vector_query(table, vector, where, columns) for table, where, columns, _ in reads])
    out = []
    for (table, where, columns, db), read, rows in zip(reads, versions, answers):
        if _bad_vectors(table, where, rows, db, read):
            rows = _vector(table, vector, where, columns, db)
        out.append(rows)
    return out


def _vector(table, vector, where: str | None, columns: list[str], db: Database) -> list[dict]:
    query = _vector_query(table, vector, where, columns)
    for _attempt in range(2):
        read = table.version
        rows = query.to_list()
        bad = _bad_vectors(table, where, rows, db, read)
        if not bad:
            return rows
    raise DamagedDatabase(f"the database is damaged ({bad} vector(s) of {table.name} are not numbers); run "
                          "`cortex doctor` to check and repair it")


def _bad_vectors(table, where: str | None, rows: list[dict], db: Database, read: int) -> int:
    """Vectors a damaged data file turned into NaN or huge numbers read without an error: a NaN row is left out of
    the answer, a huge one comes back infinitely far. Either is said, as other damage is, rather than searched
    around. Rows left out are seen only by an exhaustive search (no vector index), whose answer holds every row
    that matches the filter up to the limit; the extra count is made only when the answer is short, and like the
    index listing it asks for, once per table version (the database's counts), so repeated searches cost nothing.
    Only when the table is still at the version read before the query (`read`): a write another process committed
    meanwhile adds rows the answer could not hold, which are not damage; and a search that finds rows missing asks
    once more before it says so (a write between the two version reads is not seen by them)."""
    bad = sum(1 for row in rows if not math.isfinite(row["_distance"]))
    if not bad and len(rows) < CANDIDATES:
        version = table.version
        if version == read and not db.has_vector_index(table, version):
            bad = db.count(table, where, version) - len(rows)
    return max(bad, 0)


def _fts_query(table, terms: tuple[str, ...], where: str | None, columns: list[str]):
    """BM25 over the `words` column (None: no terms). Rows carry `words`, from which the query words and
    git-context words each hit contains are read. (The context words used to be an optional clause of the same
    query: on 200,000 memories that boolean query took 170-230 ms against 12-29 ms for the plain match.)"""
    if not terms:
        return None
    # Imported here: `import lancedb` costs seconds, and the dashboard paints git results before it finishes.
    from lancedb.query import MatchQuery

    # The ignore: lancedb gives MatchQuery's defaults positionally (`pydantic.Field(1.0, kw_only=True)`), which
    # type checkers do not read as defaults, so they take the keyword-only fields for required ones.
    query = table.search(MatchQuery(" ".join(terms), "words"), query_type="fts")  # type: ignore[call-arg]
    query = query.select(columns + ["words", "_score"]).limit(CANDIDATES)
    return query.where(where, prefilter=True) if where else query


def _rows_query(table, where: str, columns: list[str]):
    """Plain rows matching a filter (the working change's chunks and memories), at most a candidate list's worth."""
    return table.search().where(where).select(columns).limit(CANDIDATES)


def _read_all(reads: list[tuple[Callable[..., Any] | None, tuple]]) -> list[list[dict]]:
    """Each read's rows, its query built by `build(*args)` (None: nothing to look for, no rows), made together."""
    queries = [build(*args) if build is not None else None for build, args in reads]
    made = iter(read_together([q for q in queries if q is not None]))
    return [next(made) if q is not None else [] for q in queries]


def _memory_where(f: Filters) -> str:
    clauses = [] if f.history else ["status = 'active'"]
    if f.kinds:
        clauses.append(f"({in_filter('kind', list(f.kinds))})")
    if f.tags:
        clauses.append(f"array_has_any(tags, {sql_list(f.tags)})")
    if f.required_tags:
        clauses.append(f"array_has_all(tags, {sql_list(f.required_tags)})")
    if f.without_tags:
        clauses.append(f"NOT array_has_any(tags, {sql_list(f.without_tags)})")
    if f.keys:
        clauses.append(_key_clause(f.keys))
    if f.files:
        clauses.append(f"array_has_any(files, {sql_list(f.files)})")
    if f.branch:
        clauses.append(f"branch = {quote(f.branch)}")
    if f.since:
        clauses.append(f"updated_at >= {timestamp(f.since)}")
    visible = visible_where(f.session)
    if visible:
        clauses.append(visible)
    return " AND ".join(clauses)


def _key_clause(keys: tuple[str, ...]) -> str:
    """Exact keys, and `prefix*` for every key a prefix begins (LIKE's own wildcards in it are matched as text)."""
    exact = [k for k in keys if not k.endswith("*")]
    parts = [f"source_key IN ({', '.join(quote(k) for k in exact)})"] if exact else []
    for k in keys:
        if k.endswith("*"):
            prefix = k[:-1].replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            parts.append(f"source_key LIKE {quote(prefix + '%')} ESCAPE '\\'")
    return "(" + " OR ".join(parts) + ")"


def _code_where(f: Filters) -> str:
    if not f.files:
        return ""
    parts = [f"path = {quote(p)} OR path LIKE {quote(p.rstrip('/') + '/%')}" for p in f.files]
    return " OR ".join(f"({p})" for p in parts)

