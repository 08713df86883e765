"""`cortex serve [--status | --stop]`: run the resident server in the foreground, report on it, or stop it."""

from __future__ import annotations

import os
import sys
import time

from ...core.errors import CortexError
from ..link import connection
from .context import CommandContext
from ..link.protocol import fingerprint, server_paths


def run(args, ctx: CommandContext) -> int:
    key = connection.server_key(str(ctx.path(args.path)), ctx.database(args.db))
    if key is None:
        raise CortexError(f"path {args.path} does not exist")
    try:
        paths = server_paths(*key)
    except OSError as exc:
        raise CortexError(f"no private runtime directory for the server: {exc}") from exc
    if args.status:
        return _status(args, ctx, paths)
    if args.stop:
        return _stop(args, ctx, paths)
    ctx.out.console.print(f"serving {key[0]} on {paths.socket} (Ctrl+C to stop)", style="dim")
    ctx.stdout.flush()
    # This process becomes the very server the client starts in the background (same pid, same terminal), so the
    # server module runs commands through the CLI without the CLI's `serve` command importing it back.
    idle = [] if args.idle_minutes is None else ["--idle-minutes", str(args.idle_minutes)]
    os.execv(sys.executable, [sys.executable, "-m", "cortex_tui.app.server.serve", "--root", key[0], "--db", key[1], *idle])


def _status(args, ctx: CommandContext, paths) -> int:
    found = connection.ask(paths, "status")
    if found is not None:
        found.pop("type", None)
    if args.json:
        ctx.out.json({"running": found is not None, **(found or {})})
        return 0
    if found is None:
        ctx.out.console.print("no resident server for this repository (the next command starts one)")
        return 0
    rss = f"{found['rss_bytes'] / 2**20:.0f} MiB" if found.get("rss_bytes") else "unknown"
    idle_limit = found.get("idle_seconds") or 15 * 60
    current = "current" if found.get("fingerprint") == fingerprint() else "another install: replaced on next use"
    ctx.out.console.out(
        f"server pid {found['pid']} for {found['root']}, version {found['version']} ({current})\n"
        f"  up {time.time() - found['started']:.0f} s, {found['commands']} commands, idle {found['idle_for']:.0f} s"
        f" (exits after {idle_limit / 60:.0f} min), memory {rss}\n"
        f"  {found.get('attached', 0)} attached (dashboards, MCP servers), {found.get('calls', 0)} calls, "
        f"{_watcher(found)}\n"
        f"  socket {found['socket']}"
    )
    return 0


def _watcher(found: dict) -> str:
    if found.get("watching"):
        return "watching the work tree"
    return "indexing the work tree" if found.get("indexing") else "not watching"


def _stop(args, ctx: CommandContext, paths) -> int:
    answer = connection.ask(paths, "stop")
    stopped = answer is None or connection.wait_stopped(paths, 30.0)
    if args.json:
        ctx.out.json({"was_running": answer is not None, "stopped": stopped})
    elif answer is None:
        ctx.out.console.print("no resident server was running for this repository")
    elif stopped:
        ctx.out.console.print(f"stopped server pid {answer.get('pid')}")
    else:
        raise CortexError(f"server pid {answer.get('pid')} did not stop within 30 s (still finishing a command?)")
    return 0
