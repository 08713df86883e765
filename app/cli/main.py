"""`cortex`: the headless command line over the engine. Every command takes --json."""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from ...core.errors import CortexError

if TYPE_CHECKING:  # the thin client imports this module for its parser: nothing heavy at the top
    from .context import CommandContext

KIND_HELP = "decision, note, task, fact, observation, link, agent"


def _at_least(low: int) -> Callable[[str], int]:
    """An argparse type for whole numbers with a floor (a negative limit or budget is a typo, not a request)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value

    return parse


def _finite(low: float | None = None, above: bool = False) -> Callable[[str], float]:
    """An argparse type for real numbers: `nan` and `inf` are typos too, and so is a value under the floor (or at
    it, with `above`)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if low is not None and (value <= low if above else value < low):
            raise argparse.ArgumentTypeError(f"{text} is {'not more' if above else 'less'} than {low:g}")
        return value

    return parse


def _port(text: str) -> int:
    """An argparse type for a TCP port to listen on."""
    value = _at_least(1)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (1-65535)")
    return value


class UsageExit(Exception):
    """What argparse would print and exit with (help, a usage error): raised instead, so that the caller writes it
    to the command's own streams, whichever process runs the command."""

    def __init__(self, status: int, stdout: str = "", stderr: str = "") -> None:
        super().__init__(stderr or stdout)
        self.status = status
        self.stdout = stdout
        self.stderr = stderr


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, like every other error of the command, and nothing printed
    here (see UsageExit)."""

    def error(self, message: str):
        raise UsageExit(2, stderr=f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def exit(self, status: int = 0, message: str | None = None):
        raise UsageExit(status, stderr=message or "")

    def print_help(self, file=None) -> None:
        raise UsageExit(0, stdout=self.format_help())


def _common_options(top: bool) -> argparse.ArgumentParser:
    """The options every command takes, accepted before or after the command name (as git does).

    Only the top-level parser has defaults: argparse copies everything a sub-parser parsed over what its parent
    already had, so the sub-parsers' copies suppress their defaults and set a value only when it is given."""
    common = argparse.ArgumentParser(add_help=False)
    kept = {} if top else {"default": argparse.SUPPRESS}
    common.add_argument("--json", action="store_true", help="print JSON", **kept)
    common.add_argument("--db", help="database directory or object-storage URI (default <repo>/.cortex/db; env CORTEX_DB)", **kept)
    common.add_argument("-C", "--path", help="repository or directory to work in (default: here)",
                        **(kept or {"default": "."}))
    common.add_argument("--no-global", action="store_true", help="leave the user's global store out of reads", **kept)
    return common


class _Unbuilt:
    """Stands in for the sub-parser of a command left out of a partial tree: every call is accepted and builds
    nothing."""

    def __getattr__(self, name: str):
        return lambda *args, **kwargs: self


@functools.cache
def build_parser(commands: frozenset[str] | None = None) -> argparse.ArgumentParser:
    """Built once per process: building it is a tenth of a warm served command (argparse looks up a translation
    for every help string), and parsing leaves it unchanged, so the resident server reuses one.

    With `commands`, the tree has just the commands named (or aliased) there: the thin client passes the words of its
    command line, which parses that command exactly as the whole tree would, for a fraction of the cost. Anything
    else (an unknown command, `--help`) fails to parse there and goes to the whole tree in-process."""
    nested = _common_options(top=False)

    parser = _Parser(prog="cortex", description="Local-first memory and context engine for coding agents.",
                     parents=[_common_options(top=True)])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, aliases: tuple[str, ...] = ()) -> argparse.ArgumentParser:
        if commands is not None and commands.isdisjoint((name, *aliases)):
            return _Unbuilt()  # type: ignore[return-value]
        parser = sub.add_parser(name, help=help, parents=[nested], aliases=list(aliases))
        parser.set_defaults(handler=name)
        return parser

    add("init", "create the database and keep .cortex/ out of git")

    p = add("remember", "store a memory (a new version if --key already exists)")
    p.add_argument("text", help="the memory's text; '-' reads standard input")
    p.add_argument("--kind", default="note", help=KIND_HELP)
    p.add_argument("--title", default="")
    p.add_argument("--tags", action="append", help="comma-separated tags")
    p.add_argument("--files", action="append", help="comma-separated related files")
    p.add_argument("--symbols", action="append", help="comma-separated related symbols")
    p.add_argument("--key", default="", help="source key: remembering the same key again makes a new version")
    p.add_argument("--scope", default="repo", help="session, repo, global or team (the shared team store)")

    p = add("show", "show one memory")
    p.add_argument("id")

    p = add("list", "list memories, newest first")
    p.add_argument("--kind")
    p.add_argument("--tag")
    p.add_argument("--status", default="active", help="active, superseded, deleted, open, done or all")
    p.add_argument("--scope")
    p.add_argument("--limit", type=_at_least(1), default=50)

    p = add("history", "every version stored under a key (or a memory's key)")
    p.add_argument("key")

    p = add("forget", "delete a memory (soft unless --purge)")
    p.add_argument("id", nargs="?")
    p.add_argument("--key")
    p.add_argument("--purge", action="store_true", help="remove every version for good")

    p = add("done", "close a task")
    p.add_argument("id")
    p.add_argument("--reopen", action="store_true", help="open it again instead")

    p = add("import", "import markdown/text (split on headings) and json/jsonl records (an export's records keep their ids)")
    p.add_argument("source", help="a file or a directory (recursive, honours .gitignore)")
    p.add_argument("--kind", default="note", help="kind for markdown/text sections")
    p.add_argument("--scope", default="repo")
    p.add_argument("--skip-bad", action="store_true",
                   help="store the good records and list the bad ones (default: a bad record aborts the import)")

    p = add("export", "export memories as JSONL (reads back with `cortex import`)")
    p.add_argument("--output", "-o", help="file to write (default standard output)")
    p.add_argument("--all-versions", action="store_true", help="include superseded and deleted versions")

    p = add("index", "build or update the code index (incremental: only changed files are re-read)")
    p.add_argument("target", nargs="?", help="repository or directory to index (default: -C or here)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--status", action="store_true", help="only say whether the index is fresh")
    only.add_argument("--skipped", action="store_true",
                      help="only list the files the last index run skipped, with reasons (indexes nothing)")
    p.add_argument("--no-embed", action="store_true", help="store text and structure only; embed later")

    p = add("watch", "keep the index fresh until interrupted")
    p.add_argument("--no-embed", action="store_true", help="do not fill in embeddings while idle")

    p = add("search", "smart search over memories and code (no query: what you are working on)", aliases=("ss",))
    p.add_argument("query", nargs="*", help="words, identifiers, paths; inline filters like kind:decision work too")
    p.add_argument("--kind", action="append", help="memory kind (repeatable)")
    p.add_argument("--tag", action="append")
    p.add_argument("--file", action="append", help="tied to this file (memories) or in this path (code)")
    p.add_argument("--branch")
    p.add_argument("--since", help="7d, 12h, 2w, 30m or an ISO date")
    p.add_argument("--memories-only", action="store_true")
    p.add_argument("--code-only", action="store_true")
    p.add_argument("--history", action="store_true", help="include superseded and deleted versions")
    p.add_argument("--limit", type=_at_least(1), default=10)
    p.add_argument("--explain", action="store_true", help="show each hit's score breakdown")
    p.add_argument("--expand", action="store_true", help="add the graph neighbours of the top hits")
    p.add_argument("--full", action="store_true", help="print each hit's whole text")
    p.add_argument("--filter", action="store_true",
                   help="let the configured LLM (llm_filter_url, llm_filter_model) point at the best candidates")

    p = add("what", "what should I know: branch memories, notes on changed files, open tasks, recent work")
    p.add_argument("--limit", type=_at_least(1), default=10, help="items per section")

    p = add("graph", "neighbours of a memory, file, symbol or commit in the memory graph")
    p.add_argument("node", help="memory id, file path, symbol, commit sha (or mem:/file:/sym:/commit: ids)")
    p.add_argument("--depth", type=_at_least(1), default=1)
    p.add_argument("--limit", type=_at_least(1), default=100)

    for name, help_text in (("select", "choose files, chunks and memories for a task under a token budget"),
                            ("context", "assemble the selected context verbatim (markdown, xml or json), copy or save it")):
        p = add(name, help_text)
        p.add_argument("task", nargs="+", help="what you want to do ('-' reads standard input)")
        p.add_argument("--budget", type=int, default=12000, help="token budget (exact tokens of the configured encoding)")
        p.add_argument("--max-items", type=_at_least(1))
        p.add_argument("--include-tests", default="auto", choices=["yes", "no", "auto"])
        p.add_argument("--min-score", type=_finite(), default=0.0)
        p.add_argument("--format", default="markdown", choices=["markdown", "xml", "json"],
                       help="the format the context is rendered in; the budget holds for it exactly")
        if name == "context":
            p.add_argument("--copy", action="store_true", help="put it on the clipboard (native tool, OSC 52, else a file)")
            p.add_argument("--output", "-o", help="write it to this file")

    p = add("agent", "the agent context controller: roadmap, branches, observation-thought-action log, commits")
    agent = p.add_subparsers(dest="op", required=True, metavar="OP")
    a = agent.add_parser("init", help="start an agent context with its goal (the roadmap's first entry)", parents=[nested])
    a.add_argument("goal")
    a = agent.add_parser("log", help="append a numbered observation-thought-action step", parents=[nested])
    a.add_argument("--obs", "--observation", dest="obs", default="")
    a.add_argument("--thought", default="")
    a.add_argument("--action", default="")
    a.add_argument("--branch", help="log on this branch instead of the current one")
    a = agent.add_parser("commit", help="a milestone covering the steps since the last commit", parents=[nested])
    a.add_argument("contribution")
    a.add_argument("--summary", help="the progress so far (default: the previous commit's, plus its contribution)")
    a.add_argument("--roadmap", help="append this to the roadmap")
    a.add_argument("--branch")
    a = agent.add_parser("branch", help="create a branch from the current one and switch to it", parents=[nested])
    a.add_argument("name")
    a.add_argument("purpose")
    a = agent.add_parser("switch", help="make another active branch current", parents=[nested])
    a.add_argument("name")
    a = agent.add_parser("merge", help="append a branch's steps to its parent (or --into) with a merge commit", parents=[nested])
    a.add_argument("name")
    a.add_argument("--into", help="target branch (default: the branch it was created from)")
    a.add_argument("--summary", help="the merge commit's contribution")
    a = agent.add_parser("abandon", help="mark a branch abandoned (kept, read-only)", parents=[nested])
    a.add_argument("name")
    a = agent.add_parser("context", help="roadmap, branch, last k commits and the steps since, as markdown", parents=[nested])
    a.add_argument("-k", type=_at_least(0), default=1, help="commits to show in full")
    a.add_argument("--branch")
    agent.add_parser("branches", help="every branch with its status", parents=[nested])
    a = agent.add_parser("export", help="write markdown and metadata.yaml to a directory", parents=[nested])
    a.add_argument("directory")
    a = agent.add_parser("import", help="read an export into a database without an agent context", parents=[nested])
    a.add_argument("directory")

    p = add("mcp", "serve the engine to coding agents over MCP (stdio; --http binds 127.0.0.1)")
    p.add_argument("--http", type=_port, metavar="PORT",
                   help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio; clients need the bearer token")
    p.add_argument("--show-token", action="store_true", help="with --http: also print the bearer token on start")
    p.add_argument("--no-auth", action="store_true", help="with --http: accept requests without the token (not advised)")
    p.add_argument("--no-watch", action="store_true", help="do not index and watch the repository in the background")

    p = add("serve", "keep this repository's engine warm for the CLI (normally started by the first command)")
    p.add_argument("--status", action="store_true", help="say whether it runs: pid, version, memory, idle time")
    p.add_argument("--stop", action="store_true", help="stop it once its running commands are answered")
    p.add_argument("--idle-minutes", type=_finite(0, above=True), help="exit after this many minutes without a command (setting daemon_idle_minutes)")

    add("stats", "counts for the database(s)")
    add("sync", "send team memories queued while the team store was unreachable")
    p = add("git", "print the git context")
    p.add_argument("--commits", type=_at_least(0), default=10)
    add("gc", "compact the database and remove old versions now")
    add("doctor", "check every table; rebuild the code index, restore memories from the newest readable version")

    p = add("bench", "benchmarks that print numbers")
    bench = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    b = bench.add_parser("store", help="remember throughput/latency, embedding speed, model load", parents=[nested])
    b.add_argument("--batch", type=int, default=1000)
    b.add_argument("--singles", type=int, default=100)
    b = bench.add_parser("localize", help="edit recall on real bug fixes: ours vs BM25, grep, random, cognitive-cache", parents=[nested])
    b.add_argument("--tasks", help="JSONL task file (shared/bench/localize format)")
    b.add_argument("--mirrors", help="directory holding <mirror_git_dir_name>/repo bare git directories")
    b.add_argument("--repo", help="mine tasks from this repository's own history instead")
    b.add_argument("--budget", type=int, default=12000)
    b.add_argument("--limit", type=int, default=None, help="use at most this many tasks")
    b.add_argument("--every", type=int, default=1, help="use every N-th task (a subset spread over all repositories)")
    b.add_argument("--methods", default="cortex,bm25,grep,random,cognitive-cache",
                   help="comma-separated; cortex+embed also embeds the candidate files (slow the first time)")
    b.add_argument("--vector-cache", help="SQLite file of embeddings shared across tasks and runs (cortex+embed)")
    b = bench.add_parser("team", help="write and search latency of a team store beside a local one", parents=[nested])
    b.add_argument("--uri", help="team store to measure (default: the team_db setting)")
    b.add_argument("--writes", type=int, default=30)
    b.add_argument("--searches", type=int, default=30)
    b = bench.add_parser("select", help="select latency (p50/p95) on an indexed repository", parents=[nested])
    b.add_argument("--repo", required=True)
    b.add_argument("--budget", type=int, default=12000)
    b.add_argument("--tasks", type=int, default=20)
    b = bench.add_parser("search", help="search/what latency at 10k and 100k items, cold start; with --tasks, --repo or "
                         "--cases: search quality on real questions vs BM25, git grep and the selector", parents=[nested])
    b.add_argument("--scales", default="10000,100000", help="comma-separated item counts (latency mode)")
    b.add_argument("--tasks", help="JSONL task file (shared/bench/localize format): fixes' descriptions as questions")
    b.add_argument("--mirrors", help="directory holding <owner>+<name>/repo bare git directories")
    b.add_argument("--repo", action="append", default=[], help="mine fixes from this repository's history (repeatable)")
    b.add_argument("--cases", action="store_true", help="also ask the checked-in case list (needs --mirrors)")
    b.add_argument("--limit", type=int, default=None, help="at most this many fixes per task file or repository")
    b.add_argument("--every", type=int, default=1, help="use every N-th task of --tasks")
    b.add_argument("--methods", default="cortex,cortex-lexical,bm25,grep,selector,selector-lexical",
                   help="comma-separated; cortex and selector embed every chunk (vectors cached on disk)")
    b.add_argument("--vector-cache", help="SQLite file of embeddings shared across trees and runs")
    b = bench.add_parser("locomo", help="LoCoMo evidence recall: full-text vs vector vs hybrid vs smart", parents=[nested])
    b.add_argument("--data", required=True, help="LoCoMo JSON (a list of conversations with qa)")
    b.add_argument("--conversations", type=int, default=None, help="use only the first N conversations")
    b = bench.add_parser("tui", help="seconds from the command to the first painted dashboard with results", parents=[nested])
    b.add_argument("repo", nargs="?", default=".", help="repository (indexed first if needed)")
    b.add_argument("--runs", type=int, default=5)
    b.add_argument("--attached", action="store_true", help="the dashboards attach to a warm resident server")
    b = bench.add_parser("cli", help="wall time and memory of cortex commands: cold, warm server, in-process, git grep", parents=[nested])
    b.add_argument("repo", nargs="?", default=".", help="repository to run the commands in")
    b.add_argument("--words", default="progress bar color", help="the search words (also given to git grep)")
    b.add_argument("--runs", type=int, default=20, help="runs of each warm command and of git grep")
    b.add_argument("--cold-runs", type=int, default=3, help="runs of each cold and in-process command")
    b = bench.add_parser("secrets", help="lines of real repositories the secret detector flags, and its speed", parents=[nested])
    b.add_argument("repos", nargs="+", help="git work trees or bare mirrors (HEAD is read, nothing written)")
    b = bench.add_parser("disk", help=".cortex size under sustained writes (writers + watcher + edits) vs compacted", parents=[nested])
    b.add_argument("--repo", required=True, help="a git repository whose tracked files are copied (read only)")
    b.add_argument("--minutes", type=float, default=5.0)
    b.add_argument("--writers", type=int, default=3, help="processes remembering notes through the server")
    b = bench.add_parser("index", help="indexing speed, embeddings, size, RSS, save-to-searchable", parents=[nested])
    b.add_argument("--repo", required=True, help="a git repository or directory to index (read in place)")
    b.add_argument("--edits", type=int, default=20, help="saves to time under the watcher")
    b.add_argument("--embed-limit", type=int, default=None, help="embed at most this many chunks (default: all)")
    b = bench.add_parser("scale", help="search/what/remember/select/status, save-to-searchable, touch re-index, idle CPU, RSS at scale", parents=[nested])
    b.add_argument("--repo", required=True, help="a repository whose indexable files are replicated into the work tree (read only)")
    b.add_argument("--files", type=int, default=5_000, help="files in the work tree (the issue's target: 50000)")
    b.add_argument("--memories", type=int, default=100_000, help="synthetic memories (the issue's target: 1000000)")
    b.add_argument("--touch", type=int, default=10_000, help="unchanged files to touch and re-index")
    b.add_argument("--queries", type=int, default=30)
    return parser


def main(argv: list[str] | None = None, ctx: CommandContext | None = None) -> int:
    """Run one command with its context (default: this process's streams, directory and environment)."""
    import sys

    from .context import CommandContext
    from .text_input import invalid_argument

    ctx = ctx or CommandContext.of_process()
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = invalid_argument(argv)
    if problem:
        ctx.stderr.write(f"cortex: error: {problem}\n")
        return 2
    try:
        args = build_parser().parse_args(argv)
    except UsageExit as exc:
        ctx.stdout.write(exc.stdout)
        ctx.stderr.write(exc.stderr)
        return exc.status
    try:
        from . import commands

        handler = getattr(commands, "cmd_" + args.handler.replace("-", "_"))
        return handler(args, ctx) or 0
    except CortexError as exc:
        return _fail(ctx, str(exc))
    except KeyboardInterrupt:
        ctx.stderr.write("cortex: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if ctx.debug():
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        from ...core.store.failures import is_unreachable, looks_corrupt

        if is_unreachable(exc):
            # A store that stopped answering mid-command: the library's message names request URLs and retry
            # details, none of it the user's to act on.
            return _fail(ctx, "a remote store stopped answering; try again, or check the network and endpoint")
        if looks_corrupt(exc):
            return _fail(ctx, f"the database is damaged ({first[:160]}); run `cortex doctor`")
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            # A file the command was told to write or read (`-o missing/dir/f.md`, a directory, no permission).
            return _fail(ctx, f"{exc.filename}: {exc.strerror}")
        return _fail(ctx, f"{type(exc).__name__}: {first} (set CORTEX_DEBUG=1 for a traceback)")


def _fail(ctx: CommandContext, message: str) -> int:
    ctx.stderr.write(f"cortex: error: {message}\n")
    return 1


if __name__ == "__main__":
    from ..leave import leave, open_streams

    open_streams()
    leave(main())
