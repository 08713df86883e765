"""A write run at most once per write id, for the callers that are not the command line: the MCP tools, the HTTP
`/store` endpoint and the dashboard (the command line's own is app/cli/main.py `_run_write`).

The write's rows carry its stamp (core/write_ids.py: the id and its command's fingerprint), as a command's do. A
caller that names the write (an MCP idempotency key, the id the dashboard gives one user action) may be calling
again after a lost answer: a write that committed with that id answers from it instead of being made twice, and one
made by another call is refused in one line. An id made up for this call alone is new: nothing is read first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..records import Memory
from ..store.receipts import Receipt
from ..write_ids import ReusedWriteId, matching, stamp, writing_as
from .memories import receipt
from .workspace import Workspace

T = TypeVar("T")


def once(ws: Workspace, write_id: str, mark: str, make: Callable[[], T], named: bool,
         earlier: Callable[[Receipt], T], kept: Callable[[T], str] | None = None) -> T:
    """`make()` with its rows stamped `write_id` and `mark`; when `named` (the caller gave the id and may be
    retrying) and a write with it committed, `earlier(receipt)` instead. `kept`: the answer as text, stored with
    the receipt for such a retry (one commit more, so only when named)."""
    if named:
        found = receipt(ws, write_id, mark)
        if found is not None:
            if found.fingerprint and found.fingerprint != mark:
                raise ReusedWriteId.of(write_id, found.fingerprint, mark)
            return earlier(found)
    with writing_as(stamp(write_id, mark)):
        answer = make()
    if named and kept is not None:
        try:
            ws.store().db.record_receipt(stamp(write_id, mark), [[1, kept(answer)]])
        except Exception:  # noqa: BLE001 - the write committed and its rows carry the id; only its answer is not kept
            pass
    return answer


def written_memory(ws: Workspace, write_id: str) -> Memory | None:
    """The memory a write with this id stored (its active version when it made several rows), if any."""
    for store in ws.stores_if_any():
        rows = store.query(matching(write_id))
        if rows:
            return next((m for m in rows if m.status == "active"), rows[0])
    return None
