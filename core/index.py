"""The code index: files, symbol chunks and import/definition edges in LanceDB, updated incrementally.

Lexical first, semantic later: `update()` stores text and structure so full-text search works at once and marks
every new chunk as waiting for an embedding; `embed_pending()` fills vectors in batches, most relevant files first
(the working change, then recently committed files). Unchanged content is never re-chunked (stat, then git blob
id) nor re-embedded (vectors are cached by content hash).
"""

from __future__ import annotations

import hashlib
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from .chunker import chunk_file
from .database import Database, quote, scan
from .embed import Embedder, text_hash
from .imports import RepoFacts, resolve_imports
from .languages import is_test_path, language_of
from .schema import EDGES_SCHEMA, SKIPPED_SCHEMA, chunks_schema, files_schema
from .store import LanceVectorCache
from .text import WORDS_FORMAT, chunk_words
from .walk import DEFAULT_MAX_BYTES, SourceFile, list_files, read_source

EMBED_BATCH = 64


@dataclass(frozen=True)
class IndexProgress:
    """One progress event: a phase (`listing`, `reading`, `writing`, `embedding`, `done`) and how far it is."""

    phase: str
    done: int
    total: int


@dataclass
class IndexReport:
    """What one update did."""

    listed: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    embeddings_pending: int = 0
    embedded: int = 0
    lexical_seconds: float = 0.0
    embed_seconds: float = 0.0

    @property
    def skip_counts(self) -> dict[str, int]:
        return count_reasons(self.skipped)


def count_reasons(skipped: list[tuple[str, str]]) -> dict[str, int]:
    """How many paths were skipped for each reason (details in parentheses folded together)."""
    out: dict[str, int] = {}
    for _, reason in skipped:
        key = reason.split(" (")[0]
        out[key] = out.get(key, 0) + 1
    return out


@dataclass(frozen=True)
class IndexStatus:
    """Whether the index matches the work tree, without reading file contents."""

    indexed_files: int
    chunks: int
    stale: int
    new: int
    removed: int
    embeddings_pending: int

    @property
    def fresh(self) -> bool:
        return self.stale == 0 and self.new == 0 and self.removed == 0


@dataclass(frozen=True)
class _Prepared:
    file_row: dict
    chunk_rows: list[dict]
    edge_rows: list[dict]


class CodeIndex:
    """The repository's code in three tables: `files`, `chunks` and `edges`."""

    def __init__(self, db: Database, embedder: Embedder, root: Path, is_repo: bool, max_bytes: int = DEFAULT_MAX_BYTES,
                 encoding: str = "cl100k_base") -> None:
        self.db = db
        self.embedder = embedder
        self.root = root
        self.is_repo = is_repo
        self.max_bytes = max_bytes
        self.encoding = encoding
        self.files = db.open_table("files", files_schema())
        self.chunks = db.open_table("chunks", chunks_schema(embedder.dim))
        self.edges = db.open_table("edges", EDGES_SCHEMA)
        self.skipped_table = db.open_table("skipped", SKIPPED_SCHEMA)
        self.vector_cache = LanceVectorCache(db)
        if db.get_meta("chunks_words") != WORDS_FORMAT:
            db.rewrite_column(self.chunks, "words", ["path", "text"], lambda r: chunk_words(r["path"], r["text"]))
            db.set_meta("chunks_words", WORDS_FORMAT)
        db.finish_migration()

    # --- reading the index ---------------------------------------------------------------------------------------

    def _known(self, only: set[str] | None) -> dict[str, dict]:
        if only is not None and not only:
            return {}
        where = f"path IN ({', '.join(quote(p) for p in only)})" if only is not None else None
        return {r["path"]: r for r in scan(self.files, where, ["path", "mtime_ns", "size", "blob"])}

    def status(self) -> IndexStatus:
        listing = list_files(self.root, self.is_repo, self.max_bytes)
        known = self._known(None)
        listed = {f.path: f for f in listing.files}
        skipped = {p for p, _ in self._skipped_rows()}
        stale = new = 0
        for path, f in listed.items():
            row = known.get(path)
            if row is None:
                new += path not in skipped
            elif row["mtime_ns"] != f.mtime_ns or row["size"] != f.size:
                stale += 1
        removed = sum(1 for p in known if p not in listed)
        return IndexStatus(
            indexed_files=len(known),
            chunks=self.chunks.count_rows(),
            stale=stale,
            new=new,
            removed=removed,
            embeddings_pending=self.chunks.count_rows("embedded = false"),
        )

    def _skipped_rows(self) -> list[tuple[str, str]]:
        return [(r["path"], r["reason"]) for r in scan(self.skipped_table)]

    def skipped(self) -> list[tuple[str, str]]:
        return sorted(self._skipped_rows())

    # --- updating ------------------------------------------------------------------------------------------------

    def update(
        self,
        only: Iterable[str] | None = None,
        embed: bool = True,
        progress: Callable[[IndexProgress], None] | None = None,
        priority: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
    ) -> IndexReport:
        """Bring the index in line with the work tree (or with just the paths in `only`)."""
        report = IndexReport()
        start = time.perf_counter()
        emit = progress or (lambda _event: None)
        scope = set(only) if only is not None else None
        emit(IndexProgress("listing", 0, 0))
        listing = list_files(self.root, self.is_repo, self.max_bytes, scope)
        report.listed = len(listing.files)
        report.skipped.extend(listing.skipped)
        known = self._known(scope)
        listed_paths = {f.path for f in listing.files}
        removed = [p for p in known if p not in listed_paths]
        sources: list[SourceFile] = []
        touched_only: list[tuple[str, int]] = []
        for i, listed in enumerate(listing.files):
            row = known.get(listed.path)
            if row is not None and row["mtime_ns"] == listed.mtime_ns and row["size"] == listed.size:
                report.unchanged += 1
                continue
            source, reason = read_source(self.root, listed)
            if source is None:
                report.skipped.append((listed.path, reason or "unreadable"))
                if row is not None:
                    removed.append(listed.path)
                continue
            if row is not None and row["blob"] == source.blob:
                touched_only.append((listed.path, listed.mtime_ns))
                report.unchanged += 1
                continue
            sources.append(source)
            if i % 50 == 0:
                emit(IndexProgress("reading", i, len(listing.files)))
        report.changed = len(sources)
        report.removed = len(removed)
        facts = self._facts(listed_paths, scope)
        commit_info = self._last_commits([s.path for s in sources])
        prepared = []
        for i, source in enumerate(sources):
            prepared.append(self._prepare(source, facts, commit_info.get(source.path)))
            if i % 20 == 0:
                emit(IndexProgress("reading", i, len(sources)))
        self._reuse_cached_vectors(prepared)
        emit(IndexProgress("writing", 0, len(prepared)))
        self._write(prepared, removed, touched_only, report.skipped, scope)
        report.chunks = sum(len(p.chunk_rows) for p in prepared)
        report.lexical_seconds = time.perf_counter() - start
        if embed:
            t0 = time.perf_counter()
            report.embedded = self.embed_pending(progress=progress, priority=priority, should_stop=should_stop)
            report.embed_seconds = time.perf_counter() - t0
        report.embeddings_pending = self.chunks.count_rows("embedded = false")
        emit(IndexProgress("done", report.changed, report.changed))
        return report

    def _facts(self, listed: set[str], scope: set[str] | None) -> RepoFacts:
        paths = set(listed)
        if scope is not None:
            paths |= set(self._known(None))
        return RepoFacts.build(self.root, paths)

    def _last_commits(self, paths: list[str]) -> dict[str, tuple[datetime, str]]:
        """Last commit time and author per path: one `git log` walk for many files, one call each for a few."""
        if not self.is_repo or not paths:
            return {}
        wanted = set(paths)
        args = ["git", "log", "--format=%x00%ct%x1f%an", "--name-only", "--no-renames"]
        args += ["--max-count=3000"] if len(paths) > 10 else ["--", *paths]
        try:
            out = subprocess.run(args, cwd=self.root, capture_output=True, text=True, errors="replace").stdout
        except OSError:
            return {}
        found: dict[str, tuple[datetime, str]] = {}
        for record in out.split("\x00")[1:]:
            header, _, names = record.partition("\n")
            stamp, _, author = header.partition("\x1f")
            for name in names.splitlines():
                if name in wanted and name not in found:
                    found[name] = (datetime.fromtimestamp(int(stamp), tz=timezone.utc), author)
            if len(found) == len(wanted):
                break
        return found

    def _prepare(self, source: SourceFile, facts: RepoFacts, commit: tuple[datetime, str] | None) -> _Prepared:
        language = language_of(source.path)
        chunks = chunk_file(source.text, language, self.encoding)
        imports = resolve_imports(source.path, source.text, language, facts)
        is_test = is_test_path(source.path)
        zero = [0.0] * self.embedder.dim
        chunk_rows, edge_rows, symbols = [], [], []
        for chunk in chunks:
            chunk_id = hashlib.sha1(f"{source.path}:{chunk.start_line}:{chunk.end_line}:{source.blob}".encode()).hexdigest()[:16]
            symbols.extend(chunk.symbols)
            chunk_rows.append(
                {
                    "id": chunk_id,
                    "path": source.path,
                    "language": language,
                    "kind": chunk.kind,
                    "start_line": chunk.start_line,
                    "end_line": chunk.end_line,
                    "symbols": chunk.symbols,
                    "refs": chunk.refs,
                    "text": chunk.text,
                    "words": chunk_words(source.path, chunk.text),
                    "tokens": chunk.tokens,
                    "hash": text_hash(embed_text(source.path, chunk.symbols, chunk.text)),
                    "is_test": is_test,
                    "embedded": False,
                    "vector": zero,
                }
            )
            edge_rows.extend({"src": chunk_id, "dst": f"sym:{s}", "kind": "defines", "path": source.path} for s in chunk.symbols)
        edge_rows.extend({"src": source.path, "dst": target, "kind": "imports", "path": source.path} for target in imports)
        file_row = {
            "path": source.path,
            "language": language,
            "size": source.size,
            "mtime_ns": source.mtime_ns,
            "blob": source.blob,
            "last_commit_time": commit[0] if commit else None,
            "last_author": commit[1] if commit else "",
            "is_test": is_test,
            "imports": imports,
            "symbols": symbols,
            "tokens": sum(c.tokens for c in chunks),
            "chunks": len(chunks),
            "indexed_at": datetime.now(timezone.utc),
        }
        return _Prepared(file_row, chunk_rows, edge_rows)

    def _reuse_cached_vectors(self, prepared: list[_Prepared]) -> None:
        rows = [row for p in prepared for row in p.chunk_rows]
        if not rows:
            return
        cached = self.vector_cache.get_vectors(self.embedder.model_id, sorted({r["hash"] for r in rows}))
        for row in rows:
            vector = cached.get(row["hash"])
            if vector is not None:
                row["vector"], row["embedded"] = vector.tolist(), True

    def _write(self, prepared, removed, touched_only, skipped, scope) -> None:
        changed = [p.file_row["path"] for p in prepared]
        gone = sorted(set(changed) | set(removed))
        skipped_paths = sorted({p for p, _ in skipped})

        def apply():
            for lo in range(0, len(gone), 500):
                where = f"path IN ({', '.join(quote(p) for p in gone[lo : lo + 500])})"
                self.chunks.delete(where)
                self.files.delete(where)
                self.edges.delete(where)
            files = [p.file_row for p in prepared]
            chunks = [row for p in prepared for row in p.chunk_rows]
            edges = [row for p in prepared for row in p.edge_rows]
            if files:
                self.files.add(files)
            if chunks:
                self.chunks.add(chunks)
            if edges:
                self.edges.add(edges)
            for path, mtime in touched_only:
                self.files.update(where=f"path = {quote(path)}", values={"mtime_ns": mtime})
            if scope is None:
                self.skipped_table.delete("true")
            elif skipped_paths or gone:
                affected = sorted(set(skipped_paths) | set(gone) | set(changed))
                self.skipped_table.delete(f"path IN ({', '.join(quote(p) for p in affected)})")
            if skipped:
                self.skipped_table.add([{"path": p, "reason": r} for p, r in skipped])
            self.db.ensure_text_indexes(self.chunks)
            for table in (self.chunks, self.files, self.edges, self.skipped_table):
                self.db.maybe_compact(table)

        if gone or prepared or touched_only or skipped or scope is None:
            self.db.write(apply)

    # --- embeddings ----------------------------------------------------------------------------------------------

    def embed_pending(
        self,
        limit: int | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        priority: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Embed chunks still waiting, files named in `priority` first; returns how many were embedded."""
        pending = scan(self.chunks, "embedded = false", ["id", "path", "symbols", "text"])
        first = {p: i for i, p in enumerate(priority)}
        pending.sort(key=lambda r: (first.get(r["path"], len(first)), r["path"], r["id"]))
        if limit is not None:
            pending = pending[:limit]
        done = 0
        for lo in range(0, len(pending), EMBED_BATCH):
            if should_stop and should_stop():
                break
            batch = pending[lo : lo + EMBED_BATCH]
            vectors, _ = self.embedder.embed(
                [embed_text(r["path"], r["symbols"], r["text"]) for r in batch], self.vector_cache
            )
            self._store_vectors([r["id"] for r in batch], vectors)
            done += len(batch)
            if progress:
                progress(IndexProgress("embedding", done, len(pending)))
        return done

    def _store_vectors(self, ids: list[str], vectors: np.ndarray) -> None:
        import pyarrow as pa

        data = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "embedded": pa.array([True] * len(ids)),
                "vector": pa.array([v.tolist() for v in vectors], pa.list_(pa.float32(), self.embedder.dim)),
            }
        )

        def apply():
            self.chunks.merge_insert("id").when_matched_update_all().execute(data)
            self.db.ensure_search_indexes(self.chunks, bitmap=("embedded",), btree=("id", "path"))
            self.db.maybe_compact(self.chunks)

        self.db.write(apply)


def embed_text(path: str, symbols: list[str], text: str) -> str:
    """What the model sees for a chunk: where it lives and what it defines, then the code."""
    head = f"{path} {' '.join(symbols)}".strip()
    return f"{head}\n{text}"
