"""`cortex map, snapshot`: what an agent loads at the start of a session."""

from __future__ import annotations

from ..command import Answer, Command, at_least

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


def add_map(p) -> None:
    p.add_argument("--budget", type=at_least(1), default=1000, help="token budget (exact tokens of the configured encoding)")
    p.add_argument("--focus", nargs="+", default=[], metavar="TEXT|PATH",
                   help="paths, directories or words to rank toward (default: the working change)")


def run_map(args, ctx: CommandContext) -> Answer | int:
    from ...core.requests import MapRequest
    from ...core.text import escaped, visible

    found = ctx.engine(args).repo_map(MapRequest(args.budget, tuple(args.focus)))
    if args.json:
        return Answer(found.to_json())
    for note in found.notes:
        ctx.stderr.write(f"cortex: {note}\n")
    ctx.stdout.write(visible(found.text) if ctx.stdout.isatty() else escaped(found.text))
    return 0


def run_snapshot(args, ctx: CommandContext) -> Answer | int:
    from ...core.text import escaped, visible

    found = ctx.engine(args).snapshot(session=ctx.session(args))
    if args.json:
        return Answer(found.to_json())
    ctx.stdout.write(visible(found.text) if ctx.stdout.isatty() else escaped(found.text))
    return 0


COMMANDS = (
    Command("map", "the repository's most important definitions, ranked toward a focus, within a token budget",
            run_map, add_map),
    Command("snapshot", "what an agent should load first, in at most 1,000 tokens: branch and working change, open "
            "tasks, decisions about the changed code, the last agent commit, the top of the repo map", run_snapshot),
)
