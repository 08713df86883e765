"""Handlers of the `cortex` subcommands: parse arguments into engine calls and print the results."""

from __future__ import annotations

import statistics
from pathlib import Path

from ...core.errors import CortexError
from ...core.records import Memory, MemoryDraft
from ...core.requests import SearchFilters, SearchRequest, SelectRequest
from ...core.text import visible
from .agent_commands import cmd_agent as cmd_agent
from .context import CommandContext
from ..output import age, selection_item_json, styled
from .text_input import read_text


def _memory_rows(memories: list[Memory]) -> list[list[str]]:
    rows = []
    for m in memories:
        state = m.status if m.kind != "task" or m.status != "active" else m.task_state
        rows.append([m.id, m.store, m.kind, state, f"v{m.version}", age(m.created_at), m.title, ",".join(m.tags)])
    return rows


def split_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeatable comma-separated options (`--tags a,b --tags c`) as one tuple."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


def _print_memories(args, ctx: CommandContext, memories: list[Memory], empty: str) -> None:
    if args.json:
        ctx.out.json([m.to_json() for m in memories])
    elif not memories:
        ctx.out.console.print(empty)
    else:
        ctx.out.table(["id", "store", "kind", "status", "ver", "age", "title", "tags"], _memory_rows(memories))


def _print_memory(ctx: CommandContext, memory: Memory) -> None:
    ctx.out.console.print(styled((memory.title, "bold"), f"  ({memory.kind}, {memory.status}, v{memory.version}, id {memory.id})"))
    meta = [f"created {memory.created_at:%Y-%m-%d %H:%M} UTC", f"scope {memory.scope}"]
    if memory.branch:
        meta.append(f"branch {memory.branch}@{memory.commit[:8]}")
    if memory.source_key:
        meta.append(f"key {memory.source_key}")
    if memory.kind == "task":
        meta.append(f"task {memory.task_state}")
    ctx.out.console.print(" · ".join(meta), style="dim")
    for label, values in (("tags", memory.tags), ("files", memory.files), ("symbols", memory.symbols)):
        if values:
            ctx.out.console.print(f"{label}: {', '.join(values)}", style="dim")
    ctx.out.console.print()
    ctx.out.console.out(memory.text)


def cmd_init(args, ctx: CommandContext) -> int:
    engine = ctx.engine(args)
    store = engine.init()
    if args.json:
        ctx.out.json({"db": store.db.uri, "root": str(engine.root), "is_repo": engine.is_repo})
    else:
        where = "git repository" if engine.is_repo else "directory (not a git repository)"
        ctx.out.console.print(f"cortex database ready at {store.db.uri} for {where} {engine.root}")
    return 0


def cmd_remember(args, ctx: CommandContext) -> int:
    text = read_text(ctx.stdin) if args.text == "-" else args.text
    draft = MemoryDraft(
        text=text,
        kind=args.kind,
        title=args.title,
        tags=split_list(args.tags),
        files=split_list(args.files),
        symbols=split_list(args.symbols),
        source_key=args.key,
        scope=args.scope,
    )
    result = ctx.engine(args).remember(draft)
    if args.json:
        ctx.out.json({"outcome": result.outcome, "memory": result.memory.to_json()})
    else:
        said = {"created": "remembered", "new_version": f"stored version {result.memory.version} of", "duplicate": "already known:",
                "queued": "team store unreachable; queued for `cortex sync`:"}
        ctx.out.console.print(f"{said[result.outcome]} {result.memory.id} ({result.memory.kind}) {result.memory.title}")
    return 0


def cmd_show(args, ctx: CommandContext) -> int:
    memory = ctx.engine(args).get(args.id)
    if args.json:
        ctx.out.json(memory.to_json())
    else:
        _print_memory(ctx, memory)
    return 0


def cmd_list(args, ctx: CommandContext) -> int:
    engine = ctx.engine(args)
    memories = engine.list(kind=args.kind, tag=args.tag, status=args.status, scope=args.scope, limit=args.limit)
    _warn_team(ctx, engine)
    _print_memories(args, ctx, memories, "no memories yet: add one with `cortex remember TEXT`")
    return 0


def _warn_team(ctx: CommandContext, engine) -> None:
    """A team store left out of a read is said on stderr, once, so local results still print."""
    if engine.team_error:
        ctx.out.warn(f"cortex: warning: {engine.team_error}; showing local memories only")


def cmd_sync(args, ctx: CommandContext) -> int:
    result = ctx.engine(args).team().sync()
    if args.json:
        ctx.out.json(result)
    elif result.error:
        ctx.out.console.print(f"sent {result.sent} queued team write(s); {result.waiting} still waiting: {result.error}",
                      markup=False, soft_wrap=True)
    else:
        ctx.out.console.print(f"sent {result.sent} queued team write(s); none waiting")
    return 1 if result.waiting else 0


def cmd_history(args, ctx: CommandContext) -> int:
    _print_memories(args, ctx, ctx.engine(args).history(args.key), "no versions")
    return 0


def cmd_forget(args, ctx: CommandContext) -> int:
    if not args.id and not args.key:
        raise CortexError("forget needs a memory id or --key")
    gone = ctx.engine(args).forget(args.id, args.key, purge=args.purge)
    if args.json:
        ctx.out.json({"purged" if args.purge else "deleted": [m.id for m in gone]})
    else:
        verb = "purged" if args.purge else "deleted"
        ctx.out.console.print(f"{verb} {len(gone)} version(s): {', '.join(m.id for m in gone)}")
    return 0


def cmd_done(args, ctx: CommandContext) -> int:
    memory = ctx.engine(args).set_task_state(args.id, "open" if args.reopen else "done")
    if args.json:
        ctx.out.json(memory.to_json())
    else:
        ctx.out.console.print(f"task {memory.id} is {memory.task_state}: {memory.title}")
    return 0


def cmd_import(args, ctx: CommandContext) -> int:
    from ...core.store.importer import plan_import

    engine = ctx.engine(args)
    plan = plan_import(ctx.path(args.source), default_kind=args.kind, scope=args.scope,
                       max_bytes=engine.settings.max_text_bytes)
    if not args.skip_bad:
        plan.refuse_bad()
    results = []
    with ctx.out.progress_bar("embedding") as update:
        restored = engine.import_exact(plan.exact, progress=update)
        for batch in plan.rounds():
            results += engine.remember_many(batch, progress=update)
    counts = {o: sum(r.outcome == o for r in results) for o in ("created", "new_version", "duplicate")}
    counts |= {"restored": len(restored), "already_present": len(plan.exact) - len(restored)}
    if args.json:
        ctx.out.json({"files": plan.files, **counts, "skipped": [{"path": p, "reason": r} for p, r in plan.skipped],
                    "bad": [{"where": b.where, "reason": b.reason} for b in plan.bad]})
        return 0
    exact = f", {counts['restored']} restored by id, {counts['already_present']} already present" if plan.exact else ""
    ctx.out.console.print(f"imported {plan.files} file(s): {counts['created']} new, {counts['new_version']} updated, "
                  f"{counts['duplicate']} already known{exact}", markup=False, soft_wrap=True)
    for path, reason in plan.skipped:
        ctx.out.console.print(f"  skipped {path}: {reason}", style="dim", markup=False, soft_wrap=True)
    for bad in plan.bad:
        ctx.out.console.print(f"  skipped bad record {bad}", style="yellow", markup=False, soft_wrap=True)
    return 0


def cmd_export(args, ctx: CommandContext) -> int:
    import json

    from ...core.store.importer import export_order, export_record

    memories = export_order(ctx.engine(args).list(status="all" if args.all_versions else "active"))
    lines = "".join(json.dumps(export_record(m), ensure_ascii=False) + "\n" for m in memories)
    if args.output:
        ctx.path(args.output).write_text(lines, encoding="utf-8")
        if not args.json:
            ctx.out.console.print(f"exported {len(memories)} memories to {args.output}", markup=False)
        else:
            ctx.out.json({"exported": len(memories), "output": args.output})
    else:
        ctx.stdout.write(lines)
    return 0


def cmd_stats(args, ctx: CommandContext) -> int:
    from ...core.answers import count_reasons

    engine = ctx.engine(args)
    stats = engine.stats()
    index = engine.code_index().status()
    skip_counts = count_reasons(engine.code_index().skipped())
    if args.json:
        ctx.out.json({"stores": stats, "index": {**index.__dict__, "fresh": index.fresh, "skipped": skip_counts}})
        return 0
    state = "fresh" if index.fresh else f"stale ({index.stale} changed, {index.new} new, {index.removed} removed)"
    ctx.out.console.print(f"code index: {index.indexed_files} files, {index.chunks} chunks, "
                  f"{index.embeddings_pending} embeddings pending, {state}")
    if skip_counts:
        ctx.out.console.print("  skipped: " + ", ".join(f"{n} {r}" for r, n in sorted(skip_counts.items())), style="dim")
    for s in stats:
        size = f"{s.disk_bytes / 1e6:.1f} MB" if s.disk_bytes is not None else "remote"
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(s.by_kind.items())) or "none"
        ctx.out.console.print(styled((s.uri, "bold"), f" (schema v{s.schema_version}, {size}, {s.table_versions} table versions)"))
        ctx.out.console.print(f"  memories: {s.active} active of {s.memories} stored; {s.open_tasks} open tasks; by kind: {kinds}")
    return 0


def cmd_git(args, ctx: CommandContext) -> int:
    git = ctx.engine(args).git(args.commits)
    if args.json:
        ctx.out.json(git.to_json())
        return 0
    if not git.is_repo:
        ctx.out.console.print(f"{git.root}: not a git repository")
        return 0
    where = f"detached at {git.head[:8]}" if git.detached else f"on {git.branch}"
    ctx.out.console.print(styled((str(git.root), "bold"), f" {where}" + (f" ({'; '.join(git.notes)})" if git.notes else "")))
    for label, files in (("staged", git.staged), ("modified", git.modified), ("untracked", git.untracked)):
        if files:
            ctx.out.console.print(f"{label}: {', '.join(files)}")
    rows = [[c.short, age(c.time), c.author, c.subject, str(len(c.files))] for c in git.commits]
    if rows:
        ctx.out.table(["commit", "age", "author", "subject", "files"], rows)
    ctx.out.console.print(f"branches: {', '.join(git.branches) or 'none'}")
    return 0


def cmd_gc(args, ctx: CommandContext) -> int:
    removed = ctx.engine(args).gc()
    if args.json:
        ctx.out.json({"versions_removed": removed})
    else:
        ctx.out.console.print(f"compacted; removed {removed} old version(s)")
    return 0


def _print_bench(args, ctx: CommandContext, result, rows, width: int) -> int:
    """A benchmark's result: JSON when asked, else one `label  value` line per row."""
    if args.json:
        ctx.out.json(result)
    else:
        for label, value in rows:
            ctx.out.console.print(f"{label:<{width}} {value}")
    return 0


def _bench_search_quality(args, ctx: CommandContext) -> int:
    from ..bench import search_quality as quality

    trees = []
    if args.tasks:
        if not args.mirrors:
            raise CortexError("--tasks needs --mirrors DIR (where <mirror_git_dir_name>/repo live)")
        trees += quality.dev_trees(Path(args.tasks), Path(args.mirrors), args.every, args.limit)
    for repo in args.repo:
        trees += quality.held_out_trees(Path(repo), args.limit or 30)
    if args.cases:
        if not args.mirrors:
            raise CortexError("--cases needs --mirrors DIR (where <owner>+<name>/repo live)")
        trees += quality.case_trees(quality.CASES, Path(args.mirrors))
    methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    groups = quality.run(trees, methods, Path(args.vector_cache) if args.vector_cache else None,
                         progress=ctx.out.warn)
    if args.json:
        ctx.out.json(groups)
        return 0
    cols = ["file@1", "file@3", "chunk@1", "chunk@3", "chunk@10", "MRR", "noise@3", "p50_ms", "p95_ms", "questions"]
    for group, rows in groups.items():
        ctx.out.console.print(f"{group}: method, {', '.join(cols)}", markup=False)
        ctx.out.table(["method", *cols], [[m, *["-" if r.get(c) is None else str(r[c]) for c in cols]] for m, r in rows.items()])
    return 0


def cmd_bench(args, ctx: CommandContext) -> int:
    from ..bench import store as bench_store

    if args.bench == "tui":
        from ..bench import tui as bench_tui

        r = bench_tui.run(Path(args.repo).resolve(), max(args.runs, 1), attached=args.attached)
        if args.json:
            ctx.out.json(r)
        else:
            p50 = statistics.median
            how = "attached to a warm resident server" if r.attached else "each with its own engine"
            ctx.out.console.print(f"dashboard on {r.repo} ({r.files} files, indexed), {r.runs} fresh processes {how}:\n"
                          f"  first results (git timeline)   p50 {p50(r.first_paint_s):.2f} s, max {max(r.first_paint_s):.2f} s\n"
                          f"  what, search, graph, timeline  p50 {p50(r.all_panes_s):.2f} s, max {max(r.all_panes_s):.2f} s")
        return 0
    if args.bench == "cli":
        from ..bench import cli as bench_cli

        rows = bench_cli.run(Path(args.repo).resolve(), args.words, max(args.runs, 1), max(args.cold_runs, 1))
        if args.json:
            ctx.out.json(rows)
        else:
            ctx.out.table(["command", "mode", "runs", "p50", "p95", "peak memory"], [
                [r.command, r.mode, str(r.runs), f"{r.p50_s * 1000:.0f} ms", f"{r.p95_s * 1000:.0f} ms",
                 f"{r.peak_mib:.0f} MiB"] for r in rows])
    if args.bench == "team":
        from ..bench import team as bench_team

        r = bench_team.run(args.uri, args.writes, args.searches)
        if args.json:
            ctx.out.json(r)
        else:
            for row in r:
                ctx.out.console.print(f"{row.store:<6} write p50 {row.write_p50_ms:.0f} ms, p95 {row.write_p95_ms:.0f} ms; "
                              f"search p50 {row.search_p50_ms:.0f} ms, p95 {row.search_p95_ms:.0f} ms "
                              f"({row.writes} writes, {row.searches} searches) at {row.uri}", markup=False, soft_wrap=True)
        return 0
    if args.bench == "select":
        from ..bench import select as bench_select

        r = bench_select.run(Path(args.repo), args.budget, args.tasks)
        if args.json:
            ctx.out.json(r)
        else:
            ctx.out.console.print(f"select on {r.repo} ({r.files} files, budget {r.budget:,}): "
                          f"p50 {r.p50_s:.2f} s, p95 {r.p95_s:.2f} s over {r.tasks} tasks")
        return 0
    if args.bench == "localize":
        from ..bench import localize

        if args.tasks:
            if not args.mirrors:
                raise CortexError("--tasks needs --mirrors DIR (where <mirror_git_dir_name>/repo live)")
            tasks = localize.load_tasks(Path(args.tasks), Path(args.mirrors))
        elif args.repo:
            tasks = localize.mine_tasks(Path(args.repo), limit=args.limit or 30)
        else:
            raise CortexError("give --tasks FILE --mirrors DIR, or --repo PATH")
        tasks = tasks[:: max(args.every, 1)]
        tasks = tasks[: args.limit] if args.limit else tasks
        methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
        rows = localize.run(tasks, args.budget, methods, progress=ctx.out.warn,
                            vector_cache=Path(args.vector_cache) if args.vector_cache else None)
        if args.json:
            ctx.out.json(rows)
        else:
            cols = ["edit_recall", "file_recall", "R@1", "R@5", "R@10", "tokens_median", "files_median", "s_per_task", "tasks"]
            ctx.out.table(["method", *cols], [[m, *[str(r.get(c, "")) for c in cols]] for m, r in rows.items()])
        return 0
    if args.bench == "search" and (args.tasks or args.repo or args.cases):
        return _bench_search_quality(args, ctx)
    if args.bench == "search":
        from ..bench import search as bench_search

        results = [bench_search.run_scale(int(n)) for n in args.scales.split(",")]
        cold = bench_search.cold_start()
        if args.json:
            ctx.out.json({"scales": results, "cold_start_s": cold})
        else:
            ctx.out.table(["items", "ANN index", "search p50", "search p95", "what p50", "what p95"], [
                [f"{r.items:,}", "yes" if r.ann_index else "no", f"{r.search_p50_ms:.0f} ms", f"{r.search_p95_ms:.0f} ms",
                 f"{r.what_p50_ms:.0f} ms", f"{r.what_p95_ms:.0f} ms"] for r in results])
            ctx.out.console.print(f"cold start (new process, first search): {cold:.2f} s")
        return 0
    if args.bench == "locomo":
        from ..bench import locomo

        table_rows = locomo.run(Path(args.data), args.conversations, progress=ctx.out.warn)
        if args.json:
            ctx.out.json(table_rows)
        else:
            cols = ["R@1", "R@5", "R@10", "MRR", "questions", "ms_per_query"]
            ctx.out.table(["mode", *cols], [[mode, *[str(r[c]) for c in cols]] for mode, r in table_rows.items()])
        return 0
    if args.bench == "scale":
        from ..bench import scale as bench_scale

        result = bench_scale.run(Path(args.repo), args.files, args.memories, queries=args.queries, touch=args.touch)
        return _print_bench(args, ctx, result, bench_scale.rows(result), 40)
    if args.bench == "secrets":
        from ..bench import secrets as bench_secrets

        result = bench_secrets.run([ctx.path(r) for r in args.repos])
        return _print_bench(args, ctx, result, bench_secrets.rows(result), 24)
    if args.bench == "disk":
        from ..bench import disk as bench_disk

        result = bench_disk.run(ctx.path(args.repo), minutes=args.minutes, writers=args.writers)
        return _print_bench(args, ctx, result, bench_disk.rows(result), 34)
    if args.bench == "index":
        from ..bench import index as bench_index

        result = bench_index.run(Path(args.repo), edits=args.edits, embed_limit=args.embed_limit)
        return _print_bench(args, ctx, result, bench_index.rows(result), 34)
    if args.bench == "store":
        result = bench_store.run(batch=args.batch, singles=args.singles)
        if args.json:
            ctx.out.json(result)
        else:
            ctx.out.console.print(f"model load            {result.model_load_s:.2f} s")
            ctx.out.console.print(f"embedding throughput  {result.embed_chunks_per_s:.1f} texts/s (batch of 256 short memories)")
            ctx.out.console.print(f"remember, batch       {result.remember_batch_per_s:.1f} memories/s ({result.batch_size} in one batch)")
            ctx.out.console.print(f"remember, single      p50 {result.single_p50_ms:.1f} ms, p95 {result.single_p95_ms:.1f} ms ({result.singles} calls)")
    return 0


def cmd_index(args, ctx: CommandContext) -> int:
    engine = ctx.engine(args)
    if args.status:
        st = engine.code_index(create=False).status()
        if args.json:
            ctx.out.json({**st.__dict__, "fresh": st.fresh})
        else:
            state = "fresh" if st.fresh else f"stale: {st.stale} changed, {st.new} new, {st.removed} removed file(s)"
            ctx.out.console.print(f"index of {engine.root}: {state}; {st.indexed_files} files, {st.chunks} chunks, "
                          f"{st.embeddings_pending} embeddings pending")
        return 0
    if args.skipped:
        return _list_skipped(args, ctx, engine)
    from ..bridge.index_process import PassCaller, index_in_children

    with ctx.out.progress_bar("indexing") as update:
        caller = PassCaller(lambda e: update(e.done, e.total, e.phase), lambda: False)
        report = index_in_children(engine, not args.no_embed, caller)
    engine.compact_due()  # writes never compact; an explicit index run is a moment to (see core/store/compaction.py)
    if args.json:
        ctx.out.json({
            "root": str(engine.root), "listed": report.listed, "changed": report.changed, "unchanged": report.unchanged,
            "removed": report.removed, "chunks": report.chunks, "embedded": report.embedded,
            "embeddings_pending": report.embeddings_pending, "skipped_counts": report.skip_counts,
            "skipped": [{"path": p, "reason": r} for p, r in report.skipped],
            "lexical_seconds": round(report.lexical_seconds, 3), "embed_seconds": round(report.embed_seconds, 3),
        })
        return 0
    ctx.out.console.print(
        f"indexed {engine.root}: {report.changed} file(s) updated, {report.unchanged} unchanged, {report.removed} removed; "
        f"{report.chunks} chunks in {report.lexical_seconds:.1f}s; {report.embedded} embedded in {report.embed_seconds:.1f}s; "
        f"{report.embeddings_pending} pending", soft_wrap=True,
    )
    if report.skipped:
        counts = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skip_counts.items()))
        ctx.out.console.print(f"skipped: {counts} (`cortex index --skipped` lists them)", style="dim", markup=False)
    return 0


def _list_skipped(args, ctx: CommandContext, engine) -> int:
    """The skip list the last index run stored, read back: nothing is listed, read or embedded."""
    skipped = engine.code_index(create=False).skipped()
    if not skipped and not engine.has_index():
        raise CortexError(f"nothing indexed yet in {engine.root}: run `cortex index` first")
    if args.json:
        ctx.out.json([{"path": p, "reason": r} for p, r in skipped])
        return 0
    if not skipped:
        ctx.out.console.print("the last index run skipped no files")
    for path, reason in skipped:
        ctx.out.console.print(f"{path}: {reason}", markup=False, soft_wrap=True)
    return 0


def cmd_watch(args, ctx: CommandContext) -> int:
    import threading

    from ...core.index.watch import IndexWatcher

    engine = ctx.engine(args)
    index = engine.code_index(create=True)
    index.update(embed=False)

    def show(update) -> None:
        r = update.report
        what = "git state changed" if update.git_state_changed else ", ".join(update.paths[:3])
        ctx.out.console.print(f"{what}: {r.changed} updated, {r.removed} removed in {update.seconds * 1000:.0f} ms")

    watcher = IndexWatcher(index, on_update=show, on_error=lambda m: ctx.out.console.print(m, style="red"),
                           debounce_ms=engine.settings.watch_debounce_ms, embed=not args.no_embed)
    engine.compact_in_background(lambda m: ctx.out.console.print(m, style="red"))
    ctx.out.console.print(f"watching {engine.root} (Ctrl+C to stop)")
    with watcher:
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


def cmd_search(args, ctx: CommandContext) -> int:
    filters = SearchFilters(
        kinds=tuple(args.kind or ()), tags=tuple(args.tag or ()), files=tuple(args.file or ()), branch=args.branch,
        since=args.since, memories_only=args.memories_only, code_only=args.code_only, history=args.history,
    )
    engine = ctx.engine(args)
    results = engine.smart_search(SearchRequest(" ".join(args.query), filters, args.limit, args.expand, args.filter))
    _warn_team(ctx, engine)
    if args.json:
        ctx.out.json(results.to_json())
        return 0
    if results.implicit and results.terms:
        ctx.out.console.print(f"no query: searching for what you are working on ({' '.join(results.terms[:12])})", style="dim")
    if results.index_fresh is False:
        ctx.out.console.print("the code index is stale: run `cortex index` (or keep `cortex watch` running)", style="yellow")
    for note in results.notes:
        ctx.out.console.print(note, style="dim")
    if not results.hits:
        ctx.out.console.print("no results")
    for i, hit in enumerate(results.hits, 1):
        where = hit.location if hit.source == "code" else f"{hit.kind} {hit.id} {hit.memory.created_at:%Y-%m-%d}"
        if hit.memory is not None and hit.memory.store != "repo":
            where += f" ({hit.memory.store})"
        ctx.out.console.print(styled((f"{i:>2}. {hit.title}", "bold"), "  ", (f"{where}  score {hit.score.total:.3f}", "dim")))
        if args.explain:
            ctx.out.console.print(f"    {hit.score.explain()}", style="cyan")
        if args.full or hit.snippet is None:
            ctx.out.console.out("    " + hit.text.replace("\n", "\n    "))
        else:  # the lines that match the query best, numbered as in the file (or the memory)
            for n, line in enumerate(hit.snippet.text.splitlines(), hit.snippet.start_line):
                ctx.out.console.out(f"    {n:>5}  {line}")
    if results.neighbours:
        ctx.out.console.print("neighbours of the top hits", style="bold")
        for n in results.neighbours:
            ctx.out.console.print(f"  {n.via:<12} {n.label}")
    return 0


def cmd_what(args, ctx: CommandContext) -> int:
    w = ctx.engine(args).what(args.limit)
    if args.json:
        ctx.out.json(w.to_json())
        return 0
    head = f"on {w.git.branch}" if w.git.branch else ("detached" if w.git.detached else "")
    ctx.out.console.print(styled(("What should I know", "bold"), f" {head}"))

    def section(title: str, items: list[str]) -> None:
        if items:
            ctx.out.console.print(f"\n{title}", style="bold")
            for item in items:
                ctx.out.console.print(f"  {item}")

    fmt = lambda m: f"{m.id} {m.kind:<9} {age(m.updated_at):>4}  {m.title}"  # noqa: E731
    section("Memories on this branch", [fmt(m) for m in w.branch_memories])
    section("About the files you changed", [fmt(m) + f"  ({', '.join(m.files)})" for m in w.file_memories])
    section("Open tasks", [fmt(m) for m in w.open_tasks])
    section("Recent memories", [fmt(m) for m in w.recent_memories])
    section("Recent commits", [f"{c.short} {age(c.time):>4}  {c.subject}" for c in w.recent_commits])
    section("Working change, most imported first", [f"{f.state:<9} {f.path}  imported by {f.imported_by}" for f in w.changed_files])
    for hint in w.hints:
        ctx.out.console.print(f"\n{hint}", style="dim")
    return 0


def cmd_graph(args, ctx: CommandContext) -> int:
    from ...core.graph.graph import neighbourhood

    found = neighbourhood(ctx.engine(args).graph(), args.node, args.depth, args.limit)
    if args.json:
        ctx.out.json(found)
        return 0
    ctx.out.console.print(styled((found.label, "bold"), " ", (f"({found.node})", "dim")))
    if not found.neighbours:
        ctx.out.console.print("no neighbours")
    for n in found.neighbours:
        ctx.out.console.print(f"{'  ' * n.depth}{n.via:<12} {n.label}")
    return 0


def _select_request(args, ctx: CommandContext) -> SelectRequest:
    text = " ".join(args.task)
    return SelectRequest(read_text(ctx.stdin) if text == "-" else text, args.budget, args.max_items, args.include_tests,
                         args.min_score, fmt=args.format)


def cmd_select(args, ctx: CommandContext) -> int:
    sel = ctx.engine(args).select_context(_select_request(args, ctx))
    if args.json:
        ctx.out.json({
            "task": sel.task[:500], "budget": sel.budget, "tokens": sel.tokens, "format": sel.fmt, "encoding": sel.encoding,
            "notes": sel.notes,
            "chosen": [selection_item_json(i) for i in sel.chosen], "left_out": [selection_item_json(i) for i in sel.left_out],
            "ranked_files": sel.ranked_files[:50],
        })
        return 0
    ctx.out.console.print(styled((f"{sel.tokens:,} / {sel.budget:,} tokens", "bold"), f" ({sel.encoding}), {len(sel.chosen)} items"))
    for note in sel.notes:
        ctx.out.console.print(note, style="yellow")
    ctx.out.table(["kind", "item", "tokens", "score", "why"], [
        [i.kind, i.provenance, f"{i.tokens:,}", f"{i.value:.3f}", _why(i)] for i in sel.chosen
    ])
    if sel.left_out:
        ctx.out.console.print("left out for budget: " + ", ".join(f"{i.provenance} ({i.tokens:,})" for i in sel.left_out[:8]), style="dim")
    return 0


def _why(item) -> str:
    top = sorted(((k, v) for k, v in item.signals.items() if v and k != "role"), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{k} {v:.2f}" for k, v in top)


def cmd_context(args, ctx: CommandContext) -> int:
    from ...core.context.assemble import assemble
    from ...core.clipboard import copy, terminal_osc52

    engine = ctx.engine(args)
    sel = engine.select_context(_select_request(args, ctx))
    doc = assemble(sel, args.format)
    report = {"tokens": doc.tokens, "budget": sel.budget, "items": len(doc.items), "redactions": doc.redactions,
              "format": doc.format, "notes": sel.notes}
    if args.output:
        ctx.path(args.output).write_text(doc.text, encoding="utf-8")
        report["output"] = args.output
    if args.copy:
        result = copy(doc.text, osc52=terminal_osc52(), fallback_dir=engine.root / ".cortex" / "clipboard")
        report["copied"] = {"method": result.method, "bytes": result.bytes, "path": result.path}
        report["message"] = result.describe(doc.tokens)
    if args.json:
        ctx.out.json({**report, "text": doc.text} if not (args.output or args.copy) else report)
        return 0
    if not (args.output or args.copy):
        # Verbatim into a pipe or file; on a terminal, control characters are shown, not obeyed (see output).
        ctx.stdout.write(visible(doc.text) if ctx.stdout.isatty() else doc.text)
        return 0
    if args.output:
        ctx.out.console.print(f"wrote {doc.tokens:,} tokens ({len(doc.items)} items) to {args.output}", style="dim")
    if args.copy:
        ctx.out.console.print(report["message"])
    if doc.redactions:
        ctx.out.console.print(f"{doc.redactions} secret-looking string(s) redacted", style="yellow")
    return 0


def cmd_serve(args, ctx: CommandContext) -> int:
    from . import serve_commands

    return serve_commands.run(args, ctx)


def cmd_mcp(args, ctx: CommandContext) -> int:
    from ..mcp.server import serve

    if args.http is None and (args.no_auth or args.show_token):
        raise CortexError("--no-auth and --show-token are for --http PORT (stdio needs no token)")
    serve(ctx.path(args.path), ctx.database(args.db), args.http, watch=not args.no_watch, auth=not args.no_auth, show_token=args.show_token)
    return 0


def cmd_doctor(args, ctx: CommandContext) -> int:
    from ...core.doctor import run_doctor

    engine = ctx.engine(args)
    s = engine.settings
    report = run_doctor(engine.db_uri, engine.root, engine.is_repo, engine.embedder, s.max_file_bytes, s.encoding,
                        s.lock_timeout)
    if args.json:
        ctx.out.json(report.to_json())
        return 0
    for t in report.tables:
        state = "ok" if not t.problem else "LOST" if t.problem.startswith("LOST") else "DAMAGED"
        ctx.out.console.out(f"{state:8} {t.name}: " + (f"{t.rows} rows" if not t.problem else t.problem.removeprefix("LOST ")))
    for line in report.actions or ["nothing to repair"]:
        ctx.out.console.out(line)
    return 0
