"""The resident server's warm engines, one per repository root, database, settings and credentials."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine's import is the warm-up's (see serve), not this module's
    from ...core.config import Settings
    from ...core.engine import Engine

MAX_ENGINES = 4
"""Engines kept warm (one per repository root, database and settings); the model is shared between them."""


class EngineCache:
    """Hands commands (their context's `engines`) a warm Engine instead of a new one per command.

    Keyed by repository root, database, the effective settings and the caller's object-store credentials (see
    core/credentials.py), so a command whose environment or config differs gets an engine of its own, whose team
    store is reached with its caller's credentials. A database directory that was deleted or replaced since (`rm -rf .cortex`)
    yields a fresh engine, as a new process would."""

    def __init__(self, on_memories: Callable[[], None] | None = None) -> None:
        self._on_memories = on_memories
        """Told after any write of memories through an engine of this cache (a command's or an attached process's)."""
        self._engines: OrderedDict[tuple, tuple[Engine, tuple | None]] = OrderedDict()
        self._lock = threading.Lock()
        """Commands and attached processes' calls ask for engines from different threads."""

    def __call__(self, path: Path, db: str | None, settings: Settings) -> Engine:
        with self._lock:
            engine, retired = self._get(path, db, settings)
        # Outside the lock: stopping waits for a compaction under way to finish its table.
        for old in retired:
            old.close()
        return engine

    def release_caches(self) -> None:
        """Every cached engine lets go of what it rebuilds on demand (Engine.release_caches)."""
        with self._lock:
            engines = [engine for engine, _ in self._engines.values()]
        for engine in engines:
            engine.release_caches()

    def close(self) -> None:
        """Stop every cached engine's background threads (the server is shutting down)."""
        with self._lock:
            retired = [engine for engine, _ in self._engines.values()]
            self._engines.clear()
        for engine in retired:
            engine.close()

    def _get(self, path: Path, db: str | None, settings: Settings) -> tuple[Engine, list[Engine]]:
        """The engine for these arguments, and the cached engines it evicted (to be closed by the caller)."""
        from ...core.engine import Engine
        from ...core.git import gitctx
        from ...core.locations import default_db_uri, is_remote_uri

        start = Path(path).expanduser()
        if not start.exists():
            return Engine(start, db=db, settings=settings), []  # raises the one-line error the CLI prints
        resolved = start.resolve()
        root = gitctx.repo_root(resolved) or resolved
        uri = db or settings.db or default_db_uri(root)
        # The credentials count only where an object store is used (a shell with AWS_* set and no team store shares
        # the warm engine), and by their hash alone in the key. An engine that uses no object store holds none of
        # them (nor hands them to the index passes' children); one that does keeps its caller's for its life.
        remote = any(is_remote_uri(u) for u in (uri, settings.team_db or "", settings.global_db or ""))
        if not remote:
            settings = settings.without_credentials()
        key = (str(root), uri, settings.model_dump_json(), settings.credentials.key if remote else "")
        stamp = _directory_stamp(uri)
        found = self._engines.get(key)
        if found is not None and found[1] in (stamp, None):
            # An engine made before its database existed keeps it once it appears: that engine (or its first
            # write) created it, and a replacement would leave its watcher on a second engine for nothing.
            self._engines[key] = (found[0], stamp)
            self._engines.move_to_end(key)
            return found[0], []
        engine = Engine(start, db=db, settings=settings)
        if self._on_memories is not None:
            engine.on_memories_changed(self._on_memories)
        retired = [found[0]] if found is not None else []  # its database was deleted or replaced
        self._engines[key] = (engine, stamp)
        self._engines.move_to_end(key)
        while len(self._engines) > MAX_ENGINES:
            retired.append(self._engines.popitem(last=False)[1][0])
        return engine, retired


def _directory_stamp(uri: str) -> tuple | None:
    try:
        st = os.stat(uri)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)
