"""The code a check compares against: the working tree (with the repository's HEAD), or a commit's tree.

Both answer the same questions about a path: its git blob id, its text, which commit last changed it since
another one, and where git says a file went when it is gone (rename detection). Each answer is cached by what
makes it true (a file's size and modification time, HEAD, the index file's stamp), so asking again is cheap.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def blob_id(data: bytes) -> str:
    """The id git gives a file's content (`git hash-object`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class CodeVersion:
    """What a check reads; subclasses say where the code comes from."""

    def __init__(self, repo) -> None:
        self.repo = repo
        self._renames: dict[tuple, dict[str, str]] = {}
        self._changed_by: dict[tuple, str] = {}
        self._own: dict[str, frozenset[str]] = {}

    # --- what subclasses answer -----------------------------------------------------------------------------------

    def blob(self, path: str) -> str | None:
        raise NotImplementedError

    def text(self, path: str) -> str | None:
        raise NotImplementedError

    def state(self, paths: list[str]) -> tuple:
        """A value that changes whenever the answers about these paths may change."""
        raise NotImplementedError

    def _rename_key(self) -> tuple:
        raise NotImplementedError

    def _diff_target(self) -> list[str]:
        """What `git diff SINCE ...` compares against: nothing for the working tree, a commit otherwise."""
        raise NotImplementedError

    def _head(self) -> str:
        raise NotImplementedError

    # --- shared --------------------------------------------------------------------------------------------------

    def old_text(self, blob: str) -> str | None:
        """A blob's text from the object database (None when it never was committed or staged)."""
        if self.repo is None or not blob:
            return None
        try:
            return self.repo.odb.stream(bytes.fromhex(blob)).read().decode("utf-8", "replace")
        except Exception:
            return None

    def renamed(self, since: str, path: str) -> str | None:
        """Where git's rename detection says `path` (as of commit `since`) went, or None."""
        if self.repo is None or not since:
            return None
        key = (since, *self._rename_key())
        found = self._renames.get(key)
        if found is None:
            try:
                out = self.repo.git.diff("-M", "--name-status", "--diff-filter=R", since, *self._diff_target())
            except Exception:
                out = ""
            found = {}
            for line in out.splitlines():
                parts = line.split("\t")
                if len(parts) == 3 and parts[0].startswith("R"):
                    found[parts[1]] = parts[2]
            self._renames[key] = found
        return found.get(path)

    def changed_by(self, since: str, path: str) -> str:
        """The short id of the newest commit after `since` that changed `path`, or "" when none did (the change is
        not committed yet)."""
        if self.repo is None or not since:
            return ""
        head = self._head()
        key = (since, head, path)
        if key not in self._changed_by:
            try:
                self._changed_by[key] = self.repo.git.log("-1", "--format=%h", f"{since}..{head}", "--", path).strip()
            except Exception:
                self._changed_by[key] = ""
        return self._changed_by[key]

    def own_commits(self) -> frozenset[str]:
        """The commits of the branch being worked on: on HEAD and on no default branch (`main`, `master`, the
        remote's HEAD). Empty on a default branch itself, whose commits are shared history."""
        if self.repo is None:
            return frozenset()
        head = self._head()
        key = f"{self._branch()} {head}"
        if key not in self._own:
            # A default ref at HEAD itself stays: HEAD then has no commits of its own beyond it.
            others = [ref for ref in ("refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master")
                      if self._resolves(ref)]
            try:
                out = self.repo.git.rev_list("--max-count=500", head, "--not", *others) if others else ""
            except Exception:
                out = ""
            # A default branch's commits are shared history, even when another branch points at them too.
            on_default = self._branch() in ("main", "master") or not others
            self._own = {key: frozenset() if on_default else frozenset(out.split())}
        return self._own[key]

    def _branch(self) -> str:
        """The checked-out branch's name ('' when detached)."""
        return ""

    def _resolves(self, ref: str) -> str:
        try:
            return self.repo.git.rev_parse("--verify", "--quiet", ref).strip()
        except Exception:
            return ""

    def committed_blob(self, path: str) -> str | None:
        """The blob id of `path` in the commit this version sits on (HEAD for the working tree)."""
        if self.repo is None:
            return None
        try:
            return self.repo.commit(self._head()).tree[path].hexsha
        except Exception:
            return None


class WorkTree(CodeVersion):
    """The working tree as it is now, with HEAD as its commit."""

    def __init__(self, root: Path, repo) -> None:
        super().__init__(repo)
        self.root = root
        self._blobs: dict[str, tuple[tuple, str]] = {}

    def _stat(self, path: str) -> tuple | None:
        try:
            st = os.stat(self.root / path)
        except OSError:
            return None
        return (st.st_mtime_ns, st.st_size, st.st_ino)

    def blob(self, path: str) -> str | None:
        stat = self._stat(path)
        if stat is None:
            return None
        cached = self._blobs.get(path)
        if cached is not None and cached[0] == stat:
            return cached[1]
        try:
            data = (self.root / path).read_bytes()
        except OSError:
            return None
        found = blob_id(data)
        self._blobs[path] = (stat, found)
        return found

    def text(self, path: str) -> str | None:
        try:
            return (self.root / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            return None

    def _head(self) -> str:
        if self.repo is None:
            return ""
        try:
            return self.repo.head.commit.hexsha
        except Exception:
            return ""

    def _branch(self) -> str:
        if self.repo is None:
            return ""
        try:
            return self.repo.active_branch.name
        except Exception:
            return ""

    def state(self, paths: list[str]) -> tuple:
        return (self._head(), self._branch(), *(self._stat(p) for p in paths))

    def _rename_key(self) -> tuple:
        index = Path(self.repo.git_dir) / "index"
        try:
            stamp = index.stat().st_mtime_ns
        except OSError:
            stamp = 0
        return (self._head(), stamp)

    def _diff_target(self) -> list[str]:
        return []


class CommitTree(CodeVersion):
    """The tree of one commit (a benchmark checks memories at later commits of a bare mirror)."""

    def __init__(self, repo, commit: str) -> None:
        super().__init__(repo)
        self.commit = repo.commit(commit)
        self.sha = self.commit.hexsha

    def _entry(self, path: str):
        try:
            return self.commit.tree[path]
        except KeyError:
            return None

    def blob(self, path: str) -> str | None:
        entry = self._entry(path)
        return entry.hexsha if entry is not None else None

    def text(self, path: str) -> str | None:
        entry = self._entry(path)
        return entry.data_stream.read().decode("utf-8", "replace") if entry is not None else None

    def _head(self) -> str:
        return self.sha

    def state(self, paths: list[str]) -> tuple:
        return (self.sha,)

    def _rename_key(self) -> tuple:
        return (self.sha,)

    def _diff_target(self) -> list[str]:
        return [self.sha]
