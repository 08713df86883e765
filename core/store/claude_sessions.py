"""Past Claude Code sessions as searchable history: each message of a transcript (JSON lines, one file per session
under `~/.claude/projects/<project>/`), verbatim, as a memory of kind `agent`.

Only what was said is kept: the user's and the assistant's text, not tool calls or their results (the repository and
its history hold those). Each message is keyed by its session and its id, so importing again stores nothing twice.
As with any import, a message holding a secret is refused (listed, never shown), never stored redacted.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import CortexError
from ..nesting import load_json
from ..records import MemoryDraft
from ..transcripts import message_text
from .importer import BadRecord, ImportPlan, check_draft, parse_time
from .memory_rows import validate_draft

TAGS = ("claude-code", "session")


def claude_projects_dir(root: Path) -> Path:
    """Where Claude Code keeps the transcripts of a project: its path with every other character than a letter or a
    digit made a dash, under `~/.claude/projects`."""
    return Path.home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root))


def plan_claude_sessions(directory: Path, max_bytes: int) -> ImportPlan:
    """Every message of every transcript in `directory`, checked before anything is written."""
    if not directory.is_dir():
        raise CortexError(f"{directory} is not a directory of Claude Code transcripts")
    plan = ImportPlan()
    for file in sorted(directory.glob("*.jsonl")):
        plan.files += 1
        for n, line in enumerate(file.read_bytes().splitlines(), 1):
            where = f"{file.name} line {n}"
            try:
                entry = load_json(line)
            except ValueError:
                plan.bad.append(BadRecord(where, "not a JSON line"))
                continue
            except CortexError as exc:
                plan.bad.append(BadRecord(where, str(exc)))
                continue
            draft = _draft(file.stem, n, entry)
            if draft is None:
                continue
            try:
                validate_draft(draft, max_bytes)
                draft = check_draft(draft)
            except CortexError as exc:
                plan.bad.append(BadRecord(where, str(exc)))
                continue
            plan.entries.append((where, draft))
    return plan


def _draft(session: str, n: int, entry: object) -> MemoryDraft | None:
    if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
        return None
    text = message_text(entry.get("message"))
    if not text:
        return None  # a tool call or a tool's result: not something said
    stamp = entry.get("timestamp")
    try:
        created = parse_time(stamp, "timestamp") if isinstance(stamp, str) else None
    except CortexError:
        created = None
    return MemoryDraft(text=text, kind="agent", title=f"Claude Code {entry['type']} · session {session[:8]}",
                       tags=TAGS, source_key=f"claude-code:{session}:{entry.get('uuid') or n}", created_at=created)
