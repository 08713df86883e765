"""Whether a write with a given id committed: read from the rows its decisive commit stored, or from a receipt.

Each write command run with an id (core/write_ids.py) stores that id in the `write_id` column of the rows its
decisive commit writes: a new memory, the memories a forget or `done` changed, an agent step, commit, branch or
roadmap entry. The id is part of the very commit that stores the write, so no kill -9 can leave one without the
other; it costs a short string per row and nothing else (no second commit, no read).

A row's id is replaced when a later write rewrites the row (a forget after a remember), and gone when a purge
deletes it. So before any commit that would replace or delete ids (`keep_before`), those ids are copied into the
`receipts` table, in an earlier commit under the same write lock: the copy says only that a write committed, which
was already true, so a kill between the two commits leaves nothing false behind. A receipt may also hold the output
of the command whose caller gave its own id (`CORTEX_WRITE_ID`), which a retry prints again. Receipts older than
RECEIPT_DAYS are dropped by `cortex gc`.

A purge leaves no row to carry its id: its receipt is written before the delete, naming the rows it deletes
(`gone`), and it counts only once none of them is left. A kill between the two commits leaves a receipt that does
not count (the rows are still there), and no kill can leave a committed purge without its receipt.

What is stored is the id's stamp (core/write_ids.py: the id and the fingerprint of its command), found by id.

Not a receipts table alone, written after the data: a kill between the two commits would report a committed write
as not committed (and a retry would store it twice), which is what this exists to prevent.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from ..write_ids import COLUMN, matching, parts
from .sql import in_filter, quote, timestamp

RECEIPTS = "receipts"
STAMPED = frozenset({"memories", "agent_steps", "agent_commits", "agent_branches", "agent_roadmap"})
"""The tables whose rows carry the id of the write that stored them."""
RECEIPT_DAYS = 7
RECEIPTS_SCHEMA = pa.schema([
    pa.field(COLUMN, pa.string()),
    pa.field("at", pa.timestamp("us", tz="UTC")),
    pa.field("output", pa.string()),
    pa.field("gone", pa.list_(pa.string())),
])
"""`gone`: the memory ids a purge deletes (its receipt counts once none is left); null for every other write."""
MEMORIES = "memories"
_FOUND = 20
"""Rows read per table when looking for an id: its stamps (one per command that used it; more is a misuse)."""


def with_write_id(schema: pa.Schema) -> pa.Schema:
    """A stamped table's schema: its own columns and `write_id`."""
    return schema.append(pa.field(COLUMN, pa.string()))


@dataclass(frozen=True)
class Receipt:
    """A write that committed, and what its command printed when that was kept (a caller-given id only)."""

    write_id: str
    output: list[list] | None = None
    """[[stream, text], ...] as the command wrote them (1: stdout, 2: stderr); None when not kept."""
    fingerprint: str = ""
    """The fingerprint of the command that made it (core/write_ids.py); "" when stored before fingerprints."""
    queued: bool = False
    """A team write queued while the team store did not answer: kept, and written by `cortex sync`."""


def find(db, write_id: str, mark: str = "") -> Receipt | None:
    """The receipt of `write_id` in this database, or None when no write with it committed here. Of several (an id
    reused by different commands), the one whose fingerprint is `mark`, else any."""
    names = db.table_names()
    where = matching(write_id)
    found: list[Receipt] = []
    if RECEIPTS in names:
        table = db.conn.open_table(RECEIPTS)
        gone = "gone" in table.schema.names
        for row in table.search().where(where).limit(_FOUND).to_list():
            if parts(row[COLUMN])[0] != write_id:
                continue
            if gone and row["gone"] and MEMORIES in names and _left(db, row["gone"]):
                continue  # a purge killed before its delete: not committed
            kept = row["output"]
            found.append(Receipt(write_id, json.loads(kept) if kept else None, parts(row[COLUMN])[1]))
    for name in sorted(STAMPED & names):
        table = db.conn.open_table(name)
        if COLUMN in table.schema.names:
            rows = table.search().where(where).select([COLUMN]).limit(_FOUND).to_list()
            found += [Receipt(write_id, None, parts(r[COLUMN])[1]) for r in rows if parts(r[COLUMN])[0] == write_id]
    # The same command's first, then one whose output was kept.
    found.sort(key=lambda r: (r.fingerprint not in ("", mark), r.output is None))
    return found[0] if found else None


def _left(db, ids: Sequence[str]) -> bool:
    """Whether any of these memories is still stored."""
    return db.conn.open_table(MEMORIES).count_rows(in_filter("id", list(ids))) > 0


def ids_in(table, where: str, keeping: str | None) -> list[str]:
    """The write ids of the rows matching `where` (but `keeping`, the id about to be written on them)."""
    clause = f"({where}) AND {COLUMN} IS NOT NULL"
    if keeping:
        clause += f" AND {COLUMN} != {quote(keeping)}"
    rows = table.search().where(clause).select([COLUMN]).limit(None).to_list()
    return sorted({r[COLUMN] for r in rows})


def receipt_rows(ids: Sequence[str], output: list[list] | None = None, gone: Sequence[str] | None = None
                 ) -> pa.Table:
    stamp = datetime.now(UTC)
    text = json.dumps(output, ensure_ascii=False) if output is not None else None
    rows = [{COLUMN: i, "at": stamp, "output": text, "gone": list(gone) if gone else None} for i in ids]
    return pa.Table.from_pylist(rows, schema=RECEIPTS_SCHEMA)


def stale_where(days: int = RECEIPT_DAYS) -> str:
    cutoff = datetime.now(UTC) - timedelta(days=days)
    return f"at < {timestamp(cutoff)}"


def key_filter(on: str | Sequence[str], rows) -> str | None:
    """A filter matching the target rows a merge on `on` would update, from its source rows (dicts or a table)."""
    if isinstance(on, str):
        keys = rows.column(on).to_pylist() if isinstance(rows, pa.Table) else [r[on] for r in rows]
        return in_filter(on, [str(k) for k in keys])
    records = rows.to_pylist() if isinstance(rows, pa.Table) else list(rows)
    columns = list(on)
    parts = []
    for r in records:
        terms = [f"{c} = {quote(r[c])}" if isinstance(r[c], str) else f"{c} = {int(r[c])}" for c in columns]
        parts.append(" AND ".join(terms))
    return " OR ".join(f"({p})" for p in parts) or None


def carries_ids(rows) -> bool:
    """Whether a merge's source rows have the `write_id` column (a merge without it leaves the target's alone)."""
    if isinstance(rows, pa.Table):
        return COLUMN in rows.schema.names
    return any(COLUMN in r for r in rows)


def new_id(rows) -> str | None:
    """The one write id a merge's source rows all carry (None when none, or several)."""
    found = set(rows.column(COLUMN).to_pylist()) if isinstance(rows, pa.Table) else {r.get(COLUMN) for r in rows}
    return found.pop() if len(found) == 1 else None
