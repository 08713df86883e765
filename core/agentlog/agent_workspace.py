"""The agent context's live files: a directory (setting `agent_dir`, default `.cortex/agent`) in contexa's layout
that every agent operation brings in step with the store.

The store is the truth. Files are written after the store's commits, while the operation still holds the agent lock
(so two processes never write them out of order), each to a temporary file renamed over the old one: a killed
process leaves every file whole, old or new. `.cortex.json`, written last, records the current branch and the store's
table versions the files show; an operation that finds them behind what the store held before it began (a process
killed between its commit and its files, a doctor repair) rewrites every file that differs, not only its own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..store.commits import COMMITS

STATE = ".cortex.json"
FORMAT = 1


@dataclass(frozen=True)
class AgentFiles:
    directory: Path

    def state(self) -> dict | None:
        """What `.cortex.json` says, None when it is missing or unreadable (then nothing is taken as in step)."""
        try:
            value = json.loads((self.directory / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def holds_a_context(self) -> bool:
        return (self.directory / "main.md").exists()

    def write(self, files: dict[str, str], current: str, synced: dict) -> None:
        """Write the files that differ from `files` (paths relative to the directory), then the state."""
        for relative, text in files.items():
            _put(self.directory / relative, text)
        _put(self.directory / STATE, json.dumps({"format": FORMAT, "current": current, "synced": synced}, indent=1)
             + "\n")


def _put(path: Path, text: str) -> None:
    data = text.encode("utf-8")
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    # Counted with the store's commits: CORTEX_CRASH_AFTER_COMMITS=N kills a process between any two durable steps.
    COMMITS.committed()
