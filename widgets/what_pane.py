"""Pane 1: what should I know — branch memories, notes on changed files, open tasks, recent work, central files."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ..core.answers import WhatToKnow
from ..core.keys import Key
from ..core.records import Memory
from .format import age, clip, shorten_path, styled
from .pane import Pane, Target


class WhatPane(Pane):
    """Shows `WhatToKnow` (what to know before working, `core/graph/what.py`) for the current git state; choosing an
    entry re-centres the graph on it."""

    DEFAULT_CSS = """
    WhatPane OptionList { height: 1fr; border: none; background: $surface; text-wrap: nowrap; text-overflow: ellipsis; }
    WhatPane .hint { color: $text-muted; padding: 0 1; width: 100%; }
    """
    PANE_TITLE = "1 What should I know"
    LIST = "what-list"

    @dataclass
    class EntryChosen(Message):
        """A memory, file or commit was chosen in the pane."""

        pane: WhatPane
        key: Key

        @property
        def control(self) -> WhatPane:
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.targets: dict[str, Target] = {}
        """By option id: what each entry is, for the keys that act on the highlighted one."""
        self.what: WhatToKnow | None = None
        self._width = 0

    def compose(self) -> ComposeResult:
        yield OptionList(id="what-list")
        yield Label("", id="what-hints", classes="hint")

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width and self.what is not None:
            self.show(self.what)

    def show(self, what: WhatToKnow) -> None:
        self.what = what
        self._width = self.size.width
        # The list's own width less the importers and state columns and the scrollbar.
        path_room = self.query_one(OptionList).content_size.width - 11
        options: list[Option] = []
        targets: dict[str, Target] = {}

        def section(title: str, rows: list[tuple[Target, Text]]) -> None:
            if rows:
                options.append(Option(styled((title, "bold")), disabled=True))
                for target, text in rows:
                    # The same memory can sit in several sections; option ids must be unique, so number them.
                    option_id = f"{len(options)}|{target.key}"
                    targets[option_id] = target
                    options.append(Option(text, id=option_id))

        # The age leads each row in a fixed width, then the kind; the title has what is left of the row (less the
        # scrollbar), and in a narrow pane (at 120 columns it had 12 cells) goes on over up to two more lines.
        row_room = self.query_one(OptionList).content_size.width - 3

        def mem(m: Memory) -> tuple[Target, Text]:
            changed = ("  code changed since", "yellow") if m.code_change is not None else ""
            lines = _title_lines(m.title, row_room - 17, row_room - INDENT)
            row = styled((f"{age(m.updated_at):>6} ", "dim"), (f"{m.kind:<9} ", "italic"), lines[0], changed)
            for line in lines[1:]:
                row.append("\n" + " " * INDENT + line)
            return Target(Key.memory(m.id), m.title, m), row

        section("On this branch", [mem(m) for m in what.branch_memories])
        section("About your changes", [mem(m) for m in what.file_memories])
        section("Open tasks", [mem(m) for m in what.open_tasks])
        section("Recent memories", [mem(m) for m in what.recent_memories if m not in what.branch_memories])
        section("Recent commits", [(Target(Key("commit", c.sha), c.subject),
                                    styled((f"{age(c.time):>6} ", "dim"), f"{c.short} ", clip(c.subject, 200)))
                                   for c in what.recent_commits])
        section("Working change", [(Target(Key.file(f.path), f.path),
                                    styled((f"←{f.imported_by:<3}", "dim"), f"{f.state[:3]} ", shorten_path(f.path, path_room)))
                                   for f in what.changed_files])
        self.targets = targets
        listing = self.query_one(OptionList)
        before = listing.highlighted
        listing.clear_options()
        listing.add_options(options or [Option(styled(("nothing yet", "dim")), disabled=True)])
        # Keep the cursor where it was (a refresh is not a reason to lose one's place), on an entry, not a heading.
        enabled = [i for i, option in enumerate(options) if not option.disabled]
        if enabled:
            listing.highlighted = min(enabled, key=lambda i: abs(i - (before or 0)))
        self.query_one("#what-hints", Label).update(Text("\n".join(clip(h, 300) for h in what.hints)))

    def target(self) -> Target | None:
        listing = self.query_one(OptionList)
        if listing.highlighted is None or listing.highlighted >= listing.option_count:
            return None
        return self.targets.get(listing.get_option_at_index(listing.highlighted).id or "")

    @on(OptionList.OptionHighlighted, "#what-list")
    def _highlighted(self) -> None:
        self.targets_changed()

    @on(OptionList.OptionSelected, "#what-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        target = self.targets.get(event.option.id or "")
        if target is not None:
            self.post_message(self.EntryChosen(self, target.key))


WRAPPED = 40
"""A title needing more room than this on a narrow row goes on over further lines (a wide pane cuts it with `…`)."""
INDENT = 2
"""The indent of a title's further lines."""
TITLE_LINES = 3


def _title_lines(title: str, first: int, rest: int) -> list[str]:
    """The title in lines: the first in `first` cells, the others (at most TITLE_LINES in all, the last cut with
    `…`) in `rest`, broken at the last space that fits; a word is cut only when it alone is longer than a line. One
    line when it fits or the row is wide."""
    line = " ".join(title.split())
    if first >= WRAPPED or first < 8 or len(line) <= first:
        return [clip(line, 200)]
    lines: list[str] = []
    room = first
    while line and len(lines) < TITLE_LINES - 1 and len(line) > room:
        # Any space that fits, however early: looking only in the line's second half split words mid-way.
        cut = line.rfind(" ", 1, room + 1)
        cut = cut if cut > 0 else room
        lines.append(line[:cut])
        line, room = line[cut:].lstrip(), rest
    return lines + ([clip(line, room)] if line else [])
