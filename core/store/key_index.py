"""The keys a table's B-tree index on its key column holds: another source of the ids of rows whose own files no
longer read (a truncated data file loses its footer, so not even its id column can be read).

The index lives in `_indices/<uuid>/page_data.lance`, a Lance file whose `values` column holds every indexed key.
Which folder is the key's index is said by the table's manifest (`list_indices`) or, when no manifest is left
(`_versions/` deleted), by the transactions that built it: their `IndexMetadata` messages (uuid in field 1, name in
field 3, when it was made in field 8, in milliseconds) read with a small protobuf walker, the newest made winning
(an optimize's transaction names the index it replaces too). A compaction's cleanup removes the transactions of
the versions it removes, so after `cortex gc` none may name it: then the index is known by its values, the one
B-tree index whose values are all distinct, none empty, not content digests, and hold the most of the keys that
did read (`uuid_by_values`). The index covers the
rows it was last built or optimized over (`cortex gc` brings it up to date), so it names the rows written before
then; a row purged after that is still named.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

_DIGEST = re.compile(r"[0-9a-f]{64}")
"""A sha256 digest: the memories' `text_hash` index (the duplicate rule's) is as distinct as their ids, and with
every row lost the two tied, but no key is a digest."""
_MAX_DEPTH = 6
"""How deep the walker looks for index metadata in a transaction (Transaction > CreateIndex > IndexMetadata)."""


def index_name(column: str) -> str:
    """LanceDB's default name for an index on one column, which every index cortex builds has."""
    return f"{column}_idx"


def indexed_keys(folder: Path, index_uuid: str) -> set[str] | None:
    """The values of a B-tree index (None when it is gone or does not read)."""
    from lance.file import LanceFileReader

    from .salvage import lance_failure

    path = folder / "_indices" / index_uuid / "page_data.lance"
    if not path.is_file():
        return None
    try:
        values = LanceFileReader(str(path), columns=["values"]).read_all().to_table()["values"]
    except BaseException as exc:  # noqa: BLE001 - a Lance panic included (see lance_failure)
        if not lance_failure(exc):
            raise
        return None
    return {str(v) for v in values.to_pylist() if v is not None}


def uuid_from_manifest(table, column: str) -> str | None:
    for index in table.list_indices():
        if list(index.columns) == [column] and index.index_type == "BTree":
            return str(index.index_uuid)
    return None


def uuid_from_transactions(folder: Path, column: str) -> str | None:
    """The uuid of the newest index named `<column>_idx` that a transaction built and whose folder is still there."""
    wanted = index_name(column).encode()
    found: list[tuple[int, str]] = []
    for path in (folder / "_transactions").glob("*.txn"):
        data = path.read_bytes()
        if wanted not in data:
            continue
        for name, raw, made in _index_metadata(data, 0):
            folder_name = str(uuid.UUID(bytes=raw))
            if name == wanted and (folder / "_indices" / folder_name / "page_data.lance").is_file():
                found.append((made, folder_name))
    return max(found)[1] if found else None


def uuid_by_values(folder: Path, kept: set[str]) -> str | None:
    """The B-tree index that looks like a key's: strings, all distinct and none empty, and more of the kept keys
    than any other such index (none when two tie: which is the key's cannot be told)."""
    scored = []
    for path in (folder / "_indices").glob("*/page_data.lance"):
        values = indexed_keys(folder, path.parent.name)
        if not values:
            continue
        from lance.file import LanceFileReader

        column = LanceFileReader(str(path), columns=["values"]).read_all().to_table()["values"]
        if column.type not in (pa.string(), pa.large_string()) or len(values) != len(column) or "" in values:
            continue
        if all(_DIGEST.fullmatch(v) for v in values):
            continue
        scored.append((len(values & kept), len(values), path.parent.name))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[0][:2] == scored[1][:2]):
        return None
    return scored[0][2]


def _index_metadata(data: bytes, depth: int) -> Iterator[tuple[bytes, bytes, int]]:
    """(name, uuid bytes, when made) of every message in `data` shaped as Lance's IndexMetadata."""
    fields = _fields(data)
    if fields is None:
        return
    uuids = [_uuid(v) for n, v in fields if n == 1 and isinstance(v, bytes)]
    names = [v for n, v in fields if n == 3 and isinstance(v, bytes)]
    if len(uuids) == 1 and uuids[0] and len(names) == 1:
        made = [v for n, v in fields if n == 8 and isinstance(v, int)]
        yield names[0], uuids[0], made[0] if made else 0
        return
    if depth < _MAX_DEPTH:
        for _, value in fields:
            if isinstance(value, bytes):
                yield from _index_metadata(value, depth + 1)


def _uuid(value: bytes) -> bytes | None:
    """Lance's UUID message: its field 1 holds the 16 bytes."""
    inner = _fields(value)
    if inner and len(inner) == 1 and inner[0][0] == 1 and isinstance(inner[0][1], bytes) and len(inner[0][1]) == 16:
        return inner[0][1]
    return None


def _fields(data: bytes) -> list[tuple[int, int | bytes]] | None:
    """A protobuf message's fields in order (varints as ints, length-delimited as bytes), or None when `data` is
    not one (most byte strings are not: a walker tries each)."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        if key is None or key >> 3 == 0:
            return None
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            if value is None:
                return None
            out.append((number, value))
        elif wire == 2:
            length, at = _varint(data, at)
            if length is None or at + length > len(data):
                return None
            out.append((number, data[at:at + length]))
            at += length
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
            if at > len(data):
                return None
        else:
            return None
    return out


def _varint(data: bytes, at: int) -> tuple[int | None, int]:
    value = shift = 0
    while at < len(data) and shift < 64:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
    return None, at
