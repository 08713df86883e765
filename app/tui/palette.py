"""Command palette providers, one per domain: panes, memories, context, themes."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .dashboard import DashboardScreen
from .dashboard_work import PANES


class _ScreenCommands(Provider):
    """Commands that call an action of the dashboard screen; subclasses list (title, action, help)."""

    COMMANDS: tuple[tuple[str, str, str], ...] = ()

    def _run(self, action: str) -> None:
        screen = self.app.screen
        if isinstance(screen, DashboardScreen):
            self.app.call_later(screen.run_action, action)

    async def discover(self) -> Hits:
        for title, action, help_text in self.COMMANDS:
            yield DiscoveryHit(title, partial(self._run, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, action, help_text in self.COMMANDS:
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._run, action), help=help_text)


class PaneCommands(_ScreenCommands):
    COMMANDS = (
        ("panes: search", "focus_search", "focus the search box (/)"),
        *((f"panes: focus {name}", f"focus_pane({n})", f"pane {n}") for n, name in enumerate(PANES, 1)),
        ("panes: maximise or restore the focused pane", "zoom", "give the focused pane the screen (z)"),
        ("panes: re-centre the graph on the highlighted item", "graph_item", "memory, file or commit (g)"),
        ("panes: refresh", "refresh", "reload every pane (r)"),
        ("panes: help", "help", "every key (?)"),
    )


class MemoryCommands(_ScreenCommands):
    COMMANDS = (
        ("memory: new", "new_memory", "remember something (n)"),
        ("memory: edit highlighted", "edit_memory", "store a new version, in any pane (e)"),
        ("memory: done or forget highlighted", "done_or_forget", "close a task or forget a memory, asks first (d)"),
        ("memory: undo", "undo", "undo the last drop, forget or task close (u)"),
    )


class ContextCommands(_ScreenCommands):
    COMMANDS = (
        ("context: set task from search", "set_task", "use the search text as the task (t)"),
        ("context: pin highlighted", "pin_item", "include the highlighted memory or file first, while it fits the budget (p)"),
        ("context: copy", "copy_context", "copy the assembled context (c)"),
        ("context: raise budget", "budget(2000)", "+2,000 tokens (+)"),
        ("context: lower budget", "budget(-2000)", "-2,000 tokens (-)"),
        ("context: switch format", "cycle_format", "markdown, xml, json (f)"),
    )


class ThemeCommands(Provider):
    """Switch to any registered theme; the choice is remembered in the user config."""

    def _themes(self) -> list[str]:
        return sorted(self.app.available_themes)

    def _set(self, name: str) -> None:
        self.app.theme = name

    async def discover(self) -> Hits:
        for name in ("cortex-dark", "cortex-light"):
            yield DiscoveryHit(f"theme: {name}", partial(self._set, name), help="switch theme")

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name in self._themes():
            title = f"theme: {name}"
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), partial(self._set, name), help="switch theme")
