"""The frame every dashboard pane shares: a border titled with its number and name, highlighted when focused, and
j/k moving in the pane's list whatever kind of list it is."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.containers import Vertical
from textual.widgets import DataTable, OptionList, Tree

from ..core.keys import Key
from ..core.records import Memory
from .keymap import bindings


@dataclass(frozen=True)
class Target:
    """The item a pane highlights, as the keys that act on it wherever it is listed see it (edit, forget, pin,
    re-centre the graph): its key and, when the pane holds it, the memory itself."""

    key: Key
    """A memory, file, commit or symbol: a node of the graph."""
    label: str
    memory: Memory | None = None

    @property
    def context_key(self) -> Key | None:
        """How the context selection names it in pins and exclusions (a memory or a file); None for what cannot
        be pinned (a commit, a symbol)."""
        return self.key if self.key.kind in ("memory", "file") else None


class Pane(Vertical):
    """A titled, focus-aware container; subclasses set PANE_TITLE, LIST and compose their content."""

    DEFAULT_CSS = """
    Pane { border: round $foreground 25%; padding: 0 0; height: 1fr; background: $surface; }
    Pane:focus-within { border: round $primary; }
    Pane.busy { border-subtitle-color: $warning; }
    Pane > .pane-empty { color: $text-muted; padding: 1 2; }
    """
    BINDINGS = bindings("pane")
    PANE_TITLE = ""
    LIST = ""
    """Id of the pane's navigable widget (an OptionList, Tree or DataTable): what 1-5 focus and j/k move."""
    ALLOW_MAXIMIZE = True
    """`z` maximises the pane, not the list inside it."""

    def on_mount(self) -> None:
        self.border_title = self.PANE_TITLE

    def navigable(self) -> OptionList | Tree[Any] | DataTable[Any]:
        """The pane's list. (`Any`: what its rows or nodes hold is the subclass's; Textual's generics are
        invariant, so no one parameter covers them all.)"""
        found = self.query_one(f"#{self.LIST}")
        if not isinstance(found, (OptionList, Tree, DataTable)):
            raise TypeError(f"#{self.LIST} is a {type(found).__name__}, not a list a pane moves in")
        return found

    def target(self) -> Target | None:
        """The highlighted item, for the keys that act on it; None when nothing is highlighted."""
        return None

    def targets_changed(self) -> None:
        """The highlighted item changed: the footer shows the keys that act on the new one."""
        if self.is_attached:
            self.screen.refresh_bindings()

    def set_busy(self, doing: str) -> None:
        """Say in the border what the pane is waiting for ("" when it waits for nothing)."""
        self.set_class(bool(doing), "busy")
        self.border_subtitle = f"⋯ {doing}" if doing else ""

    def action_cursor_down(self) -> None:
        self.navigable().action_cursor_down()

    def action_cursor_up(self) -> None:
        self.navigable().action_cursor_up()
