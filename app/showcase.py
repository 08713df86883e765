"""Drive the real dashboard headless until every pane has its data: for screenshots, snapshots and `bench tui`."""

from __future__ import annotations

import time

from textual.pilot import Pilot

from .app import CortexApp
from .messages import GraphLoaded, IndexFinished, SearchFinished, TimelineLoaded, WhatLoaded

FIRST_PAINT = (WhatLoaded, SearchFinished, TimelineLoaded, GraphLoaded)


class RecordingApp(CortexApp):
    """The real app; `record` (pass it as run_test's message_hook) remembers which messages were processed."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seen: set[type] = set()

    def record(self, message) -> None:
        self.seen.add(type(message))


async def wait_for(pilot: Pilot, types: tuple[type, ...], timeout: float = 120.0) -> float:
    """Seconds until messages of all these types were handled (polling Textual, bounded by the timeout)."""
    app = pilot.app
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if all(t in app.seen for t in types):
            await pilot.pause()
            return time.perf_counter() - start
        await pilot.pause(0.02)
    raise TimeoutError(f"the dashboard did not show {[t.__name__ for t in types if t not in app.seen]} in {timeout:.0f}s")


async def settle(pilot: Pilot) -> None:
    """Everything loaded, indexing finished, no worker running."""
    await wait_for(pilot, FIRST_PAINT + (IndexFinished,))
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


