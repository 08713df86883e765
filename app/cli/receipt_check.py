"""Whether a write with a given id committed, asked on behalf of a client that lost the server running it: by a
new server, or in the client's own process when no server can be reached (see core/store/receipts.py)."""

from __future__ import annotations

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


class Where:
    """The `-C` and `--db` of a command line, as `CommandContext.engine` reads them from parsed arguments."""

    def __init__(self, argv: list[str]) -> None:
        from .parser import UsageExit, build_parser, parse

        try:
            args = parse(build_parser(frozenset(argv)), argv)
        except UsageExit:
            args = None
        self.path = getattr(args, "path", ".") or "."
        self.target = getattr(args, "target", None)
        self.db = getattr(args, "db", None)
        self.no_global = getattr(args, "no_global", False)


def receipt_answer(ctx: CommandContext, argv: list[str], write_id: str) -> dict:
    """A `receipt` answer: `committed` true or false, or the one-line `error` that kept it from being known."""
    from ...core.write_ids import checked

    try:
        found = ctx.engine(Where(argv)).receipt(checked(write_id))
    except Exception as exc:  # noqa: BLE001 - the client says it cannot know, in one line
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        return {"type": "receipt", "error": f"{type(exc).__name__}: {first}"}
    return {"type": "receipt", "committed": found is not None}
