"""The edges of a command's process: standard streams it can write to, and an end no background thread can abort.

A command started with its output closed (`cortex git >&-`) has no `sys.stdout`; what it would print is dropped
instead, as with `>/dev/null`, and the command does its work.

Ending a process whose background threads may still be inside LanceDB:

When the interpreter finalises while a daemon thread (the compactor, the index watcher, a dashboard worker, a
server's hosted call) is inside a LanceDB call, LanceDB's native runtime aborts the process (SIGABRT, measured in
about one exit in seven while a thread writes and queries in a loop) or leaves it hanging: Ctrl+C on `cortex watch`
or `cortex serve` could hang or dump core. So the commands end with `os._exit` once their own work is done and
their output flushed. Whatever a background thread had in flight is abandoned as kill -9 would abandon it, which
the database survives: every table write is one atomic commit (tests/test_crash.py kills at each commit).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def open_streams() -> None:
    """Give a closed standard stream (None) a sink that drops what is written to it."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))


def leave(code: int) -> None:
    """Never returns. (No `typing.NoReturn`: the CLI client imports nothing it can do without.)"""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:  # None: started with the stream closed (`cortex git >&-`)
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it anyway
            pass
    os._exit(code)


def run_installed(main: Callable[[], int], prog: str) -> None:
    """An installed command around `main`: closed streams made sinks, Ctrl+C outside main's own handling (while a
    client waits for the server, or attaches) one line and status 130, then `leave`."""
    open_streams()
    try:
        code = main()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        code = 130
    leave(code)
