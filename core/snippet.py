"""Snippets: the few lines of a hit that match the query best, with their line numbers."""

from __future__ import annotations

from dataclasses import dataclass

from .text import word_stems

SNIPPET_LINES = 4
MAX_LINES_SCANNED = 5_000
"""Lines past this are never chosen: a bound on what a megabyte memory costs."""
MAX_LINE_CHARS = 500
"""Longer lines are cut in the snippet (marked `…`); the hit's text stays whole."""


@dataclass(frozen=True)
class Snippet:
    """A window of a hit's text; lines are numbered as in the file (code) or from 1 (memories)."""

    text: str
    start_line: int
    end_line: int

    def to_json(self) -> dict:
        return {"text": self.text, "start_line": self.start_line, "end_line": self.end_line}


def best_window(text: str, stems: frozenset[str], first_line: int = 1, size: int = SNIPPET_LINES) -> Snippet:
    """The window of `size` lines holding the most distinct query words (the earliest among equals); the first
    non-blank lines when no line matches, as for a hit found by meaning alone."""
    lines = text.splitlines()[:MAX_LINES_SCANNED] or [""]
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
    window = lines[best:best + size]
    shown = "\n".join(line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…" for line in window)
    return Snippet(shown, first_line + best, first_line + best + len(window) - 1)
