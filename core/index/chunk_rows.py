"""A source file as rows of the code index: its chunks (text, symbols, the words full-text search reads, what the
model will see), its definition and import edges and its file row; the chunk table's scalar indexes; and when each
path was last committed. Pure preparation: nothing here writes."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..embedding.embed import VectorCache
from ..git.gitctx import unquoted
from ..text import chunk_words
from .chunker import chunk_file
from .embed_scope import LEXICAL_ONLY, is_embedded
from .imports import RepoFacts, resolve_imports
from .languages import is_test_path, language_of
from .walk import SourceFile

CHUNK_BITMAPS = ("embedded", "vector_model")
CHUNK_LABEL_LISTS = ("names",)
"""Definitions by name are a lookup from the first lexical pass on (`definitions.definers`)."""
CHUNK_BTREES = ("id", "path")


@dataclass(frozen=True)
class PreparedFile:
    """One file's rows, ready to write: its file row (written last, the marker), chunks and edges."""

    file_row: dict
    chunk_rows: list[dict]
    edge_rows: list[dict]


def prepare_file(source: SourceFile, facts: RepoFacts, commit: tuple[datetime, str] | None, encoding: str,
                 dim: int, key: Callable[[str], str]) -> PreparedFile:
    """A file's rows for the three tables, chunk vectors zero and waiting for the embedding pass, or marked lexical
    only (`embed_scope`); `key` gives a chunk's vector its cache key (`Embedder.document_key`)."""
    language = language_of(source.path)
    chunks = chunk_file(source.text, language, encoding)
    imports = resolve_imports(source.path, source.text, language, facts)
    is_test = is_test_path(source.path)
    zero = [0.0] * dim
    chunk_rows: list[dict] = []
    edge_rows: list[dict] = []
    symbols: list[str] = []
    for chunk in chunks:
        chunk_id = hashlib.sha1(f"{source.path}:{chunk.start_line}:{chunk.end_line}:{source.blob}".encode()).hexdigest()[:16]
        symbols.extend(chunk.symbols)
        embeds = is_embedded(source.path, language, chunk.kind, is_test)
        chunk_rows.append(
            {
                "id": chunk_id,
                "path": source.path,
                "language": language,
                "kind": chunk.kind,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "symbols": chunk.symbols,
                "names": defined_names(chunk.symbols),
                "refs": chunk.refs,
                "text": chunk.text,
                "words": chunk_words(source.path, chunk.text),
                "tokens": chunk.tokens,
                "hash": key(embed_text(source.path, chunk.symbols, chunk.text)),
                "is_test": is_test,
                "embedded": not embeds,  # a lexical-only chunk waits for nothing
                "vector": zero,
                "vector_model": None if embeds else LEXICAL_ONLY,
            }
        )
        edge_rows.extend({"src": chunk_id, "dst": f"sym:{s}", "kind": "defines", "path": source.path} for s in chunk.symbols)
    edge_rows.extend({"src": source.path, "dst": target, "kind": "imports", "path": source.path} for target in imports)
    file_row = {
        "path": source.path,
        "language": language,
        "size": source.size,
        "mtime_ns": source.mtime_ns,
        "blob": source.blob,
        "last_commit_time": commit[0] if commit else None,
        "last_author": commit[1] if commit else "",
        "is_test": is_test,
        "imports": imports,
        "symbols": symbols,
        "tokens": sum(c.tokens for c in chunks),
        "chunks": len(chunks),
        "indexed_at": datetime.now(UTC),
    }
    return PreparedFile(file_row, chunk_rows, edge_rows)


def reuse_cached_vectors(prepared: list[PreparedFile], cache: VectorCache, model_id: str) -> None:
    """Chunks waiting for a vector whose text was embedded before (by content hash, any repository) get it now."""
    rows = [row for p in prepared for row in p.chunk_rows if not row["embedded"]]
    if not rows:
        return
    cached = cache.get_vectors(model_id, sorted({r["hash"] for r in rows}))
    for row in rows:
        vector = cached.get(row["hash"])
        if vector is not None:
            row["vector"], row["embedded"], row["vector_model"] = vector.tolist(), True, model_id


def last_commits(root: Path, paths: list[str]) -> dict[str, tuple[datetime, str]]:
    """Last commit time and author per path: one `git log` walk for many files, one call each for a few."""
    if not paths:
        return {}
    wanted = set(paths)
    # core.quotePath=false: a non-ASCII path comes as itself, as the listing names it (see `unquoted`).
    args = ["git", "-c", "core.quotePath=false", "log", "--format=%x00%ct%x1f%an", "--name-only", "--no-renames"]
    args += ["--max-count=3000"] if len(paths) > 10 else ["--", *paths]
    try:
        out = subprocess.run(args, cwd=root, capture_output=True, text=True, errors="replace").stdout
    except OSError:
        return {}
    found: dict[str, tuple[datetime, str]] = {}
    for record in out.split("\x00")[1:]:
        header, _, names = record.partition("\n")
        stamp, _, author = header.partition("\x1f")
        for name in map(unquoted, names.splitlines()):
            if name in wanted and name not in found:
                found[name] = (datetime.fromtimestamp(int(stamp), tz=UTC), author)
        if len(found) == len(wanted):
            break
    return found


def module_stem(path: str) -> str:
    """The name other files import a path by: its file name without extension, or its directory's name for a
    package's index file (`__init__.py`, `index.ts`, `mod.rs`)."""
    parts = path.split("/")
    stem = parts[-1].split(".", 1)[0]
    if stem in {"__init__", "index", "mod", "main", "lib"} and len(parts) > 1:
        stem = parts[-2]
    return stem


def defined_names(symbols: Iterable[str]) -> list[str]:
    """A chunk's `names` column: the last part of each symbol it defines, lower-cased, each once (search looks
    definitions up by name in its label-list index)."""
    return sorted({s.rsplit(".", 1)[-1].lower() for s in symbols})


def embed_text(path: str, symbols: list[str], text: str) -> str:
    """What the model sees for a chunk: where it lives and what it defines, then the code."""
    head = f"{path} {' '.join(symbols)}".strip()
    return f"{head}\n{text}"
