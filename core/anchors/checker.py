"""Checking the memories of an answer against the working tree, cached per memory and code state.

Only memories an answer carries are checked, and a check is repeated only when HEAD, the stamp of an anchored
file or the memory's anchors moved: a search shows the same memories again at the cost of a few `stat` calls.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from ..answers import SearchHit
from ..records import Anchors, CodeChange, Memory
from .anchors import check_anchors, make_anchors
from .definitions import ParsedFiles
from .versions import WorkTree

_CACHE_SIZE = 4096
CHANGED_WEIGHT = 0.5
"""What a memory whose code changed since keeps of its search score until someone confirms it."""


class AnchorChecker:
    """One repository's working tree, and the checks made against it."""

    def __init__(self, root: Path, repo) -> None:
        self.tree = WorkTree(root, repo)
        self.parsed = ParsedFiles()
        self._results: OrderedDict[tuple, CodeChange | None] = OrderedDict()
        self._lock = threading.Lock()

    def anchor(self, commit: str, files: Iterable[str], symbols: Iterable[str]) -> Anchors | None:
        with self._lock:
            return make_anchors(self.tree, commit, files, symbols, self.parsed)

    def change(self, memory: Memory) -> CodeChange | None:
        anchors = memory.anchors
        if anchors is None:
            return None
        with self._lock:
            key = (memory.id, anchors, self.tree.state([f.path for f in anchors.files]))
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
            found = check_anchors(anchors, self.tree, self.parsed)
            if found is not None and self._in_progress(found):
                found = replace(found, in_progress=True)
            self._results[key] = found
            if len(self._results) > _CACHE_SIZE:
                self._results.popitem(last=False)
            return found

    def _in_progress(self, change: CodeChange) -> bool:
        """Uncommitted (the file in the working tree is not HEAD's), or committed on this branch's own commits: the
        work going on, not code that moved on. A change whose commit git could not name (an anchor's commit this
        clone lacks) is neither."""
        if change.path and self.tree.blob(change.path) != self.tree.committed_blob(change.path):
            return True
        return bool(change.commit) and any(sha.startswith(change.commit) for sha in self.tree.own_commits())

    def annotate(self, memories: Sequence[Memory]) -> list[Memory]:
        """The memories, each with `code_change` set when its anchored code changed since (copies; the ones
        given are left as they are, since stores and caches may hold them)."""
        out = []
        for m in memories:
            change = self.change(m)
            out.append(replace(m, code_change=change) if change != m.code_change else m)
        return out


def flag_hits(checker: AnchorChecker, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """Search hits with their memories checked: one whose code changed since is marked and keeps only
    `CHANGED_WEIGHT` of its score, moved down past the hits that now score above it (the rest keep their order).
    A change in progress (the working change, this branch's own commits) is marked and keeps its score: being
    worked on now is why the memory matters now."""
    out = list(hits)
    flagged: list[SearchHit] = []
    for i, hit in enumerate(out):
        if hit.memory is None or hit.memory.anchors is None:
            continue
        memory = checker.annotate([hit.memory])[0]
        if memory.code_change is None:
            continue
        if memory.code_change.in_progress:
            out[i] = replace(hit, memory=memory, score=replace(hit.score, boosts={**hit.score.boosts,
                                                                                  "code changed, in progress": 0.0}))
            continue
        score = replace(hit.score, boosts={**hit.score.boosts, "code changed": CHANGED_WEIGHT - 1.0},
                        total=hit.score.total * CHANGED_WEIGHT)
        out[i] = replace(hit, memory=memory, score=score)
        flagged.append(out[i])
    for hit in flagged:
        at = out.index(hit)
        out.pop(at)
        while at < len(out) and out[at].score.total > hit.score.total:
            at += 1
        out.insert(at, hit)
    return out
