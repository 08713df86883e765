"""Pane 1: what should I know — branch memories, notes on changed files, open tasks, recent work, central files."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ..core.records import Memory
from ..core.answers import WhatToKnow
from .format import age, clip, styled
from .pane import Pane


class WhatPane(Pane):
    """Shows `core.what` for the current git state; choosing an entry re-centres the graph on it."""

    DEFAULT_CSS = """
    WhatPane OptionList { height: 1fr; border: none; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    WhatPane .hint { color: $text-muted; padding: 0 1; width: 100%; }
    """
    PANE_TITLE = "1 What should I know"
    LIST = "what-list"

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
        options: list[Option] = []

        def section(title: str, rows: list[tuple[str, object]]) -> None:
            if rows:
                options.append(Option(styled((title, "bold")), disabled=True))
                # The same memory can sit in several sections; option ids must be unique, so number them.
                options.extend(Option(text, id=f"{len(options)}|{node}") for node, text in rows)

        # The age leads each row in a fixed width: a narrow pane cuts the end of a title, never the age.
        def mem(m: Memory) -> tuple[str, object]:
            return f"mem:{m.id}", styled((f"{age(m.updated_at):>4} ", "dim"), (f"{m.kind:<9} ", "italic"), clip(m.title, 200))

        section("On this branch", [mem(m) for m in what.branch_memories])
        section("About your changes", [mem(m) for m in what.file_memories])
        section("Open tasks", [mem(m) for m in what.open_tasks])
        section("Recent memories", [mem(m) for m in what.recent_memories if m not in what.branch_memories])
        section("Recent commits", [(f"commit:{c.sha}", styled((f"{age(c.time):>4} ", "dim"), f"{c.short} ",
                                                               clip(c.subject, 200))) for c in what.recent_commits])
        section("Working change", [(f"file:{f.path}", styled((f"←{f.imported_by:<3}", "dim"), f"{f.state[:3]} ",
                                                              clip(f.path, 200))) for f in what.changed_files])
        listing = self.query_one(OptionList)
        before = listing.highlighted
        listing.clear_options()
        listing.add_options(options or [Option(styled(("nothing yet", "dim")), disabled=True)])
        # Keep the cursor where it was (a refresh is not a reason to lose one's place), on an entry, not a heading.
        enabled = [i for i, option in enumerate(options) if not option.disabled]
        if enabled:
            listing.highlighted = min(enabled, key=lambda i: abs(i - (before or 0)))
        self.query_one("#what-hints", Label).update(Text("\n".join(clip(h, 300) for h in what.hints)))

    @on(OptionList.OptionSelected, "#what-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.post_message(self.EntryChosen(self, event.option.id.split("|", 1)[1]))
