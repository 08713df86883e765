"""The memory store: versioned memories in a LanceDB table, with embeddings and the duplicate rule."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import numpy as np

from .database import Database, quote
from .embed import Embedder, text_hash
from .errors import CortexError
from .records import KINDS, SCOPES, STATUSES, TASK_STATES, Memory, MemoryDraft, RememberResult, StoreStats
from .secrets import find_secrets
from .schema import SCHEMA_VERSION, VECTOR_CACHE_SCHEMA, memories_schema
from .text import WORDS_FORMAT, identifier_words, path_words

MEMORIES = "memories"
MEMORY_BITMAPS = ("status", "kind", "scope", "task_state")
MEMORY_LABEL_LISTS = ("tags", "files")
MEMORY_BTREES = ("id", "updated_at", "branch", "source_key")
_FIELDS = [f for f in Memory.__dataclass_fields__ if f != "vector"]


def now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class GitPosition:
    """Where in the repository's history a memory is made."""

    branch: str = ""
    commit: str = ""


class LanceVectorCache:
    """Embedding cache in the same database, keyed by model and content hash."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.table = db.open_table("vector_cache", VECTOR_CACHE_SCHEMA)

    def get_vectors(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for lo in range(0, len(hashes), 500):
            part = hashes[lo : lo + 500]
            where = f"model = {quote(model)} AND hash IN ({', '.join(quote(h) for h in part)})"
            for row in self.table.search().where(where).select(["hash", "vector"]).limit(len(part)).to_list():
                found[row["hash"]] = np.asarray(row["vector"], dtype=np.float32)
        return found

    def put_vectors(self, model: str, vectors: dict[str, np.ndarray]) -> None:
        rows = [{"hash": h, "model": model, "vector": v.tolist()} for h, v in vectors.items()]
        self.db.write(lambda: self.table.add(rows))


def validate_draft(draft: MemoryDraft, max_bytes: int) -> None:
    if not draft.text or not draft.text.strip():
        raise CortexError("memory text is empty")
    size = len(draft.text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise CortexError(f"memory text is {size:,} bytes; the limit is {max_bytes:,}")
    if draft.kind not in KINDS:
        raise CortexError(f"unknown kind {draft.kind!r}; choose one of {', '.join(KINDS)}")
    if draft.task_state and draft.task_state not in TASK_STATES:
        raise CortexError(f"unknown task state {draft.task_state!r}; choose one of {', '.join(TASK_STATES)}")
    secrets = find_secrets(draft.text)
    if secrets:
        raise CortexError(f"text looks like it contains a secret ({secrets[0].kind}); it was not stored")
    if draft.scope not in SCOPES:
        raise CortexError(f"unknown scope {draft.scope!r}; choose one of {', '.join(SCOPES)}")


def _row_to_memory(row: dict) -> Memory:
    fields = {name: row.get(name) for name in _FIELDS}
    for name in ("tags", "files", "symbols"):
        fields[name] = list(fields[name] or [])
    for name in ("title", "branch", "commit", "source_key", "task_state", "context"):
        if fields[name] is None:
            fields[name] = ""
    for name in ("created_at", "updated_at", "accessed_at"):
        value = fields[name]
        if value is not None and value.tzinfo is None:
            fields[name] = value.replace(tzinfo=timezone.utc)
    return Memory(**fields, vector=row.get("vector"))


class MemoryStore:
    """Memories of one database (a repository's, or the user's global one)."""

    def __init__(self, db: Database, embedder: Embedder, max_text_bytes: int = 1_000_000) -> None:
        self.db = db
        self.embedder = embedder
        self.max_text_bytes = max_text_bytes
        self.table = db.open_table(MEMORIES, memories_schema(embedder.dim))
        self.vector_cache = LanceVectorCache(db)
        if db.get_meta("memories_words") != WORDS_FORMAT:
            needed = ["title", "text", "tags", "files", "symbols", "context"]
            db.rewrite_column(self.table, "words", needed, memory_words)
            db.set_meta("memories_words", WORDS_FORMAT)
        db.finish_migration()

    # --- reads -------------------------------------------------------------------------------------------------

    def _query(self, where: str | None, limit: int | None = None, with_vector: bool = False) -> list[Memory]:
        query = self.table.search()
        if where:
            query = query.where(where)
        if not with_vector:
            query = query.select(_FIELDS)
        rows = query.limit(limit or max(self.table.count_rows(), 1)).to_list()
        return [_row_to_memory(r) for r in rows]

    def get(self, memory_id: str) -> Memory:
        found = self._query(f"id = {quote(memory_id)}", 1)
        if not found:
            raise CortexError(f"no memory with id {memory_id!r}")
        return found[0]

    def find(self, memory_id: str) -> Memory | None:
        found = self._query(f"id = {quote(memory_id)}", 1)
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
        found = self._query(" AND ".join(clauses) or None)
        found.sort(key=lambda m: (m.created_at, m.version), reverse=True)
        return found[:limit] if limit else found

    def newest(self, where: str | None, limit: int) -> list[Memory]:
        """The newest `limit` memories matching a filter. LanceDB has no ORDER BY, so look back through widening
        time windows (a BTree index on updated_at keeps each cheap) and read only ids and times until enough match."""
        stubs: list[dict] = []
        for days in (7, 30, 180, None):
            clauses = [c for c in (where, _since_clause(days)) if c]
            query = self.table.search().select(["id", "updated_at"])
            if clauses:
                query = query.where(" AND ".join(f"({c})" for c in clauses))
            stubs = query.limit(max(self.table.count_rows(), 1)).to_list()
            if len(stubs) >= limit:
                break
        stubs.sort(key=lambda r: r["updated_at"], reverse=True)
        ids = [r["id"] for r in stubs[:limit]]
        if not ids:
            return []
        found = {m.id: m for m in self._query(f"id IN ({', '.join(quote(i) for i in ids)})", len(ids))}
        return [found[i] for i in ids if i in found]

    def history(self, key: str) -> list[Memory]:
        """Every version stored under a source key (or, given a memory id, under that memory's key), oldest first."""
        found = self._query(f"source_key = {quote(key)}") if key else []
        if not found:
            memory = self.find(key)
            if memory is None:
                raise CortexError(f"no memory with key or id {key!r}")
            found = self._query(f"source_key = {quote(memory.source_key)}") if memory.source_key else [memory]
        return sorted(found, key=lambda m: m.version)

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
    ) -> list[RememberResult]:
        """Store drafts in one batch: embeddings first (outside the lock), then one locked read-modify-write."""
        for draft in drafts:
            validate_draft(draft, self.max_text_bytes)
        if not drafts:
            return []
        vectors, _ = self.embedder.embed([_embed_text(d) for d in drafts], self.vector_cache, progress)
        return self.db.write(lambda: self._write_batch(drafts, vectors, position))

    def _write_batch(self, drafts, vectors, position: GitPosition) -> list[RememberResult]:
        stamp = now()
        hashes = [text_hash(d.text) for d in drafts]
        existing = {
            (m.scope, m.text_hash): m
            for m in self._query(f"status = 'active' AND text_hash IN ({', '.join(quote(h) for h in set(hashes))})")
        }
        keys = sorted({d.source_key for d in drafts if d.source_key})
        by_key: dict[str, list[Memory]] = {}
        if keys:
            for m in self._query(f"source_key IN ({', '.join(quote(k) for k in keys)})"):
                by_key.setdefault(m.source_key, []).append(m)
        results: list[RememberResult] = []
        rows: list[dict] = []
        touched: list[str] = []
        superseded: list[str] = []
        for draft, digest, vector in zip(drafts, hashes, vectors):
            dup = existing.get((draft.scope, digest))
            if dup is not None and (not draft.source_key or dup.source_key in ("", draft.source_key)):
                dup.accessed_at = stamp
                touched.append(dup.id)
                results.append(RememberResult(dup, "duplicate"))
                continue
            versions = by_key.get(draft.source_key, []) if draft.source_key else []
            active = [m for m in versions if m.status == "active"]
            superseded.extend(m.id for m in active)
            for m in active:
                m.status = "superseded"
            created = draft.created_at or stamp
            memory = Memory(
                id=uuid.uuid4().hex[:12],
                kind=draft.kind,
                title=draft.title or _default_title(draft.text),
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
                vector=vector.tolist(),
            )
            if draft.source_key:
                by_key.setdefault(draft.source_key, []).append(memory)
            existing[(draft.scope, digest)] = memory
            rows.append(_memory_to_row(memory))
            results.append(RememberResult(memory, "new_version" if versions else "created"))
        if superseded:
            self.table.update(where=f"id IN ({', '.join(quote(i) for i in superseded)})", values={"status": "superseded", "updated_at": stamp})
        if rows:
            self.table.add(rows)
        if touched:
            self.table.update(where=f"id IN ({', '.join(quote(i) for i in touched)})", values={"accessed_at": stamp})
        self.db.ensure_text_indexes(self.table)
        self.db.ensure_search_indexes(self.table, MEMORY_BITMAPS, MEMORY_LABEL_LISTS, MEMORY_BTREES)
        self.db.maybe_compact(self.table)
        return results

    def touch(self, ids: Sequence[str]) -> None:
        """Record that memories were read (feeds the recency boost)."""
        if ids:
            where = f"id IN ({', '.join(quote(i) for i in ids)})"
            self.db.write(lambda: self.table.update(where=where, values={"accessed_at": now()}))

    def forget(self, memory_id: str | None = None, key: str | None = None, purge: bool = False) -> list[Memory]:
        """Soft-delete the active version (by id or key); with purge, remove every version for good."""
        if memory_id:
            target = self.get(memory_id)
            key = target.source_key or None
            chosen = self.history(key) if (purge and key) else [target]
        elif key:
            chosen = self._query(f"source_key = {quote(key)}")
            if not chosen:
                raise CortexError(f"no memory with key {key!r}")
        else:
            raise CortexError("forget needs a memory id or --key")
        if not purge:
            chosen = [m for m in chosen if m.status == "active"]
            if not chosen:
                raise CortexError("that memory is already deleted or superseded; use --purge to remove it for good")
        where = f"id IN ({', '.join(quote(m.id) for m in chosen)})"

        def apply():
            if purge:
                self.table.delete(where)
            else:
                self.table.update(where=where, values={"status": "deleted", "updated_at": now()})
            self.db.maybe_compact(self.table)

        self.db.write(apply)
        return chosen

    def set_source_key(self, memory_id: str, key: str) -> None:
        self.db.write(lambda: self.table.update(where=f"id = {quote(memory_id)}", values={"source_key": key}))

    def set_task_state(self, memory_id: str, state: str) -> Memory:
        memory = self.get(memory_id)
        if memory.kind != "task":
            raise CortexError(f"memory {memory_id} is a {memory.kind}, not a task")
        if memory.status != "active":
            raise CortexError(f"memory {memory_id} is {memory.status}; only active tasks can change state")
        stamp = now()
        self.db.write(
            lambda: self.table.update(where=f"id = {quote(memory_id)}", values={"task_state": state, "updated_at": stamp})
        )
        memory.task_state, memory.updated_at = state, stamp
        return memory

    def gc(self) -> int:
        """Compact the table and drop every old version now; returns how many versions were removed."""
        before = len(self.table.list_versions())
        self.db.write(lambda: self.db.compact(self.table))
        self.db.write(lambda: self.db.compact(self.vector_cache.table))
        return max(before - len(self.table.list_versions()), 0)

    def stats(self) -> StoreStats:
        memories = self._query(None)
        active = [m for m in memories if m.status == "active"]
        by_kind: dict[str, int] = {}
        for m in active:
            by_kind[m.kind] = by_kind.get(m.kind, 0) + 1
        return StoreStats(
            uri=self.db.uri,
            schema_version=SCHEMA_VERSION,
            memories=len(memories),
            active=len(active),
            by_kind=by_kind,
            open_tasks=sum(m.is_open_task for m in active),
            table_versions=len(self.table.list_versions()),
            disk_bytes=self.db.disk_bytes(),
        )


def _since_clause(days: int | None) -> str:
    if days is None:
        return ""
    cutoff = datetime.now(timezone.utc) - timedelta(days=days)
    return f"updated_at >= TIMESTAMP '{cutoff:%Y-%m-%d %H:%M:%S}'"


def _embed_text(draft: MemoryDraft) -> str:
    return f"{draft.title}\n{draft.text}" if draft.title else draft.text


def _default_title(text: str) -> str:
    line = text.strip().splitlines()[0].strip().lstrip("#").strip()
    return line if len(line) <= 80 else line[:77] + "..."


def memory_words(row: dict) -> str:
    """The one full-text column of a memory: title, text, tags, file and symbol names, identifier parts, context."""
    symbols = " ".join(row["symbols"] or [])
    parts = identifier_words(f"{row['title']} {row['text']} {symbols}")
    paths = " ".join(path_words(p) for p in row["files"] or [])
    fields = [row["title"], row["text"], " ".join(row["tags"] or []), paths, symbols, parts, row.get("context") or ""]
    return "\n".join(f for f in fields if f)


def _memory_to_row(memory: Memory) -> dict:
    row = {name: getattr(memory, name) for name in _FIELDS}
    row["vector"] = memory.vector
    row["words"] = memory_words(row)
    return row
