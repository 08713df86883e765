"""`cortex mcp`: the engine as an MCP server (official `mcp` SDK), so agents get what the dashboard shows.

Tools are plain functions over one long-lived Engine; the SDK runs them in worker threads. The index is brought up
to date and then watched in the background, so calls answer from a warm, fresh index. Paths a client gives are
confined to the repository; engine errors come back as tool errors with their one-line message.
"""

from __future__ import annotations

import functools
import inspect
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..core.engine import Engine
from ..core.errors import CortexError
from ..core.locations import confine
from ..core.query import Filters, parse_since
from ..core.records import KINDS, MemoryDraft
from .output import plain, selection_item_json

INSTRUCTIONS = """cortex: memory and context for this git repository.
Call what_should_i_know at the start of a task; smart_search before reading code you do not know; select_context
to get the files, code and memories for a task under a token budget; remember decisions and findings worth keeping;
agent_* tools keep a versioned log of your own work (log steps, commit milestones, branch to explore)."""


class SearchFilters(BaseModel):
    """Narrow a search; every field is optional."""

    model_config = ConfigDict(extra="forbid")
    """A misspelt filter is an error, not a silently wider search."""

    kinds: list[str] = Field(default_factory=list, description=f"memory kinds to keep: {', '.join(KINDS)}")
    tags: list[str] = Field(default_factory=list, description="keep memories with any of these tags")
    files: list[str] = Field(default_factory=list, description="repository paths the results must concern")
    branch: str | None = Field(None, description="keep memories made on this git branch")
    since: str | None = Field(None, description="only newer than this: 30m, 12h, 7d, 2w or an ISO date")
    memories_only: bool = False
    code_only: bool = False
    history: bool = Field(False, description="include superseded and deleted memory versions")


def _d(text: str) -> Any:
    return Field(description=text)


def _n(text: str, low: int, high: int | None = None) -> Any:
    """A described number with its range in the schema, so clients see the bounds and bad values are refused."""
    return Field(description=text, ge=low, le=high)


Budget = Annotated[int, _n("token budget for the assembled context (exact tokens of the configured encoding), >= 1", 1)]
RepoPaths = Annotated[list[str] | None, _d("repository-relative file paths this is about")]
Branch = Annotated[str | None, _d("agent branch (default: the current one)")]


class CortexTools:
    """The tools, bound to one repository's engine."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.root = engine.root

    def _path(self, path: str) -> str:
        return confine(self.root, path)

    def smart_search(self, query: Annotated[str, _d("what to look for; empty = what is being worked on now")] = "",
                     filters: SearchFilters | None = None,
                     limit: Annotated[int, _n("results to return, 1-100", 1, 100)] = 10,
                     filter: Annotated[bool, _d("let the LLM configured in the user's settings reorder the top "
                                                "candidates (pointer-only; ignored when none is configured)")] = False,
                     ) -> dict[str, Any]:
        f = filters or SearchFilters()
        results = self.engine.search(query, Filters(
            kinds=tuple(f.kinds), tags=tuple(f.tags), files=tuple(self._path(p) for p in f.files), branch=f.branch,
            since=parse_since(f.since) if f.since else None, memories_only=f.memories_only, code_only=f.code_only,
            history=f.history,
        ), limit, llm_filter=filter)
        return plain(results)

    def what_should_i_know(self, per_section: Annotated[int, _n("items per section, 1-100", 1, 100)] = 10) -> dict[str, Any]:
        return plain(self.engine.what(per_section).to_json())

    def select_context(self, task: Annotated[str, _d("the task in words, as you would give it to an engineer")],
                       budget: Budget = 12000, include_tests: Literal["auto", "yes", "no"] = "auto",
                       max_items: Annotated[int | None, _n("at most this many items, >= 1", 1)] = None, format: Literal["markdown", "xml", "json"] = "markdown") -> dict[str, Any]:
        from ..core.assemble import assemble

        sel = self.engine.select(task, budget, max_items, include_tests, fmt=format)
        doc = assemble(sel, format)
        return plain({"context": doc.text, "tokens": doc.tokens, "budget": sel.budget, "encoding": sel.encoding,
                      "format": doc.format, "redactions": doc.redactions, "notes": sel.notes,
                      "items": [selection_item_json(i) for i in sel.chosen],
                      "left_out": [selection_item_json(i) for i in sel.left_out]})

    def remember(self, text: Annotated[str, _d("the memory, verbatim")],
                 kind: Annotated[str, _d(f"one of {', '.join(KINDS)}")] = "note",
                 title: Annotated[str, _d("short title (default: the first line)")] = "",
                 tags: list[str] | None = None, files: RepoPaths = None,
                 key: Annotated[str, _d("stable key: remembering it again stores a new version")] = "") -> dict[str, Any]:
        if kind not in KINDS:
            raise CortexError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
        draft = MemoryDraft(text=text, kind=kind, title=title, tags=tuple(tags or ()),
                            files=tuple(self._path(p) for p in files or ()), source_key=key)
        result = self.engine.remember(draft)
        return plain({"outcome": result.outcome, "memory": result.memory.to_json()})

    def forget(self, id: Annotated[str, _d("memory id (12 hex digits)")]) -> dict[str, Any]:
        return plain({"forgotten": [m.to_json() for m in self.engine.forget(memory_id=id)]})

    def memory_history(self, key: Annotated[str, _d("a memory key or a memory id")]) -> dict[str, Any]:
        return plain({"versions": [m.to_json() for m in self.engine.history(key)]})

    def graph_neighbors(self, node: Annotated[str, _d("memory id, file path, symbol, commit sha, or mem:/file:/sym:/commit: id")],
                        depth: Annotated[int, _n("hops, 1-3", 1, 3)] = 1,
                        limit: Annotated[int, _n("neighbours to return, 1-1000", 1, 1000)] = 100) -> dict[str, Any]:
        from ..core.graph import neighbourhood

        if node.startswith("file:"):
            node = "file:" + self._path(node[5:])
        elif "/" in node or ".." in node:
            node = self._path(node)
        return plain(neighbourhood(self.engine.graph(), node, depth, limit))

    def agent_init(self, goal: Annotated[str, _d("the project goal")]) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).init(goal))

    def agent_log(self, observation: Annotated[str, _d("what you saw")] = "", thought: Annotated[str, _d("what you concluded")] = "",
                  action: Annotated[str, _d("what you did or will do")] = "", branch: Branch = None) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).log_ota(observation, thought, action, branch))

    def agent_commit(self, contribution: Annotated[str, _d("what this milestone achieved")],
                     previous_summary: Annotated[str | None, _d("progress so far (default: the previous commit's plus its contribution)")] = None,
                     update_roadmap: Annotated[str | None, _d("text to append to the roadmap")] = None,
                     branch: Branch = None) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).commit(contribution, previous_summary, update_roadmap, branch))

    def agent_branch(self, name: Annotated[str, _d("1-64 letters, digits, ., _ or -")], purpose: Annotated[str, _d("what this branch explores")]) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).branch(name, purpose))

    def agent_switch(self, name: str) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).switch(name))

    def agent_merge(self, name: Annotated[str, _d("the branch to merge")],
                    target: Annotated[str | None, _d("default: the branch it was created from")] = None,
                    summary: Annotated[str | None, _d("the merge commit's contribution")] = None) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).merge(name, target, summary))

    def agent_context(self, branch: Branch = None, k: Annotated[int, _n("recent commits to show in full, 0-100", 0, 100)] = 1) -> dict[str, Any]:
        return plain(self.engine.agent_log(create=True).context(branch, k))


DESCRIPTIONS = {
    "smart_search": "Hybrid (vector + full-text) search over this repository's memories and code, re-ranked by the "
                    "current git branch, changed files and recency. An empty query searches for what is being worked "
                    "on now. Each hit has its text, location and score breakdown; `index_fresh` says whether the code "
                    "index was up to date.",
    "what_should_i_know": "What matters right now: memories tied to the current branch and changed files, open tasks, "
                          "recent memories and commits, and the working change ranked by how many files import each.",
    "select_context": "Choose files, code chunks and memories for a task under a token budget (exact tokens) and return "
                      "them assembled verbatim with provenance headers (`context`), plus the chosen items and those "
                      "left out. Budget must be at least 1.",
    "remember": "Store a memory (decision, note, task, fact, observation, link, agent). With `key`, a new version "
                "supersedes the previous one under that key; identical text is not stored twice. `files` are "
                "repository-relative paths.",
    "forget": "Soft-delete a memory by id (kept in history, hidden from search).",
    "memory_history": "Every version stored under a key (or under a memory id's key), oldest first.",
    "graph_neighbors": "Neighbours in the memory graph of a node: a memory id, a repository file path, a symbol or a "
                       "commit sha (or a typed id mem:/file:/sym:/commit:). depth 1-3.",
    "agent_init": "Start the agent context (once per repository) with the project goal as the roadmap's first entry.",
    "agent_log": "Append a numbered observation-thought-action step to the current (or given) agent branch.",
    "agent_commit": "Record a milestone covering the steps logged since the last commit: its contribution, the progress "
                    "summary (defaults to the previous commit's plus its contribution), optionally extending the roadmap.",
    "agent_branch": "Create an agent branch from the current one to explore an alternative, and switch to it.",
    "agent_switch": "Make another active agent branch the current one.",
    "agent_merge": "Append a branch's steps to its parent (or `target`) with a merge commit and mark it merged.",
    "agent_context": "The roadmap, the branch, its last k commits and the steps since the last commit, as markdown "
                     "(`markdown`) and structured fields: call it to resume work.",
}

READ_ONLY = {"smart_search", "what_should_i_know", "select_context", "memory_history", "graph_neighbors", "agent_context"}


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
    for name, description in DESCRIPTIONS.items():
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

        server.tool(name=name, description=description,
                    annotations=ToolAnnotations(read_only_hint=name in READ_ONLY))(make(name, method))
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
