"""What a hook event becomes: the `cortex` commands a Claude Code hook event or a git commit asks for.

Claude Code gives each hook a JSON object on standard input (`hook_event_name`, `session_id`, `transcript_path`,
`cwd`, and for tool use `tool_name`, `tool_input`, `tool_response`). A tool use becomes an agent-log step; the end
of a session, or a compaction, becomes an agent commit whose text is the agent's own last message in the transcript,
verbatim, or says that none was given: nothing is made up. Secrets are redacted here, before anything leaves this
process, and the agent log's own gates refuse whatever is left.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ...core.secrets.secrets import redacted
from ...core.transcripts import message_text

STEP_CHARS = 800
"""Each part of a step is cut to this: a step says what was done, the files and the output stay where they are."""
SUMMARY_CHARS = 4000
NO_SUMMARY = "no summary given"
ENDINGS = {"SessionEnd": "session ended", "PreCompact": "context compacted"}
"""The events that close a stretch of work with an agent commit, and how the commit names the moment."""
INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description")
"""The tool-input fields that say what a call did, in the order they are shown (the rest is shown as JSON)."""


@dataclass(frozen=True)
class HookCommand:
    """One `cortex` command line to run in a directory."""

    argv: tuple[str, ...]
    cwd: str


def claude_code_commands(raw: bytes) -> list[HookCommand]:
    """The commands for one Claude Code hook event (none for events not captured)."""
    try:
        event = json.loads(raw.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"the hook event is not JSON ({exc.msg})") from None
    if not isinstance(event, dict):
        raise ValueError("the hook event is not a JSON object")
    cwd = str(event.get("cwd") or "")
    cwd = cwd if cwd and os.path.isdir(cwd) else os.getcwd()
    name = event.get("hook_event_name")
    if name in ("PostToolUse", "PostToolUseFailure"):
        tool = str(event.get("tool_name") or "tool")
        action = _cut(f"{tool}: {_describe(event.get('tool_input'), INPUT_KEYS)}")
        observation = _cut(_describe(event.get("tool_response") or event.get("error"), ("stdout", "stderr")))
        return [HookCommand(("agent", "log", "--action", action, "--obs", observation or "(no output)"), cwd)]
    if name in ENDINGS:
        summary = last_assistant_text(event.get("transcript_path"))
        said = f"{ENDINGS[name]}: {summary}" if summary else f"{ENDINGS[name]}; {NO_SUMMARY}"
        return [HookCommand(("agent", "commit", redacted(said)), cwd)]
    return []


def git_commit_commands() -> list[HookCommand]:
    """After a commit (git runs the hook at the top of the work tree): bring the index up to date with the files the
    commit touched, text and structure only, so search and the map see them at once (embedding catches up later)."""
    return [HookCommand(("index", "--no-embed"), os.getcwd())]


def last_assistant_text(transcript: object) -> str:
    """The text of the last assistant message in a Claude Code transcript (JSON lines), or "" when there is none."""
    if not isinstance(transcript, str) or not transcript:
        return ""
    try:
        lines = Path(transcript).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(entry, dict) or entry.get("type") != "assistant":
            continue
        text = message_text(entry.get("message"))
        if text:
            return text[:SUMMARY_CHARS]
    return ""


def _describe(value: object, keys: tuple[str, ...]) -> str:
    """A tool's input or output as one short text: its telling fields if it has them, else its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        told = [str(value[k]) for k in keys if value.get(k) not in (None, "")]
        if told:
            return " ".join(told)
    return json.dumps(value, ensure_ascii=False, default=str)


def _cut(text: str) -> str:
    """Redacted, then cut (redacting first, so that a cut never leaves half a secret unrecognised)."""
    text = redacted(text.strip())
    return text if len(text) <= STEP_CHARS else text[:STEP_CHARS - 1] + "…"
