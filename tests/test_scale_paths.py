"""Hot paths that must not grow with the tree or the store: freshness without a listing, batched writes, a
catch-up pass after start-up, an embedding queue fetched batch by batch, a thread-safe engine."""

import os
import threading
import time
from datetime import UTC

import pytest
from cortex_tui.core.engine import Engine
from cortex_tui.core.index.watch import IndexWatcher
from cortex_tui.core.keys import Key

from .conftest import commit_file, wait_for


def many_files(repo, count):
    for i in range(count):
        path = repo / "gen" / f"m{i // 50}" / f"mod_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"def fn_{i}():\n    return {i}\n")


def test_status_reads_the_dirty_set_not_a_listing_once_live(repo):
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    index.go_live()
    before = index.full_listings
    assert index.status().fresh
    (repo / "src/app.py").write_text("def main():\n    return 2\n")
    os.utime(repo / "src/app.py", ns=(1, 1))
    assert index.status().fresh  # nothing reported the save yet: the tree is not listed to find it
    index.mark_dirty(["src/app.py"])
    status = index.status()
    assert (status.stale, status.new, status.removed) == (1, 0, 0)
    (repo / "src/new.py").write_text("x = 1\n")
    index.mark_dirty(["src/new.py"])
    assert index.status().new == 1
    index.update(only=["src/app.py", "src/new.py"], embed=False)
    index.mark_clean(["src/app.py", "src/new.py"])
    assert index.status().fresh
    assert index.full_listings == before
    index.mark_dirty([], git_moved=True)  # after .git moves, freshness needs the whole tree again
    index.status()
    assert index.full_listings == before + 1


def test_watcher_status_lists_the_tree_only_at_start_up(repo):
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    with IndexWatcher(index, embed=False) as watcher:
        assert watcher.ready.wait(10)
        assert wait_for(lambda: index._live)
        before = index.full_listings
        (repo / "src/app.py").write_text("def main():\n    return 'livetoken'\n")
        assert wait_for(lambda: index.chunks.count_rows("text LIKE '%livetoken%'") == 1)
        assert wait_for(lambda: index.status().fresh)
        for _ in range(5):
            index.status()
        assert index.full_listings == before


def test_a_save_during_start_up_indexing_is_caught_up(repo):
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    # Saved after the first index read the file but before any watcher ran (as while embedding at start-up).
    (repo / "src/app.py").write_text("def main():\n    return 'caughtup'\n")
    with IndexWatcher(index, embed=False) as watcher:
        assert watcher.ready.wait(10)
        assert wait_for(lambda: index.chunks.count_rows("text LIKE '%caughtup%'") == 1, 10)
        assert wait_for(lambda: index.status().fresh, 10)


def test_touching_many_unchanged_files_is_one_commit(repo):
    many_files(repo, 300)
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    versions = {name: t.version for name, t in (("files", index.files), ("chunks", index.chunks))}
    for path in (repo / "gen").rglob("*.py"):
        os.utime(path, ns=(time.time_ns(), time.time_ns()))
    report = index.update(embed=False)
    assert report.changed == 0 and report.unchanged >= 300
    assert index.files.version - versions["files"] <= 2
    assert index.chunks.version == versions["chunks"]
    assert index.status().fresh
    # The same through a watcher's scoped update.
    paths = [p.relative_to(repo).as_posix() for p in (repo / "gen").rglob("*.py")]
    for path in paths:
        os.utime(repo / path, ns=(time.time_ns(), time.time_ns()))
    before = index.files.version
    index.update(only=paths, embed=False)
    assert index.files.version - before <= 2


def test_embedding_queue_takes_priority_files_first_in_bounded_batches(repo):
    many_files(repo, 120)
    commit_file(repo, "src/first.py", "def first():\n    return 1\n", "First")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    pending = index.chunks.count_rows("embedded = false")
    assert pending > 100
    assert index.embed_pending(limit=5, priority=["src/first.py"]) == 5
    assert index.chunks.count_rows("embedded = true AND path = 'src/first.py'") >= 1
    assert index.chunks.count_rows("embedded = false") == pending - 5
    assert index.embed_pending() == pending - 5
    assert index.embed_pending() == 0


def test_engine_set_up_is_shared_by_concurrent_threads(repo):
    Engine(repo).code_index(create=True)
    engine = Engine(repo)
    start = threading.Barrier(6)
    seen = []

    def open_index():
        start.wait()
        seen.append(engine.code_index())

    threads = [threading.Thread(target=open_index) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 6 and len({id(i) for i in seen}) == 1


def test_the_graph_reads_the_commit_window_asked_for(repo):
    for i in range(4):
        commit_file(repo, f"src/c{i}.py", f"x = {i}\n", f"Commit {i}")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    assert len(engine.graph(max_commits=1).commits) == 1
    assert len(engine.graph(max_commits=5).commits) == 5


def test_newest_memories_and_stats_agree_with_a_full_read(repo):
    from cortex_tui.core.records import MemoryDraft

    engine = Engine(repo)
    for i in range(12):
        engine.remember(MemoryDraft(text=f"note number {i}", kind="task" if i % 3 == 0 else "note"))
    first = engine.list_memories()[0]
    engine.forget(first.id)
    everything = engine.list_memories()
    assert [m.id for m in engine.list_memories(limit=4)] == [m.id for m in everything[:4]]
    assert [m.id for m in engine.list_memories(limit=4, kind="task")] == [m.id for m in everything if m.kind == "task"][:4]
    (stats,) = [s for s in engine.stats() if s.uri == engine.db_uri]
    assert (stats.memories, stats.active) == (12, 11)
    assert stats.by_kind == {"task": sum(m.kind == "task" for m in everything), "note": sum(m.kind == "note" for m in everything)}
    assert stats.open_tasks == sum(m.is_open_task for m in everything)


def test_import_edges_follow_a_target_file_appearing_and_disappearing(repo):
    commit_file(repo, "pkg/__init__.py", "", "Package")
    commit_file(repo, "a.py", "from pkg import b\n\ndef use():\n    return b.VALUE\n", "Importer")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)

    def imports_of_a():
        (row,) = [r for r in index.files.search().where("path = 'a.py'").select(["imports"]).limit(1).to_list()]
        edges = {r["dst"] for r in index.edges.search().where("kind = 'imports' AND path = 'a.py'").limit(None).to_list()}
        return set(row["imports"] or []), edges

    assert "pkg/b.py" not in imports_of_a()[0]
    (repo / "pkg/b.py").write_text("VALUE = 1\n")
    index.update(only=["pkg/b.py"], embed=False)
    imports, edges = imports_of_a()
    assert "pkg/b.py" in imports and imports == edges
    (repo / "pkg/b.py").unlink()
    index.update(only=["pkg/b.py"], embed=False)
    assert "pkg/b.py" not in imports_of_a()[0] | imports_of_a()[1]
    assert index.status().fresh


def test_timeline_reads_shown_commits_and_newest_loose_memories(repo):
    from cortex_tui.core.graph.timeline import LOOSE_SHOWN, branch_timeline
    from cortex_tui.core.records import MemoryDraft

    engine = Engine(repo)
    made = [engine.remember(MemoryDraft(text=f"note {i}")).memory.id for i in range(LOOSE_SHOWN + 3)]
    commit_file(repo, "src/later.py", "x = 1\n", "Later")
    git_ctx = engine.git(1)  # only the newest commit is shown: every memory, made before it, is loose
    timeline = branch_timeline(git_ctx, engine.stores())
    assert [e.commit.sha for e in timeline.entries] == [git_ctx.commits[0].sha]
    assert [m.id for m in timeline.uncommitted] == made[::-1][:LOOSE_SHOWN]
    wide = branch_timeline(engine.git(5), engine.stores())
    assert sorted(m.id for e in wide.entries for m in e.memories) == sorted(made) and wide.uncommitted == ()
    assert branch_timeline(git_ctx, []).uncommitted == ()


class LanceReads:
    """What LanceDB is asked, counted by wrapping the real library's methods (they still run): row counts, index
    listings, and the rows each query returns, by table."""

    def __init__(self, monkeypatch) -> None:
        from lancedb.query import LanceQueryBuilder
        from lancedb.table import LanceTable

        self.calls: dict[str, int] = {"count_rows": 0, "list_indices": 0}
        self.rows: list[tuple[str, int]] = []
        for name in self.calls:
            monkeypatch.setattr(LanceTable, name, self._counted(name, getattr(LanceTable, name)))
        to_list = LanceQueryBuilder.to_list

        def listed(builder, *args, **kwargs):
            rows = to_list(builder, *args, **kwargs)
            self.rows.append((builder._table.name, len(rows)))
            return rows

        monkeypatch.setattr(LanceQueryBuilder, "to_list", listed)

    def _counted(self, name, method):
        def counted(table, *args, **kwargs):
            self.calls[name] += 1
            return method(table, *args, **kwargs)

        return counted


def test_a_search_asks_for_no_row_counts_or_index_listings(repo, monkeypatch):
    from cortex_tui.core.records import MemoryDraft

    engine = Engine(repo)
    index = engine.code_index(create=True)
    index.update(embed=False)
    index.go_live()
    engine.remember(MemoryDraft(text="The entry point returns one on purpose", kind="decision"))
    # Counts (and the vector check's index listing) are taken once per table version: here, and again after the
    # first search's access-time write made the memories' next version.
    engine.search("entry point")
    # The first search's access times go to a thread of their own, which gives way to a writer holding the lock
    # (leaving them pending): let it end before the flush, or its batch may land during the searches counted.
    for thread in threading.enumerate():
        if thread.name == "access-times":
            thread.join()
    engine.flush_access()
    engine.search("entry point")
    reads = LanceReads(monkeypatch)
    found = [engine.search(q) for q in ("entry point", "main returns", "purpose")]
    assert all(r.hits for r in found) and reads.rows
    assert reads.calls == {"count_rows": 0, "list_indices": 0}


def test_what_reads_no_more_rows_than_it_shows(repo, monkeypatch):
    from cortex_tui.core.records import MemoryDraft

    many_files(repo, 60)
    (repo / "src/util.py").write_text("def helper():\n    return 1\n")
    for i in range(3):
        (repo / f"src/user{i}.py").write_text("from src.util import helper\n")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember_many([MemoryDraft(text=f"item {i} of the backlog", kind="task" if i % 2 else "note")
                          for i in range(60)])
    reads = LanceReads(monkeypatch)
    what = engine.what(per_section=4)
    assert len(what.open_tasks) == 4 and what.branch_memories
    assert what.changed_files[0].path == "src/util.py" and what.changed_files[0].imported_by == 3
    assert reads.rows and max(n for _, n in reads.rows) <= 12, reads.rows


def test_the_working_change_is_read_again_after_a_reported_change_or_staging(repo):
    from .conftest import git

    engine = Engine(repo)
    index = engine.code_index(create=True)
    index.update(embed=False)
    index.go_live()
    # Files written within the index file's timestamp granularity make `git status` rewrite the index (which
    # rightly drops the cache): run it until it leaves the index as it is (within a second or so, as they age).
    index_file = repo / ".git" / "index"

    def settled() -> bool:
        before = index_file.stat().st_mtime_ns
        git(repo, "status", "--porcelain")
        return index_file.stat().st_mtime_ns == before

    assert wait_for(settled), "`git status` keeps rewriting the index"
    engine.git()
    assert engine.git().modified == ()
    (repo / "src/app.py").write_text("def main():\n    return 2\n")
    assert engine.git().modified == ()  # no watcher reported the save yet: `git status` is not run again
    index.mark_dirty(["src/app.py"])
    assert engine.git().modified == ("src/app.py",)
    git(repo, "add", "src/app.py")  # staging moves git's index file, which no watcher event reports
    assert engine.git().staged == ("src/app.py",)
    index.go_offline()
    (repo / "README.md").write_text("# changed\n")
    assert "README.md" in engine.git().modified  # with no watcher, every call reads the working change


class CountingTable:
    """A real LanceDB table that records how many rows each read hands back (the graph reads through
    `search()`; a read that materialised the table would hand back all of it)."""

    def __init__(self, table) -> None:
        self._table = table
        self.reads: list[int] = []

    def __getattr__(self, name):
        return getattr(self._table, name)

    def search(self, *args, **kwargs):
        return _CountingQuery(self._table.search(*args, **kwargs), self.reads)


class _CountingQuery:
    def __init__(self, query, reads: list[int]) -> None:
        self._query, self._reads = query, reads

    def __getattr__(self, name):
        attr = getattr(self._query, name)
        if name in ("to_list", "to_arrow", "to_pandas"):
            def read(*args, **kwargs):
                rows = attr(*args, **kwargs)
                self._reads.append(len(rows))
                return rows
            return read
        if not callable(attr):
            return attr

        def chained(*args, **kwargs):
            out = attr(*args, **kwargs)
            return _CountingQuery(out, self._reads) if hasattr(out, "to_list") else out
        return chained


def test_a_neighbourhood_reads_at_most_its_limit_from_each_table(repo):
    from cortex_tui.core.graph.graph import edges, neighbourhood
    from cortex_tui.core.graph.graph_reads import GraphReads
    from cortex_tui.core.records import MemoryDraft

    commit_file(repo, "src/hub.py", "def hub():\n    return 1\n", "Add hub")
    for i in range(25):
        (repo / "src" / f"user_{i}.py").write_text("from .hub import hub\n")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.remember_many([MemoryDraft(text=f"Note {i}: src/hub.py keeps hub() small.") for i in range(60)])
    store = engine.store()
    store.table = memories = CountingTable(store.table)
    files = CountingTable(engine.code_index().files)
    reads = GraphReads([store], files, engine.graph().commits.values(), limit=10)

    steps = edges(reads, Key.file("src/hub.py"))
    by_edge = {}
    for step in steps:
        by_edge[step.via] = by_edge.get(step.via, 0) + 1
    assert by_edge == {"<-mentions": 10, "<-imports": 10, "<-touched": 1, "defines": 1}
    # Two hops from each kind of node: every node met is expanded too, each through bounded reads.
    for node in ("src/hub.py", "hub", str(steps[0].node)):
        assert len(neighbourhood(reads, node, depth=2, limit=10).neighbours) == 10
    assert memories.reads and files.reads
    assert max(memories.reads + files.reads) <= 10


def _imports(index, path):
    rows = index.files.search().where(f"path = '{path}'").select(["imports"]).limit(1).to_list()
    return set(rows[0]["imports"] or []) if rows else set()


def test_a_watcher_batch_reads_no_whole_files_table_and_import_edges_still_follow(repo, monkeypatch):
    """The indexed paths imports resolve against are kept between batches, not read from the files table per
    batch; a target file appearing through the watcher still gains its importer an edge."""
    many_files(repo, 60)
    commit_file(repo, "pkg/__init__.py", "", "Package")
    commit_file(repo, "a.py", "from pkg import b\n\ndef use():\n    return b.VALUE\n", "Importer")
    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    total = index.files.count_rows()
    with IndexWatcher(index, embed=False) as watcher:
        assert watcher.ready.wait(10) and wait_for(lambda: index._live)  # after the catch-up pass (a full one)
        reads = LanceReads(monkeypatch)
        (repo / "pkg/b.py").write_text("VALUE = 1\n")
        assert wait_for(lambda: "pkg/b.py" in _imports(index, "a.py"))
        (repo / "src/app.py").write_text("from pkg import b\n")
        assert wait_for(lambda: _imports(index, "src/app.py") == {"pkg/__init__.py", "pkg/b.py"})
    files_reads = [n for table, n in reads.rows if table == "files"]
    assert files_reads and max(files_reads) < total / 2, (files_reads, total)


def test_paths_another_process_indexed_reach_the_cached_import_paths(repo):
    """A write to the files table that this index did not make (another process's update) drops the cache."""
    commit_file(repo, "pkg/__init__.py", "", "Package")
    mine = Engine(repo).code_index(create=True)
    mine.update(embed=False)
    mine.update(only=["pkg/__init__.py"], embed=False)  # a batch: the cache is in use from here
    (repo / "pkg/c.py").write_text("VALUE = 3\n")
    Engine(repo).code_index().update(only=["pkg/c.py"], embed=False)
    (repo / "d.py").write_text("from pkg import c\n")
    mine.update(only=["d.py"], embed=False)
    assert "pkg/c.py" in _imports(mine, "d.py")


@pytest.mark.parametrize("small_store", [20_000, 0], ids=["one-read", "time-windows"])
def test_newest_first_reads_agree_whatever_the_store_size(repo, monkeypatch, small_store):
    """A small store is read newest-first in one query; a large one through widening time windows, keys first.
    Both must give the same memories in the same order, including ones only the widest window holds."""
    from datetime import datetime, timedelta

    from cortex_tui.core.records import MemoryDraft
    from cortex_tui.core.store.store import MemoryStore

    monkeypatch.setattr(MemoryStore, "small_store", small_store)
    engine = Engine(repo)
    ids = [engine.remember(MemoryDraft(text=f"note number {i}")).memory.id for i in range(8)]
    store = engine.store()
    now = datetime.now(UTC)
    for i, age in enumerate((400, 40, 10, 2)):  # the first four were last touched days ago
        store.db.update(store.table, f"id = '{ids[i]}'", {"updated_at": now - timedelta(days=age)})
    expected = ids[4:][::-1] + ids[3::-1]
    assert [m.id for m in store.newest("status = 'active'", 6)] == expected[:6]
    assert [m.id for m in store.newest("status = 'active'", 8)] == expected
    assert [m.id for m in store.newest(f"id != '{ids[7]}'", 2)] == expected[1:3]


def test_a_short_symbol_name_defined_everywhere_reads_at_most_the_limit(repo):
    from cortex_tui.core.graph.graph import resolve_node
    from cortex_tui.core.graph.graph_reads import GraphReads

    for i in range(30):
        (repo / "gen" / f"handler_{i}.py").parent.mkdir(exist_ok=True)
        (repo / "gen" / f"handler_{i}.py").write_text("def get():\n    return 1\n")
    (repo / "gen" / "rare.py").write_text("def fetch_rarely():\n    return 2\n")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    files = CountingTable(engine.code_index().files)
    reads = GraphReads([engine.store(create=True)], files, (), limit=10)

    vocab = reads.symbols_named({"get", "fetch_rarely"})
    assert max(files.reads) <= 20  # two names, ten files each at most
    assert len(vocab.defined["fetch_rarely"]) == 1
    assert 3 < len(vocab.defined["get"]) <= 20  # still seen as ambiguous, without reading all 30 files
    assert resolve_node(reads, "fetch_rarely").kind == "symbol"


def test_the_files_table_has_a_path_index_and_no_vector_index_is_tried(repo):
    from cortex_tui.core.store.indexes import ANN_MIN_ROWS

    index = Engine(repo).code_index(create=True)
    index.update(embed=False)
    indexed = {tuple(i.columns): i.index_type for i in index.files.list_indices()}
    assert indexed[("path",)] == "BTree"
    # A table without vectors past the ANN threshold gets no vector index (building one would raise).
    assert ANN_MIN_ROWS > 1
    assert index.db.ensure_search_indexes(index.files, btree=("path",), ann_min_rows=1) is False


def test_searches_prewarm_each_full_text_index_once_it_exists(repo):
    from cortex_tui.core.records import MemoryDraft

    engine = Engine(repo)
    index = engine.code_index(create=True)
    index.update(embed=False)
    engine.remember(MemoryDraft(text="The entry point returns one on purpose"))
    assert engine.search("entry point").hits
    assert wait_for(lambda: {"chunks", "memories"} <= index.db._warm | engine.store().db._warm, 10)
