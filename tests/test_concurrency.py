"""Real processes writing to one database at once lose nothing and never leave two active versions of a key."""

import subprocess
import sys

from cortex_tui.core.engine import Engine

WRITER = """
import sys
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
engine = Engine(sys.argv[1])
name = sys.argv[2]
for i in range(15):
    engine.remember(MemoryDraft(text=f"writer {name} memory {i}"))
    if i % 3 == 0:
        engine.remember(MemoryDraft(text=f"shared key written by {name} at {i}", source_key="shared"))
"""


def test_three_writer_processes_lose_no_rows(repo):
    Engine(repo).init()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo), name], stderr=subprocess.PIPE, text=True) for name in "abc"]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    engine = Engine(repo)
    texts = {m.text for m in engine.list_memories(limit=None) if not m.source_key}
    assert texts == {f"writer {n} memory {i}" for n in "abc" for i in range(15)}
    versions = engine.history("shared")
    assert len(versions) == 15
    assert [v.version for v in versions] == list(range(1, 16))
    assert sum(v.status == "active" for v in versions) == 1


def test_three_first_time_index_runs_at_once_all_succeed(repo, tmp_path):
    """Table creation races: each first run creates the same tables; none may fail with `Table ... was not found`."""
    import shutil

    for trial in range(3):
        shutil.rmtree(repo / ".cortex", ignore_errors=True)
        procs = [subprocess.Popen([sys.executable, "-m", "cortex_tui.app.cli.main", "index", "--no-embed", "-C", str(repo)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, f"trial {trial}: {err}"
        status = Engine(repo).code_index().status()
        assert status.fresh and status.indexed_files == 2


def test_core_imports_without_fcntl():
    """Windows has no fcntl: the engine must import there (the write lock is filelock's)."""
    code = "import sys; sys.modules['fcntl'] = None; import cortex_tui.core.engine, cortex_tui.core.store.database"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_two_lexical_passes_at_once_index_each_file_once(repo):
    """The dashboard's indexing and a selection on a fresh database both start a lexical pass: the second waits
    for the first, saying so, and finds everything indexed, instead of reading and rewriting every file again."""
    import threading
    from collections import Counter

    from cortex_tui.core.store.sql import scan

    for i in range(300):
        path = repo / "pkg" / f"mod{i}.py"
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"def handler_{i}(request):\n    return request.get('item_{i}')\n\n\nclass Model{i}:\n    pass\n")
    engine = Engine(repo)
    index = engine.code_index(create=True)
    start, reports, phases = threading.Barrier(2), [], []

    def one_pass():
        start.wait()
        reports.append(index.update(embed=False, progress=lambda event: phases.append(event.phase)))

    passes = [threading.Thread(target=one_pass) for _ in range(2)]
    for t in passes:
        t.start()
    for t in passes:
        t.join(300)
    assert sorted(r.changed for r in reports) == [0, 302]
    assert phases.count("waiting for another indexing pass") == 1
    rows = {r["path"]: r["chunks"] for r in scan(index.files, None, ["path", "chunks"])}
    chunks = [(r["path"], r["start_line"]) for r in scan(index.chunks, None, ["path", "start_line"])]
    assert len(rows) == 302 and len(chunks) == len(set(chunks))
    assert Counter(path for path, _ in chunks) == {p: n for p, n in rows.items() if n}
