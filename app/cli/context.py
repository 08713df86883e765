"""What a `cortex` command runs with, handed to its handler instead of read from the process.

A command's streams, working directory and environment are its caller's: this process's own when `cortex` runs
in-process, a client's when the resident server runs it. The server runs several commands at once, each with its
own context, so no handler may read `sys.std*`, `os.environ` or the working directory, nor build an engine of its
own: the context says where the engine comes from (the server's warm ones).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from ...core.config import Settings
    from ...core.engine import Engine
    from ..output import Output

EngineSource = Callable[[Path, "str | None", "Settings"], "Engine"]
"""(path, database, settings) -> the engine for them."""


def new_engine(path: Path, db: str | None, settings: Settings) -> Engine:
    """A new engine per command: what a command run in its own process uses."""
    from ...core.engine import Engine

    return Engine(path, db=db, settings=settings)


@dataclass(frozen=True, eq=False)
class CommandContext:
    """One command's input, output, working directory, environment and engines."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
    cwd: Path
    """Absolute: relative paths in the command line (`-C`, `--db`, `-o`, a file to import) are read from here."""
    env: Mapping[str, str] = field(repr=False)
    engines: EngineSource = new_engine
    notes: list[str] = field(default_factory=list)
    """Lines for standard error once the command has succeeded (`cortex: note: ...`); a failed command's one-line
    error says what matters instead, so errors stay one line."""
    served: bool = False
    """Run by the repository's resident server (which stays after the command), not in the command's own process."""
    write_id: str = ""
    """The id the client named this command's write with (see core/write_ids.py); "" in-process, where only a
    caller's CORTEX_WRITE_ID names it."""

    @classmethod
    def of_process(cls) -> CommandContext:
        """This process's own streams, directory and environment (a command run in-process)."""
        return cls(sys.stdin, sys.stdout, sys.stderr, Path(os.getcwd()), os.environ)

    @cached_property
    def out(self) -> Output:
        from ..output import Output  # rich: not for commands that only parse (the thin client)

        return Output(self.stdout, self.stderr, self.env)

    def path(self, value: str | Path) -> Path:
        """A path from the command line, read from the command's working directory."""
        return self.cwd / Path(value).expanduser()

    def database(self, value: str | None) -> str | None:
        """A `--db` or CORTEX_DB value: a local directory read from the working directory, a URI as it is."""
        if not value or "://" in value:
            return value
        return str(self.path(value))

    def settings(self, no_global: bool = False) -> Settings:
        from ...core.config import load_settings

        return load_settings(env=self.env, use_global=False if no_global else None)

    def engine(self, args) -> Engine:
        """The engine for the command's `-C` (or `cortex index TARGET`) and `--db`, with the settings of the command's
        environment."""
        settings = self.settings(getattr(args, "no_global", False))
        where = getattr(args, "target", None) or args.path
        engine = self.engines(self.path(where), self.database(args.db or settings.db), settings)
        note = f"cortex: note: {engine.read_only_note}; reading only"
        if engine.read_only and note not in self.notes:
            self.notes.append(note)
        return engine

    def session(self, args) -> str | None:
        """The session the command runs in (`--session`, else CORTEX_SESSION; None: no session)."""
        return getattr(args, "session", None) or self.env.get("CORTEX_SESSION") or None

    def debug(self) -> bool:
        return bool(self.env.get("CORTEX_DEBUG"))
