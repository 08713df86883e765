"""Whether a write with a given id committed, asked on behalf of a client that lost the server running it: by a
new server, or in the client's own process when no server can be reached (see core/store/receipts.py)."""

from __future__ import annotations

from ..link.messages import ReceiptAnswer

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from ..link.messages import Where
    from .context import CommandContext


def receipt_answer(ctx: CommandContext, where: Where, write_id: str) -> ReceiptAnswer:
    """A `receipt` answer for the engine of the command line's `where`: `committed` true or false, or the one-line
    `error` that kept it from being known."""
    from ...core.write_ids import checked

    try:
        found = ctx.engine(where).receipt(checked(write_id))
    except Exception as exc:  # noqa: BLE001 - the client says it cannot know, in one line
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return ReceiptAnswer(None, f"{type(exc).__name__}: {first}")
    return ReceiptAnswer(found is not None, queued=found is not None and found.queued)
