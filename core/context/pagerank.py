"""Personalised PageRank by power iteration over a row-normalised sparse matrix (networkx's method, numpy's speed).

Selection ranks files over the import graph with it, the repository map files over the definition -> reference
graph: one iteration, two graphs. The sparse matrices are numpy arrays of their entries (`Edges`): what the two
rankings ask of a sparse matrix is row sums and products with a vector, and scipy's sparse arrays cost a resident
server 20 MiB of imports for the rest of its life (docs/benchmarks.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


@dataclass(frozen=True, eq=False)
class Edges:
    """A sparse matrix as its entries: `weights[i]` at (`rows[i]`, `cols[i]`); repeated entries add up."""

    rows: np.ndarray
    cols: np.ndarray
    weights: np.ndarray
    shape: tuple[int, int]

    @classmethod
    def of(cls, rows: ArrayLike, cols: ArrayLike, weights: ArrayLike, shape: tuple[int, int]) -> Edges:
        """With repeated entries summed into one, in (row, column) order, as a CSR array holds them: every product
        then reads each entry once (the map's graph has a few entries per file pair, one per name)."""
        rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        width = max(shape[1], 1)
        keys, slot = np.unique(rows * width + cols, return_inverse=True)
        weights = _sums(slot, np.asarray(weights, dtype=np.float64), len(keys))
        # Positions kept as int32 (as scipy's CSR keeps them) while they fit: the map's graph on a 2,000-file
        # repository has about 1.2 million entries, so 10 MiB less for as long as the server keeps it.
        index = np.int32 if max(shape) < 2**31 else np.int64
        return cls((keys // width).astype(index), (keys % width).astype(index), weights, shape)

    def row_sums(self) -> np.ndarray:
        return _sums(self.rows, self.weights, self.shape[0])

    def times(self, vector: np.ndarray) -> np.ndarray:
        """matrix @ vector."""
        return _sums(self.rows, self.weights * vector[self.cols], self.shape[0])

    def times_left(self, vector: np.ndarray) -> np.ndarray:
        """vector @ matrix."""
        return _sums(self.cols, vector[self.rows] * self.weights, self.shape[1])

    def plus(self, other: Edges, factor: float = 1.0) -> Edges:
        """self + factor * other."""
        return Edges(np.concatenate((self.rows, other.rows)), np.concatenate((self.cols, other.cols)),
                     np.concatenate((self.weights, factor * other.weights)), self.shape)


def _sums(index: np.ndarray, weights: np.ndarray, length: int) -> np.ndarray:
    """The weights summed by index, as floats (numpy's bincount answers integers when it is given no entries)."""
    return np.bincount(index, weights=weights, minlength=length).astype(np.float64, copy=False)


def row_normalised(adjacency: Edges) -> tuple[Edges, np.ndarray]:
    """(the matrix whose rows sum to 1, the rows that had no weight): prepared as networkx's pagerank prepares it."""
    out = adjacency.row_sums()
    inverse = np.zeros_like(out)
    inverse[out != 0] = 1.0 / out[out != 0]
    matrix = Edges(adjacency.rows, adjacency.cols, adjacency.weights * inverse[adjacency.rows], adjacency.shape)
    return matrix, np.where(out == 0)[0]


def personalised_pagerank(matrix: Edges, dangling: np.ndarray, personal: np.ndarray, alpha: float = 0.85,
                          max_iter: int = 100, tol: float = 1e-6) -> np.ndarray | None:
    """The ranks (summing to 1) of a walk that restarts at `personal` (normalised here), dangling rows jumping there
    too; None when it does not converge within `max_iter` (networkx raises there)."""
    n = personal.shape[0]
    p = personal / personal.sum()
    x = np.repeat(1.0 / n, n)
    for _ in range(max_iter):
        last = x
        x = alpha * (matrix.times_left(x) + x[dangling].sum() * p) + (1 - alpha) * p
        if np.absolute(x - last).sum() < n * tol:
            return x
    return None
