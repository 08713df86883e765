"""`cortex mcp --http`: the streamable HTTP transport on 127.0.0.1, behind a bearer token by default.

Binding loopback keeps other machines out, and the SDK's Host and Origin checks keep web pages out, but any local
process of any user could still call the tools (and read the repository's memories). The token lives in a file only
the user can read, so only clients the user configured with it get in.
"""

from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys
from pathlib import Path

from ...core.errors import CortexError
from ...core.locations import user_config_file

TOKEN_FILE = "mcp-token"


def loopback_security():
    """The Host and Origin checks of every endpoint: only a page or client addressing this machine by its loopback
    name gets in (a DNS-rebinding page names another host)."""
    from mcp.server.transport_security import TransportSecuritySettings

    # The SDK's own defaults for a server on localhost, stated once here for MCP and the recall endpoints alike.
    return TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                     allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
                                     allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])


def token_path() -> Path:
    """Beside the user's config file: one token per user for every repository (clients are configured once), and a
    place that exists even when the database is an object-storage URI."""
    return user_config_file().parent / TOKEN_FILE


def load_or_create_token(path: Path) -> str:
    """The token in `path`, made on first use with `secrets.token_urlsafe` in a file created 0600 (never briefly
    wider). A file others can read is refused: its token may already be known."""
    try:
        token = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        token = ""
    except OSError as exc:
        raise CortexError(f"cannot read the MCP token {path}: {exc.strerror}") from exc
    if token:
        mode = path.stat().st_mode & 0o777
        if os.name == "posix" and mode & 0o077:
            raise CortexError(f"the MCP token {path} is readable by others (mode {mode:o}): delete it for a new one")
        return token
    token = secrets.token_urlsafe(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return load_or_create_token(path)  # another server made it first: use theirs
    except OSError as exc:
        raise CortexError(f"cannot create the MCP token {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(token + "\n")
    return token


class RequireBearer:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401 before reaching MCP."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            from starlette.responses import PlainTextResponse

            response = PlainTextResponse("missing or wrong bearer token\n", status_code=401,
                                         headers={"WWW-Authenticate": 'Bearer realm="cortex"'})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope) -> bool:
        given = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        scheme, _, credential = given.partition(b" ")
        # compare_digest: the time taken must not tell how much of a guess was right.
        return scheme.lower() == b"bearer" and hmac.compare_digest(credential.strip(), self.token)


def serve_http(server, port: int, auth: bool = True, show_token: bool = False) -> None:
    import anyio
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1", transport_security=loopback_security())
    token = load_or_create_token(token_path()) if auth else ""
    sock = listening_socket(port)
    where = f"cortex mcp: serving http://127.0.0.1:{port}/mcp"
    if auth:
        app = RequireBearer(app, token)
        print(f"{where}; clients send `Authorization: Bearer <token>` with the token in {token_path()}", file=sys.stderr)
        if show_token:
            print(f"cortex mcp: token {token}", file=sys.stderr)
    else:
        print(f"{where} WITHOUT authentication (--no-auth): any local process can call it", file=sys.stderr)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    anyio.run(uvicorn.Server(config).serve, [sock])


def listening_socket(port: int) -> socket.socket:
    """The socket the server answers on, bound before serving: a port in use or not allowed is a one-line error
    here, not a traceback from inside the server's event loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)  # bound but not listening, a second server could bind the same port too
    except OSError as exc:
        sock.close()
        raise CortexError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
    return sock
