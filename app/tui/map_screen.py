"""The repository map as a dialog (`m`): the most important definitions toward the meter's task, or the working
change when there is none, fetched in a worker so the dashboard keeps answering."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from ...core.answers import RepoMap
from ...core.requests import MapRequest
from ...widgets.keymap import bindings, hint
from ..bridge.calls import Bridge
from .help_screen import ScrollDialog

MAP_BUDGET = 2000


@dataclass
class MapLoaded(Message):
    found: RepoMap | None
    error: str = ""


class MapScreen(ScrollDialog):
    """The map's text as the engine rendered it (shown as text, never as markup); j and k scroll, esc, q or m close."""

    DEFAULT_CSS = """
    MapScreen { align: center middle; }
    MapScreen > VerticalScroll { width: 120; max-width: 100%; height: auto; max-height: 100%; border: round $primary;
                                 background: $panel; padding: 0 1; }
    """
    BINDINGS = bindings("map")

    def __init__(self, bridge: Bridge, focus: str) -> None:
        super().__init__()
        self.bridge = bridge
        self.focus_text = focus

    def compose(self) -> ComposeResult:
        with VerticalScroll() as box:
            box.border_subtitle = hint("map")
            yield Static(Text("Repo map: ranking the definitions…", style="dim"), id="map-title")
            yield Static(Text(""), id="map-text")

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, group="map", exit_on_error=False)
    def load(self) -> None:
        request = MapRequest(MAP_BUDGET, (self.focus_text,) if self.focus_text.strip() else ())
        try:
            self.post_message(MapLoaded(self.bridge.repo_map(request)))
        except Exception as exc:  # one line in the dialog, whatever the engine raised
            self.post_message(MapLoaded(None, (str(exc).splitlines() or [type(exc).__name__])[0]))

    def on_map_loaded(self, message: MapLoaded) -> None:
        title = self.query_one("#map-title", Static)
        if message.found is None:
            title.update(Text(f"Repo map: {message.error}", style="red"))
            return
        found = message.found
        about = f"toward: {self.focus_text[:80]}" if self.focus_text.strip() else "toward the working change"
        title.update(Text(f"Repo map {about} · {found.tokens:,} / {found.budget:,} tokens · "
                          f"{len(found.files)} files", style="bold"))
        self.query_one("#map-text", Static).update(Text(found.text or "\n".join(found.notes)))
