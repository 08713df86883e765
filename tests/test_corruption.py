"""Corruption scenarios on a populated database: the damage is found, said in one line by the commands that meet
it, and `cortex doctor` keeps every row it can read and names what it could not.

Each test copies one database (a small indexed repository with 22 memories, each its own commit), damages it with
real file operations, and runs the real `cortex` on it: served (the default path) or in this process
(`--no-daemon`, as `Cli(served=False)` does).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft

from .conftest import Cli, commit_file, copy_of, git, own_stores

MEMORIES = 22
FILES = {f"pkg/mod{i}.py": f"def handler_{i}(request):\n    return 'answer {i}'\n" for i in range(6)}


@pytest.fixture(scope="session")
def _populated(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("populated")
    repo = base / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for path, text in FILES.items():
        commit_file(repo, path, text, f"Add {path}")
    with own_stores(base):
        engine = Engine(repo)
        engine.code_index(create=True).update()
        for i in range(MEMORIES):
            engine.remember(MemoryDraft(text=f"decision {i}: the handler {i} answers in under {i + 1} ms"))
        engine.close()
    return repo


@pytest.fixture
def populated(_populated, tmp_path) -> Path:
    return copy_of(_populated, tmp_path)


def db_of(repo: Path) -> Path:
    return repo / ".cortex" / "db"


def texts(repo: Path) -> set[str]:
    return {m.text for m in Engine(repo).list_memories()}


def all_texts() -> set[str]:
    return {f"decision {i}: the handler {i} answers in under {i + 1} ms" for i in range(MEMORIES)}


def data_files(db: Path, table: str) -> list[Path]:
    return sorted((db / f"{table}.lance" / "data").glob("*.lance"), key=lambda p: p.stat().st_mtime_ns)


def one_line_error(code: int, err: str, *words: str) -> None:
    """A command that met damage: non-zero, one line, no traceback or Rust panic, and the words asked for."""
    lines = err.strip().splitlines()
    assert code != 0 and len(lines) == 1, err
    assert "Traceback" not in err and "panicked at" not in err and "RUST_BACKTRACE" not in err, err
    for word in words:
        assert word in err, err


def healthy(cli: Cli) -> None:
    code, out, err = cli("doctor")
    assert code == 0 and "nothing to repair" in out, out + err


def compact(repo: Path) -> None:
    """All of a table's rows in one data file, as an older database has them (`cortex gc`)."""
    code, _, err = Cli(repo, served=False)("gc")
    assert code == 0, err
    assert len(data_files(db_of(repo), "memories")) >= 1


# --- 1. garbage written into the memories data file ---------------------------------------------------------------

def test_garbage_in_the_memories_data_file_is_found_and_the_vectors_made_again(populated):
    """4 kB of garbage over the vectors: the file still reads, its vectors are NaN. Searches that meet them fail in
    one line, doctor finds them, and after `cortex index` every memory is found by meaning again."""
    compact(populated)
    db = db_of(populated)
    target = Engine(populated).store().table.to_arrow()
    vector = np.asarray(target["vector"][5].as_py(), dtype=np.float32).tobytes()
    [path] = [p for p in data_files(db, "memories") if vector in p.read_bytes()]
    at = path.read_bytes().index(vector)
    with open(path, "r+b") as f:
        f.seek(at)
        f.write(b"\xff" * 4096)  # NaN as float32
    cli = Cli(populated, served=False)
    code, _, err = cli("ss", "handler answers")
    one_line_error(code, err, "damaged", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0, err
    assert re.search(r"memories: \d+ vector\(s\) not finite or not 384 numbers long; marked to be embedded again",
                     out), out
    assert cli("index")[0] == 0
    healthy(cli)
    assert texts(populated) == all_texts()
    code, out, err = cli("ss", "handler 5 answers")
    assert code == 0 and "decision 5" in out, err


# --- 2. a table's index folder deleted ----------------------------------------------------------------------------

@pytest.mark.parametrize("table", ["memories", "chunks"])
def test_index_folders_deleted_are_said_by_every_read_and_rebuilt(populated, table):
    shutil.rmtree(db_of(populated) / f"{table}.lance" / "_indices")
    cli = Cli(populated, served=False)
    for command in (("search", "handler answers"), ("ss", "handler answers")):
        one_line_error(*cli(*command)[::2], "damaged", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0 and f"{table}: index " in out and "rebuilt" in out, out + err
    healthy(cli)
    code, out, err = cli("search", "handler 3")
    assert code == 0 and "handler" in out, err
    assert texts(populated) == all_texts()


# --- 3. the memories data truncated, or its versions deleted ------------------------------------------------------

def test_a_truncated_data_file_keeps_every_readable_row_of_the_versions_after_it(populated):
    """The data file of the 11th of 22 memories cut to half: every command that reads memories says the database is
    damaged (never "no memories yet"); doctor goes back to the version before that write and keeps the 11 memories
    written after it, from the newest version's readable files: one memory is lost, and said to be."""
    db = db_of(populated)
    [damaged] = [p for p in data_files(db, "memories") if b"decision 10: the handler 10" in p.read_bytes()]
    with open(damaged, "r+b") as f:
        f.truncate(damaged.stat().st_size // 2)
    cli = Cli(populated, served=False)
    for command in (("list",), ("what",), ("stats",), ("search", "handler")):
        code, out, err = cli(*command)
        assert "no memories yet" not in out + err
        one_line_error(code, err, "damaged", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0, err
    said = [line for line in out.splitlines() if line.startswith("memories: restored version")]
    assert len(said) == 1 and "and 11 readable row(s) of version" in said[0], out
    assert said[0].endswith("(21 rows); lost 1 row(s) (in damaged data files; their keys could not be read)"), out
    assert texts(populated) == all_texts() - {"decision 10: the handler 10 answers in under 11 ms"}
    healthy(cli)
    assert cli("remember", "writes work after the repair")[0] == 0
    code, out, err = cli("search", "handler 15 answers")
    assert code == 0 and "decision 15" in out, err


def test_the_single_data_file_truncated_after_compaction_is_said_lost_and_kept_aside(populated):
    """Compaction wrote every row into one file and removed the versions before it; that file cut to half holds
    nothing Lance can read. Before doctor, `what` says the database is damaged (it said "no memories yet");
    doctor keeps the files aside and says how many rows were lost."""
    compact(populated)
    db = db_of(populated)
    path = max(data_files(db, "memories"), key=lambda p: p.stat().st_size)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)
    cli = Cli(populated, served=False)
    code, out, err = cli("what")
    assert "no memories yet" not in out + err
    one_line_error(code, err, "damaged", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0, out + err
    said = [line for line in out.splitlines() if line.startswith("memories: ")]
    assert len(said) == 1 and re.search(r"none of its \d+ versions reads whole", said[0]) and ".doctor" in said[0], out
    kept, lost = map(int, re.search(r"starts with the (\d+) row\(s\) that read; lost (\d+) row\(s\)", said[0]).groups())
    assert kept + lost == MEMORIES and lost >= MEMORIES // 2 and len(texts(populated)) == kept
    healthy(cli)
    assert cli("remember", "writes work after the repair")[0] == 0


@pytest.mark.parametrize("served", [True], ids=["served"])
def test_served_commands_read_the_repaired_table_after_doctor(populated, served):
    """The resident server had the memories table open when doctor set its files aside and made it again: every
    served command then said "the database is damaged (… Not found …); run `cortex doctor`", and doctor said
    "nothing to repair". Doctor stops the server after a repair, and the next command starts one on the new table."""
    compact(populated)
    _truncate_the_largest(db_of(populated))
    cli = Cli(populated, served=served)
    code, _, err = cli("list")  # the server opens the table, and its read meets the damage
    one_line_error(code, err, "damaged", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0 and "none of its" in out, out + err
    kept = int(re.search(r"starts with the (\d+) row\(s\) that read", out).group(1))
    code, out, err = cli("list")
    assert code == 0 and "damaged" not in out + err, out + err
    assert len(out.strip().splitlines()) == kept or (kept == 0 and "no memories yet" in out), out
    assert cli("remember", "writes work after the repair")[0] == 0
    healthy(cli)


@pytest.mark.parametrize("served", [False, True], ids=["in-process", "served"])
def test_deleted_versions_are_reported_and_every_row_read_from_the_data_files(populated, served):
    """`_versions` deleted: no manifest says which data files make the table. Commands say so in one line (`what`
    answered "no memories yet"); doctor reads the rows from the data files themselves (it set them aside and
    started the table empty) and keeps the files aside."""
    db = db_of(populated)
    shutil.rmtree(db / "memories.lance" / "_versions")
    cli = Cli(populated, served=served)
    for command in (("list",), ("what",)):
        code, out, err = cli(*command)
        assert "no memories yet" not in out + err
        one_line_error(code, err, "damaged", "`cortex doctor`")
    files = len(data_files(db, "memories"))
    code, out, err = cli("doctor")
    assert code == 0, err
    said = [line for line in out.splitlines() if line.startswith("memories: ")]
    assert len(said) == 1 and said[0].startswith("memories: no manifest names its data files; read from them "
                                                 f"directly, it starts with {MEMORIES} row(s)"), out
    assert f"its files ({files} data file(s), " in said[0] and ".doctor" in said[0] and "lost" not in said[0], out
    assert texts(populated) == all_texts()
    healthy(cli)
    assert cli("remember", "writes work after the repair")[0] == 0
    code, out, err = cli("ss", "handler 15 answers")
    assert code == 0 and "decision 15" in out, err


def _ids(repo: Path) -> dict[str, str]:
    return {m.id: m.text for m in Engine(repo).list_memories()}


def _truncate_the_largest(db: Path) -> None:
    path = max(data_files(db, "memories"), key=lambda p: p.stat().st_size)
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size // 2)


@pytest.mark.parametrize("versions", ["kept", "deleted"])
def test_rows_whose_id_column_is_lost_are_named_by_the_id_index(populated, versions):
    """After `cortex gc` the memories are in one data file and the id index holds every id. That file cut to half
    loses its footer, so not even its id column reads: doctor named none of the lost rows (with `_versions` deleted
    too, it kept none of them). The id index names them, found through the manifest or, with none left, by its
    values (gc's cleanup removed the transaction that built it)."""
    compact(populated)
    before = _ids(populated)
    db = db_of(populated)
    _truncate_the_largest(db)
    if versions == "deleted":
        shutil.rmtree(db / "memories.lance" / "_versions")
    cli = Cli(populated, served=False)
    code, out, err = cli("doctor")
    assert code == 0, out + err
    [said] = [line for line in out.splitlines() if line.startswith("memories: ")]
    kept = _ids(populated)
    lost = sorted(set(before) - set(kept))
    assert kept.items() <= before.items() and len(lost) >= MEMORIES // 2, out
    assert ", ".join(lost) in said and "named by the index on id" in said, said
    if versions == "kept":
        assert f"lost {len(lost)} row(s): " in said and "could not be read" not in said, said
    else:
        assert f"it starts with {len(kept)} row(s)" in said and f"their rows are lost, {len(lost)} of them named" in said
    healthy(cli)


def test_deleted_versions_and_an_unreadable_file_with_no_index_say_the_rows_are_lost_unnamed(populated):
    """Without `cortex gc` the id index holds the first memory's id only: a truncated file's rows cannot be named,
    and the line says so plainly; every other row is kept."""
    db = db_of(populated)
    [damaged] = [p for p in data_files(db, "memories") if b"decision 10: the handler 10" in p.read_bytes()]
    with open(damaged, "r+b") as f:
        f.truncate(damaged.stat().st_size // 2)
    shutil.rmtree(db / "memories.lance" / "_versions")
    cli = Cli(populated, served=False)
    code, out, err = cli("doctor")
    assert code == 0, out + err
    [said] = [line for line in out.splitlines() if line.startswith("memories: ")]
    assert f"it starts with {MEMORIES - 1} row(s)" in said, said
    assert "1 data file(s) did not read" in said and "how many, and which, is unknown" in said, said
    assert texts(populated) == all_texts() - {"decision 10: the handler 10 answers in under 11 ms"}
    healthy(cli)


# --- 4. the newest manifest deleted, then one more write ----------------------------------------------------------

def test_a_write_after_a_lost_manifest_is_reported(populated):
    """A memory's commit loses its manifest, then `remember` again: the new write takes the lost version's number,
    so nothing names a version beyond the manifests and doctor said "nothing to repair" while the memory was gone.
    The lost write's transaction, named by no manifest, and its data file say it; both are set aside, and the
    memory it held is named by id."""
    db = db_of(populated)
    cli = Cli(populated, served=False)
    code, out, _ = cli("remember", "the release moved to friday")
    assert code == 0
    lost_id = re.search(r"remembered ([0-9a-f]{12})", out).group(1)
    versions = db / "memories.lance" / "_versions"
    min(versions.glob("*.manifest"), key=lambda p: int(p.stem)).unlink()  # `u64::MAX - version`: the newest
    _age(db / "memories.lance")
    assert cli("remember", "written after the manifest was lost")[0] == 0
    assert "the release moved to friday" not in texts(populated)
    code, out, err = cli("doctor")
    assert code == 0, err
    lost = [line for line in out.splitlines() if line.startswith("LOST")]
    assert len(lost) == 1 and lost[0].startswith("LOST     memories: 1 write(s) in no version (made "), out
    assert lost[0].endswith("1 data file(s), " + lost[0].rsplit(", ", 1)[1]), out
    assert "memories: 1 write(s) in no version are lost" in out and "nothing to repair" not in out, out
    assert f"the rows they held (id): {lost_id};" in out, out  # named by id, read from its data file
    aside = list((db / ".doctor" / "memories" / "data").glob("*.lance"))
    assert len(aside) == 1 and b"the release moved to friday" in aside[0].read_bytes()
    healthy(cli)
    assert texts(populated) == all_texts() | {"written after the manifest was lost"}


def _age(folder: Path) -> None:
    """A table's files two minutes old: a transaction younger than a minute may be a commit under way."""
    for path in [*(folder / "_transactions").glob("*.txn"), *(folder / "data").glob("*.lance"),
                 *(folder / "_versions").glob("*.manifest")]:
        st = path.stat()
        os.utime(path, (st.st_atime - 120, st.st_mtime - 120))


# --- 5. meta deleted ----------------------------------------------------------------------------------------------

def test_a_deleted_meta_table_is_refused_by_writes_and_rebuilt_by_doctor(populated):
    db = db_of(populated)
    before = {r["key"]: r["value"] for r in Engine(populated).store().db.conn.open_table("meta").to_arrow().to_pylist()}
    shutil.rmtree(db / "meta.lance")
    cli = Cli(populated, served=False)
    one_line_error(*cli("list")[::2], "`cortex doctor`")
    one_line_error(*cli("remember", "a write on a database without meta")[::2], "`cortex doctor`")
    assert not (db / "meta.lance").exists()
    code, out, err = cli("doctor")
    assert code == 0 and "meta:" in out, out + err
    import lancedb

    after = {r["key"]: r["value"] for r in lancedb.connect(str(db)).open_table("meta").to_arrow().to_pylist()}
    assert after == before
    status = Engine(populated).code_index().status()
    assert status.fresh and status.indexed_files == len(FILES)
    assert texts(populated) == all_texts()
    healthy(cli)


# --- 6. the owner made the database read-only ---------------------------------------------------------------------

def test_a_database_its_owner_made_read_only_stays_so_and_doctor_checks_it(populated):
    db = db_of(populated)
    modes = {}
    for path in [db, *db.rglob("*")]:
        modes[path] = stat.S_IMODE(path.stat().st_mode) & ~0o222
        path.chmod(modes[path])
    try:
        cli = Cli(populated, served=False)
        code, _, err = cli("remember", "a write on a read-only database")
        assert code != 0 and "read-only" in err and len(err.strip().splitlines()) == 1, err
        code, out, err = cli("doctor")
        assert code == 0 and "nothing to repair" in out and "read-only" in err, out + err
        assert all(stat.S_IMODE(p.stat().st_mode) == m for p, m in modes.items())
        assert texts(populated) == all_texts()
    finally:
        for path in [db, *db.rglob("*")]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o200)


def test_doctor_on_a_damaged_read_only_database_says_what_it_found_and_writes_nothing(populated):
    db = db_of(populated)
    shutil.rmtree(db / "memories.lance" / "_indices")
    for path in [db, *db.rglob("*")]:
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    try:
        code, out, err = Cli(populated, served=False)("doctor")
        assert code != 0 and "read-only" in out + err, out + err
        assert "memories: index words_idx" in out and "not repaired" in out, out
        assert not (db / "memories.lance" / "_indices").exists()
    finally:
        for path in [db, *db.rglob("*")]:
            path.chmod(stat.S_IMODE(path.stat().st_mode) | 0o200)


# --- 7. garbage in the chunks data file ---------------------------------------------------------------------------

@pytest.mark.parametrize("served", [False, True], ids=["in-process", "served"])
def test_zeros_over_the_chunks_data_file_make_lance_panic_said_in_one_line(populated, served):
    """256 zero bytes a little after the first page of the code index's data file (its language column) make
    Lance's decoder index out of range, a Rust panic. A command meeting it says the database is damaged in one line,
    and doctor reports it in one line too, with no Rust backtrace, and rebuilds the code index from the work tree."""
    db = db_of(populated)
    assert Cli(populated, served=False)("gc")[0] == 0
    path = max(data_files(db, "chunks"), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    at = data.index(b"python") + 256
    data[at:at + 256] = bytes(256)
    path.write_bytes(bytes(data))
    cli = Cli(populated, served=served)
    for command in (("search", "handler answer"), ("context", "change handler_3")):
        one_line_error(*cli(*command)[::2], "the database is damaged", "panicked", "`cortex doctor`")
    code, out, err = cli("doctor")
    assert code == 0, out + err
    assert "Traceback" not in out + err and "panicked at" not in out + err and "RUST_BACKTRACE" not in err, out + err
    assert re.search(r"DAMAGED  chunks: .*panicked", out), out
    assert "code index: unreadable; rebuilt from the work tree" in out, out
    code, out, err = cli("index")
    assert code == 0, err
    healthy(cli)
    code, out, err = cli("search", "handler_3")
    assert code == 0 and "mod3.py" in out, out + err


def test_doctor_in_its_own_process_prints_no_rust_panic(populated):
    """The panic hook writes to the process's own standard error: `cortex --no-daemon doctor` run as a user runs it."""
    import subprocess
    import sys

    db = db_of(populated)
    assert Cli(populated, served=False)("gc")[0] == 0
    path = max(data_files(db, "chunks"), key=lambda p: p.stat().st_size)
    data = bytearray(path.read_bytes())
    at = data.index(b"python") + 256
    data[at:at + 256] = bytes(256)
    path.write_bytes(bytes(data))
    cortex = Path(sys.executable).parent / "cortex"
    run = subprocess.run([str(cortex), "--no-daemon", "-C", str(populated), "doctor"],
                         capture_output=True, text=True, env={**os.environ, "RUST_BACKTRACE": "1"})
    assert run.returncode == 0, run.stderr
    assert "panicked at" not in run.stderr and "stack backtrace" not in run.stderr, run.stderr
    assert re.search(r"DAMAGED  chunks: .*panicked", run.stdout), run.stdout


def test_a_panics_block_is_left_out_and_other_lines_kept():
    from cortex_tui.core.store.rust_panics import without_panics

    text = ("[2026-11-29T04:16:04Z WARN  lancedb::table] kept before\n"
            "thread 'lancedb-tokio-worker' (11904) panicked at lance-encoding/src/primitive.rs:3929:65:\n"
            "range end index 833601624 out of range for slice of length 207216\n"
            "stack backtrace:\n"
            "   0: __rustc::rust_begin_unwind\n"
            "             at /rustc/library/std/src/panicking.rs:697:5\n"
            "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.\n"
            "thread '<unnamed>' panicked at src/reader.rs:10:5:\n"
            "called `Option::unwrap()` on a `None` value\n"
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n"
            "cortex: note: kept after\n")
    assert without_panics(text) == ("[2026-11-29T04:16:04Z WARN  lancedb::table] kept before\n"
                                    "cortex: note: kept after\n")
