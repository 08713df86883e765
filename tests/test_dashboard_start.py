"""The dashboard's start-up: what it asks first, and the work it leaves out on the way to its first full frame."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cortex_tui.app.tui import dashboard
from cortex_tui.app.tui.dashboard_work import FIRST_PANES
from cortex_tui.app.tui.messages import (
    EngineReady,
    GraphLoaded,
    IndexFinished,
    SearchFinished,
    SelectionMade,
    TimelineLoaded,
    WhatLoaded,
)
from cortex_tui.app.tui.showcase import RecordingApp, settle, wait_loaded, wait_until
from cortex_tui.core.records import MemoryDraft
from textual import events
from textual.widgets import Tab, Tabs
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
    """The resident server's database is open before any call: a dashboard attached through a bridge that asked
    nothing ahead sends its pane calls as soon as git's timeline is in (it waited for that timeline to be painted,
    then for an `open` round trip). A dashboard with an engine of its own still paints the timeline first: opening
    LanceDB takes seconds."""
    from cortex_tui.app.bridge.remote import RemoteBridge
    from cortex_tui.app.link.remote import Remote

    bridge = RemoteBridge(Remote.attach(shop, None, start=True)) if served else bridge_for(shop, served=False)
    app = RecordingApp(bridge, remember_theme=False)
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
async def test_the_index_pass_begins_once_the_first_panes_are_filled(shop, served, monkeypatch):
    """The index pass (the server's, when attached) took the CPU the first panes' calls need, on the server and in
    the dashboard, and on a fresh index it finds nothing to change: it begins once they are filled."""
    # Its fallback (the pass begins anyway this long after the database opened) fired first on a loaded CI machine.
    monkeypatch.setattr(dashboard, "INDEX_WAIT_S", 120.0)
    app = RecordingApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
    _begins_after_the_first_panes(app, "index")


def _begins_after_the_first_panes(app: RecordingApp, group: str) -> None:
    """The dashboard's worker `group` began running only after the four first panes' answers arrived."""
    seen: list[str] = []
    for message in {id(m): m for m in app.messages}.values():
        if isinstance(message, Worker.StateChanged) and message.worker.group == group \
                and message.state == WorkerState.RUNNING:
            seen.append(group)
        elif isinstance(message, (WhatLoaded, SearchFinished, GraphLoaded, TimelineLoaded)):
            seen.append(type(message).__name__)
    first = ("WhatLoaded", "SearchFinished", "GraphLoaded", "TimelineLoaded")
    assert seen.index(group) > max(seen.index(name) for name in first), seen


class FramedApp(RecordingApp):
    """Keeps, for each frame composed, which results the screen had then (`loaded`)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.frames: list[frozenset[str]] = []

    def _display(self, screen, renderable) -> None:
        super()._display(screen, renderable)
        if renderable is not None:
            self.frames.append(frozenset(getattr(screen, "loaded", ())))


def _counted(bridge) -> list[str]:
    """The names of the calls this bridge sends the server from now on, in order (an in-process bridge sends none)."""
    calls: list[str] = []
    send = getattr(bridge, "_call", None)
    if send is not None:
        def counting(name, *args):
            calls.append(name)
            return send(name, *args)

        bridge._call = counting
    return calls


async def test_an_attached_dashboard_makes_none_of_its_first_calls_itself(shop):
    """`cortex-tui` attached asks git's timeline, what, the timeline with memories, the graph and the search as its
    bridge is made, before it imports the dashboard (a third of a second of CPU): the server answers them meanwhile,
    and the dashboard sends none of them itself before its panes are filled."""
    bridge = bridge_for(shop)
    sent = _counted(bridge)
    app = RecordingApp(bridge, remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await wait_loaded(pilot, FIRST_PANES)
        before_filled = list(sent)
        await settle(pilot, WhatLoaded, IndexFinished)
    assert not {"timeline", "what", "graph", "search", "open"} & set(before_filled), before_filled
    assert all(app.seen(kind) is not None for kind in (WhatLoaded, SearchFinished, GraphLoaded, TimelineLoaded))


@both
async def test_git_timeline_is_painted_alone_before_the_panes_are_asked(shop, served):
    """The panes' answers are asked ahead (attached) or wait for LanceDB (in-process): either way git's timeline is
    on screen a frame before any other pane's results, and the panes are asked for theirs after it."""
    app = FramedApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
    once = {id(m): m for m in app.messages if isinstance(m, (EngineReady, TimelineLoaded))}
    assert [type(m) for m in once.values()][:2] == [TimelineLoaded, EngineReady]
    first = next(frame for frame in app.frames if "timeline" in frame)
    assert not first & {"what", "search", "graph"}, app.frames


@pytest.mark.parametrize("size", [(160, 45), (80, 24)])
async def test_pane_one_has_the_keyboard_from_the_start_without_a_focus_moving_first(shop, size):
    """Textual gave the focus to the first focusable widget, the narrow layout's tabs, and the dashboard then moved
    it to pane 1: each move restyled every pane (`:focus-within`) before the first frame."""
    app = RecordingApp(bridge_for(shop, served=False), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        assert app.focused is not None and app.focused.id == "what-list"
        moves = {id(m): m for m in app.messages if isinstance(m, (events.DescendantFocus, events.DescendantBlur))}
    focus = [(type(m).__name__, m.widget.id) for m in moves.values()]
    assert focus == [("DescendantFocus", "what-list")], focus


async def test_the_narrow_layouts_tabs_are_made_when_the_terminal_first_is_narrow(shop):
    """A wide dashboard never shows the tabs that stand for the panes in a narrow terminal: they (ten widgets) are
    made the first time it is narrow, with the pane shown as the active tab."""
    app = RecordingApp(bridge_for(shop, served=False), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        assert not app.screen.query(Tabs)
        await pilot.press("3")
        await pilot.resize_terminal(90, 30)
        await wait_until(pilot, lambda: bool(app.screen.query("#tab-graph")), "the tabs")
        await pilot.pause()
        tabs = app.screen.query_one("#narrow-tabs", Tabs)
        assert tabs.display and tabs.active == "tab-graph"
        assert [str(tab.label) for tab in tabs.query(Tab)] == ["1 what", "2 search", "3 graph", "4 timeline", "5 budget"]
        await pilot.press("4")
        await pilot.pause()
        assert tabs.active == "tab-timeline" and app.screen.query_one("#timeline").display
        await pilot.resize_terminal(160, 45)
        await pilot.pause()
        assert not tabs.display and len(app.screen.query(Tabs)) == 1


@both
async def test_pane_five_selects_once_the_first_panes_are_filled(shop, served):
    """Pane 5's answer is rendered in the dashboard's process (its first render builds the secret scanner, about a
    third of a second of CPU): asked as soon as what you work on was known, it came back before the other panes under
    load and held up their frame. It is asked once they are filled."""
    app = RecordingApp(bridge_for(shop, served=served), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SelectionMade)
    _begins_after_the_first_panes(app, "select")


async def test_an_answer_asked_ahead_is_not_taken_after_a_write(shop):
    """The start-up's answers are asked when the bridge is made: after a write of the dashboard's own, the next
    call asks the server again, and sees the write."""
    bridge = bridge_for(shop)
    try:
        made = bridge.remember(MemoryDraft(text="the cart rounds each line before the sum", kind="decision"))
        timeline = bridge.timeline()
        assert made.memory.id in [m.id for e in timeline.entries for m in e.memories] + [m.id for m in timeline.uncommitted]
        what = bridge.what(bridge.session)
        assert made.memory.id in [m.id for m in what.branch_memories + what.recent_memories]
    finally:
        bridge.stop()


def test_an_attached_dashboard_fills_its_first_panes_without_pane_fives_modules(shop):
    """Pane 5's modules (the context's assembly and items, the purposes' path roles, the clipboard) load with its
    first selection, after the four panes' answers are in. Read as the last of those answers arrives: pane 5's
    selection starts right after it, and a look once the panes were drawn raced its imports (in CI once)."""
    code = (
        "import asyncio, sys\n"
        "from cortex_tui.app.link.remote import Remote\n"
        "from cortex_tui.app.tui.early import EarlyBridge\n"
        "from cortex_tui.app.tui.session import new_session\n"
        f"bridge = EarlyBridge(Remote.attach({str(shop)!r}, None, start=True), new_session())\n"
        "from cortex_tui.app.tui.showcase import FIRST_PAINT, RecordingApp, wait_loaded\n"
        "PANE_FIVE = ('cortex_tui.core.clipboard', 'cortex_tui.core.search.roles', 'cortex_tui.core.tokens')\n"
        "FIRST = {'WhatLoaded', 'SearchFinished', 'GraphLoaded', 'TimelineLoaded'}\n"
        "seen, loaded = set(), []\n"
        "def hook(message):\n"
        "    name = type(message).__name__\n"
        "    if name in FIRST and name not in seen:\n"
        "        seen.add(name)\n"
        "        if seen == FIRST:\n"
        "            loaded.append(sorted(m for m in sys.modules\n"
        "                                 if m.startswith('cortex_tui.core.context.') or m in PANE_FIVE))\n"
        "async def run():\n"
        "    app = RecordingApp(bridge, remember_theme=False)\n"
        "    async with app.run_test(size=(160, 45), message_hook=hook) as pilot:\n"
        "        await wait_loaded(pilot, FIRST_PAINT, timeout=300)\n"
        "        print(loaded[0])\n"
        "        app.exit()\n"
        "asyncio.run(run())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "['cortex_tui.core.context.purpose_names']", out.stdout


def _attached_start(shop, before: str, at_first_panes: str, after: str) -> list[str]:
    """The lines an attached dashboard's start prints in a process of its own, made as `cortex-tui` makes it:
    `before` runs first, `at_first_panes` (an expression) as the last of the four panes' answers arrives, `after`
    (an expression) once they are shown."""
    code = (
        "import asyncio, gc, sys\n"
        f"{before}\n"
        "from cortex_tui.app.link.remote import Remote\n"
        "from cortex_tui.app.tui.early import EarlyBridge\n"
        "from cortex_tui.app.tui.session import new_session\n"
        f"bridge = EarlyBridge(Remote.attach({str(shop)!r}, None, start=True), new_session())\n"
        "from cortex_tui.app.tui.showcase import FIRST_PAINT, RecordingApp, wait_loaded\n"
        "FIRST = {'WhatLoaded', 'SearchFinished', 'GraphLoaded', 'TimelineLoaded'}\n"
        "seen, read = set(), []\n"
        "def hook(message):\n"
        "    name = type(message).__name__\n"
        "    if name in FIRST and name not in seen:\n"
        "        seen.add(name)\n"
        "        if seen == FIRST:\n"
        f"            read.append({at_first_panes})\n"
        "async def run():\n"
        "    app = RecordingApp(bridge, remember_theme=False)\n"
        "    async with app.run_test(size=(160, 45), message_hook=hook) as pilot:\n"
        "        await wait_loaded(pilot, FIRST_PAINT, timeout=300)\n"
        "        print(read[0])\n"
        f"        print({after})\n"
        "        app.exit()\n"
        "asyncio.run(run())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()[-2:]


def test_an_attached_dashboard_fills_its_first_panes_without_modules_they_do_not_need(shop):
    """Each of these cost the attached start CPU before its first results: the secret scanner (read git's commits
    is the server's job), OpenSSL's hashes, Textual's text editor (the memory form's), the narrow layout's tabs, and
    the screens that open on a key."""
    unneeded = ("cortex_tui.core.secrets.secrets", "hashlib", "textual.widgets._text_area", "textual.widgets._tabs",
                "cortex_tui.app.tui.memory_form", "cortex_tui.app.tui.confirm", "cortex_tui.app.tui.help_screen",
                "cortex_tui.app.tui.map_screen")
    # The index pass's 2 s fallback held off: on a loaded machine its progress could come before the first panes.
    before = "from cortex_tui.app.tui import dashboard\ndashboard.INDEX_WAIT_S = 600.0"
    loaded, _ = _attached_start(shop, before, f"sorted(set({unneeded!r}) & set(sys.modules))", "''")
    assert loaded == "[]", loaded


def test_an_attached_dashboard_collects_no_garbage_until_its_first_panes_then_does_again(shop):
    """`cortex-tui` holds the garbage collector off from its start (about an eighth of the CPU to the first results
    went to collections over the objects the start makes) until the first panes are filled; then it runs again, with
    those objects frozen out of its reach."""
    before = ("from cortex_tui.app.tui import collector, dashboard\n"
              "dashboard.COLLECTOR_WAIT_S = 600.0  # its fallback, for a start that fails: never first here\n"
              "collections = []\n"
              "gc.callbacks.append(lambda phase, info: collections.append(info['generation']) if phase == 'start' else None)\n"
              "collector.hold()")
    at_first, after = _attached_start(shop, before, "len(collections)", "(gc.isenabled(), gc.get_freeze_count() > 0)")
    assert at_first == "0", f"{at_first} collections before the first panes"
    assert after == "(True, True)", after
