import os
import stat
import time

import pyarrow as pa
import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.errors import CortexError
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.query import Filters
from cortex_tui.core.store.database import Database
from cortex_tui.core.store.schema import SCHEMA_VERSION, memories_schema

from .conftest import wait_for


def test_memory_records_branch_commit_and_all_fields(repo):
    engine = Engine(repo)
    result = engine.remember(MemoryDraft(text="Use LanceDB as the store", kind="decision", tags=("db",), files=("src/app.py",)))
    m = engine.get(result.memory.id)
    head = engine.git().head
    assert (m.kind, m.branch, m.commit, m.version, m.status, m.scope) == ("decision", "main", head, 1, "active", "repo")
    assert m.tags == ["db"] and m.files == ["src/app.py"] and m.title == "Use LanceDB as the store"
    assert m.created_at == m.updated_at and m.accessed_at >= m.created_at


def test_upsert_by_key_keeps_every_version(repo):
    engine = Engine(repo)
    first = engine.remember(MemoryDraft(text="cache for 5 minutes", source_key="ttl"))
    second = engine.remember(MemoryDraft(text="cache for 10 minutes", source_key="ttl"))
    assert second.outcome == "new_version" and second.memory.version == 2
    versions = engine.history("ttl")
    assert [(v.version, v.status) for v in versions] == [(1, "superseded"), (2, "active")]
    assert [m.id for m in engine.list_memories()] == [second.memory.id]
    assert first.memory.id != second.memory.id


def test_exact_duplicate_is_not_stored_twice_and_refreshes_access(repo):
    engine = Engine(repo)
    a = engine.remember(MemoryDraft(text="same words"))
    b = engine.remember(MemoryDraft(text="same words"))
    assert b.outcome == "duplicate" and b.memory.id == a.memory.id
    assert engine.store().count() == 1
    assert engine.get(a.memory.id).accessed_at > a.memory.accessed_at
    other_scope = engine.remember(MemoryDraft(text="same words", scope="session", session="s1"))
    assert other_scope.outcome == "created"
    assert engine.remember(MemoryDraft(text="same words", scope="session", session="s1")).outcome == "duplicate"
    assert engine.remember(MemoryDraft(text="same words", scope="session", session="s2")).outcome == "created"


def test_soft_delete_hides_and_purge_removes(repo):
    engine = Engine(repo)
    m = engine.remember(MemoryDraft(text="temporary note", source_key="tmp")).memory
    engine.forget(m.id)
    assert engine.list_memories() == [] and engine.get(m.id).status == "deleted"
    engine.forget(key="tmp", purge=True)
    with pytest.raises(CortexError, match="no memory"):
        engine.get(m.id)


def test_tasks_open_and_close(repo):
    engine = Engine(repo)
    task = engine.remember(MemoryDraft(text="write the migration", kind="task")).memory
    assert [t.id for t in engine.list_memories(status="open")] == [task.id]
    engine.set_task_state(task.id, "done")
    assert engine.list_memories(status="open") == [] and [t.id for t in engine.list_memories(status="done")] == [task.id]
    note = engine.remember(MemoryDraft(text="not a task")).memory
    with pytest.raises(CortexError, match="not a task"):
        engine.set_task_state(note.id, "done")


def test_global_scope_lives_in_the_global_store_and_is_listed_with_the_repo(repo, tmp_path):
    engine = Engine(repo)
    g = engine.remember(MemoryDraft(text="I prefer small commits", scope="global")).memory
    r = engine.remember(MemoryDraft(text="this repo uses ruff")).memory
    assert engine.store().count() == 1
    assert {m.id for m in engine.list_memories()} == {g.id, r.id}
    engine.settings.use_global = False
    assert {m.id for m in engine.list_memories()} == {r.id}


@pytest.mark.parametrize(
    "draft, message",
    [
        (MemoryDraft(text="   "), "empty"),
        (MemoryDraft(text="x" * 1_000_001), "limit"),
        (MemoryDraft(text="ok", kind="opinion"), "unknown kind"),
        (MemoryDraft(text="key AKIAABCDEFGHIJKLMNOP here"), "secret"),
    ],
)
def test_bad_memories_are_refused_and_nothing_is_written(repo, draft, message):
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="keep me"))
    with pytest.raises(CortexError, match=message):
        engine.remember(draft)
    assert [m.text for m in engine.list_memories()] == ["keep me"]


def test_cortex_dir_is_excluded_through_info_exclude_only(repo):
    Engine(repo).init()
    Engine(repo).init()
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count("/.cortex/") == 1
    assert not (repo / ".gitignore").exists()
    import subprocess

    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert ".cortex" not in status


def test_newer_schema_is_refused(repo):
    engine = Engine(repo)
    engine.init()
    meta = engine.store().db.conn.open_table("meta")
    meta.update(where="key = 'schema_version'", values={"value": str(SCHEMA_VERSION + 1)})
    with pytest.raises(CortexError, match="newer than this cortex-tui"):
        Engine(repo).list_memories()


def test_older_schema_is_migrated(tmp_path, repo):
    import lancedb

    uri = str(tmp_path / "old-db")
    conn = lancedb.connect(uri)
    conn.create_table("meta", data=[{"key": "schema_version", "value": "0"}])
    old = pa.schema([f for f in memories_schema(384) if f.name not in ("words", "task_state")])
    conn.create_table("memories", schema=old)
    engine = Engine(repo, db=uri)
    engine.remember(MemoryDraft(text="after migration", kind="task"))
    store = engine.store()
    assert store.db.schema_version == SCHEMA_VERSION
    assert {"words", "task_state"} <= set(store.table.schema.names)
    assert Database(uri, create=False).schema_version == SCHEMA_VERSION
    assert engine.list_memories(status="open")[0].text == "after migration"


def test_a_lock_on_a_deleted_repository_never_brings_it_back(repo):
    """A repository deleted while cortex works in it (a watcher's pass, a compaction, a dashboard's call) stays
    deleted: taking a database lock there is a one-line error, not `repo/.cortex/db/` made again."""
    import shutil

    engine = Engine(repo)
    engine.remember(MemoryDraft(text="Invoices are numbered per year", kind="decision"))
    db = engine.store().db
    shutil.rmtree(repo)
    for take in (lambda: db.lock("pass"), lambda: db.try_lock("pass")):
        with pytest.raises(CortexError, match="no longer exists") as caught:
            with take():
                pass
        assert "\n" not in str(caught.value)
    assert not repo.exists()


def test_missing_and_corrupted_databases_give_one_line_errors(repo, tmp_path):
    with pytest.raises(CortexError, match="no cortex database"):
        Engine(repo, db=str(tmp_path / "nowhere")).store()
    broken = tmp_path / "broken"
    (broken / "meta.lance").mkdir(parents=True)
    (broken / "meta.lance" / "_versions").mkdir()
    (broken / "meta.lance" / "_versions" / "1.manifest").write_bytes(b"\x00garbage")
    with pytest.raises(CortexError) as info:
        Engine(repo, db=str(broken)).store()
    assert "\n" not in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_is_a_clear_error(repo, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
    with pytest.raises(CortexError, match="cannot"):
        Engine(repo, db=str(ro / "db")).remember(MemoryDraft(text="x"))


def test_writes_never_compact_and_the_background_compactor_does_once_they_pause(repo):
    """A `remember` on a store due for compaction returns without compacting (a compaction of a 1M-row table took
    minutes inline); the background compactor then compacts it, and `gc` compacts on demand."""
    from datetime import timedelta

    from cortex_tui.core.store.compaction import Compactor

    engine = Engine(repo)
    store = engine.store(create=True)
    store.db.compact_every, store.db.compact_keep = 5, timedelta(0)
    for i in range(12):
        engine.remember(MemoryDraft(text=f"note {i}"))
    piled_up = len(store.table.list_versions())
    assert piled_up > 12
    compactor = Compactor(lambda: [store.db], idle_s=0.2, period_s=30).start()
    try:
        deadline = time.monotonic() + 60
        while compactor.compacted == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        compactor.stop()
    assert compactor.compacted > 0 and len(store.table.list_versions()) <= 3
    assert store.count() == 12
    for i in range(4):
        engine.remember(MemoryDraft(text=f"more {i}"))
    assert engine.gc() > 0 and len(store.table.list_versions()) <= 2
    assert store.count() == 16


def test_a_compactor_never_misses_a_write_because_another_one_woke_for_it():
    """Several compactors in one process (the server's engines): a write noted while one is busy must still wake it
    once it waits again, whatever another compactor did in between (a shared event, cleared by whichever woke
    first, lost it: the busy one then slept for its whole period)."""
    import threading

    from cortex_tui.core.store.compaction import Compactor
    from cortex_tui.core.store.database import Database

    gate = threading.Event()
    looks: list[float] = []
    other_looks: list[float] = []

    def busy_databases():
        looks.append(time.monotonic())
        gate.wait(10)  # busy in its turn (a compaction under way) while the writes below are noted
        return []

    def other_databases():
        other_looks.append(time.monotonic())
        return []

    # A compactor looks at its databases twice a turn (waiting for a pause, then compacting); each takes one turn
    # at its start.
    other = Compactor(other_databases, idle_s=0, period_s=60).start()
    busy = Compactor(busy_databases, idle_s=0, period_s=60).start()
    try:
        assert wait_for(lambda: looks and len(other_looks) >= 2), "the compactors' first turns"
        Database.note_written()
        assert wait_for(lambda: len(other_looks) >= 4), "the other compactor's turn for the first write"
        Database.note_written()  # the other compactor wakes for this one too
        assert wait_for(lambda: len(other_looks) >= 6), "the other compactor's turn for the second write"
        gate.set()
        deadline = time.monotonic() + 10
        while len(looks) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        busy.stop()
        other.stop()
    assert len(looks) >= 4, "the busy compactor's second turn, for the write noted while it was busy, never came"


def test_writes_retry_only_commit_conflicts_and_only_idempotent_commits(tmp_path):
    from cortex_tui.core.store.database import Database
    from cortex_tui.core.store.failures import is_commit_conflict

    db = Database(str(tmp_path / "db"), create=True)
    calls: list[int] = []

    def failing(message: str):
        def fn():
            calls.append(1)
            raise RuntimeError(message)
        return fn

    # An error that merely mentions a commit is not a conflict: it used to be retried six times.
    with pytest.raises(RuntimeError):
        db.write(failing("cannot commit: column type mismatch"))
    assert len(calls) == 1
    conflict = "lance error: Too many concurrent writers. Attempted 10 retries., /root/lance-13.0.0/src/retry.rs:103:9"
    calls.clear()
    with pytest.raises(RuntimeError):
        db.commit(failing(conflict), idempotent=False)  # an append is never repeated
    assert len(calls) == 1
    calls.clear()

    def lands_third_time():
        calls.append(1)
        if len(calls) < 3:
            raise RuntimeError("lance error: Retryable commit conflict for version 7: an update moved the rows")

    db.commit(lands_third_time)
    assert len(calls) == 3
    assert is_commit_conflict(RuntimeError(conflict))
    assert not is_commit_conflict(RuntimeError("lance error: Incompatible transaction: the schema changed"))
    # The table was replaced under the commit (a second creation of a remote table): made again, it applies.
    assert is_commit_conflict(RuntimeError("lance error: Incompatible transaction: This Append transaction is "
                                           "incompatible with concurrent transaction Overwrite at version 2., x.rs:1"))


def test_readers_show_one_active_version_per_key(repo):
    """Two active versions of one key (what two machines writing it at once leave until one settles them) read as
    the one settling keeps: the highest version, then the smallest id."""
    engine = Engine(repo)
    first = engine.remember(MemoryDraft(text="cache for 5 minutes", source_key="ttl")).memory
    other = engine.remember(MemoryDraft(text="cache for 1 minute")).memory
    engine.store().set_source_key(other.id, "ttl")
    store = engine.store()
    assert store.count("status = 'active' AND source_key = 'ttl'") == 2
    assert [m.id for m in store.list() if m.source_key == "ttl"] == [min(first.id, other.id)]
    found = engine.search("cache for minutes", Filters(memories_only=True))
    assert [h.id for h in found.hits if h.memory.source_key == "ttl"] == [min(first.id, other.id)]
    newer = engine.remember(MemoryDraft(text="cache for 10 minutes", source_key="ttl")).memory
    assert [m.id for m in store.list() if m.source_key == "ttl"] == [newer.id]


def test_a_memorys_cache_write_is_held_for_a_batch_by_a_collecting_caller_and_stores_the_same_vector(repo):
    from cortex_tui.core import later

    store = Engine(repo).store(create=True)
    cached = store.vector_cache.table.count_rows
    before = cached()
    with later.collected() as jobs:
        first = store.remember(MemoryDraft(text="compact the cache after the answer"))
    assert jobs == [] and cached() == before, "the resident server commits cache writes in batches"
    vectors = store.vector_cache.get_vectors(store.embedder.model_id, [first.memory.text_hash])
    assert vectors[first.memory.text_hash].tolist() == pytest.approx(first.memory.vector), "found while held"
    store.db.flush_held()  # what the background compactor does when writes pause, and a closing engine
    assert cached() == before + 1
    store.remember(MemoryDraft(text="written at once outside a command"))
    assert cached() == before + 2, "with no collecting caller the cache is written at once"


def test_one_read_finds_both_the_duplicate_text_and_the_keys_versions(repo):
    store = Engine(repo).store(create=True)
    old = store.remember(MemoryDraft(text="retry three times", source_key="retries")).memory
    plain = store.remember(MemoryDraft(text="log every retry")).memory
    results = store.remember_many([
        MemoryDraft(text="retry five times", source_key="retries"),
        MemoryDraft(text="log every retry"),
        MemoryDraft(text="retry three times", source_key="backoff"),
    ])
    assert [r.outcome for r in results] == ["new_version", "duplicate", "created"]
    assert results[0].memory.version == 2 and results[1].memory.id == plain.id
    assert [(m.version, m.status) for m in store.history("retries")] == [(1, "superseded"), (2, "active")]
    assert store.get(old.id).status == "superseded"


def test_access_times_written_off_the_answer_never_wait_for_another_writer(repo):
    """The write of access times off the answer (on a thread a process's exit waits for) takes the write lock only
    if it is free at that moment: while another writer holds it, nothing is written and nothing waits (a script
    ending after a search waited the lock's 30 s), and the batch is written by the next flush."""
    import threading
    from datetime import UTC, datetime
    from pathlib import Path

    from cortex_tui.core.store.commits import file_lock
    from cortex_tui.core.store.database import _LOCK_NAME

    engine = Engine(repo)
    memory_id = engine.remember(MemoryDraft(text="Invoices are numbered per year", kind="decision")).memory.id
    store = engine.store()

    def accessed_at():
        return store.table.search().where(f"id = '{memory_id}'").select(["accessed_at"]).to_list()[0]["accessed_at"]

    before = accessed_at()
    read = datetime.now(UTC)
    with file_lock(Path(store.db.uri), _LOCK_NAME, 5, store.db.uri):  # another writer, as another process holds it
        store.access.seen([memory_id], read)  # due at once: its thread finds the lock taken and leaves the batch
        for thread in threading.enumerate():
            if thread.name == "access-times":
                thread.join()
        assert store.access.flush(wait=False) == 0
    assert accessed_at() == before
    assert store.access.flush(wait=False) == 1
    assert accessed_at() == read


def test_a_long_first_line_is_cut_at_a_word_into_a_title_with_one_ellipsis():
    from cortex_tui.core.store.memory_rows import default_title

    text = "Redirects get followed by Client._send_handling_redirects; follow_redirects defaults to False since 0.20"
    title = default_title(text + "\nmore")
    assert title == "Redirects get followed by Client._send_handling_redirects; follow_redirects…"
    assert default_title("x" * 100) == "x" * 79 + "…" and default_title("short line") == "short line"


def test_a_writes_id_is_found_after_later_writes_rewrite_or_delete_its_rows(repo):
    """The id rides in the rows of the write (same commit); a later write that replaces or deletes them copies it
    into the receipts first, so `receipt` answers the same before and after (core/store/receipts.py)."""
    from cortex_tui.core.agentlog.agentlog import AgentLog  # noqa: F401 - the agent tables are stamped too
    from cortex_tui.core.write_ids import writing_as

    engine = Engine(repo)
    with writing_as("first-write-01"):
        kept = engine.remember(MemoryDraft(text="prices are cached per region", source_key="prices")).memory
    with writing_as("task-write-01"):
        task = engine.remember(MemoryDraft(text="move the cache", kind="task")).memory
    assert engine.receipt("never-written-01") is None
    assert engine.receipt("first-write-01") is not None and engine.receipt("task-write-01") is not None
    with writing_as("second-write-01"):  # a new version rewrites the first one's row (now superseded)
        engine.remember(MemoryDraft(text="prices are cached per region and currency", source_key="prices"))
    with writing_as("done-write-01"):
        engine.set_task_state(task.id, "done")
    with writing_as("forget-write-01"):
        engine.forget(key="prices", purge=True)  # both versions deleted: no row carries either id any more
    assert engine.store().find(kept.id) is None
    for write_id in ("first-write-01", "task-write-01", "second-write-01", "done-write-01", "forget-write-01"):
        assert engine.receipt(write_id) is not None, write_id
    with writing_as("agent-init-01"):
        engine.agent_log(create=True).init("ship the cache")
    with writing_as("agent-step-01"):
        engine.agent_log().log_ota("the cache misses", "", "")
    assert engine.receipt("agent-step-01") is not None
    # The step's mirror memory is a step towards the write, not the write: it carries no id.
    mirrored = [m for m in engine.list_memories(kind="agent") if m.title.startswith("main#1")]
    assert len(mirrored) == 1
    assert engine.store().count("write_id = 'agent-step-01'") == 0


def test_a_time_cutoff_holds_to_the_microsecond(repo):
    """A memory written 2 ms before a cutoff is older than it: cut to the second, the cutoff moved before the write
    whenever both fell in the same second, and an age past which memories go (retention) kept one it should drop."""
    from datetime import timedelta

    engine = Engine(repo)
    written = engine.remember(MemoryDraft(text="the retry loop gives up after five attempts")).memory
    store = engine.store()
    last = max(written.accessed_at, written.updated_at)
    assert [m.id for m in store.unread_since("repo", last + timedelta(milliseconds=2))] == [written.id]
    assert store.unread_since("repo", written.updated_at - timedelta(milliseconds=2)) == []
