"""The overview of a repository: what to know now (the dashboard's first pane), the branch's timeline, and the memory
graph's reads. The graph modules load on first use: the one-shot commands that never draw them skip their imports."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..answers import Timeline, WhatToKnow
from ..git import gitctx
from ..store.sessions import narrowed, visible_where
from .workspace import Workspace

if TYPE_CHECKING:
    from ..graph.graph_reads import GraphReads


def graph(ws: Workspace, max_commits: int = 200, session: str | None = None) -> GraphReads:
    """The memory graph's reads: each neighbourhood is read on demand, filtered and limited in LanceDB, so nothing is
    built whole or rebuilt after a save; the history is git's, cached per ref change. `session`: the reader's (other
    sessions' session memories are left out)."""
    from ..graph.graph_reads import GraphReads

    index = ws.code_index() if ws.has_index() else None
    return GraphReads(ws.existing_stores(), index.files if index is not None else None,
                      gitctx.read_history(ws.root, max_commits).commits, checked=ws.checked,
                      active=narrowed("status = 'active'", session) or "status = 'active'")


def timeline(ws: Workspace, max_commits: int = 50, with_memories: bool = True) -> Timeline:
    from ..graph.timeline import branch_timeline

    git = ws.git(max_commits)
    return branch_timeline(git, ws.stores_if_any() if with_memories else [])


def what(ws: Workspace, per_section: int = 10, session: str | None = None) -> WhatToKnow:
    """Branch, changed files, open tasks, recent memories and commits. `session`: the reader's (other sessions'
    session memories are left out)."""
    from ..graph.what import what_should_i_know

    git = ws.git(50)
    stores = ws.stores_if_any()
    indexed = ws.has_index()
    importers = ws.code_index().importers if indexed else (lambda paths: {})
    w = what_should_i_know(git, stores, importers, indexed, per_section, visible_where(session))
    ws.stores.accessed(w.branch_memories + w.file_memories + w.open_tasks + w.recent_memories)
    # Each section keeps its order, memories whose code changed since after the others.
    fresh_first = ws.anchoring.fresh_first
    return replace(w, branch_memories=fresh_first(w.branch_memories), file_memories=fresh_first(w.file_memories),
                   open_tasks=ws.checked(w.open_tasks), recent_memories=fresh_first(w.recent_memories))
