"""Reaching a repository's resident server: which server a path and database name, the daemon setting, connecting
to a live server, starting one, asking it for its status or to stop, and waiting for it to exit.

Standard library only, like the client that imports it: a served command costs a Python start-up and a socket
round trip. Used by the `cortex` entry point, the dashboard and the MCP server when they attach, and `cortex serve`.
"""

from __future__ import annotations

import os
import socket
import sys
import time

from ...core.cloud_variables import without_cloud_variables
from . import protocol
from .exchange import Exchange
from .messages import ProtocolError, Refused, Retired, Status, StatusRequest, Stopping, StopRequest, VersionMismatch
from .protocol import ALIVE_SECONDS, ServerPaths

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from collections.abc import Mapping

CONNECT_SECONDS = 2.0
START_SECONDS = 60.0
"""How long a client waits for a server it started to listen (a Python start-up and the standard library, so well
under a second on an idle machine). On two cores shared by four test workers, each starting servers and index passes,
15 s was exceeded: the client then ran the command in-process, so MCP and the CLI briefly had two engines. Running
in-process costs the same start-up, so waiting for the server costs nothing more."""
SILENCE_SECONDS = ALIVE_SECONDS * 15
"""A server that says nothing for this long (it sends `alive` every second while working) is taken as hung."""


def daemon_wanted(env: Mapping[str, str] = os.environ) -> bool:
    """False when CORTEX_NO_DAEMON is set in `env` (a command's, or this process's), or the setting `daemon` (env
    CORTEX_DAEMON or config.toml) is false."""
    if env.get("CORTEX_NO_DAEMON", "") not in ("", "0"):
        return False
    falsy = ("0", "false", "no", "off", "f", "n")
    try:
        value = config_value("daemon", True, env)
    except Exception:  # a broken config file: run in-process, where the settings report it properly
        return False
    return str(value).strip().lower() not in falsy


def config_value(key: str, default: object = None, env: Mapping[str, str] = os.environ) -> object:
    """A top-level setting as `core.config` finds it (env CORTEX_<KEY>, then the user's config.toml), without
    importing pydantic; raises on a config file that cannot be read."""
    explicit = env.get(f"CORTEX_{key.upper()}")
    if explicit is not None:
        return explicit
    path = _config_file(env)
    if not os.path.isfile(path):
        return default
    import tomllib

    with open(path, encoding="utf-8") as file:
        return tomllib.loads(file.read()).get(key, default)


def _config_file(env: Mapping[str, str] = os.environ) -> str:
    """The user's config.toml as `core.locations.user_config_file` finds it, without importing platformdirs on
    Linux (a tenth of a warm command's budget on a busy machine): the XDG rule, which a test holds equal."""
    explicit = env.get("CORTEX_CONFIG")
    if explicit:
        return explicit
    if sys.platform.startswith("linux"):
        base = env.get("XDG_CONFIG_HOME", "").strip() or os.path.expanduser("~/.config")
        return os.path.join(base, "cortex-tui", "config.toml")
    from ...core.locations import user_config_file

    return str(user_config_file(env))


def server_key(path: str, db: str | None) -> tuple[str, str] | None:
    """(repository root, database) naming the server for a command's `-C` and `--db`; None if the path is missing."""
    root = repository_root(path)
    if root is None:
        return None
    db = db or os.environ.get("CORTEX_DB") or ""
    return root, os.path.abspath(db) if db and "://" not in db else db


def repository_root(path: str | os.PathLike[str]) -> str | None:
    """The enclosing work tree (a `.git` directory or file), else the directory itself; None if it does not exist.
    Only names the server: the server's engine finds the root with git itself. (`os.path`, not `pathlib`: see
    `cli.client`.)"""
    try:
        start = os.path.realpath(os.path.expanduser(path), strict=True)
    except (OSError, RuntimeError):
        return None
    candidate = start
    while not os.path.exists(os.path.join(candidate, ".git")):
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return start
        candidate = parent
    return candidate


def connect(paths: ServerPaths) -> socket.socket | None:
    """A connection to a live server of this user, or None (no socket, a stale one from a dead server, another
    user's process at the other end)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(CONNECT_SECONDS)
    try:
        conn.connect(paths.socket)
        uid = protocol.peer_uid(conn)
        if uid is not None and uid != os.getuid():
            raise ConnectionRefusedError("the server belongs to another user")
    except OSError:
        conn.close()
        return None
    return conn


def start_server(paths: ServerPaths, root: str, db: str) -> socket.socket | None:
    """Start a detached server and wait until it listens. Two clients may both start one: the lifetime lock lets
    one live, and both connect to it."""
    import subprocess

    try:
        log = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            server = subprocess.Popen(
                [sys.executable, "-m", "cortex_tui.app.server.serve", "--root", root, "--db", db],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, cwd="/", start_new_session=True,
                env=server_environment(),
            )
        finally:
            os.close(log)
    except OSError:
        return None
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        conn = connect(paths)
        if conn is not None:
            return conn
        if server.poll() not in (None, 0):
            return None  # it failed before listening (its reason is in the log)
        time.sleep(0.02)
    return None


def server_environment() -> dict[str, str]:
    """The environment a resident server starts with: this one without object-store credentials, so that the server
    never answers with its own: each command and call brings its caller's (see core/credentials.py)."""
    return without_cloud_variables(os.environ)


def ask(paths: ServerPaths, op: str) -> dict[str, object] | None:
    """The server's answer to `status` (its status record) or `stop` (its pid), or None when none is running.
    ProtocolError, in one line, when it answered anything else (a server of another install retires instead)."""
    conn = connect(paths)
    if conn is None:
        return None
    with conn:
        try:
            conn.settimeout(SILENCE_SECONDS)
            exchange = Exchange.on_socket(conn)
            exchange.send(StatusRequest() if op == "status" else StopRequest())
            reply = exchange.answer()
        except VersionMismatch:
            raise  # a server that is there, but of another install: said in one line, not taken for none
        except (OSError, ProtocolError):
            return None
    if isinstance(reply, Status):
        return dict(reply.info)
    if isinstance(reply, Stopping):
        return {"pid": reply.pid}
    if reply is None:
        return None
    if isinstance(reply, (Retired, Refused)):
        raise ProtocolError(f"the resident server {reply.KIND} the request: {reply.message}")
    raise ProtocolError(f"the resident server answered {op} with {reply.KIND}")


def wait_stopped(paths: ServerPaths, seconds: float) -> bool:
    """True once no process holds the server's lifetime lock (it has finished its last command and exited)."""
    import fcntl

    deadline = time.monotonic() + seconds
    while True:
        try:
            fd = os.open(paths.lock, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
        finally:
            os.close(fd)
        time.sleep(0.05)
