"""The real dashboard driven by Pilot on real repositories with a real index, store and model: attached to the
repository's resident server as `cortex-tui` runs by default, and with an engine of its own (--no-daemon) where the
two paths can differ (`both`)."""

import json
import os
import re
import stat
from pathlib import Path

import pytest
from cortex_tui.app.bridge.local import EngineBridge
from cortex_tui.app.tui.dashboard import DashboardScreen
from cortex_tui.app.tui.help_screen import HelpScreen
from cortex_tui.app.tui.memory_form import MemoryForm
from cortex_tui.app.tui.messages import (
    ContextCopied,
    IndexChanged,
    IndexFinished,
    MemorySaved,
    SearchFinished,
    SelectionMade,
    WhatLoaded,
)
from cortex_tui.app.tui.showcase import RecordingApp, settle, wait_until
from cortex_tui.core.engine import Engine
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.budget_pane import BudgetPane
from cortex_tui.widgets.graph_pane import GraphPane
from cortex_tui.widgets.search_pane import SearchPane
from cortex_tui.widgets.timeline_pane import TimelinePane
from cortex_tui.widgets.what_pane import WhatPane
from textual import events
from textual.worker import Worker, WorkerState

from .conftest import both, bridge_for, commit_file, git, read_terminal, wait_for, watching

SIZE = (160, 45)


@both
async def test_all_five_panes_fill_in(shop, served):
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
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


@both
async def test_search_select_copy_puts_the_context_on_the_clipboard(shop, tmp_path, monkeypatch, served):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "clipboard.txt"
    script = bin_dir / "xclip"
    script.write_text(f"#!/bin/sh\n/bin/cat > {record}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
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


@both
async def test_new_and_edited_memory(shop, served):
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, MemoryForm)
        await pilot.press(*"Cache prices per request")
        await pilot.press("ctrl+s")
        await settle(pilot, WhatLoaded)
        engine = Engine(shop)
        made = next(m for m in engine.list_memories() if m.text == "Cache prices per request")
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


@both
async def test_branch_switch_updates_the_panes(shop, served):
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, WhatLoaded)
        await wait_until(pilot, lambda: watching(app.bridge), "the watcher")
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
    app = RecordingApp(bridge_for(shop), remember_theme=False)
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


async def test_m_shows_the_repo_map_of_the_working_change_as_text(shop):
    from cortex_tui.app.tui.map_screen import MapLoaded, MapScreen
    from textual.widgets import Static

    commit_file(shop, "shop/labels.py", 'from .pricing import price_of\n\n\ndef label(tag="[/]"):\n'
                "    return price_of(tag)\n", "Add labels")
    (shop / "shop" / "labels.py").write_text((shop / "shop" / "labels.py").read_text() + "\n# [bold]todo\n")
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        dashboard = app.screen
        await pilot.press("m")
        await wait_until(pilot, lambda: app.seen(MapLoaded) is not None, "the repo map")
        await pilot.pause()
        assert isinstance(app.screen, MapScreen)
        title = app.screen.query_one("#map-title", Static).content.plain
        text = app.screen.query_one("#map-text", Static).content.plain
        assert title.startswith("Repo map toward the working change") and "/ 2,000 tokens" in title
        assert 'shop/labels.py:\n  4: def label(tag="[/]"):' in text and "def price_of(sku):" in text
        box = app.screen.query_one("VerticalScroll")
        assert box.border_subtitle.startswith("esc / q / m close"), "the dialog says how to leave it"
        await pilot.press("m")
        await pilot.pause()
        assert app.screen is dashboard


@both
async def test_a_database_held_by_another_process_is_reported_and_the_app_keeps_running(shop, monkeypatch, served):
    import fcntl

    monkeypatch.setenv("CORTEX_LOCK_TIMEOUT", "0.3")
    engine = Engine(shop)
    engine.init()
    lock_file = Path(engine.store().db.uri) / ".write.lock"
    holder = os.open(lock_file, os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
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
            await wait_until(pilot, lambda: any("locked by another cortex process" in n for n in app.notices()),
                             "the lock reported")
            assert app.is_running
            # The form is back with the memory typed, so nothing is lost: saved once the lock is free.
            assert isinstance(app.screen, MemoryForm) and app.screen.query_one("TextArea").text == "Held lock memory"
            fcntl.flock(holder, fcntl.LOCK_UN)
            await pilot.press("ctrl+s")
            await settle(pilot, MemorySaved)
            assert isinstance(app.screen, DashboardScreen)
    finally:
        os.close(holder)
    texts = [m.text for m in Engine(shop).list_memories()]
    assert texts.count("Held lock memory") == 1


@both
async def test_a_memory_refused_for_a_secret_opens_the_form_again_with_everything_typed(shop, served):
    """A secret in the form's text is refused by the engine after the form has closed: the form comes back with
    the kind, title, text, tags and files as typed and the reason (shown as text), and saves once the secret is out."""
    from textual.widgets import Input, Label, Select, TextArea

    # Random-looking: the rule set ignores sequential placeholders such as ghp_1234567890abcdef...
    token = "ghp_" + "Zq8vR2mKx4LpT7wN0aYc3JdF6sHb9GeU5iQo"
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("n")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, MemoryForm)
        form.query_one(Select).value = "decision"
        form.query_one("#form-title", Input).value = "[b]Deploy[/b] keys"
        form.query_one(TextArea).text = f"A long careful note about deploys.\nThe bot uses {token} for [red]pushes"
        form.query_one("#form-tags", Input).value = "deploy, ci"
        form.query_one("#form-files", Input).value = "shop/cart.py"
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryForm) and app.screen is not form, "the form again")
        await pilot.pause()  # its widgets mount after the screen is pushed (a Select takes its value on mount)
        again = app.screen
        assert again.query_one(TextArea).text.endswith(f"uses {token} for [red]pushes")
        assert again.query_one(Select).value == "decision"
        assert again.query_one("#form-title", Input).value == "[b]Deploy[/b] keys"
        assert again.query_one("#form-tags", Input).value == "deploy, ci"
        assert again.query_one("#form-files", Input).value == "shop/cart.py"
        assert "contains a secret (github-pat)" in again.query_one("#form-error", Label).content.plain
        again.query_one(TextArea).text = "A long careful note about deploys.\nThe bot uses the deploy token for [red]pushes"
        await pilot.press("ctrl+s")
        await settle(pilot, MemorySaved)
        assert isinstance(app.screen, DashboardScreen)
    saved = [m for m in Engine(shop).list_memories() if m.title == "[b]Deploy[/b] keys"]
    assert len(saved) == 1 and saved[0].kind == "decision" and list(saved[0].tags) == ["deploy", "ci"]
    assert list(saved[0].files) == ["shop/cart.py"] and token not in saved[0].text


@both
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")  # the reopen's thread raised
async def test_a_repository_deleted_while_open_is_reported_and_the_app_keeps_running(shop, served):
    import shutil

    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        # The open engine may still be writing under .cortex (a compaction, access times): a user's `rm -rf` that
        # meets a file made meanwhile is run again, and so is this one.
        assert wait_for(lambda: shutil.rmtree(shop, ignore_errors=True) or not shop.exists()), "the repository stays"
        await pilot.press("r")
        await wait_until(pilot, lambda: any("no longer exists" in n for n in app.notices()),
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
    app = RecordingApp(bridge_for(shop), task="apply tax to prices", remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        await pilot.press("c")
        await settle(pilot, ContextCopied)
        copied = app.seen(ContextCopied)
        assert copied.result.method == "osc52" and app.clipboard == copied.assembled.text
        saved = Path(copied.result.path)
        assert saved.parent == shop / ".cortex" / "clipboard" and saved.read_text() == copied.assembled.text
        await wait_until(pilot, lambda: any(str(saved) in n for n in app.notices()), "where the context was kept")
        # In JSON (f cycles markdown, xml, json), the file is named for what it holds.
        await pilot.press("f", "f")
        await wait_until(pilot, lambda: app.screen.assembled.format == "json", "the JSON context")
        await pilot.press("c")
        await wait_until(pilot, lambda: app.seen(ContextCopied).assembled.format == "json", "the JSON copy")
        saved = Path(app.seen(ContextCopied).result.path)
        assert saved.suffix == ".json" and json.loads(saved.read_text())


@pytest.mark.parametrize("size", [(100, 40), (180, 50)])
async def test_markup_in_commit_subjects_and_memory_titles_is_shown_as_text(repo, size):
    commit_file(repo, "src/paths.py", "def split(p):\n    return p.split('/')\n", "Handle [/] in paths")
    Engine(repo).remember(MemoryDraft(text="The [bold] tag must be closed.", title="fix [/] closing tag", kind="note"))
    app = RecordingApp(bridge_for(repo), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        await pilot.press("4")
        await pilot.pause()
        timeline = app.screen.query_one(TimelinePane)
        table = timeline.query_one("DataTable")
        assert table.has_focus
        head = timeline.timeline.entries[0].commit.sha
        table.move_cursor(row=table.get_row_index(head))
        await pilot.pause()
        detail = str(timeline.query_one("#timeline-detail").render())
        assert "Handle [/] in paths" in detail and "fix [/] closing tag" in detail
        assert "Handle [/] in paths" in str(table.get_row(head)[2])
        assert app.is_running


BIDI_CONTROLS = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]]


async def test_bidirectional_overrides_in_subjects_and_titles_are_shown_not_obeyed(repo):
    """A right-to-left override in a commit subject or a title reorders the rest of the terminal line, the pane's
    border and the next pane included (and a clipped title loses the character that ends it): it is shown as a
    replacement character, as other control characters are, and the text around it stays readable."""
    commit_file(repo, "src/bidi.py", "x = 1\n", "Fix \u202eretlif\u202c in the \u2067parser\u2069")
    Engine(repo).remember(MemoryDraft(text="about bidi", title="Note \u202eeton\u202c " + "long " * 30, kind="note"))
    app = RecordingApp(bridge_for(repo), remember_theme=False)
    async with app.run_test(size=(140, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        timeline = app.screen.query_one(TimelinePane)
        table = timeline.query_one("DataTable")
        head = timeline.timeline.entries[0].commit.sha
        table.move_cursor(row=table.get_row_index(head))
        await pilot.pause()
        options = app.screen.query_one(WhatPane).query_one("OptionList")
        shown = [str(table.get_row(head)[2]), str(timeline.query_one("#timeline-detail").render())]
        shown += [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any("retlif" in text for text in shown) and any("eton" in text for text in shown)
        for text in shown:
            assert not any(c in text for c in BIDI_CONTROLS), text
        assert "Fix \ufffdretlif\ufffd in the \ufffdparser\ufffd" in shown[1]


def _cursor(pane) -> int | None:
    widget = pane.navigable()
    return widget.cursor_line if hasattr(widget, "cursor_line") else (
        widget.highlighted if hasattr(widget, "highlighted") else widget.cursor_row)


@pytest.mark.parametrize("size", [(140, 45), (100, 40)])
async def test_keys_move_in_every_pane_and_pane_numbers_never_type(shop, size):
    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        screen = app.screen
        search = screen.query_one(SearchPane)
        box = search.query_one("Input")
        await pilot.press("slash", *"tax")
        assert box.has_focus and box.value == "tax"
        await pilot.press("enter")
        assert search.navigable().has_focus and box.value == "tax"
        await settle(pilot, SearchFinished)
        await wait_until(pilot, lambda: len(search.hits) >= 2, "two hits")
        await pilot.press("j")
        assert search.highlighted_hit() is search.hits[1] and box.value == "tax"
        await pilot.press("2", "3", "4", "5", "1")
        assert box.value == "tax" and screen.query_one(WhatPane).navigable().has_focus
        await pilot.press("slash", "escape")
        assert search.navigable().has_focus and box.value == "tax"
        for number, pane_type in enumerate([WhatPane, SearchPane, GraphPane, TimelinePane, BudgetPane], 1):
            await pilot.press(str(number))
            pane = screen.query_one(pane_type)
            assert pane.navigable().has_focus, pane_type.__name__
            before = _cursor(pane)
            await pilot.press("j")
            moved = _cursor(pane)
            assert moved != before, f"j did not move in {pane_type.__name__}"
            await pilot.press("k")
            assert _cursor(pane) == before, f"k did not move back in {pane_type.__name__}"


async def test_footer_names_one_quit(shop):
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        shown = [b for _, b, enabled, _ in app.screen.active_bindings.values() if b.show]
        assert [b.description for b in shown].count("Quit") == 1
        assert {b.id for b in shown if b.description == "Quit"} == {"dash.quit"}


@pytest.mark.parametrize("size", [(180, 50), (100, 40)])
async def test_x_drops_the_highlighted_row_and_u_or_x_brings_it_back(shop, size):
    commit_file(shop, "shop/tax.py", "from .pricing import TAX\n\ndef with_tax(price):\n    return price * (1 + TAX)\n", "Add tax helper")
    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart total", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        await wait_until(pilot, lambda: len(budget.items) >= 3, "three context items")
        third = budget.items[2]
        await pilot.press("5", "j", "j", "x")
        await wait_until(pilot, lambda: all(i.key != third.key for i in budget.items), "the third item dropped")
        assert [(i.key, dropped) for i, dropped in budget.rows if dropped] == [(third.key, True)]
        table = budget.query_one("DataTable")
        assert str(table.get_row_at(len(budget.items))[0]) == "dropped"
        await pilot.press("u")
        await wait_until(pilot, lambda: any(i.key == third.key for i in budget.items), "the item back after u")
        assert not any(dropped for _, dropped in budget.rows)
        # A pinned item dropped and brought back with u comes back pinned.
        await pilot.press("p")
        await wait_until(pilot, lambda: third.key in app.screen.pins, "the item pinned")
        await pilot.press("x")
        await wait_until(pilot, lambda: all(i.key != third.key for i in budget.items), "the pinned item dropped")
        await pilot.press("u")
        await wait_until(pilot, lambda: any(i.key == third.key for i in budget.items), "the pinned item back after u")
        assert third.key in app.screen.pins
        first = budget.items[0]
        table.move_cursor(row=0)
        await pilot.press("x")
        await wait_until(pilot, lambda: budget.rows and budget.rows[-1] == (first, True), "the first item dropped")
        table.move_cursor(row=len(budget.rows) - 1)
        await pilot.press("x")
        await wait_until(pilot, lambda: any(i.key == first.key for i in budget.items), "the item restored with x")


@both
async def test_d_asks_first_and_u_brings_a_forgotten_memory_back(shop, served):
    from cortex_tui.app.tui.confirm import ConfirmScreen

    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, WhatLoaded)
        await pilot.press("slash", *"prices include tax twice", "enter")
        pane = app.screen.query_one(SearchPane)
        await wait_until(pilot, lambda: pane.hits and pane.hits[0].memory is not None, "the decision as first hit")
        target = pane.hits[0].memory
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert isinstance(app.screen, DashboardScreen)
        await pilot.pause(0.2)
        assert Engine(shop).get(target.id).status == "active"
        app.messages.clear()
        await pilot.press("d", "y")
        await settle(pilot, MemorySaved)
        assert Engine(shop).get(target.id).status == "deleted"
        await wait_until(pilot, lambda: any("u brings it back" in n for n in app.notices()), "how to bring it back")
        app.messages.clear()
        await pilot.press("u")
        await settle(pilot, MemorySaved)
        # Back under the same id, as it was: whatever held the id (a pin, a link, an agent's note) still finds it.
        engine = Engine(shop)
        versions = engine.history(target.id)
        assert [(v.id, v.status, v.version) for v in versions] == [(target.id, "active", target.version)]
        assert versions[-1].text == target.text and versions[-1].kind == target.kind
        assert any(f"({target.id}, as it was)" in n for n in app.notices()), app.notices()


@both
@pytest.mark.parametrize("typed", ["kind:decision tax", "kind:decision tax ", "tax "])
async def test_inline_filters_and_trailing_spaces_show_their_results(shop, typed, served):
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SearchFinished)
        pane = app.screen.query_one(SearchPane)
        await pilot.press("slash", *typed)
        await wait_until(pilot, lambda: pane.hits and any("tax" in h.text.lower() for h in pane.hits), "the hits")
        await settle(pilot)
        if typed.startswith("kind:"):
            assert {h.kind for h in pane.hits} == {"decision"}
        assert pane.query_one("OptionList").option_count == len(pane.hits) > 0


class RecordingBridge(EngineBridge):
    """The real bridge, noting each search that reached the engine."""

    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.searched: list[str] = []

    def search(self, request):
        self.searched.append(request.query)
        return super().search(request)


async def test_typing_fast_runs_only_the_last_query(shop, monkeypatch):
    # A long debounce, so a loaded machine pausing between two keys cannot let an intermediate query through.
    monkeypatch.setattr(DashboardScreen, "SEARCH_DEBOUNCE_S", 1.0)
    bridge = RecordingBridge(Engine(shop))
    app = RecordingApp(bridge, remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SearchFinished)
        bridge.searched.clear()
        # One burst, as a terminal delivers fast typing: Pilot's press waits for each key, and on a loaded machine
        # those waits could pass the debounce between two keys.
        for key, character in [("slash", "/"), *(("space" if c == " " else c, c) for c in "tax twice")]:
            event = events.Key(key, character)
            event.set_sender(app)
            app.post_message(event)
        pane = app.screen.query_one(SearchPane)
        await wait_until(pilot, lambda: bridge.searched and not any(w.is_running for w in app.workers), "the search")
        await settle(pilot)
        assert bridge.searched == ["tax twice"]
        assert any("twice" in h.text for h in pane.hits)
        finished = [m.request for m in app.messages if isinstance(m, SearchFinished)]
        assert finished[-1] == "tax twice" and "tax" not in finished


async def test_the_first_search_is_asked_at_once_only_typing_waits_out_the_debounce(shop, monkeypatch):
    # A debounce longer than the wait below: a start-up search that waited it out would never arrive in time.
    monkeypatch.setattr(DashboardScreen, "SEARCH_DEBOUNCE_S", 600.0)
    bridge = RecordingBridge(Engine(shop))
    app = RecordingApp(bridge, remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, SearchFinished)
        assert set(bridge.searched) == {""} and "search" in app.screen.loaded
        asked = len(bridge.searched)
        await pilot.press("slash", "t", "a", "x")
        await pilot.pause()
        assert len(bridge.searched) == asked, "a typed query waits for the next key"
        app.exit()


async def test_the_meter_counts_exactly_what_c_copies_in_every_format(shop, tmp_path, monkeypatch):
    from cortex_tui.core.tokens import count_tokens

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "clipboard.txt"
    script = bin_dir / "xclip"
    script.write_text(f"#!/bin/sh\n/bin/cat > {record}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart", remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        seen = {}
        for fmt in ("markdown", "xml", "json"):
            if fmt != "markdown":
                await pilot.press("f")
                await wait_until(pilot, lambda: budget.view.assembled.format == fmt, f"the {fmt} meter")
            bar = budget.query_one("#budget-bar").content.plain
            shown = int(bar.split("\n")[1].split(" / ")[0].replace(",", ""))
            split = re.fullmatch(r"memories ([\d,]+) \+ code ([\d,]+) \+ frame ([\d,]+) · \d+ items", bar.split("\n")[2])
            assert sum(int(n.replace(",", "")) for n in split.groups()) == shown, bar  # the split of that total
            app.messages.clear()
            await pilot.press("c")
            await settle(pilot, ContextCopied)
            payload = record.read_text()
            assert shown == count_tokens(payload, budget.view.selection.encoding), fmt
            await wait_until(pilot, lambda: any("tokens" in n for n in app.notices()), "the copy's notice")
            toast = [n for n in app.notices() if "tokens" in n][-1]
            assert f"{shown:,} tokens" in toast or f"{shown} tokens" in toast, toast
            seen[fmt] = shown
        assert len(set(seen.values())) == 3, "the formats differ in size, and the meter says so"


async def test_the_meter_bar_fills_the_pane_at_every_width(shop):
    """Behind a tab at 100 columns the pane is laid out only when shown, after the selection is drawn; and on a
    wide screen the bar is as wide as its pane, not a fixed maximum."""
    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart", remember_theme=False)
    async with app.run_test(size=(100, 40), message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        bar = budget.query_one("#budget-bar")
        for width in (100, 240, 80):
            await pilot.resize_terminal(width, 40)
            await pilot.press("5")
            await pilot.pause(0.1)
            cells = bar.content.plain.split("\n")[0]
            assert set(cells) <= {"█", "░"} and len(cells) == bar.content_size.width > 40, (width, len(cells))


async def test_a_megabyte_memory_is_shown_as_a_prefix_and_its_size(shop):
    text = "Nearlimit tariff notes. " + "lorem ipsum dolor sit amet " * 36_000
    Engine(shop).remember(MemoryDraft(text=text, title="nearlimit", kind="note"))
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, WhatLoaded)
        pane = app.screen.query_one(SearchPane)
        await pilot.press("slash", *"nearlimit tariff", "enter")
        await wait_until(pilot, lambda: any(h.title == "nearlimit" for h in pane.hits), "the large memory")
        position = next(i for i, h in enumerate(pane.hits) if h.title == "nearlimit")
        await pilot.press(*["j"] * position)
        await pilot.pause()
        body = pane.query_one("#search-preview").content.renderables[1]
        assert len(body.plain) < 25_000 and f"{len(text.encode()):,} bytes" in body.plain
        await pilot.press("q")
    assert not app.is_running


async def _code_preview(shop, name: str, path: str):
    """Search a name in the dashboard and highlight the first hit in `path`: the hit and its preview's head and
    body."""
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished)
        pane = app.screen.query_one(SearchPane)
        await pilot.press("slash", *name, "enter")
        # The chunk that defines the name, wherever it ranks: these tests are about its preview (the hits of an
        # earlier search, or a chunk beside it, can come first while the list settles: CI, once).
        await wait_until(pilot, lambda: any(h.path == path and f"def {name}" in h.text for h in pane.hits),
                         f"the chunk of {path} defining {name}")
        position = next(i for i, h in enumerate(pane.hits) if h.path == path and f"def {name}" in h.text)
        await pilot.press(*["j"] * position)
        await pilot.pause()
        head, body = pane.query_one("#search-preview").content.renderables
        hit = pane.hits[position]
        await pilot.press("q")
    assert not app.is_running
    return hit, head, body


async def test_a_code_preview_starts_at_the_code_with_its_line_numbers(shop):
    """A chunk keeps the blank lines between definitions before its own; the preview shows neither those nor
    trailing ones, and numbers the first line it shows as the file does."""
    padding = "".join(f"\n\n\ndef ledger_step_{i}(x):\n" + "    x = x + 1\n" * 30 + "    return x\n" for i in range(4))
    source = "import os\n" + padding + ("\n\n\ndef zephyrine_ledger_total(rows):\n"
                                      + "    rows = sorted(rows)\n" * 30 + "    return sum(rows)\n\n\n")
    commit_file(shop, "ledger.py", source, "Add the ledger")
    defined_at = source.splitlines().index("def zephyrine_ledger_total(rows):") + 1
    hit, _, body = await _code_preview(shop, "zephyrine_ledger_total", "ledger.py")
    assert hit.text.startswith("\n"), "the chunk itself starts with blank lines"
    assert body.code.startswith("def zephyrine_ledger_total(rows):") and body.code.endswith("sum(rows)\n")
    assert body.start_line == defined_at


async def test_a_code_preview_opens_at_the_definition_asked_for_in_a_chunk_of_several(shop):
    """Small definitions share a chunk; searched by the third one's name, the preview opens at it (and says where
    the chunk opens), not at the first, which could leave the one asked for below the pane's edge."""
    source = "".join(f"def ledger_part_{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
    source += "def quillon_ledger_total(rows):\n    return sum(rows)\n"
    commit_file(shop, "parts.py", source, "Add the ledger parts")
    defined_at = source.splitlines().index("def quillon_ledger_total(rows):") + 1
    hit, head, body = await _code_preview(shop, "quillon_ledger_total", "parts.py")
    assert hit.start_line < defined_at, "one chunk holds every part"
    assert body.code.startswith("def quillon_ledger_total(rows):") and body.start_line == defined_at
    assert f"from line {defined_at}" in head.plain


def test_a_missing_path_is_one_line_error_not_the_demo(tmp_path):
    import subprocess
    import sys

    for path, problem in ((tmp_path / "nonexistent", "does not exist"), (Path(__file__), "is not a directory")):
        done = subprocess.run([sys.executable, "-m", "cortex_tui.app.tui.main", str(path)], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)
        assert done.returncode != 0 and done.stdout == ""
        assert done.stderr.strip() == f"cortex-tui: error: {path} {problem}"


def test_an_unknown_theme_or_option_is_one_line_error(repo):
    """`--theme nosuch` started the dashboard in its default theme without a word, and a bad option printed the
    whole usage before its error: each is one line, the theme's naming the themes there are."""
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cortex_tui.app.tui.main", str(repo), *args], capture_output=True,
                              text=True, timeout=60, stdin=subprocess.DEVNULL)

    theme = run("--theme", "nosuch")
    assert theme.returncode == 1 and theme.stdout == "" and theme.stderr.count("\n") == 1
    assert theme.stderr.startswith("cortex-tui: error: no theme 'nosuch'; the themes are cortex-dark, cortex-light, ")
    assert "tokyo-night" in theme.stderr
    assert not (repo / ".cortex").exists()  # refused before anything opened the repository
    for args, message in ((("--nosuch",), "unrecognized arguments: --nosuch"),
                          (("--budget", "x"), "argument --budget: invalid int value: 'x'")):
        done = run(*args)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr == f"cortex-tui: error: {message} (see `cortex-tui --help`)\n"


async def test_the_top_bar_counts_the_files_index_status_counts(shop):
    (shop / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    (shop / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    git(shop, "add", "logo.png", "latin1.txt")
    git(shop, "commit", "-q", "-m", "Add a logo and a latin-1 note")
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished)
        report = app.seen(IndexFinished).report
        status = Engine(shop).code_index().status()
        assert report.listed == status.indexed_files + 2
        top = str(app.screen.query_one("#topbar").content)
        assert f" {status.indexed_files} files" in top and f" {report.listed} files" not in top


STUCK_ENGINE_CALL = '''
import sys, threading
from pathlib import Path
from cortex_tui.app.bridge import local as bridge
from cortex_tui.app.leave import run_installed
from cortex_tui.app.tui import main

def graph_that_never_returns(self, node, session=None):
    # An engine call that does not come back (a pathological memory, a hung disk): the worker stays busy for good.
    Path(sys.argv[2]).write_text("busy")
    threading.Event().wait()

bridge.EngineBridge.graph = graph_that_never_returns
# As the installed `cortex-tui` ends (main.run): without the interpreter's shutdown, which aborts the process when a
# background thread is inside LanceDB meanwhile. The patched engine call is this process's (--no-daemon).
run_installed(lambda: main.main([sys.argv[1], "--no-daemon"]), "cortex-tui")
'''


def test_a_first_run_says_it_made_cortex_and_that_the_server_stays_after_q(repo):
    """`cortex-tui` in a directory without `.cortex/`, in a real terminal: it said nothing of the database it made, and
    the resident server it started stayed after `q` with nothing said. The dashboard now says both, and prints it
    again once the terminal is the shell's; a second start says nothing."""
    import fcntl
    import pty
    import signal
    import struct
    import subprocess
    import sys
    import termios
    import time

    said = (f"first run in {repo}: made .cortex/ there (kept out of git); 2 files listed for the index (binary and secret ones are skipped); a resident server keeps "
            "the engine warm for the CLI, the dashboard and agents, and exits after 10 idle minutes; `cortex serve "
            "--stop` ends it now")

    def text(screen: bytes) -> str:
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.decode(errors="replace"))  # the words, not the styles

    def start_and_quit(until: str, made: bool) -> str:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
        child = subprocess.Popen([sys.executable, "-m", "cortex_tui.app.tui.main", str(repo)], stdin=follower,
                                 stdout=follower, stderr=follower, start_new_session=True,
                                 env={**os.environ, "TERM": "xterm-256color"})
        os.close(follower)
        screen, reader = read_terminal(leader)
        try:
            deadline = time.monotonic() + 120
            while (until not in text(bytes(screen)) or made and not (repo / ".cortex").is_dir()) \
                    and time.monotonic() < deadline and child.poll() is None:
                time.sleep(0.1)
            assert until in text(bytes(screen)), text(bytes(screen[-3000:]))
            time.sleep(2)  # a notice would be up by now: it is asked for before the dashboard's first call
            os.write(leader, b"q")
            assert child.wait(timeout=60) == 0
            reader.join(timeout=10)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait()
            os.close(leader)
        return bytes(screen).decode(errors="replace")

    shown = start_and_quit("First run in ", made=True)  # the dashboard's notice
    after = shown.split("\x1b[?1049l")[-1]  # once the dashboard has given the screen back
    assert text(after.encode()).strip() == f"cortex-tui: {said}"
    shown = start_and_quit("q Quit", made=True)  # the footer: drawn at every width
    assert "irst run" not in text(shown.encode()) and "cortex-tui:" not in shown.split("\x1b[?1049l")[-1]


@pytest.mark.parametrize("key", [b"q", b"\x03"], ids=["q", "ctrl+c"])
def test_q_and_ctrl_c_quit_while_an_engine_call_is_still_running(shop, tmp_path, key):
    """The real `cortex-tui` entry point in a real terminal (a pty): the key must end the process even though a
    worker thread is still inside an engine call."""
    import fcntl
    import pty
    import signal
    import struct
    import subprocess
    import sys
    import termios
    import time

    script, busy = tmp_path / "stuck.py", tmp_path / "busy"
    script.write_text(STUCK_ENGINE_CALL)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 140, 0, 0))
    child = subprocess.Popen([sys.executable, str(script), str(shop), str(busy)], stdin=slave, stdout=slave,
                             stderr=slave, start_new_session=True, env={**os.environ, "TERM": "xterm-256color"})
    os.close(slave)
    screen, _ = read_terminal(master)
    try:
        deadline = time.monotonic() + 120
        while not busy.exists() and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.1)
        assert busy.exists(), bytes(screen[-2000:]).decode(errors="replace")  # the worker is inside the call
        os.write(master, key)
        code = child.wait(timeout=60)
        assert code == 0, bytes(screen[-3000:]).decode(errors="replace")  # what the app printed as it ended
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        os.close(master)


@pytest.mark.parametrize("size", [(180, 50), (240, 60)])
async def test_wide_terminals_show_whole_paths_ranges_why_and_subjects(shop, size):
    commit_file(shop, "shop/payments/card_gateway.py",
                "from shop.pricing import TAX\n\ndef charge_with_tax(amount):\n    return amount * (1 + TAX)\n",
                "Charge cards with tax applied once, not twice")
    app = RecordingApp(bridge_for(shop), task="charge cards with tax applied once", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        table = budget.query_one("DataTable")
        for row, item in enumerate(budget.items):
            kind, tokens, label, why = table.get_row_at(row)
            if item.kind != "memory":
                assert label.plain.startswith(f"{item.path}:{item.ranges[0][0]}-") and "…" not in label.plain
            assert why.plain and "…" not in why.plain
        timeline = app.screen.query_one(TimelinePane)
        rows = timeline.query_one("DataTable")
        subject = rows.get_row_at(0)[2]
        assert subject.plain == "Charge cards with tax applied once, not twice"
        assert "mem ⚑" in [str(c.label) for c in rows.columns.values()]
        for pane in (budget, timeline):
            table = pane.query_one("DataTable")
            used = sum(c.width + 2 * table.cell_padding for c in table.columns.values())
            assert used <= pane.content_size.width


async def test_keys_typed_in_one_burst_after_slash_go_to_the_search_box(shop):
    """A paste or a fast typist: `/` and the words arrive before the loop runs again; none may act as a command."""
    from textual import events

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        screen = app.screen
        for key, character in [("slash", "/"), *((c, c) for c in "need2"), ("slash", "/")]:
            event = events.Key(key, character)
            event.set_sender(app)
            app.post_message(event)  # as the terminal driver delivers them, with no pause between
        await pilot.pause()
        assert screen.query_one(SearchPane).query_one("Input").value == "need2/", "in the box, 2 and / are text"
        assert not isinstance(app.screen, MemoryForm), "the `n`/`e` went to the dashboard as commands"


async def test_keys_typed_in_one_burst_after_n_go_to_the_new_memory_text(shop):
    """`n` then the memory's words before the form has mounted: the words are the memory's text, none lost."""
    from textual import events
    from textual.widgets import TextArea

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        await pilot.press("1")
        for key, character in [("n", "n"), *((c, c) for c in "keep it"), ("exclamation_mark", "!")]:
            key = "space" if character == " " else key
            event = events.Key(key, character)
            event.set_sender(app)
            app.post_message(event)
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, MemoryForm)
        assert app.screen.query_one(TextArea).text == "keep it!"



@both
async def test_the_dashboard_reads_in_a_session_of_its_own(shop, served):
    """An agent session's scratch note stays out of the dashboard's panes (which read in the dashboard's own
    session); the repository's memories about the same words are shown."""
    engine = Engine(shop)
    note = engine.remember(MemoryDraft(text="scratch: the tax on the cart total is added twice in the test",
                                       scope="session", session="agent-7")).memory
    engine.close()
    app = RecordingApp(bridge_for(shop, served), remember_theme=False)
    async with app.run_test(size=SIZE, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        what = next(m.what for m in app.messages if isinstance(m, WhatLoaded))
        shown = {m.id for m in what.branch_memories + what.file_memories + what.open_tasks + what.recent_memories}
        assert shown and note.id not in shown
        await pilot.press("slash")
        await pilot.press(*"tax added twice")
        await settle(pilot, SearchFinished)
        hits = [h.id for h in app.screen.query_one(SearchPane).hits]
        assert hits and note.id not in hits
        assert any("never add it twice" in h.text for h in app.screen.query_one(SearchPane).hits)
