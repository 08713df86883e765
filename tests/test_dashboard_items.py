"""The keys that act on an item work in every pane that lists it (what, search, graph, timeline, context), the
footer shows the focused pane's own keys, and `z` gives the focused pane the screen. The real dashboard under Pilot
on a real repository, store and index, attached to the resident server as `cortex-tui` runs."""

import subprocess
import threading

import pytest
from cortex_tui.app.tui.confirm import ConfirmScreen
from cortex_tui.app.tui.dashboard import DashboardScreen
from cortex_tui.app.tui.memory_form import MemoryForm
from cortex_tui.app.tui.messages import (
    GraphLoaded,
    IndexFinished,
    MemorySaved,
    SearchFinished,
    SelectionMade,
    WhatLoaded,
)
from cortex_tui.app.tui.showcase import RecordingApp, settle, wait_until
from cortex_tui.core.engine import Engine
from cortex_tui.core.keys import Key, KeyKind
from cortex_tui.core.records import MemoryDraft
from cortex_tui.widgets.budget_pane import BudgetPane
from cortex_tui.widgets.graph_pane import GraphPane
from cortex_tui.widgets.search_pane import SearchPane
from cortex_tui.widgets.timeline_pane import TimelinePane
from cortex_tui.widgets.what_pane import WhatPane
from textual.widgets import Static

from .conftest import bridge_for, commit_file, watching

SIZES = [(160, 45), (80, 24)]


def footer_keys(app) -> set[str]:
    return {b.key for _, b, enabled, _ in app.screen.active_bindings.values() if b.show and enabled}


def highlight_what(pane: WhatPane, kind: KeyKind, text: str = "") -> None:
    listing = pane.query_one("OptionList")
    for option_id, target in pane.targets.items():
        if target.key.kind == kind and text in target.label:
            listing.highlighted = listing.get_option_index(option_id)
            return
    raise AssertionError(f"no {kind} {text!r} in pane 1")


@pytest.mark.parametrize("size", SIZES)
async def test_d_closes_the_open_task_in_pane_1_and_the_footer_follows_the_highlight(shop, size):
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        what = app.screen.query_one(WhatPane)
        await pilot.press("1")
        highlight_what(what, "commit")
        await pilot.pause()
        assert {"g"} <= footer_keys(app) and not {"e", "d"} & footer_keys(app), "a commit cannot be edited"
        highlight_what(what, "memory", "fuel surcharge")
        await pilot.pause()
        assert {"e", "d", "p", "g"} <= footer_keys(app)
        task = what.target().memory
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot, MemorySaved)
        assert Engine(shop).get(task.id).task_state == "done"


@pytest.mark.parametrize("size", SIZES)
async def test_e_edits_a_memory_the_graph_lists_and_g_recentres_from_the_timeline(shop, size):
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        decision = next(m for m in Engine(shop).list_memories() if m.kind == "decision")
        app.screen.load_graph(Key.file("shop/pricing.py"))
        graph = app.screen.query_one(GraphPane)
        await wait_until(pilot, lambda: Key.memory(decision.id) in graph.labels, "the decision next to pricing.py")
        await pilot.press("3")
        tree = graph.query_one("Tree")
        node = next(n for n in _walk(tree.root) if n.data == Key.memory(decision.id))
        tree.move_cursor(node)
        await pilot.pause()
        assert "e" in footer_keys(app)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryForm), "the memory form")
        assert app.screen.editing.id == decision.id
        await pilot.press("escape")
        await pilot.press("4")
        timeline = app.screen.query_one(TimelinePane)
        target = timeline.target()
        assert target.key.kind == "commit"
        app.messages.clear()
        await pilot.press("g")
        await settle(pilot, GraphLoaded)
        assert app.screen.graph_centre == target.key


@pytest.mark.parametrize("size", SIZES)
async def test_p_pins_a_search_hit_to_the_context(shop, size):
    app = RecordingApp(bridge_for(shop), task="cart total", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        await pilot.press("slash", *"prices include tax twice", "enter")
        search = app.screen.query_one(SearchPane)
        await wait_until(pilot, lambda: search.hits and search.hits[0].memory is not None, "the decision as first hit")
        memory = search.hits[0].memory
        app.messages.clear()
        await pilot.press("p")
        await settle(pilot, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        assert Key.memory(memory.id) in app.screen.pins
        assert any(i.memory is not None and i.memory.id == memory.id for i in budget.items)


async def _answered(pilot, app, *keys: str) -> None:
    """Press the keys, then wait for the selection they ask for (and every worker) to be done."""
    app.messages.clear()
    await pilot.press(*keys)
    await settle(pilot, SelectionMade)


@pytest.mark.parametrize("size", [(160, 45), (100, 30)])
async def test_the_cursor_in_pane_5_goes_with_the_item_pinned_unpinned_dropped_or_restored(shop, size):
    """A pin moves its item's row to the top, a drop to the end; the cursor stayed on the row number, so the
    detail line described another item and the next key acted on it. It goes with the item, also where a view
    shown before the selection answers lacks the item (a restore: out of the dropped rows, not yet chosen)."""
    from textual.widgets import DataTable, Static

    engine = Engine(shop)
    engine.remember(MemoryDraft(text="The cart total takes the TAX rate from pricing, never a number of its own.",
                                kind="decision", title="Cart total uses the pricing TAX rate", files=("shop/cart.py",)))
    engine.remember(MemoryDraft(text="Cart totals are summed in cents so that tax on prices never rounds twice.",
                                kind="fact", title="Cart totals are summed in cents", files=("shop/pricing.py",)))
    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart total", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        table = budget.query_one(DataTable)
        detail = budget.query_one("#budget-detail", Static)
        memories = [n for n, item in enumerate(budget.items) if item.memory is not None]
        assert len(memories) >= 2, budget.items
        # The second memory: a pin puts it before the first.
        last = budget.items[memories[-1]]
        await pilot.press("5")
        table.move_cursor(row=memories[-1])
        await pilot.pause()

        def on_it(dropped: bool) -> bool:
            row = table.cursor_row
            return budget.rows[row] == (last, dropped) or (budget.rows[row][0].key == last.key
                                                           and budget.rows[row][1] == dropped)

        def where(key: Key) -> int:
            return [i.key for i in budget.items].index(key)

        await _answered(pilot, app, "p")
        assert where(last.key) < memories[-1], "a pin goes first"
        assert on_it(False), (table.cursor_row, budget.rows)
        assert last.provenance.split(":")[0] in detail.content.plain or (
            last.memory is not None and last.memory.id in detail.content.plain), detail.content.plain
        await _answered(pilot, app, "p")
        assert last.key not in app.screen.pins and where(last.key) == memories[-1]
        assert on_it(False), (table.cursor_row, budget.rows)
        await _answered(pilot, app, "x")
        assert budget.rows[-1][0].key == last.key and on_it(True), (table.cursor_row, budget.rows)
        await _answered(pilot, app, "u")
        assert any(i.key == last.key for i in budget.items) and on_it(False), (table.cursor_row, budget.rows)
        # Restored with x from its dropped row, and pinned from there: the cursor follows it each time.
        await _answered(pilot, app, "x")
        await _answered(pilot, app, "x")
        assert on_it(False), (table.cursor_row, budget.rows)
        await _answered(pilot, app, "x")
        await _answered(pilot, app, "p")
        assert last.key in app.screen.pins and where(last.key) < memories[-1] and on_it(False), budget.rows


async def test_a_dropped_row_says_what_restoring_it_adds_and_u_adds_exactly_that(shop):
    """A dropped row showed the item's cost alone (67) where `u` added its share of the document back (68): a
    token merging at its edge or a heading it is the first to need makes the two differ. The row and the detail
    line say what restoring adds, which is what the total grows by."""
    from textual.widgets import Static

    app = RecordingApp(bridge_for(shop), task="apply tax to prices in the cart total", remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        table = budget.query_one("DataTable")
        await pilot.press("5")
        differ = 0
        for row in range(len(budget.items)):
            table.move_cursor(row=row)
            await pilot.pause()
            item = budget.rows[row][0]
            before = budget.shown_tokens
            await _answered(pilot, app, "x")
            after = budget.shown_tokens
            assert before is not None and after is not None
            dropped_row = len(budget.rows) - 1
            assert budget.rows[dropped_row] == (item, True)
            shown = int(str(table.get_row_at(dropped_row)[1]).replace(",", ""))
            await _answered(pilot, app, "u")
            assert budget.shown_tokens == before, "the same selection as before the drop"
            assert shown == before - after, (item.provenance, item.tokens, shown, before, after)
            await _answered(pilot, app, "x")
            assert f"adds back {shown:,} tokens" in budget.query_one("#budget-detail", Static).content.plain
            await _answered(pilot, app, "x")
            differ += item.tokens != shown
        assert differ, "no item here whose cost alone differs from what restoring it adds: the test shows nothing"


def _long_module() -> str:
    """A module long enough that a selection sends only its regions that match the task."""
    parts = ["from .pricing import TAX\n"]
    parts += [f"\n\ndef shipping_zone_{n}(parcel):\n    weight = parcel.weight * {n}\n    return weight + {n}\n"
              for n in range(120)]
    parts.append("\n\ndef invoice_tax(cart_total):\n    return cart_total * TAX\n")
    return "".join(parts)


@pytest.mark.parametrize("size", [(100, 30), (120, 36), (180, 50)])
async def test_a_pinned_regions_row_shows_its_pin_its_kind_and_its_file(shop, size):
    """A pinned regions row showed `📌regio…`. The kind column holds the pin and the kind whole, and the item column
    is as wide as before (a wider kind column alone cut a path at 120 columns): the file name shows whole too. Where
    the pane is narrow the why column gives way, so the columns never overflow it."""
    from rich.cells import cell_len
    from textual.widgets import DataTable

    commit_file(shop, "shop/invoice.py", _long_module(), "Add invoices and shipping zones")
    app = RecordingApp(bridge_for(shop), task="invoice tax on the cart total", budget=2000, remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        table = budget.query_one(DataTable)
        await wait_until(pilot, lambda: any(i.kind == "reduced" for i in budget.items), "a file sent as regions")
        row = next(n for n, i in enumerate(budget.items) if i.kind == "reduced")
        await pilot.press("5")
        table.move_cursor(row=row)
        await pilot.pause()
        await _answered(pilot, app, "p")
        row = next(n for n, (i, dropped) in enumerate(budget.rows) if i.kind == "reduced" and not dropped)
        kind, _, label, _ = table.get_row_at(row)
        assert kind.plain == "📌regions" and cell_len(kind.plain) <= table.columns["kind"].width, kind.plain
        assert "invoice.py" in label.plain, label.plain
        # The columns fit the pane: at 120 columns they overflowed it by 3 cells, and a horizontal scrollbar took one
        # of the table's few rows.
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width, (table.virtual_size,
                                                                                  table.scrollable_content_region)


@pytest.mark.parametrize("size", [(100, 30), (120, 36)])
async def test_a_named_and_changed_file_says_why_whole(shop, size):
    """The why column said `named 1.00, changed 1.…` (a new user's trial, at 100 columns): a signal that is 1 or 0
    is its word alone, so the two strongest reasons fit."""
    # The implicit task names the files of the working change: both are named and changed.
    (shop / "shop" / "cart.py").write_text("from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n"
                                           "        return round(sum(price_of(i) for i in items), 2)\n")
    (shop / "shop" / "pricing.py").write_text("TAX = 0.25\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n")
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        table = budget.query_one("DataTable")
        await wait_until(pilot, lambda: {"shop/cart.py", "shop/pricing.py"} <= {i.path for i in budget.items},
                         "both changed files in the context")
        await pilot.press("5")  # behind a tab below 110 columns: drawn for its width once shown
        await pilot.pause(0.2)
        whys = {item.path: table.get_row_at(n)[3].plain for n, item in enumerate(budget.items)}
        assert any("named" in why for why in whys.values()), whys
        assert not any(f"{word} 1.00" in why for word in ("named", "changed") for why in whys.values()), whys
        assert not any("…" in why for why in whys.values()), whys


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
async def test_z_gives_the_focused_pane_the_screen_and_back(shop, size):
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("3")
        graph = app.screen.query_one(GraphPane)
        narrow = graph.size.width
        assert "z" in footer_keys(app)
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is graph and graph.size.width >= size[0] - 2 > narrow
        assert graph.query_one("Tree").has_focus
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is None and graph.size.width == narrow


def _walk(node):
    yield node
    for child in node.children:
        yield from _walk(child)


@pytest.mark.parametrize("size", SIZES)
async def test_the_context_pane_starts_on_the_working_change_and_says_so(shop, size):
    (shop / "shop" / "cart.py").write_text("from .pricing import price_of\n\nclass Cart:\n    def total(self, items):\n"
                                           "        return round(sum(price_of(i) for i in items), 2)\n")
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        assert "implicit task" in str(budget.border_title)
        assert "shop/cart.py" in budget.view.selection.task
        assert any(i.path == "shop/cart.py" for i in budget.items)
        await pilot.press("slash", *"tax twice", "escape")
        app.messages.clear()
        await pilot.press("t")
        await settle(pilot, SelectionMade)
        assert budget.view.selection.task == "tax twice" and "implicit" not in str(budget.border_title)
        await pilot.press("slash", "ctrl+u", "escape")
        app.messages.clear()
        await pilot.press("t")
        await settle(pilot, SelectionMade)
        assert "implicit task" in str(budget.border_title), "t with an empty box goes back to the working change"


class HeldBridge:
    """The real bridge, whose selection waits while the test holds it: what a large repository or an index pass
    costs it, without a race between the busy state's timer and a selection that happens to end first."""

    def __new__(cls, engine_bridge):
        real_select = engine_bridge.select
        engine_bridge.held_open = threading.Event()
        engine_bridge.held_open.set()

        def select(request):
            if not engine_bridge.held_open.wait(timeout=60):
                raise TimeoutError("the test never let the selection go")
            return real_select(request)

        engine_bridge.select = select
        return engine_bridge


@pytest.mark.parametrize("size", SIZES)
async def test_t_shows_the_context_pane_busy_until_the_selection_arrives(shop, size):
    from cortex_tui.app.bridge.local import EngineBridge

    bridge = HeldBridge(EngineBridge(Engine(shop)))
    app = RecordingApp(bridge, remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SelectionMade)
        budget = app.screen.query_one(BudgetPane)
        narrow = size[0] < 110
        # The narrow layout's tabs are made when the terminal is narrow, and only then.
        tabs = list(app.screen.query("#tab-budget"))
        assert len(tabs) == narrow, tabs
        label = (lambda: str(tabs[0].label)) if narrow else (lambda: "5 budget")
        assert not budget.border_subtitle and "⋯" not in label()
        await pilot.press("slash", *"tax twice", "escape")
        await wait_until(pilot, lambda: app.screen.query_one(SearchPane).text == "tax twice", "the typed task")
        app.messages.clear()
        bridge.held_open.clear()
        await pilot.press("t")
        await wait_until(pilot, lambda: "selecting" in str(budget.border_subtitle), "the pane saying it selects")
        if narrow:
            assert label() == "5 budget ⋯", "behind a tab, the tab says the pane is busy"
        bridge.held_open.set()
        await settle(pilot, SelectionMade)
        assert not budget.border_subtitle and label() == "5 budget"
        assert budget.view.selection.task == "tax twice"


async def test_the_top_bar_says_what_an_index_update_did(shop):
    from cortex_tui.app.tui.messages import IndexChanged
    from cortex_tui.core.answers import IndexReport, WatchUpdate

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        top = app.screen.query_one("#topbar")
        # The watcher's catch-up pass after start-up: no event set it off, so no paths and no time.
        app.screen.post_message(IndexChanged(WatchUpdate((), False, IndexReport(changed=2), 0.0)))
        await wait_until(pilot, lambda: "index updated" in str(top.content), "the catch-up in the top bar")
        shown = str(top.content)
        assert "()" not in shown and " 0 ms" not in shown and "2 changed" in shown, shown
        await wait_until(pilot, lambda: watching(app.bridge), "the watcher")
        (shop / "shop" / "cart.py").write_text("class Cart:\n    pass\n")
        await wait_until(pilot, lambda: "shop/cart.py in" in str(top.content), "the edited file in the top bar")


@pytest.mark.parametrize("size", [(80, 24), (100, 40)])
async def test_a_narrow_terminal_never_paints_the_five_pane_layout(shop, size):
    """Every frame the compositor hands over is recorded: the first one at 80x24 used to hold all five panes
    squashed side by side, until the resize handler switched to tabs."""
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    frames: list[set[str]] = []
    display = app._display

    def recording(screen, renderable):
        if isinstance(screen, DashboardScreen) and renderable is not None:
            frames.append({w.id for w in screen._compositor.visible_widgets if w.id in ("what", "search", "graph")})
        return display(screen, renderable)

    app._display = recording
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        assert frames and all(len(shown) <= 1 for shown in frames), frames[:3]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_help_fits_the_terminal_and_j_k_scroll_it(shop, size):
    from cortex_tui.app.tui.help_screen import HelpScreen

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        box = app.screen.query_one("VerticalScroll")
        region = box.region
        assert region.x >= 0 and region.right <= size[0] and region.bottom <= size[1], region
        assert box.max_scroll_y > 0, "the help is longer than the terminal"
        await pilot.press("j", "j", "j")
        await pilot.pause()
        assert box.scroll_y == 3
        await pilot.press("k")
        await pilot.pause()
        assert box.scroll_y == 2


async def test_the_memory_form_edits_from_the_end_and_asks_before_discarding_changes(shop):
    from textual.widgets import TextArea

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(100, 40), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("1")
        highlight_what(app.screen.query_one(WhatPane), "memory", "fuel surcharge")
        await pilot.press("e")
        await pilot.pause()
        form = app.screen
        assert isinstance(form, MemoryForm)
        await pilot.press(*" soon")
        assert form.query_one(TextArea).text == "Add a fuel surcharge to shipping. soon"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen), "a changed form asks before it is thrown away"
        await pilot.press("n")
        await pilot.pause()
        assert app.screen is form and form.query_one(TextArea).text.endswith(" soon")
        await pilot.press("escape", "y")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("n")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen), "an unchanged form closes at once"


@pytest.mark.parametrize("size", [(80, 24), (160, 45)])
async def test_a_burst_of_keys_into_the_search_box_loses_none(shop, size):
    """Esc, /, backspaces over the old query and a new one, as one burst from the terminal, five times over."""
    from textual import events

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SearchFinished)
        box = app.screen.query_one(SearchPane).query_one("Input")
        await pilot.press("slash", *"cookie", "enter")
        for n in range(5):
            typed = f"form data {n}"
            burst = [("escape", None), ("slash", "/"), *[("backspace", None)] * 12,
                     *(("space" if c == " " else c, c) for c in typed)]
            for key, character in burst:
                event = events.Key(key, character)
                event.set_sender(app)
                app.post_message(event)
            await wait_until(pilot, lambda: box.value == typed, f"{typed!r} in the box (it holds {box.value!r})",
                             timeout=10)
            await settle(pilot, SearchFinished)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_a_narrow_terminal_shows_help_in_the_footer_and_says_where_t_put_the_task(shop, size):
    """At 100 columns the footer's right end, `? Help`, was cut off; `t` behind a tab changed nothing one could see."""
    from textual.widgets._footer import FooterKey

    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        for pane in ("1", "5"):
            await pilot.press(pane)
            await pilot.pause()
            keys = {k.description: k.region for k in app.screen.query(FooterKey)}
            assert "Help" in keys and keys["Help"].right <= size[0], (pane, keys)
        await pilot.press("1", "slash", *"tax twice", "escape", "t")
        await wait_until(pilot, lambda: any("context task: tax twice" in n for n in app.notices()),
                         "where the task went")


async def test_v_confirms_a_memory_whose_code_changed_and_pane_1_says_so(shop):
    (shop / "shop/pricing.py").write_text("TAX = 0.25\n\ndef price_of(sku):\n    return 10 * (1 + TAX)\n", encoding="utf-8")
    decision = next(m for m in Engine(shop).list_memories() if m.kind == "decision")
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        what = app.screen.query_one(WhatPane)
        await pilot.press("1")
        highlight_what(what, "memory", "Prices include tax")
        await pilot.pause()
        listing = what.query_one("OptionList")
        row = listing.get_option_at_index(listing.highlighted).prompt
        assert "code changed since" in str(row)
        assert "v" in footer_keys(app)
        await pilot.press("v")
        await settle(pilot, MemorySaved)
        assert Engine(shop).get(decision.id).code_change is None


async def test_a_paraphrase_from_the_form_asks_new_version_or_both(shop):
    """The memory form stored a paraphrase of an active memory beside it without a word (the CLI and MCP ask)."""
    from textual.widgets import TextArea

    Engine(shop).remember(MemoryDraft(text="Use tabs for indentation in Go files", kind="decision"))
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        for text, answer in (("Go files are indented with tabs", "y"), ("Go files are indented with tabs only", "n")):
            app.messages.clear()
            await pilot.press("n")
            await wait_until(pilot, lambda: isinstance(app.screen, MemoryForm), "the memory form")
            app.screen.query_one(TextArea).text = text
            await pilot.press("ctrl+s")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
            assert "new version" in app.screen.question
            assert app.screen.subject in {m.title for m in Engine(shop).list_memories()}, "the active memory it matches"
            await pilot.press(answer)
            await settle(pilot, MemorySaved)
        go = [m for m in Engine(shop).list_memories() if "Go files" in m.text or "Go files" in m.title]
        texts = sorted(m.text for m in go)
        assert texts == ["Go files are indented with tabs", "Go files are indented with tabs only"], texts
        assert next(m for m in go if m.text == "Go files are indented with tabs").version == 2


async def test_the_new_memory_form_offers_only_changed_files_the_index_holds(shop):
    """The form pre-filled every file of the working change: a binary, a file that is not UTF-8 (both skipped by the
    index, so nothing can anchor to them), a deleted one. It offers the working change's indexed files only, the
    first few; the watcher indexes a new text file before the form opens."""
    from textual.widgets import Input

    (shop / "shop/pricing.py").write_text((shop / "shop/pricing.py").read_text() + "\n# rounding: half up\n")
    (shop / "shop/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (shop / "shop/latin1.txt").write_bytes("prix en caf\xe9\n".encode("latin-1"))
    (shop / "README.md").unlink()
    Engine(shop).code_index(create=True).update(embed=False)
    app = RecordingApp(bridge_for(shop, served=True), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, MemoryForm), "the new memory form")
        files = app.screen.query_one("#form-files", Input).value
        assert files == "shop/pricing.py", files


def screen_text(app) -> list[str]:
    """The screen as it is painted, row by row."""
    return [strip.text for strip in app.screen._compositor.render_strips()]


@pytest.mark.parametrize("size", [(100, 30), (120, 36), (160, 45), (180, 50)])
async def test_nothing_is_cut_that_the_layout_could_show(shop, size):
    """New users saw, at 100 columns, the footer cut `c Copy` to `c C`; at 160x45 pane 5's last line cut; at 120x36
    pane 1 cut memory titles to about 10 characters; the search preview's score formula take four rows. Each is
    checked where it shows, at several sizes, through the resident server."""
    from textual.widgets import Static
    from textual.widgets._footer import FooterKey

    title = "Rounding of prices happens once, at checkout, half up"
    Engine(shop).remember(MemoryDraft(text="Prices are rounded half up once, when the cart checks out.",
                                      kind="decision", title=title, files=("shop/pricing.py",)))
    app = RecordingApp(bridge_for(shop, served=True), task="tax and rounding of cart prices", remember_theme=False)
    async with app.run_test(size=size, message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished, SelectionMade)
        for pane in ("1", "5"):
            await pilot.press(pane)
            await pilot.pause()
            keys = list(app.screen.query(FooterKey))
            palette = [k for k in keys if k.has_class("-command-palette")]
            right = palette[0].region.x if palette else size[0]
            for key in keys:
                if key not in palette:
                    assert key.region.right <= right, (pane, key.description, key.region, right)
                    assert key.region.width >= len(key.key_display) + len(key.description) + 2, key.description
        # Pane 1 shows the whole title (on a second line where the row is narrow).
        await pilot.press("1")
        await pilot.pause()
        what = app.screen.query_one(WhatPane).region
        rows = [row[what.x:what.right] for row in screen_text(app)[what.y:what.bottom]]
        shown = " ".join(" ".join(row.strip("│").replace("▎", " ").replace("▊", " ").split()) for row in rows)
        assert title in shown, rows
        # Pane 5's notes: every row of them is on screen.
        budget = app.screen.query_one(BudgetPane)
        left = budget.query_one("#budget-left", Static)
        if budget.region.height:
            need = sum(max(1, -(-len(line) // max(left.content_size.width, 1)))
                       for line in left.content.plain.split("\n") if line)
            assert left.content_size.height >= need, (left.content.plain, left.content_size)
        # The search preview's location and score take one row.
        await pilot.press("slash", *"rounding", "enter")
        search = app.screen.query_one(SearchPane)
        await wait_until(pilot, lambda: search.hits, "search hits")
        await pilot.press("2")
        await pilot.pause(0.3)
        preview = search.query_one("#search-preview", Static)
        head = str(preview.content.renderables[0]).split("\n") if hasattr(preview.content, "renderables") else []
        assert head and len(head[1]) <= max(preview.content_size.width, 1), head


async def test_pane_1_shows_a_forget_and_its_undo_with_the_first_answer_asked_after_them(shop):
    """After `d y` the forgotten memory stayed in pane 1 about 3 s, and after `u` the restored one came back after
    4-8 s: each write refreshes the panes, and the server's event for the same write refreshes them again while the
    first answer is on its way; that answer (asked after the write, so it shows it) was dropped as superseded, and
    the pane waited for the last one. Here the second refresh is started as the first answer comes back, and
    every later answer waits until pane 1 has been looked at: it must show the change from the first."""
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded, IndexFinished)
        bridge, screen = app.screen.bridge, app.screen
        what = screen.query_one(WhatPane)
        real_what = bridge.what
        held = threading.Event()
        asked: list[str] = []
        listed_after = {"write": False}  # whether the decision is in pane 1 once the write is in: gone, then back

        def what_then_another_refresh(session=None):
            if asked:
                asked.append("later")
                held.wait(120)
                return real_what(session)
            answer = real_what(session)
            memories = answer.branch_memories + answer.file_memories + answer.open_tasks + answer.recent_memories
            if any(m.id == decision.id for m in memories) != listed_after["write"]:
                # A refresh asked before the write took effect (a late event of the step before, on a loaded
                # machine): not the one this is about.
                return answer
            asked.append("first")
            # As the watcher's event does: a newer refresh replaces this one's worker before its answer is in.
            app.call_from_thread(screen._memories_changed)
            return answer

        def listed(memory_id: str) -> bool:
            return any(t.key == Key.memory(memory_id) for t in what.targets.values())

        await pilot.press("1")
        highlight_what(what, "memory", "Prices include tax")
        await pilot.pause()
        decision = what.target().memory
        await pilot.press("d")
        assert isinstance(app.screen, ConfirmScreen)
        bridge.what = what_then_another_refresh
        await pilot.press("y")
        await wait_until(pilot, lambda: not listed(decision.id), "the forgotten decision gone from pane 1", timeout=60)
        assert asked[0] == "first" and Engine(shop).get(decision.id).status == "deleted"
        held.set()
        await settle(pilot, MemorySaved)
        await wait_until(pilot, lambda: not any(w.is_running for w in app.workers), "idle workers")
        held.clear()
        asked.clear()
        listed_after["write"] = True
        app.messages.clear()
        await pilot.press("u")
        await wait_until(pilot, lambda: listed(decision.id), "the decision back in pane 1", timeout=60)
        assert asked[0] == "first"
        held.set()
        bridge.what = real_what


async def test_a_long_title_in_pane_1_goes_on_at_a_space_not_mid_word(shop):
    """At 120 columns pane 1's rows give a title 14 cells, then further lines: a title whose first space came early
    was cut mid-word (`a supercalifra` / `gilistic ...`), since a break was looked for only in the row's second
    half."""
    title = "a supercalifragilistic rounding rule"
    engine = Engine(shop)
    memory = engine.remember(MemoryDraft(text="Invoices round half-even at the ledger.", kind="decision", title=title))
    engine.close()
    app = RecordingApp(bridge_for(shop), remember_theme=False)
    async with app.run_test(size=(120, 36), message_hook=app.record) as pilot:
        await settle(pilot, WhatLoaded)
        what = app.screen.query_one(WhatPane)
        listing = what.query_one("OptionList")
        option_id = next(i for i, t in what.targets.items() if t.key == Key.memory(memory.memory.id))
        lines = listing.get_option(option_id).prompt.plain.split("\n")
        assert len(lines) > 1, lines  # the narrow row this is about
        words = " ".join(lines).split()
        assert all(word in words for word in title.split()), lines


async def test_the_graph_says_in_one_line_that_its_centre_has_no_neighbours_and_what_would_make_some(tmp_path):
    """A repository's first memory, before its first commit: the graph pane showed the centre and nothing under it,
    as if it were still loading."""
    repo = tmp_path / "fresh"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    engine = Engine(repo)
    lonely = engine.remember(MemoryDraft(text="Quotes expire after thirty days.", kind="decision")).memory
    engine.close()
    app = RecordingApp(bridge_for(repo), remember_theme=False)
    async with app.run_test(size=(160, 45), message_hook=app.record) as pilot:
        await settle(pilot, GraphLoaded)
        graph = app.screen.query_one(GraphPane)
        tree = graph.query_one("Tree")
        assert tree.root.data == Key.memory(lonely.id)
        assert not tree.root.children
        hint = graph.query_one("#graph-hint", Static)
        said = "No neighbours yet: give it files or symbols (e), or name its id in another memory."
        assert hint.display and hint.content == said
        # Wrapped in the pane, whole: every word of it is on the screen.
        rows = [row[hint.region.x:hint.region.right] for row in screen_text(app)[hint.region.y:hint.region.bottom]]
        assert " ".join(" ".join(rows).split()) == said, rows
        # A centre with neighbours says nothing of the kind.
        engine = Engine(repo)
        engine.remember(MemoryDraft(text=f"Quote rules follow {lonely.id}.", kind="note"))
        engine.close()
        app.messages.clear()
        app.screen.load_graph(Key.memory(lonely.id))
        await settle(pilot, GraphLoaded)
        assert tree.root.children and not hint.display
