"""The agent context's records (roadmap entries, branches, steps, commits) and its branch-name rule: what the
controller (`agentlog`) stores and its export files (`agentlog_files`) write and read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from ..errors import CortexError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class RoadmapEntry:
    seq: int
    text: str
    at: datetime


@dataclass(frozen=True)
class AgentBranch:
    name: str
    purpose: str
    parent: str
    """The branch it was created from ("" for main)."""
    status: str
    """`active`, `merged` or `abandoned`."""
    merged_into: str
    created_at: datetime


@dataclass(frozen=True)
class AgentStep:
    branch: str
    n: int
    """1, 2, 3… per branch, without gaps."""
    observation: str
    thought: str
    action: str
    origin: str
    """For a step a merge brought in: `branch#n` where it was logged; "" otherwise."""
    git_branch: str
    head: str
    at: datetime
    memory_id: str


@dataclass(frozen=True)
class AgentCommit:
    id: str
    branch: str
    seq: int
    kind: str
    """`commit` or `merge`."""
    purpose: str
    """The branch's purpose when the commit was made."""
    summary: str
    """Progress before this commit."""
    contribution: str
    steps: tuple[int, ...]
    """The steps this commit covers (those logged since the previous commit on the branch)."""
    merged_from: str
    git_branch: str
    head: str
    """The git HEAD when the commit was made."""
    at: datetime
    memory_id: str

    @property
    def progress(self) -> str:
        """The summary of progress including this commit: what the next commit's summary defaults to."""
        return "\n".join(part for part in (self.summary, f"- {self.contribution}") if part)


@dataclass(frozen=True)
class AgentExport:
    """A whole agent context as a directory gives it (an export, a contexa workspace, the live files)."""

    current: str
    roadmap: list[RoadmapEntry]
    branches: list[AgentBranch]
    steps: dict[str, list[AgentStep]]
    commits: dict[str, list[AgentCommit]]


def validate_branch_name(name: str) -> str:
    if not name or not _NAME.fullmatch(name):
        raise CortexError(
            f"bad branch name {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )
    return name
