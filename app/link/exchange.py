"""The one receive loop of the protocol: a message sent, and what comes back read and decoded into its kind.

Everything that talks the protocol goes through an `Exchange`: the thin client running a command or asking for a
receipt, an attached process's calls and subscriptions (`remote`), `connection.ask`, the server reading a request
and answering it, and an index pass's parent reading its child's JSON lines (`bridge.index_process`). Over a socket
a message is a frame (`protocol.send`, `protocol.receive`); over a child's pipes, a line of JSON.
"""

from __future__ import annotations

import json

from . import protocol
from .messages import Accepted, ProtocolError, decode_reply, decode_request

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Iterator
    from typing import IO, Any

    from .messages import Message, Reply, Request

    Read = Callable[[], dict[str, Any] | None]
    Write = Callable[[dict[str, Any]], None]


def _ignore(_reply: Reply) -> None:
    return None


class Exchange:
    """One end of a conversation: what it sends, and the replies it reads, in order."""

    def __init__(self, read: Read, write: Write) -> None:
        self._read = read
        self._write = write
        self.accepted = False
        """Whether the other end said `accepted`: before it, nothing ran, and the request may go elsewhere."""

    @classmethod
    def on_socket(cls, conn: socket.socket) -> Exchange:
        return cls(lambda: protocol.receive(conn), lambda message: protocol.send(conn, message))

    @classmethod
    def on_lines(cls, reader: IO[str] | None = None, writer: IO[str] | None = None) -> Exchange:
        """Over text streams, one JSON object a line (an index child's standard output, read by its parent)."""
        return cls(lambda: _read_line(reader), lambda message: _write_line(writer, message))

    def send(self, message: Message) -> None:
        self._write(message.to_wire())

    def request(self) -> Request | None:
        """The server's side: the request, or None when the client hung up before sending one."""
        data = self._read()
        return None if data is None else decode_request(data)

    def replies(self) -> Iterator[Reply]:
        """Every reply, decoded, until the other end closes (ProtocolError on anything that is not one)."""
        while True:
            data = self._read()
            if data is None:
                return
            reply = decode_reply(data)
            if isinstance(reply, Accepted):
                self.accepted = True
            yield reply

    def answer(self, heard: Callable[[Reply], None] = _ignore) -> Reply | None:
        """The reply that ends the answer (the first `FINAL` one), the others passed to `heard` on the way; None
        when the other end closed first."""
        for reply in self.replies():
            if reply.FINAL:
                return reply
            heard(reply)
        return None


def _read_line(reader: IO[str] | None) -> dict[str, Any] | None:
    if reader is None:
        raise ProtocolError("nothing to read from")
    line = reader.readline()
    if not line:
        return None
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise ProtocolError(f"not a JSON line: {exc}") from exc
    if not isinstance(data, dict):
        raise ProtocolError("a message must be a JSON object")
    return data


def _write_line(writer: IO[str] | None, message: dict[str, Any]) -> None:
    if writer is None:
        raise ProtocolError("nothing to write to")
    writer.write(json.dumps(message) + "\n")  # ASCII: no character of a message can break the line
    writer.flush()
