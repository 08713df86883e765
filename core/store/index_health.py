"""Whether each of a table's search indexes can be read, and rebuilding the ones that cannot.

A table lists its indexes in its manifest, and the index's files live in a folder of their own under `_indices/`.
With that folder gone (deleted by hand, lost with a disk, left out of a copy) the table still opens, counts and
reads whole, so `cortex doctor` said "nothing to repair" while every search said "the database is damaged (…Not
found: …/_indices/…)". Each index is therefore exercised by a query that must read it, and one that fails is
built again from the table's rows, with the type and column it had (`create_index(..., replace=True)`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .failures import is_gone
from .salvage import lance_failure


@dataclass(frozen=True)
class BrokenIndex:
    table: str
    name: str
    column: str
    index_type: str
    problem: str
    """The first line of what failed."""
    files_gone: bool
    """The index's files are not there (rather than unreadable)."""


def _probe(table, index_type: str, column: str) -> None:
    """A query that reads the index (each kind is read by a different kind of query)."""
    if index_type == "FTS":
        table.search("cortex", query_type="fts", fts_columns=column).limit(1).to_list()
    elif index_type == "LabelList":
        table.search().where(f"array_has_any({column}, ['cortex'])").limit(1).to_list()
    elif index_type.startswith(("IVF", "HNSW", "Ivf", "Hnsw")):
        dimension = table.schema.field(column).type.list_size
        table.search([0.0] * dimension, vector_column_name=column).limit(1).to_list()
    else:  # BTree, Bitmap
        table.search().where(f"{column} IS NULL").limit(1).to_list()


def broken_indexes(table) -> list[BrokenIndex]:
    found = []
    for index in table.list_indices():
        column = index.columns[0]
        try:
            _probe(table, index.index_type, column)
        except BaseException as exc:  # noqa: BLE001  (whatever stops a query from reading the index, a panic too)
            if not lance_failure(exc):
                raise
            found.append(BrokenIndex(table.name, index.name, column, index.index_type, str(exc).splitlines()[0][:200],
                                     is_gone(exc)))
    return found


def _config(index_type: str, rows: int):
    from lancedb.index import FTS, Bitmap, BTree, HnswSq, LabelList

    if index_type == "FTS":
        return FTS(with_position=False, stem=True)  # as `ensure_text_indexes` builds it
    if index_type.upper().startswith(("IVF", "HNSW")):
        return HnswSq(distance_type="l2", num_partitions=max(1, rows // 50_000))  # as `ensure_search_indexes`
    return {"BTree": BTree, "Bitmap": Bitmap, "LabelList": LabelList}[index_type]()


def rebuild(table, broken: BrokenIndex) -> None:
    """Build the index again over every row, in place of the unreadable one."""
    table.create_index(broken.column, config=_config(broken.index_type, table.count_rows()), replace=True)
