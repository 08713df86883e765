"""The agent context controller: a git-like working memory for agents (after Git Context Controller, arXiv 2508.00031).

A roadmap (the goal, appended to over time) and branches; each branch has a numbered observation-thought-action log
and milestone commits that summarise it. Everything lives in the repository's LanceDB database, and every step and
commit is also stored as a memory of kind `agent`, so smart search, the timeline and the graph see them.
Step numbers are taken under a lock across processes, so agents logging to one branch at once never collide.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import CortexError
from ..records import COMMIT_TAG, STEP_TAG, MemoryDraft
from ..secrets.secret_fields import record_texts, refuse_secrets
from ..secrets.secrets import redacted
from ..sizes import check_sizes
from ..store.database import Database
from ..store.memory_rows import now
from ..store.receipts import with_write_id
from ..store.schema import AGENT_BRANCHES_SCHEMA, AGENT_COMMITS_SCHEMA, AGENT_ROADMAP_SCHEMA, AGENT_STEPS_SCHEMA
from ..store.sql import quote, scan
from ..store.store import GitPosition, MemoryStore
from ..write_ids import stamped, stamped_update, unstamped
from .agent_records import AgentBranch, AgentCommit, AgentExport, AgentStep, RoadmapEntry, validate_branch_name
from .agent_workspace import AgentFiles
from .agentlog_files import read_agent_dir, write_export
from .contexa_files import render_commits, render_log, render_metadata, render_roadmap, render_step

MAIN = "main"
_LOCK = ".agent.lock"
_CURRENT = "agent_current_branch"


@dataclass(frozen=True)
class AgentContext:
    """What `context(branch, k)` gives an agent: enough to pick up where it left off."""

    roadmap: tuple[RoadmapEntry, ...]
    branch: AgentBranch
    commits: tuple[AgentCommit, ...]
    """The last k commits on the branch, oldest first."""
    earlier_commits: int
    commit_steps: tuple[AgentStep, ...]
    """The observation-thought-action steps those k commits cover, oldest first: what each milestone was made of."""
    steps: tuple[AgentStep, ...]
    """Steps since the last commit."""
    committed_steps: int
    """Steps stored behind commits; those of commits older than the last k are shown only as the ranges covered."""
    branches: tuple[AgentBranch, ...]

    def to_json(self) -> dict:
        return {**asdict(self), "markdown": self.markdown()}

    def markdown(self) -> str:
        b = self.branch
        lines = ["# Agent context", "", "## Roadmap"]
        lines += [f"{e.seq}. {e.text}" for e in self.roadmap] or ["(none)"]
        origin = f", from `{b.parent}`" if b.parent else ""
        merged = f" into `{b.merged_into}`" if b.merged_into else ""
        lines += ["", f"## Branch `{b.name}` ({b.status}{merged}{origin})", f"Purpose: {b.purpose or '(none)'}"]
        others = [f"`{o.name}` ({o.status})" for o in self.branches if o.name != b.name]
        if others:
            lines.append("Other branches: " + ", ".join(others))
        lines += ["", f"## Commits (last {len(self.commits)} of {len(self.commits) + self.earlier_commits})"]
        for c in self.commits:
            covers = f"steps {_ranges(c.steps)}" if c.steps else "no steps"
            source = f" of `{c.merged_from}`" if c.merged_from else ""
            git = f"{c.git_branch or '-'}@{c.head[:8] or '-'}"
            lines.append(f"### {c.kind}{source} {c.id} · {c.at:%Y-%m-%d %H:%M} · git {git} · {covers}")
            if c.summary:
                lines += ["Progress before:", c.summary]
            lines += ["Contribution:", c.contribution]
            covered = set(c.steps)
            lines += [_step_line(s) for s in self.commit_steps if s.n in covered]
            lines.append("")
        if not self.commits:
            lines += ["(none)", ""]
        lines.append(f"## Steps since the last commit ({len(self.steps)}; {self.committed_steps} earlier behind commits)")
        lines += [_step_line(s) for s in self.steps] or ["(none)"]
        return redacted("\n".join(lines) + "\n")


def _step_line(s: AgentStep) -> str:
    origin = f" (from {s.origin})" if s.origin else ""
    return f"{s.n}.{origin} **O:** {s.observation} **T:** {s.thought} **A:** {s.action}"


@dataclass
class _Change:
    """What one change touched, for the live files: branches whose files are rendered again, and steps logged on a
    branch (appended to its log.md, which is all that changes there)."""

    branches: set[str] = field(default_factory=set)
    appended: dict[str, AgentStep] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentBranches:
    """What `cortex agent branches` and the `agent_branches` tool list."""

    current: str
    branches: tuple[AgentBranch, ...]
    steps: dict[str, int]
    """Steps per branch."""
    commits: dict[str, int]
    """Commits per branch."""


def _commit_fields(row: dict) -> dict[str, Any]:
    return {k: (tuple(row[k]) if k == "steps" else row[k]) for k in AGENT_COMMITS_SCHEMA.names}


def _ranges(numbers: tuple[int, ...]) -> str:
    out: list[str] = []
    start: int | None = None
    prev = 0  # read only once start is set
    for n in sorted(numbers):
        if start is None:
            start = prev = n
        elif n == prev + 1:
            prev = n
        else:
            out.append(f"{start}-{prev}" if prev != start else str(start))
            start = prev = n
    if start is not None:
        out.append(f"{start}-{prev}" if prev != start else str(start))
    return ", ".join(out)


def _last_covered(commits: list[AgentCommit]) -> int:
    """The highest step number behind a commit (0 before the first): later steps are the uncommitted ones."""
    return max((n for c in commits for n in c.steps), default=0)


class AgentLog:
    """The agent context of one database. Reads are plain; every change holds the agent lock for its whole
    read-then-write, so concurrent agents see each other's steps."""

    def __init__(self, db: Database, store: MemoryStore, position: Callable[[], GitPosition],
                 files: AgentFiles | None = None) -> None:
        self.db = db
        self.store = store
        self.position = position
        self.files = files
        """The live files kept in step with every change (None: none)."""
        # Each row carries the id of the write that stored it (see core/store/receipts.py).
        self.roadmap_table = db.open_table("agent_roadmap", with_write_id(AGENT_ROADMAP_SCHEMA))
        self.branches_table = db.open_table("agent_branches", with_write_id(AGENT_BRANCHES_SCHEMA))
        self.steps_table = db.open_table("agent_steps", with_write_id(AGENT_STEPS_SCHEMA))
        self.commits_table = db.open_table("agent_commits", with_write_id(AGENT_COMMITS_SCHEMA))

    # --- reads -------------------------------------------------------------------------------------------------

    def roadmap(self) -> list[RoadmapEntry]:
        return sorted((RoadmapEntry(r["seq"], r["text"], r["at"]) for r in scan(self.roadmap_table)),
                      key=lambda e: e.seq)

    def branches(self) -> list[AgentBranch]:
        rows = scan(self.branches_table)
        return sorted((AgentBranch(**{k: r[k] for k in AGENT_BRANCHES_SCHEMA.names}) for r in rows),
                      key=lambda b: (b.name != MAIN, b.created_at))

    def find_branch(self, name: str) -> AgentBranch | None:
        return next((b for b in self.branches() if b.name == name), None)

    def get_branch(self, name: str) -> AgentBranch:
        branch = self.find_branch(name)
        if branch is None:
            known = ", ".join(b.name for b in self.branches()) or "none"
            raise CortexError(f"no agent branch {name!r} (branches: {known})")
        return branch

    def steps(self, branch: str) -> list[AgentStep]:
        """The branch's steps. Steps a merge copied in count only once the source branch is marked merged (the
        merge's last write): a merge a crash interrupted shows nothing until it is run again and finishes."""
        merged_into = {b.name: b.merged_into for b in self.branches() if b.status == "merged"}
        return [s for s in self._stored_steps(branch)
                if not s.origin or merged_into.get(s.origin.rsplit("#", 1)[0]) == branch]

    def _stored_steps(self, branch: str) -> list[AgentStep]:
        rows = scan(self.steps_table, f"branch = {quote(branch)}")
        return sorted((AgentStep(**{k: r[k] for k in AGENT_STEPS_SCHEMA.names}) for r in rows), key=lambda s: s.n)

    def _last_n(self, branch: str) -> int:
        """The highest step number stored on a branch, hidden copies of an unfinished merge included."""
        return max((s.n for s in self._stored_steps(branch)), default=0)

    def commits(self, branch: str) -> list[AgentCommit]:
        rows = scan(self.commits_table, f"branch = {quote(branch)}")
        out = [AgentCommit(**_commit_fields(r)) for r in rows]
        return sorted(out, key=lambda c: c.seq)

    def is_initialised(self) -> bool:
        return self.branches_table.count_rows() > 0

    def current(self) -> str:
        self._require_init()
        return self.db.get_meta(_CURRENT) or MAIN

    def context(self, branch: str | None = None, k: int = 1) -> AgentContext:
        if k < 0:
            raise CortexError("k must be 0 or more")
        b = self.get_branch(branch or self.current())
        self.resync_files()
        commits = self.commits(b.name)
        steps = self.steps(b.name)
        covered = _last_covered(commits)
        recent = tuple(commits[-k:]) if k else ()
        shown = {n for c in recent for n in c.steps}
        behind = tuple(s for s in steps if s.n in shown)
        pending = tuple(s for s in steps if s.n > covered)
        return AgentContext(tuple(self.roadmap()), b, recent, len(commits) - len(recent), behind, pending,
                            len(steps) - len(pending), tuple(self.branches()))

    def overview(self) -> AgentBranches:
        """Every branch with its status and how many steps and commits it holds."""
        current = self.current()
        self.resync_files()
        branches = tuple(self.branches())
        return AgentBranches(current, branches, {b.name: len(self.steps(b.name)) for b in branches},
                             {b.name: len(self.commits(b.name)) for b in branches})

    # --- the live files ----------------------------------------------------------------------------------------

    def _stamp(self) -> dict:
        """The store as the files show it: the agent tables' versions and the current branch."""
        tables = (self.roadmap_table, self.branches_table, self.steps_table, self.commits_table)
        return {**{t.name: t.version for t in tables}, "current": self.db.get_meta(_CURRENT) or MAIN}

    @contextlib.contextmanager
    def _changing(self) -> Iterator[_Change]:
        """Hold the agent lock for a change, then bring the live files in step: the branches the change names, the
        roadmap and the state; every file that differs when the files were behind the store before the change
        began. Nothing is written when the change raises."""
        with self.db.lock(_LOCK):
            before = self._stamp() if self.files is not None else None
            change = _Change()
            yield change
            self._sync(change, before)

    def _sync(self, change: _Change, before: dict | None) -> None:
        """The files are a view of the store, which holds the change already: a file that cannot be written (a
        read-only `agent_dir`, a full disk) is said on standard error, never a failure of the stored change (an agent
        or a hook retrying it would store it twice); the next operation writes what is behind."""
        try:
            self._write_files(change, before)
        except OSError as exc:
            print(f"cortex: the agent context's files in {self.files.directory if self.files else ''} were not "
                  f"updated ({exc.strerror or exc}); the change is stored", file=sys.stderr)

    def _write_files(self, change: _Change, before: dict | None) -> None:
        files = self.files
        # Before its roadmap is stored (an import stopped after its branches), there is no context to show yet.
        if files is None or self.db.read_only or not self.is_initialised() or not self.roadmap_table.count_rows():
            return
        state = files.state()
        everything = before is None or state is None or state.get("synced") != before
        branches = {b.name: b for b in self.branches()}
        commits: dict[str, list[AgentCommit]] = {}

        def commits_of(name: str) -> list[AgentCommit]:
            if name not in commits:
                commits[name] = self.commits(name)
            return commits[name]

        rendered = {"main.md": render_roadmap(self.roadmap())}
        if not everything:
            for name, step in change.appended.items():
                try:  # in step before this change: the file is what a render would give, this step's block after it
                    rendered[f"branches/{name}/log.md"] = (files.directory / "branches" / name / "log.md").read_text(
                        encoding="utf-8") + render_step(step)
                except (OSError, UnicodeDecodeError):
                    change.branches.add(name)
        for name in branches if everything else sorted(change.branches & set(branches)):
            b = branches[name]
            folder = f"branches/{name}/"
            rendered[folder + "log.md"] = render_log(b, self.steps(name), commits_of(name))
            rendered[folder + "commit.md"] = render_commits(b, commits_of(name))
            merged_at = next((c.at for c in commits_of(b.merged_into) if c.merged_from == name), None) \
                if b.merged_into else None
            rendered[folder + "metadata.yaml"] = render_metadata(b, merged_at)
        stamp = self._stamp()
        files.write(rendered, stamp["current"], stamp)

    def resync_files(self) -> None:
        """Rewrite the live files if they are behind the store (a process killed between its commit and its files):
        what a read does, so the files are right whenever cortex has looked."""
        if self.files is None or self.db.read_only or not self.is_initialised() or not self.roadmap_table.count_rows():
            return
        state = self.files.state()
        if state is not None and state.get("synced") == self._stamp():
            return
        with self.db.lock(_LOCK):
            self._sync(_Change(), None)

    # --- changes -----------------------------------------------------------------------------------------------

    def _require_init(self) -> None:
        if not self.is_initialised():
            raise CortexError("no agent context here yet: run `cortex agent init GOAL` first")

    def _refuse(self, **named: str | None) -> None:
        """Text an agent hands in, refused when it is over the memory size limit (checked first, so a huge field
        costs no secret scan) or holds a secret."""
        check_sizes(self.store.max_text_bytes, "the", **named)
        refuse_secrets(**named)

    def _active(self, name: str) -> AgentBranch:
        branch = self.get_branch(name)
        if branch.status != "active":
            into = f" into {branch.merged_into!r}" if branch.merged_into else ""
            raise CortexError(f"agent branch {name!r} is {branch.status}{into}; switch to an active branch")
        return branch

    def init(self, goal: str) -> AgentContext:
        goal = goal.strip()
        if not goal:
            raise CortexError("the goal is empty")
        self._refuse(goal=goal)
        with self._changing() as change:
            if self.is_initialised():
                raise CortexError("the agent context already exists: extend the roadmap with `cortex agent roadmap TEXT`")
            self._files_free()
            change.branches.add(MAIN)
            stamp = now()
            with unstamped():  # the branch makes the context (`is_initialised`): its row carries the id
                self.db.write(lambda: self.db.add(self.roadmap_table, [stamped({"seq": 1, "text": goal, "at": stamp})]))
            self._add_branch(AgentBranch(MAIN, goal, "", "active", "", stamp))
            self.db.set_meta(_CURRENT, MAIN)
        return self.context()

    def _files_free(self) -> None:
        """A new context's files go where no other context's are (those of a database since deleted, a contexa
        workspace): refused before anything is stored, never written over."""
        if self.files is not None and self.files.holds_a_context():
            where = self.files.directory
            raise CortexError(f"{where} holds another agent context's files: continue it with `cortex agent import "
                              f"{where}`, or move it away (or set agent_dir elsewhere)")

    def _add_branch(self, branch: AgentBranch) -> None:
        self.db.write(lambda: self.db.add(self.branches_table, [stamped(branch.__dict__)]))

    def log_ota(self, observation: str, thought: str, action: str, branch: str | None = None) -> AgentStep:
        if not any(part.strip() for part in (observation, thought, action)):
            raise CortexError("an empty step: give an observation, a thought or an action")
        self._refuse(observation=observation, thought=thought, action=action)
        with self._changing() as change:
            name = self._active(branch or self.current()).name
            n = self._last_n(name) + 1
            step = self._store_step(AgentStep(name, n, observation.strip(), thought.strip(), action.strip(), "",
                                              *self._git(), now(), ""))
            change.appended[name] = step
        return step

    def _git(self) -> tuple[str, str]:
        position = self.position()
        return position.branch, position.commit

    def _store_step(self, step: AgentStep, mirror: bool = True) -> AgentStep:
        if mirror:
            step = replace(step, memory_id=self._mirror(step_memory(step), step.git_branch, step.head))
        self.db.write(lambda: self.db.add(self.steps_table, [stamped(step.__dict__)]))
        return step

    def _mirror(self, draft: MemoryDraft, git_branch: str, head: str) -> str:
        with unstamped():  # a step towards the change, not the change: the id is found only once it is stored
            return self.store.remember(draft, GitPosition(git_branch, head)).memory.id

    def commit(self, contribution: str, previous_summary: str | None = None, update_roadmap: str | None = None,
               branch: str | None = None) -> AgentCommit:
        contribution = contribution.strip()
        if not contribution:
            raise CortexError("the commit's contribution is empty")
        self._refuse(contribution=contribution, summary=previous_summary, roadmap=update_roadmap)
        with self._changing() as change:
            b = self._active(branch or self.current())
            change.branches.add(b.name)
            commits = self.commits(b.name)
            covered = _last_covered(commits)
            new = tuple(s.n for s in self.steps(b.name) if s.n > covered)
            if not new:
                raise CortexError(f"nothing to commit on {b.name!r}: no steps logged since the last commit")
            if update_roadmap and update_roadmap.strip():
                with unstamped():  # a step towards the commit, which carries the id
                    self._append_roadmap(update_roadmap.strip())
            return self._store_commit(b, commits, "commit", contribution, previous_summary, new, "")

    def extend_roadmap(self, text: str) -> RoadmapEntry:
        """Append to the roadmap on its own, between commits: a goal added, a plan changed."""
        text = text.strip()
        if not text:
            raise CortexError("the roadmap entry is empty")
        self._refuse(roadmap=text)
        with self._changing():
            self._require_init()
            return self._append_roadmap(text)

    def _append_roadmap(self, text: str) -> RoadmapEntry:
        entry = RoadmapEntry(max((e.seq for e in self.roadmap()), default=0) + 1, text, now())
        self.db.write(lambda: self.db.add(self.roadmap_table, [stamped(entry.__dict__)]))
        return entry

    def _store_commit(self, b: AgentBranch, commits: list[AgentCommit], kind: str, contribution: str,
                      previous_summary: str | None, steps: tuple[int, ...], merged_from: str,
                      commit_id: str | None = None) -> AgentCommit:
        summary = previous_summary.strip() if previous_summary is not None else (commits[-1].progress if commits else "")
        commit = AgentCommit(commit_id or uuid.uuid4().hex[:12], b.name, len(commits) + 1, kind, b.purpose, summary,
                             contribution, steps, merged_from, *self._git(), now(), "")
        commit = replace(commit, memory_id=self._mirror(commit_memory(commit), commit.git_branch, commit.head))
        row = stamped({**commit.__dict__, "steps": list(commit.steps)})
        self.db.write(lambda: self.db.upsert(self.commits_table, "id", [row]))
        return commit

    def branch(self, name: str, purpose: str) -> AgentBranch:
        validate_branch_name(name)
        self._refuse(branch_name=name, purpose=purpose)
        with self._changing() as change:
            change.branches.add(name)
            parent = self._active(self.current()).name
            if self.find_branch(name) is not None:
                raise CortexError(f"agent branch {name!r} already exists")
            created = AgentBranch(name, purpose.strip(), parent, "active", "", now())
            self._add_branch(created)
            self.db.set_meta(_CURRENT, name)
        return created

    def switch(self, name: str) -> AgentBranch:
        with self._changing():
            branch = self._active(name)
            self.db.set_meta(_CURRENT, name)
        return branch

    def abandon(self, name: str) -> AgentBranch:
        with self._changing() as change:
            branch = self._active(name)
            change.branches.add(name)
            if name == MAIN:
                raise CortexError("main cannot be abandoned")
            self._set_status(name, "abandoned", "")
            if self.current() == name:
                self.db.set_meta(_CURRENT, branch.parent)
        return replace(branch, status="abandoned")

    def _set_status(self, name: str, status: str, merged_into: str) -> None:
        values = stamped_update({"status": status, "merged_into": merged_into})
        self.db.write(lambda: self.db.update(self.branches_table, f"name = {quote(name)}", values))

    def merge(self, name: str, target: str | None = None, summary: str | None = None) -> AgentCommit:
        """Append `name`'s steps to the target (its parent by default), write a merge commit there covering them,
        and mark `name` merged. Crash-safe and repeatable: the copies are one commit and stay hidden until the
        last write marks the source merged; running the merge again after a crash reuses the copies it finds and
        the merge commit (its id is derived from the branches), so nothing is stored twice."""
        self._refuse(summary=summary)
        with self._changing() as change:
            source = self.get_branch(name)
            into = target or source.parent or MAIN
            change.branches.update((name, into))
            if into == name:
                raise CortexError(f"cannot merge {name!r} into itself")
            if source.status == "merged":
                raise CortexError(f"{name!r} is already merged into {source.merged_into!r}")
            if source.status != "active":
                raise CortexError(f"{name!r} is {source.status}; only active branches merge")
            dest = self._active(into)
            steps = self.steps(name)
            if not steps:
                raise CortexError(f"nothing to merge: {name!r} has no steps")
            copied = {s.origin: s.n for s in self._stored_steps(into) if s.origin.rsplit("#", 1)[0] == name}
            missing = [s for s in steps if f"{name}#{s.n}" not in copied]
            start = self._last_n(into)
            with unstamped():  # the copies and the merge commit are steps; marking the source merged is the change
                rows = [stamped(replace(s, branch=into, n=start + offset, origin=f"{name}#{s.n}", memory_id="").__dict__)
                        for offset, s in enumerate(missing, 1)]
            if rows:
                self.db.write(lambda: self.db.upsert(self.steps_table, ["branch", "n"], rows))
            numbers = tuple(sorted([*copied.values(), *(r["n"] for r in rows)]))
            commit_id = hashlib.sha1(f"merge {name} into {into} {source.created_at.isoformat()}".encode()).hexdigest()[:12]
            into_commits = self.commits(into)
            commit = next((c for c in into_commits if c.id == commit_id), None)
            if commit is None:
                source_commits = self.commits(name)
                last = source_commits[-1].contribution if source_commits else "no commits"
                text = (summary or "").strip() or f"Merged {name} ({source.purpose}): {last}"
                with unstamped():
                    commit = self._store_commit(dest, into_commits, "merge", text, None, numbers, name, commit_id)
            self._set_status(name, "merged", into)
            if self.current() == name:
                self.db.set_meta(_CURRENT, into)
        return commit

    # --- export / import ---------------------------------------------------------------------------------------

    def export(self, directory: Path) -> list[Path]:
        self._require_init()
        branches = self.branches()
        return write_export(directory, self.current(), self.roadmap(), branches,
                            {b.name: self.steps(b.name) for b in branches},
                            {b.name: self.commits(b.name) for b in branches})

    def import_(self, directory: Path) -> AgentImport:
        """Read a `cortex agent export`, a contexa workspace or cortex's live files into this database: every branch,
        step, commit and roadmap entry, each step and commit mirrored as a memory again. Idempotent and resumable:
        what the database already holds of it is kept, the rest added; a database whose agent context differs in
        anything is refused. Everything is read and checked before the first write."""
        kind, data = read_agent_dir(directory)
        self._refuse(**record_texts([*data.roadmap, *data.branches, *(s for v in data.steps.values() for s in v),
                                       *(c for v in data.commits.values() for c in v)]))
        with self._changing() as change:
            have = self._held() if self.is_initialised() else None
            if have is None and self.files is not None and self.files.directory.resolve() != directory.resolve():
                self._files_free()
            missing = _missing(data, have, directory)
            if any(missing.values()):
                self._store_import(data, missing, change)
        # The context is read once the lock is let go: reading it may bring the live files in step, under that lock.
        added = {name: len(rows) for name, rows in missing.items()} if any(missing.values()) else {}
        return AgentImport(kind, added, self.context())

    def _store_import(self, data: AgentExport, missing: dict[str, list], change: _Change) -> None:
        """The missing records, in an order a crash can stop anywhere: branches first (so a partial import is seen,
        and finished by importing again), memories before the rows that name them."""
        change.branches.update(b.name for b in data.branches)
        if missing["branches"]:
            self.db.write(lambda: self.db.add(self.branches_table, [stamped(b.__dict__) for b in missing["branches"]]))
        if missing["roadmap"]:
            self.db.write(lambda: self.db.add(self.roadmap_table, [stamped(e.__dict__) for e in missing["roadmap"]]))
        steps = self._mirrored(missing["steps"], step_memory)
        if steps:
            self.db.write(lambda: self.db.add(self.steps_table, [stamped(s.__dict__) for s in steps]))
        commits = self._mirrored(missing["commits"], commit_memory)
        if commits:
            rows = [stamped({**c.__dict__, "steps": list(c.steps)}) for c in commits]
            self.db.write(lambda: self.db.upsert(self.commits_table, "id", rows))
        self.db.set_meta(_CURRENT, data.current)

    def _mirrored(self, records: list, memory: Callable) -> list:
        """The records with the ids of their memories, made in one batch per git position (steps a merge copied are
        not mirrored: their originals are). A memory made before a crash is found again, not made twice."""
        out = list(records)
        groups: dict[tuple[str, str], list[int]] = {}
        for i, r in enumerate(out):
            if not getattr(r, "origin", ""):
                groups.setdefault((r.git_branch, r.head), []).append(i)
        for (git_branch, head), positions in groups.items():
            made = self.store.remember_many([memory(out[i]) for i in positions], GitPosition(git_branch, head))
            for i, result in zip(positions, made):
                out[i] = replace(out[i], memory_id=result.memory.id)
        return out

    def _held(self) -> AgentExport:
        """What the database holds, as an import reads it (steps a merge copied included, memory ids left out)."""
        branches = self.branches()
        return AgentExport(self.current(), self.roadmap(), branches,
                           {b.name: [replace(s, memory_id="") for s in self._stored_steps(b.name)] for b in branches},
                           {b.name: [replace(c, memory_id="") for c in self.commits(b.name)] for b in branches})


@dataclass(frozen=True)
class AgentImport:
    """What `cortex agent import` did: the kind of directory read, how many of each record it added (none: the
    database held them all already), and the context now."""

    kind: str
    added: dict[str, int]
    context: AgentContext


def _missing(data: AgentExport, have: AgentExport | None, directory: Path) -> dict[str, list]:
    """The records of `data` the database lacks, by kind; refused when the database holds any record `data` does
    not, or holds one differently."""
    theirs = _keyed(data)
    mine = _keyed(have) if have is not None else {kind: {} for kind in theirs}
    for kind, records in mine.items():
        for key, record in records.items():
            if theirs[kind].get(key) != record:
                raise CortexError(f"this database's agent context differs from {directory} ({_SINGULAR[kind]} {key}): "
                                  "import into a database without one")
    return {kind: [r for key, r in records.items() if key not in mine[kind]] for kind, records in theirs.items()}


_SINGULAR = {"branches": "branch", "roadmap": "roadmap", "steps": "step", "commits": "commit"}


def _keyed(data: AgentExport) -> dict[str, dict[str, Any]]:
    return {"branches": {b.name: b for b in data.branches},
            "roadmap": {f"entry {e.seq}": e for e in data.roadmap},
            "steps": {f"{s.branch}#{s.n}": s for v in data.steps.values() for s in v},
            "commits": {f"{c.branch} {c.id}": c for v in data.commits.values() for c in v}}


def step_memory(step: AgentStep) -> MemoryDraft:
    parts = [f"agent step {step.branch}#{step.n}"]
    parts += [f"{label}: {text}" for label, text in
              (("Observation", step.observation), ("Thought", step.thought), ("Action", step.action)) if text]
    headline = step.action or step.observation or step.thought
    return MemoryDraft(text="\n".join(parts), kind="agent", title=f"{step.branch}#{step.n}: {headline}"[:100],
                       tags=(STEP_TAG, f"agent-branch:{step.branch}"), source_key=f"agent/{step.branch}/step/{step.n}",
                       created_at=step.at)


def commit_memory(commit: AgentCommit) -> MemoryDraft:
    text = f"agent {commit.kind} {commit.id} on {commit.branch}\n{commit.contribution}"
    if commit.summary:
        text += f"\n\nProgress before: {commit.summary}"
    return MemoryDraft(text=text, kind="agent", title=f"{commit.branch} {commit.kind}: {commit.contribution}"[:100],
                       tags=(COMMIT_TAG, f"agent-branch:{commit.branch}"), context=f"branch purpose: {commit.purpose}",
                       source_key=f"agent/{commit.branch}/commit/{commit.id}", created_at=commit.at)
