"""One age format for every front end (core.ages), in units a newcomer reads without a legend, and the panes use it."""

from datetime import UTC, datetime, timedelta

import pytest
from cortex_tui.core.ages import WIDTH, age

NOW = datetime(2026, 3, 5, 12, tzinfo=UTC)


@pytest.mark.parametrize("ago, shown", [
    (timedelta(seconds=20), "now"), (timedelta(minutes=12), "12 min"), (timedelta(hours=5), "5 h"),
    (timedelta(days=3), "3 d"), (timedelta(days=10), "10 d"), (timedelta(days=20), "2 wk"),
    (timedelta(days=70), "2 mo"), (timedelta(days=203), "6 mo"), (timedelta(days=800), "2 y"),
])
def test_ages_read_in_plain_units(ago, shown):
    assert age(NOW - ago, NOW) == shown and len(shown) <= WIDTH


def test_naive_stamps_are_utc_and_missing_ones_empty():
    assert age(NOW.replace(tzinfo=None) - timedelta(hours=2), NOW) == "2 h"
    assert age(None, NOW) == ""


def test_the_panes_say_ages_and_regions_in_words(monkeypatch):
    import asyncio

    from cortex_tui.core.answers import Timeline, TimelineEntry
    from cortex_tui.core.context.assemble import Assembled
    from cortex_tui.core.context.select import Item, Selection
    from cortex_tui.core.git.gitctx import CommitInfo
    from cortex_tui.widgets.budget_pane import BudgetPane, BudgetView
    from cortex_tui.widgets.timeline_pane import TimelinePane

    from .test_panes import Panes

    monkeypatch.setenv("CORTEX_FIXED_NOW", NOW.isoformat())

    async def paint():
        app = Panes()
        async with app.run_test(size=(200, 60)) as pilot:
            commit = CommitInfo("a" * 40, "me", NOW - timedelta(days=203), "Old work", ("x.py",))
            app.query_one(TimelinePane).show(Timeline("main", [TimelineEntry(commit)]))
            item = Item("x.py", "reduced", "x.py", "x", 20, 0.5, {"named": 1.0}, ranges=((1, 9),))
            selection = Selection("t", 10_000, "cl100k_base", [item], [], [])
            app.query_one(BudgetPane).show(BudgetView(selection, Assembled("x", "markdown", 20, [item], 0, []),
                                                      frozenset(), ()))
            await pilot.pause()
            table = app.query_one(TimelinePane).query_one("DataTable")
            budget = app.query_one(BudgetPane)
            return (str(table.get_row_at(0)[1]), str(budget.query_one("DataTable").get_row_at(0)[0]),
                    str(budget.query_one("#budget-left").content))

    shown_age, kind, notes = asyncio.run(paint())
    assert shown_age == "6 mo"
    assert kind == "regions" and "only the lines of a long file" in notes
