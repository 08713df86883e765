"""Writing and removing the capture hooks: Claude Code's `.claude/settings.json` and git's `post-commit`.

Both leave what the user had alone. In the settings, only the hook entries whose command is ours are added or
removed; every other key and entry stays as it was. A `post-commit` hook that is not ours is moved aside and called
first by ours (with its arguments and its exit status kept); uninstalling puts it back.
"""

from __future__ import annotations

import json
import shlex
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import CortexError
from . import hook_run

CLAUDE_EVENTS = {"PostToolUse": "*", "SessionEnd": None, "PreCompact": None, "SessionStart": None}
"""The Claude Code events captured, with the matcher each gets (None: an event that takes no matcher, or every
source of it). SessionStart names the session for the agent's shell commands (see `hook_run.name_session`)."""
RUN = "hook_run.py"
"""What every command we install contains: how our entries are told from the user's."""
GIT_MARKER = "# cortex capture hook"
CHAINED = "post-commit.before-cortex"
"""Where a user's own post-commit hook waits while ours runs it first."""


@dataclass(frozen=True)
class HookChange:
    """What install or uninstall did, for the one line said after it."""

    target: str
    changed: bool
    said: str


def hook_command(kind: str) -> str:
    """This installation's command for a hook: its own Python (a hook must not depend on the agent's PATH) running
    the hand-off script without `site` (-S), which halves the start-up; the script needs only the standard library,
    and the worker it starts is a full `python -m`."""
    return shlex.join([sys.executable, "-S", str(Path(hook_run.__file__)), kind])


# --- Claude Code ---------------------------------------------------------------------------------------------------


def install_claude(root: Path, uninstall: bool) -> HookChange:
    path = root / ".claude" / "settings.json"
    settings = _read_settings(path)
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise CortexError(f"{path}: `hooks` is not an object; left as it is")
    before = json.dumps(settings, sort_keys=True)
    for event, matcher in CLAUDE_EVENTS.items():
        groups = [_without_ours(g) for g in hooks.get(event, [])]
        groups = [g for g in groups if g is not None]
        if not uninstall:
            group: dict = {"matcher": matcher} if matcher is not None else {}
            groups.append({**group, "hooks": [{"type": "command", "command": hook_command("claude-code")}]})
        if groups:
            hooks[event] = groups
        else:
            hooks.pop(event, None)
    if hooks:
        settings["hooks"] = hooks
    else:
        settings.pop("hooks", None)
    changed = json.dumps(settings, sort_keys=True) != before
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    events = ", ".join(CLAUDE_EVENTS)
    said = (f"removed the cortex hooks ({events}) from {path}" if uninstall
            else f"{path}: {events} now hand their events to cortex (`cortex hooks run claude-code`)")
    return HookChange(str(path), changed, said)


def _read_settings(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CortexError(f"{path} is not valid JSON ({exc}); left as it is") from None
    if not isinstance(settings, dict):
        raise CortexError(f"{path} does not hold a JSON object; left as it is")
    return settings


def _without_ours(group: object) -> object:
    """A matcher group without our commands: None when nothing of the user's is left in it."""
    if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
        return group
    kept = [h for h in group["hooks"] if not (isinstance(h, dict) and RUN in str(h.get("command", "")))]
    if not kept and group["hooks"]:
        return None
    return {**group, "hooks": kept}


# --- git -----------------------------------------------------------------------------------------------------------


def install_git(where: Path, uninstall: bool) -> HookChange:
    hooks = _git_hooks_dir(where)
    hook, chained = hooks / "post-commit", hooks / CHAINED
    ours = hook.exists() and GIT_MARKER in hook.read_text(encoding="utf-8", errors="replace")
    if uninstall:
        if not ours:
            return HookChange(str(hook), False, f"{hook}: no cortex hook here; left as it is")
        hook.unlink()
        if chained.exists():
            chained.rename(hook)
            return HookChange(str(hook), True, f"removed the cortex hook; {hook} is your own hook again")
        return HookChange(str(hook), True, f"removed the cortex hook {hook}")
    if hook.exists() and not ours:
        if chained.exists():
            raise CortexError(f"{chained} already exists; move it away first (nothing changed)")
        hook.rename(chained)
    hooks.mkdir(parents=True, exist_ok=True)
    hook.write_text(_git_script(), encoding="utf-8")
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    first = f" (after your own hook, kept as {CHAINED})" if chained.exists() else ""
    return HookChange(str(hook), True, f"{hook}: each commit now goes to cortex (`cortex hooks run git-post-commit`){first}")


def _git_hooks_dir(where: Path) -> Path:
    """The hooks directory git uses here (core.hooksPath and linked work trees included)."""
    try:
        found = subprocess.run(["git", "rev-parse", "--git-path", "hooks"], cwd=where, capture_output=True, text=True,
                               check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        raise CortexError(f"{where} is not inside a git repository") from None
    return (where / found).resolve()


def _git_script() -> str:
    return "\n".join((
        "#!/bin/sh",
        f"{GIT_MARKER}: `cortex hooks install git --uninstall` removes it (and puts back a hook it chained).",
        "status=0",
        f'chained="$(dirname "$0")/{CHAINED}"',
        'if [ -x "$chained" ]; then "$chained" "$@"; status=$?; fi',
        "# Hands the commit to a detached worker and returns at once; it never fails the commit.",
        f"{hook_command('git-post-commit')} </dev/null >/dev/null 2>&1 || true",
        "exit $status",
        "",
    ))


