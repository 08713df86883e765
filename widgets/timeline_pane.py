"""Pane 4: the branch's commits, newest first, with the memories and agent-context commits made on each."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Static

from ..core.answers import Timeline
from ..core.keys import Key
from .format import age, clip, shorten_path, styled
from .pane import Pane, Target
from .table import fit_columns

COLUMNS = [("commit", 8), ("age", 6), ("subject", 0), ("mem ⚑", 6)]


class TimelinePane(Pane):
    """Selecting a commit shows its files and memories below the table."""

    DEFAULT_CSS = """
    TimelinePane DataTable { height: 2fr; background: $surface; }
    TimelinePane #timeline-detail { height: 1fr; padding: 0 1; background: $panel; overflow-y: auto; }
    """
    PANE_TITLE = "4 Branch timeline"
    LIST = "timeline-table"

    @dataclass
    class CommitChosen(Message):
        """Enter on a commit: the graph re-centres on it."""

        pane: TimelinePane
        key: Key

        @property
        def control(self) -> TimelinePane:
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeline: Timeline | None = None
        self._width = 0

    def compose(self) -> ComposeResult:
        yield DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="timeline-detail")

    def on_resize(self, event: events.Resize) -> None:
        if event.size.width != self._width and self.timeline is not None:
            self._fill(self.timeline)

    def show(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.border_title = styled(f"{self.PANE_TITLE} · ", clip(timeline.branch or "no branch", 60))
        self._fill(timeline)
        others = [b for b in timeline.branches if b != timeline.branch]
        detail = self.query_one("#timeline-detail", Static)
        detail.update(styled(("other branches: " + clip(", ".join(others) or "none", 2000), "dim")) if timeline.entries
                      else styled(("no commits yet", "dim")))

    def _fill(self, timeline: Timeline) -> None:
        """(Re)build the rows for the pane's width, keeping the highlighted row."""
        table = self.query_one(DataTable)
        row = table.cursor_row
        self._width = self.size.width
        widths = fit_columns(table, COLUMNS, self.content_size.width)
        if timeline.uncommitted:
            table.add_row("(now)", "", f"{len(timeline.uncommitted)} memories since the last commit",
                          str(len(timeline.uncommitted)), key="now")
        for entry in timeline.entries:
            marks = f"{len(entry.memories)}" + (f" ⚑{len(entry.agent_commits)}" if entry.agent_commits else "")
            table.add_row(entry.commit.short, age(entry.commit.time), styled(clip(entry.commit.subject, widths["subject"])),
                          marks if entry.memories else "", key=entry.commit.sha)
        if table.row_count:
            table.move_cursor(row=min(max(row, 0), table.row_count - 1))

    def target(self) -> Target | None:
        table = self.query_one(DataTable)
        if self.timeline is None or not table.row_count:
            return None
        key = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        entry = next((e for e in self.timeline.entries if e.commit.sha == key), None)
        return Target(Key("commit", entry.commit.sha), entry.commit.subject) if entry is not None else None

    @on(DataTable.RowHighlighted, "#timeline-table")
    def _detail(self, event: DataTable.RowHighlighted) -> None:
        self.targets_changed()
        if self.timeline is None or event.row_key is None:
            return
        key = event.row_key.value
        text = Text()
        entry = next((e for e in self.timeline.entries if e.commit.sha == key), None) if key != "now" else None
        if key != "now" and entry is None:
            return
        if entry is None:
            memories = self.timeline.uncommitted
        else:
            memories = entry.memories
            text.append_text(styled((clip(entry.commit.subject, 300), "bold"), f" — {clip(entry.commit.author, 80)}"))
            text.append("\n")
        for m in memories:
            text.append_text(styled(f"◆ {m.kind}: ", clip(m.title, 300)))
            text.append("\n")
        if entry is not None:
            for path in entry.commit.files[:20]:
                text.append_text(styled(f"  {shorten_path(path, max(self.content_size.width - 4, 20))}"))
                text.append("\n")
        text.rstrip()
        self.query_one("#timeline-detail", Static).update(text)

    @on(DataTable.RowSelected, "#timeline-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key and key != "now":
            self.post_message(self.CommitChosen(self, Key("commit", key)))
