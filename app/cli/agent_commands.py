"""`cortex agent ...`: the agent context controller from the command line."""

from __future__ import annotations

from ...core.agentlog.agentlog import AgentContext
from .context import CommandContext
from ..output import age


def cmd_agent(args, ctx: CommandContext) -> int:
    log = ctx.engine(args).agent_log(create=args.op in ("init", "import"))
    op = args.op
    if op == "init":
        result = log.init(args.goal)
    elif op == "log":
        result = log.log_ota(args.obs, args.thought, args.action, branch=args.branch)
    elif op == "commit":
        result = log.commit(args.contribution, args.summary, args.roadmap, branch=args.branch)
    elif op == "branch":
        result = log.branch(args.name, args.purpose)
    elif op == "switch":
        result = log.switch(args.name)
    elif op == "merge":
        result = log.merge(args.name, args.into, args.summary)
    elif op == "abandon":
        result = log.abandon(args.name)
    elif op == "context":
        result = log.context(args.branch, args.k)
    elif op == "branches":
        current = log.current()
        branches = log.branches()
        if args.json:
            ctx.out.json({"current": current, "branches": branches})
        else:
            ctx.out.table(["", "branch", "status", "from", "steps", "commits", "age", "purpose"],
                  [["*" if b.name == current else "", b.name, b.status + (f" → {b.merged_into}" if b.merged_into else ""),
                    b.parent, str(len(log.steps(b.name))), str(len(log.commits(b.name))), age(b.created_at), b.purpose]
                   for b in branches])
        return 0
    elif op == "export":
        written = log.export(ctx.path(args.directory))
        if args.json:
            ctx.out.json({"directory": args.directory, "files": written})
        else:
            ctx.out.console.print(f"wrote {len(written)} files to {args.directory} (metadata.yaml is what `cortex agent import` reads)")
        return 0
    else:
        result = log.import_(ctx.path(args.directory))
    if args.json:
        ctx.out.json(result)
    elif isinstance(result, AgentContext):
        ctx.out.console.out(result.markdown())
    else:
        ctx.out.console.print(_describe(op, result))
    return 0


def _describe(op: str, result) -> str:
    if op == "log":
        return f"step {result.branch}#{result.n} logged"
    if op in ("commit", "merge"):
        return f"{result.kind} {result.id} on {result.branch} covers steps {', '.join(map(str, result.steps))}"
    if op == "branch":
        return f"created branch {result.name} from {result.parent} and switched to it"
    if op == "switch":
        return f"on branch {result.name}: {result.purpose}"
    return f"branch {result.name} {result.status}"
