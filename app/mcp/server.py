"""`cortex mcp`: the engine as an MCP server (official `mcp` SDK), so agents get what the dashboard shows.

The tools (`tools.CortexTools`) run on the repository's resident server when one can be reached or started, else on
one long-lived Engine of this process; the SDK runs them in worker threads. The index is brought up to date and then
watched in the background, so calls answer from a warm, fresh index. Engine errors come back as tool errors with
their one-line message.

Clients that listen (`subscriptions/listen`, MCP 2026-07-28) to the resource `cortex://memories` are told when a
memory changes, whoever wrote it (this agent, a shell, a dashboard, another agent), and when the database is replaced:
the resident server tells this process, or the engine's own writes and watcher do.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from ...core.engine import Engine
from ...core.errors import CortexError
from ...core.versions import cortex_version
from .arguments import Runner, one_line
from .tools import TOOL_ALIASES, TOOL_CALLS, CortexTools

INSTRUCTIONS = """cortex: memory and context for this git repository.
Call what_should_i_know at the start of a task; smart_search before reading code you do not know; select_context
to get the files, code and memories for a task under a token budget; remember decisions and findings worth keeping;
memory_list and memory_show read memories, task_done closes a task; agent_* tools keep a versioned log of your own
work (log steps, commit milestones, branch to explore, abandon a branch)."""


def unknown_arguments(name: str, given: dict[str, Any], accepted: tuple[str, ...]) -> str | None:
    """The one-line refusal of arguments a tool does not take (None when there are none): the SDK would drop them
    silently, and an agent that misspells an option must hear it was not applied."""
    unknown = [key for key in given if key not in accepted]
    if not unknown:
        return None
    plural = "s" if len(unknown) > 1 else ""
    return (f"{name}: unknown argument{plural} {', '.join(map(repr, unknown))}; "
            f"it takes {', '.join(accepted) or 'no arguments'}")


class _Server(MCPServer):
    """The SDK's server with argument errors on one line (the SDK's own text is pydantic's multi-line dump), and
    unknown arguments refused for every tool (the SDK ignores them)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.accepted: dict[str, tuple[str, ...]] = {}
        """Each tool's argument names, filled in as tools are added."""

    async def call_tool(self, name, arguments, context=None):
        refusal = unknown_arguments(name, arguments or {}, self.accepted[name]) if name in self.accepted else None
        if refusal:
            raise ToolError(refusal)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"{name}: bad arguments: {one_line(exc.__cause__)}") from exc.__cause__
            raise


MEMORIES_URI = "cortex://memories"
"""The memories that matter now (what_should_i_know), as a resource whose updates clients can listen to."""


SNAPSHOT_URI = "cortex://snapshot"
"""The session snapshot as a resource, for clients that load resources at the start of a session."""


class Changes:
    """The SDK's subscription bus (`subscriptions/listen` streams subscribe here), fed from threads: the repository's
    events arrive on the thread that follows the server or the watcher, and each stream's listener must run on its
    own event loop."""

    def __init__(self) -> None:
        self._listeners: dict[object, tuple[asyncio.AbstractEventLoop, Callable]] = {}
        self._lock = threading.Lock()

    async def publish(self, event) -> None:
        self.tell(event)

    def subscribe(self, listener: Callable) -> Callable[[], None]:
        token, loop = object(), asyncio.get_running_loop()
        with self._lock:
            self._listeners[token] = (loop, listener)

        def unsubscribe() -> None:
            with self._lock:
                self._listeners.pop(token, None)

        return unsubscribe

    def tell(self, event) -> None:
        with self._lock:
            listeners = list(self._listeners.values())
        for loop, listener in listeners:
            loop.call_soon_threadsafe(listener, event)

    def memories_changed(self) -> None:
        self.tell(ResourceUpdated(MEMORIES_URI))


def build_server(run: Runner, changes: Changes | None = None) -> MCPServer:
    from ..link.remote import RemoteError

    server = _Server("cortex", version=cortex_version(), instructions=INSTRUCTIONS, subscriptions=changes)

    @server.resource(MEMORIES_URI, name="memories", mime_type="application/json",
                     description="What matters now: memories of this branch and of the changed files, open tasks, "
                                 "recent memories and commits (what_should_i_know). Listen to it to hear when a "
                                 "memory changes, whoever changed it.")
    def memories() -> str:
        return json.dumps(run("what_should_i_know", (), {}, ""), ensure_ascii=False)

    @server.resource(SNAPSHOT_URI, name="snapshot", mime_type="text/markdown",
                     description="What to load first at the start of a session, in at most 1,000 tokens: branch and "
                                 "working change, open tasks, decisions about the changed code, the last agent commit, "
                                 "the top of the repo map (the snapshot tool gives the same with its fields).")
    def snapshot() -> str:
        return run("snapshot", (), {}, "")["text"]

    sessions = ClientSessions()
    for name in (*TOOL_CALLS, *TOOL_ALIASES):
        target = TOOL_ALIASES.get(name, name)
        method = getattr(CortexTools, target)

        def make(target, method):
            @functools.wraps(method)
            def call(*args, mcp_context: Context, **kwargs):
                try:
                    return run(target, args, kwargs, sessions.id_of(mcp_context))
                except (CortexError, RemoteError) as exc:
                    raise ToolError(str(exc).splitlines()[0]) from exc

            # The tool's schema is the method's signature without `self`; the SDK hands the call its context (the
            # client's session), which the schema leaves out.
            signature = inspect.signature(method, eval_str=True)
            context = inspect.Parameter("mcp_context", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
            call.__signature__ = signature.replace(parameters=[*list(signature.parameters.values())[1:], context])
            call.__annotations__ = {**method.__annotations__, "mcp_context": Context}
            return call

        described = inspect.getdoc(method) or ""
        if name != target:
            described = f"Alias of {target}. {described}"
        server.tool(name=name, description=described,
                    annotations=ToolAnnotations(read_only_hint=getattr(method, "read_only", False)))(make(target, method))
        server.accepted[name] = tuple(inspect.signature(method).parameters)[1:]
    return server


class ClientSessions:
    """The session id of each MCP client, in which its session-scoped memories are its own: over HTTP the
    transport's session (`Mcp-Session-Id`), over stdio this process's (a `cortex mcp` over stdio serves one client),
    minted when the server is built."""

    def __init__(self) -> None:
        self.own = f"mcp-{uuid.uuid4().hex[:12]}"

    def id_of(self, context: Context) -> str:
        request = context.request_context.request
        headers = getattr(request, "headers", None)
        given = headers.get("mcp-session-id") if headers is not None else None
        return f"mcp-{given[:100]}" if given else self.own


def keep_index_fresh(engine: Engine, changes: Changes) -> None:
    """Index in the background, then watch; failures go to standard error (standard output carries the protocol)."""
    from ...core.index.watch import IndexWatcher

    def run() -> None:
        try:
            index = engine.code_index(create=True)
            index.update(embed=True, priority=engine.git().changed_files)
            engine.reembed_memories()
            IndexWatcher(index, lambda update: None, lambda message: print(f"cortex mcp: {message}", file=sys.stderr),
                         engine.settings.watch_debounce_ms, database=engine.db_uri,
                         on_database=lambda _change: changes.memories_changed()).start()
            engine.compact_in_background(lambda message: print(f"cortex mcp: {message}", file=sys.stderr))
        except CortexError as exc:
            print(f"cortex mcp: indexing stopped: {exc}", file=sys.stderr)

    threading.Thread(target=run, name="cortex-index", daemon=True).start()


def attach(path: Path, db: str | None, watch: bool, changes: Changes, daemon: bool) -> Runner | None:
    """Tools answered by the repository's resident server (started if need be), which is then the one engine and,
    with `watch`, the one watcher: None when the daemon is turned off (`daemon`: the command's setting) or no server can
    be reached or started."""
    from ..link.messages import Failed, Memories, Replaced
    from ..link.remote import Remote, RemoteError

    remote = Remote.attach(path, db, start=True) if daemon else None
    if remote is None:
        return None
    if watch:
        def follow() -> None:
            # Subscribing starts the server's index pass and watcher, and keeps the server from going idle while
            # this process is attached; a server that goes away is followed by its successor.
            while True:
                try:
                    for event in remote.watch():
                        if isinstance(event, Failed):
                            print(f"cortex mcp: {event.message}", file=sys.stderr)
                        elif isinstance(event, (Memories, Replaced)):
                            changes.memories_changed()
                except RemoteError as exc:
                    print(f"cortex mcp: {exc}", file=sys.stderr)
                time.sleep(2.0)

        threading.Thread(target=follow, name="cortex-follow", daemon=True).start()
    return lambda name, args, kwargs, session: remote.call_in(session, "tools", name, args, kwargs)


def serve(path: Path, db: str | None, http_port: int | None, watch: bool = True, auth: bool = True,
          show_token: bool = False, *, daemon: bool) -> None:
    changes = Changes()
    run = attach(path, db, watch, changes, daemon)
    if run is None:
        engine = Engine(path, db=db)
        engine.init()
        engine.on_memories_changed(changes.memories_changed)
        if watch:
            keep_index_fresh(engine, changes)
        run = lambda name, args, kwargs, session: getattr(CortexTools(engine, session), name)(*args, **kwargs)  # noqa: E731
    server = build_server(run, changes)
    if http_port is None:
        server.run("stdio")
    else:
        from .http import serve_http
        from .recall_http import add_recall_routes

        add_recall_routes(server, run, str(path))
        serve_http(server, http_port, auth=auth, show_token=show_token)
