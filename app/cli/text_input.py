"""Text a command takes that must be UTF-8: its arguments and its standard input.

Python hands a program bytes that are not UTF-8 as lone surrogates (`surrogateescape`): in arguments always, and
on standard input under a C or POSIX locale. Such text cannot be stored, searched or embedded (the tokenizer
raised a TypeError from inside the server), so it is refused with one line before anything runs. Standard library
only: the thin client checks arguments before it routes a command.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from typing import TextIO

_UNDECODABLE = re.compile("[\udc80-\udcff]")
"""How `surrogateescape` writes a byte that is not UTF-8. A regular expression, not a loop over the characters: a
20 MB standard input took half a second to look through in Python."""


def _first_undecodable(text: str) -> int | None:
    """Where text read with `surrogateescape` (how Python decodes arguments, and standard input under a C or POSIX
    locale) holds a byte that was not UTF-8, or None."""
    found = _UNDECODABLE.search(text)
    return found.start() if found else None


def _shown(text: str) -> str:
    """The text with its undecodable bytes as `\\xff`, short enough for one line."""
    shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return shown if len(shown) <= 60 else shown[:57] + "..."


def invalid_argument(argv: list[str]) -> str | None:
    """One line naming the first argument that is not valid UTF-8 (None when all are): it would reach the engine as
    text it cannot store, search or embed."""
    for number, arg in enumerate(argv, 1):
        at = _first_undecodable(arg)
        if at is not None:
            byte = ord(arg[at]) - 0xDC00
            return f"argument {number} ('{_shown(arg)}') is not valid UTF-8 (byte 0x{byte:02x} at character {at + 1})"
    return None


def read_text(stream: TextIO) -> str:
    """A command's standard input as text (`-` for a memory or a task): one line naming the first byte that is not
    UTF-8."""
    from ...core.errors import CortexError

    text = stream.read()
    at = _first_undecodable(text)
    if at is not None:
        byte = ord(text[at]) - 0xDC00
        raise CortexError(f"standard input is not valid UTF-8 (byte 0x{byte:02x} at character {at + 1})")
    return text
