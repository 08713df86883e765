"""`cortex serve [--status | --stop]`: run the resident server in the foreground, report on it, or stop it; and
`cortex mcp`, the engine served to coding agents."""

from __future__ import annotations

import os
import sys
import time

from ...core.errors import CortexError
from ..command import Answer, Command, finite, port
from ..link import connection
from ..link.protocol import fingerprint, server_paths

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


def add_serve(p) -> None:
    p.add_argument("--status", action="store_true", help="say whether it runs: pid, version, memory, idle time")
    p.add_argument("--stop", action="store_true", help="stop it once its running commands are answered")
    p.add_argument("--idle-minutes", type=finite(0, above=True), help="exit after this many minutes without a command (setting daemon_idle_minutes)")


def run(args, ctx: CommandContext) -> Answer | int:
    key = connection.server_key(str(ctx.path(args.path)), ctx.database(args.db))
    if key is None:
        raise CortexError(f"path {args.path} does not exist")
    try:
        paths = server_paths(*key)
    except OSError as exc:
        raise CortexError(f"no private runtime directory for the server: {exc}") from exc
    if args.status:
        return _status(paths)
    if args.stop:
        return _stop(paths)
    ctx.out.console.print(f"serving {key[0]} on {paths.socket} (Ctrl+C to stop)", style="dim")
    ctx.stdout.flush()
    # This process becomes the very server the client starts in the background (same pid, same terminal), so the
    # server module runs commands through the CLI without the CLI's `serve` command importing it back.
    idle = [] if args.idle_minutes is None else ["--idle-minutes", str(args.idle_minutes)]
    os.execve(sys.executable, [sys.executable, "-m", "cortex_tui.app.server.serve", "--root", key[0], "--db", key[1], *idle],
              connection.server_environment())


def _status(paths) -> Answer:
    found = connection.ask(paths, "status")
    return Answer({"running": found is not None, **(found or {})}, lambda out: _print_status(out, found))


def _print_status(out, found: dict | None) -> None:
    if found is None:
        out.console.print("no resident server for this repository (the next command starts one)")
        return
    rss = f"{found['rss_bytes'] / 2**20:.0f} MiB" if found.get("rss_bytes") else "unknown"
    if found.get("private_bytes"):
        rss += f" ({found['private_bytes'] / 2**20:.0f} MiB its own)"
    idle_limit = found.get("idle_seconds") or 15 * 60
    current = "current" if found.get("fingerprint") == fingerprint() else "another install: replaced on next use"
    out.console.out(
        f"server pid {found['pid']} for {found['root']}, version {found['version']} ({current})\n"
        f"  up {time.time() - found['started']:.0f} s, {_count(found['commands'], 'command')}, idle {found['idle_for']:.0f} s"
        f" (exits after {idle_limit / 60:.0f} min), memory {rss}\n"
        f"  {found.get('attached', 0)} attached (dashboards, MCP servers), {_count(found.get('calls', 0), 'call')}, "
        f"{_watcher(found)}\n"
        f"  socket {found['socket']}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _watcher(found: dict) -> str:
    if found.get("watching"):
        state = "watching the work tree"
    else:
        state = "indexing the work tree" if found.get("indexing") else "not watching"
    # The embeddings `cortex index` left to it: it stays (no idle exit) until they are done.
    return state + ("; embedding the index's pending chunks" if found.get("embedding") else "")


def _stop(paths) -> Answer:
    answer = connection.ask(paths, "stop")
    stopped = answer is None or connection.wait_stopped(paths, 30.0)

    def show(out) -> None:
        if answer is None:
            out.console.print("no resident server was running for this repository")
        elif stopped:
            out.console.print(f"stopped server pid {answer.get('pid')}")
        else:  # as text, a server that did not stop is an error; as JSON, `"stopped": false` says it
            raise CortexError(f"server pid {answer.get('pid')} did not stop within 30 s (still finishing a command?)")

    return Answer({"was_running": answer is not None, "stopped": stopped}, show)


def add_mcp(p) -> None:
    p.add_argument("--http", type=port, metavar="PORT",
                   help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio, with plain /health, /recall and "
                        "/store endpoints beside /mcp; clients need the bearer token")
    p.add_argument("--show-token", action="store_true", help="with --http: also print the bearer token on start")
    p.add_argument("--no-auth", action="store_true", help="with --http: accept requests without the token (not advised)")
    p.add_argument("--no-watch", action="store_true", help="do not index and watch the repository in the background")


def run_mcp(args, ctx: CommandContext) -> int:
    from ..mcp.server import serve  # the MCP library: not for the thin client, which only parses

    if args.http is None and (args.no_auth or args.show_token):
        raise CortexError("--no-auth and --show-token are for --http PORT (stdio needs no token)")
    serve(ctx.path(args.path), ctx.database(args.db), args.http, watch=not args.no_watch, auth=not args.no_auth,
          show_token=args.show_token, daemon=connection.daemon_wanted(ctx.env))
    return 0


COMMANDS = (
    Command("mcp", "serve the engine to coding agents over MCP (stdio; --http binds 127.0.0.1)", run_mcp, add_mcp),
    Command("serve", "keep this repository's engine warm for the CLI (normally started by the first command)", run,
            add_serve),
)
