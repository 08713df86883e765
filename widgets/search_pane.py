"""Pane 2: smart search — an input, the hits with their scores, and the highlighted hit's text and breakdown."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import PurePosixPath

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from ..core.answers import SearchHit, SearchResults
from .format import (
    PREVIEW_CHARS,
    age,
    bounded,
    clip,
    from_best_lines,
    shorten_path,
    styled,
    visible,
    without_blank_edges,
)
from .pane import Pane, Target


def normalised(query: str) -> str:
    """What decides whether two inputs ask the same thing: a trailing space does not make a new search."""
    return " ".join(query.split())


class SearchBox(Input):
    """The search box, whose editing keys act in the order they were typed.

    Textual inserts a printable key as the box reads it, but runs a binding (backspace, ctrl+u, the arrows, esc)
    only once the key has bubbled back up to the app, with the focus of that moment. In a burst (esc, /, backspaces,
    a new query) the backspaces ran after the letters typed behind them, and an esc typed before `/` ran after it and
    took the keyboard away from the box: the query ended 'cookie', 'fo' or empty. Here the box's own bindings, and
    esc (back to the results), run as the key is read."""

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            pane = next(a for a in self.ancestors if isinstance(a, SearchPane))
            self.screen.set_focus(pane.navigable())
            return
        own = [b for b in self._bindings.key_to_bindings.get(event.key, ()) if not b.priority]
        if own:
            event.stop()
            event.prevent_default()
            await self.run_action(own[0].action)
            return
        await super()._on_key(event)


class SearchPane(Pane):
    """Typing asks for a search (the screen's exclusive worker runs it); results arrive through `show`, and only
    results for what the box holds now are shown."""

    DEFAULT_CSS = """
    SearchPane Input { margin: 0 0; border: tall $panel; }
    SearchPane #search-status { color: $text-muted; padding: 0 1; height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    SearchPane #search-results { height: 1fr; border: none; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    SearchPane #search-preview { height: 1fr; padding: 0 1; background: $panel; overflow-y: auto; }
    """
    PANE_TITLE = "2 Smart search"
    LIST = "search-results"

    @dataclass
    class QueryChanged(Message):
        """The person typed (or pressed enter: `submitted`); the screen starts a search."""

        pane: SearchPane
        text: str
        submitted: bool = False

        @property
        def control(self) -> SearchPane:
            return self.pane

    @dataclass
    class HitChosen(Message):
        """Enter on a hit: the graph re-centres on it."""

        pane: SearchPane
        hit: SearchHit

        @property
        def control(self) -> SearchPane:
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hits: list[SearchHit] = []
        self._width = 0

    def compose(self) -> ComposeResult:
        # select_on_focus off: `/` must not arm the next key to replace the whole query.
        yield SearchBox(placeholder="search memories and code…  kind:decision file:src/app.py since:7d",
                        id="search-input", select_on_focus=False)
        yield Static("", id="search-status")
        yield OptionList(id="search-results")
        yield Static("", id="search-preview")

    @property
    def text(self) -> str:
        return self.query_one(Input).value

    @on(Input.Changed, "#search-input")
    def _changed(self, event: Input.Changed) -> None:
        self.post_message(self.QueryChanged(self, event.value))

    @on(Input.Submitted, "#search-input")
    def _submitted(self, event: Input.Submitted) -> None:
        self._to_results()
        self.post_message(self.QueryChanged(self, event.value, submitted=True))

    def _to_results(self) -> None:
        """Move the keyboard to the results now (`focus()` would wait until the keys already read are handled)."""
        self.screen.set_focus(self.navigable())

    def show(self, results: SearchResults, request: str) -> None:
        """`request` is the raw text the search was asked for; results for an older text are dropped."""
        if normalised(request) != normalised(self.text):
            return
        self.hits = results.hits
        self._fill()
        fresh = {True: ("index fresh", ""), False: ("index stale", "yellow"), None: ("no code index", "")}[results.index_fresh]
        pending = f", {results.embeddings_pending:,} embeddings pending" if results.embeddings_pending else ""
        label = "implicit: what you work on" if results.implicit else f"{len(results.hits)} hits"
        notes = (" · " + clip("; ".join(results.notes), 300)) if results.notes else ""
        self.query_one("#search-status", Static).update(styled(f"{label} · ", fresh, f"{pending}{notes}"))
        if results.hits:
            self.query_one(OptionList).highlighted = 0
        else:
            self.query_one("#search-preview", Static).update("")

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width and self.hits:
            self._fill()

    def _fill(self) -> None:
        """(Re)build the rows for the pane's width, keeping the highlighted one: a code hit reads as its path and
        lines (shortened in the middle, so two hits in one folder stay apart), then its symbols; a memory as its
        title, kind and age."""
        listing = self.query_one(OptionList)
        row = listing.highlighted
        self._width = self.size.width
        room = max(listing.content_size.width - 9, 10)  # the score column and the scrollbar
        listing.clear_options()
        # Each row fits the room as a whole: what follows the path or title gets what they leave (the list would
        # otherwise cut the row again, after the part's own ellipsis).
        for hit in self.hits:
            if hit.source == "code":
                where = shorten_path(hit.location, room)
                names = ", ".join(hit.symbols[:3]) if hit.symbols else ""
                left = room - cell_len(where) - 2
                shown = f"  {clip(names, left)}" if names and left >= 4 else ""
                line = styled(f"{hit.score.total:5.2f} ", (where, "bold"), (shown, "dim"))
            else:
                when = f" · {age(hit.memory.updated_at)}" if hit.memory else ""
                tail = f"  {hit.kind}{when}"
                flag = "  code changed since" if hit.memory is not None and hit.memory.code_change else ""
                if room - len(tail) - len(flag) < 8:  # a narrow pane: the title alone
                    tail = flag = ""
                title = clip(hit.title, room - len(tail) - len(flag))
                line = styled(f"{hit.score.total:5.2f} ", (title, "bold"), (tail, "dim"), (flag, "yellow") if flag else "")
            listing.add_option(Option(line))
        if row is not None and self.hits:
            listing.highlighted = min(row, len(self.hits) - 1)

    def highlighted_hit(self) -> SearchHit | None:
        index = self.query_one(OptionList).highlighted
        return self.hits[index] if index is not None and index < len(self.hits) else None

    def target(self) -> Target | None:
        hit = self.highlighted_hit()
        if hit is None:
            return None
        if hit.source == "memory":
            return Target(hit.subject, hit.title, hit.memory)
        return Target(hit.subject, hit.path)

    @on(OptionList.OptionHighlighted, "#search-results")
    def _preview(self, event: OptionList.OptionHighlighted) -> None:
        self.targets_changed()
        hit = self.highlighted_hit()
        if hit is None:
            return
        head = Text()
        head.append(f"{visible(clip(hit.title, 300))}\n", style="bold")
        # Where it is and its score's formula on one row (it took four in a narrow pane, above the code that
        # matters): cut to the pane's width; `cortex search --explain` prints it whole.
        width = self.query_one("#search-preview", Static).content_size.width or 300
        head.append(f"{clip(visible(hit.location + '  ·  ' + hit.score.explain()), width)}\n", style="dim")
        if hit.memory is not None and hit.memory.code_change is not None:
            head.append(f"code changed since: {visible(hit.memory.code_change.summary)} (v confirms it still holds)\n",
                        style="yellow")
        if hit.source == "code" and len(hit.text) <= PREVIEW_CHARS:
            # Verbatim, indentation kept, numbered as in the file. Pygments loads here, off the way to the first paint.
            from rich.syntax import Syntax

            theme = "ansi_dark" if self.app.current_theme.dark else "ansi_light"
            code, first_line = without_blank_edges(hit.text, hit.start_line)
            if hit.snippet is not None and hit.snippet.start_line > first_line:
                # One short line: the pane is small, and the code it makes room for is what matters.
                head.append(f"⋮ from line {hit.snippet.start_line}, its best match (chunk from {first_line})\n",
                            style="dim")
                code, first_line = from_best_lines(code, first_line, hit.snippet.start_line)
            body: RenderableType = Syntax(visible(code), lexer_name(hit.path), theme=theme, line_numbers=True, start_line=first_line,
                          background_color="default", word_wrap=True)
        else:
            body = bounded(hit.text)
        self.query_one("#search-preview", Static).update(Group(head, body))

    @on(OptionList.OptionSelected, "#search-results")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        hit = self.highlighted_hit()
        if hit is not None:
            self.post_message(self.HitChosen(self, hit))


@lru_cache(maxsize=512)
def lexer_name(path: str) -> str:
    """The Pygments lexer for a file name, from Pygments' built-in table only. Rich's `Syntax.guess_lexer` imports
    every lexer module and every installed plugin (IPython registers some) to weigh them on the text: half a second
    on the dashboard's first preview, for the same answer on ordinary file names."""
    # Pygments ships no type hints: the ignore stands for its untyped module.
    from pygments.lexers._mapping import LEXERS  # type: ignore[import-untyped]

    name = PurePosixPath(path).name
    for _module, _title, aliases, patterns, _mimetypes in LEXERS.values():
        if aliases and any(_matches(name, pattern) for pattern in patterns):
            return aliases[0]
    return "default"


def _matches(name: str, pattern: str) -> bool:
    """`fnmatch(name, pattern)`, without compiling a regular expression for the patterns that are a plain name or
    suffix (`Makefile`, `*.py`: 900 of Pygments' 930): compiling every one took a tenth of the dashboard's CPU between its first
    results and every pane."""
    if not any(c in pattern for c in GLOB):
        return name == pattern
    if pattern[0] == "*" and not any(c in pattern[1:] for c in GLOB):
        return name.endswith(pattern[1:])
    return fnmatch(name, pattern)


GLOB = "*?["
"""The characters `fnmatch` reads as more than themselves."""
