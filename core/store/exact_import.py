"""Memories restored exactly as they were exported: ids, versions, status, times and git position."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa

from ..records import Memory
from .memory_rows import default_title, embed_text, memory_to_row, now
from .sql import in_filter
from .store import MEMORY_BITMAPS, MEMORY_BTREES, MEMORY_LABEL_LISTS, MemoryStore

IDS_PER_READ = 500


def import_exact(store: MemoryStore, memories: Sequence[Memory],
                 progress: Callable[[int, int], None] | None = None) -> list[str]:
    """Store memories exactly as exported in one commit; returns the ids added. Ids already here are left alone, so
    importing an export twice changes nothing. A key never ends with two active versions: the highest version stays
    active. Imported versions whose numbers are taken here by other memories of the key are numbered after them, in
    their own order."""
    embedder = store.embedder
    present = _ids_here(store, [m.id for m in memories])
    new = [m for m in memories if m.id not in present]
    vectors, _ = (embedder.embed([embed_text(m) for m in new], store.vector_cache, progress) if new
                  else (np.empty((0, embedder.dim), np.float32), None))

    def apply() -> list[str]:
        # Another process may have imported some of them while we embedded: check again under the lock.
        again = _ids_here(store, [m.id for m in new])
        adding = [replace(m, title=m.title or default_title(m.text), vector=v.tolist(), vector_model=embedder.model_id)
                  for m, v in zip(new, vectors) if m.id not in again]
        changed = _one_active_version_per_key(store, memories, adding)
        if adding or changed:
            # One merge commit for the new rows and the versions they supersede: a crash leaves all or nothing. With
            # none superseded, every row is new (checked just above, under the lock): `all_new`.
            rows = pa.Table.from_pylist([memory_to_row(m) for m in adding + changed], schema=store.table.schema)
            store.db.upsert(store.table, "id", rows, all_new=not changed)
            store.db.ensure_text_indexes(store.table)
            store.db.ensure_search_indexes(store.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)
            store.db.note_written()
        return [m.id for m in adding]

    return store.told(store.db.write(apply))


def _ids_here(store: MemoryStore, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    for lo in range(0, len(ids), IDS_PER_READ):
        where = in_filter("id", ids[lo : lo + IDS_PER_READ])
        found.update(r["id"] for r in store.table.search().where(where).select(["id"]).limit(IDS_PER_READ).to_list())
    return found


def _one_active_version_per_key(store: MemoryStore, memories: Sequence[Memory], adding: list[Memory]) -> list[Memory]:
    """Renumber `adding`'s versions that clash with this store's, and supersede all but the highest active version
    of each key; returns the memories already here that changed."""
    keys = sorted({m.source_key for m in memories if m.source_key})
    here = [m for lo in range(0, len(keys), IDS_PER_READ)
            for m in store.query(in_filter("source_key", keys[lo : lo + IDS_PER_READ]), with_vector=True)]
    changed: list[Memory] = []
    for key in keys:
        mine = [m for m in adding if m.source_key == key]
        theirs = [m for m in here if m.source_key == key]
        their_ids = {m.id for m in theirs}
        taken = {m.version for m in theirs}
        if any(m.version in taken for m in mine):
            base = max(taken)
            for n, m in enumerate(sorted(mine, key=lambda m: (m.version, m.created_at, m.id)), 1):
                m.version = base + n
        active = sorted((m for m in mine + theirs if m.status == "active"), key=lambda m: (m.version, m.created_at, m.id))
        for m in active[:-1]:
            m.status = "superseded"
            if m.id in their_ids:
                m.updated_at = now()
                changed.append(m)
    return changed
