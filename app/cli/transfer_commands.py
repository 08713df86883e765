"""`cortex import` and `cortex export`: memories in and out as files."""

from __future__ import annotations

import json
import time

from ...core.errors import CortexError
from ..command import Answer, Command

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


def add_import(p) -> None:
    p.add_argument("source", nargs="?", help="a file or a directory (recursive, honours .gitignore)")
    p.add_argument("--claude-sessions", action="store_true",
                   help="SOURCE is a directory of Claude Code transcripts (default: this project's under "
                        "~/.claude/projects): each turn (the user's message and the answer), verbatim, as a memory "
                        "of kind agent")
    p.add_argument("--since", help="with --claude-sessions: only turns begun since then (7d, 12h, 2w, 30m or an ISO date)")
    p.add_argument("--kind", default="note", help="kind for markdown/text sections")
    p.add_argument("--scope", default="repo")
    p.add_argument("--skip-bad", action="store_true",
                   help="store the good records and list the bad ones (default: a bad record aborts the import)")
    p.add_argument("--dry-run", action="store_true", help="list what would be stored, and store nothing")


def run_import(args, ctx: CommandContext) -> Answer:
    # The engine's modules: not for the thin client, which only parses.
    from ...core import heap
    from ...core.ages import parse_since
    from ...core.store.claude_sessions import claude_projects_dir, plan_claude_sessions
    from ...core.store.importer import plan_import
    from ...core.store.indexes import vector_indexes_deferred
    from ...core.text import one_line

    if args.source is None and not args.claude_sessions:
        raise CortexError("give a file or a directory to import (or --claude-sessions)")
    if args.since and not args.claude_sessions:
        raise CortexError("--since goes with --claude-sessions (a file's records are all imported)")
    since = parse_since(args.since) if args.since else None
    # One malloc arena before LanceDB starts its threads (see core/heap.py): with one per thread, what each batch
    # freed stayed resident, and a 40,000-note import peaked at 570 MB; with one, 448 MB (a resident server has one).
    heap.one_arena()
    engine = ctx.engine(args)
    started = time.monotonic()
    with ctx.out.progress_bar("importing") as update:
        if args.claude_sessions:
            where = ctx.path(args.source) if args.source else claude_projects_dir(engine.root)
            plan = plan_claude_sessions(where, engine.settings.max_text_bytes, since)
        else:
            def checking(done: int, size: int) -> None:
                if size >= CHECKING_SHOWN_BYTES:
                    update(done, size, "checking")

            plan = plan_import(ctx.path(args.source), default_kind=args.kind, scope=args.scope,
                               max_bytes=engine.settings.max_text_bytes, progress=checking)
        if args.dry_run:
            return _dry_run(plan, args.skip_bad)
        if not args.skip_bad:
            plan.refuse_bad()
        counts = dict.fromkeys(("created", "new_version", "duplicate", "restored"), 0)
        tally = plan.tally
        # A batch at a time, each read from the file as it is stored: what the import holds is one batch's records,
        # vectors and rows, whatever the file's size. Counted, not kept: each result holds its memory and vector.
        # The vector index is built once, after the last batch, over every row.
        def building() -> None:
            # The build trains on every vector (+140 MB at 100,000 rows) and needs no model: what the batches held
            # (the model, the selection and search caches) goes back first.
            update(0, 0, "building the vector index")
            engine.release_caches()
            heap.trim()

        with vector_indexes_deferred(building=building):
            before = 0
            for exact in plan.exact_batches():
                counts["restored"] += len(engine.import_exact(
                    exact, progress=lambda done, _: update(before + done, tally.exact)))
                before += len(exact)
                heap.trim()
            before = 0
            for batch in plan.rounds():
                for result in engine.remember_many(batch, progress=lambda done, _: update(before + done, tally.drafts)):
                    counts[result.outcome] = counts.get(result.outcome, 0) + 1
                before += len(batch)
                heap.trim()
        seconds = time.monotonic() - started
    counts["already_present"] = tally.exact - counts["restored"]

    def show(out) -> None:
        exact = f", {counts['restored']} restored by id, {counts['already_present']} already present" if tally.exact else ""
        out.console.print(f"imported {plan.files} file(s): {counts['created']} new, {counts['new_version']} updated, "
                          f"{counts['duplicate']} already known{exact} in {seconds:,.0f} s ({rate:,.0f} a second)",
                          markup=False, soft_wrap=True)
        for path, reason in plan.skipped:
            out.console.print(one_line(f"  skipped {path}: {reason}"), style="dim", markup=False, soft_wrap=True)
        for bad in plan.bad:
            out.console.print(one_line(f"  skipped bad record {bad}"), style="yellow", markup=False, soft_wrap=True)

    stored = tally.exact + tally.drafts
    rate = stored / seconds if seconds > 0 else 0.0
    return Answer({"files": plan.files, **counts, "seconds": round(seconds, 1), "per_second": round(rate, 1),
                   "skipped": [{"path": p, "reason": r} for p, r in plan.skipped],
                   "bad": [{"where": b.where, "reason": b.reason} for b in plan.bad]}, show)


DRY_RUN_LISTED = 1000
"""Records a dry run lists; the rest are counted. Listing every one held them all and printed them all: a
100,000-line file's dry run took 17 CPU-seconds and 316 MB with `--json`, and no one reads 100,000 lines."""


CHECKING_SHOWN_BYTES = 1 << 20
"""A file this size or larger says how far its checking got (about a second a megabyte); a smaller one says
nothing while it is read, so an error in it stays one line."""


def _dry_run(plan, skip_bad: bool) -> Answer:
    """What an import would store, where each of the first records was read, and what it would pass over; nothing
    is written. A bad record makes the exit status 1 unless --skip-bad, as it would abort the import."""
    from itertools import islice

    from ...core.records import Memory
    from ...core.text import one_line

    records = plan.tally.drafts + plan.tally.exact
    would = [{"where": where, "kind": entry.kind, "title": entry.title, "characters": len(entry.text),
              "key": entry.source_key, **({"id": entry.id} if isinstance(entry, Memory) else {})}
             for where, entry in islice(plan.each(), DRY_RUN_LISTED)]

    def show(out) -> None:
        out.console.print(f"would import {records} record(s) from {plan.files} file(s); nothing was stored",
                          markup=False, soft_wrap=True)
        for record in would:
            out.console.print(one_line(f"  {record['where']}: {record['kind']} {record['title']!r} "
                                       f"({record['characters']:,} characters)"), markup=False, soft_wrap=True)
        if records > len(would):
            out.console.print(f"  … and {records - len(would):,} more (the first {len(would):,} are listed)",
                              markup=False, soft_wrap=True)
        for path, reason in plan.skipped:
            out.console.print(one_line(f"  would skip {path}: {reason}"), style="dim", markup=False, soft_wrap=True)
        for bad in plan.bad:
            out.console.print(one_line(f"  bad record {bad}"), style="yellow", markup=False, soft_wrap=True)

    return Answer({"dry_run": True, "files": plan.files, "records": records, "would_store": would,
                   "skipped": [{"path": p, "reason": r} for p, r in plan.skipped],
                   "bad": [{"where": b.where, "reason": b.reason} for b in plan.bad]},
                  show, code=1 if plan.bad and not skip_bad else 0)


def add_export(p) -> None:
    p.add_argument("--output", "-o", help="file to write (default standard output)")
    p.add_argument("--all-versions", action="store_true", help="include superseded and deleted versions")
    p.add_argument("--agents-md", action="store_true",
                   help="write the active decisions and conventions (memories tagged convention) between cortex's "
                        "markers in AGENTS.md and CLAUDE.md at the repository root (those that exist; else AGENTS.md)")


AGENT_FILES = ("AGENTS.md", "CLAUDE.md")


def run_agents_md(args, ctx: CommandContext) -> Answer:
    from ...core.store.agents_file import CONVENTION_TAG, render_block, write_block

    engine = ctx.engine(args)
    decisions = engine.list_memories(kind="decision", limit=200)
    conventions = [m for m in engine.list_memories(tag=CONVENTION_TAG, limit=200) if m.kind != "decision"]
    block = render_block(decisions, conventions)
    targets = [engine.root / name for name in AGENT_FILES if (engine.root / name).exists()] or [engine.root / AGENT_FILES[0]]
    changed = [t.name for t in targets if write_block(t, block)]
    files = [t.name for t in targets]
    report = {"files": files, "changed": changed, "decisions": len(decisions), "conventions": len(conventions)}
    return Answer(report, lambda out: out.console.print(
        f"{len(decisions)} decision(s), {len(conventions)} convention(s) in {', '.join(files)}"
        + ("" if changed else " (already up to date)"), markup=False))


def run_export(args, ctx: CommandContext) -> Answer | int:
    from ...core.store.importer import export_order, export_record  # the store: not for the thin client
    from ...core.store.sessions import ALL_SESSIONS

    if args.agents_md:
        return run_agents_md(args, ctx)
    # Every session's session memories: an export is the whole store.
    memories = export_order(ctx.engine(args).list_memories(ALL_SESSIONS, status="all" if args.all_versions else "active"))
    lines = "".join(json.dumps(export_record(m), ensure_ascii=False) + "\n" for m in memories)
    if not args.output:
        ctx.stdout.write(lines)  # the records themselves, with or without --json
        return 0
    ctx.path(args.output).write_text(lines, encoding="utf-8")
    return Answer({"exported": len(memories), "output": args.output},
                  lambda out: out.console.print(f"exported {len(memories)} memories to {args.output}", markup=False))


COMMANDS = (
    Command("import", "import markdown/text/html/xml (split into sections) and json/jsonl/ndjson records (an export's "
            "records keep their ids); --dry-run lists what would be stored",
            run_import, add_import),
    Command("export", "export memories as JSONL (reads back with `cortex import`)", run_export, add_export),
)
