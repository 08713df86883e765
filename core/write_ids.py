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

What is stamped is the id and the command's fingerprint (`id#kind:digest`, `stamp`): the kind of write and a digest
of the arguments that define it (never the id, nor where the output goes). A retry with the same id and the same
command is answered from the earlier write; the same id with another command is refused (`ReusedWriteId`), in one
line, instead of being taken for the earlier write. The fingerprint rides in the same commit as the id, so no kill
can leave an id without it; a row stored before fingerprints (a bare id) matches any command.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar

from .errors import CortexError

ENV = "CORTEX_WRITE_ID"
COLUMN = "write_id"
_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{7,63}")
_current: ContextVar[str] = ContextVar("cortex_write_id", default="")
SEPARATOR = "#"
"""Between an id and its command's fingerprint in a stamp: never in an id (`checked`)."""


class ReusedWriteId(CortexError):
    """A write id that an earlier, different command committed with: a retry must repeat the command it names.
    (Its one argument is the message, so it crosses from the resident server as it was raised.)"""

    @classmethod
    def of(cls, write_id: str, earlier: str, now: str) -> ReusedWriteId:
        before, this = kind_of(earlier), kind_of(now)
        which = (f"another {this} with other text or options" if before == this else f"{before}, not this {this}")
        return cls(f"write id {write_id} was used by another write ({which}): nothing was done; give each write its "
                   f"own id")


def fingerprint(kind: str, arguments: Mapping[str, object]) -> str:
    """`kind:digest`: which write a command makes (its kind and the arguments that define it), in a few bytes.
    The arguments are read as JSON with sorted keys, so their order never matters."""
    import hashlib  # here: it loads OpenSSL, which an attached dashboard, importing this module, never needs

    text = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return f"{kind}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"


def kind_of(mark: str) -> str:
    return mark.split(":", 1)[0] or "a write"


def stamp(write_id: str, mark: str) -> str:
    """What the rows of a write store: its id and its command's fingerprint."""
    return f"{write_id}{SEPARATOR}{mark}" if mark else write_id


def parts(stamped_id: str) -> tuple[str, str]:
    """(id, fingerprint) of a stored stamp; the fingerprint is "" for a bare id (stored before fingerprints)."""
    write_id, _, mark = stamped_id.partition(SEPARATOR)
    return write_id, mark


def matching(write_id: str) -> str:
    """A filter on the `write_id` column for the rows of a write with this id (the id is `checked`, so quoting is
    plain; `_` is a LIKE wildcard, escaped)."""
    pattern = write_id.replace("_", "\\_")
    return f"({COLUMN} = '{write_id}' OR {COLUMN} LIKE '{pattern}{SEPARATOR}%' ESCAPE '\\')"


def checked(write_id: str, name: str = ENV) -> str:
    """The id, refused in one line unless it is 8 to 64 letters, digits and `._:-` (it is quoted into filters);
    `name`: what the caller called it."""
    if not _SHAPE.fullmatch(write_id):
        raise CortexError(f"{name} must be 8 to 64 letters, digits, '.', '_', ':' or '-' (starting with a letter or "
                          f"digit); got {write_id[:80]!r}")
    return write_id


def new_id() -> str:
    """A write id no other write has: the time (which orders them when read) and 48 random bits (as the thin
    client's own, app/cli/client.py)."""
    return f"{int(time.time()):x}-{os.urandom(6).hex()}"


def current() -> str:
    """The running command's stamp (`stamp`; "" when it has none: a background job)."""
    return _current.get()


@contextlib.contextmanager
def writing_as(stamped_id: str) -> Iterator[None]:
    """Run a write whose rows store `stamped_id` (a `stamp`)."""
    token = _current.set(stamped_id)
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
