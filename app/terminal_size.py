"""A terminal size a command can print in. Standard library only: the thin client uses it before it sends a command.

A terminal can report 0x0 (`script -qc "cortex ss hello" /dev/null`, a serial console, a container started
without a size): the client forwarded `COLUMNS=0` and the server's console, given no width to print in, printed
nothing and exited 0, where the command run in-process (whose console ignores a zero size) printed at 80 columns.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

FALLBACK = {"COLUMNS": "80", "LINES": "25"}
"""What rich itself assumes when it knows no size."""


def usable_size(env: Mapping[str, str]) -> dict[str, str]:
    """Replacements for `COLUMNS` and `LINES` in `env` that are set but not a positive whole number (0, empty,
    `abc`): rich's fallback. The ones that are usable, or unset, are left as they are."""
    fixed = {}
    for name, fallback in FALLBACK.items():
        value = env.get(name)
        if value is not None and not (value.strip().isdigit() and int(value) > 0):
            fixed[name] = fallback
    return fixed


def terminal_columns() -> int:
    """`shutil.get_terminal_size().columns`, the width argparse formats help for: `$COLUMNS` when it is a positive
    number, else the width of the terminal on standard output, else 80. Without shutil, which imports the
    compression modules (and which argparse imports for every argument a parser is given)."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    if stdout is None:  # no console at all (pythonw)
        return 80
    try:
        return os.get_terminal_size(stdout.fileno()).columns or 80
    except (ValueError, OSError):
        return 80
