"""Keeping the index fresh while something runs (dashboard, `cortex watch`, MCP server).

A background thread listens with watchfiles. Once the watch is in place it makes one catch-up pass (a file saved
while start-up indexing or embedding ran is picked up) and then marks the index live: from then on `status()`
reads the watcher's dirty set instead of listing the tree. Events are debounced (300 ms by default) so a burst
such as a `git checkout` of hundreds of files becomes one update. A change under `.git/` (HEAD, refs: a branch
switch, pull or rebase) triggers a full incremental pass, which re-reads only files whose stat changed; otherwise
only the changed paths are looked at. Between bursts, pending embeddings are filled in one batch at a time, so a
new save is never stuck behind a long embedding run; with nothing pending the thread blocks on the file system
watch alone (no timer, no database reads).

The same watch sees the database when it lies in the work tree (`.cortex/db`, the default): a new version of the
memories table (any process's write: a shell's `cortex remember`, an agent, another dashboard) is told as
`memories`, and the database directory disappearing (`rm -rf .cortex`) as `removed`, so whoever shows memories can
refresh instead of polling.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..answers import WatchUpdate
from ..errors import CortexError
from .embed_queue import EMBED_BATCH
from .index import CodeIndex

_GIT_STATE = ("HEAD", "packed-refs", "refs/", "FETCH_HEAD", "ORIG_HEAD")
_EMBED_TICK_MS = 400
"""How long the watch waits for events before embedding the next batch, while embeddings are pending."""
_NOISE_DIRS = {"__pycache__", "node_modules", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".venv", "venv"}


class IndexWatcher:
    """Watches a work tree and updates its code index; callbacks run on the watcher's thread."""

    def __init__(
        self,
        index: CodeIndex,
        on_update: Callable[[WatchUpdate], None] | None = None,
        on_error: Callable[[str], None] | None = None,
        debounce_ms: int = 300,
        embed: bool = True,
        database: str | None = None,
        on_database: Callable[[str], None] | None = None,
    ) -> None:
        self.index = index
        self.root = Path(index.root)
        self.on_update = on_update
        self.on_error = on_error
        self.debounce_ms = debounce_ms
        self.embed = embed
        self.database = self._relative(database) if database and "://" not in database else None
        """The database directory relative to the work tree, when it lies inside it (else its changes go unseen)."""
        self.on_database = on_database
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._embeddings_waiting = False
        self._turn: contextlib.ExitStack | None = None
        """The embed lock, while this watcher embeds (see `_embed_one_batch`)."""
        self.ready = threading.Event()
        """Set once the file system watch is in place (events before that may be missed)."""

    def start(self) -> IndexWatcher:
        self._thread = threading.Thread(target=self._run, name="cortex-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> IndexWatcher:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _relevant(self, _change, path: str) -> bool:
        rel = self._relative(path)
        if rel is None:
            return False
        parts = rel.split("/")
        if parts[0] == ".cortex":
            return False
        if parts[0] == ".git":
            inner = "/".join(parts[1:])
            return any(inner == g or inner.startswith(g) for g in _GIT_STATE) and not inner.endswith(".lock")
        return not any(p in _NOISE_DIRS for p in parts)

    def _relative(self, path: str) -> str | None:
        try:
            return Path(path).resolve().relative_to(self.root.resolve()).as_posix()
        except (ValueError, OSError):
            return None

    def _run(self) -> None:
        from watchfiles._rust_notify import RustNotify

        try:
            # RustNotify directly rather than watchfiles.watch(): the wait's timeout changes with the work at hand
            # (short while embeddings are pending, none when idle), and the watch is known to be in place as soon
            # as it is constructed.
            with RustNotify([str(self.root)], False, False, 300, True, True) as notify:
                self.ready.set()
                self._catch_up()
                while not self._stop.is_set():
                    timeout = _EMBED_TICK_MS if self.embed and self._embeddings_waiting else 0
                    raw = notify.watch(self.debounce_ms, 50, timeout, self._stop)
                    if raw in ("stop", "signal"):
                        break
                    if raw == "timeout":
                        self._embed_one_batch()
                        continue
                    assert not isinstance(raw, str)  # the three words are handled above; the rest is a change set
                    self._database_events(raw)
                    changes = {(c, p) for c, p in raw if self._relevant(c, p)}
                    if changes:
                        self._apply(changes, time.perf_counter())
        except Exception as exc:  # the watcher must never take its host down
            if self.on_error:
                self.on_error(f"file watcher stopped: {exc}")
        finally:
            self._end_turn()
            self.index.go_offline()

    def _database_events(self, raw) -> None:
        """`memories` when the memories table has a new version, `removed` once the database directory is gone."""
        if self.database is None or self.on_database is None:
            return
        inside = [rel for _, p in raw if (rel := self._relative(p)) is not None
                  and (rel == self.database or rel.startswith(self.database + "/"))]
        if not inside:
            return
        if not (self.root / self.database).is_dir():
            self.on_database("removed")
        elif any(rel.startswith(f"{self.database}/memories.lance/") for rel in inside):
            self.on_database("memories")

    def _catch_up(self) -> None:
        """One full incremental pass once events are being recorded: whatever changed before (during start-up
        indexing, or while nothing watched) is applied, and after it the dirty set alone describes freshness."""
        try:
            report = self.index.update(embed=False)
        except CortexError as exc:
            if self.on_error:
                self.on_error(str(exc))
            return
        self.index.mark_clean((), full=True)
        self.index.go_live()
        self._embeddings_waiting = report.embeddings_pending > 0
        if self.on_update and (report.changed or report.removed):
            self.on_update(WatchUpdate((), False, report, 0.0))

    def _apply(self, changes, started: float) -> None:
        rels = sorted({r for _, p in changes if (r := self._relative(p)) is not None})
        git_state = any(r.startswith(".git/") for r in rels)
        paths = [r for r in rels if not r.startswith(".git/")]
        self.index.mark_dirty(paths, git_state)
        try:
            report = self.index.update(only=None if git_state else paths, embed=False)
        except CortexError as exc:
            if self.on_error:
                self.on_error(str(exc))
            return
        self.index.mark_clean(paths, full=git_state)
        self._embeddings_waiting = report.embeddings_pending > 0
        if self.on_update:
            self.on_update(WatchUpdate(tuple(paths), git_state, report, time.perf_counter() - started))

    def _embed_one_batch(self) -> None:
        """One batch, in this watcher's turn (the embed lock, held from the first batch until the queue runs dry,
        so that a status asked meanwhile says "continuing"). Another embedder holding it (a resident server, a
        `cortex index --wait`) is left to its work: the next tick looks again, and takes over if it stopped."""
        queue = self.index.embed_queue
        try:
            if self._turn is None:
                turn = contextlib.ExitStack()
                if not turn.enter_context(queue.turn(wait=False)):
                    turn.close()
                    return
                self._turn = turn
            done = queue.embed(limit=EMBED_BATCH, should_stop=self._stop.is_set)
        except CortexError as exc:
            self._end_turn()
            if self.on_error:
                self.on_error(str(exc))
            return
        # A short batch means the queue ran dry: stop waking up until an update adds chunks again.
        self._embeddings_waiting = done >= EMBED_BATCH
        if not self._embeddings_waiting:
            self._end_turn()

    def _end_turn(self) -> None:
        if self._turn is not None:
            self._turn.close()
            self._turn = None
