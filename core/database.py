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

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialise read-modify-write sequences across processes (CLI, dashboard, watcher, MCP server).
        LanceDB resolves conflicting commits itself, but an upsert reads before it writes and must not interleave."""
        if self.remote:
            yield
            return
        path = Path(self.uri) / _LOCK_NAME
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
        """Full-text indexes on `text` (stemmed prose and code) and `words` (identifier parts, unstemmed).
        Rows added later are searched too (unindexed rows are scanned) until compaction folds them in."""
        from lancedb.index import FTS

        if table.count_rows() == 0:
            return
        names = {tuple(i.columns) for i in table.list_indices()}
        for column, stem in (("text", True), ("words", False)):
            if (column,) not in names:
                table.create_index(column, config=FTS(with_position=False, stem=stem))

    def compact(self, table, keep: timedelta = timedelta(0)) -> None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            table.optimize(cleanup_older_than=keep)

    def disk_bytes(self) -> int | None:
        if self.remote:
            return None
        return sum(p.stat().st_size for p in Path(self.uri).rglob("*") if p.is_file())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
