"""`cortex mcp`: the engine as an MCP server (official `mcp` SDK), so agents get what the dashboard shows.

The tools (`tools.CortexTools`) run on the repository's resident server when one can be reached or started, else on
one long-lived Engine of this process; the SDK runs them in worker threads. The index is brought up to date and then
watched in the background, so calls answer from a warm, fresh index. Engine errors come back as tool errors with
their one-line message.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from ..core.engine import Engine
from ..core.errors import CortexError
from .tools import TOOL_CALLS, CortexTools

INSTRUCTIONS = """cortex: memory and context for this git repository.
Call what_should_i_know at the start of a task; smart_search before reading code you do not know; select_context
to get the files, code and memories for a task under a token budget; remember decisions and findings worth keeping;
agent_* tools keep a versioned log of your own work (log steps, commit milestones, branch to explore)."""


def _fields(error: ValidationError) -> str:
    """A pydantic validation error as one line naming each field, without echoing the rejected values."""
    parts = []
    for e in error.errors():
        where = ".".join(str(part) for part in e["loc"]) or "arguments"
        parts.append(f"{where}: {' '.join(e['msg'].split())}")
    return "; ".join(parts)


class _Server(MCPServer):
    """The SDK's server with argument errors on one line: the SDK's own text is pydantic's multi-line dump."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: bad arguments: {_fields(exc.__cause__)}") from exc.__cause__
            raise


Runner = Callable[[str, tuple, dict], Any]
"""Runs a tool by name with its arguments: on this process's engine, or in the resident server's."""


def build_server(run: Runner) -> MCPServer:
    from .remote import RemoteError

    server = _Server("cortex", instructions=INSTRUCTIONS)
    for name in TOOL_CALLS:
        method = getattr(CortexTools, name)

        def make(name, method):
            @functools.wraps(method)
            def call(*args, **kwargs):
                try:
                    return run(name, args, kwargs)
                except (CortexError, RemoteError) as exc:
                    raise ToolError(str(exc).splitlines()[0]) from exc

            # The tool's schema is the method's signature without `self`.
            signature = inspect.signature(method, eval_str=True)
            call.__signature__ = signature.replace(parameters=list(signature.parameters.values())[1:])
            return call

        server.tool(name=name, description=inspect.getdoc(method),
                    annotations=ToolAnnotations(read_only_hint=getattr(method, "read_only", False)))(make(name, method))
    return server


def keep_index_fresh(engine: Engine) -> None:
    """Index in the background, then watch; failures go to standard error (standard output carries the protocol)."""
    from ..core.watch import IndexWatcher

    def run() -> None:
        try:
            index = engine.code_index(create=True)
            index.update(embed=True, priority=engine.git().changed_files)
            engine.reembed_memories()
            IndexWatcher(index, lambda update: None, lambda message: print(f"cortex mcp: {message}", file=sys.stderr),
                         engine.settings.watch_debounce_ms).start()
            engine.compact_in_background(lambda message: print(f"cortex mcp: {message}", file=sys.stderr))
        except CortexError as exc:
            print(f"cortex mcp: indexing stopped: {exc}", file=sys.stderr)

    threading.Thread(target=run, name="cortex-index", daemon=True).start()


def attach(path: Path, db: str | None, watch: bool) -> Runner | None:
    """Tools answered by the repository's resident server (started if need be), which is then the one engine and,
    with `watch`, the one watcher: None when the daemon is turned off or no server can be reached or started."""
    from .connection import daemon_wanted
    from .remote import Remote, RemoteError

    remote = Remote.attach(path, db, start=True) if daemon_wanted() else None
    if remote is None:
        return None
    if watch:
        def follow() -> None:
            # Subscribing starts the server's index pass and watcher, and keeps the server from going idle while
            # this process is attached; a server that goes away is followed by its successor.
            while True:
                try:
                    for kind, value in remote.watch():
                        if kind == "failed":
                            print(f"cortex mcp: {value}", file=sys.stderr)
                except RemoteError as exc:
                    print(f"cortex mcp: {exc}", file=sys.stderr)
                time.sleep(2.0)

        threading.Thread(target=follow, name="cortex-follow", daemon=True).start()
    return lambda name, args, kwargs: remote.call("tools", name, *args, **kwargs)


def serve(path: Path, db: str | None, http_port: int | None, watch: bool = True, auth: bool = True,
          show_token: bool = False) -> None:
    run = attach(path, db, watch)
    if run is None:
        engine = Engine(path, db=db)
        engine.init()
        if watch:
            keep_index_fresh(engine)
        tools = CortexTools(engine)
        run = lambda name, args, kwargs: getattr(tools, name)(*args, **kwargs)  # noqa: E731
    server = build_server(run)
    if http_port is None:
        server.run("stdio")
    else:
        from .mcp_http import serve_http

        serve_http(server, http_port, auth=auth, show_token=show_token)
