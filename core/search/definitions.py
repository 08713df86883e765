"""Where a query names code: the chunks that define the names it gives, read through the index's per-chunk symbols.

A query like `parse_cookie`, `MapAdapter.match` or `ParseFlags` asks for a definition; uses of the name (tests,
callers, docs) come after it. The chunks table lists the symbols each chunk defines (`Class.method` qualified), so
and a `names` column beside them (each symbol's last part, lower-cased) has a label-list index, the definers are
one indexed lookup inside LanceDB, and how well a chunk's symbols match decides its place:
the qualified name exactly, then the name itself, then the name in another case, then a near name (a typo, or the
start of a name) when nothing defines the name as typed.
"""

from __future__ import annotations

import bisect
import difflib
import itertools
import re
import threading
from collections.abc import Iterable

from ..store.sql import scan, sql_list

MAX_ROWS = 50
NEAR = 0.8
"""How alike (difflib ratio, lower-cased) a defined name and a name typed with a slip must be."""
MIN_PREFIX = 4
"""A name typed in part is looked up by its start only from this many characters."""


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def definition_match(symbols: Iterable[str], names: Iterable[str]) -> float:
    """How well a chunk's defined symbols answer the names asked (0: it defines none of them). A qualified name
    asked (`MapAdapter.match`) is answered fully only by that owner's definition; another owner's `match` gets
    half, as does a name that matches only when case is ignored."""
    best = 0.0
    names = list(names)
    for symbol in symbols:
        short = _short(symbol)
        for name in names:
            asked = _short(name)
            if "." in name and (symbol == name or symbol.endswith("." + name)):
                score = 1.0
            elif short == asked:
                score = 0.5 if "." in name else 0.9
            elif short.lower() == asked.lower():
                score = 0.4 if "." in name else 0.7
            else:
                continue
            best = max(best, score)
    return best


def near_match(symbols: Iterable[str], typed: str) -> float:
    """For a name nothing defines as typed: how close a chunk's symbols come, below any exact definer: 0.6 for a
    name that starts with what was typed (the start of a name), up to 0.55 for one within a slip of it."""
    typed_short = _short(typed).lower()
    best = 0.0
    for symbol in symbols:
        short = _short(symbol).lower()
        if len(typed_short) >= MIN_PREFIX and short.startswith(typed_short):
            best = max(best, 0.6)
        ratio = difflib.SequenceMatcher(None, short, typed_short).ratio()
        if ratio >= NEAR:
            best = max(best, 0.55 * ratio)
    return best


def definers(table, names: Iterable[str], where: str | None, columns: list[str]) -> list[dict]:
    """Chunks defining one of the names (the last part of a dotted one), compared without case, within `where`:
    a lookup in the `names` label-list index (a regular expression over every chunk's symbols cost 15-45 % of a
    search's p95)."""
    query = definers_query(table, names, where, columns)
    return query.to_list() if query is not None else []


def definers_query(table, names: Iterable[str], where: str | None, columns: list[str]):
    """`definers`' query, not yet made (None: no name to look up), for a caller that makes several together."""
    shorts = sorted({_short(n).lower() for n in names if re.fullmatch(r"[\w$]+", _short(n))})
    if not shorts:
        return None
    condition = f"array_has_any(names, {sql_list(shorts)})" + (f" AND ({where})" if where else "")
    return table.search().where(condition).select(columns).limit(MAX_ROWS)


_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_$"
"""What a defined name (lower-cased, as the `names` column holds it) is made of."""
MAX_NEAR_NAMES = 200
"""At most this many near names are looked up (a short start can begin hundreds)."""


def one_slip(name: str) -> set[str]:
    """Every name one slip away from `name` (lower case): two neighbouring characters swapped, one character wrong,
    missing or extra."""
    splits = [(name[:i], name[i:]) for i in range(len(name) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in _ALPHABET}
    out |= {a + c + b for a, b in splits for c in _ALPHABET}
    return out


class DefinedNames:
    """The names a chunks table defines (the distinct values of its `names` column), read once per version of the
    table and shared by every thread: a name typed with a slip or in part is matched against them in memory, and
    its definers are then a lookup in the label-list index. (A regular expression over every chunk's symbols, as
    before, read the whole table on each such search.) The version is read before the names, so a write racing
    the read leaves names stamped older than they are and the next call reads again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[int, frozenset[str], list[str]] | None = None
        self.reads = 0

    def near(self, table, typed: str) -> list[str]:
        """The defined names that lie one slip from what was typed or start with it (from `MIN_PREFIX` characters
        on; shorter, almost every name is near), in name order."""
        short = _short(typed).lower()
        if len(short) < MIN_PREFIX:
            return []
        names, ordered = self._names(table)
        found = sorted(one_slip(short) & names)
        at = bisect.bisect_left(ordered, short)
        starts = itertools.takewhile(lambda n: n.startswith(short), ordered[at:])
        found += [n for n in itertools.islice(starts, MAX_NEAR_NAMES) if n not in found]
        return found[:MAX_NEAR_NAMES]

    def _names(self, table) -> tuple[frozenset[str], list[str]]:
        version = table.version
        with self._lock:
            if self._cached is None or self._cached[0] != version:
                names = frozenset(n for row in scan(table, None, ["names"]) for n in row["names"] or ())
                self._cached = (version, names, sorted(names))
                self.reads += 1
            return self._cached[1], self._cached[2]

    def forget(self) -> None:
        """Let go of the cached names (a long-lived process after a quiet spell); the next call builds it again."""
        with self._lock:
            self._cached = None


def near_definers(table, typed: str, where: str | None, columns: list[str], text_rows: list[dict],
                  names: DefinedNames) -> list[dict]:
    """Chunks defining a name that starts with what was typed or lies one slip from it (`names`, then one indexed
    lookup, only when nothing defines the name as typed), and full-text candidates (`text_rows`, found through the
    name's parts) whose symbols come close to it."""
    short = _short(typed)
    rows = definers(table, names.near(table, short), where, columns) if re.fullmatch(r"[\w$]+", short) else []
    seen = {r["id"] for r in rows}
    for row in text_rows:
        if row["id"] not in seen and near_match(row["symbols"] or [], typed) > 0:
            seen.add(row["id"])
            rows.append(row)
    return rows
