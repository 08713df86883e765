"""Shared fixtures: real git repositories in tmp dirs, an isolated global store and cache, and `cortex` run the way
users run it: through the repository's resident server (started on first use, stopped after each test), or in this
process with an explicit context where the two paths can differ (`both_modes`)."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from cortex_tui.app.cli import client
from cortex_tui.app.link import connection, protocol
from cortex_tui.app.cli.main import main as cli_main
from cortex_tui.app.cli.context import CommandContext

# A suite started in the background by a non-interactive shell inherits SIGINT ignored, and so would every `cortex`
# a test starts: the tests that press Ctrl+C on `cortex watch` and `cortex serve` waited for an exit that never came.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author",
    "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_SYSTEM": "/dev/null",
}


MODES = ("served", "in-process")
both_modes = pytest.mark.parametrize("cli", MODES, indirect=True)
"""For CLI tests whose command could behave differently in the server and in-process (streams, terminal,
standard input, working directory, environment): run them both ways."""


both = pytest.mark.parametrize("served", [True, False], ids=MODES)
"""For dashboard tests whose answers could differ between a dashboard attached to the resident server (the default)
and one with an engine of its own (`--no-daemon`): run them both ways."""


def bridge_for(path: Path, served: bool = True):
    """What `cortex-tui` opens: a bridge to the repository's resident server (started if need be), or with
    `served=False` one over an engine of this process."""
    from cortex_tui.app.bridge.local import EngineBridge
    from cortex_tui.app.link.remote import Remote
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.core.engine import Engine

    if not served:
        return EngineBridge(Engine(path))
    remote = Remote.attach(path, None, start=True)
    assert remote is not None, "no resident server could be started"
    return RemoteBridge(remote)


def watching(bridge) -> bool:
    """The bridge's watcher (its own, or the resident server's) has its watch in place."""
    from cortex_tui.app.bridge.local import EngineBridge

    if isinstance(bridge, EngineBridge):
        return bridge.watcher is not None and bridge.watcher.ready.is_set()
    found = connection.ask(protocol.server_paths(*connection.server_key(str(bridge.root), None)), "status")
    return bool(found and found.get("watching"))


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    os.environ["CORTEX_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["CORTEX_CONFIG"] = str(tmp_path_factory.mktemp("config") / "config.toml")
    os.environ.update(GIT_ENV)
    # Servers of this session live in a runtime directory of its own (a short path: socket addresses are limited to
    # 108 bytes), never a developer's; each test stops the ones it started (see _servers_stopped).
    runtime = Path(tempfile.mkdtemp(prefix="cxt-"))
    os.environ["CORTEX_RUNTIME_DIR"] = str(runtime)
    os.environ["CORTEX_DAEMON_IDLE_MINUTES"] = "10"  # a safety net should the session die before its teardown
    for name in ("CORTEX_NO_DAEMON", "CORTEX_DAEMON"):
        os.environ.pop(name, None)
    yield
    stop_servers(runtime)
    shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture(autouse=True)
def _servers_stopped():
    """A test's servers end with it: each holds an engine and the model (hundreds of MiB), and a server left over
    would answer the next test's commands with a warm cache that test did not make."""
    yield
    stop_servers(Path(os.environ["CORTEX_RUNTIME_DIR"]))


def stop_servers(runtime: Path) -> None:
    """Stop every server with a status file in `runtime` (killed if it does not stop within a minute)."""
    for info in runtime.glob("*.json"):
        try:
            pid = json.loads(info.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            continue
        paths = protocol.ServerPaths(*(info.with_suffix(s) for s in (".sock", ".lock", ".json", ".log")))
        if process_alive(pid):
            os.kill(pid, signal.SIGCONT)  # a test may have stopped it
        if connection.ask(paths, "stop") is None or not connection.wait_stopped(paths, 60):
            if process_alive(pid):
                os.kill(pid, signal.SIGKILL)


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


@pytest.fixture(autouse=True)
def _isolated_global(tmp_path, monkeypatch):
    monkeypatch.setenv("CORTEX_GLOBAL_DB", str(tmp_path / "global-db"))
    monkeypatch.delenv("CORTEX_DB", raising=False)


def wait_for(predicate, seconds=15.0) -> bool:
    """Poll `predicate` until it holds (True) or `seconds` pass (False): for work another thread or process does."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def commit_file(repo: Path, path: str, content: str, message: str) -> str:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def empty_repo(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    return repo


@pytest.fixture
def repo(empty_repo) -> Path:
    commit_file(empty_repo, "src/app.py", "def main():\n    return 1\n", "Add the app entry point")
    commit_file(empty_repo, "README.md", "# demo\n", "Write a readme")
    return empty_repo


class Cli:
    """Runs `cortex` against one directory and returns (exit code, stdout, stderr): `served` as the installed
    command does (the thin client, which hands the command to the repository's resident server and starts one if
    need be), else in this process through `cli.main` with a context of its own."""

    def __init__(self, cwd: Path, served: bool = True) -> None:
        self.cwd = cwd
        self.served = served

    def __call__(self, *args: str) -> tuple[int, str, str]:
        argv = [args[0], "-C", str(self.cwd), *args[1:]]
        out, err = io.StringIO(), io.StringIO()
        if self.served:
            with redirect_stdout(out), redirect_stderr(err):
                code = client.main(argv)
        else:
            code = cli_main(argv, CommandContext(sys.stdin, out, err, Path.cwd(), os.environ))
        return code, out.getvalue(), err.getvalue()

    def json(self, *args: str):
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(repo, request) -> Cli:
    """Served by default; `both_modes` runs a test once each way."""
    return Cli(repo, served=getattr(request, "param", "served") == "served")
