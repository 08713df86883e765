"""The branch timeline: the current branch's commits, newest first, with the memories and agent-context commits made
on each, and the other branches."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .agentlog import STEP_TAG
from .errors import CortexError
from .gitctx import CommitInfo
from .records import Memory

if TYPE_CHECKING:
    from .engine import Engine


@dataclass(frozen=True)
class TimelineEntry:
    """One commit and what was remembered on it (agent-context commits are memories of kind `agent`)."""

    commit: CommitInfo
    memories: tuple[Memory, ...] = ()

    @property
    def agent_commits(self) -> tuple[Memory, ...]:
        # Agent steps are memories of kind `agent` too; only their milestones mark the timeline.
        return tuple(m for m in self.memories if m.kind == "agent" and STEP_TAG not in m.tags)


@dataclass(frozen=True)
class Timeline:
    """The branch's history as the timeline pane shows it."""

    branch: str
    entries: list[TimelineEntry] = field(default_factory=list)
    uncommitted: tuple[Memory, ...] = ()
    """Memories made since the newest commit shown (or before any commit)."""
    branches: tuple[str, ...] = ()


def branch_timeline(engine: "Engine", max_commits: int = 50, with_memories: bool = True) -> Timeline:
    """`with_memories=False` reads git alone, without opening the database: what the dashboard paints first."""
    git = engine.git(max_commits)
    try:
        memories = [m for s in engine.stores() for m in s.list(status="active")] if with_memories else []
    except CortexError:
        memories = []
    by_commit: dict[str, list[Memory]] = {}
    for m in memories:
        by_commit.setdefault(m.commit, []).append(m)
    entries = [TimelineEntry(c, tuple(sorted(by_commit.get(c.sha, []), key=lambda m: m.created_at))) for c in git.commits]
    shown = {c.sha for c in git.commits}
    loose = tuple(sorted((m for m in memories if m.commit not in shown and (not m.branch or m.branch == git.branch)),
                         key=lambda m: m.created_at, reverse=True))
    return Timeline(git.branch or ("detached" if git.detached else ""), entries, loose[:20], git.branches)
