"""Arrow schemas of the database's tables, the schema version, and the additive migration of older databases."""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 8
"""Bump when a table gains columns; older databases get the new columns (as nulls) when opened.
v2: memories.context (words that help find a memory without being part of its text).
v3: memories.vector_model and chunks.vector_model (the model that made the vector; null before v3).
v4: chunks.names (the defined symbols' last parts, lower-cased, label-list indexed: definitions by name).
v5: memories.anchors (JSON: the commit, blob ids and definition hashes of the code a memory describes).
v6: memories.session (the session a memory of scope `session` belongs to).
v7: write_id in memories and the agent tables (the id of the write that stored a row; see core/store/receipts.py),
    and the receipts table.
v8: receipts.gone (the memories a purge deletes: its receipt, written before the delete, counts once they are
    gone); write ids are stored with their command's fingerprint (`id#kind:digest`, core/write_ids.py)."""

_TS = pa.timestamp("us", tz="UTC")
LEXICAL_ONLY = "lexical only"
"""The `vector_model` of a chunk kept out of the embeddings on purpose (core/index/embed_scope.py): stored as
embedded, so nothing waits for it, and never read by a vector search, which asks for the current model's rows."""


def memories_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("title", pa.string()),
            pa.field("text", pa.string()),
            pa.field("words", pa.string()),
            pa.field("context", pa.string()),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("files", pa.list_(pa.string())),
            pa.field("symbols", pa.list_(pa.string())),
            pa.field("branch", pa.string()),
            pa.field("commit", pa.string()),
            pa.field("scope", pa.string()),
            pa.field("source_key", pa.string()),
            pa.field("version", pa.int32()),
            pa.field("status", pa.string()),
            pa.field("task_state", pa.string()),
            pa.field("created_at", _TS),
            pa.field("updated_at", _TS),
            pa.field("accessed_at", _TS),
            pa.field("text_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("vector_model", pa.string()),
            pa.field("anchors", pa.string()),
            pa.field("session", pa.string()),
            pa.field("write_id", pa.string()),
        ]
    )


META_SCHEMA = pa.schema([pa.field("key", pa.string()), pa.field("value", pa.string())])

VECTOR_CACHE_SCHEMA = pa.schema(
    [pa.field("hash", pa.string()), pa.field("model", pa.string()), pa.field("vector", pa.list_(pa.float32()))]
)


def missing_fields(current: pa.Schema, wanted: pa.Schema) -> list[pa.Field]:
    """Fields a table of an older schema lacks; added as nullable columns by the migration."""
    have = set(current.names)
    return [f.with_nullable(True) for f in wanted if f.name not in have]


def files_schema() -> pa.Schema:
    return pa.schema(
        [
            pa.field("path", pa.string()),
            pa.field("language", pa.string()),
            pa.field("size", pa.int64()),
            pa.field("mtime_ns", pa.int64()),
            pa.field("blob", pa.string()),
            pa.field("last_commit_time", _TS),
            pa.field("last_author", pa.string()),
            pa.field("is_test", pa.bool_()),
            pa.field("imports", pa.list_(pa.string())),
            pa.field("symbols", pa.list_(pa.string())),
            pa.field("tokens", pa.int64()),
            pa.field("chunks", pa.int32()),
            pa.field("indexed_at", _TS),
        ]
    )


def chunks_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("path", pa.string()),
            pa.field("language", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("start_line", pa.int32()),
            pa.field("end_line", pa.int32()),
            pa.field("symbols", pa.list_(pa.string())),
            pa.field("names", pa.list_(pa.string())),
            pa.field("refs", pa.list_(pa.string())),
            pa.field("text", pa.string()),
            pa.field("words", pa.string()),
            pa.field("tokens", pa.int32()),
            pa.field("hash", pa.string()),
            pa.field("is_test", pa.bool_()),
            pa.field("embedded", pa.bool_()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
            pa.field("vector_model", pa.string()),
        ]
    )


EDGES_SCHEMA = pa.schema(
    [
        pa.field("src", pa.string()),
        pa.field("dst", pa.string()),
        pa.field("kind", pa.string()),
        pa.field("path", pa.string()),
    ]
)

SKIPPED_SCHEMA = pa.schema([pa.field("path", pa.string()), pa.field("reason", pa.string())])

AGENT_ROADMAP_SCHEMA = pa.schema([pa.field("seq", pa.int32()), pa.field("text", pa.string()), pa.field("at", _TS)])

AGENT_BRANCHES_SCHEMA = pa.schema(
    [
        pa.field("name", pa.string()),
        pa.field("purpose", pa.string()),
        pa.field("parent", pa.string()),
        pa.field("status", pa.string()),
        pa.field("merged_into", pa.string()),
        pa.field("created_at", _TS),
    ]
)

AGENT_STEPS_SCHEMA = pa.schema(
    [
        pa.field("branch", pa.string()),
        pa.field("n", pa.int32()),
        pa.field("observation", pa.string()),
        pa.field("thought", pa.string()),
        pa.field("action", pa.string()),
        pa.field("origin", pa.string()),
        pa.field("git_branch", pa.string()),
        pa.field("head", pa.string()),
        pa.field("at", _TS),
        pa.field("memory_id", pa.string()),
    ]
)

AGENT_COMMITS_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string()),
        pa.field("branch", pa.string()),
        pa.field("seq", pa.int32()),
        pa.field("kind", pa.string()),
        pa.field("purpose", pa.string()),
        pa.field("summary", pa.string()),
        pa.field("contribution", pa.string()),
        pa.field("steps", pa.list_(pa.int32())),
        pa.field("merged_from", pa.string()),
        pa.field("git_branch", pa.string()),
        pa.field("head", pa.string()),
        pa.field("at", _TS),
        pa.field("memory_id", pa.string()),
    ]
)
