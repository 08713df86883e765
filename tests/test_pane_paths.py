"""Long paths read apart in every pane: they give way in the middle, so the file name and its line ranges stay
(`src/werk…/sansio/request.py:12-40`), at several terminal sizes. The real panes, fed the engine's dataclasses."""

import io
from pathlib import Path

import pytest
from cortex_tui.core.answers import Neighbour, RankedFile, ScoreBreakdown, SearchHit, SearchResults, WhatToKnow
from cortex_tui.core.context.assemble import Assembled
from cortex_tui.core.context.select import Item, Selection
from cortex_tui.core.git.gitctx import GitContext
from cortex_tui.core.keys import Key
from cortex_tui.widgets.budget_pane import BudgetPane, BudgetView
from cortex_tui.widgets.graph_pane import GraphPane
from cortex_tui.widgets.search_pane import SearchPane
from cortex_tui.widgets.what_pane import WhatPane
from rich.cells import cell_len
from textual.widgets import OptionList

from .test_panes import Panes

DEEP = "src/werkzeug/datastructures/very/deep/package/"
PATHS = [DEEP + "request.py", DEEP + "response.py"]


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
async def test_two_long_paths_stay_apart_with_their_names_and_lines(size):
    score = ScoreBreakdown(ranks={"text": 1}, relevance=1.0, similarity=0.5, boosts={}, total=1.0)
    hits = [SearchHit("code", f"c{n}", "code", path, "x = 1", score, path=path, start_line=12, end_line=40)
            for n, path in enumerate(PATHS)]
    items = [Item(Key.file(path), "file", path, "x", 20, 0.5, {"named": 1.0}, ranges=((12, 40), (90, 120)))
             for path in PATHS]
    git = GitContext(root=Path("/"), is_repo=True, branch="main")
    app = Panes()
    async with app.run_test(size=size) as pilot:
        app.query_one(WhatPane).show(WhatToKnow(git, changed_files=[RankedFile(p, "modified", 1) for p in PATHS]))
        search = app.query_one(SearchPane)
        search.show(SearchResults("", False, (), hits, True, 0, 1.0), "")
        app.query_one(GraphPane).show(Key.file(PATHS[0]), PATHS[0],
                                      [Neighbour(Key.file(PATHS[1]), PATHS[1], 1, "imports", Key.file(PATHS[0]))])
        selection = Selection("t", 10_000, "cl100k_base", items, [], [])
        app.query_one(BudgetPane).show(BudgetView(selection, Assembled("x", "markdown", 40, items, 0, []),
                                                  frozenset(), ()))
        await pilot.pause()
        text = _screen_text(app)
        for name in ("request.py", "response.py"):
            assert text.count(name + ":12-40") >= 2, f"{name}:12-40 in the search hits and the context ({size})"
            assert text.count(name) >= 4, f"{name} in the what, search, graph and context panes ({size}): {text}"


async def test_a_long_memory_title_in_the_graph_ends_in_an_ellipsis():
    """A title wider than the graph pane gives way with `…` inside the pane, not cut by its edge mid-word."""
    title = "the router matches by state machine and " + "keeps every rule's converters in order " * 4 + "END"
    app = Panes()
    async with app.run_test(size=(120, 40)) as pilot:
        app.query_one(GraphPane).show(Key.file(PATHS[0]), PATHS[0],
                                      [Neighbour(Key.memory("m1"), title, 1, "mentions", Key.file(PATHS[0]))])
        await pilot.pause()
        text = _screen_text(app)
        line = next(row for row in text.splitlines() if "the router matches" in row)
        assert "…" in line and "END" not in text, line
        wide = "ルーターは状態機械で URL を照合し、すべての規則の変換器を順に保つ" * 3 + "終"
        app.query_one(GraphPane).show(Key.file(PATHS[0]), PATHS[0],
                                      [Neighbour(Key.memory("m2"), wide, 1, "mentions", Key.file(PATHS[0]))])
        await pilot.pause()
        line = next(row for row in _screen_text(app).splitlines() if "ルーター" in row)
        assert "…" in line and "終" not in line, line


def _screen_text(app) -> str:
    """The screen as plain text, line by line, as the terminal shows it."""
    from rich.console import Console

    console = Console(width=app.size.width, height=app.size.height, record=True, file=io.StringIO())
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_search_row_fits_its_pane_with_one_ellipsis(size):
    """A hit's row is fitted as a whole: the symbols after a path and the kind and age after a title get the room
    the path or title leaves, so the list never cuts the row again (it showed `……` and lost the kind)."""
    score = ScoreBreakdown(ranks={"text": 1}, relevance=1.0, similarity=0.5, boosts={}, total=1.0)
    names = tuple(f"RequestDispatcherWithAVeryLongName{n}.handle_everything" for n in range(3))
    title = "the router matches every request by a state machine that " * 3 + "END"
    hits = [SearchHit("code", "c1", "code", names[0], "x = 1", score, path=PATHS[0], start_line=12, end_line=40,
                      symbols=names),
            SearchHit("memory", "m1", "decision", title, title, score)]
    app = Panes()
    async with app.run_test(size=size) as pilot:
        search = app.query_one(SearchPane)
        search.query_one("Input").value = "q"
        await pilot.pause()
        search.show(SearchResults("q", False, (), hits, True, 0, 1.0), "q")
        await pilot.pause()
        listing = search.query_one(OptionList)
        rows = [listing.get_option_at_index(n).prompt for n in range(listing.option_count)]
        room = listing.content_size.width - 3  # the scrollbar's
        assert all(cell_len(row.plain) <= room for row in rows), [row.plain for row in rows]
        assert ".py:12-40" in rows[0].plain and rows[0].plain.count("…") <= 2, rows[0].plain
        assert "END" not in rows[1].plain and ("decision" in rows[1].plain or size[0] < 100), rows[1].plain


async def test_the_budget_table_keeps_four_rows_beside_a_long_task_and_notes():
    """A short pane (16 rows here, 17 at 120x36 in the dashboard): the task, the bar and the notes under the table
    took all but one or two of its rows."""
    items = [Item(Key.file(path), "file", path, "x", 20, 0.5, {"named": 1.0}, ranges=((12, 40),))
             for path in [f"{DEEP}m{n}.py" for n in range(6)]]
    task = "make the proxy headers middleware accept CIDR ranges from an environment variable " * 3
    notes = [f"note {n}: " + "regions: only the lines of a long file that match the task are shown " * 2 for n in range(3)]
    selection = Selection(task, 12_000, "cl100k_base", items, [], [], notes=notes)
    app = Panes()
    async with app.run_test(size=(120, 36)) as pilot:
        pane = app.query_one(BudgetPane)
        pane.show(BudgetView(selection, Assembled("x", "markdown", 40, items, 0, []), frozenset(), ()))
        await pilot.pause()
        assert pane.query_one("#budget-table").size.height >= 5, pane.query_one("#budget-table").size
