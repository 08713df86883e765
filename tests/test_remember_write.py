"""The write a `remember` makes: a new memory is appended (no merge against every stored key), the duplicate rule
reads the text hash through its own index, and an append that landed but looked lost is not stored twice."""

from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft


def _counting(monkeypatch, cls, name: str) -> list[int]:
    """Calls of LanceDB's `cls.name` on the memories table (the embedding cache appends too), passed through."""
    calls: list[int] = []
    real = getattr(cls, name)

    def counted(self, *args, **kwargs):
        if self.name == "memories":
            calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, counted)
    return calls


def test_a_new_memory_is_appended_and_a_repeat_or_new_version_merges(repo, monkeypatch):
    engine = Engine(repo)
    store = engine.store(create=True)
    engine.remember(MemoryDraft(text="warm up the table", source_key="k"))
    table_class = type(store.table)
    merges = _counting(monkeypatch, table_class, "merge_insert")
    appends = _counting(monkeypatch, table_class, "add")
    engine.remember(MemoryDraft(text="the cache keeps five minutes"))
    assert (len(merges), len(appends)) == (0, 1)
    # A repeat refreshes a stored row, a new version supersedes one: both change stored rows, so they merge.
    assert engine.remember(MemoryDraft(text="the cache keeps five minutes")).outcome == "duplicate"
    assert engine.remember(MemoryDraft(text="warm the table first", source_key="k")).outcome == "new_version"
    assert (len(merges), len(appends)) == (2, 1)
    assert store.count() == 3


def test_an_append_that_landed_but_reported_a_conflict_is_not_made_again(repo, monkeypatch):
    engine = Engine(repo)
    store = engine.store(create=True)
    engine.remember(MemoryDraft(text="first note"))
    table_class = type(store.table)
    real = table_class.add
    tries: list[int] = []

    def lands_then_conflicts(self, *args, **kwargs):
        if self.name != "memories":
            return real(self, *args, **kwargs)
        tries.append(1)
        result = real(self, *args, **kwargs)
        if len(tries) == 1:
            raise RuntimeError("lance error: Retryable commit conflict for version 9: another writer")
        return result

    monkeypatch.setattr(table_class, "add", lands_then_conflicts)
    made = engine.remember(MemoryDraft(text="second note")).memory
    assert len(tries) == 1
    assert store.count(f"id = '{made.id}'") == 1


def test_the_duplicate_rule_reads_text_hashes_through_an_index(repo):
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="indexed once written"))
    assert ("text_hash",) in {tuple(i.columns) for i in engine.store().table.list_indices()}
