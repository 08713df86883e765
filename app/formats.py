"""Plain values shown by the CLI and the MCP server, with nothing but the standard library: command modules,
which the thin client imports to parse, use them too."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from datetime import datetime


def selection_item_json(i, shares=None) -> dict:
    """`tokens` is what the item costs alone; `document_tokens` (given `shares`, for a chosen item) its exact share of
    the assembled document, so those shares and the document's `frame_tokens` add up to its total."""
    out = {"kind": i.kind, "provenance": i.provenance, "tokens": i.tokens, "score": i.value, "signals": i.signals}
    if shares is not None and i.key in shares.items:
        out["document_tokens"] = shares.items[i.key]
    if i.reason:
        out["reason"] = i.reason
    if i.kind == "memory":
        out["id"] = i.memory.id
    else:
        out["path"] = i.path
    return out


def age(stamp: datetime) -> str:
    """The dashboard's age format (`12 min`, `3 d`), so the CLI and the panes say the same thing."""
    from datetime import UTC, datetime  # when shown: the thin client imports this module only to parse

    from ..core.ages import age as age_between

    return age_between(stamp, datetime.now(UTC))
