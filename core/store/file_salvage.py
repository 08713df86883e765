"""The rows of a table read from its data files alone, when no manifest says which files make it (`_versions/`
deleted): LanceDB opens a table only through a manifest, but each data file is a Lance file with its own schema and
row count, which pylance's file reader reads whole.

The files are read in the order they were written, and a row's newest copy wins by key (an update writes the row
again in a new file; a compaction writes every row again, and the files it replaced may still be there). What the
manifest's deletion files hid cannot be told apart without it: a row purged for good comes back. A file that does
not read (truncated: its footer, which says where every column is, is gone) is counted, and the keys of its rows
are named from the key's index where it holds them (key_index.py). A file holding only some of the columns (a
column added later is written to files of its own) cannot be matched to its rows without the manifest: counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from .salvage import lance_failure


@dataclass(frozen=True)
class FromFiles:
    rows: pa.Table | None
    """The newest copy of every row that read (None when no file read)."""
    files: int
    """Data files found."""
    unreadable: tuple[Path, ...]
    partial: int
    """Files without the key columns (a column added later), left out."""


def rows_from_files(folder: Path, keys: tuple[str, ...]) -> FromFiles:
    from lance.file import LanceFileReader

    paths = sorted((folder / "data").glob("*.lance"), key=lambda p: (p.stat().st_mtime_ns, p.name))
    tables, unreadable, partial = [], [], 0
    for path in paths:
        try:
            table = LanceFileReader(str(path)).read_all().to_table()
        except BaseException as exc:  # noqa: BLE001 - a Lance panic included (see lance_failure)
            if not lance_failure(exc):
                raise
            unreadable.append(path)
            continue
        if not set(keys) <= set(table.schema.names):
            partial += 1
            continue
        tables.append(table.replace_schema_metadata(None))
    rows = newest_by_key(pa.concat_tables(tables, promote_options="default"), keys) if tables else None
    return FromFiles(rows, len(paths), tuple(unreadable), partial)


def newest_by_key(rows: pa.Table, keys: tuple[str, ...]) -> pa.Table:
    """The last row of each key (rows in the order they were written); a table without keys: each distinct row."""
    last: dict[str, int] = {}
    for at, row in enumerate(rows.select(list(keys) or rows.schema.names).to_pylist()):
        last[repr(row)] = at
    return rows.take(sorted(last.values()))
