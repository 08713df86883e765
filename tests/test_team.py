"""The team store on a real S3-API server (moto's server mode in a subprocess): the team scope and where results
come from, several machines writing at once, reads within the consistency interval, writes queued while the
store is unreachable and sent by `cortex sync` under the ids they were shown with, the shared vector cache,
credentials kept out of output, and each command's, dashboard's and MCP server's own credentials used through a
resident server started without any."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from cortex_tui.core.config import load_settings
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft

from .conftest import Cli, commit_file
from .s3server import TEST_KEYS, S3Server

WRITES = int(os.environ.get("CORTEX_TEAM_TEST_WRITES") or 30)
"""Writes per machine in the three-machine test (100 is the goal; 30 keeps the suite quick on two cores)."""


@pytest.fixture(scope="module")
def s3():
    server = S3Server()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def team(s3, monkeypatch) -> str:
    """A fresh bucket on the server, named by the settings as this test's team store."""
    bucket = "team-" + uuid.uuid4().hex[:10]
    s3.make_bucket(bucket)
    uri = f"s3://{bucket}/cortex"
    for key, value in TEST_KEYS.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("CORTEX_TEAM_DB", uri)
    monkeypatch.setenv("CORTEX_TEAM_ENDPOINT", s3.endpoint)
    monkeypatch.setenv("CORTEX_REMOTE_TIMEOUT_SECONDS", "2")
    monkeypatch.setenv("CORTEX_REMOTE_CONSISTENCY_SECONDS", "1")
    return uri


def _create_team_store(root: Path) -> None:
    """The first machine creates the store's tables before the others start, so a test is about its writes alone
    (machines creating the store at once have their own test)."""
    Engine(root, settings=load_settings(use_global=False)).team_store(create=True)


def _machine(args: list[str]) -> subprocess.Popen:
    """Another machine: a process running `python -c SCRIPT ARGS...` that says `ready` before each of its
    simultaneous steps and waits for a line (see `_together`)."""
    return subprocess.Popen([sys.executable, "-c", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _together(procs: list[subprocess.Popen], steps: int = 1) -> None:
    """Start each step on every machine at once, once all of them are ready for it (however long their start-up
    and the step before took on a loaded machine)."""
    for _ in range(steps):
        for proc in procs:
            line = proc.stdout.readline()
            assert line.strip() == "ready", proc.communicate(timeout=60)[1][-2000:]
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()


def _team_memories(uri: str) -> list:
    """Every active memory in the team store, read by a fresh engine (no cached connection)."""
    engine = Engine(Path.cwd(), settings=load_settings(use_global=False))
    return engine.team_store().list(status="active")


def test_team_scope_is_written_to_the_team_store_and_read_with_the_local_ones(repo, team, capsys):
    cli = Cli(repo)
    team_mem = cli.json("remember", "team decision: retries back off [bold]exponentially[/]", "--scope", "team")
    local_mem = cli.json("remember", "local note about the parser", "--kind", "note")
    assert team_mem["outcome"] == "created" and team_mem["memory"]["store"] == "team"
    assert local_mem["memory"]["store"] == "repo"

    listed = {m["text"]: m["store"] for m in cli.json("list")}
    assert listed == {"team decision: retries back off [bold]exponentially[/]": "team",
                      "local note about the parser": "repo"}
    code, out, _ = cli("list")
    assert code == 0 and "team" in out and "repo" in out

    found = cli.json("search", "retries back off")
    hit = next(h for h in found["hits"] if h.get("memory"))
    assert hit["memory"]["store"] == "team"
    code, out, _ = cli("search", "retries back off")
    assert "(team)" in " ".join(out.split())
    # The memory lives in the team store only, not in the repository's database.
    assert [m.text for m in _team_memories(team)] == ["team decision: retries back off [bold]exponentially[/]"]
    assert Engine(repo).store().count("scope = 'team'") == 0


WRITER = """
import sys
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
root, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = Engine(root)
for i in range(n):
    result = engine.remember(MemoryDraft(text=f"machine {name} write {i}", scope="team"))
    # A request that outlives the short test timeout on a loaded machine queues the write: sent below.
    assert result.outcome in ("created", "queued"), result.outcome
"""


def test_three_machines_write_to_one_team_store_without_loss_or_repeats(tmp_path, team):
    machines = []
    for name in "abc":
        root = tmp_path / f"machine-{name}"
        root.mkdir()
        machines.append((root, name))
    env = {**os.environ, "CORTEX_GLOBAL_DB": str(tmp_path / "unused-global")}
    _create_team_store(machines[0][0])
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), name, str(WRITES)], env=env,
                              stderr=subprocess.PIPE, text=True) for root, name in machines]
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
    for root, _ in machines:
        assert Engine(root).team().sync().waiting == 0
    texts = [m.text for m in _team_memories(team)]
    assert len(texts) == len(set(texts)) == 3 * WRITES
    assert set(texts) == {f"machine {name} write {i}" for _, name in machines for i in range(WRITES)}
    for root, _ in machines:
        assert not (root / ".cortex" / "team-queue.jsonl").exists()


SEND_WAITING = """
import sys, time


def send_waiting(engine, seconds=300):
    # A write whose settling timed out on a loaded machine was queued, and the machine's next sync sends it again:
    # synced until none waits, or the machine fails.
    deadline = time.monotonic() + seconds
    while engine.team().sync().waiting:
        if time.monotonic() > deadline:
            sys.exit(f"team writes still waiting after {seconds} s")
        time.sleep(0.5)  # the pace of the retries: each sync is a round trip to the store
"""
"""Prepended to a machine's script: `send_waiting(engine)` at its end."""

SAME = SEND_WAITING + """
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
engine = Engine(sys.argv[1])
engine.team_store(create=True)
engine.embedder.embed(["warm up the model"])
print("ready", flush=True)
sys.stdin.readline()  # all machines write at the same instant
engine.remember_many([MemoryDraft(text=f"shared fact {i}", scope="team") for i in range(10)])
send_waiting(engine)
"""


def test_machines_storing_the_same_memories_at_once_store_them_once(tmp_path, team):
    roots = [tmp_path / f"machine-{n}" for n in range(3)]
    for root in roots:
        root.mkdir()
    _create_team_store(roots[0])
    procs = [_machine([SAME, str(root)]) for root in roots]
    _together(procs)
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
    engine = Engine(tmp_path, settings=load_settings(use_global=False))
    active = engine.team_store().list(status="active")
    assert sorted(m.text for m in active) == sorted(f"shared fact {i}" for i in range(10))
    # Not only read as one: the table itself keeps one active row per text once every machine has synced.
    assert engine.team_store().count("status = 'active'") == 10


VERSIONS = SEND_WAITING + """
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
root, name, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
engine = Engine(root)
engine.team_store(create=True)
engine.embedder.embed(["warm up the model"])
for i in range(rounds):
    print("ready", flush=True)
    sys.stdin.readline()  # every machine writes its next version at the same instant
    engine.remember(MemoryDraft(text=f"release plan by {name}, round {i}", scope="team", source_key="release-plan"))
send_waiting(engine)
"""


def test_machines_writing_versions_of_one_key_at_once_leave_one_active_version(tmp_path, team):
    rounds = 3
    roots = [tmp_path / f"machine-{n}" for n in "abc"]
    for root in roots:
        root.mkdir()
    engine = Engine(tmp_path, settings=load_settings(use_global=False))
    engine.team().remember_many([MemoryDraft(text="release plan, first draft", scope="team", source_key="release-plan")],
                                engine.position())
    procs = [_machine([VERSIONS, str(root), root.name[-1], str(rounds)]) for root in roots]
    _together(procs, rounds)
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
    store = Engine(tmp_path, settings=load_settings(use_global=False)).team_store()
    history = store.history("release-plan")
    # Nothing lost: the first draft and every machine's every version are kept.
    assert sorted(m.text for m in history) == sorted(
        ["release plan, first draft"] + [f"release plan by {n}, round {i}" for n in "abc" for i in range(rounds)])
    # One active version in the table itself, the one every machine settles on: the highest, smallest id among equals.
    active = [m for m in history if m.status == "active"]
    top = max(m.version for m in history)
    assert [m.id for m in active] == [min(m.id for m in history if m.version == top)]
    assert [m.id for m in store.list(status="active")] == [active[0].id]


CREATE = SEND_WAITING + """
import os
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
root, name = sys.argv[1], sys.argv[2]
for n, uri in enumerate(sys.argv[3:]):
    os.environ["CORTEX_TEAM_DB"] = uri
    engine = Engine(root)
    engine.embedder.embed(["warm up the model"])
    print("ready", flush=True)
    sys.stdin.readline()  # every machine finds this team store empty and creates it
    for i in range(5):
        engine.remember(MemoryDraft(text=f"first write {i} of machine {name}", scope="team"))
    send_waiting(engine)
"""


def test_machines_creating_the_team_store_at_once_lose_none_of_their_first_writes(tmp_path, team, s3, monkeypatch):
    # Two empty stores, one after the other: each is a fresh chance for the creations to interleave with writes.
    uris = [team]
    bucket = "team-" + uuid.uuid4().hex[:10]
    s3.make_bucket(bucket)
    uris.append(f"s3://{bucket}/cortex")
    roots = [tmp_path / f"machine-{n}" for n in "abc"]
    for root in roots:
        root.mkdir()
    procs = [_machine([CREATE, str(root), root.name[-1], *uris]) for root in roots]
    _together(procs, len(uris))
    for proc in procs:
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
    for uri in uris:
        monkeypatch.setenv("CORTEX_TEAM_DB", uri)
        texts = [m.text for m in _team_memories(uri)]
        assert sorted(texts) == sorted(f"first write {i} of machine {n}" for n in "abc" for i in range(5)), uri


def test_a_creation_that_lost_its_race_puts_back_the_rows_it_overwrote(tmp_path):
    """What Lance commits for the second of two creations at once (an empty overwrite on top of the first
    machine's writes), made on purpose, then repaired as the machine that made it repairs it."""
    import pyarrow as pa
    from cortex_tui.core.store.database import Database

    schema = pa.schema([("id", pa.string()), ("text", pa.string())])
    db = Database(str(tmp_path / "db"), create=True)
    table = db.open_table("notes", schema, key="id")
    db.upsert(table, "id", [{"id": "a", "text": "first machine's first write"}])
    created = db.conn.create_table("notes", schema=schema, mode="overwrite").version
    db.upsert(table, "id", [{"id": "c", "text": "written after the overwrite"}])
    assert table.count_rows() == 1
    db.restore_overwritten(table, created, "id")
    db.restore_overwritten(table, created, "id")  # repeating the repair changes nothing
    assert sorted(r["id"] for r in table.to_arrow().to_pylist()) == ["a", "c"]


def test_a_reader_sees_another_machines_write_within_the_consistency_interval(tmp_path, team):
    reader = Engine(tmp_path, settings=load_settings(use_global=False))
    reader.init()
    assert reader.list_memories(scope="team") == []  # opens the team store (and keeps its connection)
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run([sys.executable, "-c", WRITER, str(other), "x", "1"], check=True, timeout=300)
    interval = load_settings().remote_consistency_seconds
    deadline = time.monotonic() + interval + 1.0
    seen = []
    while time.monotonic() < deadline and not seen:
        seen = reader.list_memories(scope="team")
        time.sleep(0.1)
    assert [m.text for m in seen] == ["machine x write 0"]


def test_team_writes_queue_while_the_store_is_down_and_sync_sends_them(repo, team, s3, capsys):
    cli = Cli(repo)
    assert cli.json("remember", "before the outage", "--scope", "team")["outcome"] == "created"
    s3.pause()
    try:
        start = time.monotonic()
        code, out, err = cli("remember", "typed during the outage", "--scope", "team", "--tags", "x")
        assert code == 0 and "queued" in out, err
        code, out, err = cli("list")
        assert code == 0 and "unreachable" in err and len(err.strip().splitlines()) == 1, err
        code, out, err = cli("sync")
        assert code == 1 and "1 still waiting" in out
        assert time.monotonic() - start < 90
    finally:
        s3.resume()
    queue = repo / ".cortex" / "team-queue.jsonl"
    assert json.loads(queue.read_text(encoding="utf-8"))["draft"]["text"] == "typed during the outage"
    # The next team write sends the queue first.
    assert cli.json("remember", "after the outage", "--scope", "team")["outcome"] == "created"
    assert not queue.exists()
    assert sorted(m.text for m in _team_memories(team)) == ["after the outage", "before the outage",
                                                            "typed during the outage"]
    assert cli.json("sync") == {"sent": 0, "waiting": 0, "error": ""}


STREAM = """
import sys, time
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
engine = Engine(sys.argv[1])
for i in range(int(sys.argv[2])):
    print(engine.remember(MemoryDraft(text=f"stream write {i}", scope="team")).outcome, flush=True)
    time.sleep(0.2)
"""


def test_server_stopped_mid_write_and_restarted_loses_and_repeats_nothing(tmp_path, team, s3):
    n = 12
    proc = subprocess.Popen([sys.executable, "-c", STREAM, str(tmp_path), str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    outcomes = [proc.stdout.readline().strip() for _ in range(3)]  # the writer is mid-stream
    s3.pause()
    try:
        while len(outcomes) < 6 and proc.poll() is None:
            outcomes.append(proc.stdout.readline().strip())
    finally:
        s3.resume()
    rest, err = proc.communicate(timeout=300)
    outcomes += rest.split()
    assert proc.returncode == 0, err[-2000:]
    assert "queued" in outcomes and len(outcomes) == n
    engine = Engine(tmp_path, settings=load_settings(use_global=False))
    result = engine.team().sync()
    assert result.waiting == 0
    texts = [m.text for m in _team_memories(team)]
    assert sorted(texts) == sorted(f"stream write {i}" for i in range(n))


def _copy_repo(src: Path, dst: Path) -> Path:
    subprocess.run(["git", "clone", "-q", str(src), str(dst)], check=True)
    return dst


def test_a_teammate_indexing_the_same_repository_computes_under_5_percent_of_vectors(repo, tmp_path, team):
    for i in range(30):
        body = "\n\n".join(f"def handler_{i}_{j}(request):\n    return request.get('field_{i}_{j}')\n" for j in range(6))
        commit_file(repo, f"pkg/module_{i}.py", body, f"Add module {i}")
    first = Engine(repo).code_index(create=True).update()
    assert first.embedded > 30
    teammate = _copy_repo(repo, tmp_path / "teammate")
    second = Engine(teammate).code_index(create=True).update()
    assert second.chunks >= first.chunks
    assert second.embedded < 0.05 * first.embedded, (second.embedded, first.embedded)
    # The teammate's index is complete: nothing waits for an embedding.
    assert Engine(teammate).code_index().status().embeddings_pending == 0


def test_credentials_are_never_printed_nor_stored(repo, team, s3, capsys):
    secret = TEST_KEYS["AWS_SECRET_ACCESS_KEY"]
    cli = Cli(repo)
    outputs = [cli("remember", "shared fact", "--scope", "team"), cli("stats"), cli("stats", "--json"),
               cli("list", "--json")]
    s3.pause()
    try:
        outputs += [cli("list"), cli("remember", "queued fact", "--scope", "team"), cli("sync")]
    finally:
        s3.resume()
    for _, out, err in outputs:
        assert secret not in out and secret not in err
        assert TEST_KEYS["AWS_ACCESS_KEY_ID"] not in out + err
    assert secret not in (repo / ".cortex" / "team-queue.jsonl").read_text(encoding="utf-8")
    import boto3

    client = boto3.client("s3", endpoint_url=s3.endpoint, region_name="us-east-1")
    bucket = team.split("/")[2]
    for item in client.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        assert secret.encode() not in body and TEST_KEYS["AWS_ACCESS_KEY_ID"].encode() not in body


def test_an_unreachable_team_store_is_one_line_and_local_work_goes_on(repo, team, monkeypatch, capsys):
    monkeypatch.setenv("CORTEX_TEAM_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    cli = Cli(repo)
    assert cli.json("remember", "local still works")["outcome"] == "created"
    code, out, err = cli("remember", "for the team", "--scope", "team")
    assert code == 0 and "queued" in out
    code, out, err = cli("list")
    assert code == 0 and "local still works" in out and "for the team" not in out
    assert err.count("\n") == 1 and "unreachable" in err
    code, out, err = cli("sync")
    assert code == 1 and "still waiting" in out and "\n" not in out.strip()


def test_bench_team_measures_the_team_store_beside_a_local_one(repo, team, capsys):
    rows = Cli(repo).json("bench", "team", "--writes", "3", "--searches", "2")
    assert [r["store"] for r in rows] == ["local", "team"]
    assert rows[1]["uri"].startswith(team + "/bench-") and rows[1]["writes"] == 3 and rows[1]["searches"] == 2


def test_a_team_store_of_an_older_schema_gains_the_new_columns(repo, team):
    # A store written before vectors recorded their model: the same table without the column.
    old = Engine(repo).team_store(create=True)
    old.table.drop_columns(["vector_model"])
    assert "vector_model" not in old.table.schema.names
    engine = Engine(repo)
    memory = engine.remember(MemoryDraft(text="We chose LanceDB as the embedded vector database.", scope="team")).memory
    assert "vector_model" in engine.team_store().table.schema.names
    hits = engine.searcher().search("which storage engine did we pick", signals=("vector",), boost=False).hits
    assert [h.id for h in hits] == [memory.id]


def test_a_machine_that_loses_the_race_to_build_the_full_text_index_leaves_it_to_the_winner(team, s3):
    """Machines sharing a store all build its full-text index after their first writes; the one whose view is
    older than the winner's build must not fail its write for it (the index exists, which was the point)."""
    import pyarrow as pa
    from cortex_tui.core.store.database import Database, RemoteOptions

    options = RemoteOptions(endpoint=s3.endpoint, consistency_s=60.0)  # B's view stays as it was opened
    schema = pa.schema([pa.field("id", pa.string()), pa.field("words", pa.string())])
    a = Database(team, create=True, check=False, remote=options)
    table_a = a.open_table("notes", schema)
    a.add(table_a, pa.table({"id": ["1", "2"], "words": ["deploy the staging cluster", "rotate keys"]}))
    b = Database(team, create=False, check=False, remote=options)
    table_b = b.open_table("notes", schema)
    assert table_b.count_rows() == 2 and table_b.list_indices() == []
    a.ensure_text_indexes(table_a)
    b.ensure_text_indexes(table_b)  # raised "Retryable commit conflict ... preempted by concurrent CreateIndex"
    table_b.checkout_latest()
    assert [tuple(i.columns) for i in table_b.list_indices()] == [("words",)]


def test_a_bucket_whose_region_cannot_be_looked_up_is_unreachable_not_damaged():
    """`cortex --db s3://no-such-bucket/x list` with no network said the database was damaged and sent the user to
    `cortex doctor`; nothing was decided there, the store did not answer. (The text is LanceDB's, as raised.)"""
    from cortex_tui.core.store.failures import is_unreachable, looks_corrupt

    raised = RuntimeError("lance error: LanceError(IO): Generic S3 error: Failed to resolve region for bucket "
                          "'nonexistent-bucket-zz'")
    assert is_unreachable(raised)
    assert looks_corrupt(raised)  # which is why the unreachable check must come first, as it does on open


def test_a_queued_team_write_keeps_the_id_it_was_shown_with(repo, team, s3):
    """A write queued while the store was down printed one id, and `cortex sync` stored it under another: the id
    the user was shown found nothing."""
    cli = Cli(repo)
    assert cli.json("remember", "before the outage", "--scope", "team")["outcome"] == "created"
    s3.pause()
    try:
        queued = cli.json("remember", "typed during the outage", "--scope", "team")
    finally:
        s3.resume()
    assert queued["outcome"] == "queued"
    assert cli.json("sync") == {"sent": 1, "waiting": 0, "error": ""}
    shown = cli.json("show", queued["memory"]["id"])
    assert shown["text"] == "typed during the outage" and shown["store"] == "team"
    assert [m.id for m in _team_memories(team) if m.text == "typed during the outage"] == [queued["memory"]["id"]]


def _server_started_without_credentials(repo: Path, monkeypatch) -> tuple:
    """The repository's resident server, started from an environment without any AWS_* variable (as a shell
    without credentials, or a dashboard opened elsewhere, would start it); the variables are back afterwards.
    Returns its paths and status."""
    from cortex_tui.app.link import connection, protocol

    saved = {name: value for name, value in os.environ.items() if name.startswith("AWS_")}
    for name in saved:
        monkeypatch.delenv(name)
    key = connection.server_key(str(repo), None)
    paths = protocol.server_paths(*key)
    conn = connection.start_server(paths, *key)
    assert conn is not None, "no resident server could be started"
    conn.close()
    for name, value in saved.items():
        monkeypatch.setenv(name, value)
    status = connection.ask(paths, "status")
    assert status is not None
    environ = Path(f"/proc/{status['pid']}/environ").read_bytes()
    assert b"AWS_" not in environ
    return paths, status


def test_team_commands_from_a_shell_with_credentials_work_through_a_server_started_without(repo, team, monkeypatch):
    """The server answered every team command "unreachable" when it was started without credentials, whoever
    asked: each command's credentials are its caller's."""
    from cortex_tui.app.link import connection

    paths, before = _server_started_without_credentials(repo, monkeypatch)
    cli = Cli(repo)
    made = cli.json("remember", "team fact: the deploy window is Tuesday", "--scope", "team")
    assert made["outcome"] == "created" and made["memory"]["store"] == "team"
    assert [m["text"] for m in cli.json("list", "--scope", "team")] == ["team fact: the deploy window is Tuesday"]
    code, out, err = cli("ss", "when is the deploy window")
    assert code == 0 and "(team)" in " ".join(out.split()) and "unreachable" not in err, err
    after = connection.ask(paths, "status")
    assert after["pid"] == before["pid"] and after["commands"] == before["commands"] + 3  # served, by that server
    assert [m.text for m in _team_memories(team)] == ["team fact: the deploy window is Tuesday"]

    # A shell without credentials asks the same server: the team store does not answer it, in one line.
    for name in TEST_KEYS:
        monkeypatch.delenv(name)
    code, out, err = cli("list", "--scope", "team")
    assert "unreachable" in err and len(err.strip().splitlines()) == 1, err
    assert "deploy window" not in out
    assert connection.ask(paths, "status")["pid"] == before["pid"]


def test_a_dashboard_attached_to_a_server_without_credentials_reads_the_team_with_its_own(repo, team, monkeypatch):
    """An attached dashboard's calls run with the attaching process's environment, not the server's."""
    from .conftest import bridge_for

    paths, before = _server_started_without_credentials(repo, monkeypatch)
    # Written by this process's own engine: what is tested is the dashboard's path alone.
    made = Engine(repo, settings=load_settings(use_global=False)).remember(
        MemoryDraft(text="team decision: tabs, not spaces", kind="decision", scope="team"))
    assert made.outcome == "created"
    bridge = bridge_for(repo)
    try:
        assert bridge.memory(made.memory.id).text == "team decision: tabs, not spaces"
        what = bridge.what()
        assert "team decision: tabs, not spaces" in [m.text for m in what.branch_memories + what.recent_memories]
    finally:
        bridge.stop()
    for name in TEST_KEYS:
        monkeypatch.delenv(name)
    with pytest.raises(Exception, match="no memory with id"):
        bridge.memory(made.memory.id)


def test_credentials_stay_out_of_the_servers_log_and_status(repo, team, monkeypatch):
    from cortex_tui.app.link import connection

    paths, _ = _server_started_without_credentials(repo, monkeypatch)
    cli = Cli(repo)
    assert cli.json("remember", "shared through the server", "--scope", "team")["outcome"] == "created"
    code, out, err = cli("serve", "--status")
    status = json.dumps(connection.ask(paths, "status"))
    for secret in (TEST_KEYS["AWS_SECRET_ACCESS_KEY"], TEST_KEYS["AWS_ACCESS_KEY_ID"]):
        assert secret not in out + err + status
        assert secret not in Path(paths.log).read_text(encoding="utf-8")


def test_the_servers_engines_differ_by_credentials_only_where_an_object_store_is_used(repo, monkeypatch):
    """A shell with AWS_* set and no team store shares the server's warm engine; with a team store, each set of
    credentials gets an engine of its own, told apart by a hash that holds none of them."""
    from cortex_tui.app.server.engines import EngineCache

    def settings(**env: str):
        return load_settings({**os.environ, **env}, use_global=False)

    cache = EngineCache()
    try:
        plain = cache(repo, None, settings())
        assert cache(repo, None, settings(**TEST_KEYS)) is plain
        monkeypatch.setenv("CORTEX_TEAM_DB", "s3://team-bucket/cortex")
        keyed = cache(repo, None, settings(**TEST_KEYS))
        other = cache(repo, None, settings(**{**TEST_KEYS, "AWS_SECRET_ACCESS_KEY": "another-secret"}))
        assert keyed is not plain and other is not keyed
        assert cache(repo, None, settings(**TEST_KEYS)) is keyed
        assert keyed.settings.credentials.storage_options("s3://team-bucket/cortex")["aws_secret_access_key"] == \
            TEST_KEYS["AWS_SECRET_ACCESS_KEY"]
        shown = repr(keyed.settings.credentials) + keyed.settings.model_dump_json() + repr(cache._engines.keys())
        assert TEST_KEYS["AWS_SECRET_ACCESS_KEY"] not in shown and TEST_KEYS["AWS_ACCESS_KEY_ID"] not in shown
    finally:
        cache.close()


def test_a_named_profile_of_the_callers_reaches_the_team_store_through_the_server(repo, team, tmp_path, monkeypatch):
    """LanceDB reads AWS_PROFILE only from its own process's environment, which the server's is not: the caller's
    profile crosses as the keys its shared credentials file holds."""
    from cortex_tui.app.link import connection

    paths, before = _server_started_without_credentials(repo, monkeypatch)
    shared = tmp_path / "aws-credentials"
    shared.write_text("[default]\naws_access_key_id = not-this-one\naws_secret_access_key = nor-this\n\n"
                      f"[team]\naws_access_key_id = {TEST_KEYS['AWS_ACCESS_KEY_ID']}\n"
                      f"aws_secret_access_key = {TEST_KEYS['AWS_SECRET_ACCESS_KEY']}\nregion = us-east-1\n",
                      encoding="utf-8")
    for name in TEST_KEYS:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(shared))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_PROFILE", "team")
    made = Cli(repo).json("remember", "kept with the team profile", "--scope", "team")
    assert made["outcome"] == "created" and made["memory"]["store"] == "team"
    assert connection.ask(paths, "status")["pid"] == before["pid"]
    for name, value in TEST_KEYS.items():
        monkeypatch.setenv(name, value)
    assert [m.text for m in _team_memories(team)] == ["kept with the team profile"]


def test_cortex_mcp_attached_to_a_server_without_credentials_writes_to_the_team_with_its_own(repo, team, monkeypatch):
    """A real `cortex mcp` process, started by an agent whose environment has the credentials, attached to a server
    started without them: its tool calls reach the team store, through that server."""
    import asyncio

    from cortex_tui.app.link import connection
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    paths, before = _server_started_without_credentials(repo, monkeypatch)
    env = {k: v for k, v in os.environ.items() if k.startswith(("CORTEX_", "GIT_", "AWS_", "HOME", "PATH"))}

    async def session() -> list:
        params = StdioServerParameters(command=sys.executable, args=["-m", "cortex_tui.app.cli.client", "mcp"],
                                       env=env, cwd=str(repo))
        async with Client(params, read_timeout_seconds=300) as client:
            made = await client.call_tool("remember", {"text": "Agents share this through the team", "scope": "team"})
            assert not made.is_error, made.content
            listed = await client.call_tool("memory_list", {"scope": "team"})
            assert not listed.is_error, listed.content
            return [json.dumps(made.structured_content), json.dumps(listed.structured_content)]

    made, listed = asyncio.run(session())
    assert '"created"' in made and "Agents share this through the team" in listed
    after = connection.ask(paths, "status")
    assert after["pid"] == before["pid"] and after["calls"] >= before["calls"] + 2
    assert [m.text for m in _team_memories(team)] == ["Agents share this through the team"]


def test_a_server_started_from_a_shell_with_credentials_holds_none_of_them(repo, team, monkeypatch):
    """The server is started without object-store variables even by a shell that has them (`start_server` strips
    them): it never answers with its own. The helper above starts it from a shell without any; this one with."""
    from cortex_tui.app.link import connection, protocol

    monkeypatch.setenv("AWS_SESSION_TOKEN", "a-session-token-the-server-must-not-hold")
    assert any(name.startswith("AWS_ACCESS_KEY") for name in os.environ), "the team fixture sets credentials"
    key = connection.server_key(str(repo), None)
    conn = connection.start_server(protocol.server_paths(*key), *key)
    assert conn is not None, "no resident server could be started"
    conn.close()
    status = connection.ask(protocol.server_paths(*key), "status")
    assert status is not None
    assert b"AWS_" not in Path(f"/proc/{status['pid']}/environ").read_bytes()
