"""`cortex`: the headless command line over the engine. Every command takes --json."""

from __future__ import annotations

import argparse
import sys

from ...core.errors import CortexError
from ..command import present
from ..first_run import FirstRun, server_stays
from .context import CommandContext
from .parser import UsageExit, build_parser, command, parse
from .text_input import invalid_argument


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
        write_id = _write_id(args, ctx)
        code = _run_write(args, ctx, write_id) if write_id else present(args, ctx, command(args.handler).run(args, ctx))
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


def _write_id(args: argparse.Namespace, ctx: CommandContext) -> str:
    """The id of the command's write: the caller's CORTEX_WRITE_ID, else the one the client made up; "" for a
    command that does not write."""
    from ...core.write_ids import ENV, checked
    from .writes import is_write

    if not is_write(args):
        return ""
    given = ctx.env.get(ENV, "")
    return checked(given) if given else ctx.write_id


def _run_write(args: argparse.Namespace, ctx: CommandContext, write_id: str) -> int:
    """A write named by its id and its command's fingerprint (core/write_ids.py). When the caller gave the id
    (CORTEX_WRITE_ID), it may be a retry: a write that committed with it already is answered from its receipt (its
    output again), never made twice, and one made by another command is refused; the output of one made now is kept
    for such a retry, served or in-process alike. An id the client made up is new by construction: nothing is read
    first."""
    from ...core.write_ids import ENV, ReusedWriteId, stamp, writing_as

    given = bool(ctx.env.get(ENV))
    ctx, mark = fingerprinted(args, ctx)
    if given:
        earlier = ctx.engine(args).receipt(write_id, mark)
        if earlier is not None:
            if earlier.fingerprint and earlier.fingerprint != mark:
                raise ReusedWriteId.of(write_id, earlier.fingerprint, mark)
            return _replay(ctx, write_id, earlier.output, earlier.queued)
        ctx = recording(ctx)
    with writing_as(stamp(write_id, mark)):
        code = present(args, ctx, command(args.handler).run(args, ctx))
    collected = getattr(ctx.stdout, "collected", None)
    if given and code == 0 and collected is not None:
        try:
            ctx.engine(args).record_receipt(stamp(write_id, mark), collected())
        except Exception as exc:  # noqa: BLE001 - the write itself committed: its rows carry the id
            ctx.stderr.write(f"cortex: warning: write {write_id} committed, but its output was not kept for a retry "
                             f"({type(exc).__name__})\n")
    return code


_NOT_THE_WRITE = frozenset({"json", "db", "path", "target", "no_global", "command", "handler", "op"})
"""Arguments that say where a write goes or how its answer is printed, not which write it is."""


def fingerprinted(args: argparse.Namespace, ctx: CommandContext) -> tuple[CommandContext, str]:
    """The fingerprint of the command's write: its kind and the arguments that define it. A text read from standard
    input (`remember -`) is part of it, so it is read here and handed to the command from memory."""
    import dataclasses
    import io

    from ...core.write_ids import fingerprint

    arguments = {k: v for k, v in vars(args).items() if k not in _NOT_THE_WRITE and not callable(v)}
    # The session a command writes in may come from CORTEX_SESSION instead of `--session`: the same words in
    # another session are another write.
    arguments["session"] = ctx.session(args)
    if getattr(args, "text", None) == "-" and args.handler == "remember":
        arguments["text"] = ctx.stdin.read()
        ctx = dataclasses.replace(ctx, stdin=io.StringIO(arguments["text"]))
    kind = f"agent-{args.op}" if args.handler == "agent" else args.handler
    return ctx, fingerprint(kind, arguments)


def recording(ctx: CommandContext) -> CommandContext:
    """The context with its output also kept (`collected`), for a retry to print again; a served command's is."""
    import dataclasses

    from .recorded_output import Recorded

    if getattr(ctx.stdout, "collected", None) is not None:
        return ctx
    sink: list[list] = []
    return dataclasses.replace(ctx, stdout=Recorded(1, ctx.stdout, sink), stderr=Recorded(2, ctx.stderr, sink))


def _replay(ctx: CommandContext, write_id: str, output: list[list] | None, queued: bool = False) -> int:
    """The earlier answer of a write that committed (what it printed), and a line saying so."""
    for number, text in output or []:
        (ctx.stdout if number == 1 else ctx.stderr).write(text)
    if queued:
        ctx.stderr.write(f"cortex: write {write_id} was queued earlier (the team store did not answer); not queued "
                         "again: it will be written when the store answers\n")
    else:
        ctx.stderr.write(f"cortex: write {write_id} committed earlier; not made again\n")
    return 0


def _fail(ctx: CommandContext, message: str) -> int:
    ctx.stderr.write(f"cortex: error: {message}\n")
    return 1


if __name__ == "__main__":
    from ..leave import leave, open_streams

    open_streams()
    leave(main())
