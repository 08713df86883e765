"""Every pane renders any text a user, a repository or an agent can write: markup look-alikes (`[/]`, `[bold]`,
`[link=x]`), escape sequences, other control characters, megabyte strings. The engine's own dataclasses carry the
text in, the real panes render it in a real Textual app, and the whole screen is painted for each example."""

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from cortex_tui.core.answers import (
    Neighbour,
    RankedFile,
    ScoreBreakdown,
    SearchHit,
    SearchResults,
    Timeline,
    TimelineEntry,
    WhatToKnow,
)
from cortex_tui.core.context.assemble import Assembled
from cortex_tui.core.context.select import Item, Selection
from cortex_tui.core.git.gitctx import CommitInfo, GitContext
from cortex_tui.core.keys import Key
from cortex_tui.core.records import Memory
from cortex_tui.widgets.budget_pane import BudgetPane, BudgetView
from cortex_tui.widgets.graph_pane import GraphPane
from cortex_tui.widgets.search_pane import SearchPane
from cortex_tui.widgets.timeline_pane import TimelinePane
from cortex_tui.widgets.what_pane import WhatPane
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.containers import Grid

HOSTILE = ["[/]", "[bold]", "[/bold]", "[link=x]", "[b]x[/i]", "\x1b[31m", "\x1b]52;c;aGk=\x07", "\x00", "\r",
           "\t", "\n", "\x9b", "[", "]", "\\[", "📌", "é", "x" * 100_000, "[/]" * 5_000, "y " * 200_000]
TEXTS = st.lists(st.one_of(st.text(max_size=40), st.sampled_from(HOSTILE)), min_size=1, max_size=4).map("".join)
NOW = datetime(2026, 3, 5, tzinfo=UTC)
SHA = "a" * 40


class Panes(App):
    """The five real panes side by side, fed directly (the dashboard's engine calls are not under test here)."""

    CSS = "Grid { grid-size: 3 2; }"

    def compose(self) -> ComposeResult:
        with Grid():
            yield WhatPane(id="what")
            yield SearchPane(id="search")
            yield GraphPane(id="graph")
            yield TimelinePane(id="timeline")
            yield BudgetPane(id="budget")


def memory(text: str) -> Memory:
    return Memory(id="m1", kind="note", title=text, text=text, tags=[text], files=[text], symbols=[], branch=text,
                  commit=SHA, scope="repo", source_key="", version=1, status="active", task_state="",
                  created_at=NOW, updated_at=NOW, accessed_at=NOW, text_hash="h")


async def paint(text: str) -> dict[str, str]:
    m = memory(text)
    commit = CommitInfo(sha=SHA, author=text, time=NOW, subject=text, files=(text,))
    git = GitContext(root=Path("/"), is_repo=True, branch=text, commits=(commit,))
    score = ScoreBreakdown(ranks={"text": 1}, relevance=1.0, similarity=0.5, boosts={}, total=1.0)
    hits = [SearchHit("memory", "m1", "note", text, text, score, memory=m),
            SearchHit("code", "c1", "chunk", text, text, score, path=text, start_line=1, end_line=3)]
    items = [Item(Key.memory("m1"), "memory", "", text, 10, 1.0, {"lexical": 1.0}, memory=m),
             Item(Key.file(text), "file", text, text, 20, 0.5, {"named": 1.0, "role": 1.0}, ranges=((1, 3),))]
    selection = Selection(text, 100_000, "cl100k_base", items, items[1:], [text], notes=[text])
    app = Panes()
    async with app.run_test(size=(200, 60)) as pilot:
        app.query_one(WhatPane).show(WhatToKnow(git, [m], [m], [m], [m], [commit], [RankedFile(text, "modified", 2)],
                                                [text]))
        search = app.query_one(SearchPane)
        search.query_one("Input").value = text[:200]
        await pilot.pause()
        search.show(SearchResults(text, False, (), hits, False, 3, 1.0, notes=(text,)), text[:200])
        app.query_one(GraphPane).show(Key.memory("m1"), text, [Neighbour(Key.file("x"), text, 1, text, Key.memory("m1"))])
        timeline = app.query_one(TimelinePane)
        timeline.show(Timeline(text, [TimelineEntry(commit, (m,))], (m,), (text, "main")))
        assembled = Assembled(text, "xml", 30, items, 0, [items[1]])
        app.query_one(BudgetPane).show(BudgetView(selection, assembled, frozenset({text}), (items[1],)))
        await pilot.pause()
        timeline.query_one("DataTable").move_cursor(row=1)
        search.query_one("OptionList").highlighted = 1
        await pilot.pause()
        app.export_screenshot()  # paints every pane: a markup error or a bad segment raises here
        return {
            "detail": str(timeline.query_one("#timeline-detail").content),
            "task": str(app.query_one(BudgetPane).query_one("#budget-task").content),
        }


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXTS)
def test_every_pane_renders_any_text_as_text(text):
    shown = asyncio.run(paint(text))
    if len(text) < 60 and text.isprintable():
        assert text in shown["detail"] and text in shown["task"]
    assert "\x1b" not in shown["detail"] + shown["task"]


def test_markup_look_alikes_are_shown_literally():
    shown = asyncio.run(paint("fix [/] closing [bold]tag[/bold]"))
    assert "fix [/] closing [bold]tag[/bold]" in shown["detail"]


def test_the_readme_lists_every_key_of_the_keymap():
    import io

    from cortex_tui.app.tui.help_screen import SCOPES, help_table
    from cortex_tui.widgets.keymap import KEYMAP
    from rich.console import Console

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if line.startswith("| ") and line.count(" | `") == 1]
    expected = [f"| {SCOPES[k.scope]} | `{k.shown}` | {k.help} |" for scope in SCOPES for k in KEYMAP if k.scope == scope]
    assert [r for r in rows if r.split(" | ")[0][2:] in SCOPES.values()] == expected
    console = Console(file=io.StringIO(), width=200, record=True)
    console.print(help_table())
    shown = console.export_text()
    assert all(k.help in shown and k.shown in shown for k in KEYMAP)


async def test_the_graph_opens_its_first_group_when_it_has_many():
    """With more than four groups of neighbours the graph opened every one closed: nothing to read, and Space (which
    opens one) was in no help. A few groups open; of many, the first; the help lists Space."""
    from cortex_tui.widgets.keymap import KEYMAP
    from textual.widgets import Tree

    centre = Key.memory("m1")
    found = [Neighbour(Key.file(f"f{n}.py"), f"f{n}.py", 1, via, centre)
             for n, via in enumerate(["mentions", "made_on", "touches", "links", "imports", "tests"])]
    app = Panes()
    async with app.run_test(size=(200, 60)) as pilot:
        graph = app.query_one(GraphPane)
        graph.show(centre, "a decision", found)
        await pilot.pause()
        groups = graph.query_one(Tree).root.children
        assert [g.is_expanded for g in groups] == [True] + [False] * 5
        graph.show(centre, "a decision", found[:3])
        await pilot.pause()
        assert all(g.is_expanded for g in graph.query_one(Tree).root.children)
    assert any(k.shown == "space" and "graph" in k.help for k in KEYMAP)


def test_a_preview_finds_its_lexer_as_fnmatch_does_without_compiling_every_pattern():
    """The search pane's first code preview looked its lexer up by matching the file name against each of Pygments'
    930 file patterns, compiling a regular expression for every one. A plain name or suffix is compared as text, and
    every pattern still answers as `fnmatch` does."""
    import fnmatch

    from cortex_tui.widgets.search_pane import _matches, lexer_name
    from pygments.lexers._mapping import LEXERS

    patterns = {pattern for *_, found, _mimetypes in LEXERS.values() for pattern in found}
    names = {"app.py", "Makefile", "makefile.am", "CMakeLists.txt", ".bashrc", "bash_profile", "page.1", "a.xpm",
             "Dockerfile", "README", "x[1].py", "*.py", "a?b", "Kconfig.debug", "setup.cfg"}
    names |= {pattern.replace("*", "x").replace("?", "y") for pattern in patterns}
    assert [(n, p) for p in patterns for n in names if _matches(n, p) != fnmatch.fnmatch(n, p)] == []

    fnmatch._compile_pattern.cache_clear()
    assert lexer_name.__wrapped__("src/shop/cart.py") == "python"
    assert fnmatch._compile_pattern.cache_info().currsize < 60, "a regular expression for each pattern"
