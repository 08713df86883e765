"""Vectors a search can use: finite numbers, as many as the model makes.

A vector with a NaN or an infinity (a model run that went wrong, a bit flipped on disk) makes every distance to
it NaN, and a cached vector of another length (a model changed under the same name) fails the search that meets
it. Neither stops a table from opening or reading, so `cortex doctor` checks them: a memory's or a chunk's vector
is marked to be embedded again (its text is intact), a cached one is dropped (the cache refills).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .sql import quote

VECTOR_TABLES = ("memories", "chunks", "vector_cache")
CACHE_TABLE = "vector_cache"
"""The one of them that keeps no text: a bad vector there is dropped, not made again."""


@dataclass(frozen=True)
class BadVectors:
    table: str
    keys: tuple[str, ...]
    """The rows' ids (the cache: their content hashes)."""
    why: str


def _bad_rows(column: pa.ChunkedArray, dim: int) -> np.ndarray:
    """For each row: a vector that is present and has a value other than a finite number, or another length."""
    flags = []
    for chunk in column.chunks:
        valid = np.asarray(chunk.is_valid())
        lengths = np.asarray(pa.compute.list_value_length(chunk).fill_null(0))
        values = np.asarray(pa.compute.list_flatten(chunk), dtype=np.float64)
        # Per row, how many of its own values are finite: differences of a running count (nulls have none).
        running = np.concatenate([[0], np.cumsum(np.isfinite(values))])
        ends = np.cumsum(lengths)
        finite_per_row = running[ends] - running[ends - lengths]
        flags.append(valid & ((lengths != dim) | (finite_per_row != lengths)))
    return np.concatenate(flags) if flags else np.zeros(0, dtype=bool)


def bad_vectors(table, dim: int, model: str) -> BadVectors | None:
    """The rows of a table whose vector a search cannot use; only rows the current model made are held to its
    dimension (others are embedded again anyway)."""
    key = "hash" if table.name == CACHE_TABLE else "id"
    model_column = "model" if table.name == CACHE_TABLE else "vector_model"
    data = table.to_arrow().select([key, model_column, "vector"])
    if data.num_rows == 0:
        return None
    current = np.asarray(pa.compute.equal(data[model_column], model).fill_null(False))
    bad = _bad_rows(data["vector"], dim) & current
    if not bad.any():
        return None
    keys = tuple(np.asarray(data[key])[bad].tolist())
    return BadVectors(table.name, keys, f"{len(keys)} vector(s) not finite or not {dim} numbers long")


def repair(db, table, found: BadVectors) -> str:
    """Embed the rows again (memories, chunks) or drop them from the cache; the line saying so."""
    for lo in range(0, len(found.keys), 500):
        where = ("hash" if found.table == CACHE_TABLE else "id") + " IN (" + \
            ", ".join(quote(k) for k in found.keys[lo:lo + 500]) + ")"
        if found.table == CACHE_TABLE:
            db.delete(table, where)
        elif found.table == "chunks":
            db.update(table, where, {"embedded": False, "vector_model": ""})
        else:
            db.update(table, where, {"vector_model": ""})
    then = "dropped from the cache" if found.table == CACHE_TABLE else "marked to be embedded again"
    return f"{found.table}: {found.why}; {then}"
