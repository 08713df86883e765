"""The dashboard's state and its workers: every engine call runs in a thread worker here, never on the UI thread,
and ends in a message (`messages.py`) that the dashboard screen routes to its panes. A newer worker of a group
replaces the older one, and a superseded worker's result is dropped (`_deliver`)."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from textual import on, work
from textual.dom import DOMNode
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from ...core.context.purpose_names import DEFAULT as DEFAULT_PURPOSE
from ...core.errors import CortexError
from ...core.index.progress import ProgressClock
from ...core.keys import Key
from ...core.records import Memory, MemoryDraft
from ...core.requests import SelectRequest
from ...widgets.format import clip
from ...widgets.pane import Pane
from ...widgets.search_pane import normalised
from ..bridge.calls import WatchEvents
from .messages import (
    ContextCopied,
    DatabaseReplaced,
    EngineFailed,
    EngineReady,
    GraphLoaded,
    IndexChanged,
    IndexFinished,
    IndexProgressed,
    MemoriesChanged,
    MemoryFetched,
    MemoryRefused,
    MemorySaved,
    NearDuplicate,
    SearchFinished,
    SelectionMade,
    TimelineLoaded,
    Undo,
    WhatLoaded,
)
from .session import new_session, pane_search

if TYPE_CHECKING:  # pane 5's modules load in its first selection's worker, after the first frame
    from ...core.context.assemble import Assembled
    from ...core.context.items import Item, Selection
    from ..bridge.calls import Bridge

PANES = ("what", "search", "graph", "timeline", "budget")
"""In the order of their numbers, which is also their reading order on screen."""
FIRST_PANES = ("what", "search", "timeline", "graph")
"""The panes a start fills that need no typed task (pane 5 selects for what you work on, and takes longest)."""
BUSY = {"what": ("what", "loading"), "search": ("search", "searching"), "graph": ("graph", "loading"),
        "timeline": ("timeline", "loading"), "select": ("budget", "selecting"), "copy": ("budget", "copying"),
        "fetch": ("", "reading the memory")}
"""Worker group -> (the pane whose result it brings, what the pane says meanwhile); "" for the focused pane."""
BUSY_AFTER_S = 0.15
"""Work that answers sooner shows no busy state: it would only flicker."""


def restore_adds(selection: Selection, assembled: Assembled, dropped: list[Item]) -> dict[Key, int]:
    """What restoring each dropped item adds to the document: the document rendered with it back, less the
    document now. Its cost alone is not that: a section heading it would be the first to need, or a token merging
    at its edge, makes them differ (a row said 67 where `u` added 68)."""
    from ...core.context.assemble import Layout, document

    layout = Layout(assembled.format, selection.purpose)
    return {item.key: document(selection.task, selection.commit, selection.encoding, [*assembled.items, item],
                               layout).tokens - assembled.tokens for item in dropped}


class DashboardWork(Screen):
    """What the dashboard knows and asks the engine; `DashboardScreen` lays it out and routes the answers."""

    task_text: reactive[str] = reactive("")
    """The task of the budget meter, as typed (`t`); empty while it follows the working change."""
    budget: reactive[int] = reactive(12000)
    """Token budget of the selected context."""
    fmt: reactive[str] = reactive("markdown")
    """Format of the assembled context."""
    purpose: reactive[str] = reactive(DEFAULT_PURPOSE)
    """Who the assembled context is for (its sections), shown in pane 5's title."""
    active_pane: reactive[str] = reactive("what")
    """The pane shown when the terminal is too narrow for all five."""
    SEARCH_DEBOUNCE_S = 0.15
    """How long the search box must stay unchanged before its search runs: typing a word asks for one search."""

    def __init__(self, bridge: Bridge, task: str = "", budget: int = 12000) -> None:
        super().__init__()
        self.bridge = bridge
        self.session = bridge.session or new_session()
        """This dashboard run's session: its reads show this session's session memories, not other sessions'. The
        bridge's when it asked the first calls ahead for one (`early`)."""
        self.set_reactive(DashboardWork.task_text, task)
        self.set_reactive(DashboardWork.budget, budget)
        self.pins: frozenset[Key] = frozenset()
        self.excluded: frozenset[Key] = frozenset()
        self.dropped: dict[Key, Item] = {}
        """The items behind `excluded`, as they were when dropped, for the pane's dropped section."""
        self.restores: dict[Key, int] = {}
        """What restoring each dropped item adds to the document the meter counts (`restore_adds`)."""
        self.undo_stack: list[Undo] = []
        self.unfit_pins: set[Key] = set()
        """Pins the last selection could not fit in its budget (each is told once, when it first does not fit)."""
        self.graph_centre: Key | None = None
        self.selection: Selection | None = None
        self.assembled: Assembled | None = None
        """The selection rendered in `fmt`: what the meter counts and `c` copies."""
        self.progress_clock = ProgressClock()
        """Times the index pass's phases for the top bar's rate and estimate."""
        self.implicit_task = ""
        """What you work on in words (branch, recent subjects, changed files): the budget meter's task until one
        is typed, as the search with no query does."""
        self.select_waits = False
        """Whether pane 5's first selection waits for the first panes (see DashboardScreen._select_when_filled)."""
        self.index_started = False
        """Whether this start's index pass has begun (see DashboardScreen._start_index)."""
        self.working_change = True
        """Whether the work tree has uncommitted changes, as the latest `what` said (until then, taken as yes)."""
        self.searched: str | None = None
        """The normalised text of the latest search asked for."""
        self._where = str(bridge.root)
        self._status = ""
        self._asked = itertools.count(1)
        self._painted: dict[str, int] = {}
        """By group: the order number of the refresh whose answer was posted last (see `_deliver_newer`)."""
        self._painted_lock = threading.Lock()
        self.loaded: set[str] = set()
        """Which results have arrived at least once (what, search, graph, timeline, select, index): for tests,
        screenshots and `cortex bench tui`."""

    def _deliver(self, message) -> None:
        """Post a worker's result unless a newer worker of its group replaced it: thread workers cannot be
        interrupted, so a slow, superseded one would otherwise paint stale results over fresh ones."""
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    @work(thread=True, group="start", exit_on_error=False)
    def start_up(self) -> None:
        # Git answers in milliseconds while opening LanceDB takes seconds: paint the branch's history first.
        timeline = self.bridge.timeline(with_memories=False)
        if self.bridge.opens_itself and self.bridge.session:
            # The panes' answers were asked with this timeline, before this process imported the dashboard: they
            # are here or on their way. The timeline is painted first, alone (a frame sooner than with them), and
            # the panes ask for theirs after it (`then_ready`).
            self._deliver(TimelineLoaded(timeline, then_ready=True))
            self.warm_model()
            return
        if self.bridge.opens_itself:
            # The server's database is open: the panes' calls go out before this timeline is painted, and the
            # server answers them while this process paints it (one after the other, the panes waited for the
            # paint and an `open` round trip: a third of an attached dashboard's time to fill them).
            self.post_message(EngineReady())
            self._deliver(TimelineLoaded(timeline))
            self.warm_model()  # last: a worker started from a thread waits for the screen's thread to start it
            return
        self._deliver(TimelineLoaded(timeline))
        self.warm_model()
        self.bridge.open()
        self.post_message(EngineReady())

    @work(thread=True, group="warm", exit_on_error=False)
    def warm_model(self) -> None:
        # Loading the model overlaps opening the database; the first search would otherwise wait for both in turn.
        self.bridge.warm_model()

    def _deliver_newer(self, group: str, asked: int, message) -> None:
        """Post the answer of a refresh asked `asked`-th unless one asked after it was posted already. A call that
        takes no argument, asked after a write, answers with the write whether or not a newer refresh replaced its
        worker: the watcher's event for the same write came while it ran, and dropping it (as `_deliver` does) left
        a forgotten memory in pane 1 until the last refresh came back, 3-8 s under load."""
        with self._painted_lock:
            if asked < self._painted.get(group, 0):
                return
            self._painted[group] = asked
            # Posted under the lock: the queue's order is the posts' order, so an older answer checked first but
            # posted after a newer one would be painted over it.
            self.post_message(message)

    @work(thread=True, exclusive=True, group="what", exit_on_error=False)
    def load_what(self) -> None:
        asked = next(self._asked)
        self._deliver_newer("what", asked, WhatLoaded(self.bridge.what(self.session)))

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False)
    def load_timeline(self) -> None:
        asked = next(self._asked)
        self._deliver_newer("timeline", asked, TimelineLoaded(self.bridge.timeline()))

    @work(thread=True, exclusive=True, group="graph", exit_on_error=False)
    def load_graph(self, node: Key | None) -> None:
        try:
            centre, label, found = self.bridge.graph(node, self.session)
        except CortexError as exc:
            self._deliver(EngineFailed(str(exc)) if node is not None else GraphLoaded(None, str(exc), []))
            return
        self._deliver(GraphLoaded(centre, label, found, chosen=node is not None))

    def search(self, text: str, typed: bool = False) -> None:
        """Search for what the box holds; the result message carries the raw text so the pane can tell whether it
        still answers the box (the engine's own query has the inline filters taken out). Only a `typed` search waits
        out the debounce: the start-up's and a refresh's have no next key to wait for (the first one waited 0.15 s
        after the database opened, a sixth of the attached dashboard's time to fill every pane)."""
        self.searched = normalised(text)
        self.run_search(text, self.SEARCH_DEBOUNCE_S if typed else 0.0)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, text: str, debounce: float) -> None:
        # Each key starts a worker that replaces (cancels) the one before. A thread worker cannot be stopped once
        # it is in the engine, so it waits out the debounce first and runs only if no newer key replaced it.
        if debounce:
            time.sleep(debounce)
        if get_current_worker().is_cancelled:
            return
        self._deliver(SearchFinished(self.bridge.search(pane_search(text, self.session)), text))

    @property
    def meter_task(self) -> str:
        """The task the meter selects for: the typed one, or else what you work on. (Not `task`: that is Textual's
        asyncio task of the screen's message loop.)"""
        return self.task_text.strip() or self.implicit_task

    @work(thread=True, exclusive=True, group="select", exit_on_error=False)
    def run_select(self) -> None:
        if not self.meter_task:
            return
        fmt = self.fmt
        request = SelectRequest(self.meter_task, self.budget, pins=self.pins, excluded=self.excluded, fmt=fmt,
                                purpose=self.purpose, session=self.session)
        selection = self.bridge.select(request)
        if not get_current_worker().is_cancelled:
            from ...core.context.assemble import token_shares

            assembled = self.bridge.assemble(selection, fmt)
            # Rendered here, off the screen's thread: the meter's rows and its frame then add up to its total.
            dropped = [item for key, item in self.dropped.items() if key in request.excluded]
            self._deliver(SelectionMade(selection, replace(assembled, shares=token_shares(selection, assembled)),
                                        restore_adds(selection, assembled, dropped)))

    @work(thread=True, exclusive=True, group="copy", exit_on_error=False)
    def copy_context(self) -> None:
        # The text the meter counted, not a fresh assembly: what is copied is exactly what was shown.
        assembled = self.assembled
        if assembled is None:
            self.post_message(EngineFailed("nothing selected yet: type a task in search and press t"))
            return
        result = self.bridge.copy(assembled, osc52=lambda text: self.app.call_from_thread(self.app.copy_to_clipboard, text))
        self.post_message(ContextCopied(assembled, result))

    @work(thread=True, exclusive=True, group="index", exit_on_error=False)
    def index_in_background(self) -> None:
        worker = get_current_worker()

        def post(message: Message) -> None:
            self.post_message(message)

        report, status = self.bridge.index(lambda p: post(IndexProgressed(p)), lambda: worker.is_cancelled)
        if worker.is_cancelled or report is None or status is None:  # (None, None): stopped before it ended
            return
        self.post_message(IndexFinished(report, status))
        self.bridge.start_watcher(WatchEvents(
            update=lambda update: post(IndexChanged(update)),
            memories=lambda: post(MemoriesChanged()),
            replaced=lambda: post(DatabaseReplaced()),
            indexed=lambda report, status: post(IndexFinished(report, status)),
            failed=lambda text: post(EngineFailed(text)),
        ))

    @work(thread=True, group="memory", exit_on_error=False)
    def save_memory(self, draft: MemoryDraft, editing: Memory | None, check_near: bool = True) -> None:
        """`check_near`: a new memory that says what an active one says is offered as its new version first."""
        try:
            result = self.bridge.revise(editing.id, draft) if editing else self.bridge.remember(draft, check_near)
        except Exception as exc:
            # The form is closed by now: it opens again with what was typed, and the error is reported as before.
            self.post_message(MemoryRefused(draft, editing, one_line(exc)))
            raise
        if result.outcome == "near_duplicate":
            self.post_message(NearDuplicate(draft, result.memory))
            return
        verb = {"created": "remembered", "new_version": f"saved version {result.memory.version} of", "duplicate": "already known:"}
        self.post_message(MemorySaved(f"{verb[result.outcome]} {clip(result.memory.title, 80)}"))

    @work(thread=True, exclusive=True, group="fetch", exit_on_error=False)
    def fetch_memory(self, memory_id: str, then: str) -> None:
        self._deliver(MemoryFetched(self.bridge.memory(memory_id), then))

    @work(thread=True, group="memory", exit_on_error=False)
    def confirm_memory(self, memory: Memory) -> None:
        confirmed = self.bridge.confirm(memory.id)
        self.post_message(MemorySaved(f"confirmed for the code as it is now: {clip(confirmed.title, 60)}"))

    @work(thread=True, group="memory", exit_on_error=False)
    def change_memory(self, memory: Memory, close_task: bool) -> None:
        title = clip(memory.title, 60)
        if close_task:
            self.bridge.set_task_state(memory.id, "done")
            self.post_message(MemorySaved(f"closed the task {title} (u reopens it)", Undo("close", title, memory=memory)))
        else:
            self.bridge.forget(memory.id)
            self.post_message(MemorySaved(f"forgot {title} (u brings it back)", Undo("forget", title, memory=memory)))

    @work(thread=True, group="memory", exit_on_error=False)
    def undo_memory_change(self, undo: Undo) -> None:
        memory = undo.memory
        if memory is None:  # a dropped item: the screen restores it
            return
        if undo.change == "close":
            self.bridge.set_task_state(memory.id, "open")
            self.post_message(MemorySaved(f"reopened the task {undo.label}"))
        else:
            restored = self.bridge.restore(memory)
            self.post_message(MemorySaved(f"brought back {undo.label} ({restored.id}, as it was)"))

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(one_line(event.worker.error), severity="error", timeout=6, markup=False)

    @on(Worker.StateChanged)
    def _worker_busy(self, event: Worker.StateChanged) -> None:
        """A pane whose work runs longer than BUSY_AFTER_S says so in its border (and its tab, when narrow) until
        the last worker of its group ends; a newer worker of the group has replaced the older ones by then."""
        group = event.worker.group
        if group not in BUSY:
            return
        if event.state == WorkerState.RUNNING:
            # A search first waits out the typing debounce: it is busy only once it runs longer than that.
            wait = BUSY_AFTER_S + (self.SEARCH_DEBOUNCE_S if group == "search" else 0)
            self.set_timer(wait, lambda: self._show_busy(group))
        elif event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            self._show_busy(group)

    def _show_busy(self, group: str) -> None:
        name, doing = BUSY[group]
        pane = self.query_one(f"#{name}", Pane) if name else self._focused_pane()
        if pane is None:
            return
        running = any(w.group == group and w.is_running for w in self.workers)
        pane.set_busy(doing if running else "")
        if name:
            for tab in self.query(f"#tab-{name}"):  # the narrow layout's Tab, once it was made
                tab.label = self.tab_label(name)  # type: ignore[attr-defined]

    def tab_label(self, name: str) -> str:
        """A pane's tab in the narrow layout: its number and name, and ⋯ while the pane says it is busy."""
        busy = any(pane.has_class("busy") for pane in self.query(f"#{name}").results(Pane))  # none yet in compose
        return f"{PANES.index(name) + 1} {name}" + (" ⋯" if busy else "")

    def _focused_pane(self) -> Pane | None:
        """The pane that has the keyboard (the search box belongs to pane 2)."""
        node: DOMNode | None = self.focused
        while node is not None and not isinstance(node, Pane):
            node = node.parent
        return node if isinstance(node, Pane) else None


def one_line(error: BaseException) -> str:
    """A worker's error as one line for a toast or the memory form."""
    text = str(error) if isinstance(error, CortexError) else f"{type(error).__name__}: {error}"
    return clip(text.splitlines()[0], 300) if text.strip() else type(error).__name__
