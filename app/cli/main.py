"""`cortex`: the headless command line over the engine. Every command takes --json."""

from __future__ import annotations

import argparse
import functools
import sys

from ...core.errors import CortexError
from ..bench import commands as bench_commands
from ..command import Command, common_options, nested_options, present
from ..first_run import FirstRun, server_stays
from ..version import VersionAction
from . import (
    agent_commands,
    git_commands,
    hooks_commands,
    index_commands,
    memory_commands,
    search_commands,
    serve_commands,
    session_commands,
    transfer_commands,
)
from .context import CommandContext
from .text_input import invalid_argument

COMMANDS: dict[str, Command] = {command.name: command for module in (
    memory_commands, transfer_commands, index_commands, search_commands, git_commands, agent_commands, hooks_commands,
    session_commands, serve_commands, bench_commands,
) for command in module.COMMANDS}
"""Every `cortex` command, declared in the module of its area beside its handler (`cortex bench` by the benchmarks).
Those modules import only light things at their top: the thin client imports them all to parse."""


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
    here (see UsageExit)."""

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


@functools.cache
def build_parser(commands: frozenset[str] | None = None) -> argparse.ArgumentParser:
    """Built once per process: building it is a tenth of a warm served command (argparse looks up a translation
    for every help string), and parsing leaves it unchanged, so the resident server reuses one.

    With `commands`, the tree has just the commands named (or aliased) there: the thin client passes the words of its
    command line, which parses that command exactly as the whole tree would, for a fraction of the cost. Anything
    else (an unknown command, `--help`) fails to parse there and goes to the whole tree in-process."""
    parser = _Parser(prog="cortex", description="Local-first memory and context engine for coding agents.",
                     parents=[common_options(top=True)])
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS.values():
        if commands is None or not commands.isdisjoint((command.name, *command.aliases)):
            p = sub.add_parser(command.name, help=command.help, parents=[nested_options()], aliases=list(command.aliases))
            p.set_defaults(handler=command.name)
            command.add_arguments(p)
    return parser


WORD_LISTS = ("query", "task")
"""Positional word lists that may continue after options: `cortex ss match --limit 3 file:src/map.py`."""


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse a command line; words left after the options join the command's query or task words (argparse stops
    a positional list at the first option), anything else is the usual usage error."""
    args, extra = parser.parse_known_args(argv)
    target = next((name for name in WORD_LISTS if isinstance(getattr(args, name, None), list)), None)
    if extra and (target is None or any(word.startswith("-") and word != "-" for word in extra)):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if extra and target is not None:
        setattr(args, target, [*getattr(args, target), *extra])
    return args


def main(argv: list[str] | None = None, ctx: CommandContext | None = None) -> int:
    """Run one command with its context (default: this process's streams, directory and environment)."""
    ctx = ctx or CommandContext.of_process()
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = invalid_argument(argv)
    if problem:
        ctx.stderr.write(f"cortex: error: {problem}\n")
        return 2
    try:
        args = parse(build_parser(), argv)
    except UsageExit as exc:
        ctx.stdout.write(exc.stdout)
        ctx.stderr.write(exc.stderr)
        return exc.status
    first = FirstRun.ahead(ctx.path(getattr(args, "target", None) or args.path))
    code = _run(args, ctx)
    if code == 0 and first is not None and first.made():  # an error stays one line, as every error is
        _say_first_run(first, ctx)
    return code


def _say_first_run(first: FirstRun, ctx: CommandContext) -> None:
    """After the command's own output, on standard error (a `--json` answer on standard output stays whole)."""
    settings = ctx.settings()
    said = first.made_here(first.files(settings.max_file_bytes))
    if ctx.served:
        said += f"; {server_stays(settings.daemon_idle_minutes)}"
    ctx.stderr.write(f"cortex: {said}\n")


def _run(args: argparse.Namespace, ctx: CommandContext) -> int:
    try:
        code = present(args, ctx, COMMANDS[args.handler].run(args, ctx))
        for note in ctx.notes:
            ctx.stderr.write(note + "\n")
        return code
    except CortexError as exc:
        return _fail(ctx, str(exc))
    except KeyboardInterrupt:
        ctx.stderr.write("cortex: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if ctx.debug():
            raise
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        from ...core.store.failures import is_unreachable, looks_corrupt

        if is_unreachable(exc):
            # A store that stopped answering mid-command: the library's message names request URLs and retry
            # details, none of it the user's to act on.
            return _fail(ctx, "a remote store stopped answering; try again, or check the network and endpoint")
        if looks_corrupt(exc):
            return _fail(ctx, f"the database is damaged ({first[:160]}); run `cortex doctor`")
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            # A file the command was told to write or read (`-o missing/dir/f.md`, a directory, no permission).
            return _fail(ctx, f"{exc.filename}: {exc.strerror}")
        return _fail(ctx, f"{type(exc).__name__}: {first} (set CORTEX_DEBUG=1 for a traceback)")


def _fail(ctx: CommandContext, message: str) -> int:
    ctx.stderr.write(f"cortex: error: {message}\n")
    return 1


if __name__ == "__main__":
    from ..leave import leave, open_streams

    open_streams()
    leave(main())
