"""`cortex index, watch, stats, gc, doctor`: the code index and the database's upkeep."""

from __future__ import annotations

import threading

from ...core.errors import CortexError
from ..command import Answer, Command

TYPE_CHECKING = False  # typing's, without importing typing: see app/command.py
if TYPE_CHECKING:
    from .context import CommandContext


def add_index(p) -> None:
    p.add_argument("target", nargs="?", help="repository or directory to index (default: -C or here)")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--status", action="store_true",
                      help="only say whether the index is fresh, and how far its embeddings are")
    only.add_argument("--skipped", action="store_true",
                      help="only list the files the last index run skipped, with reasons (indexes nothing)")
    embedding = p.add_mutually_exclusive_group()
    embedding.add_argument("--no-embed", action="store_true", help="store text and structure only; embed later")
    embedding.add_argument("--wait", action="store_true",
                           help="return once every chunk is embedded too (by default the resident server embeds "
                                "them after the command returns)")


def run_index(args, ctx: CommandContext) -> Answer:
    engine = ctx.engine(args)
    if args.status:
        return _index_status(engine)
    if args.skipped:
        return _list_skipped(engine)
    # The engine bridge: not for the thin client
    from ...core.answers import IndexProgress
    from ..bridge.index_process import PassCaller, run_embed_pass, run_lexical_pass

    background = False
    server = _ServerAhead(args, ctx, engine)
    with ctx.out.progress_bar("indexing") as update:
        caller = PassCaller(lambda e: update(e.done, e.total, e.phase), lambda: False)
        report = run_lexical_pass(engine, caller, in_place=server.wanted)
        if not args.no_embed:
            background = not args.wait and _left_to_the_server(server, ctx, engine, report.embeddings_pending)
            if not background:
                embedded = run_embed_pass(engine, caller)
                report.embedded, report.embed_seconds = embedded.embedded, embedded.embed_seconds
                report.embeddings_pending = embedded.embeddings_pending
        caller.progress(IndexProgress("done", report.changed, report.changed))
    engine.compact_due()  # writes never compact; an explicit index run is a moment to (see core/store/compaction.py)

    def show(out) -> None:
        done = (f"{report.chunks} chunks in {report.lexical_seconds:.1f}s" if background else
                f"{report.chunks} chunks in {report.lexical_seconds:.1f}s; {report.embedded} embedded in "
                f"{report.embed_seconds:.1f}s; {report.embeddings_pending} pending")
        out.console.print(
            f"indexed {engine.root}: {report.changed} file(s) updated, {report.unchanged} unchanged, "
            f"{report.removed} removed; {done}", soft_wrap=True, markup=False,
        )
        if background:
            out.console.print(f"searchable now (lexical); embedding {report.embeddings_pending:,} chunks in the "
                              "background: `cortex index --status`, or `--wait`", soft_wrap=True, markup=False)
        if report.skipped:
            counts = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skip_counts.items()))
            out.console.print(f"skipped: {counts} (`cortex index --skipped` lists them)", style="dim", markup=False)

    return Answer({
        "root": str(engine.root), "listed": report.listed, "changed": report.changed, "unchanged": report.unchanged,
        "removed": report.removed, "chunks": report.chunks, "embedded": report.embedded,
        "embeddings_pending": report.embeddings_pending, "embedding_in_background": background,
        "skipped_counts": report.skip_counts, "skipped": [{"path": p, "reason": r} for p, r in report.skipped],
        "lexical_seconds": round(report.lexical_seconds, 3), "embed_seconds": round(report.embed_seconds, 3),
    }, show)


class _ServerAhead:
    """The resident server that will embed what the lexical pass leaves. A first index is started beside the pass:
    the server's start (a Python and its imports, seconds on a busy machine) overlaps the pass instead of following
    it. Later passes, which mostly leave little to embed, reach (or start) it only when they need it."""

    def __init__(self, args, ctx: CommandContext, engine) -> None:
        from ..link import connection

        self._where = (ctx.path(getattr(args, "target", None) or args.path), ctx.database(args.db))
        self.wanted = not args.no_embed and not args.wait and connection.daemon_wanted(ctx.env)
        self._found: list = []
        self._thread: threading.Thread | None = None
        if self.wanted and not engine.has_index():
            self._thread = threading.Thread(target=self._attach, name="cortex-server-ahead", daemon=True)
            self._thread.start()

    def _attach(self) -> None:
        from ..link.remote import Remote

        self._found.append(Remote.attach(*self._where, start=True))

    def remote(self):
        """The server (started if need be), or None when none could be."""
        if self._thread is None:
            self._attach()
        else:
            self._thread.join()
        return self._found[0] if self._found else None


def _left_to_the_server(server: _ServerAhead, ctx: CommandContext, engine, pending: int) -> bool:
    """Whether the embeddings go on after this command returns: another embedder is at them already (a resident
    server's run, a watcher), or the resident server (started if need be) has taken them over. Not a backlog a
    server's start would cost more than (SMALL_PASS_CHUNKS, embedded here in a few seconds), and never with the
    daemon off: `--no-daemon` promises that nothing of the command outlives it, so it embeds here, as `--wait`."""
    from ..bridge.index_process import SMALL_PASS_CHUNKS
    from ..link.remote import RemoteError

    queue = engine.code_index(create=True).embed_queue
    if not pending:
        return False
    if queue.busy():
        return True
    if pending <= SMALL_PASS_CHUNKS or not server.wanted:
        return False
    remote = server.remote()
    if remote is None:
        ctx.notes.append("cortex: note: no resident server could be started; the embeddings were made here")
        return False
    try:
        return bool(remote.call("index", "continue_embedding")) or queue.busy()
    except (RemoteError, CortexError) as exc:
        ctx.notes.append(f"cortex: note: the resident server did not take the embeddings ({exc}); they were made here")
        return False


def _index_status(engine) -> Answer:
    from ...core.text import counted

    st = engine.code_index(create=False).status()
    state = "fresh" if st.fresh else f"stale: {st.stale:,} changed, {st.new:,} new, {st.removed:,} removed file(s)"
    return Answer({**st.__dict__, "fresh": st.fresh},
                  lambda out: out.console.print(f"index of {engine.root}: {state}; {counted(st.indexed_files, 'file')}, "
                                                f"{counted(st.chunks, 'chunk')}; {st.embeddings_line()}", markup=False,
                                                soft_wrap=True))


def _list_skipped(engine) -> Answer:
    """The skip list the last index run stored, read back: nothing is listed, read or embedded."""
    from ...core.text import one_line
    skipped = engine.code_index(create=False).skipped()
    if not skipped and not engine.has_index():
        raise CortexError(f"nothing indexed yet in {engine.root}: run `cortex index` first")

    def show(out) -> None:
        if not skipped:
            out.console.print("the last index run skipped no files")
        for path, reason in skipped:
            out.console.print(one_line(f"{path}: {reason}"), markup=False, soft_wrap=True)

    return Answer([{"path": p, "reason": r} for p, r in skipped], show)


def run_watch(args, ctx: CommandContext) -> int:
    from ...core.index.watch import IndexWatcher  # watchfiles: not for the thin client, which only parses

    engine = ctx.engine(args)
    index = engine.code_index(create=True)
    index.update(embed=False)

    reported = threading.Event()

    def report(message: str) -> None:
        ctx.out.console.print(message, style="red")
        reported.set()

    watcher = IndexWatcher(index, on_update=lambda update: ctx.out.console.print(update.summary(), soft_wrap=True), on_error=report,
                           debounce_ms=engine.settings.watch_debounce_ms, embed=not args.no_embed)
    engine.compact_in_background(lambda m: ctx.out.console.print(m, style="red"))
    with watcher:
        try:
            # Said once the file system watch is in place, so that a file saved after the line is seen (a script
            # or a test may wait for it). An error before that is the watch failing to start (the system's limit
            # of watches reached, say): said, and the command ends.
            while not watcher.ready.wait(0.1):
                if reported.is_set():
                    return 1
            ctx.out.console.print(f"watching {engine.root} (Ctrl+C to stop)")
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


def run_stats(args, ctx: CommandContext) -> Answer:
    from ...core.answers import count_reasons  # git: not for the thin client, which only parses
    from ...core.text import counted

    engine = ctx.engine(args)
    stats = engine.stats()
    index = engine.code_index().status()
    skip_counts = count_reasons(engine.code_index().skipped())

    def show(out) -> None:
        state = "fresh" if index.fresh else f"stale ({index.stale:,} changed, {index.new:,} new, {index.removed:,} removed)"
        out.console.print(f"code index: {counted(index.indexed_files, 'file')}, {counted(index.chunks, 'chunk')}, {state}; "
                          f"{index.embeddings_line()}", markup=False)
        if skip_counts:
            out.console.print("  skipped: " + ", ".join(f"{n} {r}" for r, n in sorted(skip_counts.items())), style="dim")
        for s in stats:
            size = f"{s.disk_bytes / 1e6:.1f} MB" if s.disk_bytes is not None else "remote"
            kinds = ", ".join(f"{k} {n}" for k, n in sorted(s.by_kind.items())) or "none"
            out.line((s.uri, "bold"), f" (schema v{s.schema_version}, {size}, {s.table_versions} table versions)")
            out.console.print(f"  memories: {s.active:,} active of {s.memories:,} stored; {s.open_tasks:,} open task{'' if s.open_tasks == 1 else 's'}; by kind: {kinds}")
            if s.last_pruned is not None:
                out.console.print(f"  retention: {s.pruned:,} forgotten in all; last {s.last_pruned.count:,} at "
                                  f"{s.last_pruned.at.astimezone():%Y-%m-%d %H:%M}", style="dim")

    return Answer({"stores": stats, "index": {**index.__dict__, "fresh": index.fresh, "skipped": skip_counts}}, show)


def run_gc(args, ctx: CommandContext) -> Answer:
    engine = ctx.engine(args)
    dropped = engine.retention(dry_run=args.dry_run)
    if args.dry_run:
        return Answer({"would_drop": [m.to_json() for m in dropped]}, lambda out: _print_dropped(out, dropped, "would drop"))
    removed = engine.gc()

    def show(out) -> None:
        _print_dropped(out, dropped, "dropped")
        out.console.print(f"compacted; removed {removed} old version(s)")

    return Answer({"dropped": [m.to_json() for m in dropped], "versions_removed": removed}, show)


def _print_dropped(out, dropped, verb: str) -> None:
    out.line(f"retention: {verb} {len(dropped)} memor{'y' if len(dropped) == 1 else 'ies'}",
             ("  (least recently used past each scope's cap; kept in history)", "dim") if dropped else "")
    for m in dropped:
        out.line("  ", m.id, f" {m.scope} {m.kind} ", (m.title, "bold"))


def run_doctor(args, ctx: CommandContext) -> Answer:
    from ...core.doctor import run_doctor as doctor  # the store: not for the thin client, which only parses

    engine = ctx.engine(args)
    s = engine.settings
    report = doctor(engine.db_uri, engine.root, engine.is_repo, engine.embedder, s.max_file_bytes, s.encoding,
                    s.lock_timeout)
    if report.actions and not report.unrepaired:
        _stop_server(ctx, args)

    def show(out) -> None:
        for v in report.versions:
            out.console.out(f"{v.component:16} {v.version}")
        for t in report.tables:
            out.console.out(f"{t.state.upper() if t.problem else 'ok':8} {t.name}: " + (t.problem or f"{t.rows} rows"))
        for line in report.actions or ["nothing to repair"]:
            out.console.out(line)

    return Answer(report.to_json(), show, code=1 if report.unrepaired else 0)


def _stop_server(ctx: CommandContext, args) -> None:
    """A resident server keeps the tables it read open: once a repair has set a table's files aside and made it
    again, its reads meet files that are gone, and every served command says the database is damaged. Stopped here,
    the next command starts one on the repaired tables."""
    from ..link import connection
    from ..link.protocol import server_paths

    key = connection.server_key(str(ctx.path(args.path)), ctx.database(args.db))
    if key is not None and connection.ask(paths := server_paths(*key), "stop") is not None:
        connection.wait_stopped(paths, 30.0)


COMMANDS = (
    Command("index", "build or update the code index (incremental: only changed files are re-read)", run_index,
            add_index),
    Command("watch", "keep the index fresh until interrupted", run_watch,
            lambda p: p.add_argument("--no-embed", action="store_true", help="do not fill in embeddings while idle")),
    Command("stats", "counts for the database(s)", run_stats),
    Command("gc", "apply the retention policy, compact the database and remove old versions now", run_gc,
            lambda p: p.add_argument("--dry-run", action="store_true", help="only show what retention would drop")),
    Command("doctor", "check every table; rebuild the code index, restore memories from the newest readable version",
            run_doctor),
)
