"""An in-process command's standard output or error, kept as it is written: a write run with the caller's id keeps
what it printed, so a retry prints it again, as a served command's does (app/server/command_streams.py)."""

from __future__ import annotations

import io
from typing import TextIO


class Recorded(io.TextIOBase, TextIO):
    """Writes through to the process's stream and keeps the text, in order with the other stream; answers
    `isatty`, `encoding` and `fileno` as that stream does, so the output looks as it would have."""

    def __init__(self, number: int, stream: TextIO, sink: list[list]) -> None:
        self._number = number
        self._stream = stream
        self._sink = sink

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        self._stream.flush()

    def collected(self) -> list[list]:
        """What the command wrote so far on both streams, in order: [[stream number, text], ...]."""
        return [list(part) for part in self._sink]

    def write(self, text: str) -> int:
        written = self._stream.write(text)
        if text:
            if self._sink and self._sink[-1][0] == self._number:
                self._sink[-1][1] += text
            else:
                self._sink.append([self._number, text])
        return written
