"""Time words in a query ("yesterday", "last week", "in May", "May 7", "2023", "before the trip") as a time window.

Windows are computed against a reference date (now, for people; a conversation's last session, for benchmarks), so
the same query always means the same days in tests. A window only ever boosts memories made inside it: a query's
time words are a hint about when, never a reason to hide the one memory that answers it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {
    name: n
    for n, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        1,
    )
    for name in names
}
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "a few": 3,
            "few": 3, "several": 3, "couple of": 2, "a couple of": 2}
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"((?:19|20)\d\d)"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_COUNT = r"(\d+|" + "|".join(sorted(_NUMBERS, key=len, reverse=True)) + ")"

# Most specific first: a full date must win over the bare year or month inside it.
_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("day_month_year", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")),
    ("month_day_year", re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b")),
    ("month_year", re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b")),
    ("day_month", re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b")),
    ("month_day", re.compile(rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:am|pm|h|:))")),
    ("ago", re.compile(rf"\b{_COUNT}\s+(day|week|month|year)s?\s+ago\b")),
    ("relative", re.compile(r"\b(today|yesterday|the day before yesterday|(?:last|this|past)\s+(?:week(?:end)?|month|year))\b")),
    ("weekday", re.compile(r"\b(?:last|on|this)\s+(" + "|".join(WEEKDAYS) + r")\b")),
    ("in_month", re.compile(rf"\b(?:in|during|since|by|of)\s+{_MONTH}\b")),
    ("year", re.compile(rf"\b(?:in|during|since|of|from)?\s*(?<![-/])\b{_YEAR}\b(?![-/]\d)")),
]
_BEFORE_AFTER = re.compile(r"\b(before|after|since|until|prior to)\s+(.+?)(?:[?.!,;]|$)")


@dataclass(frozen=True)
class TimeWindow:
    """Days a query points at: [start, end) in UTC, and the words that said so."""

    start: datetime | None
    end: datetime | None
    phrase: str

    def contains(self, stamp: datetime | None) -> bool:
        if stamp is None:
            return False
        stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        return (self.start is None or stamp >= self.start) and (self.end is None or stamp < self.end)

    def describe(self) -> str:
        start = self.start.date().isoformat() if self.start else "…"
        end = (self.end - timedelta(days=1)).date().isoformat() if self.end else "…"
        return f"{start} to {end} ({self.phrase!r})" if start != end else f"{start} ({self.phrase!r})"


@dataclass(frozen=True)
class EventAnchor:
    """`before the trip`, `after my move`: a window on one side of when some other memory happened."""

    direction: str
    """`before` or `after`."""
    event: str
    """The words naming the event, to be looked up among the memories."""


@dataclass(frozen=True)
class DateQuery:
    """What the time words of a query mean: a window, an event to look up, or nothing."""

    window: TimeWindow | None = None
    anchor: EventAnchor | None = None


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _month_window(year: int, month: int, phrase: str) -> TimeWindow:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return TimeWindow(start, end, phrase)


def _days(start: datetime | None, days: int, phrase: str) -> TimeWindow | None:
    return TimeWindow(start, start + timedelta(days=days), phrase) if start else None


def _latest_year(month: int, day: int, ref: datetime) -> int:
    """A month (and day) without a year means the most recent one not after the reference date."""
    return ref.year if (month, day) <= (ref.month, ref.day) else ref.year - 1


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _window(kind: str, m: re.Match, ref: datetime) -> TimeWindow | None:
    phrase = m.group(0).strip()
    today = datetime(ref.year, ref.month, ref.day, tzinfo=UTC)
    g = m.groups()
    if kind == "iso":
        return _days(_day(int(g[0]), int(g[1]), int(g[2])), 1, phrase)
    if kind == "day_month_year":
        return _days(_day(int(g[2]), MONTHS[g[1]], int(g[0])), 1, phrase)
    if kind == "month_day_year":
        return _days(_day(int(g[2]), MONTHS[g[0]], int(g[1])), 1, phrase)
    if kind == "month_year":
        return _month_window(int(g[1]), MONTHS[g[0]], phrase)
    if kind in ("day_month", "month_day"):
        day, month = (int(g[0]), MONTHS[g[1]]) if kind == "day_month" else (int(g[1]), MONTHS[g[0]])
        if not 1 <= day <= 31:
            return None
        return _days(_day(_latest_year(month, day, ref), month, day), 1, phrase)
    if kind == "ago":
        days = _count(g[0]) * _UNITS[g[1]]
        # "two weeks ago" is fuzzy: half the unit either side of the point it names.
        slack = max(_UNITS[g[1]] // 2, 1)
        return TimeWindow(today - timedelta(days=days + slack), today - timedelta(days=days - slack - 1), phrase)
    if kind == "relative":
        word = " ".join(g[0].split())
        if word == "today":
            return _days(today, 1, phrase)
        if word == "yesterday":
            return _days(today - timedelta(days=1), 1, phrase)
        if word == "the day before yesterday":
            return _days(today - timedelta(days=2), 1, phrase)
        which, unit = word.split()
        monday = today - timedelta(days=today.weekday())
        if unit == "weekend":
            saturday = monday - timedelta(days=2) if which != "this" else monday + timedelta(days=5)
            return _days(saturday, 2, phrase)
        if which == "past":
            return TimeWindow(today - timedelta(days=_UNITS[unit]), today + timedelta(days=1), phrase)
        if unit == "week":
            return _days(monday - timedelta(days=7 if which == "last" else 0), 7, phrase)
        if unit == "month":
            year, month = (ref.year, ref.month) if which == "this" else (ref.year - (ref.month == 1), (ref.month - 2) % 12 + 1)
            return _month_window(year, month, phrase)
        year = ref.year - (which == "last")
        return TimeWindow(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), phrase)
    if kind == "weekday":
        back = (today.weekday() - WEEKDAYS.index(g[0])) % 7 or 7
        return _days(today - timedelta(days=back), 1, phrase)
    if kind == "in_month":
        month = MONTHS[g[0]]
        if g[0] == "may" and not phrase.lower().startswith(("in", "during")):
            return None  # "by may", "of may": too often the verb
        return _month_window(_latest_year(month, 1, ref), month, phrase)
    if kind == "year":
        year = int(g[0])
        return TimeWindow(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC), phrase)
    return None


def parse_dates(query: str, reference: datetime) -> DateQuery:
    """The time a query asks about, relative to `reference`. Unknown words mean no window; an impossible day (31 Feb) falls back to its month."""
    text = " ".join(query.lower().split())
    reference = reference if reference.tzinfo else reference.replace(tzinfo=UTC)
    window, at = _first_window(text, reference)
    side = _BEFORE_AFTER.search(text)
    if side is None:
        return DateQuery(window)
    direction = "after" if side.group(1) in ("after", "since") else "before"
    phrase = f"{side.group(1)} {window.phrase}" if window else ""
    if window is not None and side.start(2) <= at <= side.end(2) + 1:
        # "before May 2023", "since June 3": the open side of the named date.
        if direction == "before":
            return DateQuery(TimeWindow(None, window.start, phrase))
        return DateQuery(TimeWindow(window.end, None, phrase))
    event = side.group(2).strip()
    return DateQuery(window, EventAnchor(direction, event) if event and window is None else None)


def _first_window(text: str, reference: datetime) -> tuple[TimeWindow | None, int]:
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(text):
            window = _window(kind, match, reference)
            if window is not None:
                return window, match.start() + len(match.group(0)) - len(match.group(0).lstrip())
    return None, -1


def anchored_window(anchor: EventAnchor, when: datetime) -> TimeWindow:
    """The open window on one side of the day an anchor event happened."""
    day = datetime(when.year, when.month, when.day, tzinfo=UTC)
    phrase = f"{anchor.direction} {anchor.event}"
    if anchor.direction == "before":
        return TimeWindow(None, day, phrase)
    return TimeWindow(day + timedelta(days=1), None, phrase)
