"""Plain values shown by the CLI and the MCP server, with nothing but the standard library: command modules,
which the thin client imports to parse, use them too."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime


def selection_item_json(i) -> dict:
    out = {"kind": i.kind, "provenance": i.provenance, "tokens": i.tokens, "score": i.value, "signals": i.signals}
    if i.kind == "memory":
        out["id"] = i.memory.id
    else:
        out["path"] = i.path
    return out


def age(stamp: datetime) -> str:
    from datetime import datetime, timezone  # when shown: the thin client imports this module only to parse

    seconds = (datetime.now(timezone.utc) - stamp).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"
