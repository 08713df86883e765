"""`cortex search, what, select, context`: finding what matters and fitting it to a budget."""

from __future__ import annotations

from ...core.context.purpose_names import DEFAULT as DEFAULT_PURPOSE
from ...core.context.purpose_names import PURPOSES
from ..command import Answer, Command, at_least, finite
from ..formats import age, selection_item_json
from .memory_commands import print_code_change, warn_team
from .text_input import read_text

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from ...core.requests import SelectRequest
    from .context import CommandContext

# The requests, the clipboard (subprocess, tempfile) and rendering are imported as a handler runs: the thin client
# imports this module on every call, only to parse.


def add_search(p) -> None:
    p.add_argument("query", nargs="*", help="words, identifiers, paths; inline filters like kind:decision work too; "
                                                  "`-` reads the query from standard input")
    p.add_argument("--kind", action="append", help="memory kind (repeatable)")
    p.add_argument("--tag", action="append")
    p.add_argument("--key", action="append", help="memories stored under this key (repeatable); KEY* for every key "
                                                  "it begins")
    p.add_argument("--file", action="append", help="tied to this file (memories) or in this path (code)")
    p.add_argument("--branch")
    p.add_argument("--since", help="7d, 12h, 2w, 30m or an ISO date")
    p.add_argument("--memories-only", action="store_true")
    p.add_argument("--code-only", action="store_true")
    p.add_argument("--history", action="store_true", help="include superseded and deleted versions")
    p.add_argument("--past-sessions", choices=("mixed", "without", "only", "beside"), default="mixed",
                   help="imported past agent sessions (import --claude-sessions): in with the rest (default), "
                        "left out, alone, or beside the rest as a second list")
    p.add_argument("--limit", type=at_least(1), default=10)
    p.add_argument("--explain", action="store_true", help="show each hit's score breakdown")
    p.add_argument("--expand", action="store_true", help="add the graph neighbours of the top hits")
    p.add_argument("--full", action="store_true", help="print each hit's whole text")
    p.add_argument("--filter", action="store_true",
                   help="let the configured LLM (llm_filter_url, llm_filter_model) select the best candidates: "
                        "only those it points at are shown")


def run_search(args, ctx: CommandContext) -> Answer:
    from ...core.requests import SearchFilters, SearchRequest

    filters = SearchFilters(
        kinds=tuple(args.kind or ()), tags=tuple(args.tag or ()), files=tuple(args.file or ()), branch=args.branch,
        since=args.since, memories_only=args.memories_only, code_only=args.code_only, history=args.history,
        session=ctx.session(args), keys=tuple(args.key or ()), past_sessions=args.past_sessions,
    )
    query = _stdin_query(ctx) if args.query == ["-"] else " ".join(args.query)
    engine = ctx.engine(args)
    results = engine.smart_search(SearchRequest(query, filters, args.limit, args.expand, args.filter))
    warn_team(ctx, engine)
    return Answer(results.to_json(), lambda out: _print_results(out, results, args.explain, args.full))


def _stdin_query(ctx: CommandContext) -> str:
    """The query of `cortex search -`, read from standard input like `remember -` reads its text. Empty input is
    refused: it would quietly turn into the query-less search (what you are working on)."""
    from ...core.errors import CortexError

    query = read_text(ctx.stdin).strip()
    if not query:
        raise CortexError("standard input holds no query (`cortex search` without words searches for what you "
                          "are working on)")
    return query


def _print_results(out, results, explain: bool, full: bool) -> None:
    from ...core.text import one_line
    if results.implicit and results.terms:
        out.console.print(f"no query: searching for what you are working on ({' '.join(results.terms[:12])})", style="dim")
    if results.index_fresh is False:
        out.console.print("the code index is stale: run `cortex index` (or keep `cortex watch` running)", style="yellow")
    for note in results.notes:
        out.console.print(note, style="dim")
    if not results.hits:
        out.console.print("no results")
    _print_hits(out, results.hits, explain, full)
    if results.past_sessions is not None:
        out.console.print("\nin past sessions", style="bold")
        if not results.past_sessions:
            out.console.print("no results")
        _print_hits(out, results.past_sessions, explain, full)
    if results.neighbours:
        out.console.print("neighbours of the top hits", style="bold")
        for n in results.neighbours:
            out.console.print(f"  {n.via:<12} {one_line(n.label)}")


def _print_hits(out, hits, explain: bool, full: bool) -> None:
    for i, hit in enumerate(hits, 1):
        where = hit.location if hit.source == "code" else f"{hit.kind} {hit.id} {hit.memory.created_at:%Y-%m-%d}"
        if hit.memory is not None and hit.memory.store != "repo":
            where += f" ({hit.memory.store})"
        if hit.source == "code" and where.startswith(hit.title):  # a chunk without a symbol is titled by its path
            out.line((f"{i:>2}. {where}", "bold"), "  ", (f"score {hit.score.total:.3f}", "dim"))
        else:
            out.line((f"{i:>2}. {hit.title}", "bold"), "  ", (f"{where}  score {hit.score.total:.3f}", "dim"))
        if hit.memory is not None:
            print_code_change(out, hit.memory, "    ")
        if explain:
            out.console.print(f"    {hit.score.explain()}", style="cyan")
        if full or hit.snippet is None:
            out.console.out("    " + hit.text.replace("\n", "\n    "))
        else:  # the lines that match the query best, numbered as in the file (or the memory)
            for n, line in enumerate(hit.snippet.text.splitlines(), hit.snippet.start_line):
                out.console.out(f"    {n:>5}  {line}")


def run_what(args, ctx: CommandContext) -> Answer:
    w = ctx.engine(args).what(args.limit, ctx.session(args))
    return Answer(w.to_json(), lambda out: _print_what(out, w))


def _print_what(out, w) -> None:
    from ...core.text import one_line
    head = f"on {w.git.branch}" if w.git.branch else ("detached" if w.git.detached else "")
    out.line(("What should I know", "bold"), f" {head}")

    def section(title: str, items: list[str]) -> None:
        if items:
            out.console.print(f"\n{title}", style="bold")
            for item in items:
                out.console.print(f"  {item}", markup=False)

    def fmt(m) -> str:
        changed = f"\n      code changed since: {m.code_change.summary}" if m.code_change is not None else ""
        return f"{m.id} {m.kind:<9} {age(m.updated_at):>4}  {one_line(m.title)}{changed}"

    section("Memories on this branch", [fmt(m) for m in w.branch_memories])
    section("About the files you changed", [f"{fmt(m)}  ({one_line(', '.join(m.files))})" for m in w.file_memories])
    section("Open tasks", [fmt(m) for m in w.open_tasks])
    section("Recent memories", [fmt(m) for m in w.recent_memories])
    section("Recent commits", [f"{c.short} {age(c.time):>4}  {one_line(c.subject)}" for c in w.recent_commits])
    section("Working change, most imported first",
            [f"{f.state:<9} {one_line(f.path)}  imported by {f.imported_by}" for f in w.changed_files])
    for hint in w.hints:
        out.console.print(f"\n{hint}", style="dim")


def add_select(p) -> None:
    p.add_argument("task", nargs="+", help="what you want to do ('-' reads standard input)")
    p.add_argument("--budget", type=int, default=12000, help="token budget (exact tokens of the configured encoding)")
    p.add_argument("--max-items", type=at_least(1), help="at most this many items (files and memories)")
    p.add_argument("--max-files", type=at_least(1), help="at most this many files (memories not counted)")
    p.add_argument("--include-tests", default="auto", choices=["yes", "no", "auto"])
    p.add_argument("--min-score", type=finite(), default=0.0,
                   help="leave out items scoring under this; when nothing reaches it, the top files, with a warning")
    p.add_argument("--format", default="markdown", choices=["markdown", "xml", "json"],
                   help="the format the context is rendered in; the budget holds for it exactly")
    p.add_argument("--purpose", default=DEFAULT_PURPOSE, choices=PURPOSES,
                   help="who it is for, which sets its sections: general (memories, then files), assistant (code "
                        "first), planner (decisions and constraints first), research (sources with provenance), "
                        "drafting (notes and docs before code)")


def add_context(p) -> None:
    add_select(p)
    p.add_argument("--copy", action="store_true", help="put it on the clipboard (native tool, OSC 52, else a file)")
    p.add_argument("--output", "-o", help="write it to this file")


def _select_request(args, ctx: CommandContext) -> SelectRequest:
    from ...core.requests import SelectRequest

    text = " ".join(args.task)
    return SelectRequest(read_text(ctx.stdin) if text == "-" else text, args.budget, args.max_items, args.include_tests,
                         args.min_score, fmt=args.format, max_files=args.max_files, purpose=args.purpose,
                         session=ctx.session(args))


def run_select(args, ctx: CommandContext) -> Answer:
    from ...core.context.assemble import assemble, token_shares

    sel = ctx.engine(args).select_context(_select_request(args, ctx))
    shares = token_shares(sel, assemble(sel, sel.fmt))
    return Answer({
        "task": sel.task[:500], "budget": sel.budget, "tokens": sel.tokens, "format": sel.fmt, "purpose": sel.purpose,
        "encoding": sel.encoding,
        "notes": sel.notes, "frame_tokens": shares.frame,
        "chosen": [selection_item_json(i, shares) for i in sel.chosen],
        "left_out": [selection_item_json(i) for i in sel.left_out],
        "ranked_files": sel.ranked_files[:50],
    }, lambda out: _print_selection(out, sel, shares))


def _print_selection(out, sel, shares) -> None:
    from ...core.text import one_line
    # Each row is the item's exact share of the document and the frame the rest, so the rows add up to the total
    # (items counted one by one do not: headings are shared and tokens merge across an item's edges).
    out.line((f"{sel.tokens:,} / {sel.budget:,} tokens", "bold"), f" ({sel.encoding}), {len(sel.chosen)} items"
             + (f"; {shares.frame:,} of the tokens are the document's frame" if shares.frame > 0 else ""))
    for note in sel.notes:
        out.console.print(note, style="yellow")
    out.table(["kind", "item", "tokens", "score", "why"], [
        [i.kind, _chosen_label(i), f"{shares.items.get(i.key, i.tokens):,}", f"{i.value:.3f}", _why(i)]
        for i in sel.chosen
    ])
    for label, items in left_out_groups(sel):
        out.console.print(one_line(f"{label}: " + ", ".join(_left_label(i) for i in items[:8])), style="dim",
                          markup=False)


def left_out_groups(sel) -> list[tuple[str, list]]:
    """The left-out items by why they are out; only what did not fit is "left out for budget" (with the tokens it
    needs), the rest is under the floor the task's best candidates set, a copy, or under --min-score."""
    from ...core.context.items import BELOW_FLOOR, OVER_BUDGET

    groups: dict[str, list] = {}
    for i in sel.left_out:
        if i.reason == OVER_BUDGET:
            label = "left out for budget"
        elif sel.min_score and i.value < sel.min_score:
            label = f"under --min-score {sel.min_score:g}"
        elif i.reason == BELOW_FLOOR:
            label = "below the floor"
        else:
            label = i.reason
        groups.setdefault(label, []).append(i)
    return list(groups.items())


def _chosen_label(item) -> str:
    """Where an item comes from, and for a memory its title too: an id and a date alone do not say which it is."""
    return f"{item.provenance}: {item.memory.title}" if item.memory is not None else item.provenance


def _left_label(item) -> str:
    """An item left out for budget shows the tokens it needs; the others only where they are."""
    from ...core.context.items import OVER_BUDGET

    return f"{item.provenance} ({item.tokens:,})" if item.reason == OVER_BUDGET else item.provenance


def _why(item) -> str:
    top = sorted(((k, v) for k, v in item.signals.items() if v and k != "role"), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{k} {v:.2f}" for k, v in top)


def run_context(args, ctx: CommandContext) -> Answer | int:
    from ...core.clipboard import copy, terminal_osc52
    from ...core.context.assemble import assemble
    from ...core.text import escaped, visible

    engine = ctx.engine(args)
    sel = engine.select_context(_select_request(args, ctx))
    doc = assemble(sel, args.format)
    report = {"tokens": doc.tokens, "budget": sel.budget, "items": len(doc.items), "redactions": doc.redactions,
              "format": doc.format, "suffix": doc.suffix, "purpose": sel.purpose, "notes": sel.notes}
    if args.output:
        ctx.path(args.output).write_text(doc.text, encoding="utf-8")
        report["output"] = args.output
    if args.copy:
        result = copy(doc.text, osc52=terminal_osc52(), fallback_dir=engine.root / ".cortex" / "clipboard",
                      suffix=doc.suffix)
        report["copied"] = {"method": result.method, "bytes": result.bytes, "path": result.path}
        report["message"] = result.describe(doc.tokens)
    if not (args.output or args.copy):
        if args.json:
            return Answer({**report, "text": doc.text})
        # Verbatim into a pipe or file; on a terminal, control characters are shown, not obeyed (see output).
        ctx.stdout.write(visible(doc.text) if ctx.stdout.isatty() else escaped(doc.text))
        return 0

    def show(out) -> None:
        if args.output:
            out.console.print(f"wrote {doc.tokens:,} tokens ({len(doc.items)} items) to {args.output}", style="dim")
        if args.copy:
            out.console.print(report["message"])
        if doc.redactions:
            out.console.print(f"{doc.redactions} secret-looking string(s) redacted", style="yellow")

    return Answer(report, show)


COMMANDS = (
    Command("search", "smart search over memories and code (no query: what you are working on)", run_search,
            add_search, aliases=("ss", "smart-search")),
    Command("what", "what should I know: branch memories, notes on changed files, open tasks, recent work", run_what,
            lambda p: p.add_argument("--limit", type=at_least(1), default=10, help="items per section")),
    Command("select", "choose files, chunks and memories for a task under a token budget", run_select, add_select),
    Command("context", "assemble the selected context verbatim (markdown, xml or json), copy or save it", run_context,
            add_context),
)
