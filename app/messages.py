"""Messages the dashboard's workers post when engine work finishes (past tense, one per kind of result)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from ..core.assemble import Assembled
from ..core.clipboard import CopyResult
from ..core.graph import Neighbour
from ..core.index import IndexProgress, IndexReport
from ..core.search import SearchResults
from ..core.select import Selection
from ..core.timeline import Timeline
from ..core.watch import WatchUpdate
from ..core.what import WhatToKnow


@dataclass
class WhatLoaded(Message):
    what: WhatToKnow


@dataclass
class TimelineLoaded(Message):
    timeline: Timeline


@dataclass
class GraphLoaded(Message):
    centre: str
    label: str
    neighbours: list[Neighbour]
    chosen: bool = False
    """The person asked for this centre (it stays across refreshes); otherwise it followed the working change."""


class EngineReady(Message):
    """The database is open: panes that need memories or the index can load."""


@dataclass
class SearchFinished(Message):
    results: SearchResults


@dataclass
class SelectionMade(Message):
    selection: Selection


@dataclass
class ContextCopied(Message):
    assembled: Assembled
    result: CopyResult


@dataclass
class IndexProgressed(Message):
    progress: IndexProgress

    ALLOW_SELECTOR_MATCH = {"progress"}

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, IndexProgressed)


@dataclass
class IndexFinished(Message):
    report: IndexReport


@dataclass
class IndexChanged(Message):
    update: WatchUpdate


@dataclass
class MemorySaved(Message):
    summary: str


@dataclass
class EngineFailed(Message):
    """A background engine call failed; the text is one line for a toast."""

    text: str
