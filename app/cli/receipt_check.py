"""Whether a write with a given id committed, asked on behalf of a client that lost the server running it: by a
new server, or in the client's own process when no server can be reached (see core/store/receipts.py)."""

from __future__ import annotations

from ..link.messages import ReceiptAnswer

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..link.messages import Where
    from .context import CommandContext


def receipt_answer(ctx: CommandContext, where: Where, write_id: str, argv: Sequence[str] = ()) -> ReceiptAnswer:
    """A `receipt` answer for the engine of the command line's `where`: `committed` true or false, or the one-line
    `error` that kept it from being known. With the command's `argv` (and its standard input in `ctx`), only a
    write of that command counts: the id committed by another command is not this one's write."""
    from ...core.write_ids import checked

    try:
        mark = _fingerprint(ctx, argv) if argv else ""
        found = ctx.engine(where).receipt(checked(write_id), mark)
    except Exception as exc:  # noqa: BLE001 - the client says it cannot know, in one line
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return ReceiptAnswer(None, f"{type(exc).__name__}: {first}")
    ours = found is not None and (not mark or found.fingerprint in ("", mark))
    return ReceiptAnswer(ours, queued=ours and found is not None and found.queued)


def _fingerprint(ctx: CommandContext, argv: Sequence[str]) -> str:
    """The fingerprint the command line's write has (app/cli/main.py)."""
    from .main import fingerprinted
    from .parser import build_parser, parse

    return fingerprinted(parse(build_parser(), list(argv)), ctx)[1]
