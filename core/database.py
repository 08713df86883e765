"""One LanceDB database: connect, check and migrate the schema version, serialise writers across processes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from .errors import CortexError
from .locations import is_remote_uri
from .schema import META_SCHEMA, SCHEMA_VERSION, missing_fields

T = TypeVar("T")
_LOCK_NAME = ".write.lock"
ANN_MIN_ROWS = 20_000
_RETRYABLE = ("conflict", "retryable", "commit", "concurrent")


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def sql_list(values) -> str:
    return "[" + ", ".join(quote(v) for v in values) + "]"


class Database:
    """A LanceDB connection plus the rules every table shares: schema version, write lock, compaction."""

    def __init__(self, uri: str, *, create: bool, lock_timeout: float = 30.0, compact_every: int = 40) -> None:
        self.uri = uri
        self.remote = is_remote_uri(uri)
        self.lock_timeout = lock_timeout
        self.compact_every = compact_every
        self.compact_keep = timedelta(minutes=1)
        """Versions younger than this survive compaction, so a reader in another process still on one of them
        does not fail."""
        if not self.remote:
            path = Path(uri)
            if not path.exists():
                if not create:
                    raise CortexError(f"no cortex database at {uri} (run `cortex init` or `cortex remember` first)")
                try:
                    path.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise CortexError(f"cannot create database directory {uri}: {exc.strerror}") from exc
            elif not path.is_dir():
                raise CortexError(f"database path {uri} is not a directory")
        import lancedb

        try:
            self.conn = lancedb.connect(uri, read_consistency_interval=timedelta(0))
            self._check_version(create)
        except CortexError:
            raise
        except Exception as exc:
            raise CortexError(f"database at {uri} is unreadable (corrupted?): {_first_line(exc)}") from exc

    def table_names(self) -> set[str]:
        return set(self.conn.list_tables().tables)

    def open_table(self, name: str, schema: pa.Schema):
        """Open a table, creating it if missing and adding columns its stored schema lacks."""
        if name in self.table_names():
            table = self.conn.open_table(name)
            extra = missing_fields(table.schema, schema)
            if extra:
                with self.write_lock():
                    table.add_columns(extra)
            return table
        with self.write_lock():
            return self.conn.create_table(name, schema=schema, exist_ok=True)

    def _check_version(self, create: bool) -> None:
        if "meta" not in self.table_names():
            if not create:
                raise CortexError(f"{self.uri} is not a cortex database (no meta table)")
            with self.write_lock():
                meta = self.conn.create_table("meta", schema=META_SCHEMA, exist_ok=True)
                if meta.count_rows("key = 'schema_version'") == 0:
                    meta.add([{"key": "schema_version", "value": str(SCHEMA_VERSION)}])
        meta = self.conn.open_table("meta")
        rows = meta.search().where("key = 'schema_version'").limit(1).to_list()
        found = int(rows[0]["value"]) if rows else 0
        if found > SCHEMA_VERSION:
            raise CortexError(
                f"database at {self.uri} has schema v{found}, newer than this cortex-tui understands "
                f"(v{SCHEMA_VERSION}); upgrade cortex-tui"
            )
        self.schema_version = found
        self.migrated_from = found if found < SCHEMA_VERSION else None

    def finish_migration(self) -> None:
        """Record the current schema version once every table has been opened (and so migrated)."""
        if self.migrated_from is None:
            return
        with self.write_lock():
            meta = self.conn.open_table("meta")
            meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
                [{"key": "schema_version", "value": str(SCHEMA_VERSION)}]
            )
        self.schema_version, self.migrated_from = SCHEMA_VERSION, None

    def write_lock(self) -> contextlib.AbstractContextManager[None]:
        """Serialise read-modify-write sequences across processes (CLI, dashboard, watcher, MCP server).
        LanceDB resolves conflicting commits itself, but an upsert reads before it writes and must not interleave."""
        return self.lock(_LOCK_NAME)

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """An exclusive lock across processes, by name (a file in the database directory); none for remote stores.
        Not reentrant: a holder of one lock may take another, never the same one twice."""
        if self.remote:
            yield
            return
        path = Path(self.uri) / name
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise CortexError(f"cannot write to database {self.uri}: {exc.strerror}") from exc
        try:
            deadline = time.monotonic() + self.lock_timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() > deadline:
                        raise CortexError(
                            f"database {self.uri} is locked by another cortex process (waited {self.lock_timeout:.0f}s)"
                        ) from exc
                    time.sleep(0.02)
            yield
        finally:
            os.close(fd)

    def write(self, fn: Callable[[], T]) -> T:
        """Run a write under the lock, retrying commit conflicts from writers that do not take it (remote stores)."""
        for attempt in range(6):
            try:
                with self.write_lock():
                    return fn()
            except CortexError:
                raise
            except OSError as exc:
                raise CortexError(f"cannot write to database {self.uri}: {exc.strerror or exc}") from exc
            except Exception as exc:
                text = str(exc).lower()
                if attempt == 5 or not any(word in text for word in _RETRYABLE):
                    if "permission denied" in text or "read-only" in text:
                        raise CortexError(f"cannot write to database {self.uri}: permission denied") from exc
                    raise
                time.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    def maybe_compact(self, table) -> bool:
        """Compact once enough versions older than `compact_keep` have piled up."""
        if self.compact_every <= 0:
            return False
        cutoff = datetime.now() - self.compact_keep
        old = [v for v in table.list_versions() if v["timestamp"] <= cutoff]
        if len(old) < self.compact_every:
            return False
        self.compact(table, self.compact_keep)
        return True

    def ensure_text_indexes(self, table) -> None:
        """One full-text index, on `words` (text, identifier parts, path words: one column is half the cost of
        matching two). Rows added later are searched too (unindexed rows are scanned) until compaction folds them in."""
        from lancedb.index import FTS

        if table.count_rows() == 0:
            return
        if ("words",) not in {tuple(i.columns) for i in table.list_indices()}:
            table.create_index("words", config=FTS(with_position=False, stem=True))

    def get_meta(self, key: str) -> str | None:
        rows = self.conn.open_table("meta").search().where(f"key = {quote(key)}").limit(1).to_list()
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        def apply():
            meta = self.conn.open_table("meta")
            meta.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(
                [{"key": key, "value": value}]
            )

        self.write(apply)

    def rewrite_column(self, table, column: str, needs: list[str], compute) -> None:
        """Recompute a derived column for every row (a data migration), in batches, under the write lock."""
        total = table.count_rows()
        if total == 0:
            return
        rows = table.search().select(["id", *needs]).limit(total).to_list()

        def apply():
            import pyarrow as pa

            for lo in range(0, len(rows), 5000):
                part = rows[lo : lo + 5000]
                data = pa.table({"id": [r["id"] for r in part], column: [compute(r) for r in part]})
                table.merge_insert("id").when_matched_update_all().execute(data)
            for index in table.list_indices():
                if index.index_type == "FTS" and index.columns != [column]:
                    table.drop_index(index.name)

        self.write(apply)

    def ensure_search_indexes(self, table, bitmap: tuple[str, ...] = (), label_lists: tuple[str, ...] = (),
                              btree: tuple[str, ...] = (), ann_min_rows: int = ANN_MIN_ROWS) -> bool:
        """Scalar indexes for prefilters, and an ANN vector index once a table is big enough for brute force to
        hurt (about 0.25 s at 100k rows here). Returns True when something was built. New rows after a build are
        still found (LanceDB scans unindexed rows) and are folded into the indexes by compaction."""
        if table.count_rows() == 0:
            return False
        built = False
        have = {tuple(i.columns): i.index_type for i in table.list_indices()}
        from lancedb.index import Bitmap, BTree, LabelList

        for columns, config in ((bitmap, Bitmap), (label_lists, LabelList), (btree, BTree)):
            for column in columns:
                if (column,) not in have:
                    table.create_index(column, config=config())
                    built = True
        if ("vector",) not in have and table.count_rows() >= ann_min_rows:
            from lancedb.index import HnswSq

            # Few partitions: each holds its own HNSW graph, and searching many small graphs cost more here
            # (50k rows: 6.7 ms p50 with 2 partitions, 9.7 ms with 12; brute force 106 ms).
            table.create_index("vector", config=HnswSq(distance_type="l2", num_partitions=max(1, table.count_rows() // 50_000)))
            built = True
        return built

    def compact(self, table, keep: timedelta = timedelta(0)) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            table.optimize(cleanup_older_than=keep)

    def disk_bytes(self) -> int | None:
        if self.remote:
            return None
        return sum(p.stat().st_size for p in Path(self.uri).rglob("*") if p.is_file())


def scan(table, where: str | None = None, columns: list[str] | None = None) -> list[dict]:
    """Every row matching `where`: LanceDB's search() without a vector stops at 10 rows unless given a limit."""
    query = table.search()
    if columns:
        query = query.select(columns)
    if where:
        query = query.where(where)
    return query.limit(max(table.count_rows(), 1)).to_list()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
