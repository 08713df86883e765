"""The frame every dashboard pane shares: a border titled with its number and name, highlighted when focused."""

from __future__ import annotations

from textual.containers import Vertical


class Pane(Vertical):
    """A titled, focus-aware container; subclasses set PANE_TITLE and compose their content."""

    DEFAULT_CSS = """
    Pane { border: round $foreground 25%; padding: 0 0; height: 1fr; background: $surface; }
    Pane:focus-within { border: round $primary; }
    Pane > .pane-empty { color: $text-muted; padding: 1 2; }
    """
    PANE_TITLE = ""

    def on_mount(self) -> None:
        self.border_title = self.PANE_TITLE
