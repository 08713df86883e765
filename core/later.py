"""Work a command may leave until its answer is out: writes that nothing in the answer depends on (an embedding
cache). A long-lived process that answers commands collects them while a command runs and does them after it has
answered; anywhere else (a command run in-process, a background worker) they are done at once, as before."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_local = threading.local()


def after_answer(job: Callable[[], object]) -> None:
    """Run `job` after the current command's answer when a caller collects (see `collected`), else now."""
    pending = getattr(_local, "pending", None)
    if pending is None:
        job()
    else:
        pending.append(job)


def collecting() -> bool:
    """Whether this thread's command collects work for after its answer (a resident server's CLI command)."""
    return getattr(_local, "pending", None) is not None


@contextmanager
def collected() -> Iterator[list[Callable[[], object]]]:
    """Collect, on this thread, the jobs `after_answer` is given; the caller runs them once it has answered."""
    outer = getattr(_local, "pending", None)
    jobs: list[Callable[[], object]] = []
    _local.pending = jobs
    try:
        yield jobs
    finally:
        _local.pending = outer
