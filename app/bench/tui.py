"""`cortex bench tui`: seconds from the command to the first painted dashboard with results, on an indexed repo.

Each run is a fresh `python` process (imports, model load and LanceDB open all count), timed by the parent from
spawn until the child reports (1) the first results on screen (the branch timeline, read from git) and (2) the
what, search, timeline and graph panes all showing results from the database and the model.
The child drives the real app headless and marks the first frame composed with those results; a terminal adds only
the cost of writing the frames.
With `--attached` the child attaches to the repository's resident server, started and warmed before the runs, as
`cortex-tui` does when one is running: then only the dashboard's own start-up and the socket round trips count.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...core.errors import CortexError


@dataclass(frozen=True)
class TuiBench:
    repo: str
    files: int
    runs: int
    first_paint_s: list[float]
    """Per run, from spawning the process to the first results on screen."""
    all_panes_s: list[float]
    """Per run, from spawning the process to the four panes showing results."""
    attached: bool = False
    first_paint_cpu_s: list[float] = field(default_factory=list)
    """Per run, CPU-seconds the dashboard process had used (every thread, user and system) at the first results:
    unlike the wall-clock figures, about the same on a busy machine as on a quiet one."""
    all_panes_cpu_s: list[float] = field(default_factory=list)
    """Per run, CPU-seconds the dashboard process had used at the four panes."""


def run(repo: Path, runs: int = 5, size: tuple[int, int] = (160, 45), attached: bool = False) -> TuiBench:
    from ...core.engine import Engine

    engine = Engine(repo)
    report = engine.code_index(create=True).update(embed=True)
    files = report.listed
    if attached:
        _warm_server(repo)
    first, full, first_cpu, full_cpu = [], [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "cortex_tui.app.bench.tui", str(repo), str(size[0]), str(size[1]),
             *(["attached"] if attached else [])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        marks, cpu = [], []
        assert child.stdout is not None  # asked for as a pipe
        for _ in range(2):
            line = child.stdout.readline().split()
            if line:
                marks.append(time.perf_counter() - start)
                cpu.append(float(line[-1]))
        _, err = child.communicate(timeout=120)
        if len(marks) != 2 or child.returncode != 0:
            raise CortexError(f"the dashboard did not start: {(err.strip().splitlines() or ['?'])[-1]}")
        first.append(marks[0])
        full.append(marks[1])
        first_cpu.append(cpu[0])
        full_cpu.append(cpu[1])
    return TuiBench(str(repo), files, runs, first, full, attached, first_cpu, full_cpu)


def _warm_server(repo: Path) -> None:
    """Start the repository's server and have it open the database, load the model and run its index pass."""
    from ..link.messages import Failed, Indexed
    from ..link.remote import Remote

    remote = Remote.attach(repo, None, start=True)
    if remote is None:
        raise CortexError("no resident server could be started (see `cortex serve --status`)")
    for method in ("open", "warm_model", "what"):
        remote.call("bridge", method)
    subscription = remote.watch()
    for event in subscription:
        if isinstance(event, (Indexed, Failed)):
            break
    subscription.close()


def _bridge(repo: Path, attached: bool):
    """The dashboard's bridge, made as `cortex-tui` makes it: attached, its first calls are on their way."""
    if attached:
        from ..link.remote import Remote
        from ..tui.early import EarlyBridge
        from ..tui.session import new_session

        remote = Remote.attach(repo, None, start=False)
        if remote is None:
            raise CortexError("the resident server is not running")
        return EarlyBridge(remote, new_session())
    from ...core.engine import Engine
    from ..bridge.local import EngineBridge

    return EngineBridge(Engine(repo))


async def _first_paint(repo: Path, size: tuple[int, int], attached: bool) -> None:
    from ..tui import collector

    collector.hold()  # as `cortex-tui` does first
    bridge = _bridge(repo, attached)  # before the dashboard's imports, as `cortex-tui` does
    from ..tui.showcase import FIRST_PAINT, FIRST_RESULTS, RecordingApp, wait_until

    class TimedApp(RecordingApp):
        """Prints each mark's names as soon as a frame showing its results has been composed: the frame a terminal
        would be sent (headless, it is not written), not a callback queued after it. Waiting for `wait_for_refresh`
        after the results arrived, as this bench did before, put the mark behind every message already queued for
        the screen (pane 5's selection, the index pass's reports, a second round of refreshes) and a frame later:
        under load, a second after the frame that showed the four panes."""

        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.marks: list[tuple[str, ...]] = [FIRST_RESULTS, FIRST_PAINT]

        def _display(self, screen, renderable) -> None:  # each mark: its names, then the process's CPU-seconds
            super()._display(screen, renderable)
            loaded: set[str] = getattr(screen, "loaded", set())
            while renderable is not None and self.marks and set(self.marks[0]) <= loaded:
                print(",".join(self.marks.pop(0)), f"{time.process_time():.4f}", flush=True)

    app = TimedApp(bridge, remember_theme=False)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: not app.marks, "every pane", timeout=60)
        app.exit()


def main(argv: list[str]) -> int:
    asyncio.run(_first_paint(Path(argv[0]), (int(argv[1]), int(argv[2])), argv[3:] == ["attached"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
