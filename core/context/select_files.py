"""The file rows selection reads, each filtered and projected inside LanceDB, and the import graph's proximity.

Selection needs the rows of its candidates only: the files search hit, the working change, pins, the files the task
names (paths matched by a regular expression in LanceDB, then checked exactly here) and the files defining a symbol
the task names (the `symbols` column matched the same way). The import graph is the one whole-table structure: it
is built once per version of the `files` table, shared by every thread, and rebuilt when any process writes it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np

from ..store.sql import in_filter, quote, scan, symbols_filter
from .pagerank import Edges, personalised_pagerank, row_normalised

FILE_COLUMNS = ["path", "is_test", "tokens", "last_commit_time", "symbols"]
"""What selection ranks a file by (its imports live in the cached graph)."""
_BATCH = 500
"""Names per filter, so one filter stays small however long the task is."""
_PATHISH = re.compile(r"[\w.\-/]+\.[A-Za-z0-9]{1,6}\b|[\w]+(?:\.[\w]+){1,6}")
_SYMBOL_NAME = re.compile(r"[\w$]+")


def named_files(task: str, paths: Iterable[str]) -> set[str]:
    """Files the task names: by path, by a unique file name, or as a dotted module (`flask.json.tag`)."""
    paths = list(paths)
    by_name: dict[str, list[str]] = {}
    by_module: dict[str, str] = {}
    for p in paths:
        by_name.setdefault(p.rsplit("/", 1)[-1], []).append(p)
        stem = p.rsplit(".", 1)[0]
        by_module[stem.replace("/", ".")] = p
        if stem.endswith("/__init__"):
            by_module[stem[: -len("/__init__")].replace("/", ".")] = p
    found: set[str] = set()
    path_set = set(paths)
    for token in _PATHISH.findall(task):
        token = token.strip("./")
        if token in path_set:
            found.add(token)
        elif "/" in token:
            found.update(p for p in paths if p.endswith("/" + token))
        elif len(by_name.get(token, [])) == 1:
            found.add(by_name[token][0])
        else:
            for module, path in by_module.items():
                if module == token or module.endswith("." + token):
                    if token.count(".") >= 1:
                        found.add(path)
    return found


def _path_pattern(token: str) -> str:
    """A regular expression every path the token could name contains: a dot in the token stands for a dot or, in a
    dotted module, a slash (tokens hold only word characters, dots, dashes and slashes)."""
    return "[./]".join(token.split("."))


@dataclass(frozen=True)
class ImportGraph:
    """The undirected file import graph as the row-normalised matrix personalised PageRank iterates over."""

    nodes: list[str]
    position: dict[str, int]
    matrix: Edges
    dangling: np.ndarray
    edges: int

    @classmethod
    def build(cls, rows: Iterable[dict]) -> ImportGraph:
        rows = list(rows)
        present = {r["path"] for r in rows}
        # Nodes in the order networkx's graph held them (a file, then the files it imports that were not seen yet),
        # each import one undirected edge, a file importing itself one entry on the diagonal: the ranks are
        # nx.pagerank's on the same graph, up to rounding in the last bits.
        position: dict[str, int] = {}
        pairs: set[tuple[int, int]] = set()
        for row in rows:
            a = position.setdefault(row["path"], len(position))
            for target in row["imports"] or []:
                if target in present:
                    b = position.setdefault(target, len(position))
                    pairs.add((min(a, b), max(a, b)))
        nodes = list(position)
        if not nodes:
            return cls([], {}, Edges.of([], [], [], (0, 0)), np.zeros(0, dtype=int), 0)
        ends = np.array(list(pairs), dtype=np.int64).reshape(-1, 2)
        loop = ends[:, 0] == ends[:, 1]
        heads = np.concatenate((ends[:, 0], ends[~loop, 1]))
        tails = np.concatenate((ends[:, 1], ends[~loop, 0]))
        matrix, dangling = row_normalised(Edges.of(heads, tails, np.ones(len(heads)), (len(nodes), len(nodes))))
        return cls(nodes, position, matrix, dangling, len(pairs))

    def proximity(self, seeds: Iterable[str], alpha: float = 0.85, max_iter: int = 100, tol: float = 1e-6) -> dict[str, float]:
        """Personalised PageRank from the seeds (every seed weighted alike), scaled so the nearest file scores 1."""
        present = [s for s in dict.fromkeys(seeds) if s in self.position]
        if not present or self.edges == 0:
            return {}
        p = np.zeros(len(self.nodes))
        p[[self.position[s] for s in present]] = 1.0
        x = personalised_pagerank(self.matrix, self.dangling, p, alpha, max_iter, tol)
        if x is None:
            return {}
        ranks = dict(zip(self.nodes, map(float, x)))
        for s in present:
            ranks.pop(s, None)
        top = max(ranks.values(), default=0.0)
        return {path: r / top for path, r in ranks.items()} if top > 0 else {}


class ImportGraphCache:
    """One import graph per version of a `files` table. The version is read before the table, so a write racing the
    read leaves a graph stamped older than it is and the next call builds again; threads wait for one build."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[int, ImportGraph] | None = None
        self.builds = 0

    def get(self, table) -> ImportGraph:
        version = table.version
        with self._lock:
            if self._cached is None or self._cached[0] != version:
                self._cached = (version, ImportGraph.build(scan(table, None, ["path", "imports"])))
                self.builds += 1
            return self._cached[1]

    def forget(self) -> None:
        """Let go of the cached graph (a long-lived process after a quiet spell); the next call builds it again."""
        with self._lock:
            self._cached = None


class FileReads:
    """Filtered, projected reads of one `files` table (None without an index), and its cached import graph."""

    def __init__(self, table, graphs: ImportGraphCache) -> None:
        self.table = table
        self._graphs = graphs

    def rows(self, paths: Collection[str]) -> dict[str, dict]:
        """The rows of these paths that are indexed, in table order."""
        where = in_filter("path", list(dict.fromkeys(paths)))
        return self._where([where] if where else [])

    def named(self, task: str) -> set[str]:
        """`named_files` over the paths that could match one of the task's path-like tokens."""
        tokens = sorted({t.strip("./") for t in _PATHISH.findall(task)} - {""})
        filters = [f"regexp_like(path, {quote('|'.join(_path_pattern(t) for t in tokens[lo:lo + _BATCH]))})"
                   for lo in range(0, len(tokens), _BATCH)]
        return named_files(task, self._where(filters, ["path"]))

    def defining(self, names: Collection[str]) -> dict[str, dict]:
        """Rows of the files defining a symbol whose last part is one of `names` (compared lower-cased), in table
        order."""
        where = symbols_filter(sorted(n for n in names if _SYMBOL_NAME.fullmatch(n)), ignore_case=True)
        lowered = {n.lower() for n in names}
        return {path: row for path, row in self._where([where] if where else []).items()
                if {s.rsplit(".", 1)[-1].lower() for s in row["symbols"] or []} & lowered}

    def proximity(self, seeds: Iterable[str]) -> dict[str, float]:
        if self.table is None:
            return {}
        return self._graphs.get(self.table).proximity(seeds)

    def _where(self, filters: list[str], columns: list[str] = FILE_COLUMNS) -> dict[str, dict]:
        """One read for all the filters (ORed), so rows come back in table order."""
        if self.table is None or not filters:
            return {}
        return {r["path"]: r for r in scan(self.table, " OR ".join(f"({f})" for f in filters), columns)}
