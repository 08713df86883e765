"""What the index holds of each path, as a freshness look compares it with the work tree: a file's stat where all
its chunks are present, the paths skipped on purpose. Read from three tables; the whole-tree view is kept per
version of those tables, since every search through a resident server without a watcher looks at freshness and
the three scans were about two fifths of a warm search's CPU (starlette: 23 of 54 ms)."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from ..store.sql import in_filter, scan


@dataclass(frozen=True)
class IndexedPaths:
    stat: dict[str, tuple[int, int] | None]
    """Each path with a file row -> its (mtime_ns, size) as indexed; None where the chunks table does not hold all
    of its chunks (a crash between writes): such a file counts as stale."""
    skipped: frozenset[str]
    """Paths the index left out on purpose (binary, secret, too large): not new while they stay out."""

    @property
    def complete(self) -> int:
        return sum(stat is not None for stat in self.stat.values())


def read_indexed(files, chunks, skipped, scope: set[str] | None) -> IndexedPaths:
    """The rows of `scope`'s paths (every path when None) in the three tables."""
    where = in_filter("path", sorted(scope)) if scope is not None else None
    present = chunk_counts(chunks, where)
    stat = {r["path"]: ((r["mtime_ns"], r["size"]) if present.get(r["path"], 0) == r["chunks"] else None)
            for r in scan(files, where, ["path", "mtime_ns", "size", "chunks"])}
    return IndexedPaths(stat, frozenset(r["path"] for r in scan(skipped, where, ["path"])))


def chunk_counts(chunks, where: str | None) -> dict[str, int]:
    """How many chunks each path matching `where` has in the chunks table."""
    counts: dict[str, int] = {}
    for row in scan(chunks, where, ["path"]):
        counts[row["path"]] = counts.get(row["path"], 0) + 1
    return counts


class IndexedPathsCache:
    """The whole-tree `IndexedPaths`, read again only when one of the three tables has a new version (any
    process's write, a compaction)."""

    def __init__(self, files, chunks, skipped) -> None:
        self._tables = (files, chunks, skipped)
        self._lock = threading.Lock()
        self._kept: tuple[tuple[int, ...], IndexedPaths] | None = None

    def versions(self) -> tuple[int, ...]:
        return tuple(table.version for table in self._tables)

    def get(self, versions: tuple[int, ...]) -> IndexedPaths:
        with self._lock:
            kept = self._kept
        if kept is not None and kept[0] == versions:
            return kept[1]
        fresh = read_indexed(*self._tables, None)
        with self._lock:
            self._kept = (versions, fresh)
        return fresh
