"""The failures code branches on are told apart by their type, each raised by the real condition: no database yet,
a store that does not answer, a compaction raced by another machine's cleanup. A message with the same words is not
taken for one of them."""

import subprocess
import uuid
import warnings
from datetime import timedelta

import pyarrow as pa
import pytest
from cortex_tui.core.config import load_settings
from cortex_tui.core.doctor import run_doctor
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError, GoneUnderCompaction, NoDatabase, ReadOnlyDatabase, StoreUnreachable
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.store.database import Database, RemoteOptions
from cortex_tui.core.store.failures import is_unreachable, shared_compaction

from .s3server import TEST_KEYS, free_port
from .test_team import s3  # noqa: F401  (a fixture: one moto S3 server for the module)


def test_reads_before_any_database_raise_no_database_by_type(tmp_path):
    engine = Engine(tmp_path, settings=load_settings(use_global=False))
    with pytest.raises(NoDatabase, match="no cortex database"):
        engine.stores()
    with pytest.raises(NoDatabase, match="nothing indexed or remembered yet"):
        engine.search("anything")
    assert engine.what().open_tasks == [] and not engine.has_index()  # the reads that can, answer "nothing yet"
    with pytest.raises(NoDatabase):
        run_doctor(str(tmp_path / ".cortex" / "db"), tmp_path, False, engine.embedder, 1000, "cl100k_base")
    assert not (tmp_path / ".cortex").exists(), "no read made the database"


def test_a_damaged_database_is_not_taken_for_a_missing_one(tmp_path):
    engine = Engine(tmp_path, settings=load_settings(use_global=False))
    engine.remember(MemoryDraft(text="the release runs from the tag", kind="decision"))
    for manifest in (tmp_path / ".cortex" / "db" / "memories.lance" / "_versions").iterdir():
        manifest.unlink()
    with pytest.raises(CortexError) as raised:
        Engine(tmp_path, settings=load_settings(use_global=False)).what()
    assert not isinstance(raised.value, NoDatabase) and "cortex doctor" in str(raised.value)


def test_a_database_made_read_only_refuses_writes_by_type_and_is_read_without_a_code_index(tmp_path):
    settings = load_settings(use_global=False)
    Engine(tmp_path, settings=settings).remember(MemoryDraft(text="prices are cached per region", kind="decision"))
    db = tmp_path / ".cortex" / "db"
    subprocess.run(["chmod", "-R", "a-w", str(db)], check=True)
    try:
        engine = Engine(tmp_path, settings=settings)
        with pytest.raises(ReadOnlyDatabase, match="is read-only"):
            engine.remember(MemoryDraft(text="another note", kind="note"))
        # Its code index's tables were never made and cannot be now: reads go on without them.
        assert not engine.has_index()
        assert [h.memory.text for h in engine.search("cached prices").hits if h.memory] == ["prices are cached per region"]
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(db)], check=True)


def test_a_team_store_on_a_closed_port_is_unreachable_by_type(tmp_path, monkeypatch):
    for key, value in TEST_KEYS.items():
        monkeypatch.setenv(key, value)
    settings = load_settings(use_global=False, team_db="s3://team/cortex", team_endpoint=f"http://127.0.0.1:{free_port()}",
                             remote_timeout_seconds=2)
    engine = Engine(tmp_path, settings=settings)
    with pytest.raises(StoreUnreachable) as raised:
        engine.team_store(create=True)
    assert is_unreachable(raised.value)
    assert str(raised.value) == "store s3://team/cortex is unreachable (connection refused); check the network or " \
                                "the endpoint setting"
    # Reads go on without it; the same words in an error of another type are not taken for it.
    engine.remember(MemoryDraft(text="local work goes on", kind="note"))
    assert [m.text for m in engine.list_memories()] == ["local work goes on"]
    assert engine.team_error == str(raised.value)
    assert not is_unreachable(CortexError(str(raised.value)))


def test_a_compaction_raced_by_another_machines_cleanup_is_gone_by_type(s3, monkeypatch):
    """Two machines on one shared store: A compacts and removes the old versions while B's table is still on one of
    them; B's compaction then finds its data files gone."""
    for key, value in TEST_KEYS.items():
        monkeypatch.setenv(key, value)
    bucket = "gone-" + uuid.uuid4().hex[:10]
    s3.make_bucket(bucket)
    uri = f"s3://{bucket}/db"
    # B reads its version for an hour: nothing makes it look at A's newer ones.
    remote = RemoteOptions(endpoint=s3.endpoint, timeout_s=5, consistency_s=3600)
    machine_a = Database(uri, create=True, remote=remote, check=False)
    table_a = machine_a.conn.create_table("things", schema=pa.schema([("id", pa.string())]))
    for i in range(4):
        table_a.add(pa.table({"id": [str(i)]}))
    machine_b = Database(uri, create=False, remote=remote, check=False)
    table_b = machine_b.conn.open_table("things")
    table_a.add(pa.table({"id": ["late"]}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table_a.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)

    with pytest.raises(GoneUnderCompaction, match=f"store {uri} was compacted by another machine"):
        with shared_compaction(uri):
            machine_b.compact(table_b)
    machine_b.compact_every, machine_b.compact_keep = 1, timedelta(0)
    assert machine_b.compact_if_due(table_b) is False, "left to the machine that did it"
    assert sorted(r["id"] for r in machine_a.conn.open_table("things").to_arrow().to_pylist()) == \
        ["0", "1", "2", "3", "late"]
