"""How long ago, in one format for every front end: the dashboard's panes and the CLI's tables say the same thing.

Units a newcomer reads without a legend: `now`, `12 min`, `5 h`, `3 d`, `6 wk`, `8 mo`, `2 y` (never `m`, which
reads as minutes or months). At most six characters, so a column of ages keeps its width.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from .errors import CortexError

_SINCE = re.compile(r"^(\d+)([hdwm])$")
"""`since` as a count and a unit: hours, days, weeks, minutes."""
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


def parse_since(value: str) -> datetime:
    """`7d`, `12h`, `2w`, `30m` (minutes) or an ISO date."""
    match = _SINCE.match(value.strip())
    now = datetime.now(UTC)
    if match:
        n, unit = int(match.group(1)), match.group(2)
        try:
            return now - {"h": timedelta(hours=n), "d": timedelta(days=n), "w": timedelta(weeks=n), "m": timedelta(minutes=n)}[unit]
        except OverflowError as exc:
            # Python dates stop at year 1; a window reaching further back is a typo, not "everything".
            raise CortexError(f"since {value!r} reaches back before the year 1; use a smaller number or an ISO date") from exc
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError as exc:
        raise CortexError(f"cannot read since {value!r}: use 7d, 12h, 2w, 30m or an ISO date") from exc
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
