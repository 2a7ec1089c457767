"""Markov stability of groupings of coarse units, and their greedy merge with exact gains.

The scan (`_markov_selection`) merges a few dozen consensus pieces per walk length from their
flow matrix G (the pieces' stationary flows at that walk length) and masses p, and polishes
thousands of candidate groupings that way: `merge_by_stability` runs its merges and moves as
compiled loops (a plain numpy transcription in the tests gives the same groupings).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

__all__ = ["coarse_stability", "indicator", "merge_by_stability"]


def indicator(labels, n_clusters=None, dense=False):
    """The n x c indicator matrix of integer labels 0..c-1: sparse (CSR), or a dense array
    with `dense` (the same values, without scipy's construction: the scan's merges of a few
    dozen pieces make thousands of these)."""
    labels = np.asarray(labels, dtype=np.int64)
    n = labels.size
    c = int(labels.max()) + 1 if n_clusters is None else int(n_clusters)
    if dense:
        A = np.zeros((n, c))
        A[np.arange(n), labels] = 1.0
        return A
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, c))


def coarse_stability(G, p, groups=None):
    """Markov stability ``trace(A^T G A) - |A^T p|^2`` of the grouping A of the units of G."""
    if groups is None:
        return float(np.trace(G) - p @ p)
    A = indicator(groups, dense=True)
    return float(np.trace(A.T @ G @ A) - (A.T @ p) @ (A.T @ p))


def merge_by_stability(G, p, initial=None, n_groups=None):
    """Greedy agglomeration of coarse units maximising Markov stability, with exact gains.

    Pairs are merged by largest gain ``2 (G_ab - p_a p_b)`` while a positive gain remains
    (Newman's greedy modularity on the c x c flow matrix of the resolvent walk); then single
    units move between groups while a move increases the stability (at most 20 sweeps).
    With `n_groups`, the merges go on (the least loss first) or stop so that exactly that many
    groups remain, and the moves keep every group non-empty: the best greedy cut of the
    dendrogram at that number.

    Parameters
    ----------
    G : array (c, c), symmetric flow matrix (`flow_matrix`)
    p : array (c,), stationary masses
    initial : int array (c,), optional
        Start the agglomeration from this grouping of the units instead of singletons.
    n_groups : int, optional
        1 <= n_groups <= the number of starting groups: the number of groups returned.

    Returns
    -------
    groups : int array (c,), the group 0..k-1 of each unit

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[.2, .2, 0, 0], [.2, .1, 0, 0], [0, 0, .1, .2], [0, 0, .2, 0.]])
    >>> merge_by_stability(G, G.sum(axis=1)).tolist()
    [0, 0, 1, 1]
    """
    G = np.asarray(G, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    c = G.shape[0]
    B = G - np.outer(p, p)
    if initial is None:
        start = np.arange(c)
        Bc = B.copy()
        k0 = c
    else:
        start = np.unique(np.asarray(initial), return_inverse=True)[1]
        A0 = indicator(start, dense=True)
        Bc = np.zeros((c, c))
        k0 = A0.shape[1]
        Bc[:k0, :k0] = A0.T @ B @ A0
    if n_groups is not None and not 1 <= n_groups <= k0:
        raise ValueError(f"n_groups must satisfy 1 <= n_groups <= {k0} (the starting "
                         f"groups); got {n_groups}.")
    alive = np.zeros(c, np.bool_)
    alive[:k0] = True
    # the scan polishes thousands of groupings of a few dozen pieces: the loops in numba
    rep = _greedy_merges(Bc, alive, 1 if n_groups is None else int(n_groups),
                         n_groups is not None)
    rank = np.cumsum(alive) - 1  # the surviving groups numbered in order
    groups = _single_moves(B, rank[rep[start]].astype(np.int64))
    _, groups = np.unique(groups, return_inverse=True)
    return groups


@njit(cache=True)
def _greedy_merges(Bc, alive, target, forced):
    """The greedy phase of `merge_by_stability` on the gains `Bc` of the `alive` groups (both
    written over): per step the pair of largest gain (the first in row-major order), merged
    while it gains (or, `forced`, until `target` groups remain). Returns each group's survivor."""
    c = Bc.shape[0]
    rep = np.arange(c)
    count = 0
    for i in range(c):
        count += alive[i]
    while count > target:
        best, a, b = -np.inf, -1, -1
        for i in range(c):
            if alive[i]:
                for j in range(c):
                    if alive[j] and j != i and Bc[i, j] > best:
                        best, a, b = Bc[i, j], i, j
        if a < 0 or (best <= 0 and not forced):
            break
        for t in range(c):
            Bc[a, t] += Bc[b, t]
        for t in range(c):
            Bc[t, a] += Bc[t, b]
        alive[b] = False
        for t in range(c):
            if rep[t] == b:
                rep[t] = a
        count -= 1
    return rep


@njit(cache=True)
def _single_moves(B, groups):
    """The move phase of `merge_by_stability`: each unit in turn to the group of largest gain
    when it gains more than 1e-12 and leaves no group empty, for at most 20 sweeps."""
    c = B.shape[0]
    k = groups.max() + 1
    sizes = np.zeros(k, np.int64)
    for u in range(c):
        sizes[groups[u]] += 1
    to = np.empty(k)
    for _ in range(20):
        moved = False
        for u in range(c):
            g = groups[u]
            to[:] = 0.0
            for v in range(c):
                to[groups[v]] += B[u, v]
            own = to[g] - B[u, u]
            best, gbest = -np.inf, 0
            for t in range(k):
                gain = 0.0 if t == g else to[t] - own
                if gain > best:
                    best, gbest = gain, t
            if best > 1e-12 and sizes[g] > 1:
                groups[u] = gbest
                sizes[g] -= 1
                sizes[gbest] += 1
                moved = True
        if not moved:
            break
    return groups
