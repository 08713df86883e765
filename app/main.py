"""`cortex-tui [PATH] [--db URI] [--task TEXT] [--budget N]`: open the dashboard."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cortex-tui", description="The cortex dashboard for a git repository.")
    parser.add_argument("path", nargs="?", default=".", help="repository to open (default: here)")
    parser.add_argument("--db", help="database directory or object-storage URI")
    parser.add_argument("--task", default="", help="start the context budget meter with this task")
    parser.add_argument("--budget", type=int, default=12000, help="token budget of the selected context")
    parser.add_argument("--theme", help="cortex-dark, cortex-light or any Textual theme")
    parser.add_argument("--here", action="store_true", help="outside git, use this plain directory instead of the demo")
    args = parser.parse_args(argv)

    from ..core import gitctx
    from ..core.engine import Engine
    from ..core.errors import CortexError

    path = Path(args.path).expanduser()
    notice = ""
    # Only an existing directory outside git falls back to the demo; a mistyped path is an error, not a detour.
    if not path.is_dir():
        problem = "is not a directory" if path.exists() else "does not exist"
        print(f"cortex-tui: error: {path} {problem}", file=sys.stderr)
        return 2
    try:
        if gitctx.repo_root(path.resolve()) is None and not args.here and not args.db:
            from ..core.demo import demo_repository, seed_memories

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
        return 1
    if args.budget <= 0:
        print("cortex-tui: error: --budget must be a positive number of tokens", file=sys.stderr)
        return 1

    from .app import CortexApp
    from .bridge import EngineBridge

    app = CortexApp(EngineBridge(engine), task=args.task, budget=args.budget, theme=args.theme)
    if notice:
        app.call_later(app.notify, notice, timeout=10, markup=False)
    app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
