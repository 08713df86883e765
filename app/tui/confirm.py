"""A yes/no question before a change the person may regret (forgetting a memory, closing a task)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...widgets.format import clip, styled
from ...widgets.keymap import bindings


class ConfirmScreen(ModalScreen[bool]):
    """Dismisses with True on y, False on n or escape."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 70; height: auto; border: round $warning; background: $panel; padding: 1 2; }
    ConfirmScreen #confirm-keys { color: $text-muted; padding-top: 1; }
    """
    BINDINGS = bindings("confirm")

    def __init__(self, question: str, subject: str, undoable: bool = True) -> None:
        super().__init__()
        self.question = question
        self.subject = subject
        self.undoable = undoable
        """Whether `u` can take the change back afterwards (a forget or a close can; discarding typed text cannot)."""

    def compose(self) -> ComposeResult:
        with Vertical():
            text = styled((self.question, "bold"), " ", clip(self.subject, 200))
            text.no_wrap = False
            yield Static(text, id="confirm-question")
            after = " (u undoes it afterwards too)" if self.undoable else ""
            yield Static(Text(f"y: yes    n / esc: no{after}"), id="confirm-keys")
        yield Footer()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)
