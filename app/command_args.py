"""What command handlers take from their parsed arguments: the engine they run on, comma-separated lists, and text
that must be UTF-8 (arguments and standard input)."""

from __future__ import annotations

import sys
from pathlib import Path

engine_source = None
"""Set by the resident server (`cortex serve`): a callable (path, db, settings) -> Engine that hands commands its
warm engines instead of building one per command."""


def engine_from(args):
    from ..core.config import load_settings
    from ..core.engine import Engine

    settings = load_settings(use_global=False if getattr(args, "no_global", False) else None)
    if engine_source is not None:
        return engine_source(Path(args.path), args.db, settings)
    return Engine(Path(args.path), db=args.db, settings=settings)


def split_list(values: list[str] | None) -> tuple[str, ...]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)


def _first_undecodable(text: str) -> int | None:
    """Where text read with `surrogateescape` (how Python decodes arguments, and standard input under a C or POSIX
    locale) holds a byte that was not UTF-8, or None."""
    for i, char in enumerate(text):
        if "\udc80" <= char <= "\udcff":
            return i
    return None


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


def read_stdin() -> str:
    """Standard input as text (`-` for a memory or a task): one line naming the first byte that is not UTF-8."""
    from ..core.errors import CortexError

    text = sys.stdin.read()
    at = _first_undecodable(text)
    if at is not None:
        byte = ord(text[at]) - 0xDC00
        raise CortexError(f"standard input is not valid UTF-8 (byte 0x{byte:02x} at character {at + 1})")
    return text
