"""Putting text on the clipboard from a terminal: native tools, then OSC 52, then a file. Always says which."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TOOLS = (
    ("pbcopy", ["pbcopy"]),
    ("wl-copy", ["wl-copy"]),
    ("xclip", ["xclip", "-selection", "clipboard"]),
    ("xsel", ["xsel", "--clipboard", "--input"]),
)
KEPT_COPIES = 10
"""Copies kept in the fallback directory: the newest few, so a day of copies does not grow `.cortex` without end."""
OSC52_MAX_BYTES = 74_994
"""Raw bytes whose base64 payload stays under 100,000 bytes, the limit of xterm and many terminals."""


@dataclass(frozen=True)
class CopyResult:
    """How the text was copied: `pbcopy`, `wl-copy`, `xclip`, `xsel`, `osc52` or `file` (then `path` says where)."""

    method: str
    bytes: int
    path: str | None = None
    detail: str = ""

    def describe(self, tokens: int | None = None) -> str:
        size = f"{tokens:,} tokens, " if tokens is not None else ""
        if self.method == "file":
            return f"clipboard unavailable ({self.detail}); wrote {size}{self.bytes:,} bytes to {self.path}"
        if self.method == "osc52":
            return (f"no clipboard tool: sent {size}{self.bytes:,} bytes as an OSC 52 terminal escape "
                    f"(if your terminal ignores it, the text is in {self.path})")
        return f"copied {size}{self.bytes:,} bytes via {self.method}"


def osc52_sequence(text: str) -> str:
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def copy(
    text: str,
    osc52: Callable[[str], None] | None = None,
    fallback_dir: Path | None = None,
    tools: tuple[tuple[str, list[str]], ...] = TOOLS,
    suffix: str = ".md",
) -> CopyResult:
    """Try each clipboard tool found on PATH; then OSC 52 through `osc52` (the dashboard passes Textual's
    `copy_to_clipboard`; the CLI writes the escape to its terminal) when the text is within the escape's size
    limit; then a file named with `suffix`, so that what opens it reads the format it holds."""
    data = text.encode("utf-8")
    failures = []
    for name, argv in tools:
        if shutil.which(argv[0]) is None:
            continue
        try:
            run = subprocess.run(argv, input=data, capture_output=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{name}: {exc}")
            continue
        if run.returncode == 0:
            return CopyResult(name, len(data))
        failures.append(f"{name} exited {run.returncode}")
    if osc52 is not None:
        if len(data) <= OSC52_MAX_BYTES:
            osc52(text)
            # Terminals that ignore OSC 52 say nothing, so the text is kept in a file as well.
            return CopyResult("osc52", len(data), str(_save(data, fallback_dir, suffix)))
        failures.append(f"{len(data):,} bytes is over the OSC 52 limit of {OSC52_MAX_BYTES:,}")
    path = _save(data, fallback_dir, suffix)
    return CopyResult("file", len(data), str(path), "; ".join(failures) or "no clipboard tool and no terminal escape")


def _save(data: bytes, directory: Path | None, suffix: str) -> Path:
    directory = directory or Path(tempfile.gettempdir())
    directory.mkdir(parents=True, exist_ok=True)
    # mkstemp: two copies in the same second (or from one process) must not overwrite each other; 0600 like the database.
    fd, name = tempfile.mkstemp(prefix=f"cortex-context-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=suffix,
                                dir=directory)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    _prune(directory, keep=Path(name))
    return Path(name)


def _prune(directory: Path, keep: Path) -> None:
    """Remove all but the newest `KEPT_COPIES` of our own copies; a file vanishing meanwhile
    (another copy pruning) is fine."""
    copies = []
    for path in directory.glob("cortex-context-*"):
        try:
            copies.append((path.stat().st_mtime_ns, path))
        except OSError:
            continue
    copies.sort(reverse=True)
    for _, path in copies[KEPT_COPIES:]:
        if path != keep:
            try:
                path.unlink(missing_ok=True)
            except OSError:  # another user's copy in a shared temporary directory
                continue


def terminal_osc52() -> Callable[[str], None] | None:
    """A writer of the OSC 52 escape to the controlling terminal, or None when there is none (piped, CI)."""
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY)
    except OSError:
        return None

    def write(text: str) -> None:
        try:
            os.write(fd, osc52_sequence(text).encode("ascii"))
        finally:
            os.close(fd)

    return write
