"""The resident server's frames and where its files live. Standard library only: the thin client imports it.

A frame is a 4-byte big-endian length and a UTF-8 JSON object: one message of `messages` (its kinds, the version,
and what each kind means). Strings keep lone surrogates (`surrogatepass`), so text that Python itself could not
print still crosses the socket unchanged and fails, if at all, where it would fail in-process: when the client
writes it.

One connection carries one request: the client sends it; the server answers `accepted` once it has read and
checked it, `alive` every second while the command waits or runs, and finally `done` (the command's output in
order and its exit code), or `retired` (this server is being replaced and ran nothing) or `refused` (it ran
nothing). A client that saw no `accepted` knows the command did not run and may retry it elsewhere. A command that
writes carries a write id; a client that lost its server after `accepted` sends `receipt` with that id (to a new
server) and hears `receipt` with `committed` true or false (and `queued` for a team write kept in the repository's
queue), once no command with that id is running any more. An attached process's write `call` carries a write id
too (`write_id`), and is sent once more under it when the answer is lost.

Processes that attach to the server instead of building an engine of their own (the dashboard, `cortex mcp`) send
`call` (one method of the dashboard's bridge or of the MCP tools, answered by `result` or `error`) and `watch` (a
subscription to the repository's one index watcher: `progress` while the first update runs, `indexed`, then an
`update` per change, `memories` when any process changed a memory, `replaced` when the database was replaced,
with `alive` in between, until the client hangs up). Their arguments and answers are plain data, pickled: standard
library values and the engine's own request and answer dataclasses, nothing else (`pack` and `unpack` refuse any
other class, so an attached process never imports the engine to read an answer). Both ends are processes of the same
user running the same install (the socket is private to the user, the peer's uid is checked, and the fingerprint
must match), so nothing crosses a trust boundary, and every dataclass crosses without a serialiser of its own to
keep in step.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import stat
import struct
import sys

from ...core.cloud_variables import CLOUD_PREFIXES
from .messages import ProtocolError

MAX_FRAME = 256 * 1024 * 1024
"""Larger frames are refused: nothing cortex prints comes near, and a corrupt length must not allocate gigabytes."""
ALIVE_SECONDS = 1.0
"""How often the server says it is still working on a request."""

# Client environment the command sees in the server. Everything else stays the server's own: changing the C
# environment while native threads (LanceDB, ONNX) read it is not safe, so only what can change a command's
# result or its look crosses over, and the command reads it from its context, never from the process. The object
# stores' credentials (AWS_*, GOOGLE_*, AZURE_*) cross too: the server, started without any of its own, hands a
# command's to LanceDB as storage options (core/credentials.py).
FORWARDED_PREFIXES = ("CORTEX_", "XDG_", "GIT_", "LC_", *CLOUD_PREFIXES)
FORWARDED_NAMES = frozenset({
    "HOME", "LANG", "TZ", "TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
})


def forwarded(name: str) -> bool:
    return name in FORWARDED_NAMES or name.startswith(FORWARDED_PREFIXES)


def forwarded_environment() -> dict[str, str]:
    """The variables of this process that a request carries (see FORWARDED_PREFIXES)."""
    return {k: v for k, v in os.environ.items() if forwarded(k)}


class ServerPaths:
    """The files of the server for one (repository root, database): socket, lifetime lock, status, log. (Plain
    strings: `pathlib` is one of the modules the thin client does without; see `cli.client`.)"""

    __slots__ = ("socket", "lock", "info", "log")

    def __init__(self, socket: str, lock: str, info: str, log: str) -> None:
        self.socket = socket
        self.lock = lock
        self.info = info
        self.log = log


def runtime_dir() -> str:
    """A directory only this user can enter: `$CORTEX_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/cortex-tui`, else
    `<tmp>/cortex-tui-<uid>`. Refused (OSError) when it is someone else's or open to others, because whoever can
    enter it can talk to the server."""
    explicit = os.environ.get("CORTEX_RUNTIME_DIR")
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if explicit:
        path = explicit
    elif xdg and os.path.isdir(xdg):
        path = os.path.join(xdg, "cortex-tui")
    else:
        path = os.path.join(temporary_dir(), f"cortex-tui-{os.getuid()}")
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(f"{path} is not a private directory of this user (mode {stat.filemode(info.st_mode)})")
    return path


def temporary_dir() -> str:
    """`tempfile.gettempdir()` as it is on Unix, without importing tempfile (and the shutil and random it imports, 4 ms
    of a served command on the 2-core development machine): the first of `$TMPDIR`, `$TEMP`, `$TMP`, /tmp, /var/tmp,
    /usr/tmp that is a directory this user can write in. (tempfile writes a file to find out, and its last resort is
    the working directory, where the runtime directory has no business: OSError here, and the command runs
    in-process.)"""
    candidates = [os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")] + ["/tmp", "/var/tmp", "/usr/tmp"]
    for candidate in filter(None, candidates):
        path = os.path.abspath(candidate)
        if os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK):
            return path
    raise FileNotFoundError("no writable temporary directory ($TMPDIR, /tmp, /var/tmp, /usr/tmp)")


def server_paths(root: str, db: str) -> ServerPaths:
    """Named by a hash: a socket path under `.cortex/` can pass the 108-byte limit of Unix socket addresses."""
    name = sha256_hex(f"{root}\0{db}".encode("utf-8", "surrogatepass"))[:20]
    base = os.path.join(runtime_dir(), name)
    return ServerPaths(*(base + suffix for suffix in (".sock", ".lock", ".json", ".log")))


def sha256_hex(data: bytes) -> str:
    """`hashlib.sha256(data).hexdigest()` from Python's own implementation: importing `hashlib` loads OpenSSL, 3 ms of
    a served command on the 2-core development machine against 0.1 ms for this."""
    # CPython's own modules, which typeshed has no stubs for.
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # Python 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]  # Python 3.11
        except ImportError:  # a Python built without its own hashes
            from hashlib import sha256
    return sha256(data).hexdigest()


INSTALLED_MARKS = (".dist-info", ".egg-info", ".egg-link", ".pth")
"""Entries of site-packages that installers write per distribution (and per editable install)."""


@functools.cache
def fingerprint() -> str:
    """This process's `installed_fingerprint()`, taken once: a process runs the code it imported, so an install
    changed later does not make it another version (and a client that asks a server many times pays the walk once)."""
    return installed_fingerprint()


def installed_fingerprint() -> str:
    """Changes when the installed cortex changes: its version, the size and time of every module of the engine and
    the command line, the Python running it, and the distributions installed in its site-packages (their
    metadata folders name each version, so an install, upgrade or removal of any dependency changes the list;
    a byte-code cache written beside them does not). A server whose fingerprint differs from its client's is
    replaced."""
    import cortex_tui

    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    parts = [cortex_tui.__version__, sys.executable, sys.version]
    for folder in ("app", "core"):
        for top, dirs, files in os.walk(os.path.join(package, folder)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                st = os.stat(os.path.join(top, name))
                parts.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
    for entry in sys.path:
        if entry.endswith("site-packages") and os.path.isdir(entry):
            parts.append(entry)
            parts.extend(sorted(name for name in os.listdir(entry) if name.endswith(INSTALLED_MARKS)))
    return sha256_hex("\n".join(parts).encode("utf-8", "surrogatepass"))[:16]


PLAIN_MODULES = frozenset({"builtins", "copyreg", "collections", "datetime", "zoneinfo", "pathlib"})
"""Standard-library modules whose values cross the socket (containers, dates, paths, exceptions)."""
PLAIN_PACKAGE = "cortex_tui.core."
"""Besides those, only the engine's own records and answers cross (dataclasses of light modules: `core.answers`,
`core.records`, `core.requests`, `core.context.items`, `core.errors`, ...): never a class of another package (pydantic,
LanceDB, pyarrow), whose unpickling would import it on the other end, nor anything that is not data."""


def _plain(module: str) -> bool:
    return module in PLAIN_MODULES or module.startswith(PLAIN_PACKAGE)


def pack(value) -> str:
    """`value` pickled, refused (PicklingError) unless it is plain data (see PLAIN_MODULES and PLAIN_PACKAGE)."""
    import base64
    import io
    import pickle
    import types

    class PlainPickler(pickle.Pickler):
        def reducer_override(self, obj):
            # Classes and functions are pickled by name (their module is what the other end imports), other
            # objects by their class.
            named = obj if isinstance(obj, (type, types.FunctionType, types.BuiltinFunctionType)) else type(obj)
            # A C method bound to its class (`ZoneInfo._unpickle`) names no module itself: its class does.
            module = getattr(named, "__module__", None) or getattr(getattr(obj, "__self__", None), "__module__", "")
            if _plain(module):
                return NotImplemented
            if hasattr(obj, "tolist"):  # numpy numbers and arrays cross as Python numbers and lists
                plain = obj.tolist()
                return type(plain), (plain,)
            raise pickle.PicklingError(f"{named.__module__}.{named.__qualname__} is not plain data: it would make "
                                       "the other end import its package")

    buffer = io.BytesIO()
    PlainPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def unpack(text: str):
    import base64
    import io
    import pickle

    class PlainUnpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            # `pack` never sends anything else; a payload that names another class anyway fails here instead of
            # importing (or running) it.
            if not _plain(module):
                raise pickle.UnpicklingError(f"{module}.{name} is not plain data")
            return super().find_class(module, name)

    return PlainUnpickler(io.BytesIO(base64.b64decode(text))).load()


def send(sock: socket.socket, message: dict[str, object]) -> None:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    sock.sendall(struct.pack(">I", len(body)) + body)


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            if left == size:
                return None
            raise ProtocolError("the connection closed in the middle of a message")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict | None:
    """The next message, or None when the other end closed the connection between messages."""
    head = _read_exactly(sock, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_FRAME:
        raise ProtocolError(f"message of {size} bytes is larger than the limit")
    body = _read_exactly(sock, size) if size else b""
    if body is None:
        raise ProtocolError("the connection closed in the middle of a message")
    try:
        message = json.loads(body.decode("utf-8", "surrogatepass"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"not a JSON message: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("a message must be a JSON object")
    return message


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end (Linux SO_PEERCRED); None where the platform cannot say."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid
