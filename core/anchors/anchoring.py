"""Anchoring as the engine uses it: new memories get the anchors of the code they name, answers mark the memories
whose code changed since, and a confirmation records a memory's anchors again. One checker per working tree, made
on first use (it opens the repository)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CortexError
from ..git import gitctx
from ..records import Anchors, Memory, MemoryDraft

if TYPE_CHECKING:
    from .checker import AnchorChecker


class Anchoring:
    def __init__(self, root: Path, in_git: bool, definers: Callable[[Sequence[str]], tuple[str, ...]]) -> None:
        """`definers`: the indexed files defining some symbols (for a memory that names symbols but no file)."""
        self.root = root
        self.in_git = in_git
        self.definers = definers
        self._lock = threading.Lock()
        self._checker: AnchorChecker | None = None

    def checker(self) -> AnchorChecker | None:
        """The working tree's checker (None outside git)."""
        if not self.in_git:
            return None
        with self._lock:
            if self._checker is None:
                from .checker import AnchorChecker

                self._checker = AnchorChecker(self.root, gitctx.find_repo(self.root))
            return self._checker

    def anchored(self, drafts: Sequence[MemoryDraft], commit: str) -> list[MemoryDraft]:
        """Drafts naming files or symbols, with the anchors of that code as the working tree has it now. Symbols
        named without a file are looked up among the indexed definitions."""
        checker = self.checker()
        if checker is None:
            return list(drafts)
        out = []
        for d in drafts:
            # A task is a plan for the code, not a claim about it: its code is meant to change.
            if d.anchors is None and d.kind != "task" and (d.files or d.symbols):
                files = d.files or self.definers(d.symbols)
                d = replace(d, anchors=checker.anchor(commit, files, d.symbols))
            out.append(d)
        return out

    def checked(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories, each marked when the code it is anchored to changed since."""
        checker = self.checker()
        return checker.annotate(memories) if checker is not None else list(memories)

    def fresh_first(self, memories: Sequence[Memory]) -> list[Memory]:
        """Checked, those whose code did not change (or changes in the work going on now) first."""
        return sorted(self.checked(memories), key=lambda m: m.code_change is not None and not m.code_change.in_progress)

    def renewed(self, memory: Memory, commit: str) -> Anchors | None:
        """A memory's anchors recorded again for its code as it is now (moved files followed)."""
        checker = self.checker()
        if memory.anchors is None or checker is None:
            raise CortexError(f"memory {memory.id} is not anchored to code; nothing to confirm")
        files = [self._followed(checker, memory, f.path) for f in memory.anchors.files]
        symbols = [s.name for f in memory.anchors.files for s in f.symbols] or list(memory.symbols)
        return checker.anchor(commit, files, symbols)

    @staticmethod
    def _followed(checker: AnchorChecker, memory: Memory, path: str) -> str:
        """Where a memory's anchored file is now (git's rename detection follows a moved file)."""
        if memory.anchors is None or checker.tree.blob(path) is not None:
            return path
        return checker.tree.renamed(memory.anchors.commit, path) or path
