"""The dashboard's start-up: what it asks first, and the work it leaves out on the way to its first full frame."""

from __future__ import annotations

import pytest
from cortex_tui.app.tui.messages import (
    EngineReady,
    GraphLoaded,
    IndexFinished,
    SearchFinished,
    SelectionMade,
    TimelineLoaded,
    WhatLoaded,
)
from cortex_tui.app.tui.showcase import RecordingApp, settle
from textual.widgets._footer import FooterKey
from textual.worker import Worker, WorkerState

from .conftest import both, bridge_for


def _keys(app) -> list[FooterKey]:
    return list(app.screen.query(FooterKey))


async def test_the_footer_keeps_its_keys_while_they_stay_the_same_and_rebuilds_them_when_they_change(shop):
    """Each pane refreshes the screen's bindings when its highlighted item changes, and Textual's footer rebuilt every
    key after each refresh (about ten times before the first full frame, a third of that frame's CPU)."""
    app = RecordingApp(bridge_for(shop, served=False), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        before = _keys(app)
        app.screen.refresh_bindings()  # what a pane does when its highlight moves
        await pilot.pause()
        assert all(a is b for a, b in zip(_keys(app), before, strict=True)), "the same keys were built again"

        # The timeline's commits take other keys than pane 1's memories: the footer follows the focus.
        await pilot.press("4")
        await pilot.pause()
        after = _keys(app)
        shown = [key.description for key in after if not key.has_class("-command-palette")]
        expected = [binding.description for _node, binding, _enabled, _tip in app.screen.active_bindings.values()
                    if binding.show]
        assert shown != [key.description for key in before if not key.has_class("-command-palette")]
        assert "Help" in shown and set(shown) <= set(expected), (shown, expected)


@both
async def test_an_attached_dashboard_asks_for_its_panes_before_it_paints_the_timeline(shop, served):
    """The resident server's database is open before any call: an attached dashboard's pane calls go out as soon as
    git's timeline is in (it waited for that timeline to be painted, then for an `open` round trip). A dashboard with
    an engine of its own still paints the timeline first: opening LanceDB takes seconds."""
    app = RecordingApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
    # A message is recorded by each pump it reaches (it bubbles from the screen to the app): each once, in order.
    once = {id(m): m for m in app.messages if isinstance(m, (EngineReady, TimelineLoaded))}
    order = [type(m) for m in once.values()]
    first = [EngineReady, TimelineLoaded] if served else [TimelineLoaded, EngineReady]
    assert order[:2] == first, order


@pytest.mark.parametrize("width", [100, 160])
async def test_the_footer_fits_its_keys_to_a_new_width(shop, width):
    """A resize rebuilds the keys for the new width (which keys fit whole), the one change no binding refresh tells."""
    app = RecordingApp(bridge_for(shop, served=False), remember_theme=False)
    async with app.run_test(size=(200, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        wide = [key.description for key in _keys(app)]
        await pilot.resize_terminal(width, 45)
        await pilot.pause()
        await pilot.pause()
        keys = _keys(app)
        assert all(key.region.right <= width for key in keys), [(k.description, k.region) for k in keys]
        assert "Help" in [key.description for key in keys]
        if width == 100:
            assert len(keys) < len(wide), wide


@both
async def test_a_start_on_a_clean_work_tree_reads_each_pane_once(shop, served):
    """The index pass at start finds nothing to change on a fresh index and a clean work tree: the panes stay as they
    were read (every start read them all again, with pane 5's selection, while its first full frame was painted)."""
    app = RecordingApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SelectionMade)
        finished = app.seen(IndexFinished)
        assert not (finished.report.changed or finished.report.removed or finished.report.embedded), finished.report
        assert app.screen.meter_task, "the meter follows the work (its selection is what made every start read twice)"
    counts = {kind.__name__: len({id(m) for m in app.messages if isinstance(m, kind)})
              for kind in (WhatLoaded, SearchFinished, GraphLoaded, SelectionMade)}
    assert counts == {"WhatLoaded": 1, "SearchFinished": 1, "GraphLoaded": 1, "SelectionMade": 1}, counts


@both
async def test_the_index_pass_begins_once_the_first_panes_are_filled(shop, served):
    """The index pass (the server's, when attached) took the CPU the first panes' calls need, on the server and in
    the dashboard, and on a fresh index it finds nothing to change: it begins once they are filled."""
    app = RecordingApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
    seen: list[str] = []
    for message in {id(m): m for m in app.messages}.values():
        if isinstance(message, Worker.StateChanged) and message.worker.group == "index" \
                and message.state == WorkerState.RUNNING:
            seen.append("index")
        elif isinstance(message, (WhatLoaded, SearchFinished, GraphLoaded, TimelineLoaded)):
            seen.append(type(message).__name__)
    first = ("WhatLoaded", "SearchFinished", "GraphLoaded", "TimelineLoaded")
    assert seen.index("index") > max(seen.index(name) for name in first), seen
