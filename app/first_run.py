"""What cortex says the first time it makes `.cortex/` in a directory: where, how many files its index takes in, and
that a resident server stays after the command, so that a first run in the wrong place (a home directory, the
parent of a repository) is seen at once instead of found later.

The module's top imports the standard library only: the thin client imports the CLI's parser, and that imports this.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

CORTEX_DIRNAME = ".cortex"
"""`core.locations.CORTEX_DIRNAME`, not imported from there: that module brings platformdirs to the thin client."""


@dataclass(frozen=True)
class FirstRun:
    """A directory without `.cortex/` that a command or the dashboard is about to open."""

    root: Path
    """The work tree holding the path opened (a `.git` above it), else that directory: where `.cortex/` goes."""
    is_repo: bool

    @classmethod
    def ahead(cls, path: Path) -> FirstRun | None:
        """The first run about to happen at `path`; None when `.cortex/` is there already (or `path` is not)."""
        try:
            start = path.expanduser().resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        root = next((d for d in (start, *start.parents) if (d / ".git").exists()), None)
        found = cls(root or start, root is not None)
        return None if (found.root / CORTEX_DIRNAME).exists() else found

    def made(self) -> bool:
        """The run made `.cortex/` (a read, or a database elsewhere, makes none)."""
        return (self.root / CORTEX_DIRNAME).is_dir()

    def files(self, max_bytes: int) -> int:
        """How many files the index takes in here: the index's own listing (git's, or a walk outside git)."""
        from ..core.index.walk import list_files

        return len(list_files(self.root, self.is_repo, max_bytes).files)

    def made_here(self, files: int) -> str:
        kept = "kept out of git" if self.is_repo else "not a git repository: cortex works on the plain directory"
        # Counted from the index's listing, before any file is read: binary and secret files are found (and left
        # out) only as the index reads them, so the number is what it will look at, said as such.
        listed = "1 file" if files == 1 else f"{files:,} files"
        return (f"first run in {self.root}: made {CORTEX_DIRNAME}/ there ({kept}); {listed} listed for the index "
                f"(binary and secret ones are skipped)")


def server_stays(idle_minutes: float) -> str:
    return (f"a resident server keeps the engine warm for the CLI, the dashboard and agents, and exits after "
            f"{idle_minutes:g} idle minutes; `cortex serve --stop` ends it now")
