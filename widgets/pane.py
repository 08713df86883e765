"""The frame every dashboard pane shares: a border titled with its number and name, highlighted when focused, and
j/k moving in the pane's list whatever kind of list it is."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widget import Widget

from .keymap import bindings


class Pane(Vertical):
    """A titled, focus-aware container; subclasses set PANE_TITLE, LIST and compose their content."""

    DEFAULT_CSS = """
    Pane { border: round $foreground 25%; padding: 0 0; height: 1fr; background: $surface; }
    Pane:focus-within { border: round $primary; }
    Pane > .pane-empty { color: $text-muted; padding: 1 2; }
    """
    BINDINGS = bindings("pane")
    PANE_TITLE = ""
    LIST = ""
    """Id of the pane's navigable widget (an OptionList, Tree or DataTable): what 1-5 focus and j/k move."""

    def on_mount(self) -> None:
        self.border_title = self.PANE_TITLE

    def navigable(self) -> Widget:
        return self.query_one(f"#{self.LIST}")

    def action_cursor_down(self) -> None:
        self.navigable().action_cursor_down()

    def action_cursor_up(self) -> None:
        self.navigable().action_cursor_up()
