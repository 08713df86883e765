"""Every message of the resident server's protocol, one class per kind: what a client asks (`Request`, the union of
the request kinds) and every answer it can hear (`Reply`), with each kind's wire form (`to_wire`, `from_wire`).

On the wire a message is one JSON object: its kind under `type`, the protocol's `version`, and the kind's fields by
name. The same objects travel in the resident server's frames (`protocol.send`) and in the JSON lines an index
child writes to its parent (`bridge.index_process`); `exchange.Exchange` reads both.

A message of another protocol version is refused with a one-line `VersionMismatch`, never read field by field:
the server answers it `retired` (and goes, so that the client's next attempt starts a server of its own install),
and `retired` and `refused` keep their shape in every version, so that any client can read them.

The kinds are plain classes, not dataclasses: the thin client imports this module, and `dataclasses` imports
`inspect` (see `app/command.py`). Each kind lists its fields in `__slots__`, takes them typed in `__init__` and
refuses to change afterwards, as a frozen dataclass would.

Arguments and answers of `call`, and the watcher's reports, are the engine's own request and answer dataclasses:
they cross as a pickle of plain data inside one string field (`payload`; see `protocol.pack`), so that every
dataclass crosses without a serialiser of its own to keep in step.
"""

from __future__ import annotations

PROTOCOL_VERSION = 4
"""3: one request class for every operation, replies as dicts. 4: a class per kind, replies versioned too."""

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar, TypeVar

    M = TypeVar("M", bound="Message")
    P = TypeVar("P", bound="Packed")


class ProtocolError(Exception):
    """The other end sent something that is not a message of this protocol, or went away mid-message."""


class VersionMismatch(ProtocolError):
    """The other end speaks another version of the protocol (another cortex install)."""


class Message:
    """What every kind shares: its fields are its `__slots__`, it compares by them, and it is frozen."""

    __slots__: tuple[str, ...] = ()
    KIND: ClassVar[str] = ""
    """The kind's name on the wire (`type`)."""
    FINAL: ClassVar[bool] = True
    """Whether the reply ends the answer to a request (`accepted`, `alive` and `progress` do not)."""

    def _fill(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a {type(self).__name__} message cannot change")

    def fields(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, Message) and other.fields() == self.fields()

    def __hash__(self) -> int:
        return hash((self.KIND, repr(self.fields())))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.fields().items())})"

    def to_wire(self) -> dict[str, object]:
        """The JSON object of this message: its kind, the version, and its fields (tuples as lists)."""
        body: dict[str, object] = {"type": self.KIND, "version": PROTOCOL_VERSION}
        for name, value in self.fields().items():
            body[name] = [list(v) if isinstance(v, tuple) else v for v in value] if isinstance(value, tuple) else value
        return body

    @classmethod
    def from_wire(cls: type[M], data: Mapping[str, Any]) -> M:
        raise NotImplementedError


# --- reading a field, with a one-line error for anything else ------------------------------------------------------


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: object = ...) -> Any:
    if name not in data:
        if default is ...:
            raise ProtocolError(f"a {data.get('type')!r} message lacks {name!r}")
        return default
    value = data[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):  # True is an int to Python
        raise ProtocolError(f"{name!r} of a {data.get('type')!r} message is a {type(value).__name__}")
    return value


def _text(data: Mapping[str, Any], name: str, default: str | None = None) -> str:
    return str(_field(data, name, str, ... if default is None else default))


def _flag(data: Mapping[str, Any], name: str) -> bool:
    return bool(_field(data, name, bool, False))


def _number(data: Mapping[str, Any], name: str) -> int:
    return int(_field(data, name, int))


def _texts(data: Mapping[str, Any], name: str) -> tuple[str, ...]:
    values = _field(data, name, list, [])
    if not all(isinstance(v, str) for v in values):
        raise ProtocolError(f"{name!r} of a {data.get('type')!r} message is not a list of strings")
    return tuple(values)


def _environment(data: Mapping[str, Any]) -> dict[str, str]:
    env = _field(data, "env", dict, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise ProtocolError(f"'env' of a {data.get('type')!r} message is not a map of strings")
    return dict(env)


# --- requests: what a client asks -----------------------------------------------------------------------------------


class Where(Message):
    """The `-C`, `cortex index TARGET`, `--db` and `--no-global` of a command line: which engine a command (or the
    question whether its write committed) is for, as `CommandContext.engine` reads them."""

    __slots__ = ("path", "target", "db", "no_global")
    KIND = "where"
    path: str
    target: str | None
    db: str | None
    no_global: bool

    def __init__(self, path: str = ".", target: str | None = None, db: str | None = None,
                 no_global: bool = False) -> None:
        self._fill(path=path, target=target, db=db, no_global=no_global)

    @classmethod
    def of(cls, args: object) -> Where:
        """A parsed command line's (an `argparse.Namespace`)."""
        return cls(getattr(args, "path", ".") or ".", getattr(args, "target", None), getattr(args, "db", None),
                   bool(getattr(args, "no_global", False)))

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Where:
        return cls(_text(data, "path", "."), _field(data, "target", (str, type(None)), None),
                   _field(data, "db", (str, type(None)), None), _flag(data, "no_global"))


class RunRequest(Message):
    """Run one `cortex` command line as the client would have in its own process."""

    __slots__ = ("fingerprint", "argv", "cwd", "env", "stdout_tty", "stderr_tty", "stdout_encoding",
                 "stderr_encoding", "stdin", "stdin_encoding", "stdin_errors", "write_id")
    KIND = "run"
    fingerprint: str
    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    """The client's forwarded variables (see `protocol.FORWARDED_PREFIXES`)."""
    stdout_tty: bool
    stderr_tty: bool
    stdout_encoding: str
    stderr_encoding: str
    stdin: str | None
    """Standard input as base64 bytes, read by the client when the command may read it (`-` as an argument);
    None when it does not. The server decodes it as the client's own stdin would (`stdin_encoding`), so bytes
    that are not valid text fail the same way in both places."""
    stdin_encoding: str
    stdin_errors: str
    write_id: str
    """For a command that writes: the id its write is stored with (core/write_ids.py); else ""."""

    def __init__(self, fingerprint: str, argv: tuple[str, ...], cwd: str, env: dict[str, str], *,
                 stdout_tty: bool = False, stderr_tty: bool = False, stdout_encoding: str = "utf-8",
                 stderr_encoding: str = "utf-8", stdin: str | None = None, stdin_encoding: str = "utf-8",
                 stdin_errors: str = "strict", write_id: str = "") -> None:
        self._fill(fingerprint=fingerprint, argv=tuple(argv), cwd=cwd, env=env, stdout_tty=stdout_tty,
                   stderr_tty=stderr_tty, stdout_encoding=stdout_encoding, stderr_encoding=stderr_encoding,
                   stdin=stdin, stdin_encoding=stdin_encoding, stdin_errors=stdin_errors, write_id=write_id)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RunRequest:
        return cls(_text(data, "fingerprint"), _texts(data, "argv"), _text(data, "cwd"), _environment(data),
                   stdout_tty=_flag(data, "stdout_tty"), stderr_tty=_flag(data, "stderr_tty"),
                   stdout_encoding=_text(data, "stdout_encoding", "utf-8"),
                   stderr_encoding=_text(data, "stderr_encoding", "utf-8"),
                   stdin=_field(data, "stdin", (str, type(None)), None),
                   stdin_encoding=_text(data, "stdin_encoding", "utf-8"),
                   stdin_errors=_text(data, "stdin_errors", "strict"), write_id=_text(data, "write_id", ""))


class CallRequest(Message):
    """Call one method of an attached process's facade in the server: `bridge` (the dashboard's), `tools` (the MCP
    server's) or `index` (what `cortex index` leaves to the server)."""

    __slots__ = ("fingerprint", "facade", "method", "payload", "session", "env")
    KIND = "call"
    fingerprint: str
    facade: str
    method: str
    payload: str
    """The arguments, `protocol.pack((args, kwargs))`."""
    session: str
    """For `tools`: the MCP client's session, in which the tool reads and writes session memories."""
    env: dict[str, str]
    """The attached process's forwarded variables, whose settings and credentials the call runs with."""

    def __init__(self, fingerprint: str, facade: str, method: str, payload: str, session: str = "",
                 env: dict[str, str] | None = None) -> None:
        self._fill(fingerprint=fingerprint, facade=facade, method=method, payload=payload, session=session,
                   env={} if env is None else env)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> CallRequest:
        return cls(_text(data, "fingerprint"), _text(data, "facade"), _text(data, "method"), _text(data, "payload"),
                   _text(data, "session", ""), _environment(data))


class WatchRequest(Message):
    """Subscribe to the repository's one index watcher, with the attached process's settings."""

    __slots__ = ("fingerprint", "env")
    KIND = "watch"
    fingerprint: str
    env: dict[str, str]

    def __init__(self, fingerprint: str, env: dict[str, str] | None = None) -> None:
        self._fill(fingerprint=fingerprint, env={} if env is None else env)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> WatchRequest:
        return cls(_text(data, "fingerprint"), _environment(data))


class ReceiptRequest(Message):
    """Whether the write with this id committed, asked by a client that lost the server running it; `run`: the
    command it had sent, whose fingerprint the write must have (an id another command committed with is not this
    one's write)."""

    __slots__ = ("where", "cwd", "env", "write_id", "run")
    KIND = "receipt"
    where: Where
    cwd: str
    env: dict[str, str]
    write_id: str
    run: RunRequest | None

    def __init__(self, where: Where, cwd: str, env: dict[str, str], write_id: str,
                 run: RunRequest | None = None) -> None:
        self._fill(where=where, cwd=cwd, env=env, write_id=write_id, run=run)

    def to_wire(self) -> dict[str, object]:
        return {**super().to_wire(), "where": self.where.fields(),
                "run": self.run.to_wire() if self.run is not None else None}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ReceiptRequest:
        run = _field(data, "run", (dict, type(None)), None)
        return cls(Where.from_wire(_field(data, "where", dict)), _text(data, "cwd"), _environment(data),
                   _text(data, "write_id"), RunRequest.from_wire(run) if run is not None else None)


class StatusRequest(Message):
    """The server's status (`cortex serve --status`)."""

    __slots__ = ()
    KIND = "status"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StatusRequest:
        return cls()


class StopRequest(Message):
    """Stop once the commands taken are answered (`cortex serve --stop`)."""

    __slots__ = ()
    KIND = "stop"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StopRequest:
        return cls()


Request = RunRequest | CallRequest | WatchRequest | ReceiptRequest | StatusRequest | StopRequest
"""One connection carries one request."""


# --- replies: what a client hears ----------------------------------------------------------------------------------


class Accepted(Message):
    """The server read and checked the request and took it: a client that never heard this knows nothing ran."""

    __slots__ = ("pid",)
    KIND = "accepted"
    FINAL = False
    pid: int

    def __init__(self, pid: int) -> None:
        self._fill(pid=pid)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Accepted:
        return cls(_number(data, "pid"))


class Alive(Message):
    """Said every second while a request waits or runs (and between a subscription's events)."""

    __slots__ = ()
    KIND = "alive"
    FINAL = False

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Alive:
        return cls()


class Done(Message):
    """A command's end: what it wrote, in order, and its exit status."""

    __slots__ = ("output", "exit")
    KIND = "done"
    output: tuple[tuple[int, str], ...]
    """(stream number 1 or 2, text) in the order the command wrote them."""
    exit: int

    def __init__(self, output: tuple[tuple[int, str], ...], exit: int) -> None:
        self._fill(output=tuple((number, text) for number, text in output), exit=exit)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Done:
        output = _field(data, "output", list)
        if not all(isinstance(part, list) and len(part) == 2 and part[0] in (1, 2) and isinstance(part[1], str)
                   for part in output):
            raise ProtocolError("'output' of a 'done' message is not a list of [1 or 2, text]")
        return cls(tuple((part[0], part[1]) for part in output), _number(data, "exit"))


class Retired(Message):
    """The server is being replaced (another install, another protocol version) or is stopping: nothing ran. Its
    wire form is the same in every version."""

    __slots__ = ("message",)
    KIND = "retired"
    message: str

    def __init__(self, message: str) -> None:
        self._fill(message=message)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Retired:
        return cls(_text(data, "message", ""))


class Refused(Message):
    """The server will not run this request (another user's, an unknown or malformed one): nothing ran. Its wire
    form is the same in every version."""

    __slots__ = ("message",)
    KIND = "refused"
    message: str

    def __init__(self, message: str) -> None:
        self._fill(message=message)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Refused:
        return cls(_text(data, "message", ""))


class ReceiptAnswer(Message):
    """Whether a write committed (`committed`), or the one-line `error` that kept it from being known; `queued`: a
    team write kept in the repository's queue while the team store does not answer (`committed` is then true: it
    is stored, and will be written there by `cortex sync`)."""

    __slots__ = ("committed", "error", "queued")
    KIND = "receipt"
    committed: bool | None
    error: str
    queued: bool

    def __init__(self, committed: bool | None, error: str = "", queued: bool = False) -> None:
        self._fill(committed=committed, error=error, queued=queued)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ReceiptAnswer:
        return cls(_field(data, "committed", (bool, type(None)), None), _text(data, "error", ""),
                   _flag(data, "queued"))


class Status(Message):
    """The server's status record, as `cortex serve --status --json` prints it (pid, root, version, memory, ...)."""

    __slots__ = ("info",)
    KIND = "status"
    info: dict[str, object]

    def __init__(self, info: dict[str, object]) -> None:
        self._fill(info=info)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Status:
        return cls(dict(_field(data, "info", dict)))


class Stopping(Message):
    """The server stops once the commands it took are answered."""

    __slots__ = ("pid",)
    KIND = "stopping"
    pid: int

    def __init__(self, pid: int) -> None:
        self._fill(pid=pid)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Stopping:
        return cls(_number(data, "pid"))


class Packed(Message):
    """A message whose one field is a value `protocol.pack`ed: its kinds differ by `KIND` alone, and keep its slot
    (they declare none, so `fields()` reads this one)."""

    __slots__ = ("payload",)
    payload: str

    def __init__(self, payload: str) -> None:
        self._fill(payload=payload)

    @classmethod
    def from_wire(cls: type[P], data: Mapping[str, Any]) -> P:
        return cls(_text(data, "payload"))


class Result(Packed):
    """A call's answer, `protocol.pack`ed."""

    KIND = "result"


class Error(Packed):
    """The exception a call raised, `protocol.pack`ed: raised again on the caller's side."""

    KIND = "error"


class Progress(Message):
    """How far an index pass is (`core.answers.IndexProgress` by its fields): told to a subscriber, and by an index
    child to its parent."""

    __slots__ = ("phase", "done", "total")
    KIND = "progress"
    FINAL = False
    phase: str
    done: int
    total: int

    def __init__(self, phase: str, done: int, total: int) -> None:
        self._fill(phase=phase, done=done, total=total)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Progress:
        return cls(_text(data, "phase"), _number(data, "done"), _number(data, "total"))


class Indexed(Packed):
    """The watcher's index pass ended: (`IndexReport`, `IndexStatus`), packed."""

    KIND = "indexed"


class Update(Packed):
    """The watcher brought the index up to date after a change: its update, packed."""

    KIND = "update"


class Memories(Message):
    """Some process changed a memory."""

    __slots__ = ()
    KIND = "memories"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Memories:
        return cls()


class Replaced(Message):
    """The database was replaced (`rm -rf .cortex`): the watcher moved to a new engine, which indexes again."""

    __slots__ = ()
    KIND = "replaced"

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Replaced:
        return cls()


class Failed(Message):
    """An index pass (the watcher's, or an index child's) failed, in one line; `locked` when another process held
    the database's write lock."""

    __slots__ = ("message", "locked")
    KIND = "failed"
    message: str
    locked: bool

    def __init__(self, message: str, locked: bool = False) -> None:
        self._fill(message=message, locked=locked)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Failed:
        return cls(_text(data, "message"), _flag(data, "locked"))


class PassReport(Message):
    """An index child's phase ended: its `core.answers.IndexReport`, field by field."""

    __slots__ = ("report",)
    KIND = "report"
    report: dict[str, object]

    def __init__(self, report: dict[str, object]) -> None:
        self._fill(report=report)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> PassReport:
        return cls(dict(_field(data, "report", dict)))


Reply = (Accepted | Alive | Done | Retired | Refused | ReceiptAnswer | Status | Stopping | Result | Error | Progress
         | Indexed | Update | Memories | Replaced | Failed | PassReport)
"""Everything a client (or an index child's parent) can hear."""

REQUESTS: dict[str, type[Request]] = {kind.KIND: kind for kind in Request.__args__}
REPLIES: dict[str, type[Reply]] = {kind.KIND: kind for kind in Reply.__args__}
EVERY_VERSION = frozenset({Retired.KIND, Refused.KIND})
"""The replies any version reads, whichever version said them."""


def decode_request(data: Mapping[str, Any]) -> Request:
    """The request a JSON object is; ProtocolError (one line) when it is none of this version's."""
    _same_version(data)
    kind = REQUESTS.get(str(data.get("type")))
    if kind is None:
        raise ProtocolError(f"unknown request {data.get('type')!r}")
    return kind.from_wire(data)


def decode_reply(data: Mapping[str, Any]) -> Reply:
    """The reply a JSON object is; ProtocolError (one line) when it is none of this version's."""
    if data.get("type") not in EVERY_VERSION:
        _same_version(data)
    kind = REPLIES.get(str(data.get("type")))
    if kind is None:
        raise ProtocolError(f"unknown reply {data.get('type')!r}")
    return kind.from_wire(data)


def _same_version(data: Mapping[str, Any]) -> None:
    theirs = data.get("version")
    if theirs != PROTOCOL_VERSION:
        raise VersionMismatch(f"the other end speaks cortex protocol version {theirs}, this one {PROTOCOL_VERSION} "
                              "(another cortex install)")
