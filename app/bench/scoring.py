"""Scoring a localisation context the way a person reading it would: can they see the lines the fix changed?

Only the scorer reads the fix (`git diff -U1 PARENT COMMIT -- FILE`); no method ever sees it.

Edit recall: for each gold file, take the old side of the fix's hunks with one line of context, keep lines with
8 or more non-space characters, and count the file when at least half of those lines appear verbatim
(whitespace-stripped) in the text the context gives for that file. A gold file whose old side has no such line
(a pure insertion between short lines) counts when any part of it is shown, as file recall does.
"""

from __future__ import annotations

import re
import statistics
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ...core.context.redundancy import near_duplicate_share
from ...core.tokens import count_tokens

MIN_CHARS = 8
"""Lines shorter than this (`}`, `return`, `else:`) prove nothing: they appear everywhere."""


@dataclass(frozen=True)
class Shown:
    """What one method put in front of the reader for one task."""

    ranked: list[str]
    """Every file the method ranked, best first (for R@k)."""
    texts: dict[str, str]
    """The text the context gives for each file it includes (whole, reduced or a chunk)."""
    tokens: int
    seconds: float
    pieces: list[str] | None = None
    """The separate pieces the context shows (regions, memories), for the near-duplicate share; None: its files."""
    file_tokens: dict[str, int] | None = None
    """Tokens the context spends on each file (its share of `tokens`); None: counted from `texts`."""


def edit_lines(git_dir: Path, parent: str, commit: str, path: str) -> list[str]:
    """The old side of the fix's hunks in `path` with one line of context, whitespace-stripped, 8+ visible chars."""
    diff = subprocess.run(
        ["git", "--git-dir", str(git_dir), "diff", "-U1", "--no-color", "--no-ext-diff", parent, commit, "--", path],
        capture_output=True, text=True, errors="replace", check=True,
    ).stdout
    lines, in_hunk = [], False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
            continue
        if not in_hunk or not line or line[0] not in " -" or line.startswith("--- "):
            continue
        body = line[1:].strip()
        if sum(not c.isspace() for c in body) >= MIN_CHARS:
            lines.append(body)
    return lines


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? ")


def changed_lines(git_dir: Path, parent: str, commit: str, path: str) -> frozenset[int]:
    """Line numbers (old side, 1-based) the fix changes in `path` (`git diff -U0`): the lines it removes or
    rewrites, and for a pure insertion the lines either side of where it goes in."""
    diff = subprocess.run(
        ["git", "--git-dir", str(git_dir), "diff", "-U0", "--no-color", "--no-ext-diff", parent, commit, "--", path],
        capture_output=True, text=True, errors="replace", check=True,
    ).stdout
    lines: set[int] = set()
    for match in map(_HUNK.match, diff.splitlines()):
        if match is None:
            continue
        start, count = int(match.group(1)), int(match.group(2) or 1)
        lines.update(range(start, start + count) if count else (start, start + 1))
    return frozenset(lines)


def edit_visible(lines: list[str], shown: str | None) -> bool:
    if shown is None:
        return False
    if not lines:
        return True
    visible = {line.strip() for line in shown.splitlines()}
    return sum(line in visible for line in lines) * 2 >= len(lines)


@dataclass
class MethodScore:
    """Sums and samples over tasks for one method."""

    edit: float = 0.0
    files: float = 0.0
    recall_at: dict[int, float] = field(default_factory=lambda: {1: 0.0, 5: 0.0, 10: 0.0})
    tokens: list[int] = field(default_factory=list)
    file_counts: list[int] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    near_duplicates: list[float] = field(default_factory=list)
    gold_token_shares: list[float] = field(default_factory=list)
    gold_file_shares: list[float] = field(default_factory=list)
    tasks: int = 0

    def add(self, gold: dict[str, list[str]], shown: Shown) -> tuple[float, float]:
        """`gold` maps each gold file to its edit lines; returns this task's (edit recall, file recall)."""
        n = len(gold)
        edit = sum(edit_visible(lines, shown.texts.get(path)) for path, lines in gold.items()) / n
        present = sum(path in shown.texts for path in gold) / n
        self.tasks += 1
        self.edit += edit
        self.files += present
        for k in self.recall_at:
            self.recall_at[k] += len(set(gold) & set(shown.ranked[:k])) / n
        self.tokens.append(shown.tokens)
        self.file_counts.append(len(shown.texts))
        self.times.append(shown.seconds)
        pieces = shown.pieces if shown.pieces is not None else list(shown.texts.values())
        self.near_duplicates.append(near_duplicate_share(pieces))
        spent = shown.file_tokens if shown.file_tokens is not None else {p: count_tokens(t) for p, t in shown.texts.items()}
        # An empty context holds nothing needed: its shares are 0, as a reader paid for nothing of use.
        self.gold_token_shares.append(sum(spent.get(p, 0) for p in gold) / shown.tokens if shown.tokens else 0.0)
        self.gold_file_shares.append(len(set(gold) & set(shown.texts)) / len(shown.texts) if shown.texts else 0.0)
        return edit, present

    def row(self) -> dict:
        n = max(self.tasks, 1)
        return {
            "edit_recall": round(self.edit / n, 3),
            "file_recall": round(self.files / n, 3),
            **{f"R@{k}": round(v / n, 3) for k, v in self.recall_at.items()},
            "tokens_median": int(statistics.median(self.tokens)) if self.tokens else 0,
            "files_median": statistics.median(self.file_counts) if self.file_counts else 0,
            "near_duplicates": round(statistics.mean(self.near_duplicates), 3) if self.near_duplicates else 0.0,
            "gold_token_share": _mean(self.gold_token_shares),
            "gold_file_share": _mean(self.gold_file_shares),
            "s_per_task": round(statistics.mean(self.times), 2) if self.times else 0.0,
            "tasks": self.tasks,
        }


def _mean(values: list[float]) -> float:
    return round(statistics.mean(values), 3) if values else 0.0


def oracle_texts(root: Path, regions: dict[str, frozenset[int]], budget: int, context: int = 1) -> Shown:
    """The ceiling: only the fix's changed lines of each gold file (with `context` lines either side, as edit recall
    reads them), gold files smallest first while they fit. Reads the fix, so it is a yardstick, not a method."""
    pieces: dict[str, str] = {}
    for path, changed in regions.items():
        try:
            lines = (root / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        keep = sorted({n for c in changed for n in range(c - context, c + context + 1) if 1 <= n <= len(lines)})
        pieces[path] = "".join(lines[n - 1] + "\n" for n in keep)
    costs = {p: count_tokens(t) for p, t in pieces.items()}
    texts, used = {}, 0
    for path in sorted(pieces, key=lambda p: costs[p]):
        if used + costs[path] <= budget:
            texts[path] = pieces[path]
            used += costs[path]
    return Shown(list(texts), texts, used, 0.0, file_tokens={p: costs[p] for p in texts})
