"""Pane 5: the selected-context budget meter — used vs budget by kind, the chosen items and why, what was left out."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable, Static

from ..core.select import Item, Selection
from .format import clip
from .pane import Pane

BAR_MAX = 40


class BudgetPane(Pane):
    """Shows a `Selection`; its keys pin or drop the highlighted item, the screen does the rest."""

    DEFAULT_CSS = """
    BudgetPane #budget-task { padding: 0 1; color: $text; height: auto; max-height: 3; }
    BudgetPane #budget-bar { padding: 0 1; height: auto; }
    BudgetPane DataTable { height: 1fr; background: $surface; }
    BudgetPane #budget-left { padding: 0 1; color: $text-muted; height: auto; max-height: 4; }
    """
    PANE_TITLE = "5 Selected context"
    BINDINGS = [
        Binding("x", "drop", "Drop item", id="budget.drop", tooltip="Leave the highlighted item out of the context"),
        Binding("p", "pin", "Pin item", id="budget.pin", tooltip="Always include the highlighted item"),
    ]

    @dataclass
    class ItemToggled(Message):
        """The person pinned (`pin=True`) or dropped an item; `key` is a path or `memory:<id>`."""

        pane: "BudgetPane"
        key: str
        pin: bool

        @property
        def control(self) -> "BudgetPane":
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.items: list[Item] = []

    def compose(self) -> ComposeResult:
        yield Static("[dim]no task yet: type a search and press t[/dim]", id="budget-task")
        yield Static("", id="budget-bar")
        table = DataTable(id="budget-table", cursor_type="row")
        # Fixed widths: auto-sized columns keep the widths of earlier, longer rows after a clear.
        for label, width in (("kind", 7), ("tokens", 6), ("item", 40), ("why", 30)):
            table.add_column(label, width=width)
        yield table
        yield Static("", id="budget-left")

    def show(self, selection: Selection, fmt: str, pins: frozenset[str]) -> None:
        self.items = selection.chosen
        self.query_one("#budget-task", Static).update(f"[b]task:[/b] {clip(selection.task, 120)}  [dim]({fmt})[/dim]")
        self.query_one("#budget-bar", Static).update(self._bar(selection))
        table = self.query_one(DataTable)
        table.clear()
        for item in selection.chosen:
            key = item.key if item.kind == "memory" else item.path
            pin = "📌" if key in pins else ""
            why = ", ".join(f"{k} {v:.2f}" for k, v in sorted(item.signals.items(), key=lambda kv: -kv[1])[:2] if k != "role")
            table.add_row(f"{pin}{item.kind}", Text(f"{item.tokens:,}", justify="right"), clip(_label(item), 40), why,
                          key=item.key)
        left = ", ".join(f"{clip(_label(i), 30)} ({i.tokens:,})" for i in selection.left_out[:6])
        notes = "; ".join(selection.notes)
        self.query_one("#budget-left", Static).update(
            "\n".join(filter(None, [f"left out: {left}" if left else "", notes])))

    def _bar(self, selection: Selection) -> Text:
        used_memory = sum(i.tokens for i in selection.chosen if i.kind == "memory")
        used_code = selection.tokens - used_memory
        width = max(min(self.size.width - 4, BAR_MAX), 10)
        scale = width / max(selection.budget, 1)
        memory_cells, code_cells = round(used_memory * scale), round(used_code * scale)
        variables = self.app.theme_variables
        bar = Text()
        bar.append("█" * memory_cells, style=variables.get("budget-memory", "magenta"))
        bar.append("█" * code_cells, style=variables.get("budget-code", "blue"))
        bar.append("░" * max(width - memory_cells - code_cells, 0), style="dim")
        share = selection.tokens / max(selection.budget, 1)
        style = variables.get("budget-warn", "red") if share > 0.95 else ""
        bar.append(f"\n{selection.tokens:,} / {selection.budget:,} tokens ({selection.encoding})", style=style)
        bar.append(f"\nmemories {used_memory:,} · code {used_code:,} · {len(selection.chosen)} items", style="dim")
        return bar

    def _highlighted(self) -> Item | None:
        table = self.query_one(DataTable)
        row = table.cursor_row
        return self.items[row] if self.items and 0 <= row < len(self.items) else None

    def action_drop(self) -> None:
        item = self._highlighted()
        if item is not None:
            self.post_message(self.ItemToggled(self, item.key if item.kind == "memory" else item.path, pin=False))

    def action_pin(self) -> None:
        item = self._highlighted()
        if item is not None:
            self.post_message(self.ItemToggled(self, item.key if item.kind == "memory" else item.path, pin=True))


def _label(item: Item) -> str:
    """People recognise a memory by its kind and title, a code item by its path and lines."""
    if item.memory is not None:
        return f"{item.memory.kind}: {item.memory.title or item.memory.text}"
    return item.provenance
