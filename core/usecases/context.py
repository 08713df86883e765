"""Building a context for a task: the selection of files' regions and memories within a budget, the repository map,
and the snapshot an agent loads first. Each gathers what its feature reads (core/context, core/graph) and hands it
down; the features never call back here."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from ..answers import RepoMap, SearchHit, Snapshot
from ..context.select_files import FileReads
from ..errors import CortexError
from ..keys import Key
from ..records import Memory
from ..requests import IncludeTests, MapRequest, SelectRequest
from ..search.query import Filters
from ..search.search import GitInputs
from ..store.sessions import narrowed
from .workspace import Workspace

if TYPE_CHECKING:
    from ..context.select import Selection

class SelectShaping(TypedDict, total=False):
    """`SelectRequest`'s fields after the task and the budget, by name (`Engine.select`)."""

    max_items: int | None
    include_tests: IncludeTests
    min_score: float
    pins: frozenset[Key]
    excluded: frozenset[Key]
    fmt: str
    max_files: int | None
    purpose: str
    session: str | None


QUERY_CHARS = 4000
"""A task longer than this is searched by its beginning."""


def select_context(ws: Workspace, request: SelectRequest) -> Selection:
    """A selection as a front end asked for it; the budget holds for the requested format exactly."""
    from ..context.select import SelectInputs, check_request, choose, load_chunks
    from ..context.task_words import without_credits

    task, budget = request.task, request.budget
    check_request(task, budget, request.include_tests, request.fmt, request.purpose)
    notes: list[str] = []
    if not ws.has_index():
        # Behind another pass that is indexing this database (the dashboard's), this waits for it and finds nothing
        # left to do.
        report = ws.code_index(create=True).update(embed=False)
        if report.changed:
            notes.append(f"nothing was indexed yet: indexed {report.changed} files lexically first")
    index = ws.code_index()
    git = ws.git(20)
    if not index.refresh(git.changed_files):
        notes.append("an indexing pass is running: files with uncommitted changes show their last indexed text")
    # Selection weighs a file's chunks itself (its regions read search's scores): the spreading of a file's further
    # hits and the stricter reranking of code, set for a list a person reads, cost it edit recall (every 3rd dev
    # task: 0.854 -> 0.838), so it reads search as its weights were chosen with.
    searcher = ws.searcher(ws.settings.search.model_copy(update={"file_repeat": 1.0, "code_rerank": 0.0}))
    query = without_credits(task)[:QUERY_CHARS]
    with_vectors = index.chunks.count_rows("embedded = true") > 0
    memory_hits = searcher.search(query, Filters(memories_only=True, session=request.session), limit=20,
                                  git=GitInputs.of(git), unscored=True).hits if searcher.stores else []
    checker = ws.anchoring.checker()
    if checker is not None:
        from ..anchors.checker import flag_hits

        memory_hits = flag_hits(checker, memory_hits)
    inputs = SelectInputs(
        task=task,
        files=FileReads(index.files, ws.caches.import_graph),
        code_hits=searcher.search(query, Filters(code_only=True), limit=120, git=GitInputs.of(git),
                                  unscored=True).hits,
        memory_hits=memory_hits,
        changed=list(git.changed_files),
        commit=git.head,
        encoding=ws.settings.encoding,
        chunks=lambda paths: load_chunks(index.chunks, paths, with_vectors),
        query_vector=lambda: ws.embedder.embed_one(query),
        pinned_memories=_pinned_memories(ws, request.pinned("memory"), request.session, memory_hits),
    )
    selection = choose(inputs, request, ws.settings.select)
    ws.stores.accessed([i.memory for i in selection.chosen if i.memory is not None])
    return replace(selection, notes=notes + selection.notes)


def _pinned_memories(ws: Workspace, memory_ids: frozenset[str], session: str | None,
                     hits: list[SearchHit]) -> list[Memory]:
    """The pinned memories search did not return, as they are now: a pin follows an edited memory to the newest
    version of its key and lets go of a forgotten one, and another session's session memory stays out."""
    from ..store.sql import quote

    found = {h.memory.id for h in hits if h.memory is not None}
    out: list[Memory] = []
    for memory_id in sorted(memory_ids):
        if memory_id in found:
            continue
        try:
            store = ws.stores.owner(memory_id)
        except CortexError:
            continue  # a pin of a memory no store holds any more
        pinned = store.find(memory_id)
        if pinned is None:
            continue
        where = f"id = {quote(memory_id)}" if pinned.status == "active" or not pinned.source_key \
            else f"source_key = {quote(pinned.source_key)}"
        now = store.query(narrowed(f"({where}) AND status = 'active'", session), 1)
        out += [m for m in now if m.id not in found and m not in out]
    return ws.checked(out)


def repo_map(ws: Workspace, request: MapRequest) -> RepoMap:
    """The repository's most important definitions for the request's focus (the working change when it has none),
    fitted to its budget exactly."""
    from ..context.repo_map import SEARCH_HITS, MapInputs, build_map, resolve_focus

    if request.budget <= 0:
        raise CortexError(f"budget must be a positive number of tokens (got {request.budget})")
    if not ws.has_index():
        ws.code_index(create=True).update(embed=False)
    index = ws.code_index()
    state = ws.caches.symbol_graph.get(index.chunks)
    git = ws.git(20)

    def search(text: str) -> list[SearchHit]:
        return ws.searcher().search(text[:QUERY_CHARS], Filters(code_only=True), limit=SEARCH_HITS,
                                    git=GitInputs.of(git)).hits

    files = FileReads(index.files, ws.caches.import_graph)
    focus = resolve_focus(request.focus, state.graph, list(git.changed_files), search, files.named)
    inputs = MapInputs(state.graph, focus.seeds, focus.mentioned, focus.files, state.signatures,
                       ws.settings.encoding, focus.leads)
    return build_map(inputs, request.budget, request.focus)


def snapshot(ws: Workspace, budget: int = 1000, session: str | None = None) -> Snapshot:
    """What an agent should load first, within `budget` tokens; the same state gives the same text. `session`: the
    reader's (other sessions' session memories are left out)."""
    from ..graph.snapshot import SnapshotInputs, build_snapshot
    from ..records import COMMIT_TAG
    from ..store.sql import sql_list

    git = ws.git(20)
    changed = list(git.changed_files)
    stores = ws.stores_if_any()

    def newest(where: str, limit: int) -> list[Memory]:
        visible = narrowed(where, session)
        found = [m for store in stores for m in ws.stores.read(store, store.newest, visible, limit)]
        return sorted(found, key=lambda m: (-m.updated_at.timestamp(), m.id))[:limit]

    tasks = newest("status = 'active' AND kind = 'task' AND task_state = 'open'", 20)
    decisions = newest(f"status = 'active' AND kind = 'decision' AND array_has_any(files, {sql_list(changed)})", 10) \
        if changed else []
    decisions = ws.checked(decisions)  # a decision about code that changed since says so
    commits = newest(f"status = 'active' AND array_has_any(tags, {sql_list([COMMIT_TAG])})", 1)
    inputs = SnapshotInputs(git, tasks, decisions, commits[0] if commits else None,
                            lambda left: repo_map(ws, MapRequest(left)), ws.settings.encoding, budget)
    return build_snapshot(inputs)
