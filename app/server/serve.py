"""`cortex serve`: one resident process per (repository, database) that keeps the engine warm for the CLI.

The process owns its engines (stores, code index, embedder, graph cache) and answers `cortex` commands sent by the
thin client (`client.py`) over a Unix socket in a private runtime directory. A command runs exactly as it would
in-process, through `cli.main`, with a context (`context.CommandContext`) holding the client's arguments, working
directory, environment and terminal: its output is collected and sent back, and a write is committed before the
answer leaves.

Commands run side by side on a few worker threads: nothing a command reads or writes is process-wide (its streams,
directory and environment are in its context), and the engines are safe to share between threads. A client waiting
behind long commands is told every second that the server is alive.

The process holds an exclusive lock on its lock file for its whole life, so two starters end with one server and a
killed server's leftover socket is recognisably stale. It exits after an idle period, on `cortex serve --stop`,
on SIGTERM, or when a client with another installed version (fingerprint) asks it to retire.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import TYPE_CHECKING

from ...core import heap
from ...core.lancedb_loader import load_lancedb
from ..link import protocol
from ..link.exchange import Exchange
from ..link.messages import (
    PROTOCOL_VERSION,
    Accepted,
    Alive,
    CallRequest,
    Done,
    Error,
    Failed,
    Indexed,
    Memories,
    Progress,
    ProtocolError,
    ReceiptRequest,
    Refused,
    Replaced,
    Reply,
    Request,
    Result,
    Retired,
    RunRequest,
    Status,
    StatusRequest,
    Stopping,
    StopRequest,
    Update,
    VersionMismatch,
    WatchRequest,
)
from ..link.protocol import ALIVE_SECONDS, ServerPaths
from .command_runner import CommandRunner
from .engines import EngineCache
from .hosted import Hosted
from .lifetime import private_bytes, rss_bytes, take_lock, trim_log

if TYPE_CHECKING:  # pydantic's import is the warm-up's, not this module's
    from ...core.config import Settings

READ_SECONDS = 10.0
"""A connection that has not sent its whole request by then is dropped, so a stuck client cannot pin a thread."""
COMMAND_THREADS = 4
"""Commands run at once; more wait for a thread (and hear `alive` meanwhile)."""
TRIM_AFTER_SECONDS = 1.0
"""Once no command or call has run for this long, the C heap's free pages go back to the system (see core.heap)."""
RELEASE_AFTER_SECONDS = 120.0
"""Once none has run for this long, the engines also let go of what they rebuild on demand (Engine.release_caches):
a server left alone holds neither its last map's graph nor the embedding model. Two minutes: a person asking for
maps and selections as they work keeps them; the rebuild costs the next map a few hundred milliseconds, and the
next search loads the model again."""
SETTINGS_KEPT = 8
"""Attached processes' settings kept read (one per environment: a dashboard's, an MCP server's, ...)."""
LIBRARY_PAGES_KEPT = 96 << 20
"""The shared libraries' pages a server keeps mapped between bursts of work (counted from its mappings, a few
milliseconds once a burst has ended). One
command on a 2,000-file repository runs through 45-90 MiB of them; left alone, the pages of every code path ever run
stay mapped, about 200 MiB. Past this bound the quiet trim unmaps them (core.heap.drop_library_pages; they stay in
the page cache), and the next command maps back what it runs: 10-20 ms for that one command, so not after every
burst."""


class Server:
    """The resident process's life: a listening socket, one worker thread for commands, an idle clock."""

    def __init__(self, root: str, db: str, paths: ServerPaths, idle_seconds: float | None, log) -> None:
        self.root = root
        self._was_repo = os.path.exists(os.path.join(root, ".git"))
        """A repository's root: once its `.git` is gone, so is the repository (see `still_there`)."""
        self.db = db
        self.paths = paths
        self.fingerprint = protocol.fingerprint()
        self.idle_seconds = idle_seconds
        """None until the settings are read (in the warm-up); an explicit `--idle-minutes` wins."""
        self._log_file = log
        self._stopping = threading.Event()
        self._worker = ThreadPoolExecutor(max_workers=COMMAND_THREADS, thread_name_prefix="cortex-command")
        self._warm = threading.Event()
        """Set once the warm-up has ended: commands wait for it, as they waited behind it on one thread before."""
        self._jobs = 0
        self._taken = 0
        """Commands accepted and not yet answered, a retry waiting for its earlier attempt too (`serve --status`)."""
        self._jobs_lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._last_work = 0.0
        """When an index pass last did something: it counts for the quiet spells, not for the idle exit."""
        self._trimmed = True
        """Whether the heap was trimmed since the last job ended."""
        self._released = True
        """Whether the engines released their caches since the last job ended."""
        self._handlers: set[threading.Thread] = set()
        self._started = time.time()
        self._engines = EngineCache(on_memories=lambda: self._hosted.memories_changed())
        self._commands = CommandRunner(self._engines, self._warm, self.log)
        self._imported = threading.Event()
        """Set once the warm-up has made its imports (or failed to): calls and subscriptions wait for it (see
        hosted), not for the model or the database, so an attached dashboard still paints git's timeline at once."""
        self._hosted = Hosted(self._engine, self.log, self._imported, on_work=self._note_work)
        self._settings: Settings | None = None
        self._settings_by_env: dict[tuple, Settings] = {}
        """Attached processes' settings by a hash of their environment (see `_call_settings`)."""
        self._settings_lock = threading.Lock()
        self._writing: dict[str, object] = {}
        """The write ids of the commands running here, with their futures (see `_answer_receipt`)."""

    # --- life ----------------------------------------------------------------------------------------------------

    _unusable: str | None = None
    """Why this server's repository or database cannot be used at all (found by the warm-up), or None."""

    def log(self, message: str) -> None:
        try:
            self._log_file.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} [{os.getpid()}] {message}\n")
            self._log_file.flush()
        except (OSError, ValueError):
            pass

    def serve(self, listener: socket.socket) -> None:
        self._submit(self._warm_up)
        listener.settimeout(0.25)
        self.log(f"serving {self.root} (database {self.db or 'default'}) on {self.paths.socket}")
        try:
            while not self._stopping.is_set():
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    if self._idle():
                        self.log("idle, exiting")
                        break
                    self._trim_when_quiet()
                    continue
                except OSError as exc:
                    self.log(f"accept failed: {exc}")
                    break
                handler = threading.Thread(target=self._handle, args=(conn,), daemon=True)
                self._handlers.add(handler)
                handler.start()
        except KeyboardInterrupt:  # `cortex serve` in the foreground: Ctrl+C ends it like --stop
            self.log("interrupted")
        listener.close()
        self._retire_files()
        # Every accepted command still runs to its end and is answered: a client that was told `accepted` may
        # have written something.
        self._worker.shutdown(wait=True)
        self._hosted.close()
        self._engines.close()
        for handler in list(self._handlers):
            handler.join(ALIVE_SECONDS * 3)
        self.log("stopped")

    def stop(self) -> None:
        self._stopping.set()

    def _idle(self) -> bool:
        with self._jobs_lock:
            busy = self._jobs > 0
        busy = busy or self._hosted.subscribers > 0  # an attached dashboard or MCP server keeps it alive
        busy = busy or self._hosted.embedding  # so does the embedding `cortex index` left to it
        limit = self.idle_seconds if self.idle_seconds is not None else 15 * 60
        return not busy and time.monotonic() - self._last_activity > limit

    def _trim_when_quiet(self) -> None:
        """Hand the heap's free pages back once after each burst of work, off every answer's path: a command's
        or call's temporary buffers (a search's candidate rows, a map's graph build) otherwise stay resident.
        After a longer quiet spell, the engines' rebuildable caches go first."""
        with self._jobs_lock:
            quiet_for = time.monotonic() - max(self._last_activity, self._last_work) if self._jobs == 0 else 0.0
            trim = quiet_for > TRIM_AFTER_SECONDS and not self._trimmed
            release = quiet_for > RELEASE_AFTER_SECONDS and not self._released
            self._trimmed |= trim
            self._released |= release
        if release:
            self._engines.release_caches()
        if trim or release:
            gc.collect()  # cycles a command left (objects made after the warm-up's freeze only: a few milliseconds)
            heap.trim()
            if release or heap.library_pages_bytes() > LIBRARY_PAGES_KEPT:
                self._drop_library_pages()

    def _drop_library_pages(self) -> None:
        """On the accepting thread, so no command arrives meanwhile; no call or command starts either (their
        bookkeeping waits for the lock, 20-30 ms), so none of them loads a library while its mappings are read (an
        index pass of the watcher is not held back: see core.heap.drop_library_pages)."""
        with self._jobs_lock:
            if self._jobs == 0:
                heap.drop_library_pages()

    def _retire_files(self) -> None:
        """Remove the socket and the status file, unless a successor has already put its own there."""
        try:
            if os.stat(self.paths.socket).st_ino == self._socket_inode:
                os.unlink(self.paths.socket)
        except (OSError, AttributeError):
            pass
        try:
            with open(self.paths.info, encoding="utf-8") as info:
                ours = json.load(info).get("pid") == os.getpid()
            if ours:
                os.unlink(self.paths.info)
        except (OSError, ValueError):
            pass

    def bind(self) -> socket.socket:
        try:
            os.unlink(self.paths.socket)  # we hold the lock, so whatever is there is a dead server's
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is created 0600, never briefly open to others
        try:
            listener.bind(self.paths.socket)
        finally:
            os.umask(old)
        os.chmod(self.paths.socket, 0o600)
        self._socket_inode = os.stat(self.paths.socket).st_ino
        listener.listen(64)
        fd = os.open(self.paths.info, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as info:
            json.dump(self._status(), info)
        return listener

    def _status(self) -> dict:
        import cortex_tui

        return {
            "pid": os.getpid(), "root": self.root, "db": self.db, "version": cortex_tui.__version__,
            "protocol": PROTOCOL_VERSION, "fingerprint": self.fingerprint, "socket": self.paths.socket,
            "started": self._started, "idle_seconds": self.idle_seconds, "commands": self._commands.served,
            "commands_in_flight": self._taken, "idle_for": round(time.monotonic() - self._last_activity, 1), "rss_bytes": rss_bytes(),
            "private_bytes": private_bytes(),
            "calls": self._hosted.calls, "attached": self._hosted.subscribers, "watching": self._hosted.watching,
            "indexing": self._hosted.indexing, "embedding": self._hosted.embedding,
            "frozen_objects": gc.get_freeze_count(), "memory_pool": heap.arrow_pool(),
        }

    # --- requests ------------------------------------------------------------------------------------------------

    def _submit(self, job, *args):
        return self._tracked(lambda: self._worker.submit(job, *args))

    def _tracked(self, submit):
        """A job counted as work for the idle clock while it waits or runs."""
        with self._jobs_lock:
            self._jobs += 1
            self._last_activity = time.monotonic()
        try:
            future = submit()
        except BaseException:
            self._job_done(None)
            raise
        future.add_done_callback(self._job_done)
        return future

    def _note_work(self) -> None:
        """An index pass (the first one, or the watcher's after a save) ends a quiet spell too: it may have loaded
        the model again, and the release comes two quiet minutes after it. (The idle exit counts commands only.)"""
        with self._jobs_lock:
            self._last_work = time.monotonic()
            self._trimmed = self._released = False

    def _job_done(self, _future) -> None:
        with self._jobs_lock:
            self._jobs -= 1
            self._last_activity = time.monotonic()
            self._trimmed = self._released = False

    def _handle(self, conn: socket.socket) -> None:
        try:
            with conn:
                conn.settimeout(READ_SECONDS)
                exchange = Exchange.on_socket(conn)
                uid = protocol.peer_uid(conn)
                if uid is not None and uid != os.getuid():
                    self.log(f"refused a connection from user {uid}")
                    exchange.send(Refused("this server belongs to another user"))
                    return
                try:
                    request = exchange.request()
                except VersionMismatch as exc:
                    # Its install replaces this one: retire, so that its next attempt starts a server of its own.
                    self.log(f"a client of another version arrived: retiring ({exc})")
                    exchange.send(Retired(f"this server is from another cortex install: {exc}"))
                    self.stop()
                    return
                except ProtocolError as exc:
                    self.log(f"refused a malformed request: {exc}")
                    exchange.send(Refused(f"malformed request: {exc}"))
                    return
                if request is not None:
                    self._answer(exchange, request)
        except (OSError, ProtocolError) as exc:
            # One client's broken connection never reaches the other clients or the engine.
            self.log(f"connection dropped: {type(exc).__name__}: {exc}")
        finally:
            self._handlers.discard(threading.current_thread())

    def _answer(self, exchange: Exchange, request: Request) -> None:
        if isinstance(request, (RunRequest, CallRequest, WatchRequest)) and request.fingerprint != self.fingerprint:
            self.log("a client of another install arrived: retiring")
            exchange.send(Retired("this server is from another cortex install"))
            self.stop()
            return
        if isinstance(request, StatusRequest):
            exchange.send(Status(self._status()))
            return
        if isinstance(request, StopRequest):
            exchange.send(Stopping(os.getpid()))
            self.log("asked to stop")
            self.stop()
            return
        if self._stopping.is_set():
            exchange.send(Retired("this server is stopping"))
            return
        if isinstance(request, CallRequest):
            self._answer_call(exchange, request)
        elif isinstance(request, WatchRequest):
            self._stream_watch(exchange, self._commands.environment(request.env))
        elif isinstance(request, ReceiptRequest):
            self._answer_receipt(exchange, request)
        else:
            self._answer_run(exchange, request)

    def _answer_run(self, exchange: Exchange, request: RunRequest) -> None:
        with self._jobs_lock:
            self._taken += 1
        try:
            self._run_taken(exchange, request)
        finally:
            with self._jobs_lock:
                self._taken -= 1

    def _run_taken(self, exchange: Exchange, request: RunRequest) -> None:
        # `accepted` before the command is handed to a worker: a client that never heard it retries the command
        # elsewhere, which is safe only if this server cannot have begun it.
        exchange.send(Accepted(os.getpid()))
        with self._jobs_lock:
            earlier = self._writing.get(request.write_id) if request.write_id else None
        if earlier is not None:
            # A caller retrying with the id of an attempt still running here (it gave up waiting): the retry runs
            # once that attempt has ended, and so finds its receipt instead of writing a second time.
            _result_saying_alive(exchange, earlier)
        try:
            future = self._submit(self._commands.run, request)
        except RuntimeError:  # the worker shut down meanwhile (the server is stopping): nothing ran
            exchange.send(Retired("this server is stopping"))
            return
        if request.write_id:
            with self._jobs_lock:
                self._writing[request.write_id] = future
            future.add_done_callback(lambda _f: self._written(request.write_id, future))
        output, code, deferred = _result_saying_alive(exchange, future)
        try:
            exchange.send(Done(tuple((number, text) for number, text in output), code))
        finally:
            if self._unusable is not None:
                self.log(f"nothing can run here ({self._unusable}): stopping")
                self.stop()
            if deferred:
                try:
                    self._submit(self._commands.run_deferred, deferred)
                except RuntimeError:  # the worker has shut down (the server is stopping): run them here
                    self._commands.run_deferred(deferred)

    def _written(self, write_id: str, future) -> None:
        with self._jobs_lock:
            if self._writing.get(write_id) is future:
                del self._writing[write_id]

    def _answer_receipt(self, exchange: Exchange, request: ReceiptRequest) -> None:
        """Whether a write committed, asked by a client that lost the server that ran it (or this one, on its
        side of a broken connection): answered once no command with that id is running here, so the answer holds."""
        with self._jobs_lock:
            running = self._writing.get(request.write_id)
        exchange.send(Accepted(os.getpid()))
        if running is not None:
            _result_saying_alive(exchange, running)
        exchange.send(_result_saying_alive(exchange, self._submit(self._commands.receipt, request)))

    def _answer_call(self, exchange: Exchange, request: CallRequest) -> None:
        try:
            args, kwargs = protocol.unpack(request.payload) if request.payload else ((), {})
        except Exception as exc:  # noqa: BLE001 - arguments this install cannot read: nothing ran
            exchange.send(Refused(f"unreadable arguments: {type(exc).__name__}"))
            return
        env = self._commands.environment(request.env)
        future = self._tracked(lambda: self._hosted.submit(request.facade, request.method, tuple(args), dict(kwargs),
                                                                request.session, env))
        exchange.send(Accepted(os.getpid()))
        answer: Result | Error
        try:
            # An answer that holds an engine object (which would import the engine on the other end) fails to pack,
            # and that failure is the caller's error like any other.
            answer = Result(protocol.pack(_result_saying_alive(exchange, future)))
        except Exception as exc:  # noqa: BLE001 - the caller's error, raised again on its side
            try:
                answer = Error(protocol.pack(exc))
            except Exception:  # noqa: BLE001 - an exception that cannot be pickled (or is the engine's own) crosses as its message
                from ...core.errors import CortexError

                answer = Error(protocol.pack(CortexError(f"{type(exc).__name__}: {exc}")))
        exchange.send(answer)

    def _stream_watch(self, exchange: Exchange, env: dict[str, str]) -> None:
        """Hold the subscriber's connection open, passing on the watcher's events, until it hangs up or we stop."""
        events = None
        try:
            exchange.send(Accepted(os.getpid()))
            while not self._imported.wait(ALIVE_SECONDS):  # slower than the client's patience must not look dead
                exchange.send(Alive())
            if self._stopping.is_set():
                return  # stopped meanwhile: the subscriber sees the connection close, as at any stop
            events = self._hosted.subscribe(env)
            while not self._stopping.is_set():
                try:
                    kind, value = events.get(timeout=ALIVE_SECONDS)
                except queue.Empty:
                    exchange.send(Alive())  # also how a subscriber that went away is noticed
                    continue
                exchange.send(watch_event(kind, value))
        except OSError:
            pass  # the subscriber hung up (its dashboard closed): the usual end, not worth a log line
        except RuntimeError:
            pass  # the server began stopping between the check above and the subscription
        finally:
            if events is not None:
                self._hosted.unsubscribe(events)
            with self._jobs_lock:
                self._last_activity = time.monotonic()

    def _engine(self, env: Mapping[str, str] | None = None):
        """The warm engine of this server's repository for an attached process's call, with the settings of its
        environment (`env`), or with the server's own (None: the warm-up's)."""
        from ...core.config import load_settings
        from ..bridge.local import repository_gone, still_there

        if not still_there(Path(self.root), self._was_repo):
            raise repository_gone(Path(self.root))
        if env is not None:
            settings = self._call_settings(env)
        else:
            if self._settings is None:
                self._settings = load_settings()
            settings = self._settings
        return self._engines(Path(self.root), self.db or None, settings)

    def _call_settings(self, env: Mapping[str, str]):
        """The settings of an attached process's environment, read again only when that environment or its config
        file changed: a dashboard makes many calls, and reading them costs about 10 ms each time. Kept by a hash of
        the environment (which holds credentials), never by its text."""
        from ...core.config import load_settings
        from ...core.credentials import variables_hash
        from ...core.locations import user_config_file

        try:
            st = os.stat(user_config_file(env))
            stamp: tuple | None = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        key = (variables_hash(sorted(env.items())), stamp)
        with self._settings_lock:
            found = self._settings_by_env.get(key)
        if found is None:
            found = load_settings(env=env)
            with self._settings_lock:
                self._settings_by_env[key] = found
                while len(self._settings_by_env) > SETTINGS_KEPT:
                    self._settings_by_env.pop(next(iter(self._settings_by_env)))
        return found

    def _warm_up(self) -> None:
        """Pay the start-up once: the heavy imports, the settings, the engine and its database, the model."""
        started = time.perf_counter()
        try:
            try:
                from ...core.config import load_settings
                from ...core.errors import CortexError, UnusableLocation
                from .. import output  # noqa: F401 - rich, which every printed answer needs
                from ..cli import main  # noqa: F401 - what runs the commands
                from ..cli.parser import build_parser

                build_parser()  # every command's module (each handler imports its heavy parts as it runs)
                load_lancedb()  # the largest single import (a second), paid here instead of by a command
            finally:
                self._imported.set()

            settings = self._settings = load_settings()
            if self.idle_seconds is None:
                self.idle_seconds = settings.daemon_idle_minutes * 60
            try:
                engine = self._engines(Path(self.root), self.db or None, settings)
                try:
                    engine.stores()
                    engine.has_index()
                except UnusableLocation:
                    raise
                except CortexError:
                    pass  # nothing stored yet: the first write creates it
            except UnusableLocation as exc:
                # Nothing will ever work here (`--db /dev/null`): answer the commands already sent, then go.
                self._unusable = str(exc)
                raise
            engine.embedder.embed_one("warm up")
            engine.compact_in_background(self.log)
            self.log(f"warm in {time.perf_counter() - started:.1f} s")
        except Exception as exc:  # a command will meet (and report) the same problem
            self.log(f"warm-up failed: {type(exc).__name__}: {exc}")
        finally:
            # The warm-up leaves a large heap of long-lived objects (modules, the model's and the database's): out of
            # the collector's reach, a full collection during a command no longer walks all of them (the p95's pauses).
            gc.collect()
            gc.freeze()
            self._warm.set()


def _result_saying_alive(exchange: Exchange, future):
    """The job's result (or its exception), telling the client every second meanwhile that the server is alive."""
    while True:
        try:
            return future.result(timeout=ALIVE_SECONDS)
        except FutureTimeout:
            exchange.send(Alive())


def watch_event(kind: str, value) -> Reply:
    """A watcher's event as the hosted engine publishes it (see `hosted.Hosted.subscribe`), as a subscriber hears it."""
    if kind == "progress":
        return Progress(value.phase, value.done, value.total)
    if kind == "indexed":
        return Indexed(protocol.pack(value))
    if kind == "update":
        return Update(protocol.pack(value))
    if kind == "memories":
        return Memories()
    if kind == "replaced":
        return Replaced()
    if kind == "failed":
        return Failed(str(value))
    raise ValueError(f"no watcher event {kind!r}")


def run(root: str, db: str, idle_minutes: float | None = None, log=None) -> int:
    """Be the server for (root, db) until idle or stopped; 0 also when another server already is."""
    paths = protocol.server_paths(root, db)
    log = log or sys.stderr
    lock = take_lock(paths)
    if lock is None:
        print(f"cortex: a server for {root} is already running", file=log)
        return 0
    server = Server(root, db, paths, idle_minutes * 60 if idle_minutes is not None else None, log)
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    try:
        listener = server.bind()
        server.serve(listener)
    finally:
        os.close(lock)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The server: `python -m cortex_tui.app.server.serve --root ROOT [--db DB] [--idle-minutes N]`, detached with its
    stderr on the log when the client starts it, in the terminal under `cortex serve`."""
    parser = argparse.ArgumentParser(prog="cortex-serve")
    parser.add_argument("--root", required=True)
    parser.add_argument("--db", default="")
    parser.add_argument("--idle-minutes", type=float)
    args = parser.parse_args(argv)
    os.chdir("/")  # never keep a directory (or an unmounted disk) busy between commands
    heap.one_arena()  # before any thread starts: see core.heap
    heap.arrow_on_the_c_heap()
    trim_log(protocol.server_paths(args.root, args.db).log)
    try:
        return run(args.root, args.db, idle_minutes=args.idle_minutes)
    except KeyboardInterrupt:  # Ctrl+C on `cortex serve` in a terminal
        return 0


if __name__ == "__main__":
    from ..leave import leave, open_streams

    open_streams()
    leave(main())
