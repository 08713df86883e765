"""DataTable columns that fit their pane: fixed columns keep their width and one flexible column takes the rest,
so a wide terminal shows whole subjects and paths instead of scrolling them out of sight."""

from __future__ import annotations

from textual.widgets import DataTable

SCROLLBAR = 2
"""Room kept for the vertical scrollbar (Textual's default width)."""


def fit_columns(table: DataTable, spec: list[tuple[str, int]], available: int, minimum: int = 16) -> dict[str, int]:
    """Replace the table's columns (and rows) with `spec`: (label, width), where width 0 marks the flexible column.

    Returns the widths used, by label, so the caller can clip its cells to them."""
    padding = 2 * table.cell_padding * len(spec)
    rest = available - padding - sum(width for _, width in spec) - SCROLLBAR
    widths = {label: width or max(rest, minimum) for label, width in spec}
    table.clear(columns=True)
    for label, width in widths.items():
        table.add_column(label, width=width, key=label)
    return widths
