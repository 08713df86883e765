"""A server process's edges: the lock that makes it the only server of its repository, its log, its memory."""

from __future__ import annotations

import fcntl
import os
import socket
import time

from ...core import heap
from ..link.protocol import ServerPaths

LOCK_WAIT_SECONDS = 5.0
"""A starter that finds the lock held waits this long for its holder (a server retiring) before giving up."""


def rss_bytes() -> int | None:
    """The process's resident memory (what `top` shows), from /proc; None elsewhere."""
    return heap.status_bytes("VmRSS")


def private_bytes() -> int | None:
    """The part of it that is the process's own (heap, the model, caches), without the shared libraries' pages."""
    return heap.status_bytes("RssAnon")


def take_lock(paths: ServerPaths) -> int | None:
    """The lifetime lock, or None when another live server has it (it answers on the socket) or keeps it past
    LOCK_WAIT_SECONDS."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline or _answers(paths.socket):
                os.close(fd)
                return None
            time.sleep(0.05)


def _answers(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        try:
            probe.connect(path)
            return True
        except OSError:
            return False


def trim_log(log: str, limit: int = 1 << 20) -> None:
    """The log (our stderr, opened for appending by the client) is cut when it passes a megabyte; a stderr that is
    not the log (a terminal, or a file of the user's under `cortex serve`) is left alone."""
    try:
        ours, file = os.fstat(2), os.stat(log)
        if (ours.st_dev, ours.st_ino) == (file.st_dev, file.st_ino) and ours.st_size > limit:
            os.ftruncate(2, 0)
    except OSError:
        pass
