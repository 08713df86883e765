"""Pane 4: the branch's commits, newest first, with the memories and agent-context commits made on each."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from ..core.timeline import Timeline
from .format import age, clip
from .pane import Pane


class TimelinePane(Pane):
    """Selecting a commit shows its files and memories below the table."""

    DEFAULT_CSS = """
    TimelinePane DataTable { height: 2fr; background: $surface; }
    TimelinePane #timeline-detail { height: 1fr; padding: 0 1; background: $panel; overflow-y: auto; }
    """
    PANE_TITLE = "4 Branch timeline"

    @dataclass
    class CommitChosen(Message):
        """Enter on a commit: the graph re-centres on it."""

        pane: "TimelinePane"
        node: str

        @property
        def control(self) -> "TimelinePane":
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.timeline: Timeline | None = None

    def compose(self) -> ComposeResult:
        table = DataTable(id="timeline-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("commit", "age", "subject", "mem")
        yield table
        yield Static("", id="timeline-detail")

    def show(self, timeline: Timeline) -> None:
        self.timeline = timeline
        self.border_title = f"{self.PANE_TITLE} · {timeline.branch or 'no branch'}"
        table = self.query_one(DataTable)
        table.clear()
        if timeline.uncommitted:
            table.add_row("(now)", "", f"{len(timeline.uncommitted)} memories since the last commit", str(len(timeline.uncommitted)), key="now")
        for entry in timeline.entries:
            marks = f"{len(entry.memories)}" + (f" ⚑{len(entry.agent_commits)}" if entry.agent_commits else "")
            table.add_row(entry.commit.short, age(entry.commit.time), clip(entry.commit.subject, 48),
                          marks if entry.memories else "", key=entry.commit.sha)
        others = [b for b in timeline.branches if b != timeline.branch]
        detail = self.query_one("#timeline-detail", Static)
        detail.update(f"[dim]other branches: {', '.join(others) or 'none'}[/dim]" if timeline.entries else
                      "[dim]no commits yet[/dim]")

    @on(DataTable.RowHighlighted, "#timeline-table")
    def _detail(self, event: DataTable.RowHighlighted) -> None:
        if self.timeline is None or event.row_key is None:
            return
        key = event.row_key.value
        if key == "now":
            lines = [f"◆ {m.kind}: {m.title}" for m in self.timeline.uncommitted]
        else:
            entry = next((e for e in self.timeline.entries if e.commit.sha == key), None)
            if entry is None:
                return
            lines = [f"[b]{entry.commit.subject}[/b] — {entry.commit.author}"]
            lines += [f"◆ {m.kind}: {m.title}" for m in entry.memories]
            lines += [f"  {f}" for f in entry.commit.files[:20]]
        self.query_one("#timeline-detail", Static).update("\n".join(lines))

    @on(DataTable.RowSelected, "#timeline-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key and key != "now":
            self.post_message(self.CommitChosen(self, f"commit:{key}"))
