"""Lance's panics kept off the terminal while the doctor reads damaged files.

Garbage in a data file can make Lance's decoder index out of range: Rust's panic hook then prints
"thread '…' panicked at …", the message, and with RUST_BACKTRACE a backtrace, straight to file descriptor 2, and
LanceDB raises the panic as an error the doctor reports in one line. The doctor reads every row of every table,
so it is the command most likely to meet one: while it reads, descriptor 2 goes to a temporary file, and what was
written there is passed on afterwards without the panics' blocks.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

_PANIC = re.compile(r"^thread '.*' (\(\d+\) )?panicked at ")
_LOCK = threading.Lock()


def without_panics(text: str) -> str:
    """`text` less each panic's block: from its "thread … panicked at" line to its closing "note: …" line (or the
    backtrace's last frame, when a block has no note)."""
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        if _PANIC.match(line):
            inside = True
            continue
        if inside:
            if line.startswith("note: "):
                inside = False
            elif not line.startswith((" ", "stack backtrace:")) and not line.rstrip().endswith(":"):
                # The message line(s) right after the header are part of the block; a log line after a backtrace
                # with no note ends it.
                if line.startswith("["):
                    inside = False
                    kept.append(line)
            continue
        kept.append(line)
    return "".join(kept)


@contextlib.contextmanager
def panics_kept_quiet() -> Iterator[None]:
    """Descriptor 2 into a temporary file for the block, then what it got less the panics, to where it was."""
    with _LOCK:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no descriptor 2 to redirect (a closed or replaced stream)
            yield
            return
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                with contextlib.suppress(OSError, ValueError):
                    sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                sink.seek(0)
                rest = without_panics(sink.read().decode("utf-8", "replace"))
                if rest:
                    os.write(2, rest.encode())
