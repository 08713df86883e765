"""Past Claude Code sessions as searchable history: each turn of a transcript (JSON lines, one file per session
under `~/.claude/projects/<project>/`), the user's message and the assistant's answer to it, verbatim, as one
memory of kind `agent`: a question found by search comes with its answer.

Only what was said is kept: the user's and the assistant's text, not tool calls or their results (the repository and
its history hold those); a tool's result does not end a turn, the user's next message does. Each turn is keyed by its
session and the id of the user's message (the key the message alone had before turns), so importing again stores
nothing twice, and a turn whose answer has grown since (a session still going on) becomes a new version of it. As
with any import, a turn holding a secret is refused (listed, never shown), never stored redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ..errors import CortexError
from ..nesting import load_json
from ..records import PAST_SESSION_TAG, MemoryDraft
from ..transcripts import message_text
from .importer import BadRecord, ImportPlan, check_draft, parse_time
from .memory_rows import clipped_title, validate_draft

TAGS = (PAST_SESSION_TAG, "session", "turn")
TITLE_CHARS = 80
"""A turn's title: the session, then the opening line of what the user said, cut to about a line of a listing."""


def claude_projects_dir(root: Path) -> Path:
    """Where Claude Code keeps the transcripts of a project: its path with every other character than a letter or a
    digit made a dash, under `~/.claude/projects`."""
    return Path.home() / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(root))


def plan_claude_sessions(directory: Path, max_bytes: int, since: datetime | None = None) -> ImportPlan:
    """Every turn of every transcript in `directory` (of those begun at `since` or later; a transcript last written
    before it is not read), checked before anything is written."""
    if not directory.is_dir():
        raise CortexError(f"{directory} is not a directory of Claude Code transcripts")
    plan = ImportPlan()
    for file in sorted(directory.glob("*.jsonl")):
        if since is not None and datetime.fromtimestamp(file.stat().st_mtime, UTC) < since:
            continue
        plan.files += 1
        for turn in _turns(file, plan):
            if since is not None and turn.created is not None and turn.created < since:
                continue
            draft = turn.draft(file.stem)
            try:
                validate_draft(draft, max_bytes)
                draft = check_draft(draft)
            except CortexError as exc:
                plan.bad.append(BadRecord(turn.where(file.name), str(exc)))
                continue
            plan.entries.append((turn.where(file.name), draft))
    return plan


@dataclass
class _Turn:
    """A user's message and what the assistant said after it, up to the user's next message."""

    first: int
    """The transcript line that opens it (1-based), and the last line that added to it."""
    last: int
    key: str
    """The user's message's id (its line number when it has none); the assistant's, for an answer without a question."""
    created: datetime | None
    user: str = ""
    answers: list[str] = field(default_factory=list)

    def where(self, file: str) -> str:
        return f"{file} line {self.first}" if self.first == self.last else f"{file} lines {self.first}-{self.last}"

    def draft(self, session: str) -> MemoryDraft:
        said = [f"User: {self.user}"] if self.user else []
        if self.answers:
            said.append("Assistant: " + "\n\n".join(self.answers))
        opening = (self.user or self.answers[0]).splitlines()[0]
        opening = clipped_title(opening, TITLE_CHARS)
        return MemoryDraft(text="\n\n".join(said), kind="agent", title=f"Claude Code · session {session[:8]}: {opening}",
                           tags=TAGS, source_key=f"claude-code:{session}:{self.key}", created_at=self.created)


def _turns(file: Path, plan: ImportPlan) -> list[_Turn]:
    """The turns of one transcript; lines that are not JSON go to the plan's bad records."""
    turns: list[_Turn] = []
    for n, line in enumerate(file.read_bytes().splitlines(), 1):
        try:
            entry = load_json(line)
        except ValueError:
            plan.bad.append(BadRecord(f"{file.name} line {n}", "not a JSON line"))
            continue
        except CortexError as exc:
            plan.bad.append(BadRecord(f"{file.name} line {n}", str(exc)))
            continue
        if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
            continue
        text = message_text(entry.get("message"))
        if not text:
            continue  # a tool call or a tool's result: not something said
        if entry["type"] == "user" or not turns:
            turns.append(_Turn(n, n, str(entry.get("uuid") or n), _time(entry)))
        turn = turns[-1]
        turn.last = n
        if entry["type"] == "user":
            turn.user = text
        else:
            turn.answers.append(text)
    return turns


def _time(entry: dict) -> datetime | None:
    stamp = entry.get("timestamp")
    try:
        return parse_time(stamp, "timestamp") if isinstance(stamp, str) else None
    except CortexError:
        return None
