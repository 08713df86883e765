"""The capture hooks as Claude Code and git run them: the installed command in a shell, fed recorded events on its
standard input, its detached worker sending the steps and commits to the resident server; and install/uninstall
leaving a user's own hook configuration as it was."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from .conftest import commit_file, git, wait_for

TOKEN = "ghp_" + "R7x2Kq9LmZ4vB8nT1wY6cH3jP0sD5fG2aE7u"
USER_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git log:*)"]},
    "hooks": {
        "PostToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "ruff format"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "echo bye >> ~/.claude/sessions.log"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
    },
}


def _installed(repo: Path, event: str) -> list[str]:
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    return [h["command"] for g in settings["hooks"].get(event, []) for h in g["hooks"]
            if " hooks run claude-code" in h["command"]]


def _fire(repo: Path, command: str, event: dict | bytes) -> subprocess.CompletedProcess:
    """Run the hook as Claude Code does: its command in a shell, in the project, the event JSON on stdin."""
    data = event if isinstance(event, bytes) else json.dumps(event).encode()
    return subprocess.run(command, shell=True, cwd=repo, input=data, capture_output=True, timeout=60)


def _agent_context(cli) -> dict:
    code, out, _ = cli("agent", "context", "-k", "5", "--json")
    return json.loads(out) if code == 0 else {}


def test_install_and_uninstall_keep_the_users_claude_settings(cli, repo):
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(USER_SETTINGS, indent=4))
    for _ in range(2):  # installing again changes nothing
        code, out, err = cli("hooks", "install", "claude-code")
        assert code == 0, err
    written = json.loads(settings.read_text())
    assert {k: v for k, v in written.items() if k != "hooks"} == {k: v for k, v in USER_SETTINGS.items() if k != "hooks"}
    assert written["hooks"]["Stop"] == USER_SETTINGS["hooks"]["Stop"]
    for event in ("PostToolUse", "SessionEnd", "PreCompact", "SessionStart"):
        assert len(_installed(repo, event)) == 1, event
    assert written["hooks"]["PostToolUse"][0] == USER_SETTINGS["hooks"]["PostToolUse"][0]
    assert written["hooks"]["SessionEnd"][0] == USER_SETTINGS["hooks"]["SessionEnd"][0]

    code, out, err = cli("hooks", "install", "claude-code", "--uninstall")
    assert code == 0, err
    assert json.loads(settings.read_text()) == USER_SETTINGS

    settings.write_text("{not json")
    code, out, err = cli("hooks", "install", "claude-code")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "not valid JSON" in err
    assert settings.read_text() == "{not json"


def test_the_claude_code_hook_logs_tool_use_without_the_secret_and_commits_what_the_agent_said(cli, repo, tmp_path):
    code, _, err = cli("hooks", "install", "claude-code")
    assert code == 0, err
    hook = _installed(repo, "PostToolUse")[0]
    assert _installed(repo, "SessionEnd") == _installed(repo, "PreCompact") == [hook]
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("\n".join(json.dumps(e) for e in (
        {"type": "user", "message": {"role": "user", "content": "why does main return 1?"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "main returns 1 as the [bold]exit[/] status; I left it."}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "name": "Bash"}]}},
    )) + "\n")
    common = {"session_id": "abc123", "transcript_path": str(transcript), "cwd": str(repo)}
    events = [
        {**common, "hook_event_name": "PostToolUse", "tool_name": "Bash",
         "tool_input": {"command": f"curl -H 'Authorization: token {TOKEN}' https://api.github.com/user"},
         "tool_response": {"stdout": "200 OK", "stderr": ""}},
        {**common, "hook_event_name": "PostToolUse", "tool_name": "Read",
         "tool_input": {"file_path": str(repo / "src/app.py")}, "tool_response": {"type": "text"}},
        {**common, "hook_event_name": "SessionEnd", "reason": "exit"},
        {**common, "hook_event_name": "PostToolUse", "tool_name": "Grep", "tool_input": {"pattern": "def main"},
         "tool_response": "src/app.py:1"},
        {**common, "transcript_path": str(tmp_path / "gone.jsonl"), "hook_event_name": "PreCompact", "trigger": "auto"},
    ]
    for event in events:
        done = _fire(repo, hook, event)
        assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done
    assert _fire(repo, hook, b"not json \xff").returncode == 0  # hostile input: logged, never the agent's failure

    assert wait_for(lambda: len(_agent_context(cli).get("commits", [])) == 2, 180), (repo / ".cortex/hooks.log").read_text()
    context = _agent_context(cli)
    first, second = context["commits"]
    assert first["contribution"] == "session ended: main returns 1 as the [bold]exit[/] status; I left it."
    assert first["steps"] == [1, 2]
    assert second["contribution"] == "context compacted; no summary given"
    assert second["steps"] == [3]
    steps = {s["n"]: s for s in context["commit_steps"]}
    assert "api.github.com" in steps[1]["action"] and "redacted" in steps[1]["action"]
    assert steps[1]["observation"] == "200 OK"
    assert steps[2]["action"] == f"Read: {repo / 'src/app.py'}"
    assert steps[3]["action"] == "Grep: def main" and steps[3]["observation"] == "src/app.py:1"
    stored = b"".join(p.read_bytes() for p in (repo / ".cortex").rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored
    assert "not JSON" in (repo / ".cortex" / "hooks.log").read_text()


def test_the_git_hook_indexes_each_commit_after_the_users_own_hook(cli, repo):
    hooks = Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "hooks"
    user_hook = hooks / "post-commit"
    user_script = "#!/bin/sh\necho \"$(git rev-parse HEAD)\" >> ran.txt\nexit 3\n"
    user_hook.write_text(user_script)
    user_hook.chmod(0o755)
    code, out, err = cli("hooks", "install", "git")
    assert code == 0, err

    commit_file(repo, "src/billing.py", "def charge_invoice(total):\n    return total\n", "Charge invoices")
    head = git(repo, "rev-parse", "HEAD").strip()
    assert (repo / "ran.txt").read_text().split() == [head]  # the user's hook still ran first

    def indexed() -> bool:
        code, out, _ = cli("search", "charge_invoice", "--json")
        return code == 0 and "src/billing.py" in out

    assert wait_for(indexed, 180), (repo / ".cortex/hooks.log").read_text()

    code, out, err = cli("hooks", "install", "git", "--uninstall")
    assert code == 0, err
    assert user_hook.read_text() == user_script and user_hook.stat().st_mode & 0o111
    assert sorted(p.name for p in hooks.iterdir() if p.name.startswith("post-commit")) == ["post-commit"]


def _commit(repo: Path, path: str, message: str) -> subprocess.CompletedProcess:
    """`git commit` as a person runs it, with what the hooks print."""
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(f"# {message}\n")
    git(repo, "add", path)
    return subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, capture_output=True, text=True, timeout=120)


def test_a_hook_whose_cortex_is_gone_says_so_and_never_stops_the_commit(cli, repo, tmp_path):
    """The hooks call the `cortex` command found when they were installed, by its full path. Once it is moved or
    uninstalled (here: a copy of it, then deleted), each commit and each agent event says so in one line on standard
    error, with how to install the hook again, instead of nothing; the commit is made all the same."""
    assert cli("hooks", "install", "git")[0] == 0
    assert cli("hooks", "install", "claude-code")[0] == 0
    installed = Path(sysconfig.get_path("scripts")) / "cortex"
    hook = Path(git(repo, "rev-parse", "--absolute-git-dir").strip()) / "hooks" / "post-commit"
    claude = _installed(repo, "PostToolUse")[0]
    assert str(installed) in hook.read_text() and str(installed) in claude
    elsewhere = tmp_path / "elsewhere" / "cortex"
    elsewhere.parent.mkdir()
    shutil.copy2(installed, elsewhere)
    hook.write_text(hook.read_text().replace(str(installed), str(elsewhere)))
    claude = claude.replace(str(installed), str(elsewhere))

    done = _commit(repo, "src/one.py", "First, with cortex there")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    event = {"session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Read", "cwd": str(repo),
             "tool_input": {"file_path": "src/app.py"}, "tool_response": "ok"}
    fired = _fire(repo, claude, event)
    assert (fired.returncode, fired.stderr) == (0, b"")

    elsewhere.unlink()
    done = _commit(repo, "src/two.py", "Second, with cortex gone")
    assert done.returncode == 0 and git(repo, "log", "-1", "--format=%s").strip() == "Second, with cortex gone"
    assert done.stderr == (f"cortex: git-post-commit hook: {elsewhere} is gone (cortex moved or was uninstalled), "
                           "nothing was captured; run `cortex hooks install git` with the cortex you use now\n")
    fired = _fire(repo, claude, event)
    assert fired.returncode == 1, "not 2: Claude Code would block the agent's tool call"
    assert fired.stderr.decode().splitlines() == [
        f"cortex: claude-code hook: {elsewhere} is gone (cortex moved or was uninstalled), nothing was captured; "
        "run `cortex hooks install claude-code` with the cortex you use now"]

    elsewhere.write_text("#!/bin/sh\nexit 2\n")  # there, but broken: its Python gone, say
    elsewhere.chmod(0o755)
    done = _commit(repo, "src/three.py", "Third, with cortex broken")
    assert done.returncode == 0 and len(done.stderr.splitlines()) == 1
    assert f"{elsewhere} failed to start, nothing was captured; reinstall cortex, or run `cortex hooks install git`" \
        in done.stderr
    fired = _fire(repo, claude, event)
    assert fired.returncode == 1 and b"failed to start" in fired.stderr and len(fired.stderr.splitlines()) == 1


def test_import_claude_sessions_keeps_each_turn_verbatim_once_and_refuses_secrets(cli, repo, tmp_path, monkeypatch):
    said = [
        {"type": "user", "uuid": "u1", "timestamp": "2026-01-05T10:00:00Z",
         "message": {"role": "user", "content": "Why does the invoice [bold]rounding[/] drift?"}},
        {"type": "assistant", "uuid": "a1", "timestamp": "2026-01-05T10:00:09Z", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Banker's rounding in quantize_total; switch to ROUND_HALF_UP."},
            {"type": "tool_use", "name": "Edit", "input": {"file_path": "src/app.py"}}]}},
        {"type": "user", "uuid": "u2", "message": {"role": "user", "content": [{"type": "tool_result", "content": "ok"}]}},
        {"type": "assistant", "uuid": "a2", "timestamp": "2026-01-05T10:00:30Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "Done: totals now round half up."}]}},
        {"type": "user", "uuid": "u3", "message": {"role": "user", "content": f"push with {TOKEN}"}},
        {"type": "summary", "summary": "Invoice rounding"},
    ]
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "0f1e2d3c-5b6a.jsonl").write_text("\n".join(json.dumps(e) for e in said) + "\n")

    code, out, err = cli("import", "--claude-sessions", str(sessions))
    assert code == 1 and err.count("\n") == 1 and "line 5" in err and "secret" in err and TOKEN not in err
    imported = cli.json("import", "--claude-sessions", str(sessions), "--skip-bad")
    assert imported["created"] == 1 and [b["where"] for b in imported["bad"]] == ["0f1e2d3c-5b6a.jsonl line 5"]
    # One turn: the question and every answer to it (a tool's result in between does not end it).
    [turn] = cli.json("list", "--kind", "agent")
    assert turn["text"] == ("User: Why does the invoice [bold]rounding[/] drift?\n\nAssistant: Banker's rounding in "
                            "quantize_total; switch to ROUND_HALF_UP.\n\nDone: totals now round half up.")
    assert turn["title"] == "Claude Code · session 0f1e2d3c: Why does the invoice [bold]rounding[/] drift?"

    # Without a directory: this project's transcripts where Claude Code keeps them; nothing is stored twice.
    home = tmp_path / "home"
    project = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in str(repo))
    project.mkdir(parents=True)
    (project / "0f1e2d3c-5b6a.jsonl").write_text((sessions / "0f1e2d3c-5b6a.jsonl").read_text())
    monkeypatch.setenv("HOME", str(home))
    again = cli.json("import", "--claude-sessions", "--skip-bad")
    assert again["created"] == 0 and again["duplicate"] == 1

    found = json.dumps(cli.json("search", "why does the invoice rounding drift"))
    assert "Banker's rounding in quantize_total; switch to ROUND_HALF_UP." in found, "the question comes with its answer"
    note = cli.json("remember", "Invoice totals round half up since release 2.3", "--kind", "decision")["memory"]["id"]
    side = cli.json("search", "invoice rounding", "--past-sessions", "beside")
    assert note in {h["id"] for h in side["hits"]} and turn["id"] not in {h["id"] for h in side["hits"]}
    assert [h["id"] for h in side["past_sessions"]] == [turn["id"]]
    code, out, _ = cli("search", "invoice rounding", "--past-sessions", "beside")
    assert code == 0 and out.index("Invoice totals round half up") < out.index("in past sessions") < out.index("Claude Code")
    stored = b"".join(p.read_bytes() for p in (repo / ".cortex").rglob("*") if p.is_file())
    assert TOKEN.encode() not in stored and b"push with" not in stored


def test_a_session_still_going_on_imports_its_newer_turns_since_a_date(cli, repo, tmp_path):
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    transcript = sessions / "7a7b7c7d-0000.jsonl"
    old = [{"type": "user", "uuid": "q0", "timestamp": "2025-06-01T08:00:00Z",
            "message": {"role": "user", "content": "Which port does the dev server use?"}},
           {"type": "assistant", "uuid": "r0", "timestamp": "2025-06-01T08:00:05Z",
            "message": {"role": "assistant", "content": "Port 8031, set in devserver.toml."}}]
    asked = {"type": "user", "uuid": "q1", "timestamp": "2026-11-28T09:00:00Z",
             "message": {"role": "user", "content": "Why is the cache warm-up slow?"}}
    transcript.write_text("\n".join(json.dumps(e) for e in [*old, asked]) + "\n")
    first = cli.json("import", "--claude-sessions", str(sessions), "--since", "2026-11-01")
    assert first["created"] == 1, "the turn of June 2025 is before --since"
    [turn] = cli.json("list", "--kind", "agent")
    assert turn["text"] == "User: Why is the cache warm-up slow?"
    answered = {"type": "assistant", "uuid": "r1", "timestamp": "2026-11-28T09:00:20Z",
                "message": {"role": "assistant", "content": "It reads every shard serially; read them in parallel."}}
    with transcript.open("a") as more:
        more.write(json.dumps(answered) + "\n")
    second = cli.json("import", "--claude-sessions", str(sessions), "--since", "2026-11-01")
    assert second["created"] == 0 and second["new_version"] == 1, "the grown turn is a new version of the same key"
    [turn] = cli.json("list", "--kind", "agent")
    assert turn["text"].endswith("Assistant: It reads every shard serially; read them in parallel.")
    assert cli.json("import", "--claude-sessions", str(sessions))["created"] == 1, "without --since, the old turn too"
    code, _, err = cli("import", str(transcript), "--since", "7d")
    assert code == 1 and err.strip() == "cortex: error: --since goes with --claude-sessions (a file's records are all imported)"


def test_a_claude_code_session_start_names_the_session_for_the_agents_shell_commands(cli, repo, tmp_path):
    code, _, err = cli("hooks", "install", "claude-code")
    assert code == 0, err
    hook = _installed(repo, "SessionStart")[0]
    env_file = tmp_path / "session-env.sh"  # what Claude Code hands a SessionStart hook, then sources per Bash call
    event = {"session_id": "5f1c-a7", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(repo)}
    done = subprocess.run(hook, shell=True, cwd=repo, input=json.dumps(event).encode(), capture_output=True,
                          timeout=60, env={**os.environ, "CLAUDE_ENV_FILE": str(env_file)})
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done
    assert env_file.read_text() == "export CORTEX_SESSION=claude-5f1c-a7\n"
    # The agent's Bash call, as Claude Code runs it: the file's exports, then the command.
    cortex = f"{shlex.quote(sys.executable)} -m cortex_tui.app.cli.client"
    agent = subprocess.run(["bash", "-c", f". {shlex.quote(str(env_file))} && {cortex} remember 'scratch: the "
                            "reloader test is flaky on a loaded machine' --scope session --json"],
                           cwd=repo, capture_output=True, timeout=180)
    assert agent.returncode == 0, agent.stderr
    assert json.loads(agent.stdout)["memory"]["session"] == "claude-5f1c-a7"
    assert cli.json("list", "--scope", "session") == []
    assert len(cli.json("list", "--scope", "session", "--session", "claude-5f1c-a7")) == 1
