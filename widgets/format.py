"""Small text helpers shared by the panes.

Everything a user, a repository or an agent wrote (commit subjects, titles, paths, branch names, task text) reaches
Textual through these helpers as `rich.text.Text`, never as markup: a subject like `Handle [/] in paths` is text to
show, not a closing tag. Control characters are shown as visible symbols so an escape sequence in a memory cannot
drive the terminal.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from ..core import ages
from ..core.text import visible

PREVIEW_CHARS = 20_000
"""How much of one text a pane renders; a megabyte memory would otherwise stall every repaint."""


def now() -> datetime:
    """The current time; CORTEX_FIXED_NOW pins it so snapshots and screenshots are reproducible."""
    fixed = os.environ.get("CORTEX_FIXED_NOW")
    return datetime.fromisoformat(fixed) if fixed else datetime.now(UTC)


def age(stamp: datetime | None) -> str:
    """How long ago, as every front end says it (`core.ages`)."""
    return ages.age(stamp, now())


def clip(text: str, width: int) -> str:
    """One line of at most `width` terminal cells (a wide character takes two); only a bounded prefix is looked
    at, so megabytes cost nothing."""
    head = text[: width * 4 + 64] if len(text) > width * 4 + 64 else text
    line = visible(" ".join(head.split()))
    if cell_len(line) <= width and head is text:
        return line
    return set_cell_size(line, max(width - 1, 0)).rstrip(" ") + "…"


def shorten_path(text: str, width: int) -> str:
    """A path (with its `:12-40` line ranges, if any) in at most `width` characters, shortened in the middle: the
    file name and its lines stay whole and the folders give way, which is what tells two long paths apart
    (`src/werk…/sansio/request.py:12-40`). A file name too long on its own keeps its end."""
    line = visible(" ".join(text.split())) if len(text) <= width * 4 + 64 else clip(text, width * 4)
    if len(line) <= width:
        return line
    head, slash, name = line.rpartition("/")
    if not slash or len(name) + 2 > width:
        return "…" + line[len(line) - width + 1:] if width > 1 else "…"
    return head[: width - len(name) - 2] + "…/" + name


def styled(*parts: str | tuple[str, str]) -> Text:
    """A line assembled from plain strings and (string, style) pairs; the strings are never read as markup."""
    out = Text(no_wrap=True, overflow="ellipsis", end="")
    for part in parts:
        text, style = (part, "") if isinstance(part, str) else part
        out.append(visible(text), style=style)
    return out


def bounded(text: str, limit: int = PREVIEW_CHARS) -> Text:
    """A long text as a prefix and its full size, so showing a megabyte memory costs what showing 20 kB does."""
    if len(text) <= limit:
        return Text(visible(text))
    size = len(text.encode("utf-8", "surrogatepass"))
    shown = Text(visible(text[:limit]))
    shown.append(f"\n… {size:,} bytes in all; the first {limit:,} characters are shown "
                 "(`cortex show ID` prints the whole text)", style="dim italic")
    return shown


def without_blank_edges(text: str, start_line: int) -> tuple[str, int]:
    """A chunk's lines without the blank ones it starts and ends with (the space between definitions a chunk keeps),
    and the file's line number of its first line then, so a preview starts at the code."""
    lines = text.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    last = next((i for i in range(len(lines), first, -1) if lines[i - 1].strip()), first)
    return "".join(lines[first:last]), start_line + first


def from_best_lines(code: str, first_line: int, best_line: int) -> tuple[str, int]:
    """A chunk's code from the line where it matches best (its snippet's first line) on, and the file's line number
    of its first line then: a chunk holding several definitions opens a preview at the one asked for, not at the
    first (`Context.Next` showed `HandlerNames` and left `Next` below the pane's edge)."""
    skip = best_line - first_line
    if skip <= 0:
        return code, first_line
    lines = code.splitlines(keepends=True)
    skip = min(skip, max(len(lines) - 1, 0))
    return "".join(lines[skip:]), first_line + skip
