"""Small text helpers shared by the panes."""

from __future__ import annotations

import os
from datetime import datetime, timezone


def now() -> datetime:
    """The current time; CORTEX_FIXED_NOW pins it so snapshots and screenshots are reproducible."""
    fixed = os.environ.get("CORTEX_FIXED_NOW")
    return datetime.fromisoformat(fixed) if fixed else datetime.now(timezone.utc)


def age(stamp: datetime | None) -> str:
    if stamp is None:
        return ""
    stamp = stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)
    seconds = max((now() - stamp).total_seconds(), 0)
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


def clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"
