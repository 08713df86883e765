"""Pane 1: what should I know — branch memories, notes on changed files, open tasks, recent work, central files."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ..core.what import WhatToKnow
from .format import age, clip
from .pane import Pane


class WhatPane(Pane):
    """Shows `core.what` for the current git state; choosing an entry re-centres the graph on it."""

    DEFAULT_CSS = """
    WhatPane OptionList { height: 1fr; border: none; background: $surface; }
    WhatPane .hint { color: $text-muted; padding: 0 1; }
    """
    PANE_TITLE = "1 What should I know"

    @dataclass
    class EntryChosen(Message):
        """A memory, file or commit was chosen in the pane."""

        pane: "WhatPane"
        node: str

        @property
        def control(self) -> "WhatPane":
            return self.pane

    def compose(self) -> ComposeResult:
        yield OptionList(id="what-list")
        yield Label("", id="what-hints", classes="hint")

    def show(self, what: WhatToKnow) -> None:
        options: list[Option | None] = []

        def section(title: str, rows: list[tuple[str, str]]) -> None:
            if rows:
                options.append(Option(f"[b]{title}[/b]", disabled=True))
                # The same memory can sit in several sections; option ids must be unique, so number them.
                options.extend(Option(text, id=f"{len(options)}|{node}") for node, text in rows)

        def mem(m) -> tuple[str, str]:
            return f"mem:{m.id}", f"  [i]{m.kind:<9}[/i] {clip(m.title, 44)} [dim]{age(m.updated_at)}[/dim]"

        section("On this branch", [mem(m) for m in what.branch_memories])
        section("About your changes", [mem(m) for m in what.file_memories])
        section("Open tasks", [mem(m) for m in what.open_tasks])
        section("Recent memories", [mem(m) for m in what.recent_memories if m not in what.branch_memories])
        section("Recent commits", [(f"commit:{c.sha}", f"  {c.short} {clip(c.subject, 40)} [dim]{age(c.time)}[/dim]")
                                   for c in what.recent_commits])
        section("Working change", [(f"file:{f.path}", f"  {f.state[:3]} {clip(f.path, 40)} [dim]←{f.imported_by}[/dim]")
                                   for f in what.changed_files])
        listing = self.query_one(OptionList)
        listing.clear_options()
        listing.add_options(options or [Option("[dim]nothing yet[/dim]", disabled=True)])
        self.query_one("#what-hints", Label).update("\n".join(what.hints))

    @on(OptionList.OptionSelected, "#what-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.post_message(self.EntryChosen(self, event.option.id.split("|", 1)[1]))
