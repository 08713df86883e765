"""Writes no version of a table holds: a commit whose manifest was lost after a later write took its number.

When a table's newest manifest is deleted, Lance opens the version before it and the next write commits the lost
version's number again. Nothing then names a version beyond the manifests, so the lost write is found by what it
left: its transaction file, named by no manifest (each manifest names the transaction that made it), and data
files of its own that no manifest names either. A commit still under way writes the same two just before its
manifest, so only files older than a minute count. A transaction made on a version older than every manifest
(its version removed by a compaction's cleanup) is not a lost write.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

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
