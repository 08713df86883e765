"""The `cortex` entry point: send the command to the repository's resident server, or run it in-process.

This module and what it imports before a command is sent (`protocol`, `connection`, the argument parser in `cli`) use the
standard library only, so a served command costs a Python start-up and a socket round trip, not the seconds of
importing LanceDB and loading the model. The parser is the CLI's own: a command is served only when it parses, so
usage errors and `--help` print in-process exactly as before. It is built of the invoked command only, whose module
alone is imported (`cli.parser`).

Nor does the client import the standard library's slower modules where it can do without: `dataclasses` (and the
`inspect` it imports), `typing`, `pathlib`, `hashlib`, `tempfile` and `shutil` cost a served `cortex ss` about 30 ms
of its 68 ms of CPU on the busy 2-core development machine (docs/benchmarks.md). So its records are plain classes, paths
are strings (`os.path`), sha256 is Python's own, and argparse's help width is found as shutil finds it. A test runs
a served `cortex ss` and lists what it imported.

Served: the commands that answer and exit (search, what, remember, list, show, select, context, graph, ...).
In-process: long-lived or interactive ones (watch, mcp, serve, bench), the ones that draw a progress bar
(index, import), and `-` on a terminal's standard input. `context --copy` is assembled by the server and copied
here (the clipboard and the terminal are the client's).
When no server can be reached or started, or the daemon is turned off, the command runs in-process as it always did.
"""

from __future__ import annotations

import base64
import io
import os
import socket
import sys
import time

from ..link import protocol
from ..link.connection import (
    SILENCE_SECONDS,
    START_SECONDS,
    connect,
    daemon_wanted,
    server_key,
    start_server,
    wait_stopped,
)
from ..link.exchange import Exchange
from ..link.messages import Done, ProtocolError, ReceiptAnswer, ReceiptRequest, Retired, RunRequest, Where
from ..terminal_size import usable_size
from .served_copy import CopyHere, finish, served_argv
from .text_input import invalid_argument, oversized_memory
from .writes import is_write

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from collections.abc import Sequence

WRITE_ID_ENV = "CORTEX_WRITE_ID"
"""`core.write_ids.ENV`, not imported from there: the thin client imports no engine module (a test holds them
equal)."""

SERVED = frozenset({
    "init", "remember", "show", "list", "history", "forget", "done", "confirm", "export", "stats", "git", "gc", "search", "what",
    "graph", "select", "context", "agent", "index", "map", "snapshot",
})
NO_DAEMON_FLAG = "--no-daemon"
NO_DAEMON_ENV = "CORTEX_NO_DAEMON"
HOOK_KINDS = ("claude-code", "git-post-commit")
"""`hook_run.KINDS`, not imported from there: `cortex ss` has no use for what that module imports (a test holds
them equal)."""


class Route:
    """Where a command goes: the server of this (repository root, database), with this request. (Not a dataclass:
    see `app/command.py`.)"""

    __slots__ = ("root", "db", "request", "where", "copy")

    def __init__(self, root: str, db: str, request: RunRequest, where: Where, copy: CopyHere | None = None) -> None:
        self.root = root
        self.db = db
        self.request = request
        self.where = where
        """The command line's `-C`, `--db`, ...: what a question about its write is asked of."""
        self.copy = copy
        """Set for `context --copy`: the answer's text goes on this process's clipboard."""


class _Refused(Exception):
    """The command is refused before anything is sent (a memory over the size limit): its one-line reason."""


class _Retry(Exception):
    """The server did not take the command (it is retiring, or went away first): it did not run; try a new one."""


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) == 3 and argv[:2] == ["hooks", "run"] and argv[2] in HOOK_KINDS:
        # What an installed hook runs, on each of an agent's tool calls and each commit: the hand-off needs neither
        # the parser nor a server, and skipping the parser halves the hook's time (0.33 -> 0.17 s).
        from . import hook_run

        return hook_run.hand_off(argv[2], sys.stdin.buffer.read() if sys.stdin is not None else b"")
    problem = invalid_argument(argv)
    if problem:  # before a server is asked (or started) for a command that cannot run
        return _fail(problem, 2)
    argv, no_daemon = _strip_no_daemon(argv)
    try:
        route = None if no_daemon or not daemon_wanted() else _route(argv)
    except _Refused as exc:
        return _fail(str(exc))
    if route is not None:
        code = _send(route)
        if code is not None:
            return code
        if route.request.stdin is not None:
            _give_back_stdin(route.request)
    from pathlib import Path

    from ...core import heap
    from . import main as cli
    from .context import CommandContext

    heap.one_arena()  # before the command starts threads: see core.heap, and a first index's memory there

    # The flag goes in the command's environment, for what it runs that would attach to a server itself (`cortex
    # mcp`, `cortex index`), not in this process's.
    env = {**os.environ, NO_DAEMON_ENV: "1"} if no_daemon else os.environ
    return cli.main(argv, CommandContext(sys.stdin, sys.stdout, sys.stderr, Path(os.getcwd()), env))


def _give_back_stdin(request: RunRequest) -> None:
    """Standard input was read for a server that did not run the command: the in-process run reads the same bytes
    (it found an empty stream, and `cortex remember -` said "memory text is empty")."""
    data = base64.b64decode(request.stdin or "")
    sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding=request.stdin_encoding, errors=request.stdin_errors)


def _strip_no_daemon(argv: list[str]) -> tuple[list[str], bool]:
    """`--no-daemon` anywhere before a `--`; after it, it is an argument like any other."""
    end = argv.index("--") if "--" in argv else len(argv)
    kept = [a for a in argv[:end] if a != NO_DAEMON_FLAG] + argv[end:]
    return kept, len(kept) != len(argv)


def _route(argv: list[str]) -> Route | None:
    from .parser import UsageExit, build_parser, parse

    try:
        args = parse(build_parser(frozenset(argv)), argv)
    except UsageExit:
        return None  # --help or a usage error: printed in-process, as before
    handler = getattr(args, "handler", None)
    if handler not in SERVED or (handler == "index" and not args.status):
        return None
    stdin = None
    if _reads_stdin(handler, args):
        if sys.stdin is None or sys.stdin.isatty():
            return None  # the command would read the terminal: interactive, so in-process
        data = sys.stdin.buffer.read()
        if handler == "remember" and (problem := oversized_memory(data, getattr(sys.stdin, "encoding", None) or "utf-8",
                                                                   getattr(sys.stdin, "errors", None) or "strict")):
            raise _Refused(problem)
        stdin = base64.b64encode(data).decode("ascii")
    key = server_key(getattr(args, "target", None) or getattr(args, "path", None) or ".", getattr(args, "db", None))
    if key is None:
        return None
    copy = CopyHere(key[0], bool(args.json)) if handler == "context" and args.copy else None
    if copy is not None:
        argv = served_argv(argv)
    env = protocol.forwarded_environment()
    if "COLUMNS" not in env and (size := _terminal_size()) is not None:
        env["COLUMNS"], env["LINES"] = str(size[0]), env.get("LINES", str(size[1]))
    env.update(usable_size(env))
    request = RunRequest(
        protocol.fingerprint(), tuple(argv), os.getcwd(), env,
        write_id=(env.get(WRITE_ID_ENV) or _new_write_id()) if is_write(args) else "",
        stdout_tty=_isatty(sys.stdout), stderr_tty=_isatty(sys.stderr),
        stdout_encoding=getattr(sys.stdout, "encoding", None) or "utf-8",
        stderr_encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
        stdin=stdin, stdin_encoding=getattr(sys.stdin, "encoding", None) or "utf-8",
        stdin_errors=getattr(sys.stdin, "errors", None) or "strict",
    )
    return Route(*key, request, Where.of(args), copy)


def _new_write_id() -> str:
    """A write id no other command has: the time (which orders them when read) and 48 random bits."""
    return f"{int(time.time()):x}-{os.urandom(6).hex()}"


def _reads_stdin(handler: str, args) -> bool:
    """The handlers that read standard input when given `-` (`cortex remember -`, `cortex select -`, `cortex ss -`);
    only then is it read here, since reading a pipe that nobody closes would block where the command itself never
    reads it."""
    if handler == "remember":
        return args.text == "-"
    if handler == "search":
        return args.query == ["-"]
    return handler in ("select", "context") and " ".join(args.task) == "-"


def _terminal_size() -> tuple[int, int] | None:
    """The size rich would find in-process: the first of stdin, stdout and stderr that is a terminal."""
    for fd in (0, 1, 2):
        try:
            size = os.get_terminal_size(fd)
            return size.columns, size.lines
        except (OSError, ValueError):
            continue
    return None


def _isatty(stream) -> bool:
    try:
        return bool(stream is not None and stream.isatty())
    except (ValueError, OSError):
        return False


def _send(route: Route) -> int | None:
    """The command's exit code, or None when it did not run in a server (then the caller runs it in-process)."""
    try:
        paths = protocol.server_paths(route.root, route.db)
    except OSError:
        return None
    for attempt in range(2):
        # After a retry the old server is on its way out: let it finish (it answers every command it took) and
        # start the new one, instead of reaching its closing socket again.
        if attempt and not wait_stopped(paths, START_SECONDS):
            return None
        conn = (None if attempt else connect(paths)) or start_server(paths, route.root, route.db)
        if conn is None:
            return None
        try:
            with conn:
                return _exchange(conn, route)
        except _Retry:
            continue
    return None


def _exchange(conn: socket.socket, route: Route) -> int | None:
    conn.settimeout(SILENCE_SECONDS)
    exchange = Exchange.on_socket(conn)
    try:
        exchange.send(route.request)
        reply = exchange.answer()
    except TimeoutError:
        if not exchange.accepted:
            return None
        return _lost(route, f"the resident server said nothing for {SILENCE_SECONDS:.0f} s")
    except (OSError, ProtocolError) as exc:
        if not exchange.accepted:
            raise _Retry() from exc
        return _lost(route, f"lost the resident server while running the command ({exc})")
    if isinstance(reply, Done):
        return _done(route, reply.output, reply.exit)
    if exchange.accepted:
        return _lost(route, "the resident server stopped while running the command")
    if reply is None or isinstance(reply, Retired):
        raise _Retry()
    return None  # refused: run in-process


NOT_COMMITTED_EXIT = 75
"""`cortex` lost its server and its write did not commit: nothing was stored, so running it again is safe (75 is
EX_TEMPFAIL, "try again later")."""


def _lost(route: Route, what: str) -> int:
    """Say what became of a command whose server went away (or fell silent) before answering: for a write, whether
    it committed, asked by id of a server (a new one if that one is gone) or of the database itself."""
    write_id = route.request.write_id
    if not write_id:
        return _fail(f"{what}; it is not a write that could be stored twice: run it again (--no-daemon runs it "
                     "in-process)")
    answer = _ask_receipt(route)
    if answer.committed is True and answer.queued:
        print(f"cortex: {what}, but the write is queued (write id {write_id}): the team store did not answer, and "
              "it will be written when the store answers (`cortex sync`)", file=sys.stderr)
        return 0
    if answer.committed is True:
        print(f"cortex: {what}, but the write committed (write id {write_id}); its output was lost with the server",
              file=sys.stderr)
        return 0
    if answer.committed is False:
        return _fail(f"{what}: not committed (write id {write_id}); nothing was stored, run it again",
                     NOT_COMMITTED_EXIT)
    return _fail(f"{what}, and whether write {write_id} committed cannot be known now ({answer.error}); run "
                 f"it again with {WRITE_ID_ENV}={write_id}: a write with that id is stored at most once")


def _ask_receipt(route: Route) -> ReceiptAnswer:
    """The `receipt` answer for the route's write: from a server (the same one if it lives, which answers once the
    command has ended, else a new one), or from this process when none can be reached."""
    request = ReceiptRequest(route.where, route.request.cwd, route.request.env, route.request.write_id,
                             route.request)
    try:
        paths = protocol.server_paths(route.root, route.db)
    except OSError as exc:
        return _receipt_here(route, str(exc))
    error = "no server answered"
    for _attempt in range(2):
        conn = connect(paths) or start_server(paths, route.root, route.db)
        if conn is None:
            break
        try:
            with conn:
                conn.settimeout(SILENCE_SECONDS)
                exchange = Exchange.on_socket(conn)
                exchange.send(request)
                reply = exchange.answer()
            if isinstance(reply, ReceiptAnswer):
                return reply
            error = f"the server answered {reply.KIND if reply is not None else 'nothing'}"
        except TimeoutError:
            return ReceiptAnswer(None, f"the resident server said nothing for {SILENCE_SECONDS:.0f} s")
        except (OSError, ProtocolError) as exc:
            error = str(exc)
        wait_stopped(paths, START_SECONDS)  # a server that went away again (or retired): ask a new one
    return _receipt_here(route, error)


def _receipt_here(route: Route, error: str) -> ReceiptAnswer:
    """Ask the database in this process (the engine's import and the database's opening: seconds, once)."""
    try:
        from dataclasses import replace

        from .context import CommandContext
        from .receipt_check import receipt_answer
    except ImportError:
        return ReceiptAnswer(None, error)
    # The command's standard input as it was sent: part of what its write is (`remember -`).
    stdin = io.TextIOWrapper(io.BytesIO(base64.b64decode(route.request.stdin or "")),
                             encoding=route.request.stdin_encoding, errors=route.request.stdin_errors)
    ctx = replace(CommandContext.of_process(), stdin=stdin)
    return receipt_answer(ctx, route.where, route.request.write_id, route.request.argv)


def _done(route: Route, output: tuple[tuple[int, str], ...], code: int) -> int:
    if route.copy is None:
        return _write(output, code)
    try:
        return _write(*finish(route.copy, list(output), code))
    except (OSError, ValueError, KeyError) as exc:
        return _fail(f"the context was assembled but not copied: {exc}")


def _write(output: Sequence[tuple[int, str]], code: int) -> int:
    """Replay the command's output on the client's own streams, in the order it was written."""
    try:
        for number, text in output:
            stream = sys.stdout if number == 1 else sys.stderr
            stream.write(text)
            stream.flush()
    except BrokenPipeError:
        return 0  # as in-process: a closed pipe (`| head`) is not an error
    except UnicodeEncodeError as exc:
        return _fail(f"UnicodeEncodeError: {exc}")
    return code


def _fail(message: str, code: int = 1) -> int:
    print(f"cortex: error: {message}", file=sys.stderr)
    return code


def run() -> None:
    """The installed command: `main`, then an exit that no background thread's LanceDB call can abort (see leave)."""
    from ..leave import run_installed

    run_installed(main, "cortex")


if __name__ == "__main__":
    run()
