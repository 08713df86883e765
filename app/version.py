"""`--version` of `cortex` and `cortex-tui`: the installed distribution's version."""

from __future__ import annotations

import argparse
import sys


class VersionAction(argparse.Action):
    """argparse's own version action takes its text when the parser is built; this one reads the installed
    metadata only when `--version` is given (see `core.versions`: the thin client builds a parser for every command)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the installed version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from ..core.versions import cortex_version  # here: the thin client imports this module to parse every command

        self.show(parser, f"{parser.prog} {cortex_version()}\n")

    def show(self, parser: argparse.ArgumentParser, text: str) -> None:
        sys.stdout.write(text)
        parser.exit()
