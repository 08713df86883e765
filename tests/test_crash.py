"""Crash injection: real `cortex` processes killed (SIGKILL) right after each commit of an operation, then restarted.

CORTEX_CRASH_AFTER_COMMITS=N makes a process kill itself after its Nth LanceDB commit. Each test prepares a state,
then for N = 1, 2, ... runs the operation on a fresh copy of that state until a run survives (N is past the last
commit), and after every kill checks what a restart finds: a consistent state, nothing acknowledged lost, and a
next run that finishes the job. The next run is a new engine in this process (what a restarted `cortex` opens),
which keeps the suite to one process start per commit boundary.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.store.commits import CRASH_ENV
from cortex_tui.core.store.importer import plan_import
from cortex_tui.core.store.sql import scan

from .conftest import Cli, commit_file

MAX_COMMITS = 20
"""No operation here makes more commits; a run still killed at this N means the loop would never end."""


def cortex(cwd: Path, *args: str, crash_after: int | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, CRASH_ENV: str(crash_after or 0)}
    return subprocess.run([sys.executable, "-m", "cortex_tui.app.cli.main", *args, "-C", str(cwd)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def killed(proc) -> bool:
    return proc.returncode == -signal.SIGKILL


def boundaries(base: Path, work: Path, run: Callable[[Path, int], bool]) -> Iterator[tuple[int, Path]]:
    """Yield (N, copy) for every N at which `run(copy, N)` was killed, each on a fresh copy of `base`."""
    for n in range(1, MAX_COMMITS + 1):
        copy = work / f"n{n}"
        shutil.copytree(base, copy, symlinks=True)
        if not run(copy, n):
            assert n > 1, "the operation made no commit at all"
            return
        yield n, copy
    pytest.fail(f"still killed after {MAX_COMMITS} commits")


def chunk_ids(root: Path) -> dict[str, set[str]]:
    index = Engine(root).code_index()
    out: dict[str, set[str]] = {}
    for row in scan(index.chunks, columns=["path", "id"]):
        out.setdefault(row["path"], set()).add(row["id"])
    return out


def reference_chunks(repo: Path, tmp: Path) -> dict[str, set[str]]:
    """The chunks a clean index of the same tree has (chunk ids depend only on path, lines and content)."""
    db = tmp / "reference-db"
    shutil.rmtree(db, ignore_errors=True)
    Engine(repo, db=str(db)).code_index(create=True).update(embed=False)
    index = Engine(repo, db=str(db)).code_index()
    out: dict[str, set[str]] = {}
    for row in scan(index.chunks, columns=["path", "id"]):
        out.setdefault(row["path"], set()).add(row["id"])
    return out


def assert_index_recovers(copy: Path, expected: dict[str, set[str]]) -> None:
    """After a kill: the index may be behind, but never says fresh while chunks are missing; the next update
    (a new engine, as a restarted process opens it) brings back every file's chunks, and nothing else."""
    status = Engine(copy).code_index().status()
    if status.fresh:
        assert chunk_ids(copy) == expected
    assert status.chunks > 0 or not status.fresh
    Engine(copy).code_index(create=True).update(embed=False)
    assert chunk_ids(copy) == expected
    after = Engine(copy).code_index().status()
    assert after.fresh and after.indexed_files == len(expected)


SOURCES = {
    "pkg/core.py": "def parse(text):\n    return text.split()\n\n\nclass Reader:\n    def read(self):\n        return 1\n",
    "pkg/util.py": "from pkg.core import parse\n\n\ndef words(s):\n    return parse(s)\n",
    "app.js": "export function start() {\n  return 1;\n}\n",
}


@pytest.fixture
def small_repo(empty_repo) -> Path:
    for path, text in SOURCES.items():
        commit_file(empty_repo, path, text, f"Add {path}")
    return empty_repo


def index_pass_killed(proc) -> bool:
    """`cortex index` runs its pass in a child process, which makes the commits: the kill lands there, and the
    command reports it in one line."""
    return killed(proc) or (proc.returncode != 0 and "index pass stopped unexpectedly (exit -9)" in proc.stderr)


def index_killed_at_every_commit_recovers(repo: Path, tmp_path: Path) -> int:
    """Kill `cortex index` after each of its commits in turn, on copies of `repo`; every copy must recover to the
    index a clean run builds. Returns how many commit boundaries were tried."""
    expected = reference_chunks(repo, tmp_path)
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)
    seen = 0
    for _, copy in boundaries(base, tmp_path, lambda c, n: index_pass_killed(cortex(c, "index", "--no-embed", crash_after=n))):
        assert_index_recovers(copy, expected)
        seen += 1
    return seen


def test_fresh_index_killed_at_every_commit_recovers(small_repo, tmp_path):
    Engine(small_repo).init()
    assert index_killed_at_every_commit_recovers(small_repo, tmp_path) >= 5


def test_incremental_index_killed_at_every_commit_recovers(small_repo, tmp_path):
    Engine(small_repo).code_index(create=True).update(embed=False)
    (small_repo / "pkg/core.py").write_text(SOURCES["pkg/core.py"] + "\n\ndef extra():\n    return 2\n", encoding="utf-8")
    (small_repo / "pkg/new.py").write_text("def fresh():\n    return 3\n", encoding="utf-8")
    (small_repo / "app.js").unlink()
    assert index_killed_at_every_commit_recovers(small_repo, tmp_path) >= 3


def _watch_once(copy: Path, n: int) -> bool:
    """Start `cortex watch`, save, add and delete files, and report whether the watcher was killed."""
    # Without the upkeep's compactions (commits too): on a loaded machine the copy's tables had been quiet for
    # `compact_keep`, and a settle pass was the commit that killed the watcher before its watch was in place.
    env = {**os.environ, CRASH_ENV: str(n), "CORTEX_COMPACT_EVERY": "0"}
    proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "watch", "--no-embed", "-C", str(copy)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "watching" in proc.stdout.readline()  # printed once the file system watch is in place
        (copy / "pkg/util.py").write_text(SOURCES["pkg/util.py"] + "\n\ndef more(s):\n    return s\n", encoding="utf-8")
        (copy / "lib.py").write_text("def helper():\n    return 4\n", encoding="utf-8")
        (copy / "app.js").unlink()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return killed(proc)
            status = Engine(copy).code_index().status()
            if status.fresh and status.new == 0:
                time.sleep(0.5)  # let a kill after the last commit happen before calling it survived
                return proc.poll() is not None and killed(proc)
            time.sleep(0.3)
        pytest.fail("the watcher neither updated the index nor died")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail(f"`cortex watch` did not end on Ctrl+C: {proc.communicate()[1][-2000:]}")
        proc.stdout.close()
        proc.stderr.close()


def test_watcher_update_killed_at_every_commit_recovers(small_repo, tmp_path):
    Engine(small_repo).code_index(create=True).update(embed=False)
    base = tmp_path / "base"
    shutil.copytree(small_repo, base, symlinks=True)
    target = tmp_path / "target"
    shutil.copytree(small_repo, target, symlinks=True)
    (target / "pkg/util.py").write_text(SOURCES["pkg/util.py"] + "\n\ndef more(s):\n    return s\n", encoding="utf-8")
    (target / "lib.py").write_text("def helper():\n    return 4\n", encoding="utf-8")
    (target / "app.js").unlink()
    expected = reference_chunks(target, tmp_path)
    seen = 0
    for _, copy in boundaries(base, tmp_path, _watch_once):
        assert_index_recovers(copy, expected)
        seen += 1
    assert seen >= 3


def test_keyed_upsert_killed_at_every_commit_keeps_one_active_version(repo, tmp_path):
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="deploy with make release", source_key="deploy"))
    engine.remember(MemoryDraft(text="an unrelated note that must survive"))
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)
    seen = 0
    run = lambda c, n: killed(cortex(c, "remember", "deploy with make ship", "--key", "deploy", crash_after=n))  # noqa: E731
    for _, copy in boundaries(base, tmp_path, run):
        versions = Engine(copy).history("deploy")
        active = [v for v in versions if v.status == "active"]
        assert len(active) == 1 and active[0].version == max(v.version for v in versions)
        assert {v.text for v in versions} <= {"deploy with make release", "deploy with make ship"}
        assert [m.text for m in Engine(copy).list_memories() if not m.source_key] == ["an unrelated note that must survive"]
        Engine(copy).remember(MemoryDraft(text="deploy with make ship", source_key="deploy"))
        versions = Engine(copy).history("deploy")
        assert [(v.version, v.status, v.text) for v in versions] == [
            (1, "superseded", "deploy with make release"), (2, "active", "deploy with make ship")]
        seen += 1
    assert seen >= 2


def test_import_killed_at_every_commit_is_all_or_nothing(repo, tmp_path):
    Engine(repo).remember(MemoryDraft(text="an acknowledged memory"))
    notes = repo / "notes.md"
    notes.write_text("# One\nfirst imported section\n\n# Two\nsecond imported section\n\n# Three\nthird one\n",
                     encoding="utf-8")
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)
    sections = ("first imported section", "second imported section", "third one")

    def imported(copy: Path) -> list[str]:
        texts = [m.text for m in Engine(copy).list_memories(status="all", limit=None)]
        assert texts.count("an acknowledged memory") == 1
        return sorted(next(s for s in sections if s in t) for t in texts if t != "an acknowledged memory")

    seen = 0
    for _, copy in boundaries(base, tmp_path, lambda c, n: killed(cortex(c, "import", str(c / "notes.md"), crash_after=n))):
        assert imported(copy) in ([], sorted(sections))
        Engine(copy).remember_many(plan_import(copy / "notes.md").drafts)
        assert imported(copy) == sorted(sections)
        seen += 1
    assert seen >= 2


def test_agent_merge_killed_at_every_commit_never_duplicates_steps(repo, tmp_path):
    log = Engine(repo).agent_log(create=True)
    log.init("ship the parser")
    log.log_ota("main starts", "plan", "read code")
    log.branch("feature", "try a faster tokenizer")
    log.log_ota("slow tokenizer", "cache it", "add a cache")
    log.log_ota("cache works", "measure", "bench")
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)

    def merged_state(copy: Path):
        log = Engine(copy).agent_log()
        return log.find_branch("feature").status, log.steps("main"), log.commits("main")

    seen = 0
    for _, copy in boundaries(base, tmp_path, lambda c, n: killed(cortex(c, "agent", "merge", "feature", crash_after=n))):
        status, steps, commits = merged_state(copy)
        copies = [s for s in steps if s.origin]
        if status == "merged":
            assert len(copies) == 2 and [c.kind for c in commits] == ["merge"]
        else:
            assert copies == [] and status == "active"
        if status != "merged":
            Engine(copy).agent_log().merge("feature")
        status, steps, commits = merged_state(copy)
        assert status == "merged"
        assert [(s.n, s.origin) for s in steps] == [(1, ""), (2, "feature#1"), (3, "feature#2")]
        assert [(c.kind, c.steps) for c in commits] == [("merge", (2, 3))]
        merge_memories = Engine(copy).list_memories(tag="agent-commit", status="all", limit=None)
        assert len(merge_memories) == 1
        seen += 1
    assert seen >= 3


_BUSY_AT_EXIT = """
import random, sys, threading, time
import pyarrow as pa
from cortex_tui.core.lancedb_loader import load_lancedb  # LanceDB as cortex imports it: a second less per run
lancedb = load_lancedb()
table = lancedb.connect(sys.argv[1]).create_table("t", pa.table({"id": list(range(100))}), mode="overwrite")

def busy():  # what the compactor, the watcher or a dashboard worker may be doing when the process ends
    n = 0
    while True:
        table.add(pa.table({"id": [n]}))
        table.search().where(f"id = {n}").limit(1).to_list()
        n += 1

threading.Thread(target=busy, daemon=True).start()
time.sleep(random.uniform(0.3, 1.0))
print("leaving", flush=True)
from cortex_tui.app.leave import leave
leave(0)
"""


def test_a_command_ending_while_a_thread_is_inside_lancedb_exits_cleanly(tmp_path):
    """Interpreter shutdown with a daemon thread inside LanceDB aborts the process (SIGABRT) in about one exit in
    seven, or hangs it: Ctrl+C on `cortex watch` or `cortex serve` could hang or dump core. The commands leave
    through `leave`, which no such thread can abort."""
    script = tmp_path / "busy.py"
    script.write_text(_BUSY_AT_EXIT, encoding="utf-8")
    for run in range(20):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / f"db{run}")], capture_output=True,
                              text=True, timeout=120)
        assert (done.returncode, done.stdout) == (0, "leaving\n"), f"run {run}: {done.returncode} {done.stderr[-500:]}"


_LIBRARY_SCRIPT = """
import sys
from cortex_tui.core.engine import Engine
print(Engine(sys.argv[1]).search("invoice numbering").hits[0].text)
"""


def test_a_script_using_the_engine_ends_normally_without_aborting(tmp_path):
    """A program that imports the engine and simply ends (no `leave`): the search's access-time write, started off
    the answer, finishes before the interpreter finalises instead of aborting it (about one run in five did) or
    being dropped (most runs, as a daemon thread)."""
    script = tmp_path / "library.py"
    script.write_text(_LIBRARY_SCRIPT, encoding="utf-8")
    first = tmp_path / "first"
    first.mkdir()
    Engine(first).remember(MemoryDraft(text="Invoices are numbered per year", kind="decision"))
    stamped = _accessed_at(first)
    for pair in range(3):
        places = [tmp_path / f"place{pair}-{n}" for n in range(2)]
        for place in places:
            shutil.copytree(first, place)  # each run stamps its own copy
        runs = [subprocess.Popen([sys.executable, str(script), str(place)], text=True, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE) for place in places]
        for run in runs:
            out, err = run.communicate(timeout=120)
            assert (run.returncode, out) == (0, "Invoices are numbered per year\n"), err[-500:]
        for place in places:
            assert _accessed_at(place) > stamped, "the read's access time was written before the process ended"


def _accessed_at(place: Path):
    return Engine(place).store().table.search().select(["accessed_at"]).to_list()[0]["accessed_at"]


def test_the_installed_commands_leave_that_way():
    """The console scripts are the `run` functions that end in `leave`, not `main` (which tests call in-process)."""
    from importlib.metadata import entry_points

    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name in ("cortex", "cortex-tui")}
    assert scripts == {"cortex": "cortex_tui.app.cli.client:run", "cortex-tui": "cortex_tui.app.tui.main:run"}


@pytest.mark.parametrize("state", ["an empty directory", "a meta table never committed",
                                   "a later table never committed"])
def test_a_first_creation_interrupted_is_finished_by_the_next_command(small_repo, state):
    """A first run killed after `.cortex/db` exists but before its tables are all written (before the meta table,
    or after it, during another table's creation): every next command works (none calls it "not a cortex
    database" or damaged), and `cortex index` finishes the job."""
    db = small_repo / ".cortex" / "db"
    if state == "a later table never committed":  # its transaction written, the process killed before the manifest
        Engine(small_repo).init()
        shutil.rmtree(db / "memories.lance" / "_versions")
        assert (db / "memories.lance" / "_transactions").is_dir()
    db.mkdir(parents=True, exist_ok=True)
    if state == "a meta table never committed":  # its data written, the process killed before the manifest
        (db / "meta.lance" / "data").mkdir(parents=True)
        (db / "meta.lance" / "data" / "0123abcd.lance").write_bytes(b"\0" * 64)
    for args in (("index", "--status"), ("list",), ("search", "parse config"), ("index", "--no-embed"),
                 ("index", "--status")):
        run = cortex(small_repo, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert "not a cortex database" not in run.stderr + run.stdout and "damaged" not in run.stderr, args
    assert Engine(small_repo).code_index().status().fresh


def test_first_indexes_killed_at_random_moments_are_finished_by_the_next_command(small_repo, tmp_path):
    """`cortex index` on a fresh repository, SIGKILLed from outside at random moments of its first run (the
    database directory made, the meta table half written, tables created...): the next status and index work."""
    import random

    rng = random.Random(26)
    outcomes = []
    for attempt in range(8):
        copy = tmp_path / f"kill{attempt}"
        shutil.copytree(small_repo, copy, symlinks=True)
        proc = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "index", "--no-embed", "-C", str(copy)],
                                cwd=copy, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not (copy / ".cortex" / "db").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(rng.uniform(0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcomes.append(sorted(p.name for p in (copy / ".cortex" / "db").glob("*")))
        # The next commands: in this process, as the tests above run them, and in fresh processes the last time
        # (what LanceDB itself writes to the terminal shows there only).
        run = Cli(copy, served=False) if attempt < 7 else lambda *args: _as_tuple(cortex(copy, *args))
        code, _, err = run("index", "--status")
        assert code == 0, (attempt, err)
        assert "not a cortex database" not in err and "damaged" not in err
        assert run("index", "--no-embed")[0] == 0
        assert Engine(copy).code_index().status().fresh
    assert any("meta.lance" not in names for names in outcomes), outcomes  # some kills came before the meta table


def _as_tuple(done: subprocess.CompletedProcess) -> tuple[int, str, str]:
    return done.returncode, done.stdout, done.stderr


def _files_agree(copy: Path) -> None:
    from cortex_tui.core.agentlog.agentlog_files import read_agent_dir

    log = Engine(copy).agent_log()
    assert read_agent_dir(copy / ".cortex" / "agent")[1] == log._held()


@pytest.mark.parametrize("operation", [("log", "--obs", "killed mid-step", "--action", "retry"),
                                       ("commit", "killed mid-commit", "--roadmap", "then ship"),
                                       ("roadmap", "then ship the lexer"),
                                       ("branch", "try-fast", "a faster tokenizer"),
                                       ("switch", "feature"),
                                       ("merge", "feature"),
                                       ("abandon", "feature")], ids=lambda op: op[0])
def test_agent_files_agree_with_the_store_after_a_kill_at_every_commit_and_file(repo, tmp_path, operation):
    """Every agent operation killed after each of its store commits and each file it renames: the next operation
    (a new step), or a read, leaves the live files saying exactly what the store holds."""
    log = Engine(repo).agent_log(create=True)
    log.init("ship the parser")
    log.log_ota("main starts", "plan", "read code")
    log.branch("feature", "cache the tokenizer")
    log.log_ota("slow tokenizer", "cache it", "add a cache")
    log.switch("main")
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)
    seen = 0
    for n, copy in boundaries(base, tmp_path, lambda c, n: killed(cortex(c, "agent", *operation, crash_after=n))):
        after = Engine(copy).agent_log()
        if operation[0] == "merge" and after.find_branch("feature").status != "merged":
            # A merge stopped before its merge commit keeps the copied steps hidden (the store's own view, which
            # the files show) until it is run again, which is what finishes it.
            after.merge("feature")
        elif n % 2:
            after.log_ota("after the kill", "", "go on")
        else:
            after.context()
        _files_agree(copy)
        seen += 1
    assert seen >= 2, "killed between the store's commits and the files' renames"


def test_a_contexa_import_killed_at_every_commit_is_finished_by_importing_again(repo, tmp_path):
    """`cortex agent import .GCC` killed after each commit: the database holds part of it (or all), importing again
    adds only the rest, and the result is what one uninterrupted import gives, files included."""
    from .test_agent_files import contexa_workspace

    contexa_workspace(repo)
    Engine(repo).agent_log(create=True)  # the database and its tables, as a repository cortex already knows has them
    base = tmp_path / "base"
    shutil.copytree(repo, base, symlinks=True)
    whole = tmp_path / "whole"
    shutil.copytree(repo, whole, symlinks=True)
    Engine(whole).agent_log(create=True).import_(whole)
    expected = Engine(whole).agent_log()._held()
    seen = 0
    for n in range(1, 40, 3):  # every third commit: the import makes some 20
        copy = tmp_path / f"n{n}"
        shutil.copytree(base, copy, symlinks=True)
        if not killed(cortex(copy, "agent", "import", ".GCC", crash_after=n)):
            break
        # What the crash left is read like any context (stopped after the branches: no roadmap yet) before the
        # import is run again.
        read = cortex(copy, "agent", "branches")
        assert read.returncode == 0 and "Traceback" not in read.stderr, read.stderr
        log = Engine(copy).agent_log(create=True)
        log.import_(copy / ".GCC")
        assert log._held() == expected
        assert len(Engine(copy).list_memories(tag="agent-step", status="all", limit=None)) == 5, "no memory made twice"
        _files_agree(copy)
        seen += 1
    assert seen >= 4
