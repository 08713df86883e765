"""Python's cyclic garbage collector, held off while the dashboard starts.

The start makes about 70,000 objects that live as long as the dashboard (Textual's and our modules, the stylesheet,
the widgets), and almost no cyclic garbage. Every 700 allocations the collector ran anyway, each tenth run over the
older objects too, and once over all of them: about an eighth of the CPU to the first results (55 ms of 0.47 s).
`hold` turns it off before the imports; `release`, once the first panes are filled, moves every object alive then
out of its reach for good (`gc.freeze`: they are never garbage, and each later full collection would walk them
again) and turns it back on. Only a start that held it releases it: an app in a test runs with it as it found it.
"""

from __future__ import annotations

import gc

_held = False


def hold() -> None:
    """Off until `release`: called first thing by `cortex-tui` (and by `cortex bench tui`'s dashboard)."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release() -> None:
    """On again, with what the start made frozen; nothing when `hold` did not turn it off."""
    global _held
    if _held:
        _held = False
        gc.freeze()
        gc.enable()
