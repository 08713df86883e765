"""Text a command takes that must be UTF-8: its arguments and its standard input.

Python hands a program bytes that are not UTF-8 as lone surrogates (`surrogateescape`): in arguments always, and
on standard input under a C or POSIX locale. Such text cannot be stored, searched or embedded (the tokenizer
raised a TypeError from inside the server), so it is refused with one line before anything runs. Standard library
only: the thin client checks arguments before it routes a command.
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from collections.abc import Mapping
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


def oversized_memory(data: bytes, encoding: str, errors: str) -> str | None:
    """One line when standard input given as a memory's text (`cortex remember -`) is over the size limit, else
    None: the thin client checks it before sending it, since sending 20 MB to the resident server and decoding it
    there took most of the second a refusal took. Only a text over the default limit is looked at, and the settings
    are read (a pydantic import, 0.2-0.3 s of the client's 0.25 s) only when something sets the limit; a limit set
    lower than the default is left to the command."""
    from ...core.errors import CortexError
    from ...core.sizes import MAX_TEXT_BYTES, check_sizes, over_limit

    if len(data) * 4 <= MAX_TEXT_BYTES:  # no decoding can make it larger than the default limit
        return None
    text = data.decode(encoding, errors)
    if over_limit(text, MAX_TEXT_BYTES) is None:
        return None
    try:
        check_sizes(memory_limit(os.environ), "memory", text=text)
    except CortexError as exc:
        return str(exc)
    return None


def memory_limit(env: Mapping[str, str]) -> int:
    """The `max_text_bytes` setting of a command run with `env`: its default unless the environment or the user's
    config file names it (the settings themselves, a pydantic import, are read only then)."""
    from ...core.locations import user_config_file
    from ...core.sizes import MAX_TEXT_BYTES

    named = any(name.lower() == "cortex_max_text_bytes" for name in env)
    try:
        named = named or "max_text_bytes" in user_config_file(env).read_text(encoding="utf-8", errors="replace").lower()
    except OSError:  # no config file: nothing in it sets the limit
        pass
    if not named:
        return MAX_TEXT_BYTES
    from ...core.config import load_settings

    return load_settings(env).max_text_bytes


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
