"""What context selection produces and assembly renders: items (files, parts of files, memories) and a selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..keys import Key
from ..records import Memory

ItemKind = Literal["file", "reduced", "memory"]
"""A whole file, the regions of a file most likely to matter (the rest elided), or a memory."""

OVER_BUDGET = "over the budget"
"""A left-out item worth having that did not fit in what was left (its `tokens`: what it needs)."""
BELOW_FLOOR = "below the floor"
"""A left-out item the task's best candidates outrank too far (or not worth its tokens)."""


@dataclass(frozen=True)
class Item:
    """Something that can go into the context: a whole file, the relevant regions of one, or a memory."""

    key: Key
    """The file (whole or reduced) or the memory, as pins and exclusions name it."""
    kind: ItemKind
    path: str
    text: str
    tokens: int
    """Tokens this item adds to the rendered document (its text as the format writes it, plus its header)."""
    value: float
    signals: dict[str, float]
    ranges: tuple[tuple[int, int], ...] = ()
    """Line ranges included, for provenance (`path:start-end`)."""
    symbols: frozenset[str] = frozenset()
    memory: Memory | None = None
    is_test: bool = False
    reason: str = ""
    """Why a left-out item is out: over the budget (`tokens` is then what it needs), below the floor, a copy."""

    @property
    def uncommitted(self) -> bool:
        """A file of the working change: its text is the working tree's, not the commit's."""
        return self.kind != "memory" and self.signals.get("changed", 0.0) > 0

    @property
    def provenance(self) -> str:
        if self.kind == "memory" and self.memory is not None:
            return f"memory {self.memory.id} ({self.memory.kind}, {self.memory.created_at:%Y-%m-%d})"
        spans = ",".join(f"{a}-{b}" for a, b in self.ranges)
        return f"{self.path}:{spans}" if spans else self.path


@dataclass(frozen=True)
class Selection:
    """What was chosen for a task, what was left out, and how many tokens it all takes."""

    task: str
    budget: int
    encoding: str
    chosen: list[Item]
    left_out: list[Item]
    ranked_files: list[str]
    """Every candidate file, best first (for recall@k and for the dashboard)."""
    notes: list[str] = field(default_factory=list)
    commit: str = ""
    fmt: str = "markdown"
    """The output format the selection was fitted to."""
    rendered_tokens: int | None = None
    """Exact tokens of the document `assemble(selection, fmt)` renders (None for a hand-built selection)."""
    min_score: float = 0.0
    """The floor the request set: a left-out item under it was left out for its score, not for the budget."""
    purpose: str = "general"
    """Who the context is laid out for (`purposes.py`): assembly renders it in that purpose's sections."""

    @property
    def tokens(self) -> int:
        return self.rendered_tokens if self.rendered_tokens is not None else sum(i.tokens for i in self.chosen)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(i.path for i in self.chosen if i.kind != "memory"))
