"""Screenshots of the real dashboard on the demo repository: the whole screen in both themes and each pane alone.

    python screenshots/make_screenshots.py        # writes screenshots/*.svg, and *.png when rsvg-convert exists
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def shoot() -> list[Path]:
    os.environ.setdefault("CORTEX_CACHE_DIR", tempfile.mkdtemp(prefix="cortex-shots-"))
    from cortex_tui.app.bridge.local import EngineBridge
    from cortex_tui.app.tui.showcase import RecordingApp, settle
    from cortex_tui.core.demo import demo_repository, seed_memories
    from cortex_tui.core.engine import Engine

    root = demo_repository()
    engine = Engine(root)
    seed_memories(engine)
    made = []
    for theme in ("cortex-dark", "cortex-light"):
        app = RecordingApp(EngineBridge(Engine(root)), task="tax is applied twice at checkout", theme=theme, remember_theme=False)
        async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
            await settle(pilot)
            await pilot.press("slash", *"cart total")
            await pilot.pause(1.0)
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
            made.append(Path(app.save_screenshot(f"dashboard-{theme}.svg", str(HERE))))
            if theme == "cortex-dark":
                await pilot.resize_terminal(100, 32)
                for number, name in enumerate(("what", "search", "graph", "timeline", "budget"), 1):
                    await pilot.press("escape", str(number))
                    await pilot.pause(0.3)
                    made.append(Path(app.save_screenshot(f"pane-{number}-{name}.svg", str(HERE))))
    return made


def main() -> int:
    made = asyncio.run(shoot())
    converter = shutil.which("rsvg-convert")
    for svg in made:
        if converter:
            subprocess.run([converter, "-w", "1600", str(svg), "-o", str(svg.with_suffix(".png"))], check=True)
        print(svg.with_suffix(".png") if converter else svg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
