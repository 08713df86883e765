"""Thread workers that never keep the process alive.

Textual runs thread workers in the event loop's default executor, and both `asyncio.run` (at the end of `App.run`)
and the interpreter's exit join that executor's threads. A worker still inside a slow engine call (a graph over a
huge memory, a locked database) would then hold `q` and Ctrl+C hostage until it returns. The dashboard only ever
reads results through messages, so a worker that outlives the app has nobody to report to and can simply be
abandoned: each call gets a daemon thread, and shutting down does not wait for them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor


class DaemonExecutor(ThreadPoolExecutor):
    """Runs each submitted call in its own daemon thread; `shutdown` never waits. (asyncio accepts only a
    ThreadPoolExecutor as the default executor; its pool of non-daemon threads is never used.)"""

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        future: Future = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the awaiting worker, which reports it
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="cortex-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Nothing to wait for: the threads are daemons, and their results have no reader any more."""
