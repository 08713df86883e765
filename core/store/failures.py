"""What a LanceDB failure means, decided in one place: a commit that lost a race, a damaged database, a table
that does not exist, a remote store that did not answer.

LanceDB's Python binding raises built-in types only (python/src/error.rs `infer_error`): ValueError for a missing
table, bad input, a schema mismatch or a table that already exists; OSError for object-store and directory failures;
RuntimeError (`lance error: ...`) for everything Lance itself reports, commit conflicts and damaged files included.
Its own classes (`lancedb.remote.errors.HttpError`, `RetryError`) are raised by the LanceDB Cloud client only, which
cortex does not use (object stores go through object_store, whose failures arrive as OSError). So the type narrows
each kind to the built-in LanceDB uses for it, and the message, as Lance words it, decides: the wordings are listed
here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from ..errors import CortexError, DamagedDatabase, GoneUnderCompaction, StoreUnreachable

_LANCEDB_ERRORS = (RuntimeError, OSError, ValueError)
"""The built-in types LanceDB raises (see above): only these are read by their message."""

_CONFLICTS = ("Retryable commit conflict", "Commit conflict for version", "Too many concurrent writ")
"""How Lance words the errors of a commit that lost a race (RetryableCommitConflict, CommitConflict after its own
retries, TooMuchWriteContention). LanceDB raises them as RuntimeError("lance error: ..."); an incompatible
transaction ("Incompatible transaction: ...") is not among them, as repeating it fails the same way, except one
incompatible with a concurrent Overwrite: the table was replaced under it (a second creation of a new remote
table, see `Database.restore_overwritten`), and the same operation made again applies to the replacement."""
_OVERWRITTEN = ("Incompatible transaction", "concurrent transaction Overwrite")
_CORRUPTION = ("LanceError(IO)", "failed to fill whole buffer", "Corrupt", "corrupt file", "was not found", "Not found:",
               "No such file", "manifest", "Invalid scalar value buffer", "does not appear to be a Lance file",
               "decompression error", "panicked")
"""How Lance words what damaged files make it meet (a panic included: garbage in a data file can make its decoder
index out of range, which LanceDB raises as "rust future panicked" or "task N panicked with message ...")."""
_MISSING_TABLE = "was not found"
"""How LanceDB words a table that does not exist (ValueError from TableNotFound)."""
_UNREACHABLE = ("error sending request", "RetryError", "timed out", "Timeout", "Connection refused",
                "connection error", "dns error", "Failed to connect", "Failed to resolve region")
"""How object_store words a request that never got an answer (the store is down, unreachable or too slow; an S3
bucket whose region could not be looked up: no network, or no such bucket)."""


class TableMissing(Exception):
    """A table that does not exist (yet)."""


def is_missing_table(exc: BaseException) -> bool:
    """Whether opening a table failed because it does not exist (nothing is damaged)."""
    return isinstance(exc, ValueError) and _MISSING_TABLE in str(exc)


def is_commit_conflict(exc: BaseException) -> bool:
    """Whether LanceDB failed a commit because another writer committed first (nothing of it was written)."""
    if not isinstance(exc, (RuntimeError, OSError)):
        return False
    text = str(exc).strip()
    text = text[len("lance error: "):] if text.startswith("lance error: ") else text
    return text.startswith(_CONFLICTS) or (text.startswith(_OVERWRITTEN[0]) and _OVERWRITTEN[1] in text)


def looks_corrupt(exc: BaseException) -> bool:
    """Whether a LanceDB failure means files of the database are missing or damaged (what `cortex doctor` fixes)."""
    text = str(exc)
    return isinstance(exc, _LANCEDB_ERRORS) and any(m in text for m in _CORRUPTION) and (
        "lance" in text.lower() or _MISSING_TABLE in text or "panicked" in text)


def corrupt_error(uri: str, exc: BaseException) -> CortexError:
    return DamagedDatabase(f"database at {uri} is damaged ({first_line(exc)[:160]}); run `cortex doctor` to check and repair it")


def is_unreachable(exc: BaseException) -> bool:
    """Whether a failure on a remote store means the store did not answer (nothing was decided there): our own
    `StoreUnreachable`, or a LanceDB failure that says so."""
    if isinstance(exc, StoreUnreachable):
        return True
    return isinstance(exc, _LANCEDB_ERRORS) and any(m in str(exc) for m in _UNREACHABLE)


def unreachable_error(uri: str, exc: BaseException) -> StoreUnreachable:
    """One line naming the store and the kind of failure; the library's message (request URLs, retry details) is
    left out, so nothing from the environment can leak into it."""
    text = str(exc).lower()
    kind = ("connection refused" if "connection refused" in text else
            "timed out" if "timed out" in text or "operation timed" in text else "no answer")
    return StoreUnreachable(f"store {uri} is unreachable ({kind}); check the network or the endpoint setting")


_GONE = "Not found"
"""How Lance words an object (a version's manifest, a data file) that is no longer there."""


def is_gone(exc: BaseException) -> bool:
    """Whether LanceDB failed because an object it was reading (a manifest, a data or index file) is not there."""
    return isinstance(exc, _LANCEDB_ERRORS) and _GONE in str(exc)


T = TypeVar("T")


def again_if_gone(read: Callable[[], T]) -> T:
    """`read()`, made once more when a compaction in another process (`cortex gc`, which keeps no old version)
    removed a file of the version it was reading: the next read opens the newest version, whose files are there.
    Two processes measured it: 2 of 3,911 reads of the memories failed so in a minute of writes and `gc`."""
    try:
        return read()
    except Exception as exc:
        if not is_gone(exc):
            raise
    return read()


@contextmanager
def shared_compaction(uri: str) -> Iterator[None]:
    """A compaction of a shared remote store: a LanceDB failure because another machine's cleanup removed the old
    versions it was listing or rewriting raises `GoneUnderCompaction` (that machine has done the compaction)."""
    try:
        yield
    except _LANCEDB_ERRORS as exc:
        if is_gone(exc):
            # The library's message (object paths, source locations) stays out, as in `unreachable_error`.
            raise GoneUnderCompaction(f"store {uri} was compacted by another machine meanwhile") from exc
        raise


def is_permission_denied(exc: BaseException) -> bool:
    """A LanceDB write refused by the file system or the store (a read-only mount, someone else's database)."""
    text = str(exc).lower()
    return isinstance(exc, _LANCEDB_ERRORS) and ("permission denied" in text or "read-only" in text)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]
