"""Writes a table made that its manifests no longer hold, found from what those writes left on disk.

Lance opens a table at its newest manifest. When that manifest is deleted, the version before it opens without a
word, and two traces of the lost write remain: the version hint (`latest_version_hint.json`) or transactions made
on top of the newest manifest (`find_lost_writes`). When a later write then takes the lost version's number,
neither names anything beyond the manifests, and the lost write is found by its transaction file, named by no
manifest (each manifest names the transaction that made it), with data files of its own that no manifest names
either (`orphan_writes`). A commit still under way writes the same two just before its manifest, so only files
older than a minute count. A transaction made on a version older than every manifest (its version removed by a
compaction's cleanup) is not a lost write. `cortex doctor` reports both and sets their files aside.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .salvage import lance_failure, listed

SETTLED_S = 60.0
"""A transaction file younger than this may belong to a commit still under way in another process."""
_DATA_FILE = re.compile(rb"(?:[01]{24}[0-9a-f]{26}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\.lance")
"""A data file's name as Lance makes it (24 binary digits and 26 hex ones; a UUID in older tables)."""
_V2_MANIFEST = 1 << 63


@dataclass(frozen=True)
class OrphanWrite:
    transaction: Path
    read_version: int
    """The version it was made on top of."""
    data: tuple[Path, ...]
    written: datetime

    @property
    def size(self) -> int:
        return sum(p.stat().st_size for p in self.data)


def manifest_version(stem: str) -> int:
    """Lance names manifests `u64::MAX - version` (20 digits, newest sorts first) or, in older tables, `version`."""
    number = int(stem)
    return (2**64 - 1) - number if number >= _V2_MANIFEST else number


def read_version(transaction: Path) -> int:
    """The version a transaction was made on top of (`{read_version}-{uuid}.txn`)."""
    head = transaction.name.split("-", 1)[0]
    return int(head) if head.isdigit() else -1


def orphan_writes(folder: Path, settled_s: float = SETTLED_S) -> list[OrphanWrite]:
    """The settled writes of a local table (`<name>.lance`) that none of its manifests holds."""
    manifests = [p for p in (folder / "_versions").glob("*.manifest") if p.stem.isdigit()]
    if not manifests:
        return []
    named = b"\n".join(p.read_bytes() for p in manifests)
    oldest = min(manifest_version(p.stem) for p in manifests)
    settled = time.time() - settled_s
    found = []
    for transaction in sorted((folder / "_transactions").glob("*.txn")):
        stamp = transaction.stat().st_mtime
        if (transaction.name.encode() in named or read_version(transaction) < oldest or stamp > settled):
            continue
        data = tuple(folder / "data" / name.decode() for name in sorted(set(_DATA_FILE.findall(transaction.read_bytes())))
                     if name not in named and (folder / "data" / name.decode()).is_file())
        if data:
            found.append(OrphanWrite(transaction, read_version(transaction), data, datetime.fromtimestamp(stamp)))
    return found


@dataclass(frozen=True)
class LostWrites:
    """Commits a table made that its remaining manifests do not reach: the newest manifest was deleted (Lance then
    opens the one before it without a word), or the manifests are older than the table's data."""

    name: str
    version: int
    """The version the table opens at."""
    newest: int
    """The newest version this table is known to have reached (its version hint, or the transactions on top)."""
    transactions: tuple[Path, ...]
    data_files: int
    data_bytes: int
    written: datetime

    @property
    def problem(self) -> str:
        versions = f"version {self.newest}" if self.newest == self.version + 1 else \
            f"versions {self.version + 1}-{self.newest}"
        return (f"{versions}: newer than its newest manifest (version {self.version}), written "
                f"{self.written:%Y-%m-%d %H:%M:%S}: {self.data_files} data file(s), {size(self.data_bytes)}")




def find_lost_writes(uri: Path, name: str) -> LostWrites | None:
    """Writes of a local table that its manifests lost: its version hint names a version no manifest has, or
    settled transactions made on top of the newest manifest exist with data files newer than it (a commit under
    way writes its transaction and data just before its manifest)."""
    folder = uri / f"{name}.lance"
    manifests = {manifest_version(p.stem): p for p in (folder / "_versions").glob("*.manifest") if p.stem.isdigit()}
    if not manifests:
        return None
    version = max(manifests)
    since = manifests[version].stat().st_mtime
    hint = version_hint(folder)
    later = [p for p in (folder / "_transactions").glob("*.txn")
             if read_version(p) >= version and p.stat().st_mtime > since]
    data = [p.stat() for p in (folder / "data").glob("*.lance") if p.stat().st_mtime > since]
    if hint is None or hint <= version:
        # Nothing names a newer version: only settled transactions with data newer than the manifests say a
        # commit was made and its manifest lost (one under way writes them just before its manifest).
        settled = datetime.now().timestamp() - SETTLED_S
        later = [p for p in later if p.stat().st_mtime < settled]
        if not later or not any(d.st_mtime < settled for d in data):
            return None
    newest = max([hint or 0, *(read_version(p) + 1 for p in later)])
    if newest <= version:
        return None
    stamps = [p.stat().st_mtime for p in later] + [d.st_mtime for d in data]
    written = datetime.fromtimestamp(max(stamps)) if stamps else datetime.fromtimestamp(since)
    return LostWrites(name, version, newest, tuple(later), len(data), sum(d.st_size for d in data), written)


def acknowledge_lost(uri: Path, aside_root: Path, lost: LostWrites, rows: int | None) -> str:
    """Say what was lost, and make the table consistent with what it has: its transactions beyond the manifests
    go under `.doctor/` (kept for a manual look), and the version hint no longer names a version that is gone.
    The data files nothing references are removed by the next compaction."""
    folder = uri / f"{lost.name}.lance"
    aside = aside_root / lost.name / "_transactions"
    aside.mkdir(parents=True, exist_ok=True)
    for path in lost.transactions:
        shutil.move(str(path), aside / path.name)
    (folder / "_versions" / "latest_version_hint.json").unlink(missing_ok=True)
    what = f"version {lost.newest}" if lost.newest == lost.version + 1 else f"versions {lost.version + 1}-{lost.newest}"
    return (f"{lost.name}: the write(s) of {what} (made {lost.written:%Y-%m-%d %H:%M:%S}) are lost: their manifest is "
            f"missing; the table reads as version {lost.version} ({rows} rows); {len(lost.transactions)} "
            f"transaction file(s) set aside in {aside}")


def orphans_problem(found: list[OrphanWrite]) -> str:
    when = ", ".join(f"{o.written:%Y-%m-%d %H:%M:%S} on version {o.read_version}" for o in found[:5])
    return (f"{len(found)} write(s) in no version (made {when}; a lost manifest whose number a later write took, "
            f"or a commit that never finished): {sum(len(o.data) for o in found)} data file(s), "
            f"{size(sum(o.size for o in found))}")


def set_orphans_aside(aside_root: Path, name: str, found: list[OrphanWrite], key: tuple[str, ...] = ()) -> str:
    """The lost writes' transactions and data files under `.doctor/` (their rows for a manual look: the next
    compaction would remove data files no version names), and the rows they held named by `key`."""
    named = _keys_in(tuple(p for o in found for p in o.data), key)
    aside = aside_root / name
    for folder, paths in (("_transactions", [o.transaction for o in found]),
                          ("data", [p for o in found for p in o.data])):
        (aside / folder).mkdir(parents=True, exist_ok=True)
        for path in paths:
            shutil.move(str(path), aside / folder / path.name)
    rows = f"; the rows they held ({'/'.join(key)}): {listed(named)}" if named else ""
    return (f"{name}: {len(found)} write(s) in no version are lost (their manifest is missing){rows}; their "
            f"transaction and data files were set aside in {aside}")


def _keys_in(paths: tuple[Path, ...], key: tuple[str, ...]) -> tuple[str, ...]:
    """The keys of the rows in data files no manifest names, read from the files themselves (each is a Lance file
    with its own schema); a file that does not read, or holds only columns added later, names nothing."""
    from lance.file import LanceFileReader

    found: set[str] = set()
    for path in paths if key else ():
        try:
            rows = LanceFileReader(str(path)).read_all().to_table()
        except BaseException as exc:  # noqa: BLE001 - a Lance panic included (see lance_failure)
            if not lance_failure(exc):
                raise
            continue
        if set(key) <= set(rows.schema.names):
            found.update("#".join(str(v) for v in row.values()) for row in rows.select(list(key)).to_pylist())
    return tuple(sorted(found))


def version_hint(folder: Path) -> int | None:
    try:
        return int(json.loads((folder / "_versions" / "latest_version_hint.json").read_text())["version"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def size(n: int) -> str:
    return f"{n / 1024:.1f} kB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MB"
