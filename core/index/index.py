"""The code index: files, symbol chunks and import/definition edges in LanceDB, updated incrementally.

Lexical first, semantic later: `update()` stores text and structure so full-text search works at once and marks
every new chunk the embedding rule embeds (`embed_scope`) as waiting for an embedding; `embed_pending()` fills vectors in batches, most relevant files first
(the working change, then recently committed files). Unchanged content is never re-chunked (stat, then git blob
id) nor re-embedded (vectors are cached by content hash).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

from .. import heap
from ..answers import IndexProgress, IndexReport, IndexStatus
from ..embedding.embed import Embedder, VectorCache
from ..errors import DatabaseLocked
from ..store.database import Database
from ..store.indexes import TEXT_INDEX
from ..store.schema import EDGES_SCHEMA, SKIPPED_SCHEMA, chunks_schema, files_schema
from ..store.sql import in_filter, scan, sql_list
from ..store.vector_cache import LanceVectorCache
from .chunk_rows import (
    CHUNK_LABEL_LISTS,
    PreparedFile,
    last_commits,
    prepare_file,
    reuse_cached_vectors,
)
from .dependents import ImportScope, changed_imports
from .embed_queue import EmbedQueue
from .embed_scope import LEXICAL_ONLY_WHERE, VECTORS_WHERE
from .formats import bring_up_to_date
from .imports import RepoFacts
from .indexed_paths import IndexedPaths, IndexedPathsCache, chunk_counts, read_indexed
from .skip_list import SkipList
from .walk import (
    DEFAULT_MAX_BYTES,
    Listed,
    Listing,
    git_blob_id,
    list_files,
    read_bytes,
    vet_source,
)

_GENERATIONS = itertools.count(1)
WRITE_BATCH = 500
"""Files per batch of index writes: a crash loses at most one batch of work, and a batch is a handful of commits."""
WRITE_BYTES = 2_000_000
"""Source bytes per batch of index writes, whichever of the two bounds comes first: a batch's rows (text, words,
parse trees on the way) hold about 50 bytes of memory per byte of source, so 500 large files (mypy's average
10 KB) held 250 MB at once; 2 MB of source bounds a batch near 100 MB whatever the files' sizes."""
_PASS_LOCK = ".index-pass.lock"
"""Held through a lexical pass (see `update`)."""



class CodeIndex:
    """The repository's code in three tables: `files`, `chunks` and `edges`."""

    def __init__(self, db: Database, embedder: Embedder, root: Path, is_repo: bool, max_bytes: int = DEFAULT_MAX_BYTES,
                 encoding: str = "cl100k_base") -> None:
        heap_for_bulk_work()
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
        self.skip_list = SkipList(db, self.skipped_table)
        self.embed_queue = EmbedQueue(db, self.chunks, embedder, LanceVectorCache(db))
        self._live_lock = threading.Lock()
        self._indexed = IndexedPathsCache(self.files, self.chunks, self.skipped_table)
        self._live = False
        self._dirty: set[str] = set()
        self._git_moved = False
        self._generation = next(_GENERATIONS)
        self.full_listings = 0
        """Whole-tree listings this index made (`Listing.whole_tree`): the hot paths must not add to it."""
        self._facts: RepoFacts | None = None
        self._facts_version: int | None = None
        """The files table's version that `_facts` (all indexed paths and their module maps) matches: every write
        this index makes to the files table moves it along; a version it did not make (another process wrote, or
        a compaction) drops the cache, and the next batch reads the path column once again."""
        bring_up_to_date(db, self.chunks, self.files, embedder.model_id)

    @property
    def vector_cache(self) -> VectorCache:
        """Where vectors are looked up and kept: the embedding pass's, which a team store wraps (engine.code_index)."""
        return self.embed_queue.vector_cache

    @vector_cache.setter
    def vector_cache(self, cache: VectorCache) -> None:
        self.embed_queue.vector_cache = cache

    # --- reading the index ---------------------------------------------------------------------------------------

    def _known(self, only: set[str] | None) -> dict[str, dict]:
        """File rows (the markers) whose chunks are all present. A row whose `chunks` count the chunks table does
        not match (a crash between writes, or a database written before the marker went last) is left out, so
        the file counts as new and is read again: the index never calls itself fresh with chunks missing."""
        if only is not None and not only:
            return {}
        where = in_filter("path", sorted(only)) if only is not None else None
        rows = scan(self.files, where, ["path", "mtime_ns", "size", "blob", "chunks"])
        present = chunk_counts(self.chunks, where)
        return {r["path"]: r for r in rows if present.get(r["path"], 0) == r["chunks"]}

    def _list(self, only: set[str] | None) -> Listing:
        listing = list_files(self.root, self.is_repo, self.max_bytes, only)
        self.full_listings += listing.whole_tree
        return listing

    def _unmarked_paths(self) -> set[str]:
        """Paths that have file rows, chunks or edges: leftovers of a crash or a removed file get deleted."""
        return {r["path"] for t in (self.files, self.chunks, self.edges) for r in scan(t, None, ["path"])}

    def status(self) -> IndexStatus:
        """How the index compares with the work tree. While a watcher keeps it live, only the paths the watcher
        saw change and has not applied yet are looked at: no listing of the tree, no read of whole tables. Without
        one (a one-shot command, a served command with no dashboard open), the whole tree is listed and compared
        with what the index held at its tables' current versions (read again only after a write)."""
        with self._live_lock:
            live, dirty = self._live and not self._git_moved, set(self._dirty)
        versions = self._indexed.versions()
        files_version, chunks_version = versions[0], versions[1]
        if not live:
            listing = self._list(None)
            return self._status(self._compare(listing, None, self._indexed.get(versions)), chunks_version)
        counts = self._compare(None, set(), None)
        if dirty:
            counts = self._compare(self._list(dirty), dirty, None)
        indexed = self.db.count(self.files, version=files_version)
        return self._status(replace(counts, indexed_files=indexed), chunks_version)

    def _status(self, counts: IndexStatus, chunks_version: int) -> IndexStatus:
        return replace(counts, chunks=self.db.count(self.chunks, version=chunks_version),
                       embeddings_pending=self.db.count(self.chunks, "embedded = false", version=chunks_version),
                       lexical_only=self.db.count(self.chunks, LEXICAL_ONLY_WHERE, version=chunks_version),
                       embedding=self.embed_queue.busy())

    def _compare(self, listing: Listing | None, scope: set[str] | None, held: IndexedPaths | None) -> IndexStatus:
        """Stale, new and removed among `scope` (every path when None), from stat and what the index holds of
        those paths (`held`, read here when None); the counts of chunks and embeddings are left to the caller."""
        stale = new = removed = indexed = 0
        if listing is not None:
            held = held if held is not None else read_indexed(self.files, self.chunks, self.skipped_table, scope)
            listed = {f.path: f for f in listing.files}
            for path, f in listed.items():
                if path not in held.stat:
                    new += path not in held.skipped
                elif held.stat[path] != (f.mtime_ns, f.size):
                    stale += 1
            removed = sum(1 for p in held.stat if p not in listed)
            indexed = held.complete
        return IndexStatus(indexed_files=indexed, chunks=0, stale=stale, new=new, removed=removed,
                           embeddings_pending=0)

    def pending(self) -> int:
        """Chunks waiting for an embedding (counted once per version of the chunks table)."""
        return self.db.count(self.chunks, "embedded = false")

    def chunk_counts(self) -> tuple[int, int]:
        """(chunks to embed, chunks waiting for an embedding), both at one version of the chunks table."""
        return self.embed_queue.counts()

    def has_files(self) -> bool:
        return self.db.count(self.files) > 0

    def importers(self, paths: list[str]) -> dict[str, int]:
        """How many indexed files import each of these paths: one read of the importing files' `imports` column,
        never the whole table."""
        counts = dict.fromkeys(paths, 0)
        if not paths:
            return counts
        for row in scan(self.files, f"array_has_any(imports, {sql_list(paths)})", ["imports"]):
            for target in set(row["imports"] or []) & counts.keys():
                counts[target] += 1
        return counts

    # --- live freshness (fed by a watcher) ----------------------------------------------------------------------

    def go_live(self) -> None:
        """A watcher has caught the index up with the tree and will report every change from now on."""
        with self._live_lock:
            self._live = True
            self._generation = next(_GENERATIONS)

    def go_offline(self) -> None:
        with self._live_lock:
            self._live, self._git_moved = False, False
            self._dirty.clear()

    def generation(self) -> int | None:
        """A number that changes with every change a watcher reports (unique across indexes); None while no
        watcher keeps the index live, as then nothing reports changes."""
        with self._live_lock:
            return self._generation if self._live else None

    def mark_dirty(self, paths: Iterable[str], git_moved: bool = False) -> None:
        """Paths seen changing that the index has not applied yet (`git_moved`: HEAD or refs moved)."""
        with self._live_lock:
            self._dirty.update(paths)
            self._git_moved = self._git_moved or git_moved
            self._generation = next(_GENERATIONS)

    def mark_clean(self, paths: Iterable[str], full: bool = False) -> None:
        """An update has applied these paths (`full`: the whole tree, so everything is clean)."""
        with self._live_lock:
            if full:
                self._dirty.clear()
                self._git_moved = False
            else:
                self._dirty.difference_update(paths)

    def skipped(self) -> list[tuple[str, str]]:
        return self.skip_list.rows()

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
        # One lexical pass at a time per database, across threads and processes: a second pass that starts while
        # one is under way (a selection on a fresh database beside the dashboard's indexing) waits for it, then
        # finds its files indexed instead of reading and rewriting every one of them again.
        with self._pass_turn(emit):
            self._lexical_pass(scope, emit, report)
        report.lexical_seconds = time.perf_counter() - start
        if embed:
            t0 = time.perf_counter()
            report.embedded = self.embed_pending(progress=progress, priority=priority, should_stop=should_stop)
            report.embed_seconds = time.perf_counter() - t0
        report.embeddings_pending = self.chunks.count_rows("embedded = false")
        emit(IndexProgress("done", report.changed, report.changed))
        return report

    def refresh(self, paths: Iterable[str]) -> bool:
        """Apply these few paths' changes at once, lexically, unless an indexing pass runs now (False: that pass or
        the watcher's next one brings them). What reads the working change (a context) then shows its text as it
        is on disk rather than as the watcher last saw it."""
        scope = set(paths)
        if not scope:
            return True
        # Reads the rows of these paths only: most calls find nothing to do, and a pass would read more than that.
        seen = self._compare(self._list(scope), scope, None)
        if not (seen.stale or seen.new or seen.removed):
            return True
        with self.db.try_lock(_PASS_LOCK) as mine:
            if mine:
                self._lexical_pass(scope, lambda _event: None, IndexReport())
            return mine

    @contextlib.contextmanager
    def _pass_turn(self, emit: Callable[[IndexProgress], None]) -> Iterator[None]:
        """The pass lock, saying so when another pass holds it: the wait lasts as long as that pass (minutes for a
        first index of a large tree), and a dashboard or `cortex index` that waits shows it is waiting instead of
        looking stuck at its last figure."""
        with contextlib.ExitStack() as held:
            try:
                held.enter_context(self.db.lock(_PASS_LOCK, timeout=0))
            except DatabaseLocked:
                emit(IndexProgress("waiting for another indexing pass", 0, 0))
                held.enter_context(self.db.lock(_PASS_LOCK, timeout=-1))
            yield

    def _lexical_pass(self, scope: set[str] | None, emit: Callable[[IndexProgress], None], report: IndexReport) -> None:
        """List, read, chunk and write what changed (in `scope`, or the whole tree), filling in `report`."""
        emit(IndexProgress("listing", 0, 0))
        listing = self._list(scope)
        report.listed = len(listing.files)
        report.skipped.extend(listing.skipped)
        known = self._known(scope)
        listed_paths = {f.path for f in listing.files}
        removed = [p for p in known if p not in listed_paths]
        if scope is None:
            removed.extend(sorted(self._unmarked_paths() - listed_paths - set(removed)))
        candidates: list[Listed] = []
        for listed in listing.files:
            row = known.get(listed.path)
            if row is not None and row["mtime_ns"] == listed.mtime_ns and row["size"] == listed.size:
                report.unchanged += 1
            else:
                candidates.append(listed)
        facts = self._repo_facts(listed_paths, scope)
        commit_info = last_commits(self.root, [c.path for c in candidates]) if self.is_repo else {}
        touched_only: list[tuple[str, int]] = []
        written: list[str] = []
        appeared: list[str] = []
        # Read, chunk and write one batch of files at a time: memory stays bounded by a batch, not by the tree.
        lo = 0
        for batch in write_batches(candidates):
            emit(IndexProgress("reading", lo, len(candidates)))
            lo += len(batch)
            prepared = []
            for listed in batch:
                row = known.get(listed.path)
                data, reason = read_bytes(self.root, listed)
                # Same bytes as indexed: only the stat moved (a checkout, a touch). Checked before decoding and
                # secret redaction, which cost far more than hashing.
                if data is not None and row is not None and row["blob"] == git_blob_id(data):
                    touched_only.append((listed.path, listed.mtime_ns))
                    report.unchanged += 1
                    continue
                source, reason = vet_source(listed, data) if data is not None else (None, reason)
                if source is None:
                    report.skipped.append((listed.path, reason or "unreadable"))
                    if row is not None:
                        removed.append(listed.path)
                    continue
                if row is None:
                    appeared.append(listed.path)
                prepared.append(prepare_file(source, facts, commit_info.get(source.path), self.encoding,
                                             self.embedder.dim, self.embedder.document_key))
            emit(IndexProgress("writing", lo, len(candidates)))
            if prepared:
                reuse_cached_vectors(prepared, self.vector_cache, self.embedder.model_id)
                self.db.write(lambda: self._write_batch(prepared, [p.file_row["path"] for p in prepared]))
                report.chunks += sum(len(p.chunk_rows) for p in prepared)
                written += [p.file_row["path"] for p in prepared]
        report.changed = len(written)
        report.removed = len(removed)
        # Removing rows and refreshing the search indexes takes seconds on a large tree: say so, not "writing N/N".
        emit(IndexProgress("updating search indexes", 0, 0))
        self._finish(removed, touched_only, report.skipped, scope, written)
        self._reresolve_dependents(appeared, removed, facts, set(written))
        self._keep_facts(facts, report.skipped, scope)

    def _repo_facts(self, listed: set[str], scope: set[str] | None) -> RepoFacts:
        """The paths imports resolve against: the listing after a full pass; for a watcher's batch, the indexed
        paths (cached, see `_facts_version`) with the batch's appeared and vanished paths applied."""
        if scope is None:
            with self._live_lock:
                self._facts, self._facts_version = None, self.files.version
            return RepoFacts.build(self.root, set(listed))
        with self._live_lock:
            facts = self._facts if self._facts_version == self.files.version else None
            self._facts = None
        if facts is None:
            version = self.files.version
            facts = RepoFacts.build(self.root, {r["path"] for r in scan(self.files, None, ["path"])})
            with self._live_lock:
                self._facts_version = version
        facts.update(self.root, added=listed, removed=scope - listed, edited=scope & listed)
        return facts

    def _keep_facts(self, facts: RepoFacts, skipped: list[tuple[str, str]], scope: set[str] | None) -> None:
        """After an update: keep its facts for the next batch, as long as no other writer moved the files table
        meanwhile. Paths the update skipped (binary, too large) have no row, so they leave the facts."""
        facts.update(self.root, removed={p for p, _ in skipped if scope is None or p in scope})
        with self._live_lock:
            if self._facts_version == self.files.version:
                self._facts = facts

    def _files_written(self, before: int) -> None:
        """This index committed to the files table, which was at `before` (under the write lock, so nothing else
        committed in between): the cache, if in step with `before`, stays in step."""
        with self._live_lock:
            self._facts_version = self.files.version if self._facts_version == before else None

    def _reresolve_dependents(self, appeared: list[str], removed: list[str], facts: RepoFacts, done: set[str]) -> None:
        changed = changed_imports(ImportScope(self.root, self.files, self.chunks, facts), appeared, removed, done)
        if changed:
            self.db.write(lambda: self._replace_imports(changed))

    def _replace_imports(self, changed: dict[str, list[str]]) -> None:
        import pyarrow as pa

        where = f"kind = 'imports' AND ({in_filter('path', sorted(changed))})"
        self.db.delete(self.edges, where)
        edges = [{"src": p, "dst": t, "kind": "imports", "path": p} for p, targets in changed.items() for t in targets]
        if edges:
            self.db.add(self.edges, edges)
        data = pa.table({"path": list(changed), "imports": pa.array(list(changed.values()), pa.list_(pa.string()))})
        before = self.files.version
        self.db.upsert(self.files, "path", data, insert=False)
        self._files_written(before)

    def _finish(self, removed: list[str], touched_only: list[tuple[str, int]], skipped: list[tuple[str, str]],
                scope: set[str] | None, written: list[str]) -> None:
        """After the batches of new content (each written in the order that keeps a crash harmless: a file's old
        chunks and edges go, its new ones are added, and only then its file row, the marker): removed files go,
        files whose stat alone changed get their new stat in one commit for all of them (one commit per file
        would pile up table versions), and the skip list is brought up to date."""
        gone = sorted(set(removed))
        if gone:
            self.db.write(lambda: self._write_batch([], gone))
        if touched_only:
            import pyarrow as pa

            data = pa.table({"path": [p for p, _ in touched_only], "mtime_ns": pa.array([m for _, m in touched_only], pa.int64())})

            def restamp():
                before = self.files.version
                self.db.upsert(self.files, "path", data, insert=False)
                self._files_written(before)

            self.db.write(restamp)
        self.skip_list.replace(skipped, scope, sorted(set(removed) | set(written)))
        self.db.write(self._tidy)

    def _write_batch(self, batch: list[PreparedFile], gone: list[str]) -> None:
        where = in_filter("path", gone)
        assert where is not None  # both callers pass the paths of a non-empty batch
        chunks = [row for p in batch for row in p.chunk_rows]
        edges = [row for p in batch for row in p.edge_rows]
        for table, rows in ((self.chunks, chunks), (self.edges, edges)):
            if table.count_rows(where):
                self.db.delete(table, where)
            if rows:
                self.db.add(table, rows)
        files = [p.file_row for p in batch]
        before = self.files.version
        if files:
            self.db.upsert(self.files, "path", files, delete_where=where)
        elif self.files.count_rows(where):
            self.db.delete(self.files, where)
        self._files_written(before)

    def embed_pending(
        self,
        limit: int | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        priority: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Embed chunks still waiting, files named in `priority` first; how many were embedded. While another
        embedder holds the embed lock, waits for it (see embed_queue)."""
        return self.embed_queue.run(limit, progress, priority, should_stop)

    def _tidy(self) -> None:
        self.db.fold_unindexed(self.chunks, TEXT_INDEX)
        self.db.ensure_text_indexes(self.chunks)
        self.db.ensure_search_indexes(self.chunks, label_lists=CHUNK_LABEL_LISTS, vectors=VECTORS_WHERE)
        # Every update, status check and graph read looks files up by path.
        self.db.ensure_search_indexes(self.files, btree=("path",))
        self.db.note_written()


def heap_for_bulk_work() -> None:
    """The C heap a process that indexes works on: one malloc arena, and pyarrow's buffers on it (`core.heap`).

    A pass allocates from many threads: LanceDB's readers and writers, the tokenizer's, the model's runs side by
    side. With an arena per thread, what each batch freed stayed resident in whichever arena held it, and python/
    mypy's first index grew batch by batch while embedding (467 -> 813 MB over 7,863 chunks); on one arena,
    trimmed after each batch (`OnnxEncoder.release`), it stays flat, and pyarrow's own pool (which keeps what it
    freed for reuse) no longer holds a batch's rows on top. The CPU time is the same (docs/benchmarks.md). The
    arena limit binds only threads that take an arena after it is set, and set once LanceDB's threads were running
    it saved nothing measurable: so `cortex` run in-process, an index pass's child and the resident server set it
    before any thread starts, and here it only covers a process entered otherwise (the Python API)."""
    heap.one_arena()
    heap.arrow_on_the_c_heap()


def write_batches(candidates: list[Listed]) -> Iterator[list[Listed]]:
    """The files to read in batches of at most `WRITE_BATCH` files and `WRITE_BYTES` bytes by their stat (a file
    larger than that is a batch of its own)."""
    batch: list[Listed] = []
    size = 0
    for listed in candidates:
        if batch and (len(batch) >= WRITE_BATCH or size + listed.size > WRITE_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(listed)
        size += listed.size
    if batch:
        yield batch
