"""Compaction off the write path: a background thread in the long-lived processes (resident server, watcher, MCP
server, dashboard) compacts due tables once writes have paused.

Writes only note that a table was written (`Database.note_written`); a compaction of a large table rewrites it
and can take minutes, so no `remember` or index batch may wait for one (a small table's takes a second or so, and
writes wait for it: see `QUICK_BYTES`). The thread wakes when a write is noted,
waits until this process has made no commit for `idle_s`, then compacts whatever is due, one table at a time. It
also looks every `period_s` without a note, for writes other processes made (a one-shot `cortex remember`).
Writes that never pause (several agents remembering while the watcher re-indexes) do not hold compaction off for
longer than `max_wait_s`: waiting for a pause that never came let `.cortex` grow to 3.1 times its compacted size in
five minutes, where compacting alongside the writes keeps it under twice (`cortex bench disk`). Writes a process
holds back for a batch (the resident server's embedding-cache vectors) are committed before each compaction. Once a
table has had no write for `compact_keep`, the thread settles it to what `cortex gc` leaves (`settle`): a server left
up after a burst of work holds its data and little more.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime, timedelta
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import GoneUnderCompaction
from .commits import WRITES_NOTED
from .failures import shared_compaction

T = TypeVar("T")

COMPACT_KEEP = timedelta(seconds=15)
"""Versions younger than this survive compaction, so a reader in another process still on one of them does not
fail (a query re-reads the newest version when it starts and takes well under a second). Every commit of a small
write adds a manifest listing every fragment, so the versions kept are what grows under sustained writes: with a
minute kept, three writers and the watcher drove `.cortex` to 3.5 times its compacted size in five minutes; with
15 s, 1.95 times at the peak (`cortex bench disk`). That "compacted size" was one optimize's, which leaves the
version before its index update; against a fresh database of the same data the peak was 4.2-5.7 times, and after
`cortex gc` 1.24-1.28 times (docs/benchmarks-history.md, 2026-11-29 third). With no compaction losing its race
(`QUICK_BYTES`) and the cache's vectors in batches, 2.5-3.0 times at the peak and 1.01-1.03 after `gc` (2026-11-29
fifth): what remains is this keep's copies and versions."""
_COMPACTION_DIR = ".compaction"
_COMPACTION_LOCK = ".compaction.lock"
UNINDEXED_ROWS = 500
UNINDEXED_SHARE = 0.1
"""A table is compacted at the end of a write pass (`fold_unindexed`) once this many rows, and this share of its
indexed rows, are outside its full-text index; fewer cost a search little (a scan of a few hundred rows)."""
QUICK_BYTES = 32 << 20
"""A local table up to this size on disk is compacted holding the write lock (a second or so of rewriting for a
flask-sized code index). Compacting beside writes made the watcher's re-index of an edited file (a delete and an
update of the chunks a compaction was rewriting) win the race again and again: each lost compaction left its whole
rewritten copy behind, unreferenced and kept by LanceDB for 7 days, 11-15 MB of a flask clone's 24 MB `chunks`
after five minutes of an edit a second (`cortex bench disk`). Holding the lock, a compaction never loses, and it may
remove such files too (`delete_unverified`: no write can be between writing its files and committing them). A
larger table would hold writes off too long: it is compacted beside them, as before, and `cortex gc` removes what
its lost races left."""
SETTLE_PASSES = 3
"""Optimizes a table quiet for `compact_keep` gets before it is left alone (see `settle`): the first compacts and
removes the versions before it, but keeps the version it replaced and the one before its index update (younger than
`compact_keep`); the second and third, each `compact_keep` later, remove those, rewriting nothing. A table that
still holds more than one version after them (a reader-held or remote quirk) is not optimized again until written."""
SETTLE_LOOK_S = 5.0
"""How often the compactor looks while some table is still to settle (otherwise every `period_s`, or at a write)."""
IDLE_S = 2.0
PERIOD_S = 60.0
MAX_WAIT_S = 8.0
"""Under writes that never pause, the compactor looks this often: a compaction is due at most every `compact_keep`,
and what it replaced is removed at the first look after that; with 20 s between looks, a table held its replaced
copy for up to 35 s (`cortex bench disk`: at the peak 2.98x a fresh database with 20 s in one run, 2.52-2.60x with
8 s in two)."""


class CompactionPolicy:
    """When a table of a Database is compacted, and the compaction itself: a part of `Database` (which inherits it)
    kept here beside the thread that runs it. Uses the database's `uri`, `remote`, `commit`, `try_lock`,
    `compact_every`, `compact_keep` and the tables it opened (`_tables`, under `_compaction_lock`)."""

    # What it uses of `Database`, declared for the type checker; `Database` sets and defines them.
    uri: str
    remote: bool
    compact_every: int
    compact_keep: timedelta
    last_commit: float
    read_only: bool
    _tables: dict[str, Any]
    _compaction_lock: threading.Lock
    _held_back: list[Callable[[], object]]
    conn: Any
    if TYPE_CHECKING:
        def commit(self, fn: Callable[[], T], idempotent: bool = True) -> T: ...

        def try_lock(self, name: str) -> AbstractContextManager[bool]: ...

        def lock(self, name: str, timeout: float | None = None) -> AbstractContextManager[None]: ...

        def write_lock(self) -> AbstractContextManager[None]: ...

        def holds_write_lock(self) -> bool: ...

        def table_names(self) -> set[str]: ...

    @staticmethod
    def note_written() -> None:
        """A write path's only part in compaction: it wakes a background compactor, if this process runs one (no
        I/O). Compacting inline made a `remember` on a 1M-row store wait ~10 minutes for a rebuilt vector index."""
        WRITES_NOTED.note()

    def hold_back(self, flush: Callable[[], object]) -> None:
        """Register the flush of writes this process holds back for a batch (the vector cache's in a resident
        server): run before every compaction, so a table is compacted with what is due in it, and when the
        process lets go of the database (`flush_held`)."""
        with self._compaction_lock:
            self._held_back.append(flush)

    def flush_held(self) -> None:
        """Commit every write held back for a batch, now."""
        with self._compaction_lock:
            flushes = list(self._held_back)
        for flush in flushes:
            flush()

    def compact_due(self) -> list[str]:
        """Compact every table of this database opened here that is due (see `compact_if_due`), one at a time and
        one process at a time; returns the names compacted. Run by a background compactor when writes have
        paused, and by `cortex index`; never by a write itself. Under the write lock only for a table small enough
        to rewrite quickly (`QUICK_BYTES`): a compaction of a large one can take minutes, and a write that meets it
        retries its commit (see `commit`) or, as an append, does not conflict."""
        self.flush_held()
        done = []
        for table in self.every_table():
            if self.compact_if_due(table):
                done.append(table.name)
        return done

    def settle(self) -> tuple[list[str], bool]:
        """Bring every local table that has had no write for `compact_keep` to what `cortex gc` leaves: one version,
        no replaced data file or index folder. Returns the tables optimized, and whether any is still to settle
        (the compactor looks again in `SETTLE_LOOK_S`). `compact_if_due` waits for `compact_every` old versions, and
        what the last compaction under writes replaced, with the versions after it, stayed until one was due: 90 s
        after five minutes of writes stopped, `.cortex` was 2.16 times a fresh database of the same data, 1.01 after
        `gc` (`cortex bench disk`). Never within `compact_keep` of a table's last write or compaction, so a reader
        in another process keeps its version; one compactor at a time (`_COMPACTION_LOCK`), and a small table under
        the write lock (`QUICK_BYTES`). At most `SETTLE_PASSES` optimizes per quiet spell, each cheap once
        compacted."""
        if self.remote or self.read_only or self.compact_every <= 0:
            return [], False
        done, pending = [], False
        for table in self.every_table():
            # The folder first (a stat and a listing): under writes every table is still to settle, and reading
            # each one's versions at every look would double what the compactor reads.
            manifests = self._table_folder(table.name) / "_versions"
            try:
                written = datetime.fromtimestamp(manifests.stat().st_mtime)
                several = len(list(islice(manifests.glob("*.manifest"), 2))) > 1
            except OSError:  # a table another process is creating or replacing: the next look sees it
                pending = True
                continue
            if not several:
                continue
            now, last = datetime.now(), self._last_compaction(table)
            if now - written < self.compact_keep or (last is not None and now - last[0] < self.compact_keep):
                pending = True  # written (or compacted) within `compact_keep`: a reader may be on a recent version
                continue
            try:
                newest = max(table.list_versions(), key=lambda v: v["version"])
            except Exception:  # noqa: BLE001  (a table another process is replacing: the next look sees it)
                pending = True
                continue
            marker = self._marker(table)
            stamp = (self._marker_data(marker) if marker else None) or {}
            passes = int(stamp.get("settles", 0)) if stamp.get("version") == newest["version"] else 0
            if passes >= SETTLE_PASSES:
                continue
            pending = True
            try:
                with self.try_lock(_COMPACTION_LOCK) as mine:
                    if not mine:
                        continue
                    self._optimize(table, self.compact_keep, cleaned=True, settles=passes + 1)
            except GoneUnderCompaction:
                continue
            done.append(table.name)
        return done, pending

    def every_table(self) -> list:
        """Every table of the database: the ones opened here and the ones only other processes write. The code
        index's tables are written by index child processes and the watcher, so a compactor that looked only at its
        own tables never compacted them (`chunks.lance` kept 27 versions on a fresh flask-sized index)."""
        with self._compaction_lock:
            tables = dict(self._tables)
        if self.remote:
            return list(tables.values())
        for name in sorted(self.table_names() - tables.keys()):
            try:
                tables[name] = self.conn.open_table(name)
            except Exception:  # noqa: BLE001  (a table another process is still creating has no version to compact)
                continue
        return list(tables.values())

    def compact_everything(self) -> int:
        """`cortex gc`: every table compacted now, every old version dropped, and the files no version references
        removed (a compaction that failed, or two that raced, left their rewritten data behind). Waits for a
        compaction running in another process to end (one compactor per database), and holds the write lock, so
        no write is between writing its files and committing them while unreferenced files are removed. Returns
        the versions removed."""
        removed = 0
        if self.read_only:
            return 0
        self.flush_held()
        with self.lock(_COMPACTION_LOCK, timeout=-1), self.write_lock():
            for table in self.every_table():
                before = len(table.list_versions())
                # LanceDB's optimize compacts, cleans up, then brings the indexes up to date in a version of their
                # own: the version before it, with the data files and index folders it replaced, survived one
                # `gc` (two versions left, memories' old indexes beside the new). The second pass only cleans.
                for _ in range(2):
                    self._optimize(table, timedelta(0), delete_unverified=not self.remote)
                removed += max(before - len(table.list_versions()), 0)
        return removed

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
        # On a shared remote store another machine may be compacting too: its cleanup removes old versions while
        # this one lists or rewrites them. That machine has done the compaction; this one need not.
        try:
            with shared_compaction(self.uri) if self.remote else nullcontext():
                old = [v for v in table.list_versions() if v["timestamp"] <= now - self.compact_keep]
                if len(old) < self.compact_every and not (last is not None and (self._table_bytes(table) or 0) > 2 * last[1]):
                    self._clean_up_after_compaction(table)
                    return False
                with self.try_lock(_COMPACTION_LOCK) as mine:
                    if not mine:
                        return False
                    self.compact(table, self.compact_keep)
        except GoneUnderCompaction:
            return False
        return True

    def fold_unindexed(self, table, index: str) -> bool:
        """Compact a table now when most of what a search reads through `index` is not in it: rows written since
        the index was built are scanned, not looked up. Small writes leave few such rows, and the background
        compaction folds them in; a pass that rewrote much of the table (a cut-format migration re-cutting every
        file with code, a checkout of another branch) left flask's questions 74 % slower at p95 until then, and a
        one-shot command never compacts. True when it compacted."""
        stats = table.index_stats(index)
        if stats is None:  # no such index yet: its first build covers every row
            return False
        if stats.num_unindexed_rows < max(UNINDEXED_ROWS, UNINDEXED_SHARE * stats.num_indexed_rows):
            return False
        with self.try_lock(_COMPACTION_LOCK) as mine:
            if mine:
                self.compact(table, self.compact_keep)
            return mine

    def compact_now(self, table) -> bool:
        """Compact a table at once, whatever its share of unindexed rows: a migration that rewrote rows (fewer
        than `UNINDEXED_ROWS` may be a large share of a small table) left them scanned beside the full-text index,
        where their words score apart from the indexed rows'. True when it compacted."""
        with self.try_lock(_COMPACTION_LOCK) as mine:
            if mine:
                self.compact(table, self.compact_keep)
            return mine

    def _clean_up_after_compaction(self, table) -> None:
        """Remove what the last compaction replaced once `compact_keep` has passed, without waiting for a
        compaction to be due. A compaction's own cleanup removes only what is older than `compact_keep` when it
        starts, so the copy it replaces, and the version before LanceDB brought the indexes up to date (with their
        old folders), stayed until the next compaction: on a table no longer written, until `cortex gc`."""
        marker = self._marker(table)
        if marker is None or self.read_only:
            return
        stamp = self._marker_data(marker)
        if not stamp or stamp.get("cleaned"):
            return
        with self.try_lock(_COMPACTION_LOCK) as mine:
            if mine:
                # An optimize, not a cleanup alone (that needs pylance, about 20 MB more in a long-lived process):
                # `compact_keep` has passed since the last one, so compacting again is allowed, and it rewrites only
                # the fragments written since.
                self._optimize(table, self.compact_keep, cleaned=True)

    @contextmanager
    def _writes_held_off(self, table) -> Iterator[bool]:
        """The write lock around a compaction of a small local table (see `QUICK_BYTES`); yields whether no write
        can be under way meanwhile (this thread holds the lock, taken here or by its caller: a write pass that
        folds its rows in, `cortex gc`)."""
        if self.remote or self.read_only:
            yield False
        elif self.holds_write_lock():
            yield True
        elif (self._table_bytes(table) or 0) <= QUICK_BYTES:
            with self.write_lock():
                yield True
        else:
            yield False

    @staticmethod
    def _marker_data(marker: Path) -> dict | None:
        try:
            data = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _marker(self, table) -> Path | None:
        return None if self.remote else Path(self.uri) / _COMPACTION_DIR / f"{table.name}.json"

    def _last_compaction(self, table) -> tuple[datetime, int] | None:
        """When the table was last compacted and its size just after, as recorded beside the database (local only)."""
        marker = self._marker(table)
        data = self._marker_data(marker) if marker else None
        try:
            return (datetime.fromisoformat(data["at"]), int(data["bytes"])) if data else None
        except (ValueError, KeyError, TypeError):
            return None

    def _table_folder(self, name: str) -> Path:
        """Where a local table lives: `<database>/<name>.lance`."""
        return Path(self.uri) / f"{name}.lance"

    def _table_bytes(self, table) -> int | None:
        if self.remote:
            return None
        return sum(p.stat().st_size for p in self._table_folder(table.name).rglob("*") if p.is_file())

    def compact(self, table, keep: timedelta = timedelta(0)) -> None:
        """Compact one table; the caller holds the compaction lock (one compactor per database across processes:
        the watcher's and the server's compactions raced, and one's cleanup removed a manifest the other was
        reading, `Not found: .../_versions/18446744073709551292.manifest`)."""
        self._optimize(table, keep)

    def _optimize(self, table, keep: timedelta, delete_unverified: bool = False, cleaned: bool = False,
                  settles: int = 0) -> None:
        """`cleaned`: this optimize removed what the last one replaced (no cleanup pass is owed after it);
        `settles`: the how-manieth optimize of a quiet table this is (see `settle`), recorded with the version it left."""
        with self._writes_held_off(table) as exclusive:
            def apply():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    table.optimize(cleanup_older_than=keep, delete_unverified=delete_unverified or exclusive)

            self.commit(apply)
        marker = self._marker(table)
        if marker is not None:
            marker.parent.mkdir(exist_ok=True)
            stamp = {"at": datetime.now().isoformat(), "bytes": self._table_bytes(table), "cleaned": cleaned,
                     "version": table.version, "settles": settles}
            marker.write_text(json.dumps(stamp), encoding="utf-8")


class Compactor:
    """One background thread compacting the databases `databases()` returns (re-read each turn: stores open
    lazily). Errors go to `on_error` and the thread carries on: a failed compaction is tried again later."""

    def __init__(self, databases: Callable[[], Sequence[CompactionPolicy]], on_error: Callable[[str], None] | None = None,
                 idle_s: float = IDLE_S, period_s: float = PERIOD_S, max_wait_s: float = MAX_WAIT_S,
                 settle_look_s: float = SETTLE_LOOK_S) -> None:
        self.databases = databases
        self.on_error = on_error
        self.idle_s = idle_s
        self.period_s = period_s
        self.max_wait_s = max_wait_s
        self.settle_look_s = settle_look_s
        self.compacted = 0
        """Compactions made so far (for tests and status lines)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Compactor:
        self._thread = threading.Thread(target=self._run, name="cortex-compact", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        WRITES_NOTED.wake()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        seen = -1  # the first turn looks at once: writes made before this compactor started may have left tables due
        unsettled = False
        while not self._stop.is_set():
            seen = WRITES_NOTED.wait(seen, self.settle_look_s if unsettled else self.period_s, self._stop)
            if self._stop.is_set():
                break
            self._wait_for_pause()
            unsettled = False
            for db in self.databases():
                if self._stop.is_set():
                    break
                try:
                    self.compacted += len(db.compact_due())
                    settled, more = db.settle()
                    self.compacted += len(settled)
                    unsettled = unsettled or more
                except Exception as exc:  # never take the host process down; the next turn tries again
                    if self.on_error:
                        self.on_error(f"compaction of {db.uri} failed: {str(exc).splitlines()[0][:200]}")

    def _wait_for_pause(self) -> None:
        """Until this process's writes pause for `idle_s`, or `max_wait_s` have passed without one (a compaction
        of a small table holds the writes off while it runs; a large one runs beside them: appends do not conflict
        with it, and other writes retry their commit)."""
        give_up = time.monotonic() + self.max_wait_s
        while not self._stop.is_set():
            now = time.monotonic()
            quiet = now - max((db.last_commit for db in self.databases()), default=0.0)
            if quiet >= self.idle_s or now >= give_up:
                return
            self._stop.wait(min(self.idle_s - quiet, give_up - now))
