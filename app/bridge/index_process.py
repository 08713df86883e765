"""An index pass run in child processes that exit, so the process that asked for it keeps none of its memory.

A first index costs far more memory than any later work: the lexical pass holds a batch of files' rows and
LanceDB's writer buffers (about 550 MB at peak on a 2,000-file tree), and embedding adds the model's working
memory on top. Run in the resident server, much of that stayed resident for as long as the server lived; run in
one `cortex index` process, the two phases added up. So each phase runs in a child of its own (`python -m` this
module): the lexical pass, then, when chunks wait for embedding, the embedding pass. Each child opens the same
database with the same settings and writes through the same code, so it takes the same locks as any other writer.
A small phase runs in the calling process instead (a lexical phase over a few dozen changed files of an index that
has files, or an embedding phase of a few dozen chunks, even a first pass's): there a child's start would cost more
than the phase, and the phase's memory is small.

- Progress and the result come back as JSON lines on the child's standard output: the protocol's messages
  (`link.messages`: `progress`, then `report` or `failed`), read through the same `link.exchange.Exchange`.
- An embedding child works in its parent's turn: the parent holds the embed lock (core.index.embed_queue) for the
  whole phase, so whether anything embeds now is told by the lock even while the child is starting.
- A stop asked for by the caller is one line on the child's standard input; the child finishes its batch and exits.
- The child exits at once when its standard input closes: the parent died (or was killed), so no child outlives it.
  What a killed child loses is at most one batch: the index records every file and every embedded chunk as it
  commits them, and the next pass carries on from there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import IO

from ...core import heap
from ...core.answers import IndexProgress, IndexReport
from ...core.cloud_variables import without_cloud_variables
from ...core.errors import CortexError, DatabaseLocked
from ..link.exchange import Exchange
from ..link.messages import Failed, PassReport, Progress, ProtocolError, Reply

STOP = "stop"
"""The line on a child's standard input that asks it to stop after its current batch."""
_STOP_POLL_SECONDS = 0.2


@dataclass(frozen=True)
class PassRequest:
    """One phase of an index pass, as the child needs it: where, with which settings, and what to do."""

    root: str
    db: str
    settings: dict
    phase: str
    """`lexical` (list, read, chunk, write) or `embed` (pending chunks, then memories another model embedded)."""
    priority: list[str] = field(default_factory=list)
    """Paths whose chunks are embedded first (the working change)."""


@dataclass(frozen=True)
class PassCaller:
    """Where a pass reports to: progress events, and the question whether to stop."""

    progress: Callable[[IndexProgress], None]
    should_stop: Callable[[], bool]


SMALL_PASS_FILES = 64
"""A lexical phase over at most this many changed files of an index that has files runs in the calling process: a
child's start (a Python and its imports, 1-2 s of CPU) would cost more than the phase, whose memory is about that of
a watcher's update of as many files. A first lexical phase always runs in a child: creating the tables leaves some
80 MiB with the process that wrote them, even for a few files."""
SMALL_PASS_CHUNKS = 64
"""Likewise for an embedding phase of at most this many chunks (the model embeds them in batches of a few: a few
MiB more)."""


def run_index_pass(engine, embed: bool, caller: PassCaller) -> IndexReport:
    """Bring `engine`'s code index up to date like `CodeIndex.update`, each phase in a child process that exits,
    unless the phase is small (SMALL_PASS_FILES, SMALL_PASS_CHUNKS)."""
    report = run_lexical_pass(engine, caller)
    if embed and not caller.should_stop():
        embedded = run_embed_pass(engine, caller)
        report.embedded, report.embed_seconds = embedded.embedded, embedded.embed_seconds
        report.embeddings_pending = embedded.embeddings_pending
    caller.progress(IndexProgress("done", report.changed, report.changed))
    return report


def run_lexical_pass(engine, caller: PassCaller, in_place: bool = False) -> IndexReport:
    """The lexical phase (list, read, chunk, write): after it the code is searchable by its words. `in_place`: the
    caller is a process that exits once the pass is done and embeds nothing itself (`cortex index` leaving the
    embeddings to the server), so what the pass leaves behind goes with it, and a child would only add its start
    (a Python and the engine's imports: 1 s on an idle machine, 3 on a busy one)."""
    index = engine.code_index(create=True)
    if in_place:
        return index.update(embed=False, progress=_until_done(caller.progress))
    # A first pass goes to a child without a look at the tree (the look lists it and reads the files table).
    seen = index.status() if index.has_files() else None
    if seen is not None and seen.stale + seen.new + seen.removed <= SMALL_PASS_FILES:
        return index.update(embed=False, progress=_until_done(caller.progress))
    return _run_child(_pass_request(engine, "lexical"), caller, _child_environment(engine))


def run_embed_pass(engine, caller: PassCaller) -> IndexReport:
    """The embedding phase in the caller's turn (the embed lock: see core.index.embed_queue). While another embedder
    is at work (a resident server's run, a watcher), waits for it, showing its progress, then embeds what it left."""
    index = engine.code_index(create=True)
    with index.embed_queue.turn(True, _until_done(caller.progress), caller.should_stop) as mine:
        if not mine:
            return IndexReport(embeddings_pending=index.pending())
        return embed_in_turn(engine, caller)


def embed_in_turn(engine, caller: PassCaller) -> IndexReport:
    """The pending chunks (the working change's first), then memories another model embedded; the caller holds the
    embed lock for the whole phase, also while a child embeds on its behalf (a child outlives no parent)."""
    index = engine.code_index(create=True)
    pending = index.pending()
    if not pending:
        # No chunk to embed: memories another model embedded (after a change of model, a few hundred at most)
        # are not worth a process of their own.
        engine.reembed_memories(caller.should_stop)
        return IndexReport()
    priority = list(engine.git().changed_files)
    if pending <= SMALL_PASS_CHUNKS:
        return _embed(engine, index, priority, _until_done(caller.progress), caller.should_stop)
    return _run_child(_pass_request(engine, "embed", priority), caller, _child_environment(engine))


def _pass_request(engine, phase: str, priority: Sequence[str] = ()) -> PassRequest:
    """What a child needs to open the same engine and run one phase of the pass."""
    return PassRequest(str(engine.root), engine.db_uri, engine.settings.model_dump(mode="json"), phase, list(priority))


def _child_environment(engine) -> dict[str, str]:
    """The engine's object-store credentials (its caller's, in the resident server) go to the child as its
    environment: the team's vector cache is read with them, and they never pass through a pipe or a file."""
    return {**without_cloud_variables(os.environ), **engine.settings.credentials.environment()}


def _until_done(progress: Callable[[IndexProgress], None]) -> Callable[[IndexProgress], None]:
    """A phase's progress without its own "done": the caller says when the whole pass is done."""
    return lambda event: None if event.phase == "done" else progress(event)


def _embed(engine, index, priority: list[str], progress: Callable[[IndexProgress], None],
           should_stop: Callable[[], bool]) -> IndexReport:
    """The embedding phase, where it runs (in the turn its caller, or the child's parent, holds): pending chunks
    (the working change's first), then memories another model embedded."""
    start = time.perf_counter()
    embedded = index.embed_queue.embed(progress=progress, priority=priority, should_stop=should_stop)
    engine.reembed_memories(should_stop)
    return IndexReport(embedded=embedded, embed_seconds=time.perf_counter() - start, embeddings_pending=index.pending())


def _run_child(request: PassRequest, caller: PassCaller, env: dict[str, str]) -> IndexReport:
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", __spec__.name], cwd=request.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=errors, text=True, encoding="utf-8", env=env,
        )
        # Both pipes exist: they were asked for.
        assert child.stdin is not None and child.stdout is not None
        done = threading.Event()
        stopper = threading.Thread(target=_pass_on_stop, args=(child.stdin, caller.should_stop, done), daemon=True,
                                   name="cortex-index-stop")
        try:
            child.stdin.write(json.dumps(asdict(request)) + "\n")
            child.stdin.flush()
            stopper.start()
            answer = _read_answer(Exchange.on_lines(child.stdout), caller.progress)
            child.wait()
        finally:
            done.set()
            if child.poll() is None:  # the caller's own failure (or an interrupt): the child goes with it
                child.kill()
                child.wait()
            child.stdin.close()
        if answer is None:
            errors.seek(0)
            tail = errors.read().decode("utf-8", "replace").strip().splitlines()[-3:]
            raise CortexError(f"the index pass stopped unexpectedly (exit {child.returncode}): {' '.join(tail)}")
    if isinstance(answer, Failed):
        raise (DatabaseLocked if answer.locked else CortexError)(answer.message)
    if isinstance(answer, PassReport):
        return report_from_wire(answer.report)
    raise CortexError(f"the index pass answered {answer.KIND}")


def _pass_on_stop(stdin: IO[str], should_stop: Callable[[], bool], done: threading.Event) -> None:
    while not done.wait(_STOP_POLL_SECONDS):
        if should_stop():
            try:
                stdin.write(STOP + "\n")
                stdin.flush()
            except (OSError, ValueError):
                pass  # it has exited already
            return


def _read_answer(exchange: Exchange, progress: Callable[[IndexProgress], None]) -> Reply | None:
    """Pass progress events on; the final answer (a report or a failure), or None when the child died first (or
    wrote what is not an answer, which its standard error explains)."""

    def heard(reply: Reply) -> None:
        if isinstance(reply, Progress):
            progress(IndexProgress(phase=reply.phase, done=reply.done, total=reply.total))

    try:
        return exchange.answer(heard)
    except ProtocolError:
        return None


def report_from_wire(wire: dict) -> IndexReport:
    """An `IndexReport` from its fields by name, as `PassReport` carries them (JSON has lists where it has tuples)."""
    known = {f.name: wire[f.name] for f in fields(IndexReport) if f.name in wire}
    known["skipped"] = [(str(path), str(reason)) for path, reason in known.get("skipped", [])]
    return IndexReport(**known)


# --- the child ------------------------------------------------------------------------------------------------------


def _watch_parent(stop: threading.Event) -> None:
    """A stop line sets `stop`; end of input means the parent is gone, and so is this process at once."""
    for line in sys.stdin:
        if line.strip() == STOP:
            stop.set()
    os._exit(1)


def _run(request: PassRequest, stop: threading.Event, say: Callable[[Reply], None]) -> IndexReport:
    from ...core.config import Settings
    from ...core.engine import Engine

    engine = Engine(request.root, request.db, Settings.model_validate(request.settings))
    index = engine.code_index(create=True)

    progress = _until_done(lambda event: say(Progress(event.phase, event.done, event.total)))
    if request.phase == "lexical":
        return index.update(embed=False, progress=progress)
    return _embed(engine, index, request.priority, progress, stop.is_set)


def main() -> None:
    heap.one_arena()  # before any thread starts: a pass's threads share one arena (core.index.index.heap_for_bulk_work)
    request = PassRequest(**json.loads(sys.stdin.readline()))
    stop = threading.Event()
    threading.Thread(target=_watch_parent, args=(stop,), daemon=True, name="cortex-parent").start()
    # The answers get a descriptor of their own; anything else writing to standard output (a library's warning,
    # native code) goes to standard error instead of into the answers.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    say = Exchange.on_lines(writer=out).send

    try:
        report = _run(request, stop, say)
    except CortexError as exc:
        say(Failed(str(exc), locked=isinstance(exc, DatabaseLocked)))
        return
    say(PassReport(asdict(report)))


if __name__ == "__main__":
    main()
