"""One LanceDB database: connect, check and migrate the schema version, open tables, and make every commit.

Every change to a table is one LanceDB commit and goes through `Database.commit`, which retries it on a commit
conflict only when repeating it cannot change the outcome, and counts it. The count drives crash injection: with
CORTEX_CRASH_AFTER_COMMITS=N the process kills itself right after its Nth commit, so tests can stop a real `cortex`
at every commit boundary of an operation and check what the next run finds.

The class is cut by job: locks, retries and the commit count in `commits.py`, what a failure means in
`failures.py`, compaction in `compaction.py`, indexes and upkeep in `indexes.py`, filters in `sql.py`.
"""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa

from ..credentials import CloudCredentials
from ..errors import CortexError, DamagedDatabase, NoDatabase, ReadOnlyDatabase, UnusableLocation
from ..lancedb_loader import load_lancedb
from ..locations import CORTEX_DIRNAME, is_remote_uri, remote_storage_options
from ..write_ids import COLUMN
from . import receipts
from .commits import COMMITS, file_lock, retried, try_file_lock
from .compaction import COMPACT_KEEP, CompactionPolicy
from .failures import (
    TableMissing,
    corrupt_error,
    is_commit_conflict,
    is_missing_table,
    is_permission_denied,
    is_unreachable,
    looks_corrupt,
    unreachable_error,
)
from .indexes import Maintenance
from .private_dir import make_private, owner_made_read_only
from .schema import META_SCHEMA, SCHEMA_VERSION, missing_fields
from .sql import quote

T = TypeVar("T")
_LOCK_NAME = ".write.lock"
_CREATION_WAIT_S = 20.0
"""How long a table listed in a remote store without a first version is taken for one another machine is still
creating, before it is reported damaged."""


def read_only_note(uri: str) -> str:
    return f"the database at {uri} is read-only (its write permission was removed)"


def _make_private(path: Path) -> None:
    """The database directory, and the `.cortex` directory around it, readable by their owner only (see
    core/store/private_dir.py), before LanceDB writes anything into them."""
    for directory in (path.parent, path) if path.parent.name == CORTEX_DIRNAME else (path,):
        try:
            make_private(directory)
        except PermissionError:  # a database someone else owns, opened to read: theirs to protect
            pass


@dataclass(frozen=True)
class RemoteOptions:
    """How to reach an object-storage database (ignored for local paths)."""

    endpoint: str | None = None
    timeout_s: float = 10.0
    consistency_s: float = 2.0
    """Reads may be this stale; 0 would check the store for a new version on every read (a round trip each)."""
    credentials: CloudCredentials | None = None
    """The caller's object-store credentials (see core/credentials.py); None: this process's environment."""


class Database(CompactionPolicy, Maintenance):
    """A LanceDB connection plus the rules every table shares: schema version, write lock, compaction."""

    def __init__(self, uri: str, *, create: bool, lock_timeout: float = 30.0, compact_every: int = 40,
                 check: bool = True, remote: RemoteOptions = RemoteOptions()) -> None:
        """`check=False` only connects (for `cortex doctor`, which must reach a database whose tables are damaged)."""
        self.uri = uri
        self.remote = is_remote_uri(uri)
        self.lock_timeout = lock_timeout
        self.compact_every = compact_every
        self.compact_keep = COMPACT_KEEP
        self._counts: dict[tuple[str, str | None], tuple[int, int]] = {}
        self._counts_lock = threading.Lock()
        self._tables: dict[str, object] = {}
        self._warm: set[str] = set()
        self._compaction_lock = threading.Lock()
        self._holding = threading.local()
        self._held_back: list[Callable[[], object]] = []
        self.last_commit = 0.0
        """`time.monotonic()` of this process's last commit: a background compactor waits for writes to pause."""
        self.read_only = False
        """The owner took the database's write permission away: it is read, never written (nor compacted)."""
        if not self.remote:
            path = Path(uri)
            if not path.exists():
                if not create:
                    raise NoDatabase(f"no cortex database at {uri} (run `cortex init` or `cortex remember` first)")
                try:
                    path.mkdir(mode=0o700, parents=True, exist_ok=True)
                except OSError as exc:
                    raise UnusableLocation(f"cannot create database directory {uri}: {exc.strerror}") from exc
            elif not path.is_dir():
                raise UnusableLocation(f"database path {uri} is not a directory")
            self.read_only = owner_made_read_only(path)
            _make_private(path)
        lancedb = load_lancedb()
        if self.remote:
            self._options: dict[str, str] | None = remote_storage_options(uri, remote.endpoint, remote.timeout_s, remote.credentials)
            interval = timedelta(seconds=remote.consistency_s)
        else:
            self._options, interval = None, timedelta(0)
        try:
            self.conn = lancedb.connect(uri, read_consistency_interval=interval, storage_options=self._options)
            if check:
                self._check_version(create)
        except CortexError:
            raise
        except Exception as exc:
            if self.remote and is_unreachable(exc):
                raise unreachable_error(uri, exc) from None
            raise corrupt_error(uri, exc) from exc

    def table_names(self) -> set[str]:
        return set(self.conn.list_tables().tables)

    def open_table(self, name: str, schema: pa.Schema, key: str | Sequence[str] | None = None):
        """Open a table, creating it if missing and adding columns its stored schema lacks. Several first runs at
        once are safe: creation happens under the write lock, and a table another process is still creating (its
        directory listed, its first version not yet written) is opened again once that process lets go of the lock.
        `key` names the columns that identify a row, by which a remote creation that lost its race puts back the
        rows it overwrote (see `_open_remote`)."""
        table = self._open_table(name, schema, key)
        with self._compaction_lock:
            self._tables[name] = table
        return table

    def _open_table(self, name: str, schema: pa.Schema, key: str | Sequence[str] | None):
        if self.remote:
            return self._add_missing_remote(self._open_remote(name, schema, key), schema)
        try:
            table = self._open_existing(name)
        except TableMissing:
            with self.write_lock():
                try:
                    table = self._open_existing(name)
                except TableMissing as missing:
                    if name in self.table_names():
                        # Listed but without a version, and no creator holds the lock. With data files, its
                        # manifests are gone: creating it again would silently start it empty over them. Without,
                        # it is a creation killed before its first commit (tables are created empty), holding
                        # nothing of anyone's: created again.
                        if self._holds_data(name):
                            raise corrupt_error(self.uri, missing.__cause__ or missing) from None
                        shutil.rmtree(self._table_folder(name), ignore_errors=True)
                    table = self.commit(lambda: self.conn.create_table(name, schema=schema, exist_ok=True))
        extra = missing_fields(table.schema, schema)
        if extra and not self.read_only:  # read as it is: reads need no newer column, and writes are refused
            with self.write_lock():
                extra = missing_fields(table.schema, schema)
                if extra:
                    self.commit(lambda: table.add_columns(extra))
        return table

    def _open_remote(self, name: str, schema: pa.Schema, key: str | Sequence[str] | None):
        """Open or create a table of an object-storage database, which several machines may be creating at once
        with no lock between them. A table another machine is creating is listed before its first version exists:
        wait for that version. A creation that finds the table already there opens it instead."""
        deadline = time.monotonic() + _CREATION_WAIT_S
        while True:
            try:
                return self._open_existing(name)
            except TableMissing as missing:
                if name not in self.table_names():
                    try:
                        version = self.commit(lambda: self._creator().create_table(name, schema=schema).version)
                    except Exception as exc:
                        # Mostly "already exists": another machine created it first, and the next turn opens it.
                        if is_unreachable(exc) or time.monotonic() > deadline:
                            raise
                    else:
                        table = self._open_existing(name)
                        self.restore_overwritten(table, version, key)
                        return table
                elif time.monotonic() > deadline:
                    raise corrupt_error(self.uri, missing.__cause__ or missing) from None
            time.sleep(0.2)

    def _add_missing_remote(self, table, schema: pa.Schema):
        """Columns a newer schema adds, on a store other machines share with no lock between them: when two add
        them at once, the loser finds them there."""
        extra = missing_fields(table.schema, schema)
        if extra:
            try:
                self.commit(lambda: table.add_columns(extra))
            except Exception:
                table.checkout_latest()
                if missing_fields(table.schema, schema):
                    raise
        return table

    def _creator(self):
        """A connection that never reloads a table by itself, so a created table reports the version its creation
        committed (the main connection's tables may already read a newer one)."""
        return load_lancedb().connect(self.uri, storage_options=self._options)

    def restore_overwritten(self, table, created: int, key: str | Sequence[str] | None) -> None:
        """Two machines that both found a table absent both commit its creation, and Lance commits the one that
        loses the race to version 1 as an overwrite on top of the versions before it: an empty table in place of
        the first writes another machine made. Such a creation committed a version above 1; its maker reads the
        version just before its own and inserts the rows missing now, by `key` (an insert of absent keys, so
        repeating it changes nothing). A third machine's overwrite is put back the same way by that machine."""
        if created <= 1:
            return
        before = self.conn.open_table(table.name)
        before.checkout(created - 1)
        lost = before.to_arrow()
        if lost.num_rows and key:
            self.upsert(table, key, lost, update=False)
        elif lost.num_rows:
            # No key to tell a row already back from a missing one: one append, never repeated.
            self.add(table, lost)

    def _open_existing(self, name: str):
        try:
            return self.conn.open_table(name)
        except ValueError as exc:
            if is_missing_table(exc):
                raise TableMissing(name) from exc
            raise corrupt_error(self.uri, exc) from exc
        except Exception as exc:
            if looks_corrupt(exc):
                raise corrupt_error(self.uri, exc) from exc
            raise

    def _check_version(self, create: bool) -> None:
        try:
            meta = self._open_existing("meta")
        except TableMissing:
            meta = self._meta_once_creators_are_done()
        if meta is None:
            if not self._creation_interrupted():
                # Tables with data and no meta: a write would start meta again with only the rows it sets (the
                # index's formats lost, every file then read as stale). `cortex doctor` rebuilds it from the data.
                if any(self._holds_data(name) for name in self.table_names()):
                    raise DamagedDatabase(f"database at {self.uri} is damaged (its meta table is gone); run "
                                          "`cortex doctor` to rebuild it") from None
                if not create:
                    raise CortexError(f"{self.uri} is not a cortex database (no meta table)") from None
            create = True  # a first run was killed before it wrote the meta table: finish its creation
        if create:
            self._clear_interrupted_creation()
            meta = self.open_table("meta", META_SCHEMA, key="key")
            if meta.count_rows("key = 'schema_version'") == 0:
                with self.write_lock():
                    if meta.count_rows("key = 'schema_version'") == 0:
                        self.upsert(meta, "key", [{"key": "schema_version", "value": str(SCHEMA_VERSION)}])
        rows = meta.search().where("key = 'schema_version'").limit(1).to_list()
        found = int(rows[0]["value"]) if rows else 0
        if found > SCHEMA_VERSION:
            raise CortexError(
                f"database at {self.uri} has schema v{found}, newer than this cortex-tui understands "
                f"(v{SCHEMA_VERSION}); upgrade cortex-tui"
            )
        self.schema_version = found
        self.migrated_from = found if found < SCHEMA_VERSION else None

    def _meta_once_creators_are_done(self):
        """The meta table, looked for again behind the write lock: another first run creates the tables under it,
        and a look while it was committing meta found none (three first runs at once were once told the database
        was damaged). None when it is missing still."""
        if self.remote or self.read_only or not Path(self.uri).is_dir():
            return None
        with self.write_lock():
            try:
                return self._open_existing("meta")
            except TableMissing:
                return None

    def _holds_data(self, name: str) -> bool:
        """Whether a local table's folder holds any data file (`<name>.lance/data/`)."""
        data = self._table_folder(name) / "data"
        return data.is_dir() and any(data.iterdir())

    def _creation_interrupted(self) -> bool:
        """Whether this local database is what a first run killed before its meta table was written left behind: no
        table in it has a committed version (an empty directory, or tables whose first commit never happened).
        Such a directory holds nothing of anyone's; one where any table has a version is a damaged database."""
        if self.remote:
            return False
        for name in self.table_names():
            try:
                self._open_existing(name)
            except TableMissing:
                continue
            return False
        return True

    def _clear_interrupted_creation(self) -> None:
        """Remove the tables a killed first run began but never committed, so creating them again does not find
        them listed without a version (which is how a table whose manifests were lost looks)."""
        if self.remote or "meta" not in self.table_names():
            return
        try:
            self._open_existing("meta")
            return  # the usual case: a finished database, checked without taking the write lock
        except TableMissing:
            pass
        with self.write_lock():
            if not self._creation_interrupted():
                return
            for name in self.table_names():
                shutil.rmtree(self._table_folder(name), ignore_errors=True)

    def finish_migration(self) -> None:
        """Record the current schema version once every table has been opened (and so migrated)."""
        if self.migrated_from is None:
            return
        self.set_meta("schema_version", str(SCHEMA_VERSION))
        self.schema_version, self.migrated_from = SCHEMA_VERSION, None

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """Serialise read-modify-write sequences across processes (CLI, dashboard, watcher, MCP server).
        LanceDB resolves conflicting commits itself, but an upsert reads before it writes and must not interleave."""
        with self.lock(_LOCK_NAME):
            self._holding.write = True
            try:
                yield
            finally:
                self._holding.write = False

    def holds_write_lock(self) -> bool:
        """Whether this thread is inside `write_lock` (a compaction at the end of a write pass must not take it
        again: the lock is not reentrant)."""
        return bool(getattr(self._holding, "write", False))

    @contextlib.contextmanager
    def lock(self, name: str, timeout: float | None = None) -> Iterator[None]:
        """An exclusive lock across processes, by name (a file in the database directory); none for remote stores.
        Not reentrant: a holder of one lock may take another, never the same one twice. `filelock` takes an OS
        lock (flock, or LockFileEx on Windows) that the kernel drops when its holder dies, so a killed process
        never leaves the database locked. `timeout`: seconds to wait, the database's `lock_timeout` when None,
        for as long as it takes when negative."""
        if self.remote or self.read_only:  # nothing is written to a read-only database: no lock file either
            yield
            return
        with file_lock(Path(self.uri), name, self.lock_timeout if timeout is None else timeout, self.uri):
            yield

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        """The named lock if no other process holds it now (yields True), else yields False at once."""
        if self.remote:
            yield True
            return
        if self.read_only:
            yield False  # what it would guard (a compaction, an index build) writes
            return
        with try_file_lock(Path(self.uri), name) as mine:
            yield mine

    def write(self, fn: Callable[[], T]) -> T:
        """Run a sequence of reads and commits under the write lock. The sequence is never repeated as a whole:
        each commit in it goes through `commit`, which retries only what is safe to repeat."""
        try:
            with self.write_lock():
                return fn()
        except CortexError:
            raise
        except OSError as exc:
            if is_commit_conflict(exc):
                raise
            raise CortexError(f"cannot write to database {self.uri}: {exc.strerror or exc}") from exc
        except Exception as exc:
            if is_permission_denied(exc):
                raise CortexError(f"cannot write to database {self.uri}: permission denied") from exc
            raise

    def write_if_free(self, fn: Callable[[], None]) -> bool:
        """Run `fn` under the write lock if no one holds it at this moment (True), else nothing at once (False):
        for best-effort writes (access times) that must never keep a command, or a process's exit, waiting."""
        with self.try_lock(_LOCK_NAME) as mine:
            if mine:
                fn()
            return mine

    def commit(self, fn: Callable[[], T], idempotent: bool = True) -> T:
        """Make one LanceDB commit: every change to a table goes through here. A commit that lost a race to
        another writer wrote nothing, so it is tried again, but only when `idempotent` (a merge on a key, a delete
        or update by filter, an index, a compaction): a plain append is not repeated, since an error that merely
        looks like a conflict could follow a commit that landed."""
        if self.read_only:
            raise ReadOnlyDatabase(read_only_note(self.uri) + "; nothing was written")
        result = retried(fn, idempotent)
        self.last_commit = time.monotonic()
        COMMITS.committed()
        return result

    # --- the table operations, one commit each -----------------------------------------------------------------

    def add(self, table, rows, idempotent: bool = False) -> None:
        """An append; `idempotent` only where a row stored twice means the same as once (a cache)."""
        self.commit(lambda: table.add(rows), idempotent=idempotent)

    def delete(self, table, where: str) -> None:
        self.keep_receipts(table, where)
        self.commit(lambda: table.delete(where))

    def update(self, table, where: str, values: dict) -> None:
        if COLUMN in values:
            self.keep_receipts(table, where, values[COLUMN])
        self.commit(lambda: table.update(where=where, values=values))

    def upsert(self, table, on: str | Sequence[str], rows, insert: bool = True, delete_where: str | None = None,
               update: bool = True, all_new: bool = False) -> None:
        """One merge on a key: matching rows are updated (unless `update` is False), others inserted (unless
        `insert` is False), and with `delete_where` the table's rows matching it that the source lacks are deleted,
        all in a single commit. `all_new`: the caller knows no source row matches a stored one (so no write id can be
        replaced, and none is looked for)."""
        if update and not all_new and receipts.carries_ids(rows):
            self.keep_receipts(table, receipts.key_filter(on, rows), receipts.new_id(rows))
        if all_new and insert and isinstance(on, str):
            self._append_new(table, on, rows)
            return

        def apply():
            merge = table.merge_insert(on)
            if update:
                merge = merge.when_matched_update_all()
            if insert:
                merge = merge.when_not_matched_insert_all()
            if delete_where:
                merge = merge.when_not_matched_by_source_delete(delete_where)
            merge.execute(rows)

        self.commit(apply)

    def _append_new(self, table, on: str, rows) -> None:
        """Rows no stored row matches on `on`, appended: the same commit as the merge would make, without its join
        against every stored key (a merge into 100,000 memories took 72 ms of a `remember`; an append is a new
        fragment whatever the table's size). Tried again after a lost race like the merge, but only when the first
        try did not land after all (its first key is looked up by its index), so no row is stored twice."""
        first = rows.column(on)[0].as_py()
        tries = 0

        def apply():
            nonlocal tries
            tries += 1
            if tries > 1 and table.count_rows(f"{on} = {quote(first)}"):
                return
            table.add(rows)

        self.commit(apply)

    # --- receipts: which writes committed (see core/store/receipts.py) ------------------------------------------

    def open_receipts(self) -> None:
        """Open (or create) the receipts table, outside any write sequence: creating it takes the write lock."""
        if not self.read_only:
            self.open_table(receipts.RECEIPTS, receipts.RECEIPTS_SCHEMA, key=COLUMN)

    def receipts_table(self):
        kept = self._tables.get(receipts.RECEIPTS)
        if kept is None:
            raise CortexError(f"database {self.uri} has no receipts table")
        return kept

    def keep_receipts(self, table, where: str | None, keeping: str | None = None) -> None:
        """Before a commit that replaces or deletes the rows matching `where` in a stamped table, copy their write
        ids (but `keeping`, the one about to be written) into the receipts table: the fact that those writes
        committed outlives the rows. Inside the caller's write sequence, in a commit of its own before theirs."""
        if not where or getattr(table, "name", "") not in receipts.STAMPED or COLUMN not in table.schema.names:
            return
        ids = receipts.ids_in(table, where, keeping)
        kept = self._tables.get(receipts.RECEIPTS)
        if ids and kept is not None:
            self.upsert(kept, COLUMN, receipts.receipt_rows(ids), update=False)

    def record_receipt(self, write_id: str, output: list[list] | None) -> None:
        """The receipt of a committed write with its command's output, for a retry to print again."""
        kept = self._tables.get(receipts.RECEIPTS)
        if kept is not None:
            self.write(lambda: self.upsert(kept, COLUMN, receipts.receipt_rows([write_id], output)))

    def prune_receipts(self) -> None:
        """Receipts past their days: nobody asks about a write that old (see receipts.RECEIPT_DAYS)."""
        kept: Any = self._tables.get(receipts.RECEIPTS)
        if kept is not None and not self.read_only:
            where = receipts.stale_where()
            if kept.count_rows(where):
                self.write(lambda: self.commit(lambda: kept.delete(where)))

    def get_meta(self, key: str) -> str | None:
        rows = self.conn.open_table("meta").search().where(f"key = {quote(key)}").limit(1).to_list()
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        self.set_metas({key: value})

    def metas(self) -> dict[str, str]:
        """The whole meta table (a handful of rows), in one read."""
        return {row["key"]: row["value"] for row in self.conn.open_table("meta").to_arrow().to_pylist()}

    def set_metas(self, values: dict[str, str]) -> None:
        """Several meta keys in one commit."""
        self.write(lambda: self.put_metas(values))

    def put_metas(self, values: dict[str, str]) -> None:
        """`set_metas` inside a sequence that holds the write lock already (it is not reentrant)."""
        self.upsert(self.conn.open_table("meta"), "key", [{"key": k, "value": v} for k, v in values.items()])
