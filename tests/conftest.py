"""Shared fixtures: real git repositories in tmp dirs, an isolated global store and cache, the CLI in-process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from cortex_tui.app.cli import main as cli_main

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


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    os.environ["CORTEX_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["CORTEX_CONFIG"] = str(tmp_path_factory.mktemp("config") / "config.toml")
    os.environ.update(GIT_ENV)
    # Tests that run `cortex` as a process test that process, not a resident server left behind by another test;
    # tests/test_serve.py turns the server back on for itself.
    os.environ["CORTEX_NO_DAEMON"] = "1"


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
    """Runs `cortex` in-process against one directory and returns (exit code, stdout, stderr)."""

    def __init__(self, cwd: Path, capsys) -> None:
        self.cwd = cwd
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        code = cli_main([args[0], "-C", str(self.cwd), *args[1:]])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args: str):
        code, out, err = self(*args, "--json")
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(repo, capsys) -> Cli:
    return Cli(repo, capsys)
