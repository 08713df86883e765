"""The `cortex` command line's parser: which module declares each command, and the argparse tree built from them.

Standard library only at its top, and each command module is imported only when its command is parsed: the thin
client parses every command before it sends it to the resident server, so a served `cortex ss` imports the search
commands' module and none of the others (the benchmarks', the agent's, ...)."""

from __future__ import annotations

import argparse
import functools
import importlib

from ..command import Command, Formatter, common_options, nested_options
from ..version import VersionAction

COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    ".memory_commands": ("init", "remember", "show", "list", "history", "forget", "done", "confirm", "sync"),
    ".transfer_commands": ("import", "export"),
    ".index_commands": ("index", "watch", "stats", "gc", "doctor"),
    ".search_commands": ("search", "ss", "smart-search", "what", "select", "context"),
    ".git_commands": ("git", "graph"),
    ".agent_commands": ("agent",),
    ".hooks_commands": ("hooks",),
    ".session_commands": ("map", "snapshot"),
    ".serve_commands": ("mcp", "serve"),
    "..bench.commands": ("bench",),
}
"""Every `cortex` command and alias, by the module that declares it (its `COMMANDS`, beside the handlers), in the
order `cortex --help` lists them; `cortex bench` is the benchmarks'. A test holds it equal to the modules' own."""

WORD_LISTS = ("query", "task")
"""Positional word lists that may continue after options: `cortex ss match --limit 3 file:src/map.py`."""


class UsageExit(Exception):
    """What argparse would print and exit with (help, a usage error): raised instead, so that the caller writes it
    to the command's own streams, whichever process runs the command."""

    def __init__(self, status: int, stdout: str = "", stderr: str = "") -> None:
        super().__init__(stderr or stdout)
        self.status = status
        self.stdout = stdout
        self.stderr = stderr


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line, like every other error of the command, and nothing printed
    here (see UsageExit). Its sub-parsers are of this class too, and format help with `command.Formatter`."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        raise UsageExit(2, stderr=f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

    def exit(self, status: int = 0, message: str | None = None):
        raise UsageExit(status, stderr=message or "")

    def print_help(self, file=None) -> None:
        raise UsageExit(0, stdout=self.format_help())


class _Version(VersionAction):
    """`cortex --version`, written to the command's own streams like its help."""

    def show(self, parser: argparse.ArgumentParser, text: str) -> None:
        raise UsageExit(0, stdout=text)


def _module_commands(module: str) -> tuple[Command, ...]:
    return importlib.import_module(module, __package__).COMMANDS


def command(name: str) -> Command:
    """The command a parsed command line names (its `handler`: the command's own name, not an alias)."""
    module = next(module for module, names in COMMAND_MODULES.items() if name in names)
    return next(found for found in _module_commands(module) if found.name == name)


@functools.cache
def build_parser(commands: frozenset[str] | None = None) -> argparse.ArgumentParser:
    """Built once per process: building it is a tenth of a warm served command (argparse looks up a translation
    for every help string), and parsing leaves it unchanged, so the resident server reuses one.

    With `commands`, the tree has just the commands named (or aliased) there, and only their modules are imported:
    the thin client passes the words of its command line, which parses that command exactly as the whole tree would,
    for a fraction of the cost. Anything else (an unknown command, `--help`) fails to parse there and goes to the
    whole tree in-process."""
    # Typed as argparse's parser: its stubs want a sub-parser's parents of the sub-parsers' own class, and the
    # common options are a plain parent (only copied from); the sub-parsers are still made as `_Parser`s.
    parser: argparse.ArgumentParser = _Parser(
        prog="cortex", description="Local-first memory and context engine for coding agents.",
        parents=[common_options(top=True)])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module, names in COMMAND_MODULES.items():
        if commands is not None and commands.isdisjoint(names):
            continue
        for command in _module_commands(module):
            if commands is None or not commands.isdisjoint((command.name, *command.aliases)):
                p = sub.add_parser(command.name, help=command.help, parents=[nested_options()],
                                   aliases=list(command.aliases))
                p.set_defaults(handler=command.name)
                command.add_arguments(p)
    return parser


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse a command line; words left after the options join the command's query or task words (argparse stops
    a positional list at the first option), anything else is the usual usage error."""
    unknown = _unknown_option(parser, argv)
    if unknown is not None:
        # argparse would only say the command is missing: the word it could not read is the one to name.
        parser.error(f"unrecognized option {unknown} before the command")
    args, extra = parser.parse_known_args(argv)
    target = next((name for name in WORD_LISTS if isinstance(getattr(args, name, None), list)), None)
    if extra and (target is None or any(word.startswith("-") and word != "-" for word in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra and target is not None:
        setattr(args, target, [*getattr(args, target), *extra])
    return args


def _unknown_option(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """The first word before the command that looks like an option the top level does not have, else None."""
    known = parser._option_string_actions  # argparse keeps its option table here; it has no public accessor
    i = 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-") or word in ("-", "--"):
            return None  # the command (or `--`): its own parser reads the rest
        action = known.get(word.split("=", 1)[0])
        if action is None:
            return word
        i += 1 if "=" in word or action.nargs == 0 else 2
    return None
