"""How a search reads: its queries go to LanceDB's event loop together, and what it rebuilds per search is kept."""

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
    import threading

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
