"""Drive the real dashboard headless until its panes have their data: for tests, snapshots, screenshots, `bench tui`."""

from __future__ import annotations

import asyncio
import time

from textual.notifications import Notify
from textual.pilot import Pilot

from .app import CortexApp
from .dashboard_work import FIRST_PANES

FIRST_RESULTS = ("timeline",)
"""Painted from git alone, before the database is open."""
FIRST_PAINT = FIRST_PANES
"""Every pane that needs no task showing results."""
EVERYTHING = FIRST_PAINT + ("index",)


class RecordingApp(CortexApp):
    """The real app; pass `app.record` as run_test's message_hook to keep every message processed."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.messages: list = []

    def record(self, message) -> None:
        self.messages.append(message)

    def seen(self, kind: type):
        """The latest message of this type, or None."""
        return next((m for m in reversed(self.messages) if isinstance(m, kind)), None)

    def notices(self) -> list[str]:
        """The text of every notification the app was asked to show, in order: kept as each `Notify` arrives,
        where the toasts on screen go once their timeout passes (on a loaded machine, before a test looks)."""
        return [m.notification.message for m in self.messages if isinstance(m, Notify)]


async def wait_until(pilot: Pilot, done, what: str, timeout: float = 120.0) -> float:
    """Seconds until `done()` holds, yielding to Textual between checks; fails after `timeout`."""
    start = time.perf_counter()
    while time.perf_counter() - start < timeout:
        if done():
            return time.perf_counter() - start
        if not pilot.app.is_running:
            raise RuntimeError(f"the dashboard stopped before it showed {what}")
        await asyncio.sleep(0.01)  # fine enough for `cortex bench tui` to time results to the frame
    raise TimeoutError(f"the dashboard did not show {what} within {timeout:.0f}s")


async def wait_loaded(pilot: Pilot, names: tuple[str, ...] = EVERYTHING, timeout: float = 120.0) -> float:
    """Seconds until the dashboard received these results (see DashboardScreen.loaded)."""
    screen = pilot.app.screen
    return await wait_until(pilot, lambda: set(names) <= getattr(screen, "loaded", set()),
                            f"{', '.join(names)}", timeout)


async def settle(pilot: Pilot, *types: type) -> None:
    """Messages of these types were handled (a RecordingApp), or with none everything loaded; then no worker runs."""
    if types:
        app = pilot.app
        if not isinstance(app, RecordingApp):
            raise TypeError(f"settle() on message types needs a RecordingApp, not {type(app).__name__}")
        await wait_until(pilot, lambda: all(app.seen(t) is not None for t in types), ", ".join(t.__name__ for t in types))
    else:
        await wait_loaded(pilot)
    # Not workers.wait_for_complete(): it raises for workers that a newer one of their group replaced.
    await wait_until(pilot, lambda: not any(w.is_running for w in pilot.app.workers), "idle workers")
    await pilot.pause()
