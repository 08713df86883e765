"""An index pass runs in a child process that exits (see app/bridge/index_process.py): killed, it takes nothing
else with it. Real processes: the resident server that `cortex index` goes through, its child, kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from .conftest import git, live_processes, process_alive, wait_for

CHILD = "cortex_tui.app.bridge.index_process"


def children_passing(parent: int | None = None) -> list[int]:
    """Index-pass children alive now (of `parent` when given), from /proc."""
    found = []
    for pid, argv, entry in live_processes():
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if CHILD.encode() in argv and (parent is None or ppid == parent):
            found.append(pid)
    return found


def many_files(repo: Path, n: int) -> None:
    for i in range(n):
        path = repo / "pkg" / f"m{i // 50}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def f_{i}_{k}(x):\n    return x * {k} + {i}\n\n\n" for k in range(4)))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "Many modules")


_children_started: list[str] = []


def _record_child(event: str, args: tuple) -> None:
    if event == "subprocess.Popen":
        argv = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
        if CHILD in [str(a) for a in argv]:
            _children_started.append(CHILD)


sys.addaudithook(_record_child)


def cortex(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.client", *args, "-C", str(repo)],
                          capture_output=True, text=True, timeout=600)


def test_the_servers_index_child_killed_is_one_line_and_the_server_lives_on(repo):
    """The dashboard's index pass runs in a child of the resident server (`cortex index` runs its own): kill -9 of
    that child is a one-line failure for the dashboard, the server lives on, and the next pass completes the index."""
    import threading

    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote
    from cortex_tui.core.errors import CortexError

    many_files(repo, 1500)
    bridge = RemoteBridge(Remote.attach(repo, None, start=True))
    server = json.loads(cortex(repo, "serve", "--status", "--json").stdout)["pid"]
    outcome: list = []

    def index() -> None:
        try:
            outcome.append(bridge.index(lambda _p: None, lambda: False))
        except CortexError as exc:
            outcome.append(exc)

    first = threading.Thread(target=index)
    first.start()
    assert wait_for(lambda: children_passing(server), 120), "no index child of the server"
    child = children_passing(server)[0]
    time.sleep(0.5)  # into its writes
    os.kill(child, signal.SIGKILL)
    first.join(timeout=300)
    assert isinstance(outcome[0], CortexError), outcome
    assert "stopped unexpectedly" in str(outcome[0]) and "\n" not in str(outcome[0]), outcome
    assert process_alive(server), "the server went down with its child"
    assert cortex(repo, "what").returncode == 0, "the server answers"
    again = cortex(repo, "index", "--no-embed")
    assert again.returncode == 0, again.stderr
    status = json.loads(cortex(repo, "index", "--status", "--json").stdout)
    assert status["fresh"] and status["indexed_files"] >= 1500, status
    assert json.loads(cortex(repo, "serve", "--status", "--json").stdout)["pid"] == server


def test_a_child_never_outlives_a_killed_parent(repo):
    many_files(repo, 1500)
    run = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "index", "--no-embed", "-C", str(repo)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: children_passing(run.pid), 120), "no index child"
    child = children_passing(run.pid)[0]
    run.send_signal(signal.SIGKILL)
    run.wait(timeout=60)
    assert wait_for(lambda: not process_alive(child), 30), "the orphaned child lives on"


def test_a_small_pass_runs_in_the_calling_process_and_a_large_one_in_children(repo):
    """A child's start costs more than a pass over a few files: after the first pass, those run where they were
    asked for."""
    from cortex_tui.app.bridge.index_process import SMALL_PASS_CHUNKS, SMALL_PASS_FILES
    from cortex_tui.app.bridge.local import EngineBridge
    from cortex_tui.core.engine import Engine

    bridge = EngineBridge(Engine(repo))
    _children_started.clear()
    report, status = bridge.index(lambda _p: None, lambda: False)
    assert (status.indexed_files, status.embeddings_pending, report.embedded) == (2, 0, status.chunks)
    assert _children_started == [CHILD], "a first pass writes its tables in a child; its few chunks embed here"
    (repo / "src" / "more.py").write_text("def more():\n    return 2\n")
    _children_started.clear()
    report, status = bridge.index(lambda _p: None, lambda: False)
    assert (status.indexed_files, status.embeddings_pending, report.changed) == (3, 0, 1)
    assert _children_started == [], "a one-file pass started a child"
    many_files(repo, SMALL_PASS_FILES + 1)
    report, status = bridge.index(lambda _p: None, lambda: False)
    assert (status.indexed_files, status.embeddings_pending) == (SMALL_PASS_FILES + 4, 0)
    assert report.embedded > SMALL_PASS_CHUNKS
    assert _children_started == [CHILD, CHILD], "the large pass ran its two phases in children"

ONE_PASS = textwrap.dedent("""
    import ctypes, os, sys, tempfile
    from pathlib import Path

    def heaps():
        # glibc's malloc_info lists one <heap> per arena.
        libc = ctypes.CDLL("libc.so.6")
        libc.fopen.restype = ctypes.c_void_p
        fd, path = tempfile.mkstemp()
        os.close(fd)
        out = libc.fopen(path.encode(), b"w")
        libc.malloc_info(0, ctypes.c_void_p(out))
        libc.fclose(ctypes.c_void_p(out))
        text = Path(path).read_text()
        os.unlink(path)
        return text.count("<heap nr=")

    from cortex_tui.app.cli import client

    code = client.main(["--no-daemon", "index", "-C", sys.argv[1]])
    from cortex_tui.core.embedding.embed import Embedder
    from cortex_tui.core.index.index import CodeIndex
    from cortex_tui.core.store.database import Database

    CodeIndex(Database(sys.argv[2], create=True), Embedder(), Path(sys.argv[1]), True)
    import pyarrow as pa

    print(code, heaps(), pa.default_memory_pool().backend_name)
""")


def test_an_index_pass_allocates_from_one_arena_and_arrow_from_the_c_heap(repo, tmp_path):
    """`cortex` run in-process limits the C heap to one arena before any thread starts, so the threads an index
    pass starts (LanceDB's, the tokenizer's, the model's runs side by side) do not each grow an arena of their own,
    and an opened code index puts pyarrow's buffers on the C heap: with an arena per thread and pyarrow's own pool,
    python/mypy's first index grew 467 -> 813 MB while embedding (docs/benchmarks.md)."""
    for n in range(12):
        (repo / "src" / f"mod{n}.py").write_text(f"def handler_{n}(request):\n    return request.get('k{n}')\n")
    done = subprocess.run([sys.executable, "-c", ONE_PASS, str(repo), str(tmp_path / "db")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    code, arenas, pool = done.stdout.split()[-3:]
    assert code == "0"
    assert arenas == "1"
    assert pool == "system"
