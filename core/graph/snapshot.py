"""The session snapshot: in one small, deterministic text, what an agent should load first.

Branch and working change, open tasks, the decisions about the changed code, the last agent commit, then the top of
the repository map in whatever budget is left. Nothing in it depends on the clock (dates, never ages) or on read order
(everything is sorted), so the same repository state gives the same text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..answers import RepoMap, Snapshot
from ..git.gitctx import GitContext
from ..records import Memory
from ..tokens import count_tokens

TASKS = 5
DECISIONS = 5
CHANGED = 15
TITLE_CHARS = 100


@dataclass(frozen=True)
class SnapshotInputs:
    """What the engine read for a snapshot; `repo_map` makes the map for a budget (focused on the working change)."""

    git: GitContext
    tasks: Sequence[Memory]
    decisions: Sequence[Memory]
    agent_commit: Memory | None
    repo_map: Callable[[int], RepoMap]
    encoding: str
    budget: int


def _line(text: str, limit: int = TITLE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _newest_first(memories: Sequence[Memory]) -> list[Memory]:
    return sorted(memories, key=lambda m: (-m.updated_at.timestamp(), m.id))


def build_snapshot(inputs: SnapshotInputs) -> Snapshot:
    git = inputs.git
    changed = list(git.changed_files)
    states = {p: "?" for p in git.untracked} | {p: "M" for p in git.modified} | {p: "A" for p in git.staged}
    where = f"branch {git.branch}" if git.branch else ("detached HEAD" if git.detached else "no branch")
    lines = [f"# Snapshot: {where} at {git.head[:10] or 'no commit'}"]
    if changed:
        shown = sorted(changed)[:CHANGED]
        more = f", and {len(changed) - len(shown)} more" if len(changed) > len(shown) else ""
        lines.append(f"Working change ({len(changed)}): " + ", ".join(f"{states.get(p, 'M')} {p}" for p in shown) + more)
    else:
        lines.append("Working change: none")
    changed_set = set(changed)
    tasks = sorted(inputs.tasks, key=lambda m: (not set(m.files) & changed_set, -m.updated_at.timestamp(), m.id))[:TASKS]
    if tasks:
        lines.append("Open tasks:")
        lines += [f"- {m.id} {_line(m.title or m.text)}" for m in tasks]
    decisions = _newest_first(inputs.decisions)[:DECISIONS]
    if decisions:
        lines.append("Decisions about the changed code:")
        lines += [f"- {m.id} {m.updated_at:%Y-%m-%d} {_line(m.title or m.text)} ({', '.join(sorted(set(m.files) & changed_set))})"
                  + (f"; code changed since: {_line(m.code_change.summary)}" if m.code_change is not None else "")
                  for m in decisions]
    commit = inputs.agent_commit
    if commit is not None:
        lines.append(f"Last agent commit: {commit.updated_at:%Y-%m-%d %H:%M} {_line(commit.title or commit.text, 200)}")
    head = "\n".join(lines) + "\n"
    map_title = "\nRepo map (most important definitions):\n"
    left = inputs.budget - count_tokens(head + map_title, inputs.encoding)
    found = inputs.repo_map(left) if left > 10 else None
    text = head
    while found is not None and found.entries:
        text = head + map_title + found.text
        over = count_tokens(text, inputs.encoding) - inputs.budget
        if over <= 0:
            break
        # Tokens can merge across the join: take the excess off the map's budget and fit it again.
        found = inputs.repo_map(found.budget - over) if found.budget - over > 10 else None
        text = head
    return Snapshot(text, count_tokens(text, inputs.encoding), inputs.budget, git.branch, git.head, tuple(changed),
                    tuple(m.id for m in tasks), tuple(m.id for m in decisions), commit.id if commit else "",
                    tuple(found.files) if found is not None and text != head else ())
