"""The dashboard's footer: Textual's, less the keys that would not fit whole."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from .keymap import KEYMAP

KEY_PADDING = 3
"""Cells a footer key takes beside its key and label: a space before each and one after the label, and the gap."""
HELP = next(k.label for k in KEYMAP if k.id == "dash.help")
"""The key that lists every other: always shown."""


class FittingFooter(Footer):
    """Keys are shown in the order of the screen's bindings (the focused pane's own first) while they fit whole;
    the rest are left out rather than cut (at 100 columns `c Copy` showed as `c C`). `? Help`, which lists every
    key, is always kept, in its place."""

    def on_resize(self) -> None:
        # Which keys fit is decided in `compose`: a new width decides it again.
        self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        # The dashboard's bindings have no groups, so Textual's footer yields plain keys (and the palette's last).
        widgets = list(super().compose())
        palette = [w for w in widgets if w.has_class("-command-palette")]
        keys = [w for w in widgets if w not in palette]
        room = self.app.size.width - sum(_width(w) + 1 for w in palette)
        room -= sum(_width(w) for w in keys if _is_help(w))
        for widget in keys:
            if _is_help(widget):
                yield widget
                continue
            if room < _width(widget):
                continue
            room -= _width(widget)
            yield widget
        yield from palette


def _is_help(widget) -> bool:
    return isinstance(widget, FooterKey) and widget.description == HELP


def _width(widget) -> int:
    if isinstance(widget, FooterKey):
        return len(widget.key_display) + len(widget.description) + KEY_PADDING
    return 0
