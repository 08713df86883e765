"""The real dashboard driven by Pilot on real repositories with a real index, store and model."""

import os
import stat

from pathlib import Path

import pytest
from textual.worker import Worker, WorkerState

from cortex_tui.app.bridge import EngineBridge
from cortex_tui.app.help_screen import HelpScreen
from cortex_tui.app.memory_form import MemoryForm
from cortex_tui.app.dashboard import DashboardScreen
from cortex_tui.app.showcase import RecordingApp, settle, wait_until
from cortex_tui.app.messages import ContextCopied, IndexChanged, IndexFinished, MemorySaved, SearchFinished, SelectionMade, WhatLoaded
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.budget_pane import BudgetPane
from cortex_tui.widgets.graph_pane import GraphPane
from cortex_tui.widgets.search_pane import SearchPane
from cortex_tui.widgets.timeline_pane import TimelinePane
from cortex_tui.widgets.what_pane import WhatPane

from .conftest import commit_file, git

SIZE = (160, 45)


@pytest.fixture
def shop(repo):
    commit_file(repo, "shop/pricing.py", "TAX = 0.2\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", "Add pricing")
    commit_file(repo, "shop/cart.py", "from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n        return sum(price_of(i) for i in items)\n", "Add cart")
    engine = Engine(repo)
    engine.remember(MemoryDraft(text="Prices include tax; never add it twice.", kind="decision", files=("shop/pricing.py",)))
    engine.remember(MemoryDraft(text="Add a fuel surcharge to shipping.", kind="task"))
    return repo


async def test_all_five_panes_fill_in(shop):
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        screen = app.screen
        what_options = screen.query_one(WhatPane).query_one("OptionList")
        assert what_options.option_count > 3
        assert "Prices include tax" in str([what_options.get_option_at_index(i).prompt for i in range(what_options.option_count)])
        assert len(screen.query_one(TimelinePane).timeline.entries) == 4
        tree = screen.query_one(GraphPane).query_one("Tree")
        assert tree.root.children
        assert screen.query_one(SearchPane).hits, "the implicit search shows what you work on"


async def test_search_select_copy_puts_the_context_on_the_clipboard(shop, tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "clipboard.txt"
    script = bin_dir / "xclip"
    script.write_text(f"#!/bin/sh\n/bin/cat > {record}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished)
        await pilot.press("slash")
        await pilot.press(*"tax twice")
        await settle(pilot, SearchFinished)
        hits = app.screen.query_one(SearchPane).hits
        assert hits and any("tax" in h.text.lower() for h in hits[:3])
        await pilot.press("escape", "t")
        await settle(pilot, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        assert any(i.path == "shop/pricing.py" for i in budget.items)
        await pilot.press("c")
        await settle(pilot, ContextCopied)
        copied = next(m for m in app.messages if isinstance(m, ContextCopied))
        assert copied.result.method == "xclip"
        text = record.read_text()
        assert "## shop/pricing.py:1-4" in text and "def price_of(sku):" in text and copied.assembled.tokens <= 12000


async def test_new_and_edited_memory(shop):
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, MemoryForm)
        await pilot.press(*"Cache prices per request")
        await pilot.press("ctrl+s")
        await settle(pilot, WhatLoaded)
        engine = Engine(shop)
        made = next(m for m in engine.list() if m.text == "Cache prices per request")
        await pilot.press("slash")
        await pilot.press(*"cache prices per request")
        await settle(pilot, SearchFinished)
        pane = app.screen.query_one(SearchPane)
        position = [h.id for h in pane.hits].index(made.id)
        await pilot.press("escape", *["j"] * position)
        assert pane.highlighted_hit().id == made.id
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, MemoryForm)
        form.query_one("TextArea").text = "Cache prices per request, for 60 seconds"
        await pilot.press("ctrl+s")
        for _ in range(100):
            await pilot.pause(0.05)
            if len(engine.history(made.id)) == 2:
                break
        versions = engine.history(made.id)
        assert [v.status for v in versions] == ["superseded", "active"]
        assert versions[-1].text == "Cache prices per request, for 60 seconds"


async def test_branch_switch_updates_the_panes(shop):
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, WhatLoaded)
        assert app.bridge.watcher is not None and app.bridge.watcher.ready.wait(10)
        git(shop, "checkout", "-q", "-b", "feature/discounts")
        commit_file(shop, "shop/discounts.py", "def discount(total):\n    return total * 0.9\n", "Add discounts")
        app.messages.clear()
        await settle(pilot, IndexChanged, WhatLoaded)
        for _ in range(100):
            await pilot.pause(0.05)
            timeline = app.screen.query_one(TimelinePane).timeline
            if timeline and timeline.branch == "feature/discounts" and timeline.entries[0].commit.subject == "Add discounts":
                break
        assert timeline.branch == "feature/discounts" and timeline.entries[0].commit.subject == "Add discounts"
        assert Engine(shop).code_index().files.count_rows("path = 'shop/discounts.py'") == 1


async def test_help_screen_theme_switch_and_narrow_terminal(shop):
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=(90, 30), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        screen = app.screen
        assert screen.has_class("narrow")
        visible = [p.id for p in screen.query("#grid > Pane") if p.display]
        assert visible == ["what"]
        await pilot.press("2")
        await pilot.pause()
        assert [p.id for p in screen.query("#grid > Pane") if p.display] == ["search"]
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        app.theme = "cortex-light"
        await pilot.pause()
        assert app.current_theme.name == "cortex-light" and not app.current_theme.dark


async def test_a_database_held_by_another_process_is_reported_and_the_app_keeps_running(shop, monkeypatch):
    import fcntl

    monkeypatch.setenv("CORTEX_LOCK_TIMEOUT", "0.3")
    engine = Engine(shop)
    engine.init()
    lock_file = Path(engine.store().db.uri) / ".write.lock"
    holder = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    try:
        async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
            await settle(pilot, WhatLoaded)
            await pilot.press("n")
            await pilot.pause()
            await pilot.press(*"Held lock memory")
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: any(isinstance(m, Worker.StateChanged) and m.worker.group == "memory"
                                                and m.state == WorkerState.ERROR for m in app.messages), "the lock error")
            failed = next(m.worker for m in app.messages if isinstance(m, Worker.StateChanged)
                          and m.worker.group == "memory" and m.state == WorkerState.ERROR)
            assert "locked by another cortex process" in str(failed.error)
            await pilot.pause()
            assert any("locked by another cortex process" in n.message for n in app._notifications)
            assert app.is_running and isinstance(app.screen, DashboardScreen)
            fcntl.flock(holder, fcntl.LOCK_UN)
            await pilot.press("n")
            await pilot.pause()
            await pilot.press(*"Free lock memory", "ctrl+s")
            await settle(pilot, MemorySaved)
    finally:
        os.close(holder)
    texts = [m.text for m in Engine(shop).list()]
    assert "Free lock memory" in texts and "Held lock memory" not in texts


async def test_a_repository_deleted_while_open_is_reported_and_the_app_keeps_running(shop):
    import shutil

    app = RecordingApp(EngineBridge(Engine(shop)), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        shutil.rmtree(shop)
        await pilot.press("r")
        await wait_until(pilot, lambda: any("no longer exists" in n.message for n in app._notifications),
                         "the deleted repository reported")
        assert app.is_running and isinstance(app.screen, DashboardScreen)
        await pilot.press("slash", *"tax")
        await pilot.pause()
        assert app.is_running


async def test_without_a_clipboard_tool_the_context_is_sent_by_osc52_and_kept_in_a_file(shop, tmp_path, monkeypatch):
    import shutil

    bin_dir = tmp_path / "only-git"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git"))
    monkeypatch.setenv("PATH", str(bin_dir))
    app = RecordingApp(EngineBridge(Engine(shop)), task="apply tax to prices", remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        await pilot.press("c")
        await settle(pilot, ContextCopied)
        copied = app.seen(ContextCopied)
        assert copied.result.method == "osc52" and app.clipboard == copied.assembled.text
        saved = Path(copied.result.path)
        assert saved.parent == shop / ".cortex" / "clipboard" and saved.read_text() == copied.assembled.text
        await pilot.pause()
        assert any(str(saved) in n.message for n in app._notifications)
