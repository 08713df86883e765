"""Every key of the dashboard in one table: the bindings, the footer, the help screen and the README are read from it.

A key belongs to one scope: `app` (works everywhere, even while typing), `dashboard` (the main screen, unless the
search box has the keyboard), `item` (the item highlighted in the focused pane, whichever pane lists it), `pane`
(every pane's list), `budget`, `search`, and the dialogs. An `item` key names the kinds of item it acts on
(`applies`): the footer shows it only while the focused pane highlights such an item, so the footer always reads as
the keys of the pane in front of you. Keys that a Textual
widget already answers to (enter in a list, esc in the search box) are listed with no action, so the help stays
complete without binding them twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding, BindingType

from ..core.keys import KeyKind


@dataclass(frozen=True)
class Key:
    """One row of the keymap."""

    id: str
    """Binding id (stable; Textual keymaps refer to it)."""
    keys: str
    """Textual key names, comma separated."""
    shown: str
    """How people write the key (help screen and README)."""
    action: str
    """The action, or "" when a widget handles the key itself."""
    label: str
    """Short footer label."""
    help: str
    """One line for the help screen, the README and the tooltip."""
    scope: str
    footer: bool = False
    priority: bool = False
    applies: tuple[KeyKind, ...] = ()
    """For `item` keys: the kinds of highlighted item it acts on (a memory, file, commit or symbol)."""


KEYMAP: tuple[Key, ...] = (
    Key("app.quit", "ctrl+q,ctrl+c", "ctrl+q / ctrl+c", "quit", "Quit", "quit, even while typing or while work runs",
        "app", priority=True),
    Key("dash.quit", "q", "q", "app.quit", "Quit", "quit", "dashboard", footer=True),
    # Help next to Quit: a narrow footer cuts its right end, and these two are what a newcomer looks for.
    Key("dash.help", "question_mark,f1", "? / f1", "help", "Help", "this help", "dashboard", footer=True),
    Key("dash.panes", "1,2,3,4,5", "1 … 5", "", "Panes",
        "focus a pane: what, search results, graph, timeline, context (never the search box)", "dashboard"),
    Key("dash.search", "slash", "/", "focus_search", "Search", "type in the search box", "dashboard", footer=True,
        priority=True),
    Key("search.submit", "", "enter (in the box)", "", "", "search now and move to the results", "search"),
    Key("search.leave", "", "esc (in the box)", "", "", "back to the results, the text kept", "search"),
    Key("pane.down", "j,down", "j / ↓", "cursor_down", "Down", "move down in the focused pane", "pane"),
    Key("pane.up", "k,up", "k / ↑", "cursor_up", "Up", "move up in the focused pane", "pane"),
    Key("pane.open", "", "enter", "", "", "in panes 1-4: re-centre the graph on the highlighted memory, file, commit or hit",
        "pane"),
    Key("pane.toggle", "", "space", "", "", "in the graph (3): open or close the highlighted group of neighbours",
        "pane"),
    Key("dash.task", "t", "t", "set_task", "Task", "use the search text as the task of the context budget",
        "dashboard", footer=True),
    Key("budget.drop", "x", "x", "drop", "Drop", "drop the highlighted context item, or restore a dropped one",
        "budget", footer=True),
    Key("budget.pin", "p", "p", "pin", "Pin/Unpin",
        "pin the highlighted context item (it goes in first, unless it alone is more than the budget has free: then "
        "it is out and pane 5 says so in red), or unpin it",
        "budget", footer=True),
    Key("dash.copy", "c", "c", "copy_context", "Copy", "copy the assembled context (what the meter counts)",
        "dashboard", footer=True),
    Key("dash.more", "plus,equals_sign", "+", "budget(2000)", "+Budget", "raise the token budget by 2,000",
        "dashboard"),
    Key("dash.less", "minus", "-", "budget(-2000)", "-Budget", "lower the token budget by 2,000", "dashboard"),
    Key("dash.format", "f", "f", "cycle_format", "Format", "switch the context format: markdown, xml, json",
        "dashboard"),
    Key("dash.purpose", "s", "s", "cycle_purpose", "Purpose",
        "switch who the context is for (its sections): general, assistant, planner, research, drafting",
        "dashboard"),
    Key("dash.new", "n", "n", "new_memory", "New",
        "new memory (files prefilled: the working change's indexed files, first 5)",
        "dashboard", priority=True, footer=True),
    Key("item.edit", "e", "e", "edit_memory", "Edit", "edit the highlighted memory, in any pane (a new version)",
        "item", priority=True, footer=True, applies=("memory",)),
    Key("item.done", "d", "d", "done_or_forget", "Done/Forget",
        "close the highlighted task, or forget the highlighted memory, in any pane (asks first)", "item",
        footer=True, applies=("memory",)),
    Key("item.confirm", "v", "v", "confirm_memory", "Confirm",
        "confirm the highlighted memory still holds after its code changed (it stops being flagged)", "item",
        footer=True, applies=("memory",)),
    Key("item.pin", "p", "p", "pin_item", "Pin",
        "pin the highlighted memory or file to the context (pane 5 keeps it in while it fits the budget, and says so "
        "in red when it cannot); in pane 5, pin or unpin", "item",
        footer=True, applies=("memory", "file")),
    Key("item.graph", "g", "g", "graph_item", "Graph",
        "re-centre the graph on the highlighted memory, file or commit, in any pane", "item", footer=True,
        applies=("memory", "file", "commit", "symbol")),
    Key("dash.undo", "u", "u", "undo", "Undo", "undo the last drop, forget or task close", "dashboard", footer=True),
    Key("dash.refresh", "r", "r", "refresh", "Refresh", "refresh every pane", "dashboard"),
    Key("dash.zoom", "z", "z", "zoom", "Zoom", "maximise the focused pane, or restore the five", "dashboard",
        footer=True),
    Key("dash.map", "m", "m", "repo_map", "Map",
        "the repo map: the most important definitions toward the meter's task (else the working change)",
        "dashboard"),
    Key("dash.palette", "", "ctrl+p", "", "", "command palette: every action, themes", "dashboard"),
    Key("confirm.yes", "y", "y", "answer(True)", "Yes", "confirm (forget, close)", "confirm", footer=True),
    Key("confirm.no", "n,escape", "n / esc", "answer(False)", "No", "keep it", "confirm", footer=True),
    Key("help.close", "escape,q,question_mark,f1", "esc / q / ? / f1", "dismiss", "Close", "close this help", "help"),
    Key("help.down", "j,down", "j / ↓", "scroll(1)", "Down", "scroll this help down", "help"),
    Key("help.up", "k,up", "k / ↑", "scroll(-1)", "Up", "scroll this help up", "help"),
    Key("map.close", "escape,q,m", "esc / q / m", "dismiss", "Close", "close the repo map", "map"),
    Key("map.down", "j,down", "j / ↓", "scroll(1)", "Down", "scroll the repo map down", "map"),
    Key("map.up", "k,up", "k / ↑", "scroll(-1)", "Up", "scroll the repo map up", "map"),
    Key("memory.save", "ctrl+s", "ctrl+s", "save", "Save", "save the memory in the form", "memory", footer=True),
    Key("memory.cancel", "escape", "esc (in the form)", "cancel", "Cancel", "close the form without saving",
        "memory", footer=True),
)


def bindings(scope: str) -> list[BindingType]:
    """The Textual bindings of one scope (rows without an action are documentation only).

    A dashboard key that moves the keyboard to a text box (`/`, 1-5, n, e) is a priority key: Textual routes each
    key to the focused widget as it reads it and runs an ordinary binding later, on the way back up, so keys
    typed in the same burst (a paste, a fast typist on a busy loop) went to the old pane as commands. Its action
    runs through the screen's `key` action, which lets it pass as text while a text box has focus."""
    out: list[BindingType] = []
    for key in KEYMAP:
        if key.scope != scope or not key.action or not key.keys:
            continue
        action = f"key({key.action!r})" if key.priority and key.scope in ("dashboard", "item") else key.action
        out.append(Binding(key.keys, action, key.label, show=key.footer, priority=key.priority, id=key.id,
                           tooltip=key.help))
    return out


def hint(scope: str) -> str:
    """The keys of a dialog's scope in one line for its border (`esc / q / m close · j / ↓ down · k / ↑ up`)."""
    return " · ".join(f"{k.shown} {k.label.lower()}" for k in KEYMAP if k.scope == scope and k.action)


def acting_key(action: str) -> Key | None:
    """The `item` key whose action this is (an action name without arguments), or None."""
    return next((k for k in KEYMAP if k.scope == "item" and k.action == action), None)


def pane_bindings() -> list[BindingType]:
    """Keys 1 to 5 focus the panes; one binding each so every pane has its own id."""
    return [Binding(str(n), f"key('focus_pane({n})')", f"Pane {n}", show=False, id=f"dash.pane{n}", priority=True,
                    tooltip=f"focus pane {n}") for n in range(1, 6)]
