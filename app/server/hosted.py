"""What the resident server does for attached processes: method calls on its warm engine and the one index watcher.

An attached dashboard calls its bridge's methods here (`EngineBridge` over the server's engine), an attached
`cortex mcp` its tools' (`CortexTools`); neither builds an engine, opens LanceDB or loads the model itself. Each call
runs with the settings of the attached process's environment (its team store, credentials, model), as a command
runs with its client's, so the server's own environment decides nothing for it. Calls run
on a small pool of their own, beside the command worker: they read no process-wide stream, directory or variable
the way a command does, and the engine is safe to share between threads.

The first subscriber to `watch` starts the repository's one index pass and then its one watcher; every subscriber
receives the pass's progress, its outcome, each update the watcher makes, each change to the memories (whoever made
it), and the database's replacement (`rm -rf .cortex`: the watcher moves to a new engine, which indexes again). A
subscriber that comes later gets the outcome at once. A failed pass (another process holding the write lock) is
tried again by the next subscriber.

`cortex index` hands its embeddings here once its lexical pass is done (`index.continue_embedding`), and returns:
the server embeds the pending chunks in a child process of its own (see bridge.index_process) while it lives, and
does not exit for idleness meanwhile. A server that stops first leaves them pending ("paused"); the next `cortex
index` hands them over again.

Nothing here runs before `ready` is set (the server's warm-up has made its imports): two threads importing the same
packages for the first time can meet in a circular import, and Python then hands one of them a half-made module
(`partially initialized module 'typing' has no attribute 'ClassVar'` in a dashboard's first call).
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..bridge.calls import CALLS as BRIDGE_CALLS
from ..bridge.calls import WatchEvents

if TYPE_CHECKING:  # the engine's import is the warm-up's (see serve), not this module's
    from ...core.engine import Engine
    from ..bridge.local import EngineBridge

CALL_THREADS = 4
SETTLE_SECONDS = 1.0
INDEX_CALLS = frozenset({"continue_embedding"})
"""What `cortex index` may ask of the server (facade `index`)."""


Environment = Mapping[str, str] | None
"""An attached process's environment as the server runs its calls with it (None: the server's own)."""


class Hosted:
    """Calls and the watcher over the engines that `engine(env)` hands out (the server's warm ones for its
    repository): each call's with the settings of the environment of the process that made it, the watcher's with
    those of the subscriber that started it."""

    def __init__(self, engine: Callable[[Environment], Engine], log: Callable[[str], None],
                 ready: threading.Event | None = None, on_work: Callable[[], None] = lambda: None) -> None:
        self._engine = engine
        self._log = log
        self._on_work = on_work
        """Told of each step of an index pass (the first one's progress, the watcher's updates)."""
        self._ready = ready or _set_event()
        self._pool = ThreadPoolExecutor(max_workers=CALL_THREADS, thread_name_prefix="cortex-call")
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._open_engines: weakref.WeakSet[Engine] = weakref.WeakSet()
        """Engines whose database a call has opened (see `_opened`)."""
        self._subscribers: list[queue.Queue] = []
        self._indexing = False
        self._indexed: tuple | None = None
        self._watching: EngineBridge | None = None
        self._watch_env: Environment = None
        """The environment of the subscriber that started the index pass and the watcher."""
        self._closing = threading.Event()
        self._embedder: threading.Thread | None = None
        """The background embedding run `cortex index` asked for, while it runs."""
        self.calls = 0

    # --- calls ---------------------------------------------------------------------------------------------------

    def submit(self, facade: str, method: str, args: tuple, kwargs: dict, session: str = "",
               env: Environment = None) -> Future:
        with self._lock:
            self.calls += 1
        return self._pool.submit(self._call, facade, method, args, kwargs, session, env)

    def _call(self, facade: str, method: str, args: tuple, kwargs: dict, session: str, env: Environment):
        self._ready.wait()
        from ...core.errors import CortexError

        target: object
        if facade == "bridge" and method in BRIDGE_CALLS:
            target = self._opened(self._current(env))
        elif facade == "tools" and method in _tool_calls():
            from ..mcp.tools import CortexTools

            target = CortexTools(self._current(env), session)
        elif facade == "index" and method in INDEX_CALLS:
            return getattr(self, method)(env, *args, **kwargs)  # with the caller's settings, like every call
        else:
            raise CortexError(f"the resident server has no call {facade}.{method}")
        return getattr(target, method)(*args, **kwargs)

    def _opened(self, engine: Engine) -> EngineBridge:
        """A bridge over `engine`, whose database and code-index tables were opened (`open`) before any call reads
        them: an attached dashboard asks for its panes at once (see `Bridge.opens_itself`), and two of its calls
        opening a new database side by side could see a table the other is still creating."""
        from ..bridge.local import EngineBridge

        bridge = EngineBridge(engine)
        with self._open_lock:
            if engine not in self._open_engines:
                bridge.open()
                self._open_engines.add(engine)
        return bridge

    # --- embedding in the background ------------------------------------------------------------------------------

    @property
    def embedding(self) -> bool:
        """The background embedding run is under way."""
        embedder = self._embedder
        return embedder is not None and embedder.is_alive()

    def continue_embedding(self, env: Environment = None) -> bool:
        """Embed the index's pending chunks in the background, from now until none is left (or the server stops);
        False when nothing new was started: a run, or another embedder (a watcher, a `cortex index --wait`), is at
        it already. `env`: the asking command's, whose settings and credentials the run embeds with."""
        engine = self._current(env)
        with self._lock:
            if self.embedding or self._closing.is_set():
                return False
            # The turn is taken here, before the answer leaves: a `cortex index --status` right after it says
            # "continuing", not "paused" while the run's child is still starting.
            turn = contextlib.ExitStack()
            if not turn.enter_context(engine.code_index(create=True).embed_queue.turn(wait=False)):
                turn.close()
                return False
            self._embedder = threading.Thread(target=self._embed_pending, args=(engine, turn), name="cortex-embed")
            self._embedder.start()
        return True

    def _embed_pending(self, engine, turn: contextlib.ExitStack) -> None:
        from ..bridge.index_process import PassCaller, embed_in_turn

        try:
            with turn:
                report = embed_in_turn(engine, PassCaller(lambda _progress: self._on_work(), self._closing.is_set))
        except Exception as exc:  # noqa: BLE001 - the chunks stay pending: the status says "paused"
            self._log(f"embedding in the background failed: {type(exc).__name__}: {exc}")
            return
        self._on_work()
        self._log(f"embedded {report.embedded} chunk(s) in the background in {report.embed_seconds:.0f} s; "
                  f"{report.embeddings_pending} pending")

    # --- the one watcher -----------------------------------------------------------------------------------------

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subscribers)

    @property
    def watching(self) -> bool:
        """The watcher runs and its watch is in place (changes from now on are seen)."""
        bridge = self._watching
        return bridge is not None and bridge.watcher is not None and bridge.watcher.ready.is_set()

    @property
    def indexing(self) -> bool:
        """An index pass is under way (the first, or the one after the database was replaced)."""
        return self._indexing

    def _current(self, env: Environment):
        """The engine a call with `env` gets now; the watcher moves to the engine of its own environment when that is
        not the one watched: the server's cache hands out a new engine once the database directory was deleted or
        replaced (`rm -rf .cortex`), or after evicting the old one, and a watcher left on the old engine would keep
        writing its database while every call read the new one. The subscribers see the new engine's index pass,
        then its updates."""
        engine = self._engine(env)
        with self._lock:
            watch_env, watching = self._watch_env, self._watching is not None
        watched = engine if env == watch_env or not watching else self._engine(watch_env)
        with self._lock:
            old = self._watching
            stale = old is not None and old.engine is not watched
            restart = stale and bool(self._subscribers) and not self._closing.is_set()
            if stale:
                self._watching, self._indexed, self._indexing = None, None, restart
        if stale and old is not None:  # (stale says it is not None; the type checker needs to see it)
            old.stop()
            self._log("the engine was replaced; indexing and watching again on the new one")
            self._publish("replaced", None)
        if restart:
            self._pool.submit(self._index_then_watch)
        return engine

    def subscribe(self, env: Environment = None) -> queue.Queue:
        """A queue of (kind, value) events: `progress`, `indexed` (report, status), `update`, `failed` (a message).
        The first subscriber's environment is the watcher's (later ones share that watcher). Waits for `ready`;
        refused (RuntimeError) once the host is closing."""
        self._ready.wait()
        if self._closing.is_set():
            raise RuntimeError("the server is stopping")
        self._current(env)
        events: queue.Queue = queue.Queue()
        with self._lock:
            self._subscribers.append(events)
            if self._indexed is not None:
                events.put(("indexed", self._indexed))
            elif not self._indexing:
                self._indexing, self._watch_env = True, env
                self._pool.submit(self._index_then_watch)
        return events

    def unsubscribe(self, events: queue.Queue) -> None:
        """The watcher is for the attached processes: when the last one leaves it stops (a command's freshness look
        keeps a search true without it), and the next to attach starts an index pass and a watcher again."""
        with self._lock:
            if events in self._subscribers:
                self._subscribers.remove(events)
            left = self._watching if not self._subscribers else None
            if left is not None:
                self._watching, self._indexed = None, None
        if left is not None:
            left.stop()
            self._log("nothing attached; stopped watching the work tree")

    def memories_changed(self) -> None:
        """A command or a call of this server wrote memories: its subscribers hear at once, even while the first index
        pass runs (the watcher, which sees every process's writes, starts after it)."""
        self._publish("memories", None)

    def _publish(self, kind: str, value) -> None:
        if kind in ("progress", "update", "indexed"):
            self._on_work()
        with self._lock:
            for events in self._subscribers:
                events.put((kind, value))

    def _index_then_watch(self) -> None:
        from ..bridge.local import EngineBridge

        bridge = EngineBridge(self._engine(self._watch_env), owns_engine=False)
        try:
            self._opened(bridge.engine)
            # A server on its way out stops the pass between files instead of finishing a long embedding run.
            indexed = bridge.index(lambda progress: self._publish("progress", progress), self._closing.is_set)
        except Exception as exc:  # noqa: BLE001 - told to the subscribers; the next one tries again
            self._log(f"index pass failed: {type(exc).__name__}: {exc}")
            with self._lock:
                self._indexing = False
            self._publish("failed", str(exc) or type(exc).__name__)
            return
        if self._closing.is_set():
            return
        bridge.start_watcher(WatchEvents(
            update=lambda update: self._publish("update", update),
            memories=lambda: self._publish("memories", None),
            replaced=lambda: self._replaced(bridge),
            indexed=lambda report, status: self._publish("indexed", (report, status)),
            failed=lambda text: self._failed(bridge, text),
        ))
        with self._lock:
            alone = not self._subscribers
            self._indexing = False
            if not alone:
                self._indexed, self._watching = indexed, bridge
            for events in self._subscribers:
                events.put(("indexed", indexed))
        if alone:  # every attached process left during the pass: nobody to watch for
            bridge.stop()
            self._log("indexed; nothing attached, so not watching")
            return
        self._log("indexed; watching the work tree")

    def _replaced(self, bridge) -> None:
        """The watcher saw the database directory go: move to a new engine (a pool thread: this is the watcher's)."""
        try:
            self._pool.submit(self._after_failure, bridge, "the database was removed")
        except RuntimeError:  # the server is shutting down
            pass

    def _failed(self, bridge, text: str) -> None:
        """The watcher stopped: looked into from a pool thread (`_current` joins the watcher's own thread)."""
        try:
            self._pool.submit(self._after_failure, bridge, text)
        except RuntimeError:  # the server is shutting down: nobody is left to tell
            pass

    def _after_failure(self, bridge, text: str) -> None:
        """A database removed under the watcher (`rm -rf .cortex`) fails it while the removal is still under way;
        once that has settled, a replaced engine is no failure to tell: the watcher moves to the new one."""
        time.sleep(SETTLE_SECONDS)
        if self._engine(self._watch_env) is not bridge.engine:
            self._current(self._watch_env)
        else:
            self._publish("failed", text)

    def close(self) -> None:
        self._closing.set()
        self._pool.shutdown(wait=True)
        embedder = self._embedder
        if embedder is not None:
            embedder.join()  # its child finishes the batch in hand and stops: the rest stays pending
        if self._watching is not None:
            self._watching.stop()


def _tool_calls() -> tuple[str, ...]:
    from ..mcp.tools import TOOL_CALLS

    return TOOL_CALLS


def _set_event() -> threading.Event:
    """Ready from the start: a host whose imports are already made (tests over an engine built in-process)."""
    event = threading.Event()
    event.set()
    return event
