"""LanceDB filter expressions and whole reads: quoting, `IN` lists, symbol matches, and `scan`."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def timestamp(when: datetime) -> str:
    """A TIMESTAMP literal in UTC to the microsecond: cut to the second, a cutoff could move up to a second and
    keep (or drop) a row that is on the other side of it."""
    return f"TIMESTAMP '{when.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}'"


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


def scan(table, where: str | None = None, columns: list[str] | None = None) -> list[dict]:
    """Every row matching `where`: LanceDB's search() without a vector stops at 10 rows unless told `limit(None)`
    (which also spares a `count_rows()` round trip per read)."""
    query = table.search()
    if columns:
        query = query.select(columns)
    if where:
        query = query.where(where)
    return query.limit(None).to_list()
