"""Claude Code transcripts (JSON lines, one object per event): what a message says, for the capture hooks (an agent's
last message) and for importing past sessions."""

from __future__ import annotations


def message_text(message: object) -> str:
    """The text of a transcript message (a string, or the `text` blocks of a list of content blocks)."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        return "\n".join(str(block.get("text", "")).strip() for block in content
                         if isinstance(block, dict) and block.get("type") == "text").strip()
    return ""
