"""`cortex agent ...`: the agent context controller from the command line."""

from __future__ import annotations

from collections.abc import Callable

from ..command import Answer, Command, add_nested, at_least
from ..formats import age

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from typing import Any

    from .context import CommandContext


class AgentOp:
    """One `cortex agent OP`: its arguments, the call on the agent log, and the line said after it. (A plain class:
    see app/command.py.)"""

    __slots__ = ("name", "help", "call", "said", "add_arguments")

    # `said` takes what `call` returns, a different type for each op (a step, a milestone, a branch, ...): `Any`
    # pairs them, since a table of ops cannot name one type.
    def __init__(self, name: str, help: str, call: Callable, said: Callable[[Any], str] | None = None,
                 add_arguments: Callable = lambda a: None) -> None:
        self.name = name
        self.help = help
        self.call = call
        """(log, args, ctx) -> result"""
        self.said = said
        """The line printed for the result; None for a result printed as markdown (the context)."""
        self.add_arguments = add_arguments


def _add_log(a) -> None:
    a.add_argument("--obs", "--observation", dest="obs", default="")
    a.add_argument("--thought", default="")
    a.add_argument("--action", default="")
    a.add_argument("--branch", help="log on this branch instead of the current one")


def _add_commit(a) -> None:
    a.add_argument("contribution")
    a.add_argument("--summary", help="the progress so far (default: the previous commit's, plus its contribution)")
    a.add_argument("--roadmap", help="append this to the roadmap")
    a.add_argument("--branch")


def _add_branch(a) -> None:
    a.add_argument("name")
    a.add_argument("purpose")


def _add_merge(a) -> None:
    a.add_argument("name")
    a.add_argument("--into", help="target branch (default: the branch it was created from)")
    a.add_argument("--summary", help="the merge commit's contribution")


def _add_context(a) -> None:
    a.add_argument("-k", type=at_least(0), default=1, help="commits to show in full")
    a.add_argument("--branch")


def _milestone(result) -> str:
    return f"{result.kind} {result.id} on {result.branch} covers steps {', '.join(map(str, result.steps))}"


def _state(result) -> str:
    return f"branch {result.name} {result.status}"


def _started(result) -> str:
    """`init` answers with the whole context: said as the branch it is on and the goal."""
    return f"agent context on branch {result.branch.name}: {result.branch.purpose}"


def _imported(result) -> str:
    b = result.context.branch
    if not result.added:
        return f"nothing to import: this database's agent context already holds all of this {result.kind}"
    added = result.added
    return (f"imported a {result.kind}: {added['branches']} branches, {added['steps']} steps, {added['commits']} "
            f"commits, {added['roadmap']} roadmap entries; on branch {b.name}: {b.purpose}")


OPS = {op.name: op for op in (
    AgentOp("init", "start an agent context with its goal (the roadmap's first entry)",
            lambda log, args, ctx: log.init(args.goal), _started, lambda a: a.add_argument("goal")),
    AgentOp("log", "append a numbered observation-thought-action step",
            lambda log, args, ctx: log.log_ota(args.obs, args.thought, args.action, branch=args.branch),
            lambda r: f"step {r.branch}#{r.n} logged", _add_log),
    AgentOp("commit", "a milestone covering the steps since the last commit",
            lambda log, args, ctx: log.commit(args.contribution, args.summary, args.roadmap, branch=args.branch),
            _milestone, _add_commit),
    AgentOp("roadmap", "append an entry to the roadmap (a goal added, a plan changed) without a commit",
            lambda log, args, ctx: log.extend_roadmap(args.text), lambda r: f"roadmap entry {r.seq} added",
            lambda a: a.add_argument("text")),
    AgentOp("branch", "create a branch from the current one and switch to it",
            lambda log, args, ctx: log.branch(args.name, args.purpose),
            lambda r: f"created branch {r.name} from {r.parent} and switched to it", _add_branch),
    AgentOp("switch", "make another active branch current", lambda log, args, ctx: log.switch(args.name),
            lambda r: f"on branch {r.name}: {r.purpose}", lambda a: a.add_argument("name")),
    AgentOp("merge", "append a branch's steps to its parent (or --into) with a merge commit",
            lambda log, args, ctx: log.merge(args.name, args.into, args.summary), _milestone, _add_merge),
    AgentOp("abandon", "mark a branch abandoned (kept, read-only)", lambda log, args, ctx: log.abandon(args.name),
            _state, lambda a: a.add_argument("name")),
    AgentOp("context", "roadmap, branch, last k commits and the steps since, as markdown",
            lambda log, args, ctx: log.context(args.branch, args.k), None, _add_context),
    AgentOp("branches", "every branch with its status", lambda log, args, ctx: _branches(log)),
    AgentOp("export", "write markdown and metadata.yaml to a directory",
            lambda log, args, ctx: _export(log, args, ctx), add_arguments=lambda a: a.add_argument("directory")),
    AgentOp("import", "read an export, a contexa workspace (.GCC) or live files; again: only what is missing",
            lambda log, args, ctx: log.import_(ctx.path(args.directory)), _imported,
            lambda a: a.add_argument("directory")),
)}


def add_agent(p) -> None:
    agent = p.add_subparsers(dest="op", required=True, metavar="OP")
    for op in OPS.values():
        op.add_arguments(add_nested(agent, op.name, op.help))


def run_agent(args, ctx: CommandContext) -> Answer:
    log = ctx.engine(args).agent_log(create=args.op in ("init", "import"))
    op = OPS[args.op]
    result = op.call(log, args, ctx)
    if isinstance(result, Answer):
        return result
    said = op.said
    if said is None:
        return Answer(result, lambda out: out.console.out(result.markdown()))
    return Answer(result, lambda out: out.console.print(said(result)))


def _branches(log) -> Answer:
    listed = log.overview()
    return Answer(listed, lambda out: out.table(
        ["", "branch", "status", "from", "steps", "commits", "age", "purpose"],
        [["*" if b.name == listed.current else "", b.name, b.status + (f" → {b.merged_into}" if b.merged_into else ""),
          b.parent, str(listed.steps[b.name]), str(listed.commits[b.name]), age(b.created_at), b.purpose]
         for b in listed.branches]))


def _export(log, args, ctx: CommandContext) -> Answer:
    written = log.export(ctx.path(args.directory))
    return Answer({"directory": args.directory, "files": written}, lambda out: out.console.print(
        f"wrote {len(written)} files to {args.directory} (metadata.yaml is what `cortex agent import` reads)"))


COMMANDS = (
    Command("agent", "the agent context controller: roadmap, branches, observation-thought-action log, commits",
            run_agent, add_agent),
)
