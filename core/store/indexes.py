"""A database's indexes and upkeep: full-text and scalar indexes, the vector index once a table is large, counts
cached per table version, data migrations of a column, and its size on disk."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from .failures import is_commit_conflict

# LanceDB's index optimize (a compaction's last step, in the upkeep, `cortex gc` and `cortex index`) printed a warning
# on standard error, once a process with a vector index to bring up to date, that its index statistics include the
# centroids unless this is set; without them, as LanceDB will do by default.
os.environ.setdefault("LANCE_INCLUDE_VECTOR_CENTROIDS", "false")
ANN_MIN_ROWS = 20_000
TEXT_INDEX = "words_idx"
"""The name LanceDB gives the full-text index on `words`."""
T = TypeVar("T")
_DEFERRED = threading.local()
"""This thread's vector indexes put off until the end of a bulk write (`vector_indexes_deferred`)."""


@contextmanager
def vector_indexes_deferred(building: Callable[[], None] | None = None) -> Iterator[None]:
    """Within: the writes of this thread build no vector index; the tables that became due get theirs once, when
    the block ends (unless it raised: the next write builds it then). An import writes many batches, and the one
    that took a table past `ANN_MIN_ROWS` built the index then (+140 MB, 2 minutes at 20,000 rows), leaving every
    later row unindexed; built once after the last batch, every row is indexed and the build is paid once. Outside
    the write lock: a build that loses a race to another writer is left to the next write."""
    due: dict[tuple[int, str], tuple[Maintenance, object]] = {}
    _DEFERRED.due = due
    try:
        yield
    finally:
        _DEFERRED.due = None
    for db, table in due.values():
        if building is not None:
            building()
        db.ensure_search_indexes(table)


class Maintenance:
    """A part of `Database` (which inherits it): uses its `uri`, `remote`, `commit`, `upsert`, `write` and the
    locks `_counts_lock` (with `_counts`, `_warm`)."""

    # What it uses of `Database`, declared for the type checker; `Database` sets and defines them.
    uri: str
    remote: bool
    _counts: dict[tuple[str, str | None], tuple[int, int]]
    _counts_lock: threading.Lock
    _warm: set[str]
    if TYPE_CHECKING:
        def commit(self, fn: Callable[[], T], idempotent: bool = True) -> T: ...

        def write(self, fn: Callable[[], T]) -> T: ...

        def upsert(self, table, on: str | Sequence[str], rows, insert: bool = True, delete_where: str | None = None,
                   update: bool = True) -> None: ...

    def ensure_text_indexes(self, table) -> None:
        """One full-text index, on `words` (text, identifier parts, path words: one column is half the cost of
        matching two). Rows added later are searched too (unindexed rows are scanned) until compaction folds them in.
        Machines sharing a store race to build it after their first writes; a loser leaves it to the winner."""
        from lancedb.index import FTS

        if table.count_rows() == 0:
            return
        if ("words",) not in {tuple(i.columns) for i in table.list_indices()}:
            self._build_index(lambda: table.create_index("words", config=FTS(with_position=False, stem=True)))

    def prewarm_text_index(self, table) -> None:
        """Ask LanceDB to load a table's full-text index into its cache, once per process and table. Otherwise the
        first query of each word loads that word's part (1M memories: a search's first run of a query took
        171 / 214 ms p50 / p95, 104-115 / 115-146 ms with the index prewarmed). Without the index yet (a new
        table), nothing happens and the next search asks again."""
        with self._counts_lock:  # taken before the load: the first searches, side by side, load it once
            if table.name in self._warm:
                return
            self._warm.add(table.name)
        try:
            table.prewarm_index(TEXT_INDEX)
        except Exception:
            with self._counts_lock:
                self._warm.discard(table.name)

    def count(self, table, where: str | None = None, version: int | None = None) -> int:
        """Rows of a table matching `where`, counted once per table version: searches and status ask on every
        call, and a filtered count scans a column, while the version is one look at the table's manifest (a round
        trip to LanceDB's loop: a caller that needs several counts looks once and passes `version`)."""
        version = table.version if version is None else version
        key = (table.name, where)
        with self._counts_lock:
            cached = self._counts.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        rows = table.count_rows(where)
        with self._counts_lock:
            self._counts[key] = (version, rows)
        return rows

    def has_vector_index(self, table, version: int | None = None) -> bool:
        """Whether a table has an approximate (IVF or HNSW) vector index, looked at once per table version like
        `count` (a search asks when its answer is short)."""
        version = table.version if version is None else version
        key = (table.name, "\0vector index")
        with self._counts_lock:
            cached = self._counts.get(key)
        if cached is not None and cached[0] == version:
            return bool(cached[1])
        found = any(i.index_type.upper().startswith(("IVF", "HNSW")) for i in table.list_indices())
        with self._counts_lock:
            self._counts[key] = (version, int(found))
        return found

    def rewrite_column(self, table, column: str, needs: list[str], compute, replaces_text_index: bool = True) -> None:
        """Recompute a derived column for every row (a data migration), in batches, under the write lock. A column
        that `replaces_text_index` takes full-text search over: the full-text indexes of other columns go."""
        total = table.count_rows()
        if total == 0:
            return
        rows = table.search().select(["id", *needs]).limit(total).to_list()

        def apply():
            for lo in range(0, len(rows), 5000):
                part = rows[lo : lo + 5000]
                data = pa.table({"id": [r["id"] for r in part], column: [compute(r) for r in part]})
                self.upsert(table, "id", data, insert=False)
            for index in table.list_indices() if replaces_text_index else ():
                if index.index_type == "FTS" and index.columns != [column]:
                    self.commit(lambda name=index.name: table.drop_index(name))

        self.write(apply)

    def ensure_search_indexes(self, table, bitmap: tuple[str, ...] = (), label_lists: tuple[str, ...] = (),
                              btree: tuple[str, ...] = (), ann_min_rows: int | None = None,
                              vectors: str | None = None) -> bool:
        """Scalar indexes for prefilters, and an ANN vector index once a table is big enough for brute force to
        hurt (about 0.25 s at 100k rows here). Returns True when something was built. New rows after a build are
        still found (LanceDB scans unindexed rows) and are folded into the indexes by compaction. `ann_min_rows`:
        `ANN_MIN_ROWS`, read when called. `vectors`: a filter for the rows whose vectors are real; only they count
        toward the threshold and the partitions (the code index's chunks hold zero vectors until embedded, and
        lexical-only ones for good: an index trained on those placeholders is no use, and building one over a
        50,000-file tree's 243,000 unembedded chunks was the lexical index's peak, +300 MB)."""
        if table.count_rows() == 0:
            return False
        built = False
        have = {tuple(i.columns): i.index_type for i in table.list_indices()}
        from lancedb.index import Bitmap, BTree, LabelList

        for columns, config in ((bitmap, Bitmap), (label_lists, LabelList), (btree, BTree)):
            for column in columns:
                if (column,) not in have:
                    built |= self._build_index(lambda: table.create_index(column, config=config()))
        # A table with no vectors (the code index's `files`) gets scalar indexes only.
        if "vector" in table.schema.names and ("vector",) not in have \
                and (rows := table.count_rows(vectors)) >= (ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows):
            if (due := getattr(_DEFERRED, "due", None)) is not None:
                due[(id(self), table.name)] = (self, table)
                return built
            from lancedb.index import HnswSq

            # Few partitions: each holds its own HNSW graph, and searching many small graphs cost more here
            # (50k rows: 6.7 ms p50 with 2 partitions, 9.7 ms with 12; brute force 106 ms).
            partitions = max(1, rows // 50_000)
            built |= self._build_index(
                lambda: table.create_index("vector", config=HnswSq(distance_type="l2", num_partitions=partitions)))
        return built

    def _build_index(self, create: Callable[[], object]) -> bool:
        """Build one index; when other writers keep winning the race (several machines sharing a store all build
        the same indexes after their first writes), leave it: indexes only speed reads, the rows are committed
        already, and the next write checks again."""
        try:
            self.commit(create)
        except Exception as exc:
            if not is_commit_conflict(exc):
                raise
            return False
        return True

    def disk_bytes(self) -> int | None:
        if self.remote:
            return None
        return sum(p.stat().st_size for p in Path(self.uri).rglob("*") if p.is_file())
