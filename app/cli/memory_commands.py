"""`cortex init, remember, show, list, history, forget, done, sync`: the memories themselves."""

from __future__ import annotations

from ...core.errors import CortexError
from ..command import KIND_HELP, Answer, Command, at_least, split_list
from ..formats import age
from .text_input import memory_limit, read_text

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from ...core.records import Memory
    from .context import CommandContext

MEMORY_COLUMNS = ["id", "store", "kind", "status", "ver", "age", "title", "tags"]


def _memory_rows(memories: list[Memory]) -> list[list[str]]:
    rows = []
    for m in memories:
        state = m.status if m.kind != "task" or m.status != "active" else m.task_state
        title = f"[code changed since] {m.title}" if m.code_change is not None else m.title
        rows.append([m.id, m.store, m.kind, state, f"v{m.version}", age(m.created_at), title, ",".join(m.tags)])
    return rows


def memories_answer(memories: list[Memory], empty: str) -> Answer:
    """A list of memories: JSON records, or a table (or `empty` when there is none)."""

    def show(out) -> None:
        if not memories:
            out.console.print(empty)
        else:
            out.table(MEMORY_COLUMNS, _memory_rows(memories))

    return Answer([m.to_json() for m in memories], show)


def _print_memory(out, memory: Memory) -> None:
    from ...core.text import one_line
    out.line((memory.title, "bold"), f"  ({memory.kind}, {memory.status}, v{memory.version}, id {memory.id})")
    meta = [f"created {memory.created_at:%Y-%m-%d %H:%M} UTC", f"scope {memory.scope}"]
    if memory.branch:
        meta.append(f"branch {memory.branch}@{memory.commit[:8]}")
    if memory.source_key:
        meta.append(f"key {memory.source_key}")
    if memory.kind == "task":
        meta.append(f"task {memory.task_state}")
    out.console.print(one_line(" · ".join(meta)), style="dim")
    for label, values in (("tags", memory.tags), ("files", memory.files), ("symbols", memory.symbols)):
        if values:
            out.console.print(one_line(f"{label}: {', '.join(values)}"), style="dim", markup=False)
    print_code_change(out, memory)
    out.console.print()
    out.console.out(memory.text)


def print_code_change(out, memory: Memory, indent: str = "") -> None:
    """The one line saying the code a memory describes changed since (nothing when it did not)."""
    if memory.code_change is not None:
        out.line(indent, ("code changed since: ", "yellow"), memory.code_change.summary,
                 ("  (`cortex confirm ", "dim"), (memory.id, "dim"), ("` if it still holds)", "dim"))


def warn_team(ctx: CommandContext, engine) -> None:
    """A team store left out of a read is said on stderr, once, so local results still print."""
    if engine.team_error:
        ctx.out.warn(f"cortex: warning: {engine.team_error}; showing local memories only")


def run_init(args, ctx: CommandContext) -> Answer:
    engine = ctx.engine(args)
    store = engine.init()
    where = "git repository" if engine.is_repo else "directory (not a git repository)"
    return Answer({"db": store.db.uri, "root": str(engine.root), "is_repo": engine.is_repo},
                  lambda out: out.console.print(f"cortex database ready at {store.db.uri} for {where} {engine.root}"))


def add_remember(p) -> None:
    p.add_argument("text", help="the memory's text; '-' reads standard input")
    p.add_argument("--kind", default="note", help=KIND_HELP)
    p.add_argument("--title", default="")
    p.add_argument("--tags", action="append", help="comma-separated tags")
    p.add_argument("--files", action="append", help="comma-separated related files")
    p.add_argument("--symbols", action="append", help="comma-separated related symbols")
    p.add_argument("--key", default="", help="source key: remembering the same key again makes a new version")
    p.add_argument("--scope", default="repo", help="session, repo, global or team (the shared team store)")
    p.add_argument("--new", action="store_true", help="keep it beside an active memory that says the same thing")
    p.add_argument("--version-of", metavar="ID", help="store it as a new version of this memory")


REMEMBERED = {"created": "remembered", "new_version": "stored version {} of", "duplicate": "already known:",
              "queued": "team store unreachable; queued for `cortex sync`:"}


def run_remember(args, ctx: CommandContext) -> Answer:
    from ...core.sizes import check_sizes

    text = read_text(ctx.stdin) if args.text == "-" else args.text
    # Before anything else is imported (the secret rules, the engine, LanceDB): a text over the limit is refused in
    # what reading it takes.
    check_sizes(memory_limit(ctx.env), "memory", text=text)
    from ...core.records import MemoryDraft  # datetime and the records: not for the thin client, which only parses
    from ...core.secrets.secrets import redacted
    from ...core.text import escaped, one_line

    draft = MemoryDraft(text=text, kind=args.kind, title=args.title, tags=split_list(args.tags),
                        files=split_list(args.files), symbols=split_list(args.symbols), source_key=args.key,
                        scope=args.scope, session=(ctx.session(args) or "") if args.scope == "session" else "")
    engine = ctx.engine(args)
    if args.version_of:
        result = engine.revise(args.version_of, draft)
    else:
        result = engine.remember(draft, check_near=not args.new)
    memory = result.memory
    if result.outcome == "near_duplicate":
        # Not stored: a script asking for a write learns it was not made (the match is in the answer).
        return Answer({"outcome": result.outcome, "near_duplicate": True, "memory": None, "match": memory.to_json()},
                      lambda out: _print_near(out, memory), code=1)
    # The stored names (secrets in a path are redacted there), never the draft's: the note is printed as it is.
    missing = [f for f in memory.files if not (engine.root / f).exists()]
    if missing:
        # Kept as given (a file about to be written, or one since removed), but a slip would anchor nothing.
        shown = escaped(one_line(redacted(", ".join(missing))))
        ctx.notes.append(f"cortex: note: no such file in {engine.root}: {shown} (the memory names it as given)")
    said = REMEMBERED[result.outcome].format(memory.version)
    return Answer({"outcome": result.outcome, "memory": memory.to_json()},
                  lambda out: out.line(f"{said} {memory.id} ({memory.kind}) {memory.title}"))


def _print_near(out, match: Memory) -> None:
    out.line(("not stored: ", "yellow"), f"an active memory says the same: {match.id} ({match.kind}) ", (match.title, "bold"))
    out.line(("  --version-of ", "dim"), (match.id, "dim"), (" stores it as a new version of that one; --new keeps both",
                                                             "dim"))


def run_show(args, ctx: CommandContext) -> Answer:
    memory = ctx.engine(args).get(args.id)
    return Answer(memory.to_json(), lambda out: _print_memory(out, memory))


def add_list(p) -> None:
    p.add_argument("--kind")
    p.add_argument("--tag")
    p.add_argument("--status", default="active", help="active, superseded, deleted, open, done or all")
    p.add_argument("--scope")
    p.add_argument("--limit", type=at_least(1), default=50)


def run_list(args, ctx: CommandContext) -> Answer:
    engine = ctx.engine(args)
    memories = engine.list_memories(ctx.session(args), kind=args.kind, tag=args.tag, status=args.status, scope=args.scope,
                           limit=args.limit)
    warn_team(ctx, engine)
    return memories_answer(memories, "no memories yet: add one with `cortex remember TEXT`")


def run_history(args, ctx: CommandContext) -> Answer:
    return memories_answer(ctx.engine(args).history(args.key), "no versions")


def add_forget(p) -> None:
    p.add_argument("id", nargs="?")
    p.add_argument("--key")
    p.add_argument("--purge", action="store_true", help="remove every version for good")


def run_forget(args, ctx: CommandContext) -> Answer:
    if not args.id and not args.key:
        raise CortexError("forget needs a memory id or --key")
    gone = ctx.engine(args).forget(args.id, args.key, purge=args.purge)
    verb = "purged" if args.purge else "deleted"
    ids = ", ".join(m.id for m in gone)
    # A plain forget keeps the versions in history (`cortex history`, `list --history`): said, so it is not taken
    # for the purge.
    said = (f"purged {len(gone)} version(s) for good: {ids}" if args.purge else
            f"forgot {len(gone)} version(s): {ids} (kept in history; `cortex forget --purge` removes them for good)")
    return Answer({verb: [m.id for m in gone]}, lambda out: out.console.print(said))


def add_done(p) -> None:
    p.add_argument("id")
    p.add_argument("--reopen", action="store_true", help="open it again instead")


def run_done(args, ctx: CommandContext) -> Answer:
    from ...core.text import one_line
    memory = ctx.engine(args).set_task_state(args.id, "open" if args.reopen else "done")
    return Answer(memory.to_json(),
                  lambda out: out.console.print(one_line(f"task {memory.id} is {memory.task_state}: {memory.title}")))


def run_confirm(args, ctx: CommandContext) -> Answer:
    memory = ctx.engine(args).confirm(args.id)
    return Answer(memory.to_json(), lambda out: out.line(f"confirmed {memory.id} for the code as it is now: ",
                                                         (memory.title, "bold")))


def run_sync(args, ctx: CommandContext) -> Answer:
    result = ctx.engine(args).team().sync()

    def show(out) -> None:
        if result.error:
            out.console.print(f"sent {result.sent} queued team write(s); {result.waiting} still waiting: {result.error}",
                              markup=False, soft_wrap=True)
        else:
            out.console.print(f"sent {result.sent} queued team write(s); none waiting")

    return Answer(result, show, code=1 if result.waiting else 0)


COMMANDS = (
    Command("init", "create the database and keep .cortex/ out of git", run_init),
    Command("remember", "store a memory (a new version if --key already exists)", run_remember, add_remember),
    Command("show", "show one memory", run_show, lambda p: p.add_argument("id")),
    Command("list", "list memories, newest first", run_list, add_list),
    Command("history", "every version stored under a key (or a memory's key)", run_history,
            lambda p: p.add_argument("key")),
    Command("forget", "delete a memory (soft unless --purge)", run_forget, add_forget),
    Command("done", "close a task", run_done, add_done),
    Command("confirm", "say a memory still holds after its code changed (records its code as it is now)",
            run_confirm, lambda p: p.add_argument("id")),
    Command("sync", "send team memories queued while the team store was unreachable", run_sync),
)
