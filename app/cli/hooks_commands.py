"""`cortex hooks install claude-code|git [--uninstall]` and `cortex hooks run KIND` (what the installed hooks call)."""

from __future__ import annotations

from ..command import Answer, Command, add_nested

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext

GOAL = "work captured from Claude Code sessions by `cortex hooks`"
"""The agent context's goal when the Claude Code hooks start one: says where the steps come from, nothing more."""


def add_hooks(p) -> None:
    op = p.add_subparsers(dest="op", required=True, metavar="OP")
    install = add_nested(op, "install", "write (or with --uninstall remove) the capture hooks")
    install.add_argument("kind", choices=("claude-code", "git"))
    install.add_argument("--uninstall", action="store_true", help="remove only the cortex hooks; keep the rest")
    run = add_nested(op, "run", "what an installed hook runs: reads the event on stdin, hands it off, exits 0")
    run.add_argument("kind", choices=("claude-code", "git-post-commit"))


def run_hooks(args, ctx: CommandContext) -> Answer | int:
    from . import hook_install, hook_run

    if args.op == "run":
        stream = getattr(ctx.stdin, "buffer", None)
        return hook_run.hand_off(args.kind, stream.read() if stream is not None else ctx.stdin.read().encode(),
                                 ctx.path(args.path or "."))
    where = ctx.path(args.path or ".")
    if args.kind == "git":
        change = hook_install.install_git(where, args.uninstall)
    else:
        engine = ctx.engine(args)
        change = hook_install.install_claude(engine.root, args.uninstall)
        if not args.uninstall:
            log = engine.agent_log(create=True)
            if not log.is_initialised():  # the steps need a branch to go on
                log.init(GOAL)
    return Answer(change.__dict__, lambda out: out.console.print(change.said, markup=False, soft_wrap=True))


COMMANDS = (
    Command("hooks", "capture hooks: Claude Code tool use and session ends into the agent log; git commits into the index",
            run_hooks, add_hooks),
)
