"""One LanceDB database: connect, check and migrate the schema version, serialise writers across processes, and
count every commit.

Every change to a table is one LanceDB commit and goes through `Database.commit`, which retries it on a commit
conflict only when repeating it cannot change the outcome, and counts it. The count drives crash injection: with
CORTEX_CRASH_AFTER_COMMITS=N the process kills itself right after its Nth commit, so tests can stop a real `cortex`
at every commit boundary of an operation and check what the next run finds.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pyarrow as pa

from ..errors import CortexError, DatabaseLocked, UnusableLocation
from ..locations import CORTEX_DIRNAME, is_remote_uri, remote_storage_options
from .private_dir import make_private
from .schema import META_SCHEMA, SCHEMA_VERSION, missing_fields

T = TypeVar("T")
_LOCK_NAME = ".write.lock"
ANN_MIN_ROWS = 20_000
CRASH_ENV = "CORTEX_CRASH_AFTER_COMMITS"
_CONFLICTS = ("Retryable commit conflict", "Commit conflict for version", "Too many concurrent writ")
"""How Lance words the errors of a commit that lost a race (RetryableCommitConflict, CommitConflict after its own
retries, TooMuchWriteContention). LanceDB raises them as RuntimeError("lance error: ..."); an incompatible
transaction ("Incompatible transaction: ...") is not among them, as repeating it fails the same way, except one
incompatible with a concurrent Overwrite: the table was replaced under it (a second creation of a new remote
table, see `Database.restore_overwritten`), and the same operation made again applies to the replacement."""
_OVERWRITTEN = ("Incompatible transaction", "concurrent transaction Overwrite")
_ATTEMPTS = 6
_CREATION_WAIT_S = 20.0
"""How long a table listed in a remote store without a first version is taken for one another machine is still
creating, before it is reported damaged."""
COMPACT_KEEP = timedelta(seconds=15)
"""Versions younger than this survive compaction, so a reader in another process still on one of them does not
fail (a query re-reads the newest version when it starts and takes well under a second). Every commit of a small
write adds a manifest listing every fragment, so the versions kept are what grows under sustained writes: with a
minute kept, three writers and the watcher drove `.cortex` to 3.5 times its compacted size in five minutes; with
15 s, 1.95 times at the peak (`cortex bench disk`)."""
_COMPACTION_DIR = ".compaction"
_COMPACTION_LOCK = ".compaction.lock"
_CORRUPTION = ("LanceError(IO)", "failed to fill whole buffer", "Corrupt", "was not found", "Not found:",
               "No such file", "manifest")


class _CommitCounter:
    """Commits made by this process; with CORTEX_CRASH_AFTER_COMMITS=N it SIGKILLs itself after the Nth."""

    def __init__(self) -> None:
        self.count = 0
        self.crash_after = int(os.environ.get(CRASH_ENV) or 0)

    def committed(self) -> None:
        self.count += 1
        if self.crash_after and self.count >= self.crash_after:
            # SIGKILL, not an exception: no finally block, lock release or atexit hook may tidy up after a crash.
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


COMMITS = _CommitCounter()


class _WriteNotes:
    """A count of the writes that may have made a table due for compaction, in any database of this process, that
    background compactors wait on (see core/store/compaction.py). A count, not an event: with several compactors in one
    process (the server's engines), one clearing an event could swallow the write another was waiting for, or the
    stop another was woken for."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    def note(self) -> None:
        with self._changed:
            self._count += 1
            self._changed.notify_all()

    def seen(self) -> int:
        return self._count

    def wake(self) -> None:
        """Wake every waiter without noting a write (a compactor is stopping: each looks at its own stop flag)."""
        with self._changed:
            self._changed.notify_all()

    def wait(self, seen: int, timeout: float, stop: threading.Event) -> int:
        """Until a write is noted after `seen`, `stop` is set or `timeout` passes; returns the count to wait after
        next time."""
        with self._changed:
            self._changed.wait_for(lambda: self._count != seen or stop.is_set(), timeout)
            return self._count


WRITES_NOTED = _WriteNotes()


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether LanceDB failed a commit because another writer committed first (nothing of it was written)."""
    if not isinstance(exc, (RuntimeError, OSError)):
        return False
    text = str(exc).strip()
    text = text[len("lance error: "):] if text.startswith("lance error: ") else text
    return text.startswith(_CONFLICTS) or (text.startswith(_OVERWRITTEN[0]) and _OVERWRITTEN[1] in text)


def looks_corrupt(exc: BaseException) -> bool:
    """Whether a LanceDB failure means files of the database are missing or damaged (what `cortex doctor` fixes)."""
    text = str(exc)
    return isinstance(exc, (RuntimeError, OSError, ValueError)) and any(m in text for m in _CORRUPTION) and (
        "lance" in text.lower() or "was not found" in text)


def corrupt_error(uri: str, exc: BaseException) -> CortexError:
    return CortexError(f"database at {uri} is damaged ({_first_line(exc)[:160]}); run `cortex doctor` to check and repair it")


def _make_private(path: Path) -> None:
    """The database directory, and the `.cortex` directory around it, readable by their owner only (see
    core/store/private_dir.py), before LanceDB writes anything into them."""
    for directory in (path.parent, path) if path.parent.name == CORTEX_DIRNAME else (path,):
        try:
            make_private(directory)
        except PermissionError:  # a database someone else owns, opened to read: theirs to protect
            pass


class TableMissing(Exception):
    """A table that does not exist (yet)."""


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def sql_list(values) -> str:
    return "[" + ", ".join(quote(v) for v in values) + "]"


def in_filter(column: str, values: Sequence[str], batch: int = 500) -> str | None:
    """`column IN (...)` for many values: `batch` values per list, ORed into one filter so one read serves them
    all. None without values."""
    parts = [f"{column} IN ({', '.join(quote(v) for v in values[lo:lo + batch])})" for lo in range(0, len(values), batch)]
    return " OR ".join(f"({p})" for p in parts) or None


def symbols_filter(names: Sequence[str], ignore_case: bool = False, batch: int = 500) -> str | None:
    """A filter on a `symbols` list column: rows listing a symbol whose last part is one of `names` (identifiers;
    `$` allowed), matched by regular expressions inside LanceDB, `batch` names each, ORed into one filter so a row
    comes back once. None without names."""
    parts = []
    for lo in range(0, len(names), batch):
        alternatives = "|".join(re.escape(n) for n in names[lo:lo + batch])
        flags = ", 'i'" if ignore_case else ""
        parts.append(f"regexp_like(array_to_string(symbols, ' '), {quote(f'(^|[ .])({alternatives})( |$)')}{flags})")
    return " OR ".join(f"({p})" for p in parts) or None


_UNREACHABLE = ("error sending request", "RetryError", "timed out", "Timeout", "Connection refused",
                "connection error", "dns error", "Failed to connect", "Failed to resolve region")
"""How object_store words a request that never got an answer (the store is down, unreachable or too slow; an S3
bucket whose region could not be looked up: no network, or no such bucket)."""


def is_unreachable(exc: BaseException) -> bool:
    """Whether a LanceDB failure on a remote store means the store did not answer (nothing was decided there)."""
    if isinstance(exc, CortexError):
        return str(exc).startswith(("store ", "team store ")) and "is unreachable" in str(exc)
    return isinstance(exc, (RuntimeError, OSError, ValueError)) and any(m in str(exc) for m in _UNREACHABLE)


def unreachable_error(uri: str, exc: BaseException) -> CortexError:
    """One line naming the store and the kind of failure; the library's message (request URLs, retry details) is
    left out, so nothing from the environment can leak into it."""
    text = str(exc).lower()
    kind = ("connection refused" if "connection refused" in text else
            "timed out" if "timed out" in text or "operation timed" in text else "no answer")
    return CortexError(f"store {uri} is unreachable ({kind}); check the network or the endpoint setting")


@dataclass(frozen=True)
class RemoteOptions:
    """How to reach an object-storage database (ignored for local paths)."""

    endpoint: str | None = None
    timeout_s: float = 10.0
    consistency_s: float = 2.0
    """Reads may be this stale; 0 would check the store for a new version on every read (a round trip each)."""


class Database:
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
        self.last_commit = 0.0
        """`time.monotonic()` of this process's last commit: a background compactor waits for writes to pause."""
        if not self.remote:
            path = Path(uri)
            if not path.exists():
                if not create:
                    raise CortexError(f"no cortex database at {uri} (run `cortex init` or `cortex remember` first)")
                try:
                    path.mkdir(mode=0o700, parents=True, exist_ok=True)
                except OSError as exc:
                    raise UnusableLocation(f"cannot create database directory {uri}: {exc.strerror}") from exc
            elif not path.is_dir():
                raise UnusableLocation(f"database path {uri} is not a directory")
            _make_private(path)
        import lancedb

        if self.remote:
            self._options = remote_storage_options(uri, remote.endpoint, remote.timeout_s)
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
                        # Listed but without a version, and no creator holds the lock: its manifests are gone.
                        # Creating it again would silently start it empty over the old data files.
                        raise corrupt_error(self.uri, missing.__cause__ or missing) from None
                    table = self.commit(lambda: self.conn.create_table(name, schema=schema, exist_ok=True))
        extra = missing_fields(table.schema, schema)
        if extra:
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
        import lancedb

        return lancedb.connect(self.uri, storage_options=self._options)

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
            if "was not found" in str(exc):
                raise TableMissing(name) from exc
            raise corrupt_error(self.uri, exc) from exc
        except Exception as exc:
            if looks_corrupt(exc):
                raise corrupt_error(self.uri, exc) from exc
            raise

    def _check_version(self, create: bool) -> None:
        if not create:
            try:
                meta = self._open_existing("meta")
            except TableMissing:
                if not self._creation_interrupted():
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
            import shutil

            for name in self.table_names():
                shutil.rmtree(Path(self.uri) / f"{name}.lance", ignore_errors=True)

    def finish_migration(self) -> None:
        """Record the current schema version once every table has been opened (and so migrated)."""
        if self.migrated_from is None:
            return
        self.set_meta("schema_version", str(SCHEMA_VERSION))
        self.schema_version, self.migrated_from = SCHEMA_VERSION, None

    def write_lock(self) -> contextlib.AbstractContextManager[None]:
        """Serialise read-modify-write sequences across processes (CLI, dashboard, watcher, MCP server).
        LanceDB resolves conflicting commits itself, but an upsert reads before it writes and must not interleave."""
        return self.lock(_LOCK_NAME)

    @contextlib.contextmanager
    def lock(self, name: str, timeout: float | None = None) -> Iterator[None]:
        """An exclusive lock across processes, by name (a file in the database directory); none for remote stores.
        Not reentrant: a holder of one lock may take another, never the same one twice. `filelock` takes an OS
        lock (flock, or LockFileEx on Windows) that the kernel drops when its holder dies, so a killed process
        never leaves the database locked. `timeout`: seconds to wait, the database's `lock_timeout` when None,
        for as long as it takes when negative."""
        if self.remote:
            yield
            return
        import filelock

        wait = self.lock_timeout if timeout is None else timeout
        lock = filelock.FileLock(Path(self.uri) / name, timeout=wait, thread_local=False)
        try:
            lock.acquire(poll_interval=0.02)
        except filelock.Timeout:
            raise DatabaseLocked(
                f"database {self.uri} is locked by another cortex process (waited {wait:.0f}s)"
            ) from None
        except OSError as exc:
            raise CortexError(f"cannot write to database {self.uri}: {exc.strerror or exc}") from exc
        try:
            yield
        finally:
            lock.release()

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
            text = str(exc).lower()
            if "permission denied" in text or "read-only" in text:
                raise CortexError(f"cannot write to database {self.uri}: permission denied") from exc
            raise

    def commit(self, fn: Callable[[], T], idempotent: bool = True) -> T:
        """Make one LanceDB commit: every change to a table goes through here. A commit that lost a race to
        another writer wrote nothing, so it is tried again, but only when `idempotent` (a merge on a key, a delete
        or update by filter, an index, a compaction): a plain append is not repeated, since an error that merely
        looks like a conflict could follow a commit that landed."""
        for attempt in range(_ATTEMPTS):
            try:
                result = fn()
                break
            except Exception as exc:
                if not idempotent or attempt == _ATTEMPTS - 1 or not is_commit_conflict(exc):
                    raise
                # Jittered, so writers that lost to each other do not retry in step and collide again.
                time.sleep(0.05 * 2**attempt * (0.5 + random.random()))
        self.last_commit = time.monotonic()
        COMMITS.committed()
        return result

    # --- the table operations, one commit each -----------------------------------------------------------------

    def add(self, table, rows, idempotent: bool = False) -> None:
        """An append; `idempotent` only where a row stored twice means the same as once (a cache)."""
        self.commit(lambda: table.add(rows), idempotent=idempotent)

    def delete(self, table, where: str) -> None:
        self.commit(lambda: table.delete(where))

    def update(self, table, where: str, values: dict) -> None:
        self.commit(lambda: table.update(where=where, values=values))

    def upsert(self, table, on: str | Sequence[str], rows, insert: bool = True, delete_where: str | None = None,
               update: bool = True) -> None:
        """One merge on a key: matching rows are updated (unless `update` is False), others inserted (unless
        `insert` is False), and with `delete_where` the table's rows matching it that the source lacks are deleted,
        all in a single commit."""
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

    @staticmethod
    def note_written() -> None:
        """A write path's only part in compaction: it wakes a background compactor, if this process runs one (no
        I/O). Compacting inline made a `remember` on a 1M-row store wait ~10 minutes for a rebuilt vector index."""
        WRITES_NOTED.note()

    def compact_due(self) -> list[str]:
        """Compact every table of this database opened here that is due (see `compact_if_due`), one at a time and
        one process at a time; returns the names compacted. Run by a background compactor when writes have
        paused, and by `cortex index`; never by a write itself. Not under the write lock: a compaction can take
        minutes, and a write that meets it retries its commit (see `commit`) or, as an append, does not conflict."""
        with self._compaction_lock:
            tables = list(self._tables.values())
        done = []
        for table in tables:
            if self.compact_if_due(table):
                done.append(table.name)
        return done

    def compact_if_due(self, table) -> bool:
        """Compact when enough versions older than `compact_keep` have piled up, or when the table has grown past
        twice its size after the last compaction; but never twice within `compact_keep`. A compaction rewrites the
        table, and the copy it replaces must outlive `compact_keep` (a reader in another process may still be on
        it); compacting more often than that kept a copy per compaction, and sustained writes grew the database
        several times over. So the disk holds at most the live copy and the one before it, plus recent writes.
        Another process already compacting: left to it."""
        if self.compact_every <= 0:
            return False
        now = datetime.now()
        last = self._last_compaction(table)
        if last is not None and now - last[0] < self.compact_keep:
            return False
        try:
            old = [v for v in table.list_versions() if v["timestamp"] <= now - self.compact_keep]
            if len(old) < self.compact_every and not (last is not None and (self._table_bytes(table) or 0) > 2 * last[1]):
                return False
            with self.try_lock(_COMPACTION_LOCK) as mine:
                if not mine:
                    return False
                self.compact(table, self.compact_keep)
        except Exception as exc:
            # On a shared remote store another machine may be compacting too: its cleanup removes old versions
            # while this one lists or rewrites them. That machine has done the compaction; this one need not.
            if self.remote and "Not found" in str(exc):
                return False
            raise
        return True

    @contextlib.contextmanager
    def try_lock(self, name: str) -> Iterator[bool]:
        """The named lock if no other process holds it now (yields True), else yields False at once."""
        if self.remote:
            yield True
            return
        import filelock

        lock = filelock.FileLock(Path(self.uri) / name, timeout=0, thread_local=False)
        try:
            lock.acquire(timeout=0)
        except filelock.Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _marker(self, table) -> Path | None:
        return None if self.remote else Path(self.uri) / _COMPACTION_DIR / f"{table.name}.json"

    def _last_compaction(self, table) -> tuple[datetime, int] | None:
        """When the table was last compacted and its size just after, as recorded beside the database (local only)."""
        marker = self._marker(table)
        try:
            data = json.loads(marker.read_text(encoding="utf-8")) if marker else None
            return (datetime.fromisoformat(data["at"]), int(data["bytes"])) if data else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _table_bytes(self, table) -> int | None:
        if self.remote:
            return None
        folder = Path(self.uri) / f"{table.name}.lance"
        return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())

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
            table.prewarm_index("words_idx")
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

    def get_meta(self, key: str) -> str | None:
        rows = self.conn.open_table("meta").search().where(f"key = {quote(key)}").limit(1).to_list()
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        meta = self.conn.open_table("meta")
        self.write(lambda: self.upsert(meta, "key", [{"key": key, "value": value}]))

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
                self.upsert(table, "id", data, insert=False)
            for index in table.list_indices():
                if index.index_type == "FTS" and index.columns != [column]:
                    self.commit(lambda name=index.name: table.drop_index(name))

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
                    built |= self._build_index(lambda: table.create_index(column, config=config()))
        # A table with no vectors (the code index's `files`) gets scalar indexes only.
        if "vector" in table.schema.names and ("vector",) not in have and table.count_rows() >= ann_min_rows:
            from lancedb.index import HnswSq

            # Few partitions: each holds its own HNSW graph, and searching many small graphs cost more here
            # (50k rows: 6.7 ms p50 with 2 partitions, 9.7 ms with 12; brute force 106 ms).
            partitions = max(1, table.count_rows() // 50_000)
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

    def compact(self, table, keep: timedelta = timedelta(0)) -> None:
        import warnings

        def apply():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                table.optimize(cleanup_older_than=keep)

        self.commit(apply)
        marker = self._marker(table)
        if marker is not None:
            marker.parent.mkdir(exist_ok=True)
            stamp = {"at": datetime.now().isoformat(), "bytes": self._table_bytes(table)}
            marker.write_text(json.dumps(stamp), encoding="utf-8")

    def disk_bytes(self) -> int | None:
        if self.remote:
            return None
        return sum(p.stat().st_size for p in Path(self.uri).rglob("*") if p.is_file())


def scan(table, where: str | None = None, columns: list[str] | None = None) -> list[dict]:
    """Every row matching `where`: LanceDB's search() without a vector stops at 10 rows unless told `limit(None)`
    (which also spares a `count_rows()` round trip per read)."""
    query = table.search()
    if columns:
        query = query.select(columns)
    if where:
        query = query.where(where)
    return query.limit(None).to_list()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
