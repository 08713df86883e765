"""The embedding pass of the code index: chunks stored unembedded by the lexical pass get their vectors in batches,
the files asked for first, then the rest, each batch fetched with its filter and limit pushed into LanceDB. Only
the chunks `embed_scope` embeds wait for a vector; the rest are stored lexical only.

One embedder at a time per database, across processes: whoever embeds holds the embed lock (a file lock, which the
kernel drops when its holder dies) for as long as it goes on embedding. So two embedders never embed the same
chunks twice over, and whether the lock is held says truthfully whether anything embeds now ("continuing") or
nothing does ("paused": interrupted, or the server that embedded them stopped). One that finds the lock held waits
for it, telling how far the holder has come from the table's counts.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from ..answers import IndexProgress
from ..embedding.embed import Embedder, VectorCache
from ..store.database import Database
from ..store.sql import in_filter, quote
from .chunk_rows import CHUNK_BITMAPS, CHUNK_BTREES, CHUNK_LABEL_LISTS, embed_text
from .embed_scope import LEXICAL_ONLY_WHERE, VECTORS_WHERE

EMBED_BATCH = 64
EMBED_LOCK = ".embed-pass.lock"
WAIT_POLL_SECONDS = 1.0
"""How often one waiting for the embed lock looks again (and reports the holder's progress)."""


class EmbedQueue:
    """The chunks waiting for a vector (`embedded = false`, a bitmap index) and the pass that embeds them."""

    def __init__(self, db: Database, chunks, embedder: Embedder, vector_cache: VectorCache) -> None:
        self.db = db
        self.chunks = chunks
        self.embedder = embedder
        self.vector_cache = vector_cache

    def busy(self) -> bool:
        """Another embedder (process or thread) holds the embed lock now. Unknown for a remote store (no lock
        there): False."""
        if self.db.remote or self.db.read_only:
            return False
        with self.db.try_lock(EMBED_LOCK) as free:
            return not free

    def wait_while_busy(self, progress: Callable[[IndexProgress], None] | None = None,
                        should_stop: Callable[[], bool] | None = None) -> bool:
        """Until no other embedder holds the lock, reporting how far the embeddings are (embedded of those to embed);
        False when `should_stop` ended the wait first."""
        waited = False
        while self.busy():
            waited = True
            if should_stop and should_stop():
                return False
            self._report(progress)
            deadline = time.monotonic() + WAIT_POLL_SECONDS
            while time.monotonic() < deadline:
                if should_stop and should_stop():
                    return False
                time.sleep(0.1)
        if waited:
            self._report(progress)  # where the other embedder left them: all, or what is left to the caller
        return True

    def _report(self, progress: Callable[[IndexProgress], None] | None) -> None:
        if progress:
            chunks, pending = self.counts()
            progress(IndexProgress("embedding", chunks - pending, chunks))

    def counts(self) -> tuple[int, int]:
        """(chunks to embed, chunks waiting for an embedding), both at one version of the chunks table; the chunks
        kept lexical only (`embed_scope`) are neither."""
        version = self.chunks.version
        return (self.db.count(self.chunks, version=version) - self.db.count(self.chunks, LEXICAL_ONLY_WHERE, version=version),
                self.db.count(self.chunks, "embedded = false", version=version))

    @contextlib.contextmanager
    def turn(self, wait: bool, progress: Callable[[IndexProgress], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> Iterator[bool]:
        """The embed lock, for the caller's embedding (yields True); False when another holds it and `wait` is
        off, or `should_stop` ended the wait."""
        if self.db.remote or self.db.read_only:
            yield not self.db.read_only
            return
        while True:
            with self.db.try_lock(EMBED_LOCK) as mine:
                if mine or not wait:
                    yield mine
                    return
            if not self.wait_while_busy(progress, should_stop):
                yield False
                return

    def run(
        self,
        limit: int | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        priority: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """`embed` in the caller's turn, waiting for it while another embedder holds the lock."""
        with self.turn(True, progress, should_stop) as mine:
            return self.embed(limit, progress, priority, should_stop) if mine else 0

    def embed(
        self,
        limit: int | None = None,
        progress: Callable[[IndexProgress], None] | None = None,
        priority: Iterable[str] = (),
        should_stop: Callable[[], bool] | None = None,
    ) -> int:
        """Embed chunks still waiting, files named in `priority` first; returns how many were embedded. The caller holds the embed lock (`turn`).

        Each batch is fetched with its filter and limit pushed into LanceDB (the `embedded` column has a bitmap
        index), so the queue costs O(pending) overall and one batch never reads the whole backlog's text."""
        wanted = in_filter("path", list(dict.fromkeys(priority)))
        tiers = [wanted] if wanted else []
        total = self.chunks.count_rows("embedded = false") if progress else 0
        if limit is not None and progress:
            total = min(total, limit)
        done = 0
        tries: dict[str, int] = {}
        stuck: set[str] = set()
        if progress and total:
            # The first batch loads the model and takes the longest: the phase shows from its start.
            progress(IndexProgress("embedding", 0, total))
        while limit is None or done < limit:
            if should_stop and should_stop():
                break
            size = EMBED_BATCH if limit is None else min(EMBED_BATCH, limit - done)
            batch = self._next_pending(tiers, size, stuck)
            # A row the last write did not flip was replaced meanwhile by a re-index (the watcher's catch-up pass
            # rewrites a file's rows unembedded): embed it again (its vector comes from the cache). A row that
            # keeps coming back is left out from then on, so the loop cannot spin on it.
            for r in batch:
                tries[r["id"]] = tries.get(r["id"], 0) + 1
            again = {r["id"] for r in batch if tries[r["id"]] > 3}
            if again:
                stuck |= again
                batch = [r for r in batch if r["id"] not in again]
            if not batch:
                break
            # Progress within the batch too (the model embeds a few texts at a time): a pass of one batch would
            # otherwise show 0/N until its end, with no rate or estimate.
            within = None if progress is None else _within_batch(progress, done, len(batch), total)
            vectors, _ = self.embedder.embed_documents(
                [embed_text(r["path"], r["symbols"], r["text"]) for r in batch], self.vector_cache, within
            )
            self._store_vectors([r["id"] for r in batch], vectors)
            done += len(batch)
            if progress:
                progress(IndexProgress("embedding", done, max(total, done)))
        return done

    def _next_pending(self, tiers: list[str], size: int, seen: set[str]) -> list[dict]:
        """The next batch: from the first of `tiers` (filters, in order) that still has chunks waiting, a tier
        found empty dropped for the rest of the pass; then from any chunk still waiting."""
        columns = ["id", "path", "symbols", "text"]
        exclude = f" AND id NOT IN ({', '.join(quote(i) for i in sorted(seen))})" if seen else ""
        while tiers:
            rows = self.chunks.search().where(f"embedded = false AND ({tiers[0]}){exclude}").select(columns) \
                .limit(size).to_list()
            if rows:
                return rows
            tiers.pop(0)
        return self.chunks.search().where(f"embedded = false{exclude}").select(columns).limit(size).to_list()

    def _store_vectors(self, ids: list[str], vectors: np.ndarray) -> None:
        import pyarrow as pa

        data = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "embedded": pa.array([True] * len(ids)),
                "vector": pa.array([v.tolist() for v in vectors], pa.list_(pa.float32(), self.embedder.dim)),
                "vector_model": pa.array([self.embedder.model_id] * len(ids), pa.string()),
            }
        )

        def apply():
            self.db.upsert(self.chunks, "id", data, insert=False)
            self.db.ensure_search_indexes(self.chunks, CHUNK_BITMAPS, CHUNK_LABEL_LISTS, CHUNK_BTREES, vectors=VECTORS_WHERE)
            self.db.note_written()

        self.db.write(apply)


def _within_batch(progress: Callable[[IndexProgress], None], done: int, size: int,
                  total: int) -> Callable[[int, int], None]:
    """The embedder's progress over a batch's texts (k of n), as the pass's progress over its chunks."""
    return lambda k, n: progress(IndexProgress("embedding", done + size * k // max(n, 1), max(total, done + size)))
