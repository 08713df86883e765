"""The MCP tools over one repository's engine: the one list of what an agent can call.

Each public method is a tool: its signature is the tool's input schema (the MCP SDK reads it), its docstring the
tool's description, and `read_only` marks those that change nothing. `cortex mcp` serves them from an engine of its
own or, attached, asks the resident server to run them (which accepts exactly these, `TOOL_CALLS`). Arguments and
answers are plain data: strings, numbers, lists, the `core.requests` dataclasses in, JSON-ready dicts out. Paths a
client gives are confined to the repository.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field

from ...core.errors import CortexError
from ...core.keys import Key
from ...core.locations import confine
from ...core.records import KINDS, MemoryDraft
from ...core.requests import MapRequest, SearchFilters, SearchRequest, SelectRequest
from ..formats import selection_item_json
from ..output import plain

if TYPE_CHECKING:
    from ...core.engine import Engine


def _d(text: str) -> Any:
    return Field(description=text)


def _n(text: str, low: int, high: int | None = None) -> Any:
    """A described number with its range in the schema, so clients see the bounds and bad values are refused."""
    return Field(description=text, ge=low, le=high)


Budget = Annotated[int, _n("token budget for the assembled context (exact tokens of the configured encoding), >= 1", 1)]
RepoPaths = Annotated[list[str] | None, _d("repository-relative file paths this is about")]
Branch = Annotated[str | None, _d("agent branch (default: the current one)")]
IdempotencyKey = Annotated[str, _d("8-64 letters, digits, '.', '_', ':' or '-' naming this write: a call again with "
                                   "the same key (after a lost answer) answers the first call's result, marked "
                                   "`repeated`, and writes nothing twice; the same key for another write is "
                                   "refused. Default: a new id, given back as `write_id`")]


def read_only(method):
    """Marks a tool that changes nothing (MCP's read-only hint)."""
    method.read_only = True
    return method


class CortexTools:
    """The tools, bound to one repository's engine."""

    def __init__(self, engine: Engine, session: str = "") -> None:
        self.engine = engine
        self.root = engine.root
        self.session = session
        """The MCP client's session (empty: none): its session-scoped memories are the ones the tools show."""

    def _path(self, path: str) -> str:
        return confine(self.root, path)

    def _write(self, kind: str, key: str, make: Callable[[], dict[str, Any]], **arguments: object) -> dict[str, Any]:
        """A writing tool's call, stored at most once per idempotency key (core/usecases/write_once.py): without a
        key, under a new write id given back as `write_id`; with one, a call again after a lost answer gets the
        first call's answer (`repeated`: true) and writes nothing."""
        from ...core.write_ids import checked, fingerprint, new_id

        write_id = checked(key, "idempotency_key") if key else new_id()

        def earlier(receipt) -> dict[str, Any]:
            first = json.loads(receipt.output[0][1]) if receipt.output else {}
            return {**first, "repeated": True}

        answer = self.engine.write_once(write_id, fingerprint(f"mcp-{kind}", arguments), make, named=bool(key),
                                        earlier=earlier, kept=lambda a: json.dumps(a, ensure_ascii=False))
        return {**answer, "write_id": write_id}

    def _this_repository(self, repo: str) -> None:
        """A repository argument names this server's repository (or a directory in it): each repository has its
        own server (`cortex mcp -C PATH`), which keeps its index warm and its paths confined."""
        target = (self.root / repo).resolve()
        base = self.root.resolve()
        if target != base and base not in target.parents:
            raise CortexError(f"repo {repo!r} is not the repository this server serves ({base}); "
                              f"start one for it with `cortex mcp -C {repo}`")

    @read_only
    def smart_search(self, query: Annotated[str, _d("what to look for; empty = what is being worked on now")] = "",
                     filters: SearchFilters | None = None,
                     limit: Annotated[int, _n("results to return, 1-100", 1, 100)] = 10,
                     filter: Annotated[bool, _d("let the LLM configured in the user's settings select among the top "
                                                "candidates (pointer-only; only those it points at are returned, "
                                                "`ranked_by` says whether it did)")] = False,
                     ) -> dict[str, Any]:
        """Hybrid (vector + full-text) search over this repository's memories and code, re-ranked by the current git
        branch, changed files and recency. An empty query searches for what is being worked on now. Each hit has its
        text, location and score breakdown; `index_fresh` says whether the code index was up to date."""
        given = filters or SearchFilters()
        given = replace(given, files=tuple(self._path(p) for p in given.files), session=given.session or self.session or None)
        return plain(self.engine.smart_search(SearchRequest(query, given, limit, llm_filter=filter)))

    @read_only
    def what_should_i_know(self, per_section: Annotated[int, _n("items per section, 1-100", 1, 100)] = 10) -> dict[str, Any]:
        """What matters right now: memories tied to the current branch and changed files, open tasks, recent
        memories and commits, and the working change ranked by how many files import each."""
        return plain(self.engine.what(per_section, self.session or None).to_json())

    @read_only
    def select_context(self, task: Annotated[str, _d("the task in words, as you would give it to an engineer")],
                       budget: Budget = 12000, include_tests: Literal["auto", "yes", "no"] = "auto",
                       max_items: Annotated[int | None, _n("at most this many items (files and memories), >= 1", 1)] = None,
                       format: Literal["markdown", "xml", "json"] = "markdown",
                       min_score: Annotated[float, Field(ge=0.0, description="leave out items scoring under this (a "
                                                         "file's value is about 0-1); when nothing reaches it, the "
                                                         "top files go in with a note")] = 0.0,
                       max_files: Annotated[int | None, _n("at most this many files (memories not counted), >= 1", 1)] = None,
                       repo: Annotated[str | None, _d("the repository to select from (absolute, or relative to the "
                                                      "served one); must be the repository this server serves")] = None,
                       purpose: Annotated[Literal["general", "assistant", "planner", "research", "drafting"],
                                          _d("who the context is for, which sets its sections: general (memories, "
                                             "then files), assistant (code first), planner (decisions and "
                                             "constraints first), research (sources with provenance), drafting "
                                             "(notes and docs before code)")] = "general",
                       ) -> dict[str, Any]:
        """Choose files, code chunks and memories for a task under a token budget (exact tokens) and return them
        assembled verbatim with provenance headers (`context`), plus the chosen items and those left out. Budget
        must be at least 1."""
        from ...core.context.assemble import assemble, token_shares

        if repo is not None:
            self._this_repository(repo)
        request = SelectRequest(task, budget, max_items, include_tests, min_score, fmt=format, max_files=max_files,
                                purpose=purpose, session=self.session or None)
        sel = self.engine.select_context(request)
        doc = assemble(sel, format)
        shares = token_shares(sel, doc)
        return plain({"context": doc.text, "tokens": doc.tokens, "budget": sel.budget, "encoding": sel.encoding,
                      "format": doc.format, "purpose": sel.purpose, "redactions": doc.redactions, "notes": sel.notes,
                      "frame_tokens": shares.frame,
                      "items": [selection_item_json(i, shares) for i in sel.chosen],
                      "left_out": [selection_item_json(i) for i in sel.left_out]})

    @read_only
    def repo_map(self, budget: Annotated[int, _n("token budget for the map (exact tokens of the configured encoding), "
                                                 ">= 1", 1)] = 1000,
                 focus: Annotated[list[str] | None, _d("paths, directories or words to rank toward (default: the "
                                                       "working change)")] = None) -> dict[str, Any]:
        """The repository's most important definitions (signatures with path and line), ranked by PageRank over the
        definition -> reference graph toward the focus, within the token budget exactly: `text` is the map, `entries`
        its definitions, `files` the files it shows. Call it to learn the shape of the code before reading files."""
        return plain(self.engine.repo_map(MapRequest(budget, tuple(focus or ()))).to_json())

    @read_only
    def snapshot(self) -> dict[str, Any]:
        """What to load first at the start of a session, in at most 1,000 tokens (`text`): the branch and working
        change, open tasks, the decisions about the changed code, the last agent commit and the top of the repo map.
        The same repository state gives the same text."""
        return plain(self.engine.snapshot(session=self.session or None).to_json())

    @read_only
    def stats(self) -> dict[str, Any]:
        """Counts for this repository: each store's memories (active, by kind, open tasks, table versions) and the
        code index (files, chunks, embeddings still pending; null before the first index)."""
        status = self.engine.code_index().status() if self.engine.has_index() else None
        index = None if status is None else {**status.__dict__, "fresh": status.fresh}
        # Before the first write there is no local database: nothing to count yet, which is an answer, not an error.
        stores = self.engine.stats() if self.engine.has_store() else []
        return plain({"stores": stores, "index": index})

    def remember(self, text: Annotated[str, _d("the memory, verbatim")],
                 kind: Annotated[str, _d(f"one of {', '.join(KINDS)}")] = "note",
                 title: Annotated[str, _d("short title (default: the first line)")] = "",
                 tags: list[str] | None = None, files: RepoPaths = None,
                 symbols: Annotated[list[str] | None, _d("symbols the memory is about (functions, classes)")] = None,
                 key: Annotated[str, _d("stable key: remembering it again stores a new version")] = "",
                 scope: Annotated[Literal["repo", "session", "global", "team"],
                                  _d("repo (default), session (seen only in this MCP session; retention drops the "
                                     "least recently used past a cap), global (the user's, every repository) or "
                                     "team")] = "repo",
                 new: Annotated[bool, _d("keep it even when an active memory says the same thing")] = False,
                 version_of: Annotated[str, _d("a memory id: store this as its new version")] = "",
                 idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Store a memory (decision, note, task, fact, observation, link, agent). With `key`, a new version
        supersedes the previous one under that key; identical text is not stored twice. `files` are
        repository-relative paths; a memory naming files or symbols is anchored to that code, and answers mark it
        `code_change` once the code changes. When an active memory already says the same in other words, nothing
        is stored: the answer has `near_duplicate: true` and that memory as `match` (call again with `version_of` set
        to its id to make a new version of it, or `new: true` to keep both)."""
        if kind not in KINDS:
            raise CortexError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
        draft = MemoryDraft(text=text, kind=kind, title=title, tags=tuple(tags or ()),
                            files=tuple(self._path(p) for p in files or ()), symbols=tuple(symbols or ()),
                            source_key=key, scope=scope, session=self.session if scope == "session" else "")
        def make() -> dict[str, Any]:
            result = (self.engine.revise(version_of, draft) if version_of
                      else self.engine.remember(draft, check_near=not new))
            if result.outcome == "near_duplicate":
                return plain({"outcome": result.outcome, "near_duplicate": True, "memory": None,
                              "match": result.memory.to_json()})
            return plain({"outcome": result.outcome, "near_duplicate": False, "memory": result.memory.to_json()})

        return self._write("remember", idempotency_key, make, draft=repr(draft), new=new, version_of=version_of)

    def forget(self, id: Annotated[str, _d("memory id (12 hex digits)")],
               idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Soft-delete a memory by id (kept in history, hidden from search)."""
        return self._write("forget", idempotency_key,
                           lambda: plain({"forgotten": [m.to_json() for m in self.engine.forget(memory_id=id)]}), id=id)

    def confirm(self, id: Annotated[str, _d("memory id (12 hex digits)")],
                idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Say a memory still holds although the code it describes changed (its `code_change` is cleared): the
        code is recorded again as it is now."""
        return self._write("confirm", idempotency_key, lambda: plain({"confirmed": self.engine.confirm(id).to_json()}),
                           id=id)

    @read_only
    def memory_history(self, key: Annotated[str, _d("a memory key or a memory id")]) -> dict[str, Any]:
        """Every version stored under a key (or under a memory id's key), oldest first."""
        return plain({"versions": [m.to_json() for m in self.engine.history(key)]})

    @read_only
    def memory_list(self, kind: Annotated[str | None, _d(f"only this kind: {', '.join(KINDS)}")] = None,
                    tag: Annotated[str | None, _d("only memories with this tag")] = None,
                    status: Literal["active", "superseded", "deleted", "open", "done", "all"] = "active",
                    scope: Annotated[str | None, _d("only this scope: session, repo, global or team")] = None,
                    session: Annotated[str | None, _d("whose session-scoped memories to list: a session id or "
                                                      "'all' (default: this MCP session's)")] = None,
                    limit: Annotated[int, _n("memories to return, 1-1000", 1, 1000)] = 50) -> dict[str, Any]:
        """Memories newest first, as `cortex list` lists them. `status` open or done lists tasks in that state
        (open ones are what task_done closes). `warning` says when the team store could not be read."""
        memories = self.engine.list_memories(session or self.session or None, kind=kind, tag=tag, status=status, scope=scope,
                                    limit=limit)
        left_out = {"warning": f"{self.engine.team_error}; local memories only"} if self.engine.team_error else {}
        return plain({"memories": [m.to_json() for m in memories], **left_out})

    @read_only
    def memory_show(self, id: Annotated[str, _d("memory id (12 hex digits)")]) -> dict[str, Any]:
        """One memory in full (text, kind, status, version, key, files, tags, git position), as `cortex show`."""
        return plain(self.engine.get(id).to_json())

    def task_done(self, id: Annotated[str, _d("the task's memory id")],
                  reopen: Annotated[bool, _d("open the task again instead")] = False,
                  idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Close a task (a memory of kind task), or open it again with `reopen`, as `cortex done`."""
        return self._write("task_done", idempotency_key,
                           lambda: plain(self.engine.set_task_state(id, "open" if reopen else "done").to_json()),
                           id=id, reopen=reopen)

    @read_only
    def graph_neighbors(self, node: Annotated[str, _d("memory id, file path, symbol, commit sha, or mem:/file:/sym:/commit: id")],
                        depth: Annotated[int, _n("hops, 1-3", 1, 3)] = 1,
                        limit: Annotated[int, _n("neighbours to return, 1-1000", 1, 1000)] = 100) -> dict[str, Any]:
        """Neighbours in the memory graph of a node: a memory id, a repository file path, a symbol or a commit sha
        (or a typed id mem:/file:/sym:/commit:). depth 1-3."""
        from ...core.graph.graph import neighbourhood

        typed = Key.parse(node)
        if typed is not None and typed.kind == "file":
            node = str(Key.file(self._path(typed.id)))
        elif "/" in node or ".." in node:
            node = self._path(node)
        return plain(neighbourhood(self.engine.graph(session=self.session or None), node, depth, limit))

    def agent_init(self, goal: Annotated[str, _d("the project goal")],
                   idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Start the agent context (once per repository) with the project goal as the roadmap's first entry."""
        return self._write("agent_init", idempotency_key, lambda: plain(self.engine.agent_log(create=True).init(goal)),
                           goal=goal)

    def agent_log(self, observation: Annotated[str, _d("what you saw")] = "", thought: Annotated[str, _d("what you concluded")] = "",
                  action: Annotated[str, _d("what you did or will do")] = "", branch: Branch = None,
                  idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Append a numbered observation-thought-action step to the current (or given) agent branch."""
        return self._write("agent_log", idempotency_key,
                           lambda: plain(self.engine.agent_log(create=True).log_ota(observation, thought, action, branch)),
                           observation=observation, thought=thought, action=action, branch=branch)

    def agent_commit(self, contribution: Annotated[str, _d("what this milestone achieved")],
                     previous_summary: Annotated[str | None, _d("progress so far (default: the previous commit's plus its contribution)")] = None,
                     update_roadmap: Annotated[str | None, _d("text to append to the roadmap")] = None,
                     branch: Branch = None, idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Record a milestone covering the steps logged since the last commit: its contribution, the progress summary
        (defaults to the previous commit's plus its contribution), optionally extending the roadmap."""
        return self._write("agent_commit", idempotency_key, lambda: plain(self.engine.agent_log(create=True).commit(
            contribution, previous_summary, update_roadmap, branch)), contribution=contribution,
            previous_summary=previous_summary, update_roadmap=update_roadmap, branch=branch)

    def agent_roadmap(self, text: Annotated[str, _d("the entry: a goal added, a plan changed")],
                      idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Append an entry to the agent context's roadmap on its own, without a commit."""
        return self._write("agent_roadmap", idempotency_key,
                           lambda: plain(self.engine.agent_log(create=True).extend_roadmap(text)), text=text)

    def agent_branch(self, name: Annotated[str, _d("1-64 letters, digits, ., _ or -")],
                     purpose: Annotated[str, _d("what this branch explores")],
                     idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Create an agent branch from the current one to explore an alternative, and switch to it."""
        return self._write("agent_branch", idempotency_key,
                           lambda: plain(self.engine.agent_log(create=True).branch(name, purpose)),
                           name=name, purpose=purpose)

    def agent_switch(self, name: str) -> dict[str, Any]:
        """Make another active agent branch the current one."""
        return plain(self.engine.agent_log(create=True).switch(name))

    def agent_merge(self, name: Annotated[str, _d("the branch to merge")],
                    target: Annotated[str | None, _d("default: the branch it was created from")] = None,
                    summary: Annotated[str | None, _d("the merge commit's contribution")] = None,
                    idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Append a branch's steps to its parent (or `target`) with a merge commit and mark it merged."""
        return self._write("agent_merge", idempotency_key,
                           lambda: plain(self.engine.agent_log(create=True).merge(name, target, summary)),
                           name=name, target=target, summary=summary)

    def agent_abandon(self, name: Annotated[str, _d("the branch to give up (not main)")],
                      idempotency_key: IdempotencyKey = "") -> dict[str, Any]:
        """Mark an agent branch abandoned: kept and readable, no longer logged to; if it was current, its parent
        becomes current."""
        return self._write("agent_abandon", idempotency_key,
                           lambda: plain(self.engine.agent_log(create=True).abandon(name)), name=name)

    @read_only
    def agent_branches(self) -> dict[str, Any]:
        """Every agent branch with its status (active, merged, abandoned), parent, purpose, and its step and commit
        counts, and which one is current."""
        return plain(self.engine.agent_log(create=True).overview())

    @read_only
    def agent_context(self, branch: Branch = None,
                      k: Annotated[int, _n("recent commits to show in full, 0-100", 0, 100)] = 1) -> dict[str, Any]:
        """The roadmap, the branch and its metadata, its last k commits with the observation-thought-action steps
        each covers (`commit_steps`), and the steps since the last commit, as markdown (`markdown`) and structured
        fields: call it to resume work."""
        return plain(self.engine.agent_log(create=True).context(branch, k))


TOOL_CALLS: tuple[str, ...] = tuple(name for name, member in vars(CortexTools).items()
                                    if inspect.isfunction(member) and not name.startswith("_"))
"""Every tool, in the order they are declared (and listed to clients)."""

TOOL_ALIASES: dict[str, str] = {"memory_smart_search": "smart_search", "memory_what": "what_should_i_know"}
"""Other names of a tool (those the cortex design first gave them): listed to clients with the tool's own schema and
description, answered by the tool itself."""
