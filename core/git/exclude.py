"""Keeping `.cortex/` out of git: a line in the repository's `.git/info/exclude`, never a tracked file."""

from __future__ import annotations

from pathlib import Path

from ..errors import CortexError
from ..locations import CORTEX_DIRNAME
from .gitctx import find_repo


def exclude_cortex_dir(root: Path) -> None:
    """Add `/.cortex/` to the exclude file of the repository at `root` once (shared by its worktrees)."""
    repo = find_repo(root)
    if repo is None:
        return
    exclude = Path(repo.common_dir) / "info" / "exclude"
    line = f"/{CORTEX_DIRNAME}/"
    try:
        existing = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
        if line not in existing.splitlines():
            exclude.parent.mkdir(parents=True, exist_ok=True)
            sep = "" if not existing or existing.endswith("\n") else "\n"
            exclude.write_text(f"{existing}{sep}{line}\n", encoding="utf-8")
    except OSError as exc:
        raise CortexError(f"cannot update {exclude}: {exc.strerror}") from exc
