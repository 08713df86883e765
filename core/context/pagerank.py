"""Personalised PageRank by power iteration over a row-normalised sparse matrix (networkx's method, numpy's speed).

Selection ranks files over the import graph with it, the repository map files over the definition -> reference
graph: one iteration, two graphs.
"""

from __future__ import annotations

import numpy as np


def row_normalised(adjacency):
    """(the matrix whose rows sum to 1, the rows that had no weight): prepared as networkx's pagerank prepares it."""
    import scipy as sp

    out = np.asarray(adjacency.sum(axis=1)).ravel()
    inverse = np.zeros_like(out)
    inverse[out != 0] = 1.0 / out[out != 0]
    matrix = sp.sparse.dia_array((inverse[np.newaxis, :], 0), shape=adjacency.shape).tocsr() @ adjacency
    return matrix, np.where(out == 0)[0]


def personalised_pagerank(matrix, dangling: np.ndarray, personal: np.ndarray, alpha: float = 0.85,
                          max_iter: int = 100, tol: float = 1e-6) -> np.ndarray | None:
    """The ranks (summing to 1) of a walk that restarts at `personal` (normalised here), dangling rows jumping there
    too; None when it does not converge within `max_iter` (networkx raises there)."""
    n = personal.shape[0]
    p = personal / personal.sum()
    x = np.repeat(1.0 / n, n)
    for _ in range(max_iter):
        last = x
        x = alpha * (x @ matrix + x[dangling].sum() * p) + (1 - alpha) * p
        if np.absolute(x - last).sum() < n * tol:
            return x
    return None
