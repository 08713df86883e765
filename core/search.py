"""Smart search: one query over memories and code, vector + full-text candidates fused by RRF, re-ranked by git
context and time, each hit with its score breakdown. Stored text is returned verbatim.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime


from .config import SearchWeights
from .database import quote, sql_list
from .embed import Embedder
from .gitctx import GitContext
from .index import CodeIndex
from .query import Filters, ParsedQuery, parse_query
from .rank import GitSignals, best_possible, boosts_for, fuse, total_score
from .records import Memory
from .store import MemoryStore, _row_to_memory
from .text import split_identifier

CANDIDATES = 50
SEARCH_THREADS = 4
CONTEXT_BOOST = 0.3
"""Weight of the branch-name and commit-subject words folded into every full-text query: a nudge, not the ask."""
MIN_SIMILARITY = 0.1
"""Vector candidates less similar than this are noise (unrelated MiniLM pairs score about 0 to 0.1), and rank
fusion would otherwise promote them whenever few candidates exist."""
_CHUNK_COLUMNS = ["id", "path", "language", "kind", "start_line", "end_line", "symbols", "text", "tokens", "is_test"]
_MEMORY_COLUMNS = [f for f in Memory.__dataclass_fields__ if f != "vector"]
_CHUNK_LIGHT = ["id", "path"]
_MEMORY_LIGHT = ["id", "files", "branch", "updated_at", "accessed_at"]


@dataclass(frozen=True)
class ScoreBreakdown:
    """Why a hit ranks where it does."""

    ranks: dict[str, int]
    """1-based rank in each candidate list it came from: `vector`, `text` (git-context words folded in at a low
    boost)."""
    relevance: float
    """Fused RRF score as a share of the best possible (1.0 = first in every list)."""
    similarity: float | None
    """Cosine similarity of the query and the hit's embedding, when it came from vector search."""
    boosts: dict[str, float]
    total: float

    def explain(self) -> str:
        ranks = " ".join(f"{k}#{v}" for k, v in sorted(self.ranks.items()))
        boosts = " ".join(f"+{k} {v:.2f}" for k, v in self.boosts.items())
        sim = f" cos {self.similarity:.2f}" if self.similarity is not None else ""
        return f"{self.total:.3f} = rel {self.relevance:.3f} ({ranks}{sim})" + (f" x (1 {boosts})" if boosts else "")


@dataclass(frozen=True)
class SearchHit:
    """A memory or a code chunk found by a search."""

    source: str
    """`memory` or `code`."""
    id: str
    kind: str
    title: str
    text: str
    score: ScoreBreakdown
    path: str = ""
    start_line: int = 0
    end_line: int = 0
    symbols: tuple[str, ...] = ()
    tokens: int = 0
    is_test: bool = False
    memory: Memory | None = None

    @property
    def location(self) -> str:
        return f"{self.path}:{self.start_line}-{self.end_line}" if self.source == "code" else self.id

    def to_json(self) -> dict:
        out = {
            "source": self.source, "id": self.id, "kind": self.kind, "title": self.title, "text": self.text,
            "score": self.score.total, "breakdown": {
                "ranks": self.score.ranks, "relevance": self.score.relevance, "similarity": self.score.similarity,
                "boosts": self.score.boosts,
            },
        }
        if self.source == "code":
            out.update(path=self.path, start_line=self.start_line, end_line=self.end_line, symbols=list(self.symbols))
        if self.memory is not None:
            out["memory"] = self.memory.to_json()
        return out


@dataclass(frozen=True)
class SearchResults:
    """Hits, best first, and what the caller should know about how they were found."""

    query: str
    implicit: bool
    """True when the query was built from the git context because none was given."""
    terms: tuple[str, ...]
    hits: list[SearchHit]
    index_fresh: bool | None
    """Whether the code index matched the work tree when the search ran (None: no code index)."""
    embeddings_pending: int
    elapsed_ms: float
    notes: tuple[str, ...] = field(default=())
    neighbours: tuple = ()
    """With `--expand`: graph neighbours (core.graph.Neighbour) of the top hits."""

    def to_json(self) -> dict:
        return {
            "query": self.query, "implicit": self.implicit, "terms": list(self.terms),
            "index_fresh": self.index_fresh, "embeddings_pending": self.embeddings_pending,
            "elapsed_ms": round(self.elapsed_ms, 1), "notes": list(self.notes),
            "hits": [h.to_json() for h in self.hits],
            "neighbours": [n.__dict__ for n in self.neighbours],
        }


def implicit_query(ctx: GitContext | None) -> str:
    """What you are working on, in words: branch name, recent commit subjects, changed file names."""
    if ctx is None or not ctx.is_repo:
        return ""
    words: list[str] = []
    if ctx.branch and ctx.branch not in {"main", "master", "trunk", "develop"}:
        words.extend(split_identifier(ctx.branch.replace("/", "_").replace("-", "_")))
    words.extend(c.subject for c in ctx.commits[:5])
    words.extend(ctx.changed_files[:10])
    return " ".join(words)


def context_terms(ctx: GitContext | None) -> tuple[str, ...]:
    """Words folded into every search at low weight: the branch name and recent commit subjects."""
    if ctx is None or not ctx.is_repo:
        return ()
    branch = "" if ctx.branch in {"main", "master", "trunk", "develop"} else ctx.branch
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
    ) -> None:
        self.stores = stores
        self.index = index
        self.embedder = embedder
        self.weights = weights or SearchWeights()

    def search(
        self,
        query: str = "",
        filters: Filters = Filters(),
        limit: int = 20,
        git: GitContext | Future | None = None,
        index_fresh: bool | None = None,
        signals: tuple[str, ...] = ("vector", "text", "context"),
        boost: bool = True,
    ) -> SearchResults:
        """`signals` and `boost` exist so benchmarks can run the single-signal baselines through the same code."""
        start = time.perf_counter()
        notes: list[str] = []
        implicit = not query.strip()
        if implicit and isinstance(git, Future):
            git = git.result()
        text = implicit_query(git) if implicit else query
        parsed = parse_query(text)
        if parsed.empty:
            reason = "no query given and no git context to build one from" if implicit else "the query has no searchable words"
            return SearchResults(query, implicit, (), [], index_fresh, self._pending(), 0.0, (reason,))
        use_vector, use_text = "vector" in signals, "text" in signals
        with ThreadPoolExecutor(max_workers=1) as early:
            # The query embedding and a git context still being read (a Future) overlap.
            embedding = early.submit(self.embedder.embed_one, parsed.text) if use_vector else None
            if isinstance(git, Future):
                git = git.result()
            vector = embedding.result() if embedding is not None else None
        extra = tuple(t for t in context_terms(git) if t not in parsed.terms) if "context" in signals else ()
        scored: dict[str, list[tuple[float, str]]] = {}
        light: dict[str, dict] = {}
        similarity: dict[str, float] = {}
        jobs = []
        with ThreadPoolExecutor(max_workers=SEARCH_THREADS) as pool:
            if not filters.code_only:
                where = _memory_where(filters)
                for n, store in enumerate(self.stores):
                    source = f"memory{n}"
                    if use_vector:
                        jobs.append((source, "vector", pool.submit(_vector, store.table, vector, where, _MEMORY_LIGHT)))
                    if use_text:
                        jobs.append((source, "text", pool.submit(_fts, store.table, parsed.terms, extra, where, _MEMORY_LIGHT)))
            code_ok = self.index is not None and not (filters.memories_only or filters.kinds or filters.tags or filters.branch or filters.since)
            if code_ok:
                where = _code_where(filters)
                table = self.index.chunks
                vec_where = f"embedded = true AND ({where})" if where else "embedded = true"
                if use_vector:
                    jobs.append(("code", "vector", pool.submit(_vector, table, vector, vec_where, _CHUNK_LIGHT)))
                if use_text:
                    jobs.append(("code", "text", pool.submit(_fts, table, parsed.terms, extra, where, _CHUNK_LIGHT)))
            for source, list_name, future in jobs:
                for row in future.result():
                    if "_distance" in row and 1.0 - float(row["_distance"]) / 2.0 < MIN_SIMILARITY:
                        continue
                    key = f"{source}:{row['id']}"
                    light.setdefault(key, row)
                    scored.setdefault(f"{source}.{list_name}", []).append((_list_order(list_name, row), key))
                    if "_distance" in row:
                        similarity[key] = max(-1.0, 1.0 - float(row["_distance"]) / 2.0)
        lists = {name: [key for _, key in sorted(entries)] for name, entries in scored.items()}
        fused = fuse(lists)
        sources = {key.split(":", 1)[0] for key in fused}
        best = {
            source: best_possible(n for n in lists if n.startswith(source + ".")) or 1.0
            for source in sources
        }
        git_signals = GitSignals.from_context(git) if boost else None
        scores = {key: self._score(key, light[key], fused[key], best[key.split(":", 1)[0]], similarity.get(key), git_signals)
                  for key in fused}
        top = sorted(scores, key=lambda k: scores[k].total, reverse=True)[:limit]
        hits = self._materialise(top, scores)
        if self.index is not None and self.index.chunks.count_rows() and not self._embedded_any():
            notes.append("code embeddings are still being computed; code matches are lexical only")
        return SearchResults(
            query=query, implicit=implicit, terms=parsed.terms, hits=hits, index_fresh=index_fresh,
            embeddings_pending=self._pending(), elapsed_ms=(time.perf_counter() - start) * 1000, notes=tuple(notes),
        )

    def _pending(self) -> int:
        return self.index.chunks.count_rows("embedded = false") if self.index is not None else 0

    def _embedded_any(self) -> bool:
        return self.index is not None and self.index.chunks.count_rows("embedded = true") > 0

    def _score(self, key: str, row: dict, fused, best: float, sim: float | None, signals: GitSignals | None) -> ScoreBreakdown:
        relevance = fused.score / best
        boosts: dict[str, float] = {}
        if signals is not None:
            if key.startswith("memory"):
                touched = max(_utc(row["updated_at"]), _utc(row["accessed_at"]))
                boosts = boosts_for(row["files"] or [], row["branch"], touched, signals, self.weights)
            else:
                boosts = boosts_for([row["path"]], None, None, signals, self.weights)
        return ScoreBreakdown(dict(fused.ranks), relevance, sim, boosts, total_score(relevance, boosts))

    def _materialise(self, keys: list[str], scores: dict[str, ScoreBreakdown]) -> list[SearchHit]:
        """Read the full rows of the winners only: candidate lists carry ids and the few fields ranking needs."""
        wanted: dict[str, list[str]] = {}
        for key in keys:
            source, ident = key.split(":", 1)
            wanted.setdefault(source, []).append(ident)
        def read(source: str, ids: list[str]) -> list[tuple[str, dict]]:
            where = f"id IN ({', '.join(quote(i) for i in ids)})"
            if source == "code":
                table, columns = self.index.chunks, _CHUNK_COLUMNS
            else:
                table, columns = self.stores[int(source[len("memory"):])].table, _MEMORY_COLUMNS
            return [(f"{source}:{row['id']}", row) for row in table.search().where(where).select(columns).limit(len(ids)).to_list()]

        full: dict[str, dict] = {}
        with ThreadPoolExecutor(max_workers=SEARCH_THREADS) as pool:
            for part in pool.map(lambda kv: read(*kv), wanted.items()):
                full.update(part)
        hits = []
        for key in keys:
            row = full.get(key)
            if row is None:
                continue
            score = scores[key]
            if key.startswith("memory"):
                memory = _row_to_memory(row)
                hits.append(SearchHit("memory", memory.id, memory.kind, memory.title, memory.text, score,
                                      symbols=tuple(memory.symbols), memory=memory))
            else:
                hits.append(SearchHit(
                    "code", row["id"], "code", ", ".join(row["symbols"][:3]) or row["path"], row["text"], score,
                    path=row["path"], start_line=row["start_line"], end_line=row["end_line"], symbols=tuple(row["symbols"]),
                    tokens=row["tokens"], is_test=row["is_test"],
                ))
        return hits


def _utc(stamp: datetime) -> datetime:
    from datetime import timezone

    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _list_order(name: str, row: dict) -> float:
    """Sort key within one candidate list: distance for vectors, negated BM25 score for full text."""
    if name == "vector":
        return float(row.get("_distance", 0.0))
    return -float(row.get("_score", 0.0))


def _vector(table, vector, where: str | None, columns: list[str]) -> list[dict]:
    if table.count_rows() == 0:
        return []
    query = table.search(vector).select(columns + ["_distance"]).limit(CANDIDATES)
    if where:
        query = query.where(where, prefilter=True)
    return query.to_list()


def _fts(table, terms: tuple[str, ...], context: tuple[str, ...], where: str | None, columns: list[str]) -> list[dict]:
    """BM25 over the `words` column; git-context words are folded into the same query at a low boost."""
    if not terms or table.count_rows() == 0 or not _has_fts(table):
        return []
    # Imported here: `import lancedb` costs seconds, and the dashboard paints git results before it finishes.
    from lancedb.query import BooleanQuery, MatchQuery, Occur

    match = MatchQuery(" ".join(terms), "words")
    if context:
        match = BooleanQuery([(Occur.SHOULD, match), (Occur.SHOULD, MatchQuery(" ".join(context), "words", boost=CONTEXT_BOOST))])
    query = table.search(match, query_type="fts")
    query = query.select(columns + ["_score"]).limit(CANDIDATES)
    if where:
        query = query.where(where, prefilter=True)
    return query.to_list()


def _has_fts(table) -> bool:
    names = {tuple(i.columns) for i in table.list_indices()}
    return ("words",) in names


def _memory_where(f: Filters) -> str:
    clauses = [] if f.history else ["status = 'active'"]
    if f.kinds:
        clauses.append(f"kind IN ({', '.join(quote(k) for k in f.kinds)})")
    if f.tags:
        clauses.append(f"array_has_any(tags, {sql_list(f.tags)})")
    if f.files:
        clauses.append(f"array_has_any(files, {sql_list(f.files)})")
    if f.branch:
        clauses.append(f"branch = {quote(f.branch)}")
    if f.since:
        clauses.append(f"updated_at >= TIMESTAMP '{_sql_time(f.since)}'")
    return " AND ".join(clauses)


def _code_where(f: Filters) -> str:
    if not f.files:
        return ""
    parts = [f"path = {quote(p)} OR path LIKE {quote(p.rstrip('/') + '/%')}" for p in f.files]
    return " OR ".join(f"({p})" for p in parts)


def _sql_time(stamp: datetime) -> str:
    from datetime import timezone

    return stamp.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
