"""The Textual application: themes, palette, and the dashboard as its only screen. Kept thin on purpose."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App

from ...themes import BUILTIN_THEMES
from ...widgets.keymap import bindings
from .dashboard import DashboardScreen
from .palette import ContextCommands, MemoryCommands, PaneCommands, ThemeCommands
from .threads import DaemonExecutor

if TYPE_CHECKING:
    from ..bridge.calls import Bridge


class CortexApp(App):
    """cortex-tui: what to know, smart search, memory graph, timeline and context budget for one repository."""

    CSS_PATH = Path(__file__).parent / "app.tcss"
    TITLE = "cortex-tui"
    COMMANDS = App.COMMANDS | {PaneCommands, MemoryCommands, ContextCommands, ThemeCommands}
    # ctrl+q and ctrl+c quit from anywhere, typing included; the footer names only `q`.
    BINDINGS = bindings("app")

    def __init__(self, bridge: Bridge, task: str = "", budget: int = 12000, theme: str | None = None,
                 remember_theme: bool = True) -> None:
        super().__init__()
        self.bridge = bridge
        self.initial_task = task
        self.initial_budget = budget
        self.remember_theme = remember_theme
        for item in BUILTIN_THEMES.values():
            self.register_theme(item)
        wanted = theme or bridge.theme
        self.theme = wanted if wanted in self.available_themes else "cortex-dark"

    def on_load(self) -> None:
        # Before any worker starts: quitting must never wait for an engine call that is still running.
        asyncio.get_running_loop().set_default_executor(DaemonExecutor())

    def get_default_screen(self) -> DashboardScreen:
        return DashboardScreen(self.bridge, self.initial_task, self.initial_budget)

    def watch_theme(self, theme: str) -> None:
        if self.remember_theme and self.is_running:
            from ...core.config import save_user_setting  # pydantic: not on the way to the first paint

            try:
                save_user_setting("theme", theme)
            except OSError as exc:
                self.notify(f"could not remember the theme: {exc.strerror}", severity="warning", markup=False)
