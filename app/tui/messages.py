"""Messages the dashboard's workers post when engine work finishes (past tense, one per kind of result)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from textual.message import Message

from ...core.answers import (
    IndexProgress,
    IndexReport,
    IndexStatus,
    Neighbour,
    SearchResults,
    Timeline,
    WatchUpdate,
    WhatToKnow,
)
from ...core.keys import Key
from ...core.records import Memory, MemoryDraft

if TYPE_CHECKING:  # pane 5's and copying's modules load with the first selection, after the first frame
    from ...core.clipboard import CopyResult
    from ...core.context.assemble import Assembled
    from ...core.context.items import Selection


@dataclass
class WhatLoaded(Message):
    what: WhatToKnow


@dataclass
class TimelineLoaded(Message):
    timeline: Timeline
    then_ready: bool = False
    """Post `EngineReady` once this timeline is painted: the panes' answers were asked ahead (`early`)."""


@dataclass
class GraphLoaded(Message):
    centre: Key | None
    """None when the graph could not be read (the label says why)."""
    label: str
    neighbours: list[Neighbour]
    chosen: bool = False
    """The person asked for this centre (it stays across refreshes); otherwise it followed the working change."""


class EngineReady(Message):
    """The database is open: panes that need memories or the index can load."""


@dataclass
class SearchFinished(Message):
    results: SearchResults
    request: str
    """The raw text the search was asked for (the engine's `results.query` has the inline filters taken out)."""


@dataclass
class SelectionMade(Message):
    """A selection and its assembled text in one format: the meter shows the tokens of exactly that text."""

    selection: Selection
    assembled: Assembled
    restores: dict[Key, int] = field(default_factory=dict)
    """What restoring each dropped item would add to the document's tokens."""


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
    status: IndexStatus
    """The index as `cortex index --status` reports it afterwards: the top bar's file count comes from here."""


@dataclass
class IndexChanged(Message):
    update: WatchUpdate


class MemoriesChanged(Message):
    """A memory was written, revised or forgotten, by this dashboard or any other process."""


class DatabaseReplaced(Message):
    """The database was deleted or replaced under the dashboard (`rm -rf .cortex`): a new one is being indexed."""


@dataclass(frozen=True)
class Undo:
    """What `u` can take back: a dropped context item (`key`) or a forgotten memory or closed task (`memory`)."""

    change: str
    """`drop`, `forget` or `close`."""
    label: str
    key: Key | None = None
    memory: Memory | None = None
    pinned: bool = False
    """A dropped item that was pinned: it comes back pinned."""


@dataclass
class MemorySaved(Message):
    summary: str
    undo: Undo | None = None
    """Set when the change can be taken back with `u`."""


@dataclass
class MemoryFetched(Message):
    """A memory a pane listed by id only, read so that a key can act on it (`then`: `edit` or `done_or_forget`)."""

    memory: Memory
    then: str


@dataclass
class NearDuplicate(Message):
    """A new memory from the form says what an active one (`match`) says: the person chooses a new version of it
    or both."""

    draft: MemoryDraft
    match: Memory


@dataclass
class MemoryRefused(Message):
    """The engine refused a memory from the form (a secret in it, too long, the database locked): the form opens
    again holding the draft, with the reason."""

    draft: MemoryDraft
    editing: Memory | None
    error: str


@dataclass
class EngineFailed(Message):
    """A background engine call failed; the text is one line for a toast."""

    text: str
