"""Every readable row of a table whose newest version cannot be read whole, kept.

A damaged data file (truncated, overwritten) makes every read of the versions that use it fail, though the other
files of those versions still read. Going back to the newest version that reads whole would drop every row written
after the damaged file, so the rows of the newest version are read again in pieces: `take_offsets` over halves,
quarters, ... down to single rows, which isolates the rows in damaged files. The table goes back to the newest
whole version, and the newest version's readable rows are merged on top, by key (the newest copy of a row wins).
A row that cannot be read is lost; its key is named when its key column alone still reads.

A row deleted after the version gone back to comes back with it: nothing is dropped that might be wanted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

KEYS: dict[str, tuple[str, ...]] = {
    "memories": ("id",),
    "meta": ("key",),
    "agent_roadmap": ("seq",),
    "agent_branches": ("name",),
    "agent_steps": ("branch", "n"),
    "agent_commits": ("id",),
}
"""The columns that identify a row of each table the doctor restores (what a merge matches on)."""


_PIECE = 8192
"""Rows asked for in one take before any halving (a take of a whole large table is one large request)."""


@dataclass(frozen=True)
class Readable:
    rows: pa.Table
    lost: int
    """Rows of the version that could not be read."""
    lost_keys: tuple[str, ...]
    """The keys of those whose key columns still read."""


def lance_failure(exc: BaseException) -> bool:
    """A failure of Lance reading damaged files: its errors, and a Rust panic (pyo3's PanicException derives from
    BaseException, so `except Exception` lets it through)."""
    return isinstance(exc, Exception) or type(exc).__name__ == "PanicException"


def _take(table, offsets: list[int], columns: list[str] | None = None) -> pa.Table | None:
    try:
        query = table.take_offsets(offsets)
        if columns:
            query = query.select(columns)
        return query.to_arrow()
    except BaseException as exc:  # noqa: BLE001 - a panic included (see lance_failure)
        if not lance_failure(exc):
            raise
        return None


def readable_rows(table, count: int, keys: tuple[str, ...]) -> Readable:
    """The rows of the table's checked-out version that read, found by halving the ranges that do not."""
    pieces: list[pa.Table] = []
    unreadable: list[int] = []
    pending = [(lo, min(lo + _PIECE, count)) for lo in range(0, count, _PIECE)][::-1]
    while pending:
        lo, hi = pending.pop()
        got = _take(table, list(range(lo, hi)))
        if got is not None and got.num_rows == hi - lo:
            pieces.append(got)
        elif hi - lo == 1:
            unreadable.append(lo)
        else:
            mid = (lo + hi) // 2
            pending += [(mid, hi), (lo, mid)]
    named = []
    for offset in unreadable:
        key = _take(table, [offset], list(keys))
        if key is not None and key.num_rows == 1:
            named.append("/".join(str(key[k][0].as_py()) for k in keys))
    rows = pa.concat_tables(pieces) if pieces else table.schema.empty_table()
    return Readable(rows.select(table.schema.names), len(unreadable), tuple(named))


@dataclass(frozen=True)
class Salvaged:
    version: int
    """The version gone back to (the newest that reads whole)."""
    newest: int
    kept: int
    """Rows in the table afterwards."""
    added: int
    """Rows of the newest version that the version gone back to did not hold (more may have been updated)."""
    lost: int
    lost_keys: tuple[str, ...]

    indexed: tuple[str, ...] = ()
    """Keys of lost rows named by the key's index (their own key column did not read)."""

    def said(self, name: str) -> str:
        return (f"{name}: restored version {self.version} and {self.added} readable row(s) of version {self.newest} "
                f"({self.kept} rows); {lost_said(self.lost, self.lost_keys, self.indexed, KEYS.get(name, ('key',)))}")


_NAMED = 50
"""Keys listed in a line at most."""


def lost_said(lost: int | None, keys: tuple[str, ...], indexed: tuple[str, ...], key: tuple[str, ...]) -> str:
    """What was lost: the rows named by their own key column, those named by the key's index, and how many no
    source names (`lost` None: how many is unknown, the rows of files that did not read)."""
    column = "/".join(key)
    if lost is None:
        if not indexed:
            return f"their rows are lost; how many, and which, is unknown (no index on {column} holds them)"
        return (f"their rows are lost, {len(indexed)} of them named by the index on {column} (their own {column} "
                f"did not read; a row written after the index was last brought up to date is not in it): "
                f"{listed(indexed)}")
    if lost == 0:
        return "nothing lost"
    if not keys and not indexed:
        return f"lost {lost} row(s) (in damaged data files; their keys could not be read)"
    named = [listed(keys)] if keys else []
    if indexed:
        named.append(f"{listed(indexed)} (named by the index on {column}: their own {column} did not read)")
    rest = lost - len(keys) - len(indexed)
    return f"lost {lost} row(s): {'; '.join(named)}" + (f"; and {rest} whose key could not be read" if rest > 0 else "")


def listed(keys: tuple[str, ...]) -> str:
    more = len(keys) - _NAMED
    return ", ".join(keys[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def salvage(table, name: str, version: int, newest: int, commit: Callable,
            indexed: Callable[[pa.Table, int], tuple[str, ...]]) -> Salvaged:
    """Go back to `version` (reads whole) and merge the readable rows of `newest` on top, in two commits made
    through `commit` (the database's). `indexed(kept rows, unnamed)` names lost rows from the key's index."""
    keys = KEYS.get(name) or tuple(table.schema.names)
    table.checkout(newest)
    count = table.count_rows()
    found = readable_rows(table, count, keys)
    table.checkout(version)
    before = table.to_arrow()
    table.checkout_latest()
    commit(lambda: table.restore(version))
    newer = _not_in(found.rows, before, keys) if name not in KEYS else found.rows
    added = _not_in(newer, before, keys).num_rows if name in KEYS else newer.num_rows
    if newer.num_rows:
        if name in KEYS:
            commit(lambda: table.merge_insert(list(keys)).when_matched_update_all()
                   .when_not_matched_insert_all().execute(newer))
        else:
            commit(lambda: table.add(newer))
    unnamed = found.lost - len(found.lost_keys)
    named = indexed(table.to_arrow(), unnamed) if unnamed else ()
    return Salvaged(version, newest, table.count_rows(), added, found.lost, found.lost_keys, named)


def _not_in(rows: pa.Table, before: pa.Table, columns: tuple[str, ...]) -> pa.Table:
    """Rows of a table without a key that the version gone back to does not already hold (compared whole)."""
    seen = {repr(r) for r in before.select(list(columns)).to_pylist()}
    mask = [repr(r) not in seen for r in rows.select(list(columns)).to_pylist()]
    return rows.filter(pa.array(mask, type=pa.bool_()))
