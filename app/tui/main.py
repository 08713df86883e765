"""`cortex-tui [PATH] [--db URI] [--task TEXT] [--budget N]`: open the dashboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..first_run import FirstRun, server_stays
from ..version import VersionAction
from . import collector


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error on one line, as the `cortex` command line writes its own (app/cli/parser.py),
    instead of the whole usage before it."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def main(argv: list[str] | None = None) -> int:
    collector.hold()  # until the first panes are filled (see collector)
    parser = _Parser(prog="cortex-tui", description="The cortex dashboard for a git repository.")
    parser.add_argument("path", nargs="?", default=".", help="repository to open (default: here)")
    parser.add_argument("--db", help="database directory or object-storage URI")
    parser.add_argument("--task", default="", help="start the context budget meter with this task")
    parser.add_argument("--budget", type=int, default=12000, help="token budget of the selected context")
    parser.add_argument("--theme", help="cortex-dark, cortex-light or any Textual theme")
    parser.add_argument("--here", action="store_true", help="outside git, use this plain directory instead of the demo")
    parser.add_argument("--no-daemon", action="store_true",
                        help="build the engine in this process instead of attaching to the resident server")
    parser.add_argument("--version", action=VersionAction)
    args = parser.parse_args(argv)

    path = Path(args.path).expanduser()
    notice = ""
    # Only an existing directory outside git falls back to the demo; a mistyped path is an error, not a detour.
    if not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        print(f"cortex-tui: error: {path} {problem}", file=sys.stderr)
        return 2
    if args.budget <= 0:
        print("cortex-tui: error: --budget must be a positive number of tokens", file=sys.stderr)
        return 1
    if args.theme is not None and (unknown := _unknown_theme(args.theme)):
        print(f"cortex-tui: error: {unknown}", file=sys.stderr)
        return 1
    first = FirstRun.ahead(path)
    bridge = _attached(path, args)
    served = bridge is not None
    if bridge is None:
        made = _in_process(path, args)
        if made is None:
            return 1
        bridge, notice = made
    # The demo, or a database elsewhere, makes no `.cortex/` here.
    said = _first_run(first, served) if first is not None and not notice and not args.db else None

    from .app import CortexApp

    app = CortexApp(bridge, task=args.task, budget=args.budget, theme=args.theme)
    if said is not None:
        whole = "; ".join(filter(None, said))
        app.call_later(app.notify, whole[0].upper() + whole[1:], timeout=30, markup=False)
    elif notice:
        app.call_later(app.notify, notice, timeout=10, markup=False)
    app.run()
    if first is not None and said is not None:
        # Said again once the screen is the shell's: the toast went with the dashboard, the server stays. A `q`
        # before the first database call made no `.cortex/`, but the server is there all the same.
        left = "; ".join(filter(None, said if first.made() else said[1:]))
        if left:
            print(f"cortex-tui: {left}", file=sys.stderr)
    return app.return_code or 0  # 1 when the dashboard ended on an error


def _unknown_theme(name: str) -> str | None:
    """One line naming the themes there are when `--theme` names none of them (the dashboard would start in its
    default theme without a word), else None. Textual's theme module is imported only when a theme is asked for."""
    from textual.theme import BUILTIN_THEMES as TEXTUAL_THEMES

    from ...themes import BUILTIN_THEMES

    names = [*BUILTIN_THEMES, *sorted(TEXTUAL_THEMES)]
    return None if name in names else f"no theme {name!r}; the themes are {', '.join(names)}"


def _first_run(first: FirstRun, served: bool) -> tuple[str, str] | None:
    """What a first run in this directory does: where it makes `.cortex/` and how many files it lists for the index, and that
    the resident server stays ("" in-process); None when the settings put the database elsewhere."""
    from ...core.config import load_settings

    settings = load_settings()
    if settings.db:
        return None
    return (first.made_here(first.files(settings.max_file_bytes)),
            server_stays(settings.daemon_idle_minutes) if served else "")


def _attached(path: Path, args):
    """A bridge to the repository's resident server (started if need be) when the daemon is wanted; None outside
    git without --here or --db (the demo is in-process), or when no server can be reached or started."""
    from ..link.connection import daemon_wanted, repository_root

    root = repository_root(path)
    if args.no_daemon or not daemon_wanted() or root is None or (not (Path(root) / ".git").exists() and not args.here and not args.db):
        return None
    from ..link.remote import Remote

    remote = Remote.attach(path, args.db, start=True)
    if remote is None:
        return None
    # Its first calls go out now, before the dashboard's imports: the server answers them meanwhile.
    from .early import EarlyBridge
    from .session import new_session

    return EarlyBridge(remote, new_session())


def _in_process(path: Path, args):
    """(bridge over an engine of this process, notice), or None after printing why not."""
    from ...core.engine import Engine
    from ...core.errors import CortexError
    from ...core.git import gitctx
    from ..bridge.local import EngineBridge

    notice = ""
    try:
        if gitctx.repo_root(path.resolve()) is None and not args.here and not args.db:
            from ...core.demo import demo_repository, seed_memories

            notice = (f"{path.resolve()} is not a git repository: showing the demo repository. "
                      "Run inside a repository, or pass --here to use this directory; memories with --scope global "
                      "are shared by every repository.")
            path = demo_repository()
            engine = Engine(path)
            seed_memories(engine)
        else:
            # The database opens in the dashboard's first worker, which reports a locked or corrupted one there.
            engine = Engine(path, db=args.db)
    except CortexError as exc:
        print(f"cortex-tui: error: {exc}", file=sys.stderr)
        return None
    return EngineBridge(engine), notice


def run() -> None:
    """The installed command: `main`, then an exit that no background thread's LanceDB call can abort (see leave)."""
    from ..leave import run_installed

    run_installed(main, "cortex-tui")


if __name__ == "__main__":
    run()
