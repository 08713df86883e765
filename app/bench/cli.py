"""`cortex bench cli`: what a `cortex` command costs as a whole process, cold, warm and in-process, beside git grep.

Every run is a new process started the way a shell or an agent starts it (the `cortex` entry point installed beside
this Python, else `python -m cortex_tui.app.cli.client`, which is what it runs), timed from spawn to exit, with its
own peak resident memory and its own CPU time (user + system, from wait4: the server's work is not in it).
- cold: no server running; the command starts one and is answered by it (the server is stopped before each run);
- warm: the server is running;
- in-process: `--no-daemon`, every command pays the imports and the model load, as before the server existed;
- git grep: the same words over the same tree, the physical reference for a search, each run right after a warm
  search so both meet the same load;
- Python alone (`-c pass`, and importing `socket` and `json`): the floor of any Python client on this machine, with
  its site-packages' start-up files, measured in the same minutes as the rest.
`remember` stores new versions under one key, which the benchmark purges at the end, so the repository's memories
are left as they were.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import CortexError
from ..link import connection
from ..link.protocol import server_paths

BENCH_KEY = "cortex-bench-cli"
TIME = "/usr/bin/time"


@dataclass(frozen=True)
class Row:
    """One command in one mode: wall seconds and peak client memory over the runs."""

    command: str
    mode: str
    runs: int
    p50_s: float
    p95_s: float
    peak_mib: float
    """The largest peak resident memory of the measured process over the runs."""
    cpu_p50_s: float
    """The median of the process's own CPU time (user + system)."""


def _timed(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> tuple[float, float, float]:
    """Wall seconds from spawn to exit, peak resident MiB and CPU seconds. The peak comes from GNU time, which forks
    the command itself: Linux carries a process's peak across exec, so a child forked straight from this (much
    larger) process would report this process's size, not the command's. The CPU is wait4's for GNU time, which
    holds its waited-for command's (time's own is about a millisecond)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        started = time.perf_counter()
        proc = subprocess.Popen([TIME, "-f", "%M", "-o", rss.name, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        error = proc.stderr.read() if proc.stderr is not None else b""
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in ok:
            lines = error.decode(errors="replace").strip().splitlines()
            raise CortexError(f"{' '.join(argv)} failed: {lines[-1] if lines else proc.returncode}")
        return seconds, int(rss.read().split()[-1]) / 1024, usage.ru_utime + usage.ru_stime  # GNU time: KiB


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _row(command: str, mode: str, samples: list[tuple[float, float, float]]) -> Row:
    walls = [s for s, _, _ in samples]
    return Row(command, mode, len(samples), statistics.median(walls), _p95(walls), max(m for _, m, _ in samples),
               statistics.median(c for _, _, c in samples))


def _stop_server(repo: Path, env: dict[str, str]) -> None:
    subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", "serve", "--stop", "-C", str(repo)], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    key = connection.server_key(str(repo), None)
    if key is not None:
        connection.wait_stopped(server_paths(*key), 60)


def run(repo: Path, words: str, runs: int, cold_runs: int) -> list[Row]:
    if not repo.is_dir():
        raise CortexError(f"{repo} is not a directory")
    if not shutil.which(TIME):
        raise CortexError(f"{TIME} (GNU time) is needed to measure peak memory: install the `time` package")
    env = {k: v for k, v in os.environ.items() if k not in ("CORTEX_NO_DAEMON", "CORTEX_DAEMON")}
    script = Path(sys.executable).parent / "cortex"
    entry = [str(script)] if script.is_file() else [sys.executable, "-m", "cortex_tui.app.cli.client"]
    counter = iter(range(1_000_000))
    commands = {
        f"ss {words!r}": lambda: ["ss", words],
        "what": lambda: ["what"],
        "remember": lambda: ["remember", f"bench probe {next(counter)} {time.time_ns()}", "--key", BENCH_KEY],
    }
    grep = ["git", "grep", "-n", "-i", "-F", *[a for w in words.split() for a in ("-e", w)]]
    grepped: list[tuple[float, float, float]] = []
    rows: list[Row] = []
    try:
        for name, args in commands.items():
            if cold_runs:
                cold = []
                for _ in range(cold_runs):
                    _stop_server(repo, env)
                    cold.append(_timed([*entry, *args()], repo, env))
                rows.append(_row(name, "cold (starts the server)", cold))
            _timed([*entry, *args()], repo, env)  # the server is warm from here on
            warm = []
            for _ in range(runs):
                warm.append(_timed([*entry, *args()], repo, env))
                if name.startswith("ss "):
                    grepped.append(_timed(grep, repo, env, ok=(0, 1)))
            rows.append(_row(name, "warm (server running)", warm))
            if cold_runs:
                rows.append(_row(name, "in-process (--no-daemon)",
                                 [_timed([*entry, *args(), "--no-daemon"], repo, env) for _ in range(cold_runs)]))
        rows.append(_row(f"git grep {words!r}", "reference (beside the warm ss)", grepped))
        for code in ("pass", "import socket, json"):
            floor = [sys.executable, "-c", code]
            rows.append(_row(f"python -c {code!r}", "floor", [_timed(floor, repo, env) for _ in range(runs)]))
    finally:
        subprocess.run([*entry, "forget", "--key", BENCH_KEY, "--purge", "-C", str(repo)], env=env, cwd=repo,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return rows
