"""Edge lengths of points: the checked entry to the graph layer's compiled kernel."""

from __future__ import annotations

import numpy as np

from .._validation import check_points
from ._numba import edge_length_kernel

__all__ = ["edge_lengths"]


def edge_lengths(Y, u, v):
    """Euclidean length ``||Y[u_e] - Y[v_e]||`` of every edge (u_e, v_e), over the threads.

    The graph layer's one formula for lengths (the epsilon, tree, join and grid builders call
    its kernel, the kNN lists' lengths share its per-edge sum): no (m, d) temporary, and each
    length summed in column order, so the result does not depend on the thread count.
    numpy's ``np.linalg.norm(Y[u] - Y[v], axis=1)`` sums pairwise: the two agree to rounding.

    Parameters
    ----------
    Y : array-like (n, d)
        Finite points (converted to float64).
    u, v : integer array-like (m,)
        The edges' end points, row numbers of Y in 0..n-1.

    Returns
    -------
    array (m,), float64

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import edge_lengths
    >>> Y = np.random.default_rng(0).normal(size=(5, 3))
    >>> u, v = np.array([0, 1, 2]), np.array([4, 3, 0])
    >>> bool(np.allclose(edge_lengths(Y, u, v), np.linalg.norm(Y[u] - Y[v], axis=1)))
    True
    """
    Y = check_points(Y, name="Y", min_samples=1)
    n = Y.shape[0]
    ends = []
    for name, e in (("u", u), ("v", v)):
        e = np.asarray(e)
        if e.ndim != 1 or not (np.issubdtype(e.dtype, np.integer) or e.size == 0):
            raise ValueError(f"{name} must be a 1-D array of row numbers (integers); got "
                             f"{e.dtype} of shape {e.shape}.")
        if e.size and (e.min() < 0 or e.max() >= n):
            bad = int(e[(e < 0) | (e >= n)][0])
            raise ValueError(f"{name} must hold row numbers of Y in 0..{n - 1}; got {bad}.")
        ends.append(e.astype(np.int64, copy=False))
    if ends[0].shape != ends[1].shape:
        raise ValueError(f"u and v must have one entry per edge; got {ends[0].size} and "
                         f"{ends[1].size} entries.")
    return edge_length_kernel(Y, ends[0], ends[1])
