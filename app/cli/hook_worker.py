"""The worker the capture hooks start (`python -m cortex_tui.app.cli.hook_worker`, detached, output to
`.cortex/hooks.log`): after the workers before it, it drains the spool `hook_run` fills, oldest event first, and
sends each event's commands to the resident server through the thin client."""

from __future__ import annotations

import base64
import os
import sys
from pathlib import Path

from . import client
from .hook_events import claude_code_commands, git_commit_commands
from .hook_run import SPOOL, SPOOL_LOCK, locked, note, place_of


def work() -> int:
    """The worker: after the workers before it, drain the spool, oldest event first."""
    place = place_of(Path.cwd())
    with locked(place / "hooks.worker.lock"):
        while batch := _take(place):
            for line in batch.splitlines():
                kind, _, data = line.partition(b" ")
                _run(place, kind.decode(errors="replace"), base64.b64decode(data))
    return 0


def _take(place: Path) -> bytes:
    """The events queued so far, removed from the spool (an event queued meanwhile starts the next spool)."""
    spool, taken = place / SPOOL, place / "hooks.spool.taken"
    with locked(place / SPOOL_LOCK):
        if not spool.exists():
            return b""
        spool.replace(taken)
    batch = taken.read_bytes()
    taken.unlink()
    return batch


def _run(place: Path, kind: str, event: bytes) -> None:
    """One event's commands, through the thin client (the resident server runs them)."""
    try:
        commands = claude_code_commands(event) if kind == "claude-code" else git_commit_commands()
        for command in commands:
            os.chdir(command.cwd)
            code = client.main(list(command.argv))
            sys.stdout.flush()
            sys.stderr.flush()
            note(place, f"{kind}: cortex {' '.join(command.argv[:2])} exited {code}")
    except Exception as exc:
        note(place, f"{kind}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    sys.exit(work())
