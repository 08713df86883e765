"""What selection reads from the repository, gathered once by the engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .regions import Chunk
from .select_files import FileReads


@dataclass(frozen=True)
class SelectInputs:
    """Everything selection reads from the repository, gathered once: the feature itself never calls back into the
    engine (and a benchmark can replay these inputs)."""

    task: str
    files: FileReads
    """The indexed files' rows, read for the candidates only, and the import graph's proximity."""
    code_hits: list
    """Search hits over code (`search.SearchHit`), best first."""
    memory_hits: list
    changed: list[str]
    commit: str
    encoding: str
    chunks: Callable[[list[str]], dict[str, list[Chunk]]]
    """Loads the chunks (with vectors when embedded) of some files."""
    query_vector: Callable[[], np.ndarray | None]
    """The task's embedding, asked for only when chunks carry vectors."""
    pinned_memories: list = field(default_factory=list)
    """Memories the request pins that search did not find (an open task pinned from pane 1): they go in all the
    same."""
