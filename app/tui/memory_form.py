"""The form for a new memory or a new version of one."""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, TextArea

from ...core.records import KINDS, Memory, MemoryDraft
from ...widgets.keymap import bindings


class MemoryForm(ModalScreen[MemoryDraft | None]):
    """Kind, title, text, tags and files; ctrl+s saves, escape cancels. Opened again with the `draft` the engine
    refused and its `error`, so nothing typed is lost."""

    DEFAULT_CSS = """
    MemoryForm { align: center middle; }
    MemoryForm > Vertical { width: 84; height: auto; max-height: 95%; border: round $primary; background: $panel; padding: 1 2; }
    MemoryForm TextArea { height: 8; }
    MemoryForm Horizontal { height: auto; align-horizontal: right; }
    MemoryForm #form-error { color: $error; height: auto; width: 100%; }
    """
    BINDINGS = bindings("memory")

    def __init__(self, files: tuple[str, ...] = (), editing: Memory | None = None, draft: MemoryDraft | None = None,
                 error: str = "") -> None:
        super().__init__()
        self.files = files
        self.editing = editing
        self.draft = draft
        self.error = error

    def compose(self) -> ComposeResult:
        heading = "[b]Edit memory (saves a new version)[/b]" if self.editing else "[b]New memory[/b]"
        m = self.draft or self.editing
        with Vertical():
            yield Label(heading)
            yield Select([(k, k) for k in KINDS], value=m.kind if m else "note", allow_blank=False, id="form-kind")
            yield Input(m.title if m else "", placeholder="title (optional)", id="form-title")
            yield TextArea(m.text if m else "", id="form-text")
            yield Input(", ".join(m.tags) if m else "", placeholder="tags, comma separated", id="form-tags")
            yield Input(", ".join(m.files if m else self.files), placeholder="related files", id="form-files")
            yield Label(Text(self.error), id="form-error")
            with Horizontal():
                yield Button("Cancel", id="form-cancel")
                yield Button("Save (ctrl+s)", variant="primary", id="form-save")

    def on_mount(self) -> None:
        text = self.query_one(TextArea)
        text.focus()
        # Editing goes on from the end of the text, as in any editor; typing at the start prepended to it.
        text.move_cursor(text.document.end)
        self.initial = self._values()

    def _values(self) -> tuple[str, ...]:
        return (str(self.query_one(Select).value), self.query_one(TextArea).text,
                *(self.query_one(f"#form-{name}", Input).value for name in ("title", "tags", "files")))

    def on_key(self, event: events.Key) -> None:
        """Keys typed in the same burst as the key that opened the form were routed to the form itself, as no
        widget had focus yet (the focus set on mount is deferred): they are the memory's first words, handed on in
        order. The text box keeps the keys routed to it, so a printable key reaching the form while the text box
        has focus is one of those."""
        text = self.query_one(TextArea)
        if self.focused in (None, text) and event.is_printable:
            event.stop()
            text.post_message(events.Key(event.key, event.character))

    @on(Button.Pressed, "#form-save")
    def action_save(self) -> None:
        text = self.query_one(TextArea).text
        if not text.strip():
            self.query_one("#form-error", Label).update("the text is empty")
            return
        split = lambda value: tuple(v.strip() for v in value.split(",") if v.strip())  # noqa: E731
        self.dismiss(MemoryDraft(
            text=text,
            kind=str(self.query_one(Select).value),
            title=self.query_one("#form-title", Input).value,
            tags=split(self.query_one("#form-tags", Input).value),
            files=split(self.query_one("#form-files", Input).value),
        ))

    @on(Button.Pressed, "#form-cancel")
    def action_cancel(self) -> None:
        """Close the form; what was typed is lost, so a changed form asks first."""
        if self._values() == self.initial:
            self.dismiss(None)
            return
        from .confirm import ConfirmScreen

        subject = self.query_one("#form-title", Input).value or self.query_one(TextArea).text
        self.app.push_screen(ConfirmScreen("Discard your changes to this memory?", subject, undoable=False),
                             lambda yes: yes and self.dismiss(None))
