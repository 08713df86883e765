"""A write through the resident server is reported committed exactly when it is stored, however the server dies:
every write command carries an id stored in the same commit as the write (core/store/receipts.py), and a client
that loses its server asks a new one whether that id committed. Real processes: servers killed by crash injection
at a chosen commit, and by kill -9 while three writers and a 20 MB input run through them."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cortex_tui.app.cli.client import NOT_COMMITTED_EXIT
from cortex_tui.app.link import connection
from cortex_tui.core.store.commits import CRASH_ENV, file_lock

from .conftest import commit_file, process_alive
from .test_bad_input import _twenty_megabytes
from .test_serve import cortex, runtime, server_paths, status, wait_until  # noqa: F401  (runtime is a fixture)


def _server_dying_after(repo: Path, commits: int, monkeypatch) -> int:
    """Start the repository's server so that it kills itself (SIGKILL) right after its `commits`-th commit; the
    clients that follow run without that setting (so does the server they start next). A first server is started
    and stopped before, so that the tables a warm-up creates exist and its commits are the commands'."""
    assert cortex(repo, "list").returncode == 0
    assert cortex(repo, "serve", "--stop").returncode == 0
    paths = server_paths(repo)
    assert connection.wait_stopped(paths, 60)
    monkeypatch.setenv(CRASH_ENV, str(commits))
    # The upkeep's compactions are commits too: on a loaded machine the tables written above had been quiet for
    # `compact_keep` by the time this server started, and its settle pass was the commit that killed it.
    monkeypatch.setenv("CORTEX_COMPACT_EVERY", "0")
    conn = connection.start_server(paths, *connection.server_key(str(repo), None))
    monkeypatch.delenv(CRASH_ENV)
    monkeypatch.delenv("CORTEX_COMPACT_EVERY")
    assert conn is not None
    conn.close()
    return status(repo)["pid"]


def _steps(repo: Path) -> list[str]:
    context = cortex(repo, "agent", "context", "-k", "5", "--json", served=False)
    assert context.returncode == 0, context.stderr
    return [s["observation"] for s in json.loads(context.stdout)["steps"]]


def test_a_server_killed_just_after_the_writes_commit_is_reported_committed(repo, runtime, monkeypatch):
    assert cortex(repo, "init", served=False).returncode == 0
    first = _server_dying_after(repo, 1, monkeypatch)  # its first commit is the memory's
    out = cortex(repo, "remember", "Prices are cached per region", "--json")
    assert not process_alive(first)
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert "the write committed (write id " in err and "may or may not" not in err
    assert err.count("\n") == 1, err
    listed = json.loads(cortex(repo, "list", "--json", served=False).stdout)
    assert [m["text"] for m in listed] == ["Prices are cached per region"]


def test_a_server_killed_before_the_writes_commit_is_reported_not_committed(repo, runtime, monkeypatch):
    assert cortex(repo, "agent", "init", "ship the cache", served=False).returncode == 0
    # An agent step stores its mirror memory first, then the step: killed between the two, the step is not stored.
    first = _server_dying_after(repo, 1, monkeypatch)
    out = cortex(repo, "agent", "log", "--obs", "the cache misses")
    assert not process_alive(first)
    err = out.stderr.decode()
    assert out.returncode == NOT_COMMITTED_EXIT, err
    assert err.startswith("cortex: error: ") and ": not committed (write id " in err and err.count("\n") == 1, err
    assert _steps(repo) == []
    again = cortex(repo, "agent", "log", "--obs", "the cache misses")
    assert again.returncode == 0, again.stderr
    assert _steps(repo) == ["the cache misses"]


def test_an_agent_commit_killed_after_its_roadmap_entry_is_not_committed(repo, runtime, monkeypatch):
    """`agent commit --roadmap` appends the roadmap entry, then mirrors and stores the commit: the entry is a step
    towards the commit and carries no id, so a kill after it is reported not committed."""
    assert cortex(repo, "agent", "init", "ship the cache", served=False).returncode == 0
    assert cortex(repo, "agent", "log", "--obs", "the cache misses", served=False).returncode == 0
    first = _server_dying_after(repo, 1, monkeypatch)
    out = cortex(repo, "agent", "commit", "cache fixed", "--roadmap", "measure the hit rate")
    assert not process_alive(first)
    assert out.returncode == NOT_COMMITTED_EXIT, out.stderr
    context = json.loads(cortex(repo, "agent", "context", "--json", served=False).stdout)
    assert context["commits"] == []


def test_a_retry_with_the_callers_write_id_answers_again_and_stores_once(repo, runtime):
    assert cortex(repo, "agent", "init", "ship the cache", served=False).returncode == 0
    env = {"CORTEX_WRITE_ID": "deploy-step-0001"}
    first = cortex(repo, "agent", "log", "--obs", "deployed", "--json", env=env)
    assert first.returncode == 0, first.stderr
    again = cortex(repo, "agent", "log", "--obs", "deployed", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)  # the earlier answer, not a second step
    assert again.stderr.decode().endswith("cortex: write deploy-step-0001 committed earlier; not made again\n")
    in_process = cortex(repo, "agent", "log", "--obs", "deployed", env=env, served=False)
    assert in_process.returncode == 0, in_process.stderr
    assert _steps(repo) == ["deployed"]
    bad = cortex(repo, "agent", "log", "--obs", "deployed", env={"CORTEX_WRITE_ID": "no spaces"})
    assert bad.returncode == 1 and bad.stderr.decode().startswith("cortex: error: CORTEX_WRITE_ID must be ")
    assert bad.stderr.decode().count("\n") == 1


def test_a_retry_while_the_first_attempt_still_runs_waits_for_it_and_stores_once(repo, runtime):
    """The issue's case: a client gave up while its agent step was still running in the server, and the caller
    retried. Held behind the database's write lock (taken here), both attempts are in the server at once; with the
    caller's id the retry waits for the first, then answers from its receipt: one step."""
    assert cortex(repo, "agent", "init", "ship the cache", served=False).returncode == 0
    assert cortex(repo, "list").returncode == 0  # the server is up
    env = {**os.environ, "CORTEX_WRITE_ID": "held-step-0001"}
    argv = [sys.executable, "-m", "cortex_tui.app.cli.client", "agent", "log", "--obs", "held step", "--json"]
    db = repo / ".cortex" / "db"
    with file_lock(db, ".write.lock", 30, str(db)):
        attempts = [subprocess.Popen(argv, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    for _ in range(2)]
        wait_until(lambda: status(repo)["commands_in_flight"] >= 2, what="both attempts taken by the server")
    outs = [a.communicate(timeout=600) for a in attempts]
    assert [a.returncode for a in attempts] == [0, 0], outs
    assert json.loads(outs[0][0]) == json.loads(outs[1][0])
    assert sum(err.decode().endswith("committed earlier; not made again\n") for _, err in outs) == 1, outs
    assert _steps(repo) == ["held step"]


def test_three_writers_and_server_kills_never_report_a_committed_write_failed(repo, runtime):
    """Three writers (two remembering, one logging agent steps) through the server, killed with SIGKILL four times,
    and one 20 MB memory meanwhile: every write reported committed is stored exactly once, every one reported not
    committed is absent, and nothing else is reported."""
    assert cortex(repo, "agent", "init", "survive the kills", served=False).returncode == 0
    assert cortex(repo, "list").returncode == 0  # the first server is up
    results: list[tuple[str, str, subprocess.CompletedProcess]] = []
    running = threading.Event()
    running.set()

    def writer(name: str) -> None:
        for i in range(60):
            if not running.is_set():
                return
            text = f"writer {name} note {i}"
            args = ("agent", "log", "--obs", text) if name == "c" else ("remember", text, "--new")
            results.append((name, text, cortex(repo, *args)))

    big: list[subprocess.CompletedProcess] = []

    def large() -> None:
        time.sleep(2)
        big.append(cortex(repo, "remember", "-", stdin=_twenty_megabytes()))

    threads = [threading.Thread(target=writer, args=(n,)) for n in "abc"] + [threading.Thread(target=large)]
    for t in threads:
        t.start()
    rng = random.Random(44)
    killed = []
    try:
        for _ in range(4):
            before = len(results)
            wait_until(lambda: len(results) >= before + 3, what="writes between kills")
            time.sleep(rng.uniform(0.0, 0.4))
            pid = _live_server(runtime)
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        before = len(results)
        wait_until(lambda: len(results) >= before + 3, what="writes after the last kill")
    finally:
        running.clear()
        for t in threads:
            t.join()
    assert len(killed) == 4
    if big[0].returncode == NOT_COMMITTED_EXIT:  # a kill met it in the server: run again, as the error says
        assert b": not committed (write id " in big[0].stderr, big[0].stderr
        big[0] = cortex(repo, "remember", "-", stdin=_twenty_megabytes())
    assert big[0].returncode == 1 and b"the limit is 1,000,000" in big[0].stderr, big[0].stderr
    outcomes = {"committed": [], "not committed": [], "other": []}
    for name, text, out in results:
        err = out.stderr.decode()
        if out.returncode == 0:
            outcomes["committed"].append((name, text))
        elif out.returncode == NOT_COMMITTED_EXIT and ": not committed (write id " in err:
            outcomes["not committed"].append((name, text))
        else:
            outcomes["other"].append((name, text, out.returncode, err))
    assert outcomes["other"] == []
    memories = [m["text"] for m in json.loads(cortex(repo, "list", "--status", "all", "--limit", "1000", "--json",
                                                     served=False).stdout)]
    stored = {"a": memories, "b": memories, "c": _steps(repo)}
    for name, text in outcomes["committed"]:
        assert stored[name].count(text) == 1, (name, text)
    for name, text in outcomes["not committed"]:
        assert text not in stored[name], (name, text)


def _live_server(runtime: Path) -> int | None:
    for info in runtime.glob("*.json"):
        try:
            pid = json.loads(info.read_text())["pid"]
        except (OSError, ValueError, KeyError):
            continue
        if process_alive(pid):
            return pid
    return None


def _memories(repo: Path) -> dict[str, str]:
    """Active memories by id: their status, as `list` shows them."""
    listed = cortex(repo, "list", "--json", served=False)
    assert listed.returncode == 0, listed.stderr
    return {m["id"]: m["text"] for m in json.loads(listed.stdout)}


def test_a_write_id_reused_for_another_command_is_refused_and_the_same_command_stays_a_retry(repo, runtime):
    """The issue's case: `remember` with an id, then `forget` (or `done`, or a forget of nothing) with the same id
    answered "committed earlier" and exit 0, the memory still active. The id is stored with its command's
    fingerprint, so another command with it is refused in one line, through the server and in-process alike."""
    assert cortex(repo, "init", served=False).returncode == 0
    env = {"CORTEX_WRITE_ID": "reused-id-0001"}
    first = cortex(repo, "remember", "Deploys go out on Tuesdays", "--kind", "task", "--json", env=env)
    assert first.returncode == 0, first.stderr
    memory_id = json.loads(first.stdout)["memory"]["id"]
    for argv, served in ((("forget", memory_id), True), (("done", memory_id), True), (("forget", "deadbeef0000"), True),
                         (("forget", memory_id), False), (("remember", "Deploys go out on Fridays"), True)):
        out = cortex(repo, *argv, env=env, served=served)
        err = out.stderr.decode()
        assert out.returncode == 1, (argv, served, err)
        assert err.startswith("cortex: error: write id reused-id-0001 was used by another write ("), err
        assert ("(another remember with other text or options)" if argv[0] == "remember"
                else "(remember, not this ") in err, err
        assert err.count("\n") == 1 and out.stdout == b"", err
    assert _memories(repo) == {memory_id: "Deploys go out on Tuesdays"}
    assert json.loads(cortex(repo, "show", memory_id, "--json", served=False).stdout)["task_state"] == "open"
    again = cortex(repo, "remember", "Deploys go out on Tuesdays", "--kind", "task", "--json", env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(first.stdout)
    assert again.stderr.decode().endswith("committed earlier; not made again\n")
    # A text from standard input is part of the command: the same text is the retry, another one is refused.
    piped = {"CORTEX_WRITE_ID": "piped-id-0001"}
    assert cortex(repo, "remember", "-", stdin=b"Staging is reset nightly", env=piped).returncode == 0
    assert cortex(repo, "remember", "-", stdin=b"Staging is reset nightly", env=piped).returncode == 0
    assert cortex(repo, "remember", "-", stdin=b"Staging is kept forever", env=piped).returncode == 1
    assert sorted(_memories(repo).values()) == ["Deploys go out on Tuesdays", "Staging is reset nightly"]


def test_a_retry_prints_the_earlier_output_in_process_as_it_does_through_the_server(repo, runtime):
    """A write made in-process kept no output, so its retry printed only the line, while one made through the
    server printed its answer again: now both keep it, and a retry by either path prints the same answer."""
    assert cortex(repo, "init", served=False).returncode == 0
    env = {"CORTEX_WRITE_ID": "in-process-0001"}
    first = cortex(repo, "remember", "The cache is warmed at boot", "--json", env=env, served=False)
    assert first.returncode == 0, first.stderr
    for served in (False, True):
        again = cortex(repo, "remember", "The cache is warmed at boot", "--json", env=env, served=served)
        assert again.returncode == 0, again.stderr
        assert again.stdout == first.stdout, served
        assert again.stderr.decode() == "cortex: write in-process-0001 committed earlier; not made again\n"
    assert list(_memories(repo).values()) == ["The cache is warmed at boot"]


def test_a_purge_killed_at_any_commit_is_reported_as_it_is(repo, runtime, monkeypatch):
    """A purge leaves no row to carry its id. Its receipt was a commit after the delete: a server killed between
    the two reported the purge not committed while the memory was gone. Now the receipt comes first and counts
    once the memory is gone: killed after each of its commits, the client's answer matches the database."""
    assert cortex(repo, "init", served=False).returncode == 0
    for commits in (1, 2):  # the receipt, then the delete (the memory was stored without an id)
        made = cortex(repo, "remember", f"Purge candidate number {commits}", "--json", served=False)
        memory_id = json.loads(made.stdout)["memory"]["id"]
        first = _server_dying_after(repo, commits, monkeypatch)
        out = cortex(repo, "forget", memory_id, "--purge")
        assert not process_alive(first), commits
        gone = memory_id not in _memories(repo)
        assert out.returncode == (0 if gone else NOT_COMMITTED_EXIT), (commits, gone, out.stderr)


def test_a_team_write_queued_before_the_server_died_is_reported_queued(repo, runtime, monkeypatch):
    """A team write made while the team store does not answer is kept in the repository's queue. A server killed
    right after queuing it was reported "not committed; run it again", which queued it a second time: now the
    queue answers for it, and the client says it is queued (exit 0), as the command itself would have."""
    from .s3server import TEST_KEYS

    for key, value in {**TEST_KEYS, "CORTEX_TEAM_DB": "s3://team-down/cortex", "CORTEX_REMOTE_TIMEOUT_SECONDS": "2",
                       "CORTEX_TEAM_ENDPOINT": "http://127.0.0.1:9"}.items():  # nothing listens on the discard port
        monkeypatch.setenv(key, value)
    assert cortex(repo, "init", served=False).returncode == 0
    first = _server_dying_after(repo, 1, monkeypatch)  # its first durable write is the queue's
    out = cortex(repo, "remember", "The team deploys on Mondays", "--scope", "team")
    assert not process_alive(first)
    err = out.stderr.decode()
    assert out.returncode == 0, err
    assert "but the write is queued (write id " in err and "it will be written when the store answers" in err, err
    assert err.count("\n") == 1, err
    queue = (repo / ".cortex" / "team-queue.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(queue) == 1 and "The team deploys on Mondays" in queue[0]


def test_a_dashboard_write_whose_server_died_is_sent_again_under_its_id_and_stored_once(repo, runtime, monkeypatch):
    """The dashboard's writes carried no write id: a server killed right after committing a save left the
    dashboard with "it may or may not have taken effect", and saving again stored it twice. Each action now has one
    id: the bridge sends it again under that id, and the new server answers from the first attempt."""
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote
    from cortex_tui.core.records import MemoryDraft

    assert cortex(repo, "init", served=False).returncode == 0
    first = _server_dying_after(repo, 1, monkeypatch)  # its first commit is the memory's
    remote = Remote.attach(repo, None, start=True)
    assert remote is not None
    result = RemoteBridge(remote).remember(MemoryDraft(text="Saved from the dashboard"))
    assert not process_alive(first)
    assert result.outcome == "created" and result.memory.text == "Saved from the dashboard"
    assert _memories(repo) == {result.memory.id: "Saved from the dashboard"}


_GC_WRITER = """
import sys, time
from pathlib import Path
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
engine, end, n = Engine(Path(sys.argv[1])), time.time() + float(sys.argv[2]), 0
while time.time() < end:
    for _ in range(3):
        engine.remember(MemoryDraft(text=f"fact number {n} about the race"), check_near=False)
        n += 1
    engine.gc()
print(n)
"""
_READER = """
import sys, time
from pathlib import Path
from cortex_tui.core.engine import Engine
from cortex_tui.core.requests import MapRequest, SelectRequest
engine = Engine(Path(sys.argv[1]))
store, end, reads = engine.store(), time.time() + float(sys.argv[2]), 0
while time.time() < end:
    try:
        store.query("status = 'active'")
        engine.search("a fact about the race", limit=5)
        engine.select_context(SelectRequest("where does the app start", budget=2000))
        engine.what()
        engine.repo_map(MapRequest(budget=500))
    except Exception as exc:
        print(type(exc).__name__, str(exc)[:120], flush=True)
    reads += 1
print(reads)
"""


def test_reads_in_one_process_survive_gc_in_another(repo):
    """`cortex gc` keeps no old version: a process reading the memories while another compacts can find a data file
    of the version it opened removed ("Not found"; 2 of 3,911 reads in a minute, on the busy development machine).
    The read is made once more on the newest version. A real race of two processes, so on the code before it fails
    only when the race is met (about one run in two at this length). Searches read the same files, and their
    indexes too, and a selection, `what` and the map read the code index (which `gc` compacts as well)."""
    from cortex_tui.core.engine import Engine
    from cortex_tui.core.records import MemoryDraft

    Engine(repo).remember(MemoryDraft(text="the first fact"))
    for n in range(8):  # versions of the code index for `gc` to fold
        commit_file(repo, f"src/part{n}.py", f"def part_{n}():\n    return {n}\n", f"Add part {n}")
        Engine(repo).code_index(create=True).update(embed=True)
    seconds = "45"
    writer = subprocess.Popen([sys.executable, "-c", _GC_WRITER, str(repo), seconds], stdout=subprocess.PIPE, text=True)
    reader = subprocess.run([sys.executable, "-c", _READER, str(repo), seconds], capture_output=True, text=True,
                            timeout=600)
    written = writer.communicate(timeout=600)[0]
    assert writer.returncode == 0 and int(written) > 0
    lines = reader.stdout.splitlines()
    assert reader.returncode == 0 and lines[:-1] == [] and int(lines[-1]) > 100, reader.stdout[-2000:]


def test_the_session_from_the_environment_is_part_of_the_write(repo, runtime):
    """A session given by CORTEX_SESSION (as an agent's hook sets it) defines the write as `--session` does: the
    same id and words in another session are another write, refused, not answered as the first session's."""
    assert cortex(repo, "init", served=False).returncode == 0
    words = ("remember", "Staging is reset nightly", "--scope", "session")
    env = {"CORTEX_WRITE_ID": "session-id-0001", "CORTEX_SESSION": "agent-one"}
    assert cortex(repo, *words, env=env).returncode == 0
    assert cortex(repo, *words, env=env).stderr.decode().endswith("committed earlier; not made again\n")
    other = cortex(repo, *words, env={**env, "CORTEX_SESSION": "agent-two"})
    assert other.returncode == 1 and "(another remember with other text or options)" in other.stderr.decode()


def test_a_lost_command_is_asked_about_by_its_own_fingerprint(repo, runtime):
    """A client that lost its server asked only whether the id committed: an id that another command committed
    with answered "committed" for a command that never ran. The question now carries the command it sent, and the
    server counts only a write of that command."""
    from cortex_tui.app.link import protocol
    from cortex_tui.app.link.connection import connect
    from cortex_tui.app.link.exchange import Exchange
    from cortex_tui.app.link.messages import ReceiptAnswer, ReceiptRequest, RunRequest, Where

    env = {"CORTEX_WRITE_ID": "asked-id-0001"}
    made = cortex(repo, "remember", "-", "--json", stdin=b"Deploys go out on Tuesdays", env=env)
    assert made.returncode == 0, made.stderr
    memory_id = json.loads(made.stdout)["memory"]["id"]

    def asked(argv: tuple[str, ...], stdin: bytes = b"") -> ReceiptAnswer:
        run = RunRequest(protocol.fingerprint(), argv, str(repo), env, write_id="asked-id-0001",
                         stdin=base64.b64encode(stdin).decode("ascii") if stdin else None)
        conn = connect(server_paths(repo))
        assert conn is not None
        with conn:
            exchange = Exchange.on_socket(conn)
            exchange.send(ReceiptRequest(Where(), str(repo), env, "asked-id-0001", run))
            reply = exchange.answer()
        assert isinstance(reply, ReceiptAnswer), reply
        return reply

    assert asked(("remember", "-", "--json"), b"Deploys go out on Tuesdays").committed is True
    assert asked(("remember", "-"), b"Deploys go out on Fridays").committed is False
    assert asked(("forget", memory_id)).committed is False
