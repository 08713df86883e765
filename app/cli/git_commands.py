"""`cortex git` and `cortex graph`: the repository's history and the memory graph around a node."""

from __future__ import annotations

from ..command import Answer, Command, at_least
from ..formats import age

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


def run_git(args, ctx: CommandContext) -> Answer:
    from ...core.text import one_line
    git = ctx.engine(args).git(args.commits)

    def show(out) -> None:
        if not git.is_repo:
            out.console.print(f"{git.root}: not a git repository")
            return
        where = f"detached at {git.head[:8]}" if git.detached else f"on {git.branch}"
        out.line((str(git.root), "bold"), f" {where}" + (f" ({'; '.join(git.notes)})" if git.notes else ""))
        for label, files in (("staged", git.staged), ("modified", git.modified), ("untracked", git.untracked)):
            if files:
                out.console.print(one_line(f"{label}: {', '.join(files)}"))
        rows = [[c.short, age(c.time), c.author, c.subject, str(len(c.files))] for c in git.commits]
        if rows:
            out.table(["commit", "age", "author", "subject", "files"], rows)
        out.console.print(one_line(f"branches: {', '.join(git.branches) or 'none'}"))

    return Answer(git.to_json(), show)


def add_graph(p) -> None:
    p.add_argument("node", help="memory id, file path, symbol, commit sha (or mem:/file:/sym:/commit: ids)")
    p.add_argument("--depth", type=at_least(1), default=1)
    p.add_argument("--limit", type=at_least(1), default=100)


def run_graph(args, ctx: CommandContext) -> Answer:
    from ...core.graph.graph import neighbourhood  # the engine: not for the thin client, which only parses
    from ...core.text import one_line

    found = neighbourhood(ctx.engine(args).graph(session=ctx.session(args)), args.node, args.depth, args.limit)

    def show(out) -> None:
        out.line((found.label, "bold"), " ", (f"({found.node})", "dim"))
        if not found.neighbours:
            out.console.print("no neighbours")
        for n in found.neighbours:
            out.console.print(f"{'  ' * n.depth}{n.via:<12} {one_line(n.label)}")

    return Answer(found, show)


COMMANDS = (
    Command("git", "print the git context", run_git,
            lambda p: p.add_argument("--commits", type=at_least(0), default=10)),
    Command("graph", "neighbours of a memory, file, symbol or commit in the memory graph", run_graph, add_graph),
)
