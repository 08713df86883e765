"""The resident server and the thin client, with real processes: `cortex` run as the entry point runs it.

Each test gets its own runtime directory (under a short temporary path: socket addresses are limited to 108
bytes) and stops every server it caused at the end. Nothing here is timed; waits have deadlines only so that a
broken server fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from cortex_tui.app.cli import client
from cortex_tui.app.link import connection, protocol
from cortex_tui.app.link.messages import StatusRequest

from .conftest import live_processes, process_alive, stop_servers

HEAVY = ("lancedb", "pyarrow", "numpy", "rich", "textual", "pydantic", "fastembed", "git", "onnxruntime", "platformdirs")


@pytest.fixture
def runtime(monkeypatch):
    """A runtime directory of this test's own: what it counts (servers, sockets, logs) is its alone."""
    path = Path(tempfile.mkdtemp(prefix="cx-"))
    monkeypatch.setenv("CORTEX_RUNTIME_DIR", str(path))
    yield path
    for log in path.glob("*.log"):  # shown by pytest when the test failed
        print(f"--- {log.name}\n{log.read_text(errors='replace')}")
    stop_servers(path)
    shutil.rmtree(path, ignore_errors=True)


def cortex(repo: Path, *args: str, served: bool = True, stdin: bytes | None = None, env: dict | None = None):
    """`cortex ARGS` in a new process: through the client (the installed entry point) or straight in-process."""
    module = "cortex_tui.app.cli.client" if served else "cortex_tui.app.cli.main"
    return subprocess.run([sys.executable, "-m", module, *args], cwd=repo, input=stdin, capture_output=True,
                          env={**os.environ, **(env or {})}, timeout=600)


def status(repo: Path) -> dict:
    out = cortex(repo, "serve", "--status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def server_paths(repo: Path) -> protocol.ServerPaths:
    return protocol.server_paths(*connection.server_key(str(repo), None))


def wait_until(condition, seconds: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)


def test_served_commands_print_exactly_what_they_print_in_process(repo, runtime):
    hostile = "Use [bold]rich[/] for output, not [red]print[/red]; see \\[docs]"
    assert cortex(repo, "remember", hostile, "--kind", "decision", "--tags", "ui", served=False).returncode == 0
    first = cortex(repo, "remember", "Cache the parsed config in memory", "--key", "cache")
    assert first.returncode == 0, first.stderr
    assert status(repo)["running"], "the first command started a server"
    memory_id = json.loads(cortex(repo, "list", "--json", served=False).stdout)[0]["id"]
    # The first selection indexes the repository (and says so): let that happen before comparing.
    assert cortex(repo, "select", "warm up", served=False).returncode == 0
    big = ("retry the upload with backoff " * 12_000).encode()
    commands = [
        ("list", "--json"), ("show", memory_id), ("show", memory_id, "--json"), ("ss", "rich output"),
        ("ss", "config", "--json"), ("search", "kind:decision", "--explain"), ("what", "--json"), ("history", "cache"),
        ("stats", "--json"), ("git", "--json"), ("graph", "src/app.py", "--json"), ("index", "--status", "--json"),
        ("show", "no-such-id"), ("ss", "--limit", "0"), ("ss", "--bogus"), ("--help",), ("remember", "-", "--json"),
        ("select", "make the app return two", "--budget", "2000", "--json"),
    ]
    for args in commands:
        stdin = b"\xff\xfe not utf-8" if args[0] == "remember" else None
        here, there = cortex(repo, *args, served=False, stdin=stdin), cortex(repo, *args, stdin=stdin)
        assert (there.returncode, _timeless(there.stdout), there.stderr) == \
            (here.returncode, _timeless(here.stdout), here.stderr), args
    # Standard input crosses over: a 360 kB memory through `-`, stored once, read back whole.
    stored = cortex(repo, "remember", "-", "--json", stdin=big)
    assert stored.returncode == 0, stored.stderr
    shown = cortex(repo, "show", json.loads(stored.stdout)["memory"]["id"], "--json", served=False)
    assert json.loads(shown.stdout)["text"] == big.decode()
    served = Path(server_paths(repo).log).read_text().count(" exit ")  # every server's commands, should one be replaced
    # The client parses first: a usage error (`--limit 0`, `--bogus`) or `--help` is printed in-process; the first
    # remember and the big one through `-` were served too.
    parsed_locally = 3
    assert served >= len(commands) - parsed_locally + 2


def _timeless(out: bytes) -> bytes:
    """Search results report how long they took, and reads record access; everything else must match byte for byte."""
    import re

    # Reads record when a memory was last read (`accessed_at`), so two runs of `show` differ there by design.
    out = re.sub(rb'"accessed_at": "[^"]*"', b'"accessed_at": ""', out)
    return re.sub(rb'"elapsed_ms": [0-9.]+', b'"elapsed_ms": 0', out)


def _on_terminal(repo: Path, args: tuple[str, ...], served: bool) -> bytes:
    module = "cortex_tui.app.cli.client" if served else "cortex_tui.app.cli.main"
    leader, follower = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "72", "LINES": "30"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", module, *args], cwd=repo, stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, env=env)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=600)
    os.close(leader)
    return b"".join(chunks)


def test_on_a_terminal_the_colours_and_layout_are_the_same(repo, runtime):
    assert cortex(repo, "remember", "Tables use [bold]box[/] drawing", "--kind", "decision").returncode == 0
    memory_id = json.loads(cortex(repo, "list", "--json").stdout)[0]["id"]
    for args in (("show", memory_id), ("ss", "box drawing"), ("list",)):
        here, there = _on_terminal(repo, args, served=False), _on_terminal(repo, args, served=True)
        assert b"\x1b[" in here, "rich coloured its output on a terminal"
        assert there == here, args


def test_three_clients_remembering_at_once_store_every_memory_once_in_one_server(repo, runtime):
    results: list[subprocess.CompletedProcess] = []

    def remember_ten(name: str) -> None:
        for i in range(10):
            # --new: these notes differ by one letter on purpose, which the near-duplicate check would offer as versions
            results.append(cortex(repo, "remember", f"client {name} note {i}", "--new", "--json"))

    threads = [threading.Thread(target=remember_ten, args=(name,)) for name in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.stderr for r in results if r.returncode] == []
    memories = json.loads(cortex(repo, "list", "--limit", "100", "--json", served=False).stdout)
    texts = sorted(m["text"] for m in memories)
    assert texts == sorted(f"client {n} note {i}" for n in "abc" for i in range(10))
    assert len({json.loads(r.stdout)["memory"]["id"] for r in results}) == 30
    assert len(list(runtime.glob("*.json"))) == 1


def _servers_for(runtime: Path) -> list[int]:
    """Live server processes started with this runtime directory (started by this test's clients)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"cortex_tui.app.server.serve" in cmdline and f"CORTEX_RUNTIME_DIR={runtime}".encode() in environ:
            if process_alive(int(proc.name)):
                found.append(int(proc.name))
    return found


def test_starters_racing_end_with_one_server(repo, runtime):
    procs = [subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.client", "what", "--json"], cwd=repo,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, [e for _, e in outs]
    assert len({o for o, _ in outs}) == 1
    wait_until(lambda: len(_servers_for(runtime)) == 1, what="the losing starters to exit")
    assert _servers_for(runtime) == [status(repo)["pid"]]


def test_kill_9_mid_write_loses_no_acknowledged_memory_and_the_stale_socket_is_replaced(repo, runtime):
    assert cortex(repo, "remember", "before the crash", "--json").returncode == 0
    first = status(repo)["pid"]
    acknowledged, failed = [], []

    def writer() -> None:
        for i in range(12):
            r = cortex(repo, "remember", f"write {i}", "--json")
            if r.returncode == 0:
                acknowledged.append(json.loads(r.stdout)["memory"]["id"])
            else:
                failed.append(r.stderr.decode())

    thread = threading.Thread(target=writer)
    thread.start()
    wait_until(lambda: len(acknowledged) >= 3, what="three acknowledged writes")
    os.kill(first, signal.SIGKILL)
    thread.join()
    assert os.path.exists(server_paths(repo).socket) or acknowledged, "the killed server left its socket behind"
    for message in failed:  # at most the write in flight, with one clear line
        assert message.startswith("cortex: error: ") and message.count("\n") == 1, message
    assert len(failed) <= 1
    stored = {m["id"] for m in json.loads(cortex(repo, "list", "--limit", "100", "--json", served=False).stdout)}
    assert set(acknowledged) <= stored
    assert len(acknowledged) + len(failed) == 12
    after = status(repo)
    assert after["running"] and after["pid"] != first


def test_a_stale_socket_of_a_killed_server_is_replaced(repo, runtime):
    assert cortex(repo, "what", "--json").returncode == 0
    first = status(repo)["pid"]
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: not process_alive(first), what="the killed server to go")
    assert os.path.exists(server_paths(repo).socket), "a killed server cannot remove its socket"
    again = cortex(repo, "remember", "after the crash", "--json")
    assert again.returncode == 0, again.stderr
    second = status(repo)
    assert second["running"] and second["pid"] != first


def test_a_new_install_replaces_the_running_server(repo, runtime, tmp_path):
    # Another install is started here as another interpreter path (its fingerprint names the Python running it).
    # Touching this install's files instead would retire the servers of every test running beside this one.
    other = tmp_path / "other-install" / "bin" / "python"
    other.parent.mkdir(parents=True)
    other.symlink_to(sys.executable)
    if sys.prefix != sys.base_prefix:
        # In a virtual environment an interpreter finds its packages from the pyvenv.cfg above its folder: the other
        # path gets the environment's, so it is the same install seen from another path.
        shutil.copy(Path(sys.prefix) / "pyvenv.cfg", other.parent.parent / "pyvenv.cfg")
        (other.parent.parent / "lib").symlink_to(Path(sys.prefix) / "lib")
    made = subprocess.run([str(other), "-m", "cortex_tui.app.cli.client", "remember", "old server note"], cwd=repo,
                          capture_output=True, timeout=600)
    assert made.returncode == 0, made.stderr
    old = status(repo)
    assert old["fingerprint"] != protocol.fingerprint()
    listed = cortex(repo, "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [m["text"] for m in json.loads(listed.stdout)] == ["old server note"]
    new = status(repo)
    assert new["pid"] != old["pid"] and new["fingerprint"] == protocol.fingerprint()
    wait_until(lambda: not process_alive(old["pid"]), what="the old server to exit")


def test_the_fingerprint_follows_installed_distributions_not_other_writes(tmp_path, monkeypatch):
    site = tmp_path / "lib" / "site-packages"
    site.mkdir(parents=True)
    monkeypatch.syspath_prepend(str(site))
    before = protocol.installed_fingerprint()
    (site / "__pycache__").mkdir()  # Python's first byte-code write beside a top-level module
    (site / "__pycache__" / "six.cpython-311.pyc").write_bytes(b"")
    assert protocol.installed_fingerprint() == before
    (site / "requests-2.32.0.dist-info").mkdir()
    installed = protocol.installed_fingerprint()
    assert installed != before
    (site / "requests-2.32.0.dist-info").rename(site / "requests-2.33.0.dist-info")
    assert protocol.installed_fingerprint() not in (before, installed)


def test_failing_and_malformed_requests_leave_the_server_running(repo, runtime):
    assert cortex(repo, "remember", "still here").returncode == 0
    pid = status(repo)["pid"]
    bad = cortex(repo, "show", "missing")
    assert bad.returncode == 1 and bad.stderr.decode().startswith("cortex: error: no memory with id")
    path = server_paths(repo).socket
    for garbage in (b"\x00\x00\x00\x05hello", b"\xff\xff\xff\xff", b"\x00\x00\x00\x02[]", b"\x00\x00"):
        with socket.socket(socket.AF_UNIX) as raw:
            raw.connect(path)
            raw.sendall(garbage)
    nowhere = cortex(repo, "list", "--json")
    assert nowhere.returncode == 0
    assert status(repo)["pid"] == pid
    assert [m["text"] for m in json.loads(nowhere.stdout)] == ["still here"]


def test_a_stopped_server_does_not_hang_the_client(repo, runtime):
    assert cortex(repo, "remember", "answered anyway").returncode == 0
    pid = status(repo)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        # The request is never taken, so the client runs the command itself.
        out = cortex(repo, "list", "--json")
        assert out.returncode == 0, out.stderr
        assert [m["text"] for m in json.loads(out.stdout)] == ["answered anyway"]
    finally:
        os.kill(pid, signal.SIGCONT)


def test_no_daemon_flag_env_and_setting_run_in_process(repo, runtime, tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("daemon = false\n")
    for args, env in ((("remember", "one", "--no-daemon"), {}), (("remember", "two"), {"CORTEX_NO_DAEMON": "1"}),
                      (("remember", "three"), {"CORTEX_CONFIG": str(config)})):
        out = cortex(repo, *args, env=env)
        assert out.returncode == 0, out.stderr
    assert list(runtime.glob("*.sock")) == []
    assert len(json.loads(cortex(repo, "list", "--json", served=False).stdout)) == 3


def test_the_server_exits_when_idle(repo, runtime):
    assert cortex(repo, "what", "--json", env={"CORTEX_DAEMON_IDLE_MINUTES": "0.02"}).returncode == 0
    wait_until(lambda: connection.wait_stopped(server_paths(repo), 0), what="the idle server to exit")
    assert list(runtime.glob("*.sock")) == [] and list(runtime.glob("*.json")) == []


def test_cortex_serve_in_a_terminal_is_the_server_until_ctrl_c(repo, runtime):
    """`cortex serve` in the foreground: the same process serves (its pid in the status), commands reach it, and
    Ctrl+C ends it with status 0; `--idle-minutes` reaches the server."""
    proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "serve", "--idle-minutes", "30"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("serving ")
        wait_until(lambda: status(repo).get("pid") == proc.pid, what="the foreground server to listen")
        assert status(repo)["idle_seconds"] == 30 * 60
        assert cortex(repo, "remember", "served in the foreground").returncode == 0
        assert status(repo)["commands"] >= 1
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert status(repo) == {"running": False}


def test_stop_and_status(repo, runtime):
    assert status(repo) == {"running": False}
    assert cortex(repo, "what").returncode == 0
    assert status(repo)["root"] == str(repo.resolve())
    stopped = cortex(repo, "serve", "--stop", "--json")
    assert json.loads(stopped.stdout) == {"was_running": True, "stopped": True}
    assert status(repo) == {"running": False}


def test_warm_heap_is_out_of_the_collectors_reach(repo, runtime):
    # The warm-up runs before the first command on the one command worker: once it answered, the heap is frozen.
    assert cortex(repo, "what").returncode == 0
    assert status(repo)["frozen_objects"] > 10_000


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_cannot_connect(repo, runtime):
    assert cortex(repo, "what").returncode == 0
    path = server_paths(repo).socket

    def as_nobody() -> int:
        """0: could not connect; 1: the server refused; 2: the server listened to another user."""
        pid = os.fork()
        if pid == 0:
            code = 2
            try:
                os.setgid(65534)
                os.setuid(65534)
                with socket.socket(socket.AF_UNIX) as conn:
                    conn.settimeout(30)
                    conn.connect(path)
                    protocol.send(conn, StatusRequest().to_wire())
                    reply = protocol.receive(conn)
                    code = 1 if reply is None or reply.get("type") == "refused" else 2
            except PermissionError:
                code = 0
            except (ConnectionResetError, BrokenPipeError):
                code = 1  # refused by closing at once, which can race the request being sent
            except BaseException:
                code = 3
            os._exit(code)
        return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])

    assert as_nobody() == 0, "the private directory keeps other users out"
    os.chmod(runtime, 0o755)
    os.chmod(path, 0o666)
    assert as_nobody() == 1, "with the files opened up, the peer check still refuses"


def test_the_client_path_imports_nothing_heavy(repo):
    """Nor the engine's records: what the parser offers (the context purposes' names) is in a module of its own (the
    records and the layout's modules were a tenth of a warm command's time)."""
    code = (
        "import sys\n"
        "from cortex_tui.app.cli import client\n"
        f"route = client._route(['ss', 'progress bar', '-C', {str(repo)!r}])\n"
        "assert route is not None and route.request.argv[0] == 'ss'\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))\n"
        "print(sorted(m for m in sys.modules if m.startswith('cortex_tui.core.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    heavy, engine = out.stdout.splitlines()
    assert heavy == "[]"
    # core.cloud_variables names the variables the client forwards: it imports nothing, like the client.
    assert engine == ("['cortex_tui.core.cloud_variables', 'cortex_tui.core.context', "
                      "'cortex_tui.core.context.purpose_names', 'cortex_tui.core.errors']")


CLIENT_MODULES = {
    "cortex_tui", "cortex_tui.app", "cortex_tui.app.cli", "cortex_tui.app.cli.client",
    "cortex_tui.app.cli.text_input", "cortex_tui.app.cli.served_copy", "cortex_tui.app.cli.writes",
    "cortex_tui.app.terminal_size",
    "cortex_tui.app.link", "cortex_tui.app.link.protocol", "cortex_tui.app.link.connection",
    "cortex_tui.app.link.messages", "cortex_tui.app.link.exchange",
    "cortex_tui.app.cli.parser", "cortex_tui.app.command", "cortex_tui.app.version",
    "cortex_tui.app.cli.search_commands", "cortex_tui.app.cli.memory_commands", "cortex_tui.app.formats",
    "cortex_tui.core", "cortex_tui.core.errors", "cortex_tui.core.context", "cortex_tui.core.context.purpose_names",
    "cortex_tui.core.cloud_variables",
}
"""What a served `cortex ss` imports of the package: the client, and the parser of its own command only."""
DONE_WITHOUT = ("dataclasses", "inspect", "typing", "pathlib", "hashlib", "tempfile", "subprocess", "threading")
"""Standard modules a served command can do without, each a millisecond or more of its start-up."""


def test_a_served_search_imports_only_its_own_command_and_the_standard_library(repo, runtime):
    """The client's `main` in a process of its own, as the installed entry point runs it: the modules it imported
    after Python's own start-up."""
    assert cortex(repo, "remember", "The progress bar redraws at most ten times a second").returncode == 0  # served
    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "from cortex_tui.app.cli.client import main\n"
            "assert main(['ss', 'progress bar']) == 0\n"
            "print(sorted(set(sys.modules) - before), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "progress bar redraws" in out.stdout
    served = set(eval(out.stderr.splitlines()[-1]))
    assert "cortex_tui.app.cli.main" not in served, "the command was served, not run in-process"
    assert {m for m in served if m.startswith("cortex_tui")} == CLIENT_MODULES
    assert sorted(m for m in served if not m.startswith("cortex_tui")
                  and m.split(".")[0] not in sys.stdlib_module_names) == []
    assert sorted(served & set(DONE_WITHOUT)) == []


def test_the_client_names_writes_as_the_engine_reads_them():
    """The client's name of the write-id variable is the engine's (not imported from there: see client)."""
    from cortex_tui.core import write_ids

    assert client.WRITE_ID_ENV == write_ids.ENV


def test_the_clients_temporary_directory_is_tempfiles(monkeypatch, tmp_path):
    """Where the runtime directory goes without $XDG_RUNTIME_DIR: where `tempfile` would put it."""
    for tmpdir in (str(tmp_path), str(tmp_path / "missing"), None):
        if tmpdir is None:
            monkeypatch.delenv("TMPDIR", raising=False)
        else:
            monkeypatch.setenv("TMPDIR", tmpdir)
        monkeypatch.setattr(tempfile, "tempdir", None)  # found again, not the one this process cached
        assert protocol.temporary_dir() == tempfile.gettempdir()


def test_the_client_knows_the_hook_kinds_without_importing_the_hook():
    from cortex_tui.app.cli import hook_run

    assert client.HOOK_KINDS == hook_run.KINDS


@pytest.mark.parametrize("argv", [
    ["ss", "progress bar", "--limit", "3", "--json"], ["--json", "-C", ".", "what", "--limit", "2"],
    ["remember", "-", "--kind", "decision", "--tags", "a,b"], ["agent", "log", "--obs", "seen"],
    ["context", "fix the bar", "--copy"], ["index", "--status"], ["search"], ["-C", "what", "list", "--limit", "1"],
])
def test_the_clients_partial_parser_parses_as_the_whole_tree(argv):
    """The client builds only the commands its command line names; what it parses must not differ."""
    from cortex_tui.app.cli import parser as cli

    assert vars(cli.build_parser(frozenset(argv)).parse_args(argv)) == vars(cli.build_parser().parse_args(argv))


@pytest.mark.parametrize("argv", [["sss", "x"], ["ss", "--limit", "0"], ["--help"], ["what", "--nope"]])
def test_what_the_partial_parser_refuses_goes_in_process(argv, capsys):
    from cortex_tui.app.cli import parser as cli

    with pytest.raises(cli.UsageExit):
        cli.build_parser(frozenset(argv)).parse_args(argv)
    assert client._route(argv) is None


@pytest.mark.parametrize("xdg", [None, "/somewhere/else", "  "])
def test_the_client_finds_the_config_file_where_the_settings_do(monkeypatch, xdg):
    from cortex_tui.core.locations import user_config_file

    monkeypatch.delenv("CORTEX_CONFIG", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CONFIG_HOME", xdg)
    assert Path(connection._config_file()) == user_config_file()


def test_the_light_config_reader_agrees_with_the_settings(monkeypatch, tmp_path):
    from cortex_tui.core.config import load_settings

    config = tmp_path / "config.toml"
    config.write_text('theme = "nord"\ndaemon = false\n')
    monkeypatch.setenv("CORTEX_CONFIG", str(config))
    for name in ("CORTEX_THEME", "CORTEX_DAEMON", "CORTEX_NO_DAEMON"):
        monkeypatch.delenv(name, raising=False)
    assert connection.config_value("theme") == load_settings().theme == "nord"
    assert connection.daemon_wanted() is load_settings().daemon is False
    monkeypatch.setenv("CORTEX_THEME", "gruvbox")
    assert connection.config_value("theme") == load_settings().theme == "gruvbox"


def _mapped(pid: int, library: str) -> bool:
    """Whether a process has loaded a native library (LanceDB is one, so an engine of its own maps it)."""
    return library in Path(f"/proc/{pid}/maps").read_text(errors="replace")


async def test_the_dashboard_paints_from_the_server_and_follows_its_one_watcher(repo, runtime):
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote
    from cortex_tui.app.tui.messages import IndexChanged, IndexFinished, MemorySaved, WhatLoaded
    from cortex_tui.app.tui.showcase import FIRST_PAINT, RecordingApp, wait_loaded
    from cortex_tui.app.tui.showcase import wait_until as wait_for
    from cortex_tui.core.records import MemoryDraft

    assert cortex(repo, "remember", "Pricing rounds half up", "--kind", "decision").returncode == 0
    server = status(repo)["pid"]
    remote = Remote.attach(repo, None, start=False)
    assert remote is not None and remote.root == repo.resolve()
    app = RecordingApp(RemoteBridge(remote), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await wait_loaded(pilot, FIRST_PAINT + ("index",), timeout=300)
        shown = app.seen(WhatLoaded).what
        assert [m.text for m in shown.branch_memories + shown.recent_memories] == ["Pricing rounds half up"]
        assert app.seen(IndexFinished).status.indexed_files == 2
        attached = status(repo)
        assert attached["pid"] == server and attached["attached"] == 1 and attached["watching"]
        assert attached["calls"] >= 4, "the panes were read through the server"
        # The server's watcher indexes a new file, and the dashboard hears of it.
        (repo / "src" / "ledger.py").write_text("def balance_the_ledger():\n    return 0\n")
        await wait_for(pilot, lambda: app.seen(IndexChanged) is not None, "the server's index update", timeout=120)
        # A memory saved in the dashboard is written by the server, where the CLI reads it.
        pilot.app.screen.save_memory(MemoryDraft(text="The ledger balances nightly", kind="note"), None)
        await wait_for(pilot, lambda: app.seen(MemorySaved) is not None, "the saved memory")
    texts = [m["text"] for m in json.loads(cortex(repo, "list", "--json").stdout)]
    assert "The ledger balances nightly" in texts
    wait_until(lambda: status(repo)["attached"] == 0, what="the closed dashboard to hang up")
    # The watcher was the dashboard's: with nothing attached the server stops it, and says so (it said "watching"
    # after every dashboard had quit, and "1 calls").
    wait_until(lambda: not status(repo)["watching"], what="the watcher stopped with the last dashboard")
    text = cortex(repo, "serve", "--status").stdout.decode()
    assert "0 attached (dashboards, MCP servers)" in text and "not watching" in text, text
    counts = re.findall(r"\b([\d,]+) (command|call)(s?)\b", text)
    assert len(counts) == 2 and all((n == "1") == (not plural) for n, _, plural in counts), text


# Prepended to a child's code: the first import of each engine package prints the stack that made it to stderr,
# so that a failure names the culprit (which pane, message or widget) instead of only the package.
_IMPORT_WITNESS = """\
import sys, traceback
class _Witness:
    seen = set()
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in {engine!r} and top not in self.seen:
            self.seen.add(top)
            print(f"--- {{top}} imported by:\\n" + "".join(traceback.format_stack()[:-1]), file=sys.stderr)
        return None
sys.meta_path.insert(0, _Witness())
"""


def test_an_attached_dashboard_imports_none_of_the_engine(repo, runtime):
    """A dashboard process attached to the server fills every pane, selects and hears the index pass without
    importing LanceDB, pyarrow, numpy, networkx, scipy, the model, git or pydantic: the answers arrive as light
    dataclasses."""
    assert cortex(repo, "remember", "Pricing rounds half up", "--kind", "decision").returncode == 0
    engine = ("lancedb", "pyarrow", "numpy", "networkx", "scipy", "fastembed", "onnxruntime", "git", "watchfiles", "pydantic")
    code = (
        _IMPORT_WITNESS.format(engine=engine) +
        "import asyncio, sys\n"
        "from cortex_tui.app.tui import main\n"  # the `cortex-tui` entry point's own imports count too
        "from cortex_tui.app.link.remote import Remote\n"
        "from cortex_tui.app.bridge.remote import RemoteBridge\n"
        "from cortex_tui.app.tui.showcase import EVERYTHING, RecordingApp, wait_loaded\n"
        "async def run():\n"
        f"    app = RecordingApp(RemoteBridge(Remote.attach({str(repo)!r}, None, start=False)), task='pricing',\n"
        "                       remember_theme=False)\n"
        "    async with app.run_test(size=(160, 45)) as pilot:\n"
        "        await wait_loaded(pilot, EVERYTHING + ('select',), timeout=300)\n"
        "        app.exit()\n"
        "asyncio.run(run())\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({engine!r})))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr  # the stack that imported each one
    assert status(repo)["calls"] >= 5, "the panes were read through the server"


def test_numpy_values_cross_the_socket_as_python_numbers_and_engine_objects_not_at_all():
    """Whatever an answer holds, the attached end never imports the engine to read it: numpy numbers and arrays are
    sent as Python ones, other engine objects are refused when packed, and a payload naming one is refused when read."""
    import base64
    import pickle

    import numpy as np
    import pyarrow as pa
    from cortex_tui.core.answers import ScoreBreakdown

    score = ScoreBreakdown(ranks={"vector": 1}, relevance=np.float32(0.5), similarity=np.float64(0.25),
                           boosts={"recent": np.float32(0.125)}, total=np.float32(1.0))
    payload = protocol.pack((score, np.arange(3, dtype=np.int64), np.bool_(True)))
    code = ("import sys\n"
            "from cortex_tui.app.link import protocol\n"
            "score, ids, flag = protocol.unpack(sys.stdin.read())\n"
            "print(type(score.relevance).__name__, score.relevance, score.similarity, score.boosts, score.total, ids, "
            "flag, 'numpy' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["float", "0.5", "0.25", "{'recent':", "0.125}", "1.0", "[0,", "1,", "2]", "True",
                                  "False"]
    with pytest.raises(pickle.PicklingError, match="pyarrow"):
        protocol.pack({"error": pa.ArrowInvalid("bad")})
    with pytest.raises(pickle.UnpicklingError, match="numpy"):
        protocol.unpack(base64.b64encode(pickle.dumps(np.float32(1.0))).decode("ascii"))


def test_cortex_mcp_attaches_to_the_running_server_instead_of_hosting_an_engine(repo, runtime):
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    assert cortex(repo, "what", "--json").returncode == 0
    server = status(repo)["pid"]
    env = {k: v for k, v in os.environ.items() if k.startswith(("CORTEX_", "GIT_", "HOME", "PATH"))}

    async def session() -> dict:
        params = StdioServerParameters(command=sys.executable, args=["-m", "cortex_tui.app.cli.client", "mcp"],
                                       env=env, cwd=str(repo))
        async with Client(params, read_timeout_seconds=300) as client:
            made = await client.call_tool("remember", {"text": "Invoices are numbered per year", "kind": "decision"})
            assert not made.is_error, made.content
            found = await client.call_tool("smart_search", {"query": "invoice numbering"})
            assert not found.is_error, found.content
            assert "Invoices are numbered per year" in json.dumps(found.structured_content)
            bad = await client.call_tool("forget", {"id": "000000000000"})
            assert bad.is_error and "no memory" in bad.content[0].text
            mcp_pid = next(p for p in _processes_with(b"mcp") if p != os.getpid())
            return {"status": status(repo), "lancedb": _mapped(mcp_pid, "lancedb")}

    seen = asyncio.run(session())
    assert seen["status"]["pid"] == server and seen["status"]["calls"] >= 3
    assert seen["status"]["attached"] == 1, "the MCP server follows the server's watcher"
    assert not seen["lancedb"], "the attached MCP server built no engine of its own"
    texts = [m["text"] for m in json.loads(cortex(repo, "list", "--json", served=False).stdout)]
    assert texts == ["Invoices are numbered per year"]


def _processes_with(word: bytes) -> list[int]:
    """Live processes of this test's runtime directory whose command line has this word."""
    mine = b"CORTEX_RUNTIME_DIR=" + os.environ["CORTEX_RUNTIME_DIR"].encode()
    found = []
    for pid, cmdline, entry in live_processes():
        try:
            if word in cmdline and mine in (entry / "environ").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def test_an_attached_dashboard_follows_the_successor_of_a_killed_server(repo, runtime):
    from cortex_tui.app.bridge.calls import WatchEvents
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote

    assert cortex(repo, "what", "--json").returncode == 0
    first = status(repo)["pid"]
    bridge = RemoteBridge(Remote.attach(repo, None, start=True))  # as `cortex-tui` attaches
    report, indexed = bridge.index(lambda progress: None, lambda: False)
    assert indexed.indexed_files == 2
    updates, errors = [], []
    bridge.start_watcher(WatchEvents(update=updates.append, memories=lambda: None, replaced=lambda: None,
                                     indexed=lambda report, status: None, failed=errors.append))
    try:
        os.kill(first, signal.SIGKILL)
        wait_until(lambda: not process_alive(first), what="the killed server to go")
        # The next call starts a successor; the dashboard subscribes to it, and its watcher reports the change.
        assert bridge.what().git.branch == "main"
        wait_until(lambda: (s := status(repo))["attached"] == 1 and s["watching"], what="the successor's watcher")
        assert status(repo)["pid"] != first
        (repo / "src" / "late.py").write_text("def arrived_after_the_crash():\n    return 1\n")
        wait_until(lambda: any("src/late.py" in u.paths for u in updates), what="the successor's update")
    finally:
        bridge.stop()


def test_a_served_remember_commits_its_cached_vector_after_answering(repo, runtime):
    from cortex_tui.core.engine import Engine

    out = cortex(repo, "remember", "Vectors of memories reach the cache too", "--json")
    assert out.returncode == 0, out.stderr
    digest = json.loads(out.stdout)["memory"]["text_hash"]
    store = Engine(repo).store()

    def cached() -> bool:
        return bool(store.vector_cache.get_vectors(store.embedder.model_id, [digest]))

    wait_until(cached, what="the server's cache write after its answer")
    assert "write after answer failed" not in Path(server_paths(repo).log).read_text()


def _compactors() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "cortex-compact" and t.is_alive()}


def test_an_evicted_engine_stops_its_compaction_thread(tmp_path):
    from cortex_tui.app.server.engines import MAX_ENGINES, EngineCache
    from cortex_tui.core.config import load_settings

    settings, cache, before = load_settings(), EngineCache(), _compactors()
    roots = [tmp_path / f"project{i}" for i in range(MAX_ENGINES + 1)]
    for root in roots:
        root.mkdir()
    cache(roots[0], None, settings).compact_in_background()
    (first,) = _compactors() - before
    for root in roots[1:]:
        cache(root, None, settings).compact_in_background()
    assert not first.is_alive(), "the least recently used engine was evicted and its thread stopped"
    assert len(_compactors() - before) == MAX_ENGINES
    cache.close()
    assert not _compactors() - before


def test_a_server_shutting_down_stops_its_engines_threads(repo, runtime):
    from cortex_tui.app.server.serve import Server

    before = _compactors()
    with open(runtime / "server.log", "w") as log:
        server = Server(str(repo), "", protocol.server_paths(str(repo), ""), 300, log)
        serving = threading.Thread(target=server.serve, args=(server.bind(),))
        serving.start()
        try:
            wait_until(lambda: _compactors() - before, what="the warm engine's compaction thread")
            started = _compactors() - before
        finally:
            server.stop()
            serving.join(120)
    assert not serving.is_alive()
    assert not any(t.is_alive() for t in started)


def test_the_one_watcher_moves_to_the_new_engine_when_the_database_is_replaced(repo):
    """`rm -rf .cortex` under a running server: the next call gets a new engine, and the watcher must follow it
    (left on the old engine it kept writing the deleted database while every call read the new one)."""
    import queue
    import shutil

    from cortex_tui.app.server.engines import EngineCache
    from cortex_tui.app.server.hosted import Hosted
    from cortex_tui.core.config import load_settings
    from cortex_tui.core.store.sql import scan

    cache, settings, said = EngineCache(), load_settings(), []
    hosted = Hosted(lambda _env: cache(repo, None, settings), said.append)

    def next_event(events, kind):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                got, value = events.get(timeout=1)
            except queue.Empty:
                continue
            assert got != "failed", value
            if got == kind:
                return value
        raise AssertionError(f"no {kind} event")

    try:
        events = hosted.subscribe()
        next_event(events, "indexed")
        first = cache(repo, None, settings)
        for _ in range(50):  # the old engine's compaction may still write while the tree is removed
            try:
                shutil.rmtree(repo / ".cortex")
                break
            except OSError:
                time.sleep(0.2)
        hosted.submit("bridge", "what", (), {}).result(120)
        assert cache(repo, None, settings) is not first
        next_event(events, "indexed")  # the new engine's index pass, told to the subscriber already there
        (repo / "src" / "late.py").write_text("def arrived_after_the_reset():\n    return 2\n")
        next_event(events, "update")
        index = cache(repo, None, settings).code_index()
        assert "src/late.py" in {r["path"] for r in scan(index.files, None, ["path"])}
        assert any("replaced" in line for line in said)
    finally:
        hosted.close()
        cache.close()


def test_calls_and_subscriptions_wait_for_the_warm_up(repo):
    """A dashboard's first call reached a server still making its warm-up's imports, and the two threads met in a
    circular import of the standard library (`partially initialized module 'typing'`): nothing hosted may run
    before the warm-up has ended."""
    import threading

    from cortex_tui.app.server.engines import EngineCache
    from cortex_tui.app.server.hosted import Hosted
    from cortex_tui.core.config import load_settings

    class Warming(threading.Event):
        """The warm-up's `ready`, counting the threads that have come to wait for it."""

        def __init__(self) -> None:
            super().__init__()
            self.waiting = threading.Semaphore(0)

        def wait(self, timeout=None):
            self.waiting.release()
            return super().wait(timeout)

    cache, settings, ready = EngineCache(), load_settings(), Warming()
    made: list[object] = []

    def engine(_env):
        made.append(1)
        return cache(repo, None, settings)

    hosted = Hosted(engine, lambda _line: None, ready)
    try:
        call = hosted.submit("bridge", "what", (), {})
        subscribed: list[object] = []
        subscriber = threading.Thread(target=lambda: subscribed.append(hosted.subscribe()), daemon=True)
        subscriber.start()
        # The call and the subscription each wait for the warm-up before anything else: once both wait, neither ran.
        assert all(ready.waiting.acquire(timeout=60) for _ in (call, subscriber)), "did not wait for the warm-up"
        assert not call.done() and not subscribed and not made, "ran before the warm-up ended"
        ready.set()
        assert call.result(120).git.branch == "main"
        subscriber.join(120)
        assert subscribed
    finally:
        ready.set()
        hosted.close()
        cache.close()


@pytest.mark.parametrize("minutes", ["nan", "inf", "0", "-1"])
def test_an_idle_limit_from_the_settings_must_be_finite_and_positive(monkeypatch, minutes):
    """`--idle-minutes nan` is refused; the same value from the environment or config.toml made a server that
    never exits (nan compares false to everything)."""
    from cortex_tui.core.config import load_settings
    from cortex_tui.core.errors import CortexError

    monkeypatch.setenv("CORTEX_DAEMON_IDLE_MINUTES", minutes)
    with pytest.raises(CortexError, match="daemon_idle_minutes"):
        load_settings()
