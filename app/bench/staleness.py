"""`cortex bench staleness`: are memories flagged exactly when the code they describe changes?

On a repository's real history: a memory is made at a commit (its text the commit's subject), anchored to the
definitions that commit touched (the ones its added lines fall in), and checked at later commits (10, 50 and 200
commits on, along the first-parent history). Whether the anchored code really changed is decided independently of
the anchors, by git's own diff between the two commits (`git diff -M -U0`): a definition changed when a hunk
removes or rewrites one of its lines, or inserts lines inside it (or right after its last line and the blank lines
after it, indented deeper than its first: Python appending to a body, which git may place after a blank line). A file git says was deleted counts as changed. A baseline in the same run
flags a memory whenever an anchored file's blob changed at all (what a file-level check would do).
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...core.anchors.anchors import check_anchors, make_anchors
from ...core.anchors.definitions import ParsedFiles
from ...core.anchors.versions import CommitTree
from ...core.index.languages import has_grammar, is_test_path, language_of
from ...core.records import Anchors

DISTANCES = (10, 50, 200)
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class RepoResult:
    repo: str
    memories: int = 0
    checks: int = 0
    changed: int = 0
    changed_flagged: int = 0
    unchanged: int = 0
    unchanged_flagged: int = 0
    baseline_unchanged_flagged: int = 0
    check_ms: list[float] = field(default_factory=list)

    @property
    def recall(self) -> float:
        return self.changed_flagged / self.changed if self.changed else 0.0

    @property
    def false_flags(self) -> float:
        return self.unchanged_flagged / self.unchanged if self.unchanged else 0.0

    @property
    def baseline_false_flags(self) -> float:
        return self.baseline_unchanged_flagged / self.unchanged if self.unchanged else 0.0

    def to_json(self) -> dict:
        ms = sorted(self.check_ms)
        return {"repo": self.repo, "memories": self.memories, "checks": self.checks, "changed": self.changed,
                "changed_flagged": self.changed_flagged, "flagged_of_changed": round(self.recall, 4),
                "unchanged": self.unchanged, "unchanged_flagged": self.unchanged_flagged,
                "flagged_of_unchanged": round(self.false_flags, 4),
                "file_baseline_flagged_of_unchanged": round(self.baseline_false_flags, 4),
                "check_ms_p50": round(ms[len(ms) // 2], 2) if ms else 0.0}


def _git(git_dir: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def _code_path(path: str) -> bool:
    return has_grammar(language_of(path)) and not is_test_path(path)


def touched_symbols(git_dir: Path, tree: CommitTree, parent: str, parsed: ParsedFiles, per_commit: int) -> dict[str, list[str]]:
    """The definitions a commit's added lines fall in, by file (the commit's code files only, tests left out)."""
    out: dict[str, list[str]] = {}
    diff = _git(git_dir, "diff", "-U0", "--no-color", "--no-renames", parent, tree.sha)
    path = ""
    added: dict[str, list[int]] = {}
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[6:] if line.startswith("+++ b/") else ""
        elif path and (m := _HUNK.match(line)):
            start, count = int(m.group(3)), int(m.group(4) or 1)
            added.setdefault(path, []).extend(range(start, start + count))
    for path, lines in added.items():
        if not _code_path(path) or not lines:
            continue
        blob, text = tree.blob(path), tree.text(path)
        if blob is None or text is None:
            continue
        hit = [d.name for d in parsed.get(blob, path, text).values() if any(d.start <= n <= d.end for n in lines)]
        # The innermost definitions: a method rather than its whole class when both contain the lines.
        inner = [n for n in hit if not any(o != n and o.startswith(n + ".") for o in hit)]
        if inner:
            out[path] = inner[:per_commit]
    return out


def really_changed(git_dir: Path, anchors: Anchors, later: str, text_at: CommitTree) -> bool:
    """Whether git's diff from the anchor's commit to `later` touches an anchored definition."""
    renames = {}
    for line in _git(git_dir, "diff", "-M", "--name-status", "--diff-filter=DR", anchors.commit, later).splitlines():
        parts = line.split("\t")
        if parts[0].startswith("R") and len(parts) == 3:
            renames[parts[1]] = parts[2]
        elif parts[0] == "D" and len(parts) == 2:
            renames[parts[1]] = ""
    for f in anchors.files:
        target = renames.get(f.path, f.path)
        if not target:
            return True
        if target != f.path:
            diff = _git(git_dir, "diff", "-U0", "--no-color", f"{anchors.commit}:{f.path}", f"{later}:{target}")
        else:
            diff = _git(git_dir, "diff", "-U0", "--no-color", anchors.commit, later, "--", f.path)
        old_lines = (text_at.text(f.path) or "").splitlines()
        hunks = _hunks(diff)
        for s in f.symbols:
            if any(_touches(h, s.start, s.end, old_lines) for h in hunks):
                return True
    return False


def _hunks(diff: str) -> list[tuple[int, int, str]]:
    """(old start, old count, first non-blank added line) of each hunk."""
    out: list[tuple[int, int, str]] = []
    lines = diff.splitlines()
    for i, line in enumerate(lines):
        m = _HUNK.match(line)
        if m:
            first = next((x[1:] for x in lines[i + 1 :] if x.startswith("@@") or x.startswith("+") and x[1:].strip()), "")
            out.append((int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1), first))
    return out


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _touches(hunk: tuple[int, int, str], start: int, end: int, old_lines: list[str]) -> bool:
    at, count, first_added = hunk
    if count:
        return at <= end and at + count - 1 >= start
    # An insertion after line `at`: inside the definition, or appended to its body (after its last line and any
    # blank lines that follow it, git may place it either side of them) indented deeper than its head.
    if start <= at < end:
        return True
    head = old_lines[start - 1] if 0 < start <= len(old_lines) else ""
    blank_after = all(not line.strip() for line in old_lines[end:at])
    return end <= at and blank_after and first_added.strip() != "" and _indent(first_added) > _indent(head)


def run_repo(git_dir: Path, name: str, window: int, memories: int, per_commit: int,
             progress=None) -> RepoResult:
    import git

    repo = git.Repo(git_dir)
    # A bare mirror without a `config` file reads as a work tree's `.git`: GitPython would run git in its parent.
    repo.git.update_environment(GIT_DIR=str(git_dir))
    history = _git(git_dir, "rev-list", "--first-parent", "--reverse", "HEAD").split()[-window:]
    position = {sha: i for i, sha in enumerate(history)}
    parsed = ParsedFiles(4096)
    result = RepoResult(name)
    step = max(1, (len(history) - max(DISTANCES)) // max(memories, 1))
    for sha in history[1 : max(len(history) - min(DISTANCES), 1) : step]:
        if result.memories >= memories:
            break
        tree = CommitTree(repo, sha)
        parent = history[position[sha] - 1]
        touched = touched_symbols(git_dir, tree, parent, parsed, per_commit)
        if not touched:
            continue
        anchors = make_anchors(tree, sha, touched, [s for names in touched.values() for s in names], parsed)
        if anchors is None or not any(f.symbols for f in anchors.files):
            continue
        anchors = Anchors(anchors.commit, tuple(f for f in anchors.files if f.symbols))
        result.memories += 1
        for distance in DISTANCES:
            at = position[sha] + distance
            if at >= len(history):
                continue
            later = CommitTree(repo, history[at])
            began = time.perf_counter()
            flagged = check_anchors(anchors, later, parsed) is not None
            result.check_ms.append((time.perf_counter() - began) * 1000)
            changed = really_changed(git_dir, anchors, later.sha, tree)
            baseline = any(later.blob(f.path) != f.blob for f in anchors.files)
            result.checks += 1
            if changed:
                result.changed += 1
                result.changed_flagged += flagged
            else:
                result.unchanged += 1
                result.unchanged_flagged += flagged
                result.baseline_unchanged_flagged += baseline
        if progress is not None and result.memories % 20 == 0:
            progress(f"{name}: {result.memories} memories, {result.checks} checks")
    return result


def run(mirrors: Path, repos: list[str], window: int = 800, memories: int = 150, per_commit: int = 3,
        progress=None) -> list[RepoResult]:
    return [run_repo(mirrors / r / "repo", r, window, memories, per_commit, progress) for r in repos]
