"""Writing and removing the capture hooks: Claude Code's `.claude/settings.json` and git's `post-commit`.

Both leave what the user had alone. In the settings, only the hook entries whose command is ours are added or
removed; every other key and entry stays as it was. A `post-commit` hook that is not ours is moved aside and called
first by ours (with its arguments and its exit status kept); uninstalling puts it back.

Both call the installed `cortex` command by the full path found at install time (a hook must not depend on the PATH
git or the agent runs it with), and check it is still there each time: a cortex moved or uninstalled since says so in
one line on standard error, with how to install the hook again, instead of doing nothing in silence.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import CortexError

CLAUDE_EVENTS = {"PostToolUse": "*", "SessionEnd": None, "PreCompact": None, "SessionStart": None}
"""The Claude Code events captured, with the matcher each gets (None: an event that takes no matcher, or every
source of it). SessionStart names the session for the agent's shell commands (see `hook_run.name_session`)."""
OURS = (" hooks run claude-code", "hook_run.py")
"""What a command we installed contains: how our entries are told from the user's (the second, a script path, is
what earlier versions installed, so that installing again replaces their entries)."""
GIT_MARKER = "# cortex capture hook"
CHAINED = "post-commit.before-cortex"
"""Where a user's own post-commit hook waits while ours runs it first."""


@dataclass(frozen=True)
class HookChange:
    """What install or uninstall did, for the one line said after it."""

    target: str
    changed: bool
    said: str


def installed_cortex() -> Path:
    """The `cortex` command of this installation: the scripts folder of its Python (a virtual environment's, pipx's,
    uv's), else the one on the PATH."""
    beside = Path(sysconfig.get_path("scripts")) / "cortex"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("cortex")
    if found is None:
        raise CortexError("no `cortex` command for the hook to call: install cortex (`pipx install .`, "
                          "`uv tool install .` or `pip install .`) and run this again (nothing changed)")
    return Path(found).absolute()


def hook_command(kind: str, cortex: Path, install: str, streams: str = "") -> str:
    """A shell command that hands a hook's event to `cortex hooks run KIND`, or says in one line on standard error
    why it could not (`cortex` gone, or failing to start) and ends with status 1: not 0, with which Claude Code hides
    a hook's standard error, and not 2, with which it blocks the agent's tool call (git's post-commit script goes on
    to its own exit status, which git ignores)."""
    command = shlex.quote(str(cortex))
    again = f"run `cortex hooks install {install}` with the cortex you use now"
    gone = f"cortex: {kind} hook: {cortex} is gone (cortex moved or was uninstalled), nothing was captured; {again}"
    failed = f"cortex: {kind} hook: {cortex} failed to start, nothing was captured; reinstall cortex, or {again}"
    return (f"if [ -x {command} ]; then {command} hooks run {kind}{streams} || "
            f"{{ echo {shlex.quote(failed)} >&2; false; }}; else echo {shlex.quote(gone)} >&2; false; fi")


# --- Claude Code ---------------------------------------------------------------------------------------------------


def install_claude(root: Path, uninstall: bool) -> HookChange:
    path = root / ".claude" / "settings.json"
    command = "" if uninstall else hook_command("claude-code", installed_cortex(), "claude-code")
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
            groups.append({**group, "hooks": [{"type": "command", "command": command}]})
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
    kept = [h for h in group["hooks"] if not (isinstance(h, dict) and _ours(str(h.get("command", ""))))]
    if not kept and group["hooks"]:
        return None
    return {**group, "hooks": kept}


def _ours(command: str) -> bool:
    return any(mark in command for mark in OURS)


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
    script = _git_script(installed_cortex())
    if hook.exists() and not ours:
        if chained.exists():
            raise CortexError(f"{chained} already exists; move it away first (nothing changed)")
        hook.rename(chained)
    hooks.mkdir(parents=True, exist_ok=True)
    hook.write_text(script, encoding="utf-8")
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


def _git_script(cortex: Path) -> str:
    return "\n".join((
        "#!/bin/sh",
        f"{GIT_MARKER}: `cortex hooks install git --uninstall` removes it (and puts back a hook it chained).",
        "status=0",
        f'chained="$(dirname "$0")/{CHAINED}"',
        'if [ -x "$chained" ]; then "$chained" "$@"; status=$?; fi',
        "# Hands the commit to a detached worker and returns at once; the commit is made whatever happens here.",
        hook_command("git-post-commit", cortex, "git", " </dev/null >/dev/null 2>&1"),
        "exit $status",
        "",
    ))


