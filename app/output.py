"""How the CLI prints: JSON when asked, rich tables on a terminal, plain lines when piped."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ..core.answers import IndexProgress
from ..core.index.progress import ProgressClock
from ..core.secrets.secrets import redact_json, redacted
from ..core.text import escaped, one_line, visible
from .terminal_size import usable_size

_DROPPED = dict.fromkeys(map(ord, "\a\b\v\f\r"))
"""The control characters rich deletes from printed text (a BEL in a file name vanished from the answer): written
as the other controls are before rich sees them (see `_TextConsole.kept`)."""


class _TextConsole(Console):
    """The CLI's console. Strings are never read as markup (a commit subject or a title holding `[/]` is text, not
    a closing tag), and secrets are redacted on the way out, for rows stored before every field was checked: this
    is the one place every text answer passes through, as `plain` is for JSON. Styles go in `style=` or `styled`."""

    def print(self, *objects, **kwargs) -> None:
        kwargs.setdefault("markup", False)
        # Piped output is read by programs and pagers: a line is never broken at the terminal's (or rich's default
        # 80) width; on a terminal rich wraps as usual.
        kwargs.setdefault("soft_wrap", not self.is_terminal)
        super().print(*(self.kept(o) if isinstance(o, str) else o for o in objects), **kwargs)

    def kept(self, text: str) -> str:
        """The text redacted, with the controls rich would delete (`_DROPPED`) already shown as `_render_buffer`
        shows every other one (`␇` on a terminal, `\\x07` piped). A secret split by one of them
        (`AKIA\\bZ7QW...`) is recognised as it would read with the control gone, and redacted whole."""
        text = text.replace("\r\n", "\n")  # a CRLF line ending is a line ending, not a control to show
        joined = text.translate(_DROPPED)
        if joined == text:
            return redacted(text)
        safe = redacted(joined)
        return safe if safe != joined else redacted((visible if self.is_terminal else escaped)(text))

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        """On a terminal, control characters in the text (an escape sequence in a memory, a commit subject or a
        file) are shown as visible symbols, as the dashboard shows them, so they cannot drive the terminal (set its
        title, write the clipboard, clear the screen); rich's own styles are added after this. Piped output gets
        them as escapes (`\\x1b`), so a program or a pager reading it never meets one either."""
        shown = visible if self.is_terminal else escaped
        buffer = [s if s.control else Segment(shown(s.text), s.style) for s in buffer]
        return super()._render_buffer(buffer)


def _default(value):
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "to_json"):
        return value.to_json()
    if is_dataclass(value):
        return asdict(value)
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def plain(data):
    """Engine records as JSON-ready values (dates as ISO strings, dataclasses as dicts), secrets redacted: new rows
    never hold one, and this is the one place every JSON answer of the CLI and the MCP server passes through."""
    return redact_json(json.loads(json.dumps(data, default=_default, ensure_ascii=False)))


class _ProgressText:
    """What a progress display says, the same on a bar and in lines: `indexing: embedding 640/2,048 chunks (31%) ·
    24/s · about 1 min left` (the phase, how far, the rate and an estimate once a phase has run a while)."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.clock = ProgressClock()

    def __call__(self, done: int, total: int, phase: str = "") -> str:
        line = self.clock.update(IndexProgress(phase or self.description, done, total)).line()
        return f"{self.description}: {line}" if phase else line


class _ProgressLines:
    """Progress as plain lines on standard error, for logs and CI where a bar cannot redraw: one line when the phase
    changes, at most one every few seconds within a phase and one when it is done, so a long run is never silent,
    never floods, and a log ends on how far it got."""

    def __init__(self, description: str, stream: TextIO, every_s: float = 2.0) -> None:
        self.text = _ProgressText(description)
        self.stream = stream
        self.every_s = every_s
        self.phase: str | None = None
        self.at = 0.0

    def __call__(self, done: int, total: int, phase: str = "") -> None:
        now = time.monotonic()
        line = self.text(done, total, phase)  # every event, so the rate is timed from the phase's first one
        finished = total > 0 and done >= total  # a phase's last line is always said: a log ends on where it got
        if phase == self.phase and now - self.at < self.every_s and not finished:
            return
        self.phase, self.at = phase, now
        self.stream.write(f"cortex: {line}\n")
        self.stream.flush()


class Output:
    """Where one command prints: its standard output and error (the client's, when the resident server runs it),
    each with a console that sees that stream's terminal (or not) and the command's environment (NO_COLOR,
    COLUMNS, TERM), never this process's."""

    def __init__(self, stdout: TextIO, stderr: TextIO, env: Mapping[str, str]) -> None:
        self.stdout = stdout
        self.stderr = stderr
        env = {**env, **usable_size(env)}
        self.console = _TextConsole(file=stdout, highlight=False, _environ=env)
        self.err_console = _TextConsole(file=stderr, highlight=False, _environ=env)

    def line(self, *parts: str | tuple[str, str]) -> None:
        """Print one line of plain and styled parts, `line((title, "bold"), "  ", (where, "dim"))`, each redacted and
        kept whole (`_TextConsole.kept`) and on the line (a newline in a title or a path is printed as `\\n`)."""
        keep = self.console.kept
        self.console.print(Text.assemble(*((keep(one_line(p[0])), p[1]) if isinstance(p, tuple) else keep(one_line(p))
                                           for p in parts)))

    def json(self, data) -> None:
        self.stdout.write(json.dumps(plain(data), ensure_ascii=False, indent=2) + "\n")

    def warn(self, text: str) -> None:
        """One line on standard error, verbatim (`cortex: warning: ...`)."""
        self.stderr.write(text + "\n")

    def table(self, columns: list[str], rows: list[list[str]], title: str | None = None) -> None:
        if not self.console.is_terminal:  # a row a line, cells apart by tabs: neither may come from a cell
            for row in rows:
                self.stdout.write("\t".join(escaped(redacted(one_line(cell))) for cell in row) + "\n")
            return
        out = Table(*columns, title=title, show_lines=False, header_style="bold")
        for row in rows:
            out.add_row(*(Text(self.console.kept(one_line(cell))) for cell in row))
        self.console.print(out)

    @contextmanager
    def progress_bar(self, description: str) -> Iterator[Callable[..., None]]:
        """`update(done, total, phase="")`: a rich progress bar on a terminal, progress lines when standard error is
        not one; both say the phase, done/total, the rate and what is left (`_ProgressText`)."""
        if not self.err_console.is_terminal:
            yield _ProgressLines(description, self.stderr)
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        text = _ProgressText(description)
        # The description is text, styled as a whole: a column given as a markup string is read as markup only when
        # the console prints with markup, and this console never does (its `print`), so the bar showed the tag.
        with Progress(
            BarColumn(), TextColumn("{task.description}", style="progress.description", markup=False),
            TimeElapsedColumn(), console=self.err_console, transient=True,
        ) as bar:
            task = bar.add_task(description, total=None)

            def update(done: int, total: int, phase: str = "") -> None:
                bar.update(task, completed=done, total=total or None, description=text(done, total, phase))

            yield update
