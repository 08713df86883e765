"""What should I know: with no query, the memories, tasks, commits and files that matter for the current git state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from ..answers import RankedFile, WhatToKnow
from ..git.gitctx import GitContext
from ..pool import READS
from ..records import COMMIT_TAG, STEP_TAG, Memory
from ..store.sql import quote, sql_list, timestamp
from ..store.store import MemoryStore

RECENT_DAYS = 3
"""Memories updated this recently are "recent"; commits are the last N whatever their age."""


RANKED_PATHS = 500
"""Changed files whose importers are counted: a tree with thousands of untracked files ranks the first 500."""


def what_should_i_know(git: GitContext, stores: Sequence[MemoryStore], importers: Callable[[list[str]], dict[str, int]],
                       indexed: bool, per_section: int = 10, visible: str | None = None) -> WhatToKnow:
    """From a git context, the stores to read and the index's count of importers per path (read beside the
    memory queries). Every read is bounded by what a section shows, not by the size of a table. `visible`: the
    filter of the memories the reader may see (its session's, see core/store/sessions.py)."""
    since = datetime.now(UTC) - timedelta(days=RECENT_DAYS)
    changed = list(git.changed_files)

    def gather(where: str, limit: int = per_section * 2) -> list[Memory]:
        # Twice the cap: sections give up the memories an earlier section already shows.
        found = [m for s in stores for m in s.newest(where, limit)]
        found.sort(key=lambda m: m.updated_at, reverse=True)
        return found[:limit]

    # An agent logs a step per action; its steps would fill every section, so they are left out (its commits,
    # which sum the steps up, are kept: the latest one).
    active = f"status = 'active' AND NOT array_has_any(tags, {sql_list([STEP_TAG])})"
    if visible:
        active += f" AND {visible}"
    file_kinds = "kind IN ('decision', 'note', 'fact', 'observation', 'link')"
    branch_job = READS.submit(gather, f"{active} AND branch = {quote(git.branch)}") if git.branch else None
    file_job = READS.submit(gather, f"{active} AND {file_kinds} AND array_has_any(files, {sql_list(changed)})") if changed else None
    task_job = READS.submit(gather, f"{active} AND kind = 'task' AND task_state = 'open'", per_section * 3)
    recent_job = READS.submit(gather, f"{active} AND updated_at >= {timestamp(since)}")
    ranked_job = READS.submit(_rank_changed, importers, git, per_section * 2)
    branch_memories = branch_job.result() if branch_job else []
    file_memories = file_job.result() if file_job else []
    tasks, recent, ranked = task_job.result(), recent_job.result(), ranked_job.result()
    tasks.sort(key=lambda m: (not set(m.files) & set(changed), m.branch != git.branch, -m.updated_at.timestamp()))
    file_memories, tasks, branch_memories, recent = _one_section_each(
        [file_memories, tasks, branch_memories, recent], per_section
    )
    commits = list(git.commits[:per_section])
    hints = []
    if not git.is_repo:
        hints.append("not a git repository: branch, commit and working-change sections stay empty")
    elif not git.head:
        hints.append("no commits yet: make a first commit to see history here")
    if not stores or all(s.count() == 0 for s in stores):
        hints.append("no memories yet: `cortex remember \"why we chose X\" --kind decision` records one")
    if not indexed:
        hints.append("code not indexed yet: `cortex index` (the dashboard does it in the background)")
    if git.is_repo and not changed:
        hints.append("working tree clean: no modified, staged or untracked files")
    return WhatToKnow(git, branch_memories, file_memories, tasks, recent, commits, ranked, hints)


def _one_section_each(sections: list[list[Memory]], cap: int) -> list[list[Memory]]:
    """Each memory in the first (most specific) section that has it, and only the newest agent commit anywhere:
    on the main branch every memory is "on this branch" and most are recent, and the same list twice says nothing."""
    shown: set[str] = set()
    agent_commits = {m.id: m for section in sections for m in section if COMMIT_TAG in m.tags}
    newest = max(agent_commits.values(), key=lambda m: m.updated_at, default=None)
    hidden = set(agent_commits) - {newest.id} if newest is not None else set()
    out = []
    for section in sections:
        kept = [m for m in section if m.id not in shown and m.id not in hidden][:cap]
        shown.update(m.id for m in kept)
        out.append(kept)
    return out


def _rank_changed(importers: Callable[[list[str]], dict[str, int]], git: GitContext, limit: int) -> list[RankedFile]:
    """The working change, the files most others depend on first."""
    states = {p: "untracked" for p in git.untracked} | {p: "modified" for p in git.modified} | {p: "staged" for p in git.staged}
    paths = sorted(states, key=lambda p: (states[p] == "untracked", p))[:RANKED_PATHS]
    counts = importers(paths)
    ranked = [RankedFile(p, states[p], counts.get(p, 0)) for p in paths]
    ranked.sort(key=lambda f: (-f.imported_by, f.path))
    return ranked[:limit]
