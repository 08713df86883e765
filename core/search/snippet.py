"""Snippets: the few lines of a hit that match the query best, with their line numbers."""

from __future__ import annotations

import re

from ..answers import Snippet
from ..text import word_stems

SNIPPET_LINES = 4
MAX_LINES_SCANNED = 5_000
"""Lines past this are never chosen: a bound on what a megabyte memory costs."""
MAX_LINE_CHARS = 500
"""Longer lines are cut in the snippet (marked `…`); the hit's text stays whole."""


def best_window(text: str, stems: frozenset[str], first_line: int = 1, size: int = SNIPPET_LINES,
                focus: str | None = None) -> Snippet:
    """The window of `size` lines holding the most distinct query words (the earliest among equals); the first
    non-blank lines when no line matches, as for a hit found by meaning alone. `focus`: a name the query asked
    for that this text defines (`Owner.name` qualified): the window opens on the first line naming it, its
    definition's, after the first line naming its owner."""
    lines = text.splitlines()[:MAX_LINES_SCANNED] or [""]
    at = _defining_line(lines, focus) if focus else None
    if at is not None:
        return _window(lines, at, size, first_line)
    found = [word_stems(line[:MAX_LINE_CHARS]) & stems if stems else frozenset() for line in lines]
    lead = next((i for i, line in enumerate(lines) if line.strip()), 0)
    def score(start: int) -> int:
        return len(frozenset().union(*found[start:start + size]))

    best, best_score = lead, 0
    for start in range(len(lines)):
        here = score(start)
        if here > best_score:
            best, best_score = start, here
    # Among equal windows, the one that opens on a matching line rather than on blank or unrelated lines before it.
    while best_score and not found[best] and score(best + 1) == best_score:
        best += 1
    return _window(lines, best, size, first_line)


def _defining_line(lines: list[str], symbol: str) -> int | None:
    """The first line naming the symbol's last part after the lines naming its owners. An owner the text does not
    name is passed over: a large class is cut at its methods, so `MapAdapter.match`'s chunk opens at `def match(`
    with the class's line in an earlier chunk (the snippet, and the dashboard's preview with it, fell back to the
    docstring's lines that repeat "match", below the signature)."""
    at = 0
    parts = symbol.split(".")
    for n, part in enumerate(parts):
        named = re.compile(rf"(?<![\w$]){re.escape(part)}(?![\w$])")
        found = next((i for i in range(at, len(lines)) if named.search(lines[i][:MAX_LINE_CHARS])), None)
        if found is None:
            if n == len(parts) - 1:
                return None
            continue
        at = found
    return at


def _window(lines: list[str], start: int, size: int, first_line: int) -> Snippet:
    window = lines[start:start + size]
    shown = "\n".join(line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…" for line in window)
    return Snippet(shown, first_line + start, first_line + start + len(window) - 1)
