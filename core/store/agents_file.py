"""The active decisions and conventions written into an agent's instruction file (`AGENTS.md`, `CLAUDE.md`), so that
agents without MCP see them too.

cortex owns only the lines between its two markers: the rest of the file is the user's and stays byte for byte.
Writing again replaces the block (and writes nothing when it is unchanged), so the export is idempotent.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import CortexError
from ..records import Memory

START = "<!-- cortex:decisions:start -->"
END = "<!-- cortex:decisions:end -->"
CONVENTION_TAG = "convention"
TEXT_CHARS = 400


def _flat(text: str, limit: int) -> str:
    # One line each, and never a marker: a memory quoting "<!--" cannot end the block early.
    flat = " ".join(text.split()).replace("<!--", "<!\u2060--")
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def render_block(decisions: Sequence[Memory], conventions: Sequence[Memory]) -> str:
    """The block between the markers, markers included; oldest first by creation, so it only grows at the end."""

    def entries(memories: Sequence[Memory]) -> list[str]:
        out = []
        for m in sorted(memories, key=lambda m: (m.created_at, m.id)):
            where = f" ({', '.join(m.files)})" if m.files else ""
            body = _flat(m.text, TEXT_CHARS)
            title = _flat(m.title, 120)
            out.append(f"- **{title}**{where} [{m.id}]" + (f": {body}" if body != title else ""))
        return out

    lines = [START, "## Decisions and conventions (kept by cortex; edit them with `cortex`, not here)", ""]
    if decisions:
        lines += ["### Decisions", "", *entries(decisions), ""]
    if conventions:
        lines += ["### Conventions", "", *entries(conventions), ""]
    if not decisions and not conventions:
        lines += ["No active decisions or conventions yet.", ""]
    return "\n".join([*lines, END]) + "\n"


def write_block(path: Path, block: str) -> bool:
    """Put the block into the file (replacing cortex's earlier one, else appended); True when the file changed."""
    try:
        old = path.read_text(encoding="utf-8") if path.exists() else ""
    except UnicodeDecodeError as exc:
        raise CortexError(f"{path.name} is not UTF-8 text; not touched") from exc
    start, end = old.find(START), old.find(END)
    if start != -1 and end > start:
        new = old[:start] + block + old[end + len(END):].removeprefix("\n")
    elif start != -1 or end != -1:
        raise CortexError(f"{path.name} has only one of cortex's markers; fix it by hand (nothing written)")
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + ("\n" if old else "") + block
    if new == old:
        return False
    path.write_text(new, encoding="utf-8")
    return True
