"""DataTable columns that fit their pane: fixed columns keep their width and one flexible column takes the rest,
so a wide terminal shows whole subjects and paths instead of scrolling them out of sight."""

from __future__ import annotations

from textual.widgets import DataTable

SCROLLBAR = 2
"""Room kept for the vertical scrollbar (Textual's default width)."""


def fit_columns(table: DataTable, spec: list[tuple[str, int]], available: int, minimum: int = 16,
                yields: tuple[str, int] | None = None) -> dict[str, int]:
    """Replace the table's columns (and rows) with `spec`: (label, width), where width 0 marks the flexible column.
    `yields`: (label, narrowest) of a fixed column that gives up cells, down to its narrowest, before the flexible
    one goes under `minimum`: the columns then still fit the width, where they overflowed it and a horizontal
    scrollbar took one of a short table's rows (pane 5 at 120 columns).

    Returns the widths used, by label, so the caller can clip its cells to them."""
    padding = 2 * table.cell_padding * len(spec)
    fixed = dict(spec)
    rest = available - padding - sum(fixed.values()) - SCROLLBAR
    if yields is not None and rest < minimum:
        label, narrowest = yields
        given = min(minimum - rest, max(fixed[label] - narrowest, 0))
        fixed[label] -= given
        rest += given
    widths = {label: width or max(rest, minimum) for label, width in fixed.items()}
    table.clear(columns=True)
    for label, width in widths.items():
        table.add_column(label, width=width, key=label)
    return widths
