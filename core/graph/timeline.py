"""The branch timeline: the current branch's commits, newest first, with the memories and agent-context commits made
on each, and the other branches."""

from __future__ import annotations

from collections.abc import Sequence

from ..answers import Timeline, TimelineEntry
from ..errors import CortexError
from ..git.gitctx import GitContext
from ..records import Memory
from ..store.sql import in_filter, quote
from ..store.store import MemoryStore

LOOSE_SHOWN = 20
"""Memories made off the shown commits that the timeline lists at its head."""


def branch_timeline(git: GitContext, stores: Sequence[MemoryStore]) -> Timeline:
    """The timeline from a git context and the stores to read (none: git alone, what the dashboard paints first).
    Only the memories of the shown commits and the newest loose ones are read, never the whole store."""
    shas = [c.sha for c in git.commits]
    on_commits = in_filter("`commit`", shas) or "false"
    off_commits = f"(`commit` IS NULL OR NOT ({on_commits}))" if shas else "true"
    this_branch = "(branch IS NULL OR branch = ''" + (f" OR branch = {quote(git.branch)})" if git.branch else ")")
    try:
        memories = [m for s in stores for m in s.list(status="active", where=on_commits)] if shas else []
        loose = [m for s in stores for m in s.list(status="active", where=f"{off_commits} AND {this_branch}", limit=LOOSE_SHOWN)]
    except CortexError:
        memories, loose = [], []
    by_commit: dict[str, list[Memory]] = {}
    for m in memories:
        by_commit.setdefault(m.commit, []).append(m)
    entries = [TimelineEntry(c, tuple(sorted(by_commit.get(c.sha, []), key=lambda m: m.created_at))) for c in git.commits]
    loose.sort(key=lambda m: m.created_at, reverse=True)
    return Timeline(git.branch or ("detached" if git.detached else ""), entries, tuple(loose[:LOOSE_SHOWN]), git.branches)
