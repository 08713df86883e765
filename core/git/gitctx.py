"""The repository's git state with GitPython: branch, HEAD, recent commits, the working change, branches.

Every reader degrades to an empty context instead of failing: no git at all, a repository with no commits,
a detached HEAD, a worktree or a submodule (GitPython follows their `.git` files).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..text import split_identifier

MAIN_BRANCHES = frozenset({"main", "master", "trunk", "develop"})
"""Branch names that say nothing about the work on them."""


def implicit_query(ctx: GitContext | None) -> str:
    """What you are working on, in words: branch name, recent commit subjects, changed file names. The search with
    no query and the context pane with no task both start from it."""
    if ctx is None or not ctx.is_repo:
        return ""
    parts: list[str] = []
    if ctx.branch and ctx.branch not in MAIN_BRANCHES:
        parts.append(" ".join(split_identifier(ctx.branch.replace("/", "_").replace("-", "_"))))
    parts.extend(_distinct(c.subject for c in ctx.commits[:5]))
    parts.extend(ctx.changed_files[:10])
    # Parts apart, as people read them (the context pane shows this as its implicit task); search splits words anyway.
    return "; ".join(p for p in parts if p)


def _distinct(subjects: Iterable[str]) -> list[str]:
    """Commit subjects without repeats: a squash-merged pull request's subject is its commit's with ` (#3168)` added."""
    seen: set[str] = set()
    kept = []
    for subject in subjects:
        key = " ".join(re.sub(r"\(#\d+\)|[^\w\s]", " ", subject.lower()).split())
        if key and key not in seen:
            seen.add(key)
            kept.append(subject)
    return kept


@dataclass(frozen=True)
class CommitInfo:
    """One commit of the current branch's history."""

    sha: str
    author: str
    time: datetime
    subject: str
    files: tuple[str, ...]

    @property
    def short(self) -> str:
        return self.sha[:8]


@dataclass(frozen=True)
class FileTouch:
    """A file changed by one of the recent commits, with the time of its latest change among them."""

    path: str
    last_changed: datetime
    commits: int


@dataclass(frozen=True)
class GitContext:
    """A snapshot of the repository's state; `is_repo` is False (and everything empty) outside git."""

    root: Path
    is_repo: bool = False
    branch: str = ""
    detached: bool = False
    head: str = ""
    commits: tuple[CommitInfo, ...] = ()
    modified: tuple[str, ...] = ()
    staged: tuple[str, ...] = ()
    untracked: tuple[str, ...] = ()
    recent_files: tuple[FileTouch, ...] = ()
    branches: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())
    """Why parts are empty (no commits yet, not a repository)."""

    @property
    def changed_files(self) -> tuple[str, ...]:
        """The working change: staged, modified and untracked files, without repeats."""
        return tuple(dict.fromkeys(self.staged + self.modified + self.untracked))

    def to_json(self) -> dict:
        return {
            "root": str(self.root),
            "is_repo": self.is_repo,
            "branch": self.branch,
            "detached": self.detached,
            "head": self.head,
            "commits": [
                {"sha": c.sha, "author": c.author, "time": c.time.isoformat(), "subject": c.subject, "files": list(c.files)}
                for c in self.commits
            ],
            "modified": list(self.modified),
            "staged": list(self.staged),
            "untracked": list(self.untracked),
            "recent_files": [
                {"path": f.path, "last_changed": f.last_changed.isoformat(), "commits": f.commits} for f in self.recent_files
            ],
            "branches": list(self.branches),
            "notes": list(self.notes),
        }


def find_repo(path: Path):
    """The git.Repo containing path, or None outside git."""
    import git

    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


def repo_root(path: Path) -> Path | None:
    repo = find_repo(path)
    if repo is None or repo.working_tree_dir is None:
        return None
    return Path(repo.working_tree_dir)


def read_git_context(path: Path, max_commits: int = 20, generation: int | None = None,
                     history_out: Future | None = None) -> GitContext:
    """The whole snapshot: the history (`read_history`, cached while no ref moves) and the working change, one
    `git status` of the whole tree. `generation` is a number that changes whenever the work tree may have changed
    (a watcher's count of the changes it saw); given one, the working change is read again only when it, HEAD or
    git's index file (staging) moved, so a search on a large tree does not pay for `git status` each time.
    `history_out`, if given, receives the history as soon as it is read, before the working change: a search
    ranks with it meanwhile, and the repository is opened once for both."""
    try:
        repo = find_repo(path)
        history = _read_history(repo, path, max_commits)
    except BaseException as exc:
        if history_out is not None:
            history_out.set_exception(exc)
        raise
    if history_out is not None:
        history_out.set_result(history)
    if not history.is_repo:
        return history
    key = (generation, history.head, _staging_stamp(repo)) if generation is not None else None
    if key is not None:
        with _CHANGES_LOCK:
            cached = _CHANGES.get(str(repo.git_dir))
        if cached is not None and cached[0] == key:
            return replace(history, **cached[1])
    staged, modified, untracked = _working_change(repo)
    change: dict[str, Any] = {"staged": staged, "modified": modified, "untracked": untracked}
    # Kept only if git's index file did not move while it was read: `git status` may rewrite it (a stat
    # refresh), and so may a `git add` run meanwhile, whose staging this read may have missed.
    if key is not None and _staging_stamp(repo) == key[2]:
        with _CHANGES_LOCK:
            _CHANGES[str(repo.git_dir)] = (key, change)
    return replace(history, **change)


def _staging_stamp(repo) -> tuple[int, int] | None:
    try:
        st = (Path(repo.git_dir) / "index").stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


_CHANGES: dict[str, tuple[tuple, dict[str, Any]]] = {}
"""The last working change read per git directory, with the key it was read under."""
_CHANGES_LOCK = threading.Lock()


def read_history(path: Path, max_commits: int = 20) -> GitContext:
    """Branch, HEAD, recent commits and branches, without the working change (empty here): milliseconds, as the
    history is read once per ref change and remembered."""
    return _read_history(find_repo(path), path, max_commits)


def _read_history(repo, path: Path, max_commits: int) -> GitContext:
    if repo is None or repo.working_tree_dir is None:
        return GitContext(root=path.resolve(), notes=("not a git repository",))
    history = _history(repo, max_commits)
    return GitContext(
        root=Path(repo.working_tree_dir),
        is_repo=True,
        branch=history.branch,
        detached=history.detached,
        head=history.head,
        commits=history.commits,
        recent_files=history.recent_files,
        branches=history.branches,
        notes=history.notes,
    )


@dataclass(frozen=True)
class _History:
    branch: str
    detached: bool
    head: str
    commits: tuple[CommitInfo, ...]
    recent_files: tuple[FileTouch, ...]
    branches: tuple[str, ...]
    notes: tuple[str, ...]


_HISTORIES: dict[tuple, _History] = {}
"""Keyed by git directory, commit count and `_refs_stamp`: a long-lived process (the resident server, the
dashboard) reads HEAD's history once per ref change instead of spawning git for it on every request."""
_HISTORIES_KEPT = 16
_HISTORIES_LOCK = threading.Lock()


def _history(repo, max_commits: int) -> _History:
    stamp = _refs_stamp(repo)
    key = (repo.git_dir, max_commits, stamp)
    if stamp is not None:
        with _HISTORIES_LOCK:
            found = _HISTORIES.get(key)
        if found is not None:
            return found
    detached = repo.head.is_detached
    has_commits = repo.head.is_valid()
    head = repo.head.commit.hexsha if has_commits else ""
    commits = read_commits(repo, head, max_commits) if has_commits else []
    history = _History(
        branch="" if detached else repo.head.reference.name,
        detached=detached,
        head=head,
        commits=tuple(commits),
        recent_files=_recent_files(commits),
        branches=tuple(sorted(h.name for h in repo.heads)),
        notes=() if has_commits else ("no commits yet",),
    )
    if stamp is not None:
        with _HISTORIES_LOCK:
            if len(_HISTORIES) >= _HISTORIES_KEPT:
                _HISTORIES.pop(next(iter(_HISTORIES)))
            _HISTORIES[key] = history
    return history


def _refs_stamp(repo) -> tuple | None:
    """What changes whenever HEAD, the branch it names or the list of branches moves: HEAD's text, the text of a
    loose ref it names, and the identity (inode, size, mtime) of packed-refs and of every file and folder under
    refs/heads. Git replaces a ref file by renaming a new one over it, so an update is a new inode as well as a new
    text. None (no caching) for a reftable repository, or when something cannot be read."""
    git_dir, common = Path(repo.git_dir), Path(repo.common_dir)
    try:
        if (common / "reftable").exists():
            return None
        head = (git_dir / "HEAD").read_bytes()
        parts: list = [head]
        if head.startswith(b"ref: "):
            target = head[5:].strip().decode("utf-8", "surrogateescape")
            loose = common / target
            parts.append(loose.read_bytes() if loose.is_file() else None)
        parts.append(_identity(common / "packed-refs"))
        for folder, _dirs, files in os.walk(common / "refs" / "heads"):
            parts.append((folder, _identity(Path(folder))))
            parts.extend((folder, name, _identity(Path(folder) / name)) for name in files)
        return tuple(parts)
    except OSError:
        return None


def _identity(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


_UNMERGED = {"DD", "AU", "UD", "UA", "DU", "AA", "UU"}


def _working_change(repo) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(staged, modified, untracked) from one `git status`: staged is the index against HEAD (every entry before
    the first commit), modified the work tree against the index (deletions included), untracked what is neither
    tracked nor ignored; a conflicted path is both staged and modified."""
    out = repo.git.status("--porcelain=v1", "-z", "--untracked-files=all")
    staged: set[str] = set()
    modified: set[str] = set()
    untracked: list[str] = []
    fields = iter(out.split("\0"))
    for entry in fields:
        if len(entry) < 4:
            continue
        xy, name = entry[:2], entry[3:]
        if xy[0] in "RC":
            next(fields, None)  # the path it was renamed or copied from
        if xy == "??":
            untracked.append(name)
        elif xy == "!!":
            continue
        elif xy in _UNMERGED:
            staged.add(name)
            modified.add(name)
        else:
            if xy[0] in "MADRCT":
                staged.add(name)
            if xy[1] in "MADT":
                modified.add(name)
    return tuple(sorted(staged)), tuple(sorted(modified)), tuple(sorted(untracked))


_ESCAPES = {"t": "\t", "n": "\n", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "r": "\r", "v": "\v"}


def unquoted(name: str) -> str:
    """A path as git prints it with core.quotePath=false: as itself, or C-quoted when it holds a quote, a backslash or
    a control character (`"a\\tb.py"`)."""
    if len(name) < 2 or not (name.startswith('"') and name.endswith('"')):
        return name
    return re.sub(r'\\(.)', lambda m: _ESCAPES.get(m[1], m[0]), name[1:-1])


def read_commits(repo, rev: str, max_count: int) -> list[CommitInfo]:
    """Commits reachable from rev, newest first, with their changed files, in one `git log` call."""
    # Imported here: an attached dashboard imports this module for its records, and never reads git itself.
    from ..secrets.secrets import redacted

    # core.quotePath=false: a path with non-ASCII characters comes as itself, not as "Z\303\274rich"; only names
    # holding a quote, a backslash or a control character are still quoted, and `unquoted` reads those.
    out = repo.git.execute(["git", "-c", "core.quotePath=false", "log", rev, f"--max-count={max_count}",
                            "--format=%x00%H%x1f%an%x1f%ct%x1f%s", "--name-only", "--no-renames"])
    commits = []
    for record in out.split("\x00")[1:]:
        header, _, names = record.partition("\n")
        sha, author, stamp, subject = header.split("\x1f", 3)
        files = tuple(sorted(unquoted(n) for n in names.splitlines() if n.strip()))
        commits.append(CommitInfo(sha, redacted(author), datetime.fromtimestamp(int(stamp), tz=UTC),
                                  redacted(subject), tuple(redacted(f) for f in files)))
    return commits


def _recent_files(commits: list[CommitInfo]) -> tuple[FileTouch, ...]:
    seen: dict[str, FileTouch] = {}
    for c in commits:
        for path in c.files:
            prev = seen.get(path)
            if prev is None:
                seen[path] = FileTouch(path, c.time, 1)
            else:
                seen[path] = FileTouch(path, max(prev.last_changed, c.time), prev.commits + 1)
    return tuple(sorted(seen.values(), key=lambda f: f.last_changed, reverse=True))


def position(path: Path) -> tuple[str, str]:
    """(branch, HEAD sha) cheaply, for stamping a new memory; empty strings outside git or before a commit."""
    repo = find_repo(path)
    if repo is None:
        return "", ""
    history = _history(repo, 0)
    return history.branch, history.head
