"""A terminal size a command can print in. Standard library only: the thin client uses it before it sends a command.

A terminal can report 0x0 (`script -qc "cortex ss hello" /dev/null`, a serial console, a container started
without a size): the client forwarded `COLUMNS=0` and the server's console, given no width to print in, printed
nothing and exited 0, where the command run in-process (whose console ignores a zero size) printed at 80 columns.
"""

from __future__ import annotations

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
