"""The help screen: every key the dashboard answers to."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = [
    ("/", "focus the search box"),
    ("1 … 5", "focus a pane: what, search, graph, timeline, context"),
    ("j / k, ↑ / ↓", "move in a list"),
    ("enter", "open: re-centre the graph on the chosen memory, file, commit or hit"),
    ("esc", "back out (close a dialog, leave the search box)"),
    ("t", "use the search text as the task of the context budget"),
    ("c", "copy the assembled context to the clipboard"),
    ("+ / -", "raise / lower the token budget by 2,000"),
    ("f", "switch the context format: markdown, xml, json"),
    ("p / x", "pin / drop the highlighted context item"),
    ("n", "new memory (files prefilled from the working change)"),
    ("e", "edit the highlighted memory (stores a new version)"),
    ("d", "close the highlighted task, or forget the highlighted memory"),
    ("r", "refresh every pane"),
    ("ctrl+p", "command palette: every action, themes"),
    ("? / f1", "this help"),
    ("q / ctrl+q", "quit"),
]


class HelpScreen(ModalScreen[None]):
    """Lists the keys; any of escape, q or ? closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 76; height: auto; max-height: 90%; border: round $primary; background: $panel; padding: 1 2; }
    """
    BINDINGS = [
        Binding("escape,q,question_mark,f1", "dismiss", "Close", id="help.close", tooltip="Close the help"),
    ]

    def compose(self) -> ComposeResult:
        rows = "\n".join(f"[b]{key:<14}[/b] {what}" for key, what in KEYS)
        with VerticalScroll():
            yield Static(f"[b]cortex-tui keys[/b]\n\n{rows}", id="help-text")
