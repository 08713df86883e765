"""A served command's standard output and error: what it writes is collected for the client, in order."""

from __future__ import annotations

import io
from typing import TextIO


class ClientStream(io.TextIOBase, TextIO):
    """Standard output or error of one client: collects what the command writes, in order, with the other stream,
    and answers `isatty` and `encoding` as the client's own stream would, so rich picks the same colours, width
    and characters it would pick in the client's terminal. (A `TextIO`, as a command's context declares its
    streams, the way typeshed declares `io.StringIO` one.)"""

    # Plain attributes here hide `io.TextIOBase`'s read-only ones, so that each stream sets its own.
    encoding: str = "utf-8"
    errors: str = "strict"

    def __init__(self, number: int, tty: bool, encoding: str, sink: list[list]) -> None:
        self._number = number
        self._tty = tty
        self.encoding = encoding
        self._sink = sink

    def isatty(self) -> bool:
        return self._tty

    def writable(self) -> bool:
        return True

    def collected(self) -> list[list]:
        """What the command wrote so far on both streams, in order: [[stream number, text], ...]."""
        return [list(part) for part in self._sink]

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            if self._sink and self._sink[-1][0] == self._number:
                self._sink[-1][1] += text
            else:
                self._sink.append([self._number, text])
        return len(text)
