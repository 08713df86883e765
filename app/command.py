"""What a `cortex` command is: its name, its arguments and its handler, declared together in the module of its area
(the CLI's command modules, and the benchmarks' own).

Every command module imports only the standard library and the engine's light vocabulary at its top: the thin
client imports the module of the command it parses (see `cli.parser`), and a served command costs a Python start-up,
not the seconds of importing LanceDB, rich or the model. What a handler needs beyond that it imports when it runs.

Nor do the modules of served commands import the standard library's slower modules where they can do without:
`dataclasses` (it imports `inspect`) and `typing`. So `Answer` and `Command` are plain classes, and these modules say
`TYPE_CHECKING = False` (which type checkers read as `typing.TYPE_CHECKING`) for their type-only imports. A test runs
a served `cortex ss` and lists what it imported."""

from __future__ import annotations

import argparse
import functools
import math
from collections.abc import Callable

from .terminal_size import terminal_columns

TYPE_CHECKING = False  # typing's, without importing typing (see above)
if TYPE_CHECKING:
    from typing import Any, Protocol

    from .output import Output

    class Printing(Protocol):
        """What `present` needs of a command's context (the CLI's `CommandContext`): where it prints."""

        @property
        def out(self) -> Output: ...

    Handler = Callable[[argparse.Namespace, Any], "Answer | int"]
    """(arguments, the command's context) -> an answer to print, or an exit status for a command that printed."""

KIND_HELP = "decision, note, task, fact, observation, link, agent"


class Answer:
    """What a command found: `data` is printed as JSON under --json, else `show` prints it as text (by default the
    data itself, one JSON document, as for commands with no text form of their own)."""

    __slots__ = ("data", "show", "code")

    def __init__(self, data: Any, show: Callable[[Output], None] | None = None, code: int = 0) -> None:
        self.data = data
        self.show = show
        self.code = code
        """The exit status, whichever form is printed."""


class Command:
    """One `cortex NAME` command: how it is parsed and what runs it."""

    __slots__ = ("name", "help", "run", "add_arguments", "aliases")

    def __init__(self, name: str, help: str, run: Handler,
                 add_arguments: Callable[[argparse.ArgumentParser], object] = lambda parser: None,
                 aliases: tuple[str, ...] = ()) -> None:
        self.name = name
        self.help = help
        self.run = run
        self.add_arguments = add_arguments
        """Declares the command's arguments on its parser; what it returns (argparse's last `Action`) is unused."""
        self.aliases = aliases


def present(args: argparse.Namespace, ctx: Printing, result: Answer | int | None) -> int:
    """Print a handler's answer the one way the command line asked for: JSON with --json, else as text."""
    if not isinstance(result, Answer):
        return result or 0
    if args.json or result.show is None:
        ctx.out.json(result.data)
    else:
        result.show(ctx.out)
    return result.code


class Formatter(argparse.HelpFormatter):
    """argparse's help, as wide as argparse makes it (`terminal_columns`, less 2), without importing shutil: argparse
    makes a formatter for every argument a parser is given, and every served command is parsed (`cli.parser`)."""

    def __init__(self, prog: str, **options) -> None:
        if options.get("width") is None:
            options["width"] = terminal_columns() - 2
        super().__init__(prog, **options)


@functools.cache
def nested_options() -> argparse.ArgumentParser:
    """The options every command takes, as a parent of each sub-parser (see `common_options`)."""
    return common_options(top=False)


def common_options(top: bool) -> argparse.ArgumentParser:
    """The options every command takes, accepted before or after the command name (as git does).

    Only the top-level parser has defaults: argparse copies everything a sub-parser parsed over what its parent
    already had, so the sub-parsers' copies suppress their defaults and set a value only when it is given."""
    common = argparse.ArgumentParser(add_help=False, formatter_class=Formatter)
    flag, value, path = (False, None, ".") if top else (argparse.SUPPRESS,) * 3
    common.add_argument("--json", action="store_true", help="print JSON", default=flag)
    common.add_argument("--db", help="database directory or object-storage URI (default <repo>/.cortex/db; env CORTEX_DB)",
                        default=value)
    common.add_argument("-C", "--path", help="repository or directory to work in (default: here)", default=path)
    common.add_argument("--no-global", action="store_true", help="leave the user's global store out of reads",
                        default=flag)
    common.add_argument("--session", metavar="ID", help="the session this command runs in: session-scoped memories "
                        "are written with it, and reads show this session's, not other sessions' ('all': every "
                        "session's; env CORTEX_SESSION)", default=value)
    return common


def add_nested(sub, name: str, help: str) -> argparse.ArgumentParser:
    """A sub-command of a command (`cortex agent log`, `cortex bench store`), taking the common options too."""
    return sub.add_parser(name, help=help, parents=[nested_options()])


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type for whole numbers with a floor (a negative limit or budget is a typo, not a request)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is less than {low}")
        return value

    return parse


def finite(low: float | None = None, above: bool = False) -> Callable[[str], float]:
    """An argparse type for real numbers: `nan` and `inf` are typos too, and so is a value under the floor (or at
    it, with `above`)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if low is not None and (value <= low if above else value < low):
            raise argparse.ArgumentTypeError(f"{text} is {'not more' if above else 'less'} than {low:g}")
        return value

    return parse


def port(text: str) -> int:
    """An argparse type for a TCP port to listen on."""
    value = at_least(1)(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port (1-65535)")
    return value


def split_list(values: list[str] | None) -> tuple[str, ...]:
    """Repeatable comma-separated options (`--tags a,b --tags c`) as one tuple."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return tuple(out)
