"""`cortex-tui`: the dashboard's entry point."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("cortex-tui: the dashboard is coming; use the `cortex` command meanwhile", file=sys.stderr)
    return 0
