"""The budget meter (pane 5) is live and true: every change that changes the choice recomputes it, attached to the
repository's resident server as `cortex-tui` runs by default. Each step waits for the next selection and checks
what it holds; before, a memory saved in the dashboard reached pane 5 only after `-` then `+`, and a pinned task
never did."""

from __future__ import annotations

from cortex_tui.app.tui.messages import SelectionMade
from cortex_tui.app.tui.showcase import RecordingApp, settle
from cortex_tui.core.engine import Engine
from cortex_tui.core.keys import Key
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.budget_pane import BudgetPane

from .conftest import bridge_for, commit_file

TASK = "compress large responses with the gzip middleware"
GZIP = '''import gzip


class GZipMiddleware:
    """Compress responses larger than the minimum size when the client accepts gzip."""

    def __init__(self, app, minimum_size=500):
        self.app = app
        self.minimum_size = minimum_size

    def compress(self, body):
        return gzip.compress(body)
'''


def _memories(app) -> set[str]:
    return {i.memory.id for i in app.screen.query_one(BudgetPane).items if i.memory is not None}


async def _after(pilot, app, action) -> None:
    """Do something in the dashboard, then wait for the selection it makes (and every worker) to be done."""
    app.messages.clear()
    action()
    await settle(pilot, SelectionMade)


def _pin(screen, memory_id: str) -> None:
    screen.pins = screen.pins | {Key.memory(memory_id)}
    screen.run_select()


async def test_pane_5_follows_saves_edits_pins_closes_and_r(repo):
    commit_file(repo, "src/gzip_middleware.py", GZIP, "Add the gzip middleware")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    task = engine.remember(MemoryDraft(text="Move the session store to redis", kind="task")).memory
    app = RecordingApp(bridge_for(repo, served=True), task=TASK, remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, SelectionMade)
        assert not _memories(app)
        screen = app.screen

        # Saved in the dashboard (as the form's ctrl+s does): the meter takes it in at once.
        saved = MemoryDraft(text="the gzip middleware compresses only responses larger than minimum_size",
                            kind="decision", files=("src/gzip_middleware.py",))
        await _after(pilot, app, lambda: screen.save_memory(saved, None))
        decision = next(iter(_memories(app)), None)
        assert decision is not None, "a saved decision about the task's code is in pane 5"

        # Edited: the new version replaces it.
        edited = screen.bridge.memory(decision)
        revised = MemoryDraft(text="the gzip middleware compresses responses of 500 bytes or more", kind="decision",
                              files=("src/gzip_middleware.py",))
        await _after(pilot, app, lambda: screen.save_memory(revised, edited))
        texts = [i.text for i in screen.query_one(BudgetPane).items if i.memory is not None]
        assert texts == ["the gzip middleware compresses responses of 500 bytes or more"]

        # A task pinned from pane 1 (search does not find it for this task) goes in.
        await _after(pilot, app, lambda: _pin(screen, task.id))
        assert task.id in _memories(app)

        # Closed: still pinned, so still in, and the next selection says so; forgotten: gone.
        await _after(pilot, app, lambda: screen.change_memory(screen.bridge.memory(task.id), True))
        assert task.id in _memories(app)
        current = next(m for m in _memories(app) if m != task.id)
        await _after(pilot, app, lambda: screen.change_memory(screen.bridge.memory(current), False))
        assert current not in _memories(app)

        # A pinned memory edited: the pin follows it to its new version; forgotten: it is gone, pinned or not.
        note = Engine(repo).remember(MemoryDraft(text="the session store keeps carts for a week", kind="note")).memory
        await _after(pilot, app, lambda: _pin(screen, note.id))
        assert note.id in _memories(app)
        longer = MemoryDraft(text="the session store keeps carts for two weeks", kind="note")
        await _after(pilot, app, lambda: screen.save_memory(longer, screen.bridge.memory(note.id)))
        texts = [i.text for i in screen.query_one(BudgetPane).items if i.memory is not None]
        assert "the session store keeps carts for two weeks" in texts and note.id not in _memories(app)
        newest = next(i.memory.id for i in screen.query_one(BudgetPane).items
                      if i.memory is not None and "two weeks" in i.text)
        await _after(pilot, app, lambda: screen.change_memory(screen.bridge.memory(newest), False))
        assert not any("carts" in i.text for i in screen.query_one(BudgetPane).items)

        # `r` recomputes the meter too: a memory written by another process shows after it.
        Engine(repo).remember(MemoryDraft(text="gzip middleware must skip responses that are already compressed",
                                          kind="decision", files=("src/gzip_middleware.py",)))
        app.messages.clear()
        await pilot.press("r")
        await settle(pilot, SelectionMade)
        assert any("already compressed" in i.text for i in screen.query_one(BudgetPane).items)


def _meter(pane: BudgetPane) -> tuple[int, dict[str, int], list[tuple[str, int]]]:
    """What pane 5 says: its total, the split under it (memories, code, frame) and each row's kind and tokens."""
    import re

    lines = pane.query_one("#budget-bar").content.plain.split("\n")
    total = int(lines[1].split(" / ")[0].replace(",", ""))
    split = re.match(r"memories ([\d,]+) \+ code ([\d,]+) \+ frame ([\d,]+) · \d+ items", lines[2])
    assert split is not None, lines
    parts = dict(zip(("memories", "code", "frame"), (int(n.replace(",", "")) for n in split.groups())))
    table = pane.query_one("#budget-table")
    rows = [(str(table.get_row_at(n)[0]), int(str(table.get_row_at(n)[1]).replace(",", ""))) for n in
            range(table.row_count)]
    return total, parts, rows


async def test_pane_5s_rows_and_frame_add_up_to_its_total_in_every_format(repo):
    """A new user saw a total of 3,306 tokens above a single pinned item of 3,308: the rows were each item counted
    alone, the total the whole document. Now each row is the item's share of the document, and the frame (title,
    headings, wrapper) is said, so rows + frame = total exactly, one item pinned or several, in every format."""
    commit_file(repo, "src/gzip_middleware.py", GZIP * 12, "Add the gzip middleware")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    note = engine.remember(MemoryDraft(text="the gzip middleware compresses only responses larger than minimum_size",
                                       kind="decision", files=("src/gzip_middleware.py",))).memory
    app = RecordingApp(bridge_for(repo, served=True), task=TASK, remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, SelectionMade)
        screen, pane = app.screen, app.screen.query_one(BudgetPane)
        await _after(pilot, app, lambda: _pin(screen, note.id))
        for fmt in ("markdown", "xml", "json"):
            if fmt != "markdown":
                app.messages.clear()
                await pilot.press("f")
                await settle(pilot, SelectionMade)
            assert pane.view.assembled.format == fmt
            total, parts, rows = _meter(pane)
            assert len(rows) >= 2 and total == pane.view.assembled.tokens, rows
            assert sum(t for _, t in rows) + parts["frame"] == total, (fmt, total, parts, rows)
            assert sum(t for kind, t in rows if "memory" in kind) == parts["memories"], (fmt, parts, rows)
            assert parts["memories"] + parts["code"] + parts["frame"] == total


async def test_a_pin_too_large_for_the_budget_is_said_loudly_not_left_out_in_silence(repo):
    """A new user pinned a 900 KB memory: it was only "left out for budget", though the help said a pin always goes
    in. A pin never takes the document past its budget; one that cannot fit is told in a warning and in red on the
    meter while it stays pinned, and a pin that fits goes in."""
    commit_file(repo, "src/gzip_middleware.py", GZIP, "Add the gzip middleware")
    engine = Engine(repo)
    engine.code_index(create=True).update(embed=False)
    huge = engine.remember(MemoryDraft(text="gzip level notes: " + "compress level nine is slow. " * 4000,
                                       kind="note", title="every gzip level measured")).memory
    small = engine.remember(MemoryDraft(text="the release checklist lives in RELEASING.md", kind="note")).memory
    app = RecordingApp(bridge_for(repo, served=True), task=TASK, remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, SelectionMade)
        screen, pane = app.screen, app.screen.query_one(BudgetPane)
        await _after(pilot, app, lambda: _pin(screen, huge.id))
        await _after(pilot, app, lambda: _pin(screen, small.id))
        assert small.id in _memories(app) and huge.id not in _memories(app)
        assert pane.view.assembled.tokens <= pane.view.selection.budget
        bar = pane.query_one("#budget-bar").content.plain
        assert "pinned but too large: note: every gzip level measured needs" in bar, bar
        assert any(f"pinned but too large: memory {huge.id} needs" in n for n in pane.view.selection.notes)
        warnings = [n.message for n in app._notifications if n.severity == "warning"]
        assert sum("pinned but too large for the budget" in w for w in warnings) == 1, warnings
