"""After a change of embedding model: the memories another model embedded, embedded again by the current one.

Search finds those memories by full text meanwhile (see `MemoryStore.stale_vectors`); background workers call this.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from .memory_rows import default_title
from .sql import in_filter
from .store import MemoryStore

REEMBED_BATCH = 128
"""Memories embedded again per commit after a model change: about 3-10 s of CPU here, so a stop is quick."""


def reembed(store: MemoryStore, batch: int = REEMBED_BATCH, should_stop: Callable[[], bool] | None = None) -> int:
    """Embed again, with the current model, memories another model embedded; returns how many. Vectors this model
    made before come from the cache. Each batch is its own commit, so a stop loses at most one batch."""
    embedder, table = store.embedder, store.table
    done = 0
    seen: set[str] = set()
    while not (should_stop and should_stop()):
        rows = table.search().where(store.stale_where()).select(["id", "title", "text"]).limit(batch).to_list()
        # A row stale again after its write: a process running the other model wrote it meanwhile. Leave the two
        # to settle on their next runs rather than trade the same rows back and forth here.
        rows = [r for r in rows if r["id"] not in seen]
        if not rows:
            break
        seen.update(r["id"] for r in rows)
        # The text embedded when the memory was written: its title only when one was given (not the default).
        texts = [r["text"] if r["title"] in ("", None, default_title(r["text"])) else f"{r['title']}\n{r['text']}"
                 for r in rows]
        vectors, _ = embedder.embed(texts, store.vector_cache)
        data = pa.table({
            "id": [r["id"] for r in rows],
            "vector": pa.array([v.tolist() for v in vectors], pa.list_(pa.float32(), embedder.dim)),
            "vector_model": [embedder.model_id] * len(rows),
        })
        # Only rows still stale are written: another process may have re-embedded (or revised) some meanwhile.
        where = f"({in_filter('id', [r['id'] for r in rows])}) AND ({store.stale_where()})"
        store.db.write(lambda: _write_vectors(store, data, where))
        done += len(rows)
    return done


def _write_vectors(store: MemoryStore, data: pa.Table, where: str) -> None:
    still = {r["id"] for r in store.table.search().where(where).select(["id"]).limit(data.num_rows).to_list()}
    if still:
        keep = pa.array([i in still for i in data["id"].to_pylist()])
        store.db.upsert(store.table, "id", data.filter(keep), insert=False)
        store.db.note_written()
