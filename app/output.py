"""How the CLI prints: JSON when asked, rich tables on a terminal, plain lines when piped."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, is_dataclass
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


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


def print_json(data) -> None:
    sys.stdout.write(json.dumps(data, default=_default, ensure_ascii=False, indent=2) + "\n")


def plain(data):
    """Engine records as JSON-ready values (dates as ISO strings, dataclasses as dicts)."""
    return json.loads(json.dumps(data, default=_default, ensure_ascii=False))


def selection_item_json(i) -> dict:
    out = {"kind": i.kind, "provenance": i.provenance, "tokens": i.tokens, "score": i.value, "signals": i.signals}
    if i.kind == "memory":
        out["id"] = i.memory.id
    else:
        out["path"] = i.path
    return out


def table(columns: list[str], rows: list[list[str]], title: str | None = None) -> None:
    if not console.is_terminal:
        for row in rows:
            sys.stdout.write("\t".join(row) + "\n")
        return
    out = Table(*columns, title=title, show_lines=False, header_style="bold")
    for row in rows:
        out.add_row(*row)
    console.print(out)


def age(stamp: datetime) -> str:
    from datetime import timezone

    seconds = (datetime.now(timezone.utc) - stamp).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return "now"


@contextmanager
def progress_bar(description: str) -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal; nothing when output is piped."""
    if not err_console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True,
    ) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
