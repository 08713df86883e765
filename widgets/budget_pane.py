"""Pane 5: the selected-context budget meter — the tokens of exactly what `c` copies, the chosen items and why,
the items the person dropped (restorable), and what was left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.message import Message
from textual.widgets import DataTable, Static

from ..core.keys import Key
from .format import clip, shorten_path, styled
from .keymap import bindings
from .pane import Pane, Target
from .table import fit_columns

if TYPE_CHECKING:  # pane 5's modules load with its first selection, after the first frame (`show`)
    from ..core.context.assemble import Assembled
    from ..core.context.items import Item, Selection

COLUMNS = [("kind", 8), ("tokens", 6), ("item", 0), ("why", 24)]
"""`kind` holds every kind whole, and a pin's two cells before all but the longest; `_columns` widens it for a
pinned regions row (`📌regions`, 9 cells) with a cell of `why`, so the item column, which shows paths and ranges,
keeps its width at every size."""
KINDS = {"reduced": "regions"}
"""The selector's kind names as the pane shows them: a `reduced` file is sent as its relevant regions only."""
REGIONS_NOTE = "regions: only the lines of a long file that match the task are sent, the rest is left out"
SIGNALS = {"lexical": "lex", "semantic": "sem", "identifiers": "ident", "recency": "recent", "memories": "mem"}
"""Short names for the selector's signals, so the two strongest fit the "why" column."""
YES_NO = {"named", "changed", "pinned"}
"""Signals that are 1 or 0 (the task names the file, the file is in the working change, a pin): the word alone says
it (`named 1.00, changed 1.…` was cut where `named, changed` fits)."""


@dataclass(frozen=True)
class BudgetView:
    """Everything the pane shows: the selection, its assembled text in the chosen format, pins and dropped items."""

    selection: Selection
    assembled: Assembled
    pins: frozenset[Key]
    dropped: tuple[Item, ...]
    implicit: bool = False
    """The task is what you work on (branch, recent commits, working change), not one typed with `t`."""
    restores: dict[Key, int] = field(default_factory=dict)
    """What restoring each dropped item adds to the document: its row says that, not the item's cost alone (a
    section heading or a token merging at its edge makes the two differ)."""
    waiting: bool = False
    """Shown at once for a pin, drop or restore, before the selection that answers it arrives: the item acted on
    may be missing here (a restored item is out of the dropped rows and not yet back in the chosen ones)."""


class BudgetPane(Pane):
    """Shows a `BudgetView`; its keys pin, drop or restore the highlighted item, the screen does the rest."""

    DEFAULT_CSS = """
    BudgetPane #budget-task { padding: 0 1; color: $text; height: auto; max-height: 2; }
    BudgetPane #budget-bar { padding: 0 1; height: auto; max-height: 6; }
    BudgetPane DataTable { height: 1fr; min-height: 5; background: $surface; }
    BudgetPane #budget-detail { padding: 0 1; height: auto; max-height: 2; }
    BudgetPane #budget-left { padding: 0 1; color: $text-muted; height: auto; max-height: 6; }
    """
    PANE_TITLE = "5 Selected context"
    LIST = "budget-table"
    BINDINGS = bindings("budget")

    @dataclass
    class ItemToggled(Message):
        """The person dropped, restored or pinned an item."""

        pane: BudgetPane
        item: Item
        change: Literal["drop", "restore", "pin"]

        @property
        def control(self) -> BudgetPane:
            return self.pane

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.view: BudgetView | None = None
        self.rows: list[tuple[Item, bool]] = []
        """Row by row: the item and whether it is a dropped one."""
        self.shown_tokens: int | None = None
        """The meter's total: the token count of the assembled text that `c` copies."""
        self.shares: dict[Key, int] = {}
        """Each item's part of the total, split exactly between the items the document holds and its frame: the rows
        add up to it."""
        self.acted_on: Key | None = None
        """The item last pinned, unpinned, dropped or restored (set by the screen as it makes the change): the
        cursor goes where its row moves, once the selection that answers the change arrives."""
        self._width = 0

    def compose(self) -> ComposeResult:
        yield Static(styled(("choosing a context for what you work on…", "dim")), id="budget-task")
        yield Static("", id="budget-bar")
        yield DataTable(id="budget-table", cursor_type="row")
        yield Static("", id="budget-detail")
        yield Static("", id="budget-left")

    @property
    def items(self) -> list[Item]:
        return self.view.selection.chosen if self.view else []

    def on_resize(self, event: events.Resize) -> None:
        # A pane behind a tab is shown (and sized) after `show`, so its bar and columns are redrawn for the new width.
        if event.size.width != self._width and self.view is not None:
            self._draw_bar(self.view)
            self._fill(self.view)

    def show(self, view: BudgetView) -> None:
        self.view = view
        selection, assembled = view.selection, view.assembled
        # The purpose is one of a fixed few words (never user text), so the title may be a plain string.
        purpose = f" · for {selection.purpose}"
        if view.implicit:
            self.border_title = f"{self.PANE_TITLE} · implicit task: what you work on{purpose}"
            task = styled(("implicit task ", "bold"), ("(your branch, recent commits and changed files; / and t set "
                                                       "one): ", "dim"), clip(selection.task, 300))
        else:
            self.border_title = f"{self.PANE_TITLE} · task{purpose}"
            task = styled(("task: ", "bold"), clip(selection.task, 300), (f"  ({assembled.format})", "dim"))
        task.no_wrap = False
        self.query_one("#budget-task", Static).update(task)
        self.shown_tokens = assembled.tokens
        from ..core.context.assemble import token_shares
        from ..core.context.items import OVER_BUDGET

        self.shares = (assembled.shares or token_shares(selection, assembled)).items
        self._draw_bar(view)
        self._fill(view)
        notes = list(selection.notes)
        if any(i.kind == "reduced" for i in selection.chosen):
            notes.append(REGIONS_NOTE)
        if assembled.dropped:
            notes.append(f"{len(assembled.dropped)} item(s) did not fit once rendered as {assembled.format}: "
                         + ", ".join(_label(i, 40) for i in assembled.dropped[:4]))
        over = [i for i in selection.left_out if i.reason == OVER_BUDGET]
        below = len(selection.left_out) - len(over)
        left = ", ".join(f"{_label(i, 40)} ({i.tokens:,})" for i in over[:6])
        lines = [f"left out for budget: {left}" if left else "",
                 f"{below} more candidate(s) below the floor or copies (cortex select lists them)" if below else "",
                 *notes]
        # One line each (`clip` makes a line of its text): the left-out list and each note are read apart.
        self.query_one("#budget-left", Static).update(Text("\n".join(clip(line, 600) for line in lines if line)))

    def _fill(self, view: BudgetView) -> None:
        """(Re)build the rows for the pane's width. The cursor stays on its item, wherever its row moves (a pinned
        memory moves up, a drop to the end), so the detail line and the next key still mean what was highlighted."""
        table = self.query_one(DataTable)
        row = table.cursor_row
        highlighted = self.rows[row][0].key if 0 <= row < len(self.rows) else None
        self._width = self.size.width
        self.rows = [(i, False) for i in view.selection.chosen] + [(i, True) for i in view.dropped]
        kinds = [styled(("dropped", "dim strike")) if dropped
                 else styled(f"{'📌' if item.key in view.pins else ''}{KINDS.get(item.kind, item.kind)}")
                 for item, dropped in self.rows]
        widths = fit_columns(table, _columns(max((k.cell_len for k in kinds), default=0)), self.content_size.width,
                             minimum=20, yields=("why", 16))
        for (item, dropped), kind in zip(self.rows, kinds, strict=True):
            why = ", ".join(SIGNALS.get(k, k) if k in YES_NO else f"{SIGNALS.get(k, k)} {v:.2f}"
                            for k, v in _strongest(item.signals))
            label = styled((_label(item, widths["item"] - 1), "dim strike" if dropped else ""))
            # An item in the document shows its share of the total; a dropped one what restoring it adds back, dim,
            # as it is not counted (one cut when rendered, what it would need).
            share = None if dropped else self.shares.get(item.key)
            outside = view.restores.get(item.key, item.tokens) if dropped else item.tokens
            tokens = Text(f"{share if share is not None else outside:,}", justify="right",
                          style="" if share is not None else "dim")
            table.add_row(kind, tokens, label, styled(clip(why, widths["why"])),
                          key=("dropped " if dropped else "") + str(item.key))
        if table.row_count:
            table.move_cursor(row=self._cursor_row(view, row, highlighted))
        self._show_detail()

    def _cursor_row(self, view: BudgetView, row: int, highlighted: Key | None) -> int:
        """Where the cursor goes in the new rows: to the item acted on, else to the item it was on; where the
        rows lack it, the same row number (within the rows). The item acted on is looked for until the selection
        that answers the change: a view shown before it may lack the item, and the cursor must not settle on
        whatever took its row number meanwhile (a pin then acted on another item)."""
        wanted = self.acted_on or highlighted
        # The last match: in a view shown before a drop's answer the item is both chosen and dropped, and the
        # dropped row, at the end, is where it is going.
        found = [n for n, (item, _) in enumerate(self.rows) if item.key == wanted]
        if not view.waiting:
            self.acted_on = None
        return found[-1] if found else min(max(row, 0), len(self.rows) - 1)

    def _draw_bar(self, view: BudgetView) -> None:
        self.query_one("#budget-bar", Static).update(self._bar(view.selection, view.assembled, len(view.dropped)))

    def _bar(self, selection: Selection, assembled: Assembled, dropped: int) -> Text:
        kept = assembled.items
        shares = self.shares
        used_memory = sum(shares.get(i.key, 0) for i in kept if i.kind == "memory")
        used_code = sum(shares.get(i.key, 0) for i in kept if i.kind != "memory")
        frame = assembled.tokens - used_memory - used_code
        # The pane's inner width less the bar's own padding; 10 cells while the pane is hidden (not laid out yet).
        width = max(self.content_size.width - 2, 10)
        scale = width / max(selection.budget, 1)
        memory_cells, code_cells = round(used_memory * scale), round((used_code + frame) * scale)
        variables = self.app.theme_variables
        bar = Text()
        bar.append("█" * memory_cells, style=variables.get("budget-memory", "magenta"))
        bar.append("█" * code_cells, style=variables.get("budget-code", "blue"))
        bar.append("░" * max(width - memory_cells - code_cells, 0), style="dim")
        share = assembled.tokens / max(selection.budget, 1)
        style = variables.get("budget-warn", "red") if share > 0.95 else ""
        bar.append(f"\n{assembled.tokens:,} / {selection.budget:,} tokens ({selection.encoding}, {assembled.format})",
                   style=style)
        # The rows' own shares and the frame (title, headings, the format's wrapper): the three add up to the total.
        bar.append(f"\nmemories {used_memory:,} + code {used_code:,} + frame {frame:,} · {len(kept)} items",
                   style="dim")
        if dropped:
            bar.append(f" · {dropped} dropped (at the end of the list; x or u restores)", style="dim")
        # A pin never takes the document past its budget: one that cannot fit is said here, where it is seen.
        for item in unfit_pins(selection, self.view.pins if self.view else frozenset()):
            part = " (its smallest part)" if item.kind == "file" else ""
            bar.append(f"\n📌 pinned but too large: {_label(item, 60)}{part} needs {item.tokens:,} tokens, more than the "
                       f"budget has free; + raises the budget, p unpins", style=variables.get("budget-warn", "red"))
        return bar

    def _highlighted(self) -> tuple[Item, bool] | None:
        row = self.query_one(DataTable).cursor_row
        return self.rows[row] if 0 <= row < len(self.rows) else None

    def target(self) -> Target | None:
        found = self._highlighted()
        if found is None:
            return None
        item = found[0]
        if item.memory is not None:
            return Target(item.key, item.memory.title, item.memory)
        return Target(item.key, item.path)

    @on(DataTable.RowHighlighted, "#budget-table")
    def _highlighted_row(self) -> None:
        self.targets_changed()
        self._show_detail()

    def _show_detail(self) -> None:
        """The highlighted item whole: every line range it holds (a row's column may cut them), its tokens."""
        found = self._highlighted()
        detail = self.query_one("#budget-detail", Static)
        if found is None:
            detail.update("")
            return
        item, dropped = found
        where = item.provenance if item.memory is None else f"{item.memory.kind} {item.memory.id}: {item.memory.title}"
        text = Text(clip(where, 300), style="dim strike" if dropped else "bold")
        share = self.shares.get(item.key)
        if dropped and self.view is not None and item.key in self.view.restores:
            told = f"  not in the document: x or u adds back {self.view.restores[item.key]:,} tokens"
        elif share is not None and not dropped:
            told = f"  {share:,} tokens in the document"
        else:
            told = f"  {item.tokens:,} tokens, not in the document"
        text.append(told, style="dim")
        detail.update(text)

    def action_drop(self) -> None:
        found = self._highlighted()
        if found is not None:
            item, dropped = found
            self.post_message(self.ItemToggled(self, item, "restore" if dropped else "drop"))

    def action_pin(self) -> None:
        found = self._highlighted()
        if found is not None:
            self.post_message(self.ItemToggled(self, found[0], "pin"))


def unfit_pins(selection: Selection, pins: frozenset[Key]) -> list[Item]:
    """The pinned items the selection could not fit in its budget."""
    return [i for i in selection.left_out if i.key in pins]


def _strongest(signals: dict[str, float]) -> list[tuple[str, float]]:
    """The two signals that did most for an item (the role factor scales them all, so it is no reason)."""
    return sorted(((k, v) for k, v in signals.items() if k != "role" and v > 0), key=lambda kv: -kv[1])[:2]


def _label(item: Item, width: int) -> str:
    """People recognise a memory by its kind and title, a code item by its path and lines. Adjacent line ranges are
    shown as one; the path gives way in the middle (its folders) before the file name or the first range does."""
    if item.memory is not None:
        return clip(f"{item.memory.kind}: {item.memory.title or item.memory.text[:200]}", width)
    spans: list[list[int]] = []
    for start, end in item.ranges:
        if spans and start <= spans[-1][1] + 1:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    ranges = ",".join(f"{a}-{b}" for a, b in spans)
    if not ranges:
        return shorten_path(item.path, width)
    first = ranges.split(",", 1)[0]
    name = item.path.rsplit("/", 1)[-1]
    fits = [r for r in (ranges, f"{first},…") if len(name) + len(r) + 3 <= width or len(item.path) + len(r) < width]
    return shorten_path(f"{item.path}:{fits[0] if fits else first}", width)


def _columns(kind_cells: int) -> list[tuple[str, int]]:
    """`COLUMNS`, the kind column as wide as its widest cell where that is wider, the cells taken from `why`."""
    wider = max(kind_cells - dict(COLUMNS)["kind"], 0)
    return [(label, width + (wider if label == "kind" else -wider if label == "why" else 0))
            for label, width in COLUMNS]
