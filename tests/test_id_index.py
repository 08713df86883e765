"""The memories' `id` index keeps covering the table: a read or merge on `id` (every access-time batch, a repeated
`remember`) looks rows up through it instead of scanning every memory."""

from datetime import UTC, datetime

from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft

from .conftest import wait_for

ID_INDEX = "id_idx"


def _id_coverage(store) -> tuple[int, int]:
    stats = store.table.index_stats(ID_INDEX)
    return stats.num_indexed_rows, stats.num_unindexed_rows


def test_upkeep_indexes_every_remembered_id_and_access_times_keep_them(repo):
    engine = Engine(repo)
    ids = [engine.remember(MemoryDraft(text=f"fact number {n} about the cache")).memory.id for n in range(30)]
    store = engine.store()
    store.db.compact_everything()  # what `cortex gc` runs; the server's compactor runs the same optimize
    assert _id_coverage(store) == (30, 0)
    # A search's access-time batch: the memories it showed get their read time, the rest keep their index entries.
    # (The first batch is due at once: it is written on a thread of its own.)
    store.access.seen(ids[:3], datetime(2030, 1, 1, tzinfo=UTC))
    store.access.flush()
    assert wait_for(lambda: store.table.count_rows("accessed_at >= timestamp '2030-01-01 00:00:00'") == 3)
    indexed, unindexed = _id_coverage(store)
    assert unindexed <= 3 and indexed + unindexed == 30
    assert [engine.get(i).accessed_at.year for i in ids[:4]] == [2030, 2030, 2030, engine.get(ids[3]).created_at.year]
    assert engine.get(ids[0]).text == "fact number 0 about the cache" and engine.get(ids[0]).status == "active"
    store.db.compact_everything()
    assert _id_coverage(store) == (30, 0)
