"""What an installed hook runs: `cortex hooks run claude-code|git-post-commit`, fast and never failing (the thin
client calls `hand_off` before anything else; hooks installed by earlier versions run this file as a script,
`python -S .../hook_run.py KIND`, which does the same).

The hook process appends its event (standard input) to the repository's spool, starts a detached worker and exits 0:
an agent's tool call waits for a Python start-up, an append and a fork, never for the engine. This module's top
imports only the standard library, and not even `subprocess`: it runs as a plain script, without `site`. Workers
(`hook_worker`) take turns under a lock and each drains the whole spool in the order the events came, so a session's
end is committed after the steps before it even when the worker of an earlier event is still starting the resident
server. Whatever goes wrong is written to `.cortex/hooks.log`, never to the agent.
"""

from __future__ import annotations

import base64
import fcntl
import os
import sys
import time
from pathlib import Path

KINDS = ("claude-code", "git-post-commit")
WORKER = "cortex_tui.app.cli.hook_worker"
"""The worker runs as `python -m` (with `site`, so the package and the engine are found)."""
SPOOL = "hooks.spool"
SPOOL_LOCK = "hooks.spool.lock"
"""Held for a moment by whoever appends to the spool or takes it."""


def hand_off(kind: str, event: bytes, where: Path | None = None) -> int:
    """Queue one event and start a worker detached from this process; 0 whatever happens."""
    place = place_of(where or Path.cwd())
    try:
        if kind == "claude-code" and name_session(event, os.environ.get("CLAUDE_ENV_FILE", "")):
            return 0
        record = kind.encode() + b" " + base64.b64encode(event) + b"\n"
        with locked(place / SPOOL_LOCK):
            # Readable by the owner only: the event waits here, as the agent sent it, until the worker takes it.
            spool = os.open(place / SPOOL, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(spool, record)
            finally:
                os.close(spool)
        _detach([sys.executable, "-m", WORKER], place)
    except Exception as exc:  # a hook never fails its caller
        note(place, f"{kind}: could not queue the event: {type(exc).__name__}: {exc}")
    return 0


def name_session(event: bytes, env_file: str) -> bool:
    """A Claude Code session's start: `CORTEX_SESSION` set to that session for the agent's shell commands, through
    the file Claude Code gives SessionStart hooks (`CLAUDE_ENV_FILE`, whose `export` lines it applies to every Bash
    call of the session), so an agent's `cortex remember --scope session` is its session's. True when the event was
    a session start (nothing else to do for it)."""
    import json
    import shlex

    try:
        data = json.loads(event)
    except ValueError:
        return False
    if not isinstance(data, dict) or data.get("hook_event_name") != "SessionStart":
        return False
    session = data.get("session_id")
    if env_file and isinstance(session, str) and session.strip() and session.isprintable():
        with open(env_file, "a", encoding="utf-8") as out:
            out.write(f"export CORTEX_SESSION={shlex.quote('claude-' + session[:150])}\n")
    return True


def _detach(argv: list[str], place: Path) -> None:
    """Fork a process in a session of its own (the agent or git may end its process group once the hook returns),
    with its output going to the log."""
    if os.fork() == 0:
        try:
            os.setsid()
            log = os.open(place / "hooks.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.execv(argv[0], argv)
        finally:
            os._exit(0)  # only reached when exec failed: never run the parent's code twice


def place_of(where: Path) -> Path:
    """`.cortex/` of the repository holding `where` (where the database lives by default)."""
    root = next((d for d in (where, *where.parents) if (d / ".git").exists()), where)
    place = root / ".cortex"
    place.mkdir(exist_ok=True)
    return place


class locked:
    """An exclusive lock on a file, held for a `with` block (blocking: those waiting take their turn)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        os.close(self.fd)  # closing releases the lock


def note(place: Path, line: str) -> None:
    try:
        with open(place / "hooks.log", "a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")
    except OSError:
        pass  # nowhere left to say it; the hook still exits 0


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in KINDS:
        sys.exit(hand_off(sys.argv[1], sys.stdin.buffer.read() if sys.stdin is not None else b""))
    print(f"usage: hook_run.py {{{','.join(KINDS)}}} < event.json", file=sys.stderr)
    sys.exit(0)
