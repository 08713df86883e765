"""The repository's git state with GitPython: branch, HEAD, recent commits, the working change, branches.

Every reader degrades to an empty context instead of failing: no git at all, a repository with no commits,
a detached HEAD, a worktree or a submodule (GitPython follows their `.git` files).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

from .secrets import redacted, redacted_path


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


def read_git_context(path: Path, max_commits: int = 20, generation: int | None = None) -> GitContext:
    """The whole snapshot: the history (`read_history`) and the working change, which costs a `git status` of
    the whole tree. `generation` is a number that changes whenever the work tree may have changed (a watcher's
    count of the changes it saw); given one, the working change is read again only when it, HEAD or git's index
    file (staging) moved, so a search on a large tree does not pay for `git status` each time."""
    repo = find_repo(path)
    history = _read_history(repo, path, max_commits)
    if not history.is_repo:
        return history
    key = (generation, history.head, _staging_stamp(repo)) if generation is not None else None
    if key is not None:
        with _CHANGES_LOCK:
            cached = _CHANGES.get(str(repo.git_dir))
        if cached is not None and cached[0] == key:
            return replace(history, **cached[1])
    has_commits = bool(history.head)
    change = {
        "untracked": tuple(repo.untracked_files),
        "modified": tuple(sorted({d.a_path for d in repo.index.diff(None)})),
        "staged": tuple(sorted({(d.b_path or d.a_path) for d in repo.index.diff("HEAD")})) if has_commits
        else _staged_without_head(repo),
    }
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


_CHANGES: dict[str, tuple[tuple, dict[str, tuple[str, ...]]]] = {}
"""The last working change read per git directory, with the key it was read under."""
_CHANGES_LOCK = threading.Lock()


def read_history(path: Path, max_commits: int = 20) -> GitContext:
    """Branch, HEAD, recent commits and branches, without the working change (empty here): milliseconds, as the
    history behind a HEAD is read once and remembered."""
    return _read_history(find_repo(path), path, max_commits)


def _read_history(repo, path: Path, max_commits: int) -> GitContext:
    if repo is None or repo.working_tree_dir is None:
        return GitContext(root=path.resolve(), notes=("not a git repository",))
    notes: list[str] = []
    detached = repo.head.is_detached
    branch = "" if detached else repo.head.reference.name
    has_commits = repo.head.is_valid()
    head = repo.head.commit.hexsha if has_commits else ""
    commits: tuple[CommitInfo, ...] = ()
    recent: tuple[FileTouch, ...] = ()
    if has_commits:
        commits, recent = _history(repo, head, max_commits)
    else:
        notes.append("no commits yet")
    return GitContext(
        root=Path(repo.working_tree_dir),
        is_repo=True,
        branch=branch,
        detached=detached,
        head=head,
        commits=commits,
        recent_files=recent,
        branches=tuple(sorted(h.name for h in repo.heads)),
        notes=tuple(notes),
    )


_HISTORIES: dict[tuple[str, str, int], tuple[tuple[CommitInfo, ...], tuple[FileTouch, ...]]] = {}
_HISTORIES_KEPT = 16
_HISTORIES_LOCK = threading.Lock()


def _history(repo, head: str, max_count: int) -> tuple[tuple[CommitInfo, ...], tuple[FileTouch, ...]]:
    """The commits from a sha and the files they touched, remembered: the history behind a sha never changes, and
    every search and `what` reads it (a commit that touched ten thousand files is a `git log` of ten thousand names)."""
    key = (str(repo.common_dir), head, max_count)
    with _HISTORIES_LOCK:
        found = _HISTORIES.get(key)
    if found is None:
        commits = read_commits(repo, head, max_count)
        found = (tuple(commits), _recent_files(commits))
        with _HISTORIES_LOCK:
            if len(_HISTORIES) >= _HISTORIES_KEPT:
                _HISTORIES.pop(next(iter(_HISTORIES)))
            _HISTORIES[key] = found
    return found


def read_commits(repo, rev: str, max_count: int) -> list[CommitInfo]:
    """Commits reachable from rev, newest first, with their changed files, in one `git log` call."""
    out = repo.git.log(rev, f"--max-count={max_count}", "--format=%x00%H%x1f%an%x1f%ct%x1f%s", "--name-only", "--no-renames")
    commits = []
    for record in out.split("\x00")[1:]:
        header, _, names = record.partition("\n")
        sha, author, stamp, subject = header.split("\x1f", 3)
        files = tuple(sorted(n for n in names.splitlines() if n.strip()))
        commits.append(CommitInfo(sha, redacted(author), datetime.fromtimestamp(int(stamp), tz=timezone.utc),
                                  redacted(subject), tuple(redacted_path(f) for f in files)))
    return commits


def _staged_without_head(repo) -> tuple[str, ...]:
    """Before the first commit every entry in the index is staged."""
    return tuple(sorted(str(path) for path, _stage in repo.index.entries))


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
    branch = "" if repo.head.is_detached else repo.head.reference.name
    head = repo.head.commit.hexsha if repo.head.is_valid() else ""
    return branch, head
