"""How a search reads: its queries go to LanceDB's event loop together, and what it rebuilds per search is kept."""

import threading

from cortex_tui.core.engine import Engine
from cortex_tui.core.git.gitctx import read_git_context
from cortex_tui.core.records import MemoryDraft
from cortex_tui.core.search.rank import GitSignals
from cortex_tui.core.store.batch_reads import read_together


def _hand_offs(monkeypatch) -> list[int]:
    """Each time a read waits on LanceDB's background event loop (every step of a synchronous query does): in this
    thread or the engine's read pool, where a search's reads ran before. Not the engine's upkeep threads (the
    compactor after the writes, the access times): counted with them the figure was 8 or 12 where the reads made 1
    (twice in CI)."""

    from lancedb.background_loop import LOOP

    calls: list[int] = []
    real = LOOP.run
    caller = threading.get_ident()

    def counted(future):
        if threading.get_ident() == caller or threading.current_thread().name.startswith("cortex-read"):
            calls.append(1)
        return real(future)

    monkeypatch.setattr(LOOP, "run", counted)
    return calls


def test_queries_read_together_answer_as_each_alone_in_one_hand_off(repo, monkeypatch):
    engine = Engine(repo)
    for text in ("the cache keeps five minutes", "retry the upload twice", "the cache is per user"):
        engine.remember(MemoryDraft(text=text))
    table = engine.store().table
    queries = [table.search().where("text LIKE '%cache%'").select(["id", "text"]).limit(10),
               table.search().where("text LIKE '%upload%'").select(["id"]).limit(10)]
    alone = [q.to_list() for q in queries]
    calls = _hand_offs(monkeypatch)
    assert read_together(queries) == alone
    assert len(calls) == 1


def test_a_search_waits_on_lancedb_half_as_often_as_one_query_at_a_time(repo, monkeypatch):
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="the cache keeps five minutes"))
    engine.code_index(create=True).update(embed=False)
    engine.search("cache minutes")  # first searches open tables and read counts once
    calls = _hand_offs(monkeypatch)
    found = engine.search("cache minutes")
    assert found.hits
    # One query at a time (about seven hand-offs each: the schema three times, the plan, each batch), this search
    # waited 33 times; its candidate reads and the winners' rows now go together.
    assert len(calls) <= 16, len(calls)


def test_the_recent_files_set_is_built_once_per_git_context(repo):
    git = read_git_context(repo, 20)
    assert git.recent_files
    first, second = GitSignals.from_context(git), GitSignals.from_context(git)
    assert first.recent is second.recent
    assert first.recent == frozenset(f.path for f in git.recent_files)


def _reads_by_id_filter(monkeypatch) -> list[str]:
    """The filters of the plain queries LanceDB is asked to run that look rows up by `id IN (...)`."""
    from lancedb.table import AsyncTable

    filters: list[str] = []
    real = AsyncTable._execute_query

    def counted(self, query, **kwargs):
        if isinstance(query.filter, str) and query.filter.lstrip("(").startswith("id IN"):
            filters.append(query.filter)
        return real(self, query, **kwargs)

    monkeypatch.setattr(AsyncTable, "_execute_query", counted)
    return filters


def test_a_search_takes_its_winning_memories_by_row_id_not_by_a_filter_on_id(repo, monkeypatch):
    engine = Engine(repo)
    for text in ("the cache keeps five minutes", "the cache is per user", "retry the upload twice"):
        engine.remember(MemoryDraft(text=text))
    engine.search("cache")
    # That search's access times are written whole-row on a thread of their own, which moves the rows it stamps
    # (new row ids): a search beside it reads what moved by id (the test below), so this one waits for it.
    for thread in threading.enumerate():
        if thread.name == "access-times":
            thread.join()
    filters = _reads_by_id_filter(monkeypatch)
    found = engine.search("cache")
    # With 1,000,000 memories the filter on `id` cost 92 ms of CPU a search, the take by row id 20.
    assert sorted(hit.text for hit in found.hits) == ["the cache is per user", "the cache keeps five minutes"]
    assert filters == []


def test_winners_changed_or_moved_since_they_were_read_are_read_by_id(repo):
    from cortex_tui.core.search.candidates import Candidate
    from cortex_tui.core.search.search import _MEMORY_LIGHT

    engine = Engine(repo)
    ids = [engine.remember(MemoryDraft(text=text)).memory.id
           for text in ("the cache keeps five minutes", "retry the upload twice", "the cache is per user")]
    store, searcher = engine.store(), engine.searcher()
    read = {Candidate.of(0, row["id"]): row for row in store.table.search().select(_MEMORY_LIGHT).to_list()}
    assert searcher._winner_rows({0: ids}, read)[Candidate.of(0, ids[1])]["text"] == "retry the upload twice"
    store.set_source_key(ids[1], "upload-retries")  # rewrites the row: it leaves the row id it was read at
    rows = searcher._winner_rows({0: ids}, read)
    assert {c.id for c in rows} == set(ids)
    assert rows[Candidate.of(0, ids[1])]["source_key"] == "upload-retries"
    store.table.optimize()  # a compaction moves every row
    assert {c.id for c in searcher._winner_rows({0: ids}, read)} == set(ids)


def _full_text_reads(monkeypatch) -> list[tuple[str, list[str]]]:
    """The table and the columns of each full-text query LanceDB is asked to run."""
    from lancedb.table import AsyncTable

    asked: list[tuple[str, list[str]]] = []
    real = AsyncTable._execute_query

    def counted(self, query, **kwargs):
        if query.full_text_query is not None:
            asked.append((self.name, list(query.columns or [])))
        return real(self, query, **kwargs)

    monkeypatch.setattr(AsyncTable, "_execute_query", counted)
    return asked


def test_code_is_searched_without_reading_its_text_and_its_hits_show_it_whole(repo, monkeypatch):
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    engine.search("main entry")  # first searches open tables and read counts once
    asked = _full_text_reads(monkeypatch)
    by_id = _reads_by_id_filter(monkeypatch)
    found = engine.search("main entry")
    code = [hit for hit in found.hits if hit.source == "code"]
    assert [(hit.path, hit.text, hit.tokens > 0) for hit in code[:1]] == [("src/app.py", "def main():\n    return 1\n", True)]
    # The text of every candidate went with the read (21 ms of CPU for 50 chunks at 50,000 files, 9 without it):
    # only the winners' is taken now.
    chunk_reads = [columns for table, columns in asked if table == "chunks"]
    assert chunk_reads and all("text" not in columns and "tokens" not in columns for columns in chunk_reads), chunk_reads
    assert by_id == []  # taken by row id, not read again by `id` (which would show the same hits)


def test_winning_chunks_moved_since_they_were_read_are_read_whole_by_id(repo, monkeypatch):
    from cortex_tui.core.search.candidates import Candidate
    from cortex_tui.core.search.search import _CHUNK_LIGHT

    engine = Engine(repo)
    index = engine.code_index(create=True)
    index.update(embed=False)
    searcher = engine.searcher()
    read = {Candidate.of(None, row["id"]): row for row in index.chunks.search().select(_CHUNK_LIGHT).to_list()}
    ids = [key.id for key in read]
    taken = searcher._winner_rows({None: ids}, read)
    assert "def main():\n    return 1\n" in {row["text"] for row in taken.values()}
    # The rows written again whole, as a re-index of their file writes them: they leave the row ids read.
    rows = index.chunks.search().where("path = 'src/app.py'").to_arrow()
    index.chunks.delete("path = 'src/app.py'")
    index.chunks.add(rows)
    filters = _reads_by_id_filter(monkeypatch)
    moved = searcher._winner_rows({None: ids}, read)
    assert filters
    assert {key: (row["path"], row["text"], row["tokens"]) for key, row in moved.items()} == \
           {key: (row["path"], row["text"], row["tokens"]) for key, row in taken.items()}
