"""How long ago, in one format for every front end: the dashboard's panes and the CLI's tables say the same thing.

Units a newcomer reads without a legend: `now`, `12 min`, `5 h`, `3 d`, `6 wk`, `8 mo`, `2 y` (never `m`, which
reads as minutes or months). At most six characters, so a column of ages keeps its width.
"""

from __future__ import annotations

from datetime import UTC, datetime

UNITS = (("y", 365 * 86_400), ("mo", 30 * 86_400), ("wk", 7 * 86_400), ("d", 86_400), ("h", 3_600), ("min", 60))
WIDTH = 6
"""The widest age: `59 min`."""
SMALLEST = {"mo": 2, "wk": 2}
"""A unit is used from this many on (`10 d`, not `1 wk`; `8 wk`, not `1 mo`), so each reads at its natural scale."""


def age(stamp: datetime | None, now: datetime) -> str:
    """`stamp` as time before `now` (naive stamps are UTC); "" for no stamp."""
    if stamp is None:
        return ""
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    seconds = max((now - stamp).total_seconds(), 0)
    for unit, size in UNITS:
        if seconds >= size * SMALLEST.get(unit, 1):
            return f"{int(seconds // size)} {unit}"
    return "now"
