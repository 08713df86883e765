"""The memory store: versioned memories in a LanceDB table, with embeddings and the duplicate rule."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from .. import write_ids
from ..embedding.embed import Embedder
from ..errors import CortexError
from ..records import (
    KINDS,
    STATUSES,
    TASK_STATES,
    Anchors,
    LastPruned,
    Memory,
    MemoryDraft,
    RememberResult,
    StoreStats,
)
from ..secrets.secret_fields import secure_draft
from ..text import WORDS_FORMAT, text_hash
from .access import AccessLog
from .database import Database
from .failures import again_if_gone
from .memory_rows import (
    FIELDS,
    default_title,
    embed_text,
    memory_to_row,
    memory_words,
    now,
    row_to_memory,
    validate_draft,
    without_repeats,
)
from .receipts import receipt_rows
from .schema import SCHEMA_VERSION, memories_schema
from .sql import in_filter, quote, timestamp
from .vector_cache import LanceVectorCache

MEMORIES = "memories"
SMALL_STORE = 20_000
"""Rows up to which a newest-first read is one query (at 20,000 rows it reads all fields in a few milliseconds)."""
MEMORY_BITMAPS = ("status", "kind", "scope", "task_state", "vector_model", "session")
MEMORY_LABEL_LISTS = ("tags", "files")
MEMORY_BTREES = ("id", "updated_at", "branch", "source_key", "text_hash")
"""`text_hash`: each write looks up the active memories with its texts (the duplicate rule); unindexed, that read
scanned the column, 53 ms of a `remember` at 100,000 memories."""
_PRUNABLE = "status = 'active' AND NOT array_has_any(tags, ['pinned'])"
"""What a retention policy may forget: active memories not tagged `pinned`."""
PRUNED_META = "retention_pruned"
"""Meta key: how many memories retention has forgotten in this store, ever."""
LAST_PRUNED_META = "retention_last"
"""Meta key: when retention last forgot something here, and how many (`<ISO time> <count>`)."""


@dataclass(frozen=True)
class GitPosition:
    """Where in the repository's history a memory is made."""

    branch: str = ""
    commit: str = ""


class MemoryStore:
    """Memories of one database (a repository's, or the user's global one)."""

    small_store = SMALL_STORE

    def __init__(self, db: Database, embedder: Embedder, max_text_bytes: int = 1_000_000,
                 on_change: Callable[[], None] | None = None) -> None:
        self.db = db
        self.on_change = on_change
        """Told after each write that changes what the memories say (not their vectors): a long-lived process that
        shows memories, or tells others who do, refreshes on it."""
        self.embedder = embedder
        self.max_text_bytes = max_text_bytes
        self.table = db.open_table(MEMORIES, memories_schema(embedder.dim), key="id")
        db.open_receipts()
        self.vector_cache = LanceVectorCache(db, after_answer=True)
        self.access = AccessLog(self._stamp_access)
        """Reads that show memories to someone record it here; `accessed_at` is written in batches."""
        self._vectors_current = False
        if db.get_meta("memories_words") != WORDS_FORMAT:
            needed = ["title", "text", "tags", "files", "symbols", "context"]
            db.rewrite_column(self.table, "words", needed, memory_words)
            db.set_meta("memories_words", WORDS_FORMAT)
        db.finish_migration()

    def told(self, result):
        """`result`, once `on_change` has been told of the write that made it."""
        if self.on_change is not None:
            self.on_change()
        return result

    # --- reads -------------------------------------------------------------------------------------------------

    def query(self, where: str | None, limit: int | None = None, with_vector: bool = False,
               order: Sequence[tuple[str, bool]] = ()) -> list[Memory]:
        """`order`: (column, ascending) pairs LanceDB sorts by before it applies the limit. A read that a
        compaction in another process pulled a file from under is made once more (`again_if_gone`)."""
        return again_if_gone(lambda: self._query(where, limit, with_vector, order))

    def _query(self, where: str | None, limit: int | None, with_vector: bool,
               order: Sequence[tuple[str, bool]]) -> list[Memory]:
        if order and limit and not self._small():
            # Sort and cut on the sort columns alone, then read the rows kept in full: LanceDB reads every selected
            # column of every match before it sorts (300k memories: 50-100 ms a query with all fields, 11-17 with
            # the keys), and `what` makes four such reads.
            ids = [r["id"] for r in self._sorted(where, limit, order, ["id", *(c for c, _ in order)])]
            if not ids:
                return []
            chosen = f"({in_filter('id', ids)})"
            found = {m.id: m for m in self._query(f"({where}) AND {chosen}" if where else chosen, len(ids), with_vector,
                                                  ())}
            return [found[i] for i in ids if i in found]
        query = self.table.search()
        if where:
            query = query.where(where)
        if not with_vector:
            query = query.select(FIELDS)
        if order:
            from lancedb.query import ColumnOrdering

            query = query.order_by([ColumnOrdering(column_name=c, ascending=a) for c, a in order])
        rows = query.limit(limit or None).to_list()
        return [row_to_memory(r) for r in rows]

    def _small(self) -> bool:
        """Few enough rows that one read sorted by LanceDB costs less than the round trips that keep a large
        store's reads bounded (time windows, keys first): most stores, and every `what` on them."""
        return self.db.count(self.table) <= self.small_store

    def _sorted(self, where: str | None, limit: int, order: Sequence[tuple[str, bool]], columns: list[str]) -> list[dict]:
        from lancedb.query import ColumnOrdering

        query = self.table.search().select(columns)
        if where:
            query = query.where(where)
        return query.order_by([ColumnOrdering(column_name=c, ascending=a) for c, a in order]).limit(limit).to_list()

    def get(self, memory_id: str) -> Memory:
        found = self.query(f"id = {quote(memory_id)}", 1)
        if not found:
            raise CortexError(f"no memory with id {memory_id!r}")
        return found[0]

    def find(self, memory_id: str) -> Memory | None:
        found = self.query(f"id = {quote(memory_id)}", 1)
        return found[0] if found else None

    def list(
        self,
        kind: str | None = None,
        tag: str | None = None,
        status: str | None = "active",
        scope: str | None = None,
        limit: int | None = None,
        where: str | None = None,
    ) -> list[Memory]:
        """Memories newest first. `status` may also be a task state (`open`, `done`)."""
        clauses = []
        if kind:
            if kind not in KINDS:
                raise CortexError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
            clauses.append(f"kind = {quote(kind)}")
        if tag:
            clauses.append(f"array_has_any(tags, [{quote(tag)}])")
        if status in TASK_STATES:
            clauses.append(f"kind = 'task' AND status = 'active' AND task_state = {quote(status)}")
        elif status and status != "all":
            if status not in STATUSES:
                raise CortexError(f"unknown status {status!r}; choose one of {', '.join(STATUSES + TASK_STATES)}, all")
            clauses.append(f"status = {quote(status)}")
        if scope:
            clauses.append(f"scope = {quote(scope)}")
        if where:
            clauses.append(where)
        where = " AND ".join(clauses) or None
        if limit:
            return without_repeats(self._newest_created(where, limit))
        found = self.query(where)
        found.sort(key=lambda m: (m.created_at, m.version), reverse=True)
        return without_repeats(found)

    def _newest_created(self, where: str | None, limit: int) -> builtins.list[Memory]:
        """The first `limit` of list()'s order without reading every match: LanceDB sorts and cuts the rows inside
        widening windows of `updated_at` (BTree-indexed). A row outside the window was created before its cut-off
        (created_at <= updated_at), so once `limit` rows inside were created after it, the answer is exact."""
        found: list[Memory] = []
        for days in (7, 30, 180, None):
            found = self.query(_within(where, days), limit, order=[("created_at", False), ("version", False)])
            if days is not None:
                cutoff = datetime.now(UTC) - timedelta(days=days)
                if sum(m.created_at >= cutoff for m in found) < limit:
                    continue
            break
        return found

    def newest(self, where: str | None, limit: int) -> builtins.list[Memory]:
        """The newest `limit` memories matching a filter, sorted and cut by LanceDB: through widening time windows
        (a BTree index on updated_at keeps each cheap) until one holds enough, so no read grows with the store."""
        found: list[Memory] = []
        for days in (None,) if self._small() else (1, 7, 30, 180, None):
            found = self.query(_within(where, days), limit, order=[("updated_at", False)])
            if len(found) >= limit:
                break
        return found

    def history(self, key: str) -> builtins.list[Memory]:
        """Every version stored under a source key (or, given a memory id, under that memory's key), oldest first."""
        found = self.query(f"source_key = {quote(key)}") if key else []
        if not found:
            memory = self.find(key)
            if memory is None:
                raise CortexError(f"no memory with key or id {key!r}")
            found = self.query(f"source_key = {quote(memory.source_key)}") if memory.source_key else [memory]
        return sorted(found, key=lambda m: m.version)

    def near(self, draft: MemoryDraft, vector) -> Memory | None:
        """An active memory of the draft's scope that says what the draft says in other words (see near.py), found
        among the draft's nearest neighbours by vector; None when there is none, or when one has the very same
        text (the write settles those as duplicates)."""
        from .near import says_the_same

        digest = text_hash(draft.text)
        where = f"status = 'active' AND scope = {quote(draft.scope)}"
        if draft.scope == "session":  # another session's notes are not this one's to replace
            where += f" AND session = {quote(draft.session)}"
        rows = self.table.search(vector).where(where, prefilter=True).select([*FIELDS, "_distance"]).limit(5).to_list()
        for row in rows:
            if row["text_hash"] == digest:
                return None
            if says_the_same(draft.text, row["text"], 1.0 - float(row["_distance"]) / 2.0):
                return row_to_memory(row)
        return None

    def embed_draft(self, draft: MemoryDraft):
        """The vector a draft will be stored with (from the cache when this text was embedded before)."""
        vectors, _ = self.embedder.embed([embed_text(draft)], self.vector_cache)
        return vectors[0]

    def count(self, where: str | None = None) -> int:
        return self.table.count_rows(where)

    # --- writes ------------------------------------------------------------------------------------------------

    def remember(self, draft: MemoryDraft, position: GitPosition = GitPosition()) -> RememberResult:
        return self.remember_many([draft], position)[0]

    def remember_many(
        self,
        drafts: Sequence[MemoryDraft],
        position: GitPosition = GitPosition(),
        progress: Callable[[int, int], None] | None = None,
        ids: Sequence[str] | None = None,
    ) -> builtins.list[RememberResult]:
        """Store drafts in one batch: embeddings first (outside the lock), then one locked read-modify-write whose
        changes (new versions, superseded ones, refreshed duplicates) are a single commit. `ids` are the new
        memories' ids when the caller minted them already (a queued team write keeps the id it was shown with)."""
        for draft in drafts:  # sizes before the secret scan, which takes time in proportion to them
            validate_draft(draft, self.max_text_bytes)
        drafts = [secure_draft(d) for d in drafts]
        if not drafts:
            return []
        vectors, _ = self.embedder.embed([embed_text(d) for d in drafts], self.vector_cache, progress)
        # Ids and the time are made once, before the write, so nothing a retry repeats can mint a second copy.
        new_ids = list(ids) if ids is not None else [uuid.uuid4().hex[:12] for _ in drafts]
        stamp = now()
        minted = ids is None
        return self.told(self.db.write(lambda: self._write_batch(drafts, vectors, position, new_ids, stamp, minted)))

    def _write_batch(self, drafts, vectors, position: GitPosition, ids: builtins.list[str], stamp: datetime,
                     minted: bool = True) -> builtins.list[RememberResult]:
        """`minted`: the ids were made here, so no stored row has one of them."""
        hashes = [text_hash(d.text) for d in drafts]
        existing, by_key = self._existing(hashes, sorted({d.source_key for d in drafts if d.source_key}))
        results: list[RememberResult] = []
        changed: dict[str, Memory] = {}
        """Every row this batch writes, by id: new versions, the versions they supersede, duplicates read again."""
        for draft, digest, vector, new_id in zip(drafts, hashes, vectors, ids):
            session = draft.session if draft.scope == "session" else ""
            dup = existing.get((draft.scope, session, digest))
            if dup is not None and (not draft.source_key or dup.source_key in ("", draft.source_key)):
                dup.accessed_at = stamp
                changed[dup.id] = dup
                results.append(RememberResult(dup, "duplicate"))
                continue
            versions = by_key.get(draft.source_key, []) if draft.source_key else []
            for m in versions:
                if m.status == "active":
                    m.status, m.updated_at = "superseded", stamp
                    changed[m.id] = m
            created = draft.created_at or stamp
            memory = Memory(
                id=new_id,
                kind=draft.kind,
                title=draft.title or default_title(draft.text),
                text=draft.text,
                tags=list(dict.fromkeys(draft.tags)),
                files=list(dict.fromkeys(draft.files)),
                symbols=list(dict.fromkeys(draft.symbols)),
                branch=position.branch,
                commit=position.commit,
                scope=draft.scope,
                source_key=draft.source_key,
                version=max((m.version for m in versions), default=0) + 1,
                status="active",
                task_state=(draft.task_state or "open") if draft.kind == "task" else "",
                created_at=created,
                updated_at=created,
                accessed_at=created,
                text_hash=digest,
                context=draft.context,
                anchors=draft.anchors,
                session=session,
                vector=vector.tolist(),
                vector_model=self.embedder.model_id,
            )
            if draft.source_key:
                by_key.setdefault(draft.source_key, []).append(memory)
            existing[(draft.scope, session, digest)] = memory
            changed[memory.id] = memory
            results.append(RememberResult(memory, "new_version" if versions else "created"))
        if changed:
            # One merge on id: a new version and the one it supersedes land in the same commit, so a crash can
            # never leave a key with no active version (nor with two).
            data = pa.Table.from_pylist([memory_to_row(m) for m in changed.values()], schema=self.table.schema)
            self.db.upsert(self.table, "id", data, all_new=minted and set(changed) <= set(ids))
        self.db.ensure_text_indexes(self.table)
        self.db.ensure_search_indexes(self.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)
        self.db.note_written()
        return results

    def _existing(self, hashes: builtins.list[str], keys: builtins.list[str]
                  ) -> tuple[dict[tuple[str, str, str], Memory], dict[str, builtins.list[Memory]]]:
        """The active memories with these texts, by (scope, session, text hash): what a draft would repeat; and
        every version of these keys. One read for both."""
        by_hash = f"status = 'active' AND ({in_filter('text_hash', sorted(set(hashes)))})"
        by_source = in_filter("source_key", keys)
        found = self.query(f"({by_hash}) OR ({by_source})" if by_source else by_hash, with_vector=True)
        wanted_hashes, wanted_keys = set(hashes), set(keys)
        existing = {(m.scope, m.session, m.text_hash): m for m in found
                    if m.status == "active" and m.text_hash in wanted_hashes}
        by_key: dict[str, builtins.list[Memory]] = {}
        for m in found:
            if m.source_key in wanted_keys:
                by_key.setdefault(m.source_key, []).append(m)
        return existing, by_key

    def forget(self, memory_id: str | None = None, key: str | None = None, purge: bool = False) -> builtins.list[Memory]:
        """Soft-delete the active version (by id or key); with purge, remove every version for good."""
        if memory_id:
            target = self.get(memory_id)
            key = target.source_key or None
            chosen = self.history(key) if (purge and key) else [target]
        elif key:
            chosen = self.query(f"source_key = {quote(key)}")
            if not chosen:
                raise CortexError(f"no memory with key {key!r}")
        else:
            raise CortexError("forget needs a memory id or --key")
        if not purge:
            chosen = [m for m in chosen if m.status == "active"]
            if not chosen:
                raise CortexError("that memory is already deleted or superseded; use --purge to remove it for good")
        where = in_filter("id", [m.id for m in chosen])

        def apply():
            if purge:
                if write_ids.current():
                    # No row is left to carry the id: its receipt comes first, naming the rows it deletes, and
                    # counts once they are gone (core/store/receipts.py), so no kill can lose it.
                    self.db.upsert(self.db.receipts_table(), write_ids.COLUMN,
                                   receipt_rows([write_ids.current()], gone=[m.id for m in chosen]), update=False)
                self.db.delete(self.table, where)
            else:
                self.db.update(self.table, where, write_ids.stamped_update({"status": "deleted", "updated_at": now()}))
            self.db.note_written()

        self.db.write(apply)
        return self.told(chosen)

    def unforget(self, memory_id: str) -> Memory:
        """Undo a soft forget: the same row is active again under its own id, so whatever holds the id (a pin, a
        link, an agent's note) finds it. Refused when it is not forgotten, or when a newer version of its key is
        active meanwhile (two active versions of one key would both be current)."""
        target = self.get(memory_id)
        if target.status != "deleted":
            raise CortexError(f"memory {memory_id} is not forgotten (it is {target.status}): nothing to bring back")
        newer = [m for m in self.query(f"source_key = {quote(target.source_key)}") if m.status == "active"] \
            if target.source_key else []
        if newer:
            raise CortexError(f"memory {memory_id} has a newer active version ({newer[0].id}): that one is current")

        def apply():
            self.db.update(self.table, f"id = {quote(memory_id)}",
                           write_ids.stamped_update({"status": "active", "updated_at": now()}))
            self.db.note_written()

        self.db.write(apply)
        return self.told(self.get(memory_id))

    def set_source_key(self, memory_id: str, key: str) -> None:
        self.db.write(lambda: self.db.update(self.table, f"id = {quote(memory_id)}", {"source_key": key}))

    def _stamp_access(self, batch: dict[str, datetime], wait: bool) -> bool:
        """One merge on id of these memories' whole rows with their new access times (rows deleted meanwhile are
        left alone); `wait=False`: only if no other writer holds the lock now. False when it did not run.

        Whole rows, not `id` and `accessed_at` alone: LanceDB writes a merge of some columns into the stored data
        files in place, and takes every file it touched out of the indexes of those columns, the `id` key's
        included. A compacted table is one file per million rows, so one batch of 25 access times left the `id`
        index covering none of 1,000,000 memories, and every later read or merge on `id` scanned the table (the
        next batch: 10 s). Whole rows are rewritten as new rows instead: only they are outside the indexes until
        the next compaction. Read inside the commit, under the write lock, so a retry never writes stale rows."""
        stamps = pa.array(list(batch.values()), pa.timestamp("us", tz="UTC"))
        order = {memory_id: n for n, memory_id in enumerate(batch)}

        def merge() -> None:
            found = self.table.search().where(in_filter("id", list(batch))).select(self.table.schema.names) \
                .limit(len(batch)).to_arrow()
            if found.num_rows == 0:
                return
            at = [order[memory_id] for memory_id in found.column("id").to_pylist()]
            found = found.set_column(found.schema.get_field_index("accessed_at"), "accessed_at", stamps.take(at))
            self.table.merge_insert("id").when_matched_update_all().execute(found.cast(self.table.schema))

        def stamp() -> None:
            self.db.commit(merge)

        if wait:
            self.db.write(stamp)
            return True
        return self.db.write_if_free(stamp)

    def over_cap(self, scope: str, caps: Mapping[str, int]) -> builtins.list[Memory]:
        """Active memories of a scope beyond their kind's cap (per kind and session, for scope `session`; 0: no
        cap), least recently accessed first out; memories tagged `pinned` are exempt. Reads only the scope's ids,
        sessions and access times past a count (a kind within its cap costs one count)."""
        out: list[Memory] = []
        for kind, cap in caps.items():
            where = f"{_PRUNABLE} AND scope = {quote(scope)} AND kind = {quote(kind)}"
            if cap <= 0 or self.table.count_rows(where) <= cap:
                continue
            rows = self.table.search().where(where).select(["id", "accessed_at", "session"]).limit(None).to_list()
            rows.sort(key=lambda r: (r["accessed_at"], r["id"]), reverse=True)
            by_owner: dict[str, list[dict]] = {}
            for r in rows:
                by_owner.setdefault((r["session"] or "") if scope == "session" else "", []).append(r)
            out += [m for owned in by_owner.values() for r in owned[cap:] if (m := self.find(r["id"])) is not None]
        return out

    def unread_since(self, scope: str, cutoff: datetime) -> builtins.list[Memory]:
        """Active memories of a scope neither read nor written since `cutoff` (`pinned` exempt)."""
        stamp = timestamp(cutoff)
        where = f"{_PRUNABLE} AND scope = {quote(scope)} AND accessed_at < {stamp} AND updated_at < {stamp}"
        return self.query(where)

    def prune(self, memories: Sequence[Memory]) -> int:
        """Forget what a retention policy dropped, in one version, and count it in the store's meta (`stats`), all
        under the write lock: of `memories`, only those still active and not pinned (another writer may have pruned,
        superseded or pinned one since they were found) are forgotten and counted. Returns how many."""
        if not memories:
            return 0
        when = now()
        where = f"{in_filter('id', [m.id for m in memories])} AND {_PRUNABLE}"

        def apply() -> int:
            count = self.table.count_rows(where)
            if count:
                self.db.update(self.table, where, {"status": "deleted", "updated_at": when})
                before = int(self.db.get_meta(PRUNED_META) or 0)
                self.db.put_metas({PRUNED_META: str(before + count), LAST_PRUNED_META: f"{when.isoformat()} {count}"})
                self.db.note_written()
            return count

        return self.told(self.db.write(apply))

    def set_anchors(self, memory_id: str, anchors: Anchors | None) -> Memory:
        """Record again the code an active memory describes (`cortex confirm`): the same version, checked anew."""
        memory = self.get(memory_id)
        if memory.status != "active":
            raise CortexError(f"memory {memory_id} is {memory.status}; only active memories can be confirmed")
        value = anchors.to_json() if anchors is not None else None
        self.db.write(lambda: self.db.update(self.table, f"id = {quote(memory_id)}", write_ids.stamped_update({"anchors": value})))
        memory.anchors = anchors
        return self.told(memory)

    def set_task_state(self, memory_id: str, state: str) -> Memory:
        memory = self.get(memory_id)
        if memory.kind != "task":
            raise CortexError(f"memory {memory_id} is a {memory.kind}, not a task")
        if memory.status != "active":
            raise CortexError(f"memory {memory_id} is {memory.status}; only active tasks can change state")
        stamp = now()
        self.db.write(lambda: self.db.update(self.table, f"id = {quote(memory_id)}",
                                             write_ids.stamped_update({"task_state": state, "updated_at": stamp})))
        memory.task_state, memory.updated_at = state, stamp
        return self.told(memory)

    # --- embedding model changes -----------------------------------------------------------------------------------

    def stale_where(self) -> str:
        """Rows whose vector another model made (or an older cortex, which did not record the model)."""
        return f"vector_model IS NULL OR vector_model != {quote(self.embedder.model_id)}"

    def stale_vectors(self) -> int:
        """How many memories wait to be embedded again by the current model; full text finds them meanwhile.
        Once none do, the count is not read again (every search asks): this process writes only current vectors."""
        if self._vectors_current:
            return 0
        stale = self.table.count_rows(self.stale_where())
        self._vectors_current = stale == 0
        return stale

    def stats(self) -> StoreStats:
        # Counts answered by the bitmap indexes on status and kind: no version's text is read.
        active = "status = 'active'"
        by_kind = {k: n for k in KINDS if (n := self.table.count_rows(f"{active} AND kind = {quote(k)}"))}
        metas = self.db.metas()
        last = metas.get(LAST_PRUNED_META, "").split()
        return StoreStats(
            uri=self.db.uri,
            schema_version=SCHEMA_VERSION,
            memories=self.table.count_rows(),
            active=self.table.count_rows(active),
            by_kind=by_kind,
            open_tasks=self.table.count_rows(f"{active} AND kind = 'task' AND task_state = 'open'"),
            table_versions=len(self.table.list_versions()),
            disk_bytes=self.db.disk_bytes(),
            pruned=int(metas.get(PRUNED_META) or 0),
            last_pruned=LastPruned(datetime.fromisoformat(last[0]), int(last[1])) if len(last) == 2 else None,
        )


def _within(where: str | None, days: int | None) -> str | None:
    """`where`, narrowed to memories updated in the last `days` (None: any time)."""
    if days is None:
        return where
    cutoff = datetime.now(UTC) - timedelta(days=days)
    since = f"updated_at >= {timestamp(cutoff)}"
    return f"({where}) AND {since}" if where else since


