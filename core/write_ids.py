"""The idempotency id of the write a command makes: which write a stored row came from.

A client of the resident server names each write command it sends (`CORTEX_WRITE_ID`, or an id it makes up), so
that when it loses the server before the answer it can ask whether that write committed, and a caller that retries
with the same id gets the earlier result instead of a second copy. The id rides in the rows the write's decisive
commit stores (their `write_id` column), in that very commit: a kill -9 can never leave the write and its id
disagreeing (see core/store/receipts.py).

The id is set for the duration of a command (`writing_as`) in a context variable, so the server's threads each see
their own command's, and the stores stamp it without every call in between passing it on. Writes that are only a
step towards the decisive one (the memory an agent step mirrors into) run `unstamped`, so finding the id means the
whole command's write is stored.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

from .errors import CortexError

ENV = "CORTEX_WRITE_ID"
COLUMN = "write_id"
_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{7,63}")
_current: ContextVar[str] = ContextVar("cortex_write_id", default="")


def checked(write_id: str) -> str:
    """The id, refused in one line unless it is 8 to 64 letters, digits and `._:-` (it is quoted into filters)."""
    if not _SHAPE.fullmatch(write_id):
        raise CortexError(f"{ENV} must be 8 to 64 letters, digits, '.', '_', ':' or '-' (starting with a letter or "
                          f"digit); got {write_id[:80]!r}")
    return write_id


def current() -> str:
    """The running command's write id ("" when it has none: the dashboard, an MCP tool, a background job)."""
    return _current.get()


@contextlib.contextmanager
def writing_as(write_id: str) -> Iterator[None]:
    token = _current.set(write_id)
    try:
        yield
    finally:
        _current.reset(token)


def unstamped() -> contextlib.AbstractContextManager[None]:
    """Writes that are not the command's decisive one: their rows carry no id."""
    return writing_as("")


def stamped(row: dict) -> dict:
    """A row of a stamped table with the running command's id (None without one)."""
    return {**row, COLUMN: current() or None}


def stamped_update(values: dict) -> dict:
    """An update's values, with the running command's id when it has one (an update without one leaves the rows'
    ids as they are)."""
    return {**values, COLUMN: current()} if current() else values
