"""A client's `cortex` command, run in the resident server exactly as it would run in the client's process.

The command gets a context of its own (`cli.context.CommandContext`): the client's standard input, output and
error, working directory and forwarded environment, and the server's warm engines. Nothing process-wide is
swapped, so several commands run side by side on the server's worker threads.
"""

from __future__ import annotations

import base64
import io
import os
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from ..link import protocol
from ..link.messages import ReceiptAnswer, ReceiptRequest, RunRequest
from .command_streams import ClientStream
from .engines import EngineCache


class CommandRunner:
    """Runs the clients' commands once the server's warm-up has ended (`warm`), counting them for the status."""

    def __init__(self, engines: EngineCache, warm: threading.Event, log: Callable[[str], None]) -> None:
        self._engines = engines
        self._warm = warm
        self._log = log
        self._base_env = {k: v for k, v in os.environ.items() if not protocol.forwarded(k)}
        self._count = threading.Lock()
        self.served = 0

    def run(self, request: RunRequest) -> tuple[list[list], int, list]:
        """Run one command as the client would have in-process; also returns the writes it left for after its answer
        (see core.later). Never raises: whatever goes wrong is the command's own one-line error, and the server
        goes on."""
        from ...core import later

        with later.collected() as deferred:
            sink, code = self._run_command(request)
        return sink, code, deferred

    def run_deferred(self, jobs: list) -> None:
        for job in jobs:
            try:
                job()
            except Exception as exc:  # noqa: BLE001 - a cache write that failed costs a later lookup, never the server
                self._log(f"write after answer failed: {type(exc).__name__}: {exc}")

    def _run_command(self, request: RunRequest) -> tuple[list[list], int]:
        from ..cli.context import CommandContext

        self._warm.wait()
        with self._count:
            self.served += 1
            number = self.served
        sink: list[list] = []
        try:
            ctx = CommandContext(
                stdin=io.TextIOWrapper(io.BytesIO(base64.b64decode(request.stdin or "")),
                                       encoding=request.stdin_encoding, errors=request.stdin_errors),
                stdout=ClientStream(1, request.stdout_tty, request.stdout_encoding, sink),
                stderr=ClientStream(2, request.stderr_tty, request.stderr_encoding, sink),
                cwd=Path(request.cwd),
                env=self.environment(request.env),
                engines=self._engines,
                served=True,
                write_id=request.write_id,
            )
            started = time.perf_counter()
            code = self._main(request.argv, ctx)
            # Never the arguments: they may hold anything (a memory's text, a secret it was refused for).
            self._log(f"command {number} exit {code} in {time.perf_counter() - started:.3f} s")
            return sink, code
        except BaseException as exc:  # noqa: BLE001 - nothing a command does may end the server
            sink.append([2, f"cortex: error: {type(exc).__name__}: {exc}\n"])
            return sink, 1

    @staticmethod
    def _main(argv: tuple[str, ...], ctx) -> int:
        from ..cli import main as cli

        try:
            return int(cli.main(list(argv), ctx) or 0)
        except BaseException:  # noqa: BLE001 - CORTEX_DEBUG re-raises: print the traceback as Python would
            ctx.stderr.write(traceback.format_exc())
            return 1

    def receipt(self, request: ReceiptRequest) -> ReceiptAnswer:
        """Whether the write named `request.write_id` committed, as a `receipt` answer (or its one-line error)."""
        from ..cli.context import CommandContext
        from ..cli.receipt_check import receipt_answer

        self._warm.wait()
        run = request.run
        stdin = (io.TextIOWrapper(io.BytesIO(base64.b64decode(run.stdin or "")), encoding=run.stdin_encoding,
                                  errors=run.stdin_errors) if run is not None else io.StringIO())
        ctx = CommandContext(stdin=stdin, stdout=io.StringIO(), stderr=io.StringIO(),
                             cwd=Path(request.cwd or "/"), env=self.environment(request.env), engines=self._engines,
                             served=True)
        return receipt_answer(ctx, request.where, request.write_id, run.argv if run is not None else ())

    def environment(self, client_env: dict[str, str]) -> dict[str, str]:
        """A command's (or an attached process's call's) environment: the variables the client forwards (see
        protocol), over the server's others."""
        return {**self._base_env, **{k: v for k, v in client_env.items() if protocol.forwarded(k)}}
