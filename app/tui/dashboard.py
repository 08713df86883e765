"""The dashboard screen: composes the five panes, runs every engine call in a thread worker, routes results."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from textual import on
from textual.actions import SkipAction
from textual.actions import parse as parse_action
from textual.app import ComposeResult
from textual.containers import Grid
from textual.notifications import SeverityLevel
from textual.widget import Widget
from textual.widgets import Input, Static

from ...core.context.purpose_names import PURPOSES
from ...core.git.gitctx import implicit_query
from ...core.keys import Key
from ...core.records import Memory, MemoryDraft
from ...widgets.budget_pane import BudgetPane, BudgetView, unfit_pins
from ...widgets.format import clip, styled
from ...widgets.graph_pane import GraphPane
from ...widgets.keymap import acting_key, bindings, pane_bindings
from ...widgets.pane import Pane, Target
from ...widgets.search_pane import SearchPane, normalised
from ...widgets.timeline_pane import TimelinePane
from ...widgets.what_pane import WhatPane
from . import collector
from .dashboard_work import FIRST_PANES, PANES, DashboardWork
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
from .steady_footer import SteadyFooter

if TYPE_CHECKING:  # the narrow layout's tabs load when it is first narrow (see _narrow_tabs)
    from textual.widgets import Tabs

FORMATS = ("markdown", "xml", "json")
INDEX_WAIT_S = 2.0
"""The index pass starts once the first panes are filled (FIRST_PANES), or this long after the database opened."""
COLLECTOR_WAIT_S = 5.0
"""The garbage collector held off for the start (`collector`) runs again once the first panes are filled, or this
long after the screen was mounted (a start that fails never fills them)."""
NARROW_WIDTH = 110


class DashboardScreen(DashboardWork):
    """Five live panes over one repository."""

    # The item keys first: the footer lists them before the global ones, so a narrow footer keeps the pane's own.
    BINDINGS = bindings("item") + bindings("dashboard") + pane_bindings()
    AUTO_FOCUS = "#what-list"
    """Pane 1's list has the keyboard from the start. Textual's default takes the first focusable widget, the
    narrow layout's tabs (hidden when wide): moving the focus on from them restyled every pane twice before the first
    frame (`:focus-within`)."""

    def compose(self) -> ComposeResult:
        # Decided before the first frame: the resize handler comes after it, and an 80-column terminal was first
        # painted with all five panes squashed side by side.
        narrow = self.app.size.width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        yield Static("", id="topbar")
        if narrow:
            yield self._narrow_tabs(PANES[0])  # the first pane is the active one until a key says otherwise
        with Grid(id="grid"):
            yield WhatPane(id="what", classes="active")
            yield SearchPane(id="search")
            yield GraphPane(id="graph")
            yield TimelinePane(id="timeline")
            yield BudgetPane(id="budget")
        yield SteadyFooter()

    def on_mount(self) -> None:
        self._topbar("opening the database…")
        self.start_up()
        self.set_timer(COLLECTOR_WAIT_S, collector.release)

    def on_unmount(self) -> None:
        self.bridge.stop()

    def _narrow_tabs(self, active: str) -> Tabs:
        """The tabs that stand for the panes when the terminal is too narrow for all five. Made the first time it is:
        a wide dashboard never shows them, and their ten widgets cost its first frame their styles and mounting (and
        their module its imports)."""
        from textual.widgets import Tab, Tabs

        return Tabs(*[Tab(self.tab_label(name), id=f"tab-{name}") for name in PANES], id="narrow-tabs",
                    active=f"tab-{active}")

    async def on_resize(self, event) -> None:
        narrow = event.size.width < NARROW_WIDTH
        self.set_class(narrow, "narrow")
        if narrow and not self.query("#narrow-tabs"):
            await self.mount(self._narrow_tabs(self.active_pane), before="#grid")
        self._show_active()
        if event.size.width < 60 or event.size.height < 16:
            self.notify("the terminal is small: widen it to see all five panes", severity="warning", timeout=3,
                        markup=False)

    # --- workers: every engine call runs here, never on the UI thread --------------------------------------

    def refresh_all(self) -> None:
        self.load_what()
        self.load_timeline()
        self.load_graph(self.graph_centre)

    # --- results arriving ------------------------------------------------------------------------------------

    @on(EngineReady)
    def _ready(self) -> None:
        self._topbar("indexing…")
        self.refresh_all()
        self.search(self.query_one(SearchPane).text)
        if self.meter_task:
            self._select_when_filled()
        # The index pass (the server's, when attached) waits for the first panes: it would take the CPU their calls
        # need, on the server and here, and a pass that finds nothing to do changes nothing they show.
        self.set_timer(INDEX_WAIT_S, self._start_index)

    @on(WhatLoaded)
    def _what(self, message: WhatLoaded) -> None:
        self.query_one(WhatPane).show(message.what)
        self._loaded("what")
        implicit = implicit_query(message.what.git)
        if implicit != self.implicit_task:
            self.implicit_task = implicit
            if not self.task_text.strip():
                self._select_when_filled()
        git = message.what.git
        self.working_change = bool(git.changed_files)
        self._where = f"{git.root.name} on {git.branch}" if git.branch else f"{git.root.name} ({'detached' if git.detached else 'no git'})"
        self._topbar()

    @on(TimelineLoaded)
    def _timeline(self, message: TimelineLoaded) -> None:
        self.query_one(TimelinePane).show(message.timeline)
        self._loaded("timeline")
        if message.then_ready:
            self.call_after_refresh(self.post_message, EngineReady())

    @on(GraphLoaded)
    def _graph(self, message: GraphLoaded) -> None:
        if message.chosen:
            self.graph_centre = message.centre
        self.query_one(GraphPane).show(message.centre, message.label, message.neighbours)
        self._loaded("graph")

    @on(SearchFinished)
    def _search(self, message: SearchFinished) -> None:
        self.query_one(SearchPane).show(message.results, message.request)
        self._loaded("search")

    def _loaded(self, name: str) -> None:
        self.loaded.add(name)
        if set(FIRST_PANES) <= self.loaded:
            collector.release()
            if self.select_waits:
                self.select_waits = False
                self.run_select()
            self._start_index()

    def _select_when_filled(self) -> None:
        """Pane 5's selection at start, once the first panes are filled: its answer is rendered in this process
        (the first render builds the secret scanner, about 0.3 s of CPU), which held up their frame when the
        selection came back first."""
        if set(FIRST_PANES) <= self.loaded:
            self.run_select()
        else:
            self.select_waits = True

    def _start_index(self) -> None:
        if not self.index_started:
            self.index_started = True
            self.index_in_background()

    @on(SelectionMade)
    def _selection(self, message: SelectionMade) -> None:
        if (message.assembled.format != self.fmt or message.selection.budget != self.budget
                or message.selection.purpose != self.purpose):
            # `f`, `s`, `+` or `-` was pressed while this was selected: the selection for them is on its way.
            return
        self.selection, self.assembled, self.restores = message.selection, message.assembled, message.restores
        unfit = {i.key: i for i in unfit_pins(message.selection, self.pins)}
        for key in unfit.keys() - self.unfit_pins:
            # Said once per pin that cannot fit, loudly: the pane's bar keeps saying it while the pin stays.
            part = " (its smallest part)" if unfit[key].kind == "file" else ""
            self.notify(f"pinned but too large for the budget: {clip(unfit[key].provenance, 80)}{part} needs "
                        f"{unfit[key].tokens:,} tokens of {message.selection.budget:,}; + raises the budget",
                        severity="warning", timeout=8, markup=False)
        self.unfit_pins = set(unfit)
        self._show_budget()
        self.loaded.add("select")

    def _show_budget(self, acted_on: Key | None = None) -> None:
        """Show the selection; `acted_on`: the item just pinned, dropped or restored, shown at once (its pin mark,
        its dropped row) while the selection that answers the change is made."""
        if self.selection is None or self.assembled is None:
            return
        dropped = tuple(item for key, item in self.dropped.items() if key in self.excluded)
        implicit = self.selection.task == self.implicit_task and not self.task_text.strip()
        pane = self.query_one(BudgetPane)
        if acted_on is not None:
            pane.acted_on = acted_on
        pane.show(BudgetView(self.selection, self.assembled, self.pins, dropped, implicit, self.restores,
                             waiting=acted_on is not None))

    @on(ContextCopied)
    def _copied(self, message: ContextCopied) -> None:
        note = f"; {message.assembled.redactions} secret(s) redacted" if message.assembled.redactions else ""
        severity: SeverityLevel = "warning" if message.result.method == "file" else "information"
        self.notify(message.result.describe(message.assembled.tokens) + note, severity=severity, timeout=6, markup=False)

    @on(IndexProgressed)
    def _index_progress(self, message: IndexProgressed) -> None:
        p = message.progress
        self._topbar(f"indexing: {self.progress_clock.update(p).line()}")
        if p.phase == "embedding" and "lexical" not in self.loaded:
            # The files and their text are in: what the panes say about the code ("not indexed yet", no
            # neighbours) is out of date now, not only once every chunk is embedded (minutes on a large tree).
            self.loaded.add("lexical")
            self._refresh_everything()

    @on(IndexFinished)
    def _index_done(self, message: IndexFinished) -> None:
        r, status = message.report, message.status
        state = "index fresh" if status.fresh else "index stale"
        self._topbar(f"{state} · {status.indexed_files:,} files · {status.embeddings_line()}")
        self.loaded.add("index")
        # A selection indexes the working change's files lexically on its own (core/usecases/context.py), so with a
        # task and a working change the panes may be stale even when this pass found nothing left to change;
        # otherwise a pass that changed nothing leaves them as they are. (With any task, every start read every
        # pane twice, the second time as its first full frame was being painted.)
        if not (r.changed or r.removed or r.embedded or (self.meter_task and self.working_change)):
            return
        self._refresh_everything()

    @on(IndexChanged)
    def _index_changed(self, message: IndexChanged) -> None:
        self._topbar(message.update.summary())
        self._refresh_everything()

    @on(MemoriesChanged)
    def _memories_changed(self) -> None:
        # Memories feed the meter too: a save, edit, forget or confirm may change what goes in.
        self._refresh_everything()

    @on(DatabaseReplaced)
    def _database_replaced(self) -> None:
        self._topbar("the database was replaced: indexing again…")
        self._refresh_everything()

    def _refresh_everything(self) -> None:
        self.refresh_all()
        self.search(self.query_one(SearchPane).text)
        if self.meter_task:
            self.run_select()

    @on(MemorySaved)
    def _memory_saved(self, message: MemorySaved) -> None:
        if message.undo is not None:
            self.undo_stack.append(message.undo)
        self.notify(message.summary, markup=False)
        self._refresh_everything()

    @on(NearDuplicate)
    def _near_duplicate(self, message: NearDuplicate) -> None:
        def answer(as_version: bool | None) -> None:
            if as_version:
                self.save_memory(message.draft, message.match)
            else:
                self.save_memory(message.draft, None, check_near=False)

        from .confirm import ConfirmScreen

        question = "This says what a memory already says. Save it as a new version of that one (n keeps both)?"
        self.app.push_screen(ConfirmScreen(question, message.match.title, undoable=False), answer)

    @on(MemoryRefused)
    def _memory_refused(self, message: MemoryRefused) -> None:
        from .memory_form import MemoryForm

        form = MemoryForm(editing=message.editing, draft=message.draft, error=message.error)
        self.app.push_screen(form, self._saving(message.editing))

    @on(EngineFailed)
    def _failed(self, message: EngineFailed) -> None:
        self.notify(message.text, severity="warning", timeout=6, markup=False)

    # --- what the panes ask for ------------------------------------------------------------------------------

    @on(SearchPane.QueryChanged)
    def _query(self, message: SearchPane.QueryChanged) -> None:
        # A trailing space or a second enter asks nothing new; the results shown already answer it.
        if normalised(message.text) != self.searched:
            self.search(message.text, typed=True)

    @on(WhatPane.EntryChosen)
    @on(GraphPane.Recentered)
    @on(TimelinePane.CommitChosen)
    def _recentre(self, message: WhatPane.EntryChosen | GraphPane.Recentered | TimelinePane.CommitChosen) -> None:
        self.load_graph(message.key)

    @on(SearchPane.HitChosen)
    def _hit(self, message: SearchPane.HitChosen) -> None:
        self.load_graph(message.hit.subject)

    @on(BudgetPane.ItemToggled)
    def _toggle(self, message: BudgetPane.ItemToggled) -> None:
        item = message.item
        key = item.key
        if message.change == "drop":
            label = item.memory.title if item.memory is not None else item.path
            self.undo_stack.append(Undo("drop", label, key=key, pinned=key in self.pins))
            self.excluded, self.pins = self.excluded | {key}, self.pins - {key}
            # A new dict, never changed in place: the selection's worker reads it from its thread.
            self.dropped = {**self.dropped, key: item}
        elif key in self.excluded:
            # Restoring (x), or pinning (p) a dropped item, brings it back.
            self._restore(key)
            if message.change == "pin":
                self.pins = self.pins | {key}
        else:
            self.pins = self.pins ^ {key}
        self._show_budget(acted_on=key)
        self.run_select()

    def _restore(self, key: Key) -> None:
        self.excluded = self.excluded - {key}
        self.dropped = {k: item for k, item in self.dropped.items() if k != key}

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        # Named, not `@on(Tabs.TabActivated)`: that would import the tabs' module with the dashboard's. The
        # narrow layout's are the screen's only tabs.
        # Each tab's id is `tab-` and its pane's name: looked up, not cut apart.
        pane = next((name for name in PANES if event.tab is not None and event.tab.id == f"tab-{name}"), None)
        if pane is not None:
            self.active_pane = pane

    def watch_active_pane(self) -> None:
        self._show_active()

    def _show_active(self) -> None:
        for name in PANES:
            self.query_one(f"#{name}").set_class(name == self.active_pane, "active")
        for tabs in self.query("#narrow-tabs"):
            tabs.active = f"tab-{self.active_pane}"  # type: ignore[attr-defined]  # the Tabs of _narrow_tabs

    # --- actions ---------------------------------------------------------------------------------------------

    def action_focus_search(self) -> None:
        self.active_pane = "search"
        self._focus_now(self.query_one("#search-input", Input))

    def action_focus_pane(self, number: int) -> None:
        """Focus the pane's list, never the search box: the next key is a command, not text."""
        name = PANES[number - 1]
        self.active_pane = name
        self._focus_now(self.query_one(f"#{name}", Pane).navigable())

    def action_key(self, action: str) -> None:
        """A priority key (see the keymap): typed into a text box it is text, so the action is skipped and the
        key handed on to the box; otherwise its action runs now, before the next key is routed."""
        if typing_into(self.focused):
            raise SkipAction()
        _, name, args = parse_action(action)
        getattr(self, f"action_{name}")(*args)

    def _focus_now(self, widget: Widget) -> None:
        """Move focus before the next queued key is routed: `Widget.focus()` defers the move, so keys typed in the
        same burst as `/` (a paste, a fast typist while the loop is busy) went to the old pane as commands."""
        self.set_focus(widget)
        if self.focused is not widget:
            widget.focus()

    def action_set_task(self) -> None:
        """The search text becomes the task; with the box empty, the meter goes back to what you work on."""
        text = self.query_one(SearchPane).text.strip()
        if not text and not self.task_text:
            self.notify("type the task in the search box first, then press t", severity="warning")
            return
        self.task_text, self.pins, self.excluded, self.dropped, self.restores = text, frozenset(), frozenset(), {}, {}
        self.undo_stack = [u for u in self.undo_stack if u.change != "drop"]
        if not self.query_one(BudgetPane).display or self.has_class("narrow"):
            # Behind a tab the pane's new title is not seen: say where the task went.
            self.notify(f"context task: {text[:80] or 'what you work on'} (see 5)", timeout=3, markup=False)
        self.run_select()

    def action_copy_context(self) -> None:
        self.copy_context()

    def action_budget(self, delta: int) -> None:
        self.budget = max(1000, self.budget + delta)
        self.notify(f"budget {self.budget:,} tokens", timeout=2)
        self.run_select()

    def action_cycle_format(self) -> None:
        self.fmt = FORMATS[(FORMATS.index(self.fmt) + 1) % len(FORMATS)]
        if self.selection is not None:
            # Selected again, not just re-rendered: the same budget holds as many items as fit in this format.
            self.run_select()

    def action_cycle_purpose(self) -> None:
        self.purpose = PURPOSES[(PURPOSES.index(self.purpose) + 1) % len(PURPOSES)]
        self.notify(f"context for: {self.purpose}", timeout=2)
        if self.selection is not None:
            # Selected again: the sections' headings are counted in the budget like everything copied.
            self.run_select()

    def action_new_memory(self) -> None:
        from .memory_form import MemoryForm

        self.app.push_screen(MemoryForm(files=self.bridge.changed_files()), self._saving(None))

    def _target(self) -> Target | None:
        pane = self._focused_pane()
        return pane.target() if pane is not None else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """An item key is live (and in the footer) only where the focused pane highlights an item it acts on, so
        the footer shows the keys of the pane in front of you; typed into a text box it is text."""
        name = str(parameters[0]).split("(", 1)[0] if action == "key" and parameters else action
        key = acting_key(name)
        if key is None:
            return True
        if typing_into(self.focused):
            return False
        target = self._target()
        return target is not None and target.key.kind in key.applies

    def action_edit_memory(self) -> None:
        self._with_memory("edit")

    def action_done_or_forget(self) -> None:
        self._with_memory("done_or_forget")

    def action_confirm_memory(self) -> None:
        self._with_memory("confirm")

    def _with_memory(self, then: str) -> None:
        target = self._target()
        if target is None or target.key.kind != "memory":
            self.notify("highlight a memory first (in any pane that lists one)", severity="warning")
        elif target.memory is not None:
            self._act_on_memory(target.memory, then)
        else:
            self.fetch_memory(target.key.id, then)  # the graph lists a memory by id and title only

    @on(MemoryFetched)
    def _fetched(self, message: MemoryFetched) -> None:
        self._act_on_memory(message.memory, message.then)

    def _act_on_memory(self, memory: Memory, then: str) -> None:
        if then == "edit":
            from .memory_form import MemoryForm

            self.app.push_screen(MemoryForm(editing=memory), self._saving(memory))
            return
        if then == "confirm":
            self.confirm_memory(memory)
            return
        close = memory.is_open_task
        question = "Close the task" if close else f"Forget this {memory.kind}"
        def answer(yes: bool | None) -> None:
            if yes:
                self.change_memory(memory, close_task=close)

        from .confirm import ConfirmScreen

        self.app.push_screen(ConfirmScreen(f"{question}?", memory.title), answer)

    def _saving(self, editing: Memory | None) -> Callable[[MemoryDraft | None], None]:
        """What a memory form's answer does: save the draft (a new version of `editing`), or nothing if cancelled."""
        def save(draft: MemoryDraft | None) -> None:
            if draft is not None:
                self.save_memory(draft, editing)

        return save

    def action_pin_item(self) -> None:
        target = self._target()
        key = target.context_key if target is not None else None
        if target is None or key is None:
            self.notify("highlight a memory or a file to pin it to the context", severity="warning")
            return
        if key in self.excluded:
            self._restore(key)
        self.pins = self.pins | {key}
        self.notify(f"pinned to the context: {clip(target.label, 80)}", timeout=3, markup=False)
        self._show_budget()
        self.run_select()

    def action_graph_item(self) -> None:
        target = self._target()
        if target is None:
            self.notify("highlight a memory, file or commit first", severity="warning")
            return
        self.load_graph(target.key)

    def action_zoom(self) -> None:
        """Give the focused pane the whole screen, or give the five their places back."""
        if self.maximized is not None:
            self.minimize()
            return
        pane = self._focused_pane()
        if pane is not None:
            self.maximize(pane, container=False)

    def action_undo(self) -> None:
        if not self.undo_stack:
            self.notify("nothing to undo", severity="warning", timeout=2)
            return
        undo = self.undo_stack.pop()
        if undo.key is not None:  # a dropped item (the others carry their memory)
            self._restore(undo.key)
            if undo.pinned:
                self.pins = self.pins | {undo.key}
            self._show_budget(acted_on=undo.key)
            self.run_select()
            self.notify(f"restored {clip(undo.label, 80)}", timeout=3, markup=False)
        else:
            self.undo_memory_change(undo)

    def action_refresh(self) -> None:
        self._refresh_everything()

    def action_help(self) -> None:
        from .help_screen import HelpScreen

        self.app.push_screen(HelpScreen())

    def action_repo_map(self) -> None:
        from .map_screen import MapScreen

        self.app.push_screen(MapScreen(self.bridge, self.task_text))

    def _topbar(self, status: str | None = None) -> None:
        if status is not None:
            self._status = status
        self.query_one("#topbar", Static).update(styled(("cortex", "bold"), f" · {clip(self._where, 120)} · {self._status}"))


def typing_into(widget: Widget | None) -> bool:
    """Whether the keys go into a text box: an input, or the memory form's text area (a TextArea exists only once
    the form's module imported it: the dashboard leaves Textual's text editor out of its start)."""
    if isinstance(widget, Input):
        return True
    editor = sys.modules.get("textual.widgets._text_area")
    return editor is not None and isinstance(widget, editor.TextArea)
