"""The help screen: every key the dashboard answers to, read from the keymap table."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...widgets.keymap import KEYMAP, bindings, hint

SCOPES = {"app": "Everywhere", "dashboard": "Dashboard", "item": "Highlighted item",
          "search": "Search box", "pane": "Every pane",
          "budget": "Context pane (5)", "confirm": "Questions", "memory": "Memory form", "map": "Repo map",
          "help": "This help"}


def help_table() -> Table:
    """The keys in two columns, so a long description wraps under itself and not under the key."""
    table = Table.grid(padding=(0, 2))
    table.add_column(no_wrap=True, style="bold")
    table.add_column()
    table.add_row(Text("cortex-tui keys", style="bold"), "")
    for scope, title in SCOPES.items():
        table.add_row("", "")
        table.add_row(Text(title, style="bold underline"), "")
        for key in KEYMAP:
            if key.scope == scope:
                table.add_row(Text(key.shown), Text(key.help))
    return table


class ScrollDialog(ModalScreen[None]):
    """A dialog of text in one scrolling box, at most as wide and tall as the terminal; its keys scroll it."""

    def action_scroll(self, lines: int) -> None:
        self.query_one(VerticalScroll).scroll_relative(y=lines, animate=False)


class HelpScreen(ScrollDialog):
    """Lists the keys; j and k scroll, escape, q, ? or f1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: auto; max-height: 100%; border: round $primary;
                                  background: $panel; padding: 0 1; }
    """
    BINDINGS = bindings("help")

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_subtitle = hint("help")
            yield Static(help_table(), id="help-text")
