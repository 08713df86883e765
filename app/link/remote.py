"""An attached process's side of the resident server: method calls and the index watcher's events.

The dashboard and `cortex mcp` use this instead of an engine of their own when a server is reachable, so the
repository has one engine, one model in memory and one watcher however many of them are open. Each call is its own
connection, like a command: a server replaced meanwhile (a new install, a crash) is started again and asked anew.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

from . import connection, protocol
from .exchange import Exchange
from .messages import CallRequest, Error, ProtocolError, Refused, Reply, Request, Result, Retired, WatchRequest


class RemoteError(Exception):
    """The server could not be reached, or went away before it took the call (so the call did not run)."""


class LostAnswer(RemoteError):
    """The server took the call and went away (or fell silent) before answering: it may have taken effect. A write
    made under a write id is safe to call again with that id (app/bridge/remote.py)."""


class Remote:
    """One (repository root, database)'s server, as an attached process reaches it."""

    def __init__(self, root: str, db: str, paths: protocol.ServerPaths, start: bool) -> None:
        self.root = Path(root)
        self.db = db
        self.paths = paths
        self.start = start
        self.fingerprint = protocol.fingerprint()
        """This process's install, taken once: a long-lived process keeps running the code it started with."""

    @classmethod
    def attach(cls, path: Path | str, db: str | None, start: bool) -> Remote | None:
        """The server for `path`'s repository when one answers (or, with `start`, once one is started); else None,
        and the caller hosts the engine itself."""
        key = connection.server_key(str(path), db)
        if key is None:
            return None
        try:
            paths = protocol.server_paths(*key)
        except OSError:
            return None
        conn = connection.connect(paths) or (connection.start_server(paths, *key) if start else None)
        if conn is None:
            return None
        conn.close()
        return cls(key[0], key[1], paths, start)

    def _connect(self) -> socket.socket:
        conn = connection.connect(self.paths)
        if conn is None and self.start:
            conn = connection.start_server(self.paths, str(self.root), self.db)
        if conn is None:
            raise RemoteError(f"the resident server for {self.root} is not running (restart to run without it)")
        return conn

    def _open(self, request: Request) -> tuple[socket.socket, Exchange]:
        """A connection whose request the server has accepted; one retry when the server was retiring."""
        for attempt in range(2):
            if attempt:
                connection.wait_stopped(self.paths, connection.START_SECONDS)
            conn = self._connect()
            exchange = Exchange.on_socket(conn)
            try:
                conn.settimeout(connection.SILENCE_SECONDS)
                exchange.send(request)
                reply = next(exchange.replies(), None)
            except (OSError, ProtocolError):
                conn.close()
                continue
            if exchange.accepted:
                return conn, exchange
            conn.close()
            if isinstance(reply, Refused):
                raise RemoteError(f"the resident server refused: {reply.message}")
            if reply is not None and not isinstance(reply, Retired):
                raise RemoteError(f"the resident server answered {reply.KIND} instead of taking the request")
        raise RemoteError("the resident server went away before it took the request")

    def call(self, facade: str, method: str, *args, **kwargs):
        """`facade.method(*args, **kwargs)` in the server; its exception is raised here as it was raised there."""
        return self.call_in("", facade, method, args, kwargs)

    def call_in(self, session: str, facade: str, method: str, args: tuple, kwargs: dict):
        """`call`, in a session (an MCP client's: the tools read and write that session's memories)."""
        return self.outcome(self.reply_in(session, facade, method, args, kwargs))

    def reply_in(self, session: str, facade: str, method: str, args: tuple, kwargs: dict) -> Reply | None:
        """`call_in`'s reply as it came, not yet unpacked (`outcome` does): a caller that asks ahead of need leaves
        the unpickling, and the imports it makes, to whoever takes the answer."""
        # This process's environment as it is now: the call runs with its settings and credentials, not the server's.
        request = CallRequest(self.fingerprint, facade, method, protocol.pack((args, kwargs)), session,
                              protocol.forwarded_environment())
        conn, exchange = self._open(request)
        with conn:
            try:
                reply = exchange.answer()
            except TimeoutError as exc:
                raise LostAnswer(f"the resident server said nothing for {connection.SILENCE_SECONDS:.0f} s") from exc
            except (OSError, ProtocolError) as exc:
                raise LostAnswer(f"lost the resident server while it answered ({exc}); it may or may not have "
                                 "taken effect") from exc
        return reply

    @staticmethod
    def outcome(reply: Reply | None):
        """A call's answer from its reply, or the server's exception raised here as it was raised there."""
        if isinstance(reply, Result):
            return protocol.unpack(reply.payload)
        if isinstance(reply, Error):
            raise protocol.unpack(reply.payload)
        raise LostAnswer("the resident server stopped while answering; it may or may not have taken effect")

    def watch(self) -> Subscription:
        return Subscription(*self._open(WatchRequest(self.fingerprint, protocol.forwarded_environment())))


class Subscription:
    """The index watcher's events (`Progress`, `Indexed`, `Update`, `Memories`, `Replaced`, `Failed` of `messages`),
    with `Alive` between them (so that the reader can check whether it should stop). Iteration ends when the server
    goes away or `close()` is called (from any thread)."""

    def __init__(self, conn: socket.socket, exchange: Exchange) -> None:
        self._conn = conn
        self._exchange = exchange
        self.closed = False

    def __iter__(self) -> Iterator[Reply]:
        try:
            for reply in self._exchange.replies():
                if self.closed:
                    return
                yield reply
        except (OSError, ProtocolError):
            return

    def close(self) -> None:
        self.closed = True
        try:
            self._conn.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._conn.close()
