"""`cortex bench ...`: each benchmark's arguments and how its numbers print, registered by the benchmarks
themselves; the CLI only includes `COMMANDS`.

Each benchmark module is imported when its benchmark runs: they import the engine, the dashboard or git, and the
thin client imports this module to parse."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import CortexError
from ..command import Answer, Command, add_nested


@dataclass(frozen=True)
class Bench:
    """One `cortex bench NAME`."""

    name: str
    help: str
    run: Callable  # (args, ctx) -> Answer
    add_arguments: Callable


def _lines(result, rows, width: int) -> Answer:
    """A benchmark's result: one `label  value` line per row."""

    def show(out) -> None:
        for label, value in rows:
            out.console.print(f"{label:<{width}} {value}")

    return Answer(result, show)


def _methods(text: str) -> tuple[str, ...]:
    return tuple(m.strip() for m in text.split(",") if m.strip())


def _budgets(text: str) -> tuple[int, ...]:
    try:
        budgets = tuple(int(b) for b in text.split(",") if b.strip())
    except ValueError:
        raise CortexError(f"--budgets takes comma-separated whole numbers of tokens (got {text!r})") from None
    if not budgets or min(budgets) <= 0:
        raise CortexError(f"--budgets takes positive token counts (got {text!r})")
    return budgets


def _cache(args) -> Path | None:
    return Path(args.vector_cache) if args.vector_cache else None


def _add_store(b) -> None:
    b.add_argument("--batch", type=int, default=1000)
    b.add_argument("--singles", type=int, default=100)


def _store(args, ctx) -> Answer:
    from . import store

    r = store.run(batch=args.batch, singles=args.singles)

    def show(out) -> None:
        out.console.print(f"model load            {r.model_load_s:.2f} s")
        out.console.print(f"embedding throughput  {r.embed_chunks_per_s:.1f} texts/s (batch of 256 short memories)")
        out.console.print(f"remember, batch       {r.remember_batch_per_s:.1f} memories/s ({r.batch_size} in one batch)")
        out.console.print(f"remember, single      p50 {r.single_p50_ms:.1f} ms, p95 {r.single_p95_ms:.1f} ms ({r.singles} calls)")

    return Answer(r, show)


def _add_localize(b) -> None:
    b.add_argument("--tasks", help="JSONL task file (shared/bench/localize format)")
    b.add_argument("--mirrors", help="directory holding <mirror_git_dir_name>/repo bare git directories")
    b.add_argument("--repo", action="append", default=[],
                   help="mine tasks from this repository's own history instead (repeatable; --limit per repository)")
    b.add_argument("--budget", type=int, default=12000)
    b.add_argument("--budgets", help="comma-separated token budgets (a budget curve: every method at each); "
                                     "overrides --budget")
    b.add_argument("--limit", type=int, default=None, help="use at most this many tasks (per repository with --repo)")
    b.add_argument("--every", type=int, default=1, help="use every N-th task (a subset spread over all repositories)")
    b.add_argument("--methods", help="comma-separated (default: cortex,bm25,grep,random,cognitive-cache, and "
                                     "llm-triage when llm_filter_url and llm_filter_model are set); cortex+embed also "
                                     "embeds the candidate files (slow the first time); oracle shows only the fix's "
                                     "changed lines (the ceiling)")
    b.add_argument("--vector-cache", help="SQLite file of embeddings shared across tasks and runs (cortex+embed)")
    b.add_argument("--keep", metavar="DIR", help="keep each task's tree and index here; a later run selects from them "
                                                 "again without indexing (for comparing selection settings)")


def _localize(args, ctx) -> Answer:
    from ...core.config import Settings
    from . import localize

    if args.tasks:
        if not args.mirrors:
            raise CortexError("--tasks needs --mirrors DIR (where <mirror_git_dir_name>/repo live)")
        tasks = localize.load_tasks(Path(args.tasks), Path(args.mirrors))
        tasks = tasks[:: max(args.every, 1)]
        tasks = tasks[: args.limit] if args.limit else tasks
    elif args.repo:
        tasks = [t for repo in args.repo for t in localize.mine_tasks(Path(repo), limit=args.limit or 30)]
        tasks = tasks[:: max(args.every, 1)]
    else:
        raise CortexError("give --tasks FILE --mirrors DIR, or --repo PATH")
    budgets = _budgets(args.budgets) if args.budgets else (args.budget,)
    methods = _methods(args.methods) if args.methods else localize.default_methods(Settings())
    results = localize.run(tasks, budgets, methods, progress=ctx.out.warn, vector_cache=_cache(args),
                           keep=Path(args.keep) if args.keep else None)
    cols = ["edit_recall", "file_recall", "gold_token_share", "gold_file_share", "R@1", "R@5", "R@10", "tokens_median",
            "files_median", "near_duplicates", "s_per_task", "tasks"]

    def show(out) -> None:
        out.table(["method", *cols], [[m, *[str(r.get(c, "")) for c in cols]] for m, r in results.rows.items()])
        if results.duels:
            out.console.print("edit recall task by task, cortex against each peer (win/tie/loss):", markup=False)
            out.table(["repository", "peer", "budget", "win", "tie", "loss"],
                      [[d.repository, d.peer, f"{d.budget:,}", str(d.wins), str(d.ties), str(d.losses)]
                       for d in results.duels])

    return Answer({"methods": results.rows, "duels": [d.__dict__ for d in results.duels]}, show)


def _add_map(b) -> None:
    b.add_argument("--tasks", help="JSONL task file (shared/bench/localize format)")
    b.add_argument("--mirrors", help="directory holding <mirror_git_dir_name>/repo bare git directories")
    b.add_argument("--latency", metavar="REPO", help="instead: time repo_map and snapshot through `cortex mcp` "
                                                     "against REPO's resident server (index it first)")
    b.add_argument("--calls", type=int, default=30, help="warm calls per tool (--latency)")
    b.add_argument("--repo", action="append", default=[],
                   help="mine fixes from this repository's history instead of --tasks (repeatable; --limit per repository)")
    b.add_argument("--budgets", default="1000,2000", help="comma-separated token budgets")
    b.add_argument("--limit", type=int, default=None, help="use at most this many tasks")
    b.add_argument("--every", type=int, default=1, help="use every N-th task (a subset spread over all repositories)")
    b.add_argument("--aider-python", help="interpreter of an environment with aider-chat installed: its RepoMap runs "
                                          "beside ours on the same trees (left out without it)")


def _map(args, ctx) -> Answer:
    from . import localize, repo_map

    if args.latency:
        times = repo_map.latency(Path(args.latency), args.calls)
        return Answer(times, lambda out: out.table(
            ["MCP tool", "first call", "p50", "p95", "calls"],
            [[t.tool, f"{t.first_ms:.0f} ms", f"{t.p50_ms:.0f} ms", f"{t.p95_ms:.0f} ms", str(t.calls)] for t in times]))
    if args.repo:
        tasks = [t for repo in args.repo for t in localize.mine_tasks(Path(repo), limit=args.limit or 30)]
    elif args.tasks and args.mirrors:
        tasks = localize.load_tasks(Path(args.tasks), Path(args.mirrors))[:: max(args.every, 1)]
        tasks = tasks[: args.limit] if args.limit else tasks
    else:
        raise CortexError("give --tasks FILE --mirrors DIR, --repo PATH, or --latency REPO")
    budgets = _budgets(args.budgets)
    rows = repo_map.run(tasks, budgets, args.aider_python, progress=ctx.out.warn)
    cols = ["fixes_shown", "file_recall", "tokens_median", "tokens_max", "s_median", "tasks"]
    return Answer(rows, lambda out: out.table(["map", *cols],
                                              [[m, *[str(r.get(c, "")) for c in cols]] for m, r in rows.items()]))


def _add_team(b) -> None:
    b.add_argument("--uri", help="team store to measure (default: the team_db setting)")
    b.add_argument("--writes", type=int, default=30)
    b.add_argument("--searches", type=int, default=30)


def _team(args, ctx) -> Answer:
    from . import team

    r = team.run(args.uri, args.writes, args.searches)

    def show(out) -> None:
        for row in r:
            out.console.print(f"{row.store:<6} write p50 {row.write_p50_ms:.0f} ms, p95 {row.write_p95_ms:.0f} ms; "
                              f"search p50 {row.search_p50_ms:.0f} ms, p95 {row.search_p95_ms:.0f} ms "
                              f"({row.writes} writes, {row.searches} searches) at {row.uri}", markup=False, soft_wrap=True)

    return Answer(r, show)


def _add_select(b) -> None:
    b.add_argument("--repo", required=True)
    b.add_argument("--budget", type=int, default=12000)
    b.add_argument("--tasks", type=int, default=20)


def _select(args, ctx) -> Answer:
    from . import select

    r = select.run(Path(args.repo), args.budget, args.tasks)
    return Answer(r, lambda out: out.console.print(f"select on {r.repo} ({r.files} files, budget {r.budget:,}): "
                                                   f"p50 {r.p50_s:.2f} s, p95 {r.p95_s:.2f} s over {r.tasks} tasks"))


def _add_search(b) -> None:
    b.add_argument("--scales", default="10000,100000", help="comma-separated item counts (latency mode)")
    b.add_argument("--tasks", help="JSONL task file (shared/bench/localize format): fixes' descriptions as questions")
    b.add_argument("--mirrors", help="directory holding <owner>+<name>/repo bare git directories")
    b.add_argument("--repo", action="append", default=[], help="mine fixes from this repository's history (repeatable)")
    b.add_argument("--cases", action="store_true", help="also ask the checked-in case list (needs --mirrors)")
    b.add_argument("--case-file", help="ask this case list instead of the checked-in one (same format; implies --cases)")
    b.add_argument("--limit", type=int, default=None, help="at most this many fixes per task file or repository")
    b.add_argument("--every", type=int, default=1, help="use every N-th task of --tasks")
    b.add_argument("--methods", default="cortex,cortex-lexical,bm25,grep,selector,selector-lexical",
                   help="comma-separated; cortex and selector embed every chunk (vectors cached on disk)")
    b.add_argument("--vector-cache", help="SQLite file of embeddings shared across trees and runs")


def _search(args, ctx) -> Answer:
    if args.tasks or args.repo or args.cases or args.case_file:
        return _search_quality(args, ctx)
    from . import search

    results = [search.run_scale(int(n)) for n in args.scales.split(",")]
    cold = search.cold_start()

    def show(out) -> None:
        out.table(["items", "ANN index", "search p50", "search p95", "what p50", "what p95"], [
            [f"{r.items:,}", "yes" if r.ann_index else "no", f"{r.search_p50_ms:.0f} ms", f"{r.search_p95_ms:.0f} ms",
             f"{r.what_p50_ms:.0f} ms", f"{r.what_p95_ms:.0f} ms"] for r in results])
        out.console.print(f"cold start (new process, first search): {cold:.2f} s")

    return Answer({"scales": results, "cold_start_s": cold}, show)


def _search_quality(args, ctx) -> Answer:
    from . import search_quality as quality

    trees = []
    if args.tasks:
        if not args.mirrors:
            raise CortexError("--tasks needs --mirrors DIR (where <mirror_git_dir_name>/repo live)")
        trees += quality.dev_trees(Path(args.tasks), Path(args.mirrors), args.every, args.limit)
    for repo in args.repo:
        trees += quality.held_out_trees(Path(repo), args.limit or 30)
    if args.cases or args.case_file:
        if not args.mirrors:
            raise CortexError("--cases needs --mirrors DIR (where <owner>+<name>/repo live)")
        trees += quality.case_trees(Path(args.case_file) if args.case_file else quality.CASES, Path(args.mirrors))
    groups = quality.run(trees, _methods(args.methods), _cache(args), progress=ctx.out.warn)
    cols = ["file@1", "file@3", "chunk@1", "chunk@3", "chunk@10", "MRR", "noise@3", "p50_ms", "p95_ms", "questions"]

    def show(out) -> None:
        for group, rows in groups.items():
            out.console.print(f"{group}: method, {', '.join(cols)}", markup=False)
            out.table(["method", *cols], [[m, *["-" if r.get(c) is None else str(r[c]) for c in cols]] for m, r in rows.items()])

    return Answer(groups, show)


def _add_locomo(b) -> None:
    b.add_argument("--data", required=True, help="LoCoMo JSON (a list of conversations with qa)")
    b.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")


def _locomo(args, ctx) -> Answer:
    from . import locomo

    rows = locomo.run(Path(args.data), args.conversations, progress=ctx.out.warn)
    cols = ["R@1", "R@5", "R@10", "MRR", "questions", "ms_per_query"]
    return Answer(rows, lambda out: out.table(["mode", *cols], [[mode, *[str(r[c]) for c in cols]] for mode, r in rows.items()]))


def _add_tui(b) -> None:
    b.add_argument("repo", nargs="?", default=".", help="repository (indexed first if needed)")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--attached", action="store_true", help="the dashboards attach to a warm resident server")


def _tui(args, ctx) -> Answer:
    from statistics import median as p50

    from . import tui

    r = tui.run(Path(args.repo).resolve(), max(args.runs, 1), attached=args.attached)
    how = "attached to a warm resident server" if r.attached else "each with its own engine"
    return Answer(r, lambda out: out.console.print(
        f"dashboard on {r.repo} ({r.files} files, indexed), {r.runs} fresh processes {how}:\n"
        f"  first results (git timeline)   p50 {p50(r.first_paint_s):.2f} s, max {max(r.first_paint_s):.2f} s"
        f" ({p50(r.first_paint_cpu_s):.2f} CPU-s)\n"
        f"  what, search, graph, timeline  p50 {p50(r.all_panes_s):.2f} s, max {max(r.all_panes_s):.2f} s"
        f" ({p50(r.all_panes_cpu_s):.2f} CPU-s)"))


def _add_cli(b) -> None:
    b.add_argument("repo", nargs="?", default=".", help="repository to run the commands in")
    b.add_argument("--words", default="progress bar color", help="the search words (also given to git grep)")
    b.add_argument("--runs", type=int, default=20, help="runs of each warm command and of git grep")
    b.add_argument("--cold-runs", type=int, default=3, help="runs of each cold and in-process command (0: warm only)")


def _cli(args, ctx) -> Answer:
    from . import cli

    rows = cli.run(Path(args.repo).resolve(), args.words, max(args.runs, 1), max(args.cold_runs, 0))
    return Answer(rows, lambda out: out.table(["command", "mode", "runs", "p50", "p95", "its CPU p50", "peak memory"], [
        [r.command, r.mode, str(r.runs), f"{r.p50_s * 1000:.0f} ms", f"{r.p95_s * 1000:.0f} ms",
         f"{r.cpu_p50_s * 1000:.0f} ms", f"{r.peak_mib:.0f} MiB"] for r in rows]))


def _secrets(args, ctx) -> Answer:
    from . import secrets

    result = secrets.run([ctx.path(r) for r in args.repos])
    return _lines(result, secrets.rows(result), 24)


def _add_disk(b) -> None:
    b.add_argument("--repo", required=True, help="a git repository whose tracked files are copied (read only)")
    b.add_argument("--minutes", type=float, default=5.0)
    b.add_argument("--writers", type=int, default=3, help="processes remembering notes through the server")


def _disk(args, ctx) -> Answer:
    from . import disk

    result = disk.run(ctx.path(args.repo), minutes=args.minutes, writers=args.writers)
    return _lines(result, disk.rows(result), 34)


def _add_index(b) -> None:
    b.add_argument("--repo", required=True, help="a git repository or directory to index (read in place)")
    b.add_argument("--edits", type=int, default=20, help="saves to time under the watcher")
    b.add_argument("--embed-limit", type=int, default=None, help="embed at most this many chunks (default: all)")


def _index(args, ctx) -> Answer:
    from . import index

    result = index.run(Path(args.repo), edits=args.edits, embed_limit=args.embed_limit)
    return _lines(result, index.rows(result), 34)


def _add_scale(b) -> None:
    b.add_argument("--repo", required=True, help="a repository whose indexable files are replicated into the work tree (read only)")
    b.add_argument("--files", type=int, default=5_000, help="files in the work tree (the issue's target: 50000)")
    b.add_argument("--memories", type=int, default=100_000, help="synthetic memories (the issue's target: 1000000)")
    b.add_argument("--touch", type=int, default=10_000, help="unchanged files to touch and re-index")
    b.add_argument("--queries", type=int, default=30)
    b.add_argument("--keep", metavar="DIR", help="build the tree and store in DIR and leave them there; a later run "
                   "with the same --repo/--files/--memories reuses them (index time and peak then read 0)")
    b.add_argument("--latency-only", action="store_true",
                   help="measure search, what, remember, select and status only (no save, idle or touch phases)")


def _scale(args, ctx) -> Answer:
    from . import scale

    result = scale.run(Path(args.repo), args.files, args.memories, queries=args.queries, touch=args.touch,
                       keep=Path(args.keep) if args.keep else None, latency_only=args.latency_only)
    return _lines(result, scale.rows(result), 40)


def _add_staleness(b) -> None:
    b.add_argument("--mirrors", required=True, help="directory holding <owner>+<name>/repo bare git directories")
    b.add_argument("--repos", default="pallets+click,spf13+cobra,Textualize+rich", help="comma-separated mirror names")
    b.add_argument("--window", type=int, default=800, help="the newest N first-parent commits of each history")
    b.add_argument("--memories", type=int, default=150, help="memories made per repository")


def _staleness(args, ctx) -> Answer:
    from . import staleness

    results = staleness.run(Path(args.mirrors), list(_methods(args.repos)), args.window, args.memories,
                            progress=ctx.out.warn)
    cols = ["memories", "checks", "changed", "flagged_of_changed", "unchanged", "flagged_of_unchanged",
            "file_baseline_flagged_of_unchanged", "check_ms_p50"]
    rows = [r.to_json() for r in results]
    total = staleness.RepoResult("all")
    for r in results:
        for name in ("memories", "checks", "changed", "changed_flagged", "unchanged", "unchanged_flagged",
                     "baseline_unchanged_flagged"):
            setattr(total, name, getattr(total, name) + getattr(r, name))
        total.check_ms += r.check_ms
    rows.append(total.to_json())
    return Answer(rows, lambda out: out.table(["repo", *cols], [[r["repo"], *[str(r[c]) for c in cols]] for r in rows]))


BENCHES = {b.name: b for b in (
    Bench("staleness", "memories made from real commits, checked at later ones: flagged when their code changed?",
          _staleness, _add_staleness),
    Bench("store", "remember throughput/latency, embedding speed, model load", _store, _add_store),
    Bench("localize", "edit recall on real bug fixes: ours vs BM25, grep, random, cognitive-cache", _localize,
          _add_localize),
    Bench("map", "share of real fixes whose edited files a task-focused repo map shows: ours vs Aider's", _map,
          _add_map),
    Bench("team", "write and search latency of a team store beside a local one", _team, _add_team),
    Bench("select", "select latency (p50/p95) on an indexed repository", _select, _add_select),
    Bench("search", "search/what latency at 10k and 100k items, cold start; with --tasks, --repo or "
          "--cases: search quality on real questions vs BM25, git grep and the selector", _search, _add_search),
    Bench("locomo", "LoCoMo evidence recall: full-text vs vector vs hybrid vs smart", _locomo, _add_locomo),
    Bench("tui", "seconds from the command to the first painted dashboard with results", _tui, _add_tui),
    Bench("cli", "wall time and memory of cortex commands: cold, warm server, in-process, git grep", _cli, _add_cli),
    Bench("secrets", "lines of real repositories the secret detector flags, and its speed", _secrets,
          lambda b: b.add_argument("repos", nargs="+", help="git work trees or bare mirrors (HEAD is read, nothing written)")),
    Bench("disk", ".cortex size under sustained writes (writers + watcher + edits) vs compacted", _disk, _add_disk),
    Bench("index", "indexing speed, embeddings, size, RSS, save-to-searchable", _index, _add_index),
    Bench("scale", "search/what/remember/select/status, save-to-searchable, touch re-index, idle CPU, RSS at scale",
          _scale, _add_scale),
)}


def add_bench(p) -> None:
    bench = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for b in BENCHES.values():
        b.add_arguments(add_nested(bench, b.name, b.help))


COMMANDS = (
    Command("bench", "benchmarks that print numbers", lambda args, ctx: BENCHES[args.bench].run(args, ctx), add_bench),
)
