"""`cortex bench secrets REPO...`: how much ordinary text the secret detector flags, and how fast it reads.

Every text file at HEAD of each repository (a work tree or a bare mirror; read with `git cat-file`, nothing is
written) is scanned whole, as the index scans it. A line counts as flagged when a found secret touches it. The
real repositories' text is the false-positive measure: lockfile integrity hashes, UUIDs, git SHAs, base64 images,
test fixtures and documentation examples all occur there. Speed is megabytes of text per second of scanning.
"""

from __future__ import annotations

import bisect
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...core.secrets.secrets import find_secrets

MAX_FILE_BYTES = 2_000_000


@dataclass
class RepoFlags:
    """One repository's counts, with a few flagged lines to look at."""

    repo: str
    files: int = 0
    lines: int = 0
    flagged: int = 0
    examples: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SecretsBench:
    repos: tuple[RepoFlags, ...]
    megabytes: float
    seconds: float

    @property
    def lines(self) -> int:
        return sum(r.lines for r in self.repos)

    @property
    def flagged(self) -> int:
        return sum(r.flagged for r in self.repos)


def run(repos: list[Path], examples: int = 3) -> SecretsBench:
    find_secrets("warm up")  # the rule database loads once per process
    results, size, spent = [], 0, 0.0
    for repo in repos:
        counts = RepoFlags(repo.name if repo.name != "repo" else repo.parent.name)
        for path, text in _text_files(repo):
            started = time.perf_counter()
            hits = find_secrets(text)
            spent += time.perf_counter() - started
            size += len(text.encode("utf-8", "surrogatepass"))
            counts.files += 1
            counts.lines += text.count("\n") + 1
            if hits:
                starts = [i + 1 for i, c in enumerate(text) if c == "\n"]
                touched = {line for h in hits
                           for line in range(bisect.bisect_right(starts, h.start), bisect.bisect_right(starts, h.end - 1) + 1)}
                counts.flagged += len(touched)
                if len(counts.examples) < examples:
                    counts.examples.append(f"{path}: {hits[0].kind}")
        results.append(counts)
    return SecretsBench(tuple(results), size / 1e6, spent)


def _text_files(repo: Path):
    """(path, text) of every UTF-8 text blob at HEAD, binary and large files left out."""
    git = ["git", "--git-dir", str(repo)] if (repo / "HEAD").is_file() and not (repo / ".git").exists() else \
        ["git", "-C", str(repo)]
    names = subprocess.run([*git, "ls-tree", "-r", "-z", "--name-only", "HEAD"], capture_output=True, check=True)
    reader = subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    requests, answers = reader.stdin, reader.stdout
    assert requests is not None and answers is not None  # both asked for as pipes
    try:
        for raw in filter(None, names.stdout.split(b"\0")):
            requests.write(b"HEAD:" + raw + b"\n")
            requests.flush()
            head = answers.readline().split()
            if len(head) < 3 or head[1] != b"blob":
                continue
            data = answers.read(int(head[2]))
            answers.read(1)
            if b"\0" in data[:8192] or len(data) > MAX_FILE_BYTES:
                continue
            try:
                yield raw.decode("utf-8", "replace"), data.decode("utf-8")
            except UnicodeDecodeError:
                continue
    finally:
        requests.close()
        reader.wait()


def rows(b: SecretsBench) -> list[tuple[str, str]]:
    out = [(r.repo, f"{r.flagged} / {r.lines} lines ({100 * r.flagged / max(r.lines, 1):.3f}%), {r.files} files")
           for r in b.repos]
    out.append(("all", f"{b.flagged} / {b.lines} lines flagged ({100 * b.flagged / max(b.lines, 1):.3f}%)"))
    out.append(("speed", f"{b.megabytes:.1f} MB in {b.seconds:.1f} s ({b.megabytes / max(b.seconds, 1e-9):.1f} MB/s)"))
    out += [("  flagged", e) for r in b.repos for e in r.examples]
    return out
