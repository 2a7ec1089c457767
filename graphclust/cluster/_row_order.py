"""Orders of the rows that do not depend on the order they came in.

`StabilityClustering` fits on its points in such an order and maps every result back, so a
permutation of the rows permutes the labels and changes nothing else. Without it the row order
entered the fit twice: NN-descent's candidate lists and the Leiden runs' node visits both follow
the node numbering, so a row permutation moved 0.8-1.2 % of MNIST's labels
(docs/model_selection.md, *The row order is out of the fit*). The first order is
`graphclust.graphs.canonical_order`'s (a hash of each row's values); up to 20 000 points the
fit then continues in its exact kNN lists' own order (`lists_order`), which a scale keeps.

Both orders are pseudo-random with respect to the geometry. An order that follows the
geometry does not do: sorted by a random projection, letters' fine Leiden partitions disagreed
between seeds and the fit returned one cluster for random_state 0 and 2 (NMI 0 instead of
0.63), as Leiden's moves depend on the node numbering.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

from .._hashing import GOLDEN, splitmix64
from ..graphs import canonical_order, row_keys

__all__ = ["canonical_order", "canonical_node_order", "distinct_rows", "fitted_rows",
           "lists_in_order", "lists_order", "rows_as_float64"]

#: Rows per block of `rows_as_float64`'s gathers.
_CHUNK = 65536


def canonical_node_order(W, rounds=3):
    """An order of a graph's nodes that does not depend on how they were numbered.

    The key of a node is its colour after `rounds` rounds of Weisfeiler-Lehman refinement
    (Shervashidze et al. 2011): first a hash of its number of links, then each round a hash of
    its colour and of the multiset of its neighbours' colours, each with the link's weight
    relative to the largest (its single-precision bits). Nodes the refinement cannot tell
    apart (symmetric positions, such as the two ends of a path) keep their input order; on the
    graphs communities are looked for in, few are. Leiden visits and aggregates nodes in their
    numbering, so without it the order nodes were added to a networkx graph changed
    `graphclust.communities` (docs/applications.md, *The node order is out of the fit, ...*).

    Parameters
    ----------
    W : sparse symmetric matrix (n, n)
    rounds : int

    Returns
    -------
    order : int64 array (n,), ``W[order][:, order]`` is the graph in the canonical order

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0.]]))
    >>> p = np.array([3, 1, 0, 2])
    >>> a, b = canonical_node_order(W), canonical_node_order(W[p][:, p])
    >>> bool((abs(W[a][:, a] - W[p][:, p][b][:, b]) > 0).nnz == 0)
    True
    """
    return np.argsort(_colours(W, rounds), kind="stable").astype(np.int64)


def _colours(W, rounds=3):
    """The Weisfeiler-Lehman colours of `canonical_node_order`, one uint64 per node."""
    W = sp.csr_matrix(W)
    data = np.abs(W.data)
    top = float(data.max()) if data.size else 1.0
    bits = np.ascontiguousarray(data / (top if top > 0 else 1.0), dtype=np.float32)
    return _node_colours(W.indptr.astype(np.int64), W.indices.astype(np.int64),
                         bits.view(np.uint32), int(rounds))


@njit(cache=True)
def _node_colours(indptr, indices, bits, rounds):
    n = indptr.size - 1
    h = np.empty(n, dtype=np.uint64)
    for i in range(n):
        links = 0
        for p in range(indptr[i], indptr[i + 1]):
            if indices[p] != i:
                links += 1
        h[i] = splitmix64(np.uint64(links) ^ GOLDEN)
    new = np.empty(n, dtype=np.uint64)
    for _ in range(rounds):
        for i in range(n):
            s = np.uint64(0)  # a sum of hashes: the multiset of the neighbours' colours
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if j != i:
                    s += splitmix64(h[j] ^ (np.uint64(bits[p]) * GOLDEN))
            new[i] = splitmix64(h[i] * GOLDEN ^ s)
        h, new = new, h
    return h


def lists_order(idx, dist):
    """`canonical_node_order` of the kNN lists `idx` (n, k) as a graph: each pair linked once,
    twice when each is in the other's list (the graph's own structure, no distances); nodes
    it cannot tell apart (about one in 240 of a random 6-NN graph: a close pair with the same
    lists) by their nearest and k-th neighbour distances `dist`, whose order a scale keeps.

    Exact lists are the same for X, X times any positive number and X shifted, in any row
    order; `canonical_order`'s keys follow only a power-of-two scaling (the values' bits). So
    `StabilityClustering` refits on exact lists in this order, and its Leiden runs visit the
    nodes the same way for all of these (eight blobs times 7.3: ARI 0.988 before;
    docs/model_selection.md, *An order that any scale keeps*). Distances that tie exactly
    (integer values) may tie for one scale and not another: there the lists, and the order,
    can move.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> a = lists_order(*nearest_neighbors(X, 5))
    >>> bool((a == lists_order(*nearest_neighbors(7.3 * X + 1, 5))).all())
    True
    """
    n, k = idx.shape
    A = sp.csr_matrix((np.ones(idx.size), np.asarray(idx).ravel(), np.arange(0, n * k + 1, k)),
                      shape=(n, n))
    dist = np.asarray(dist)
    return np.lexsort((dist[:, 0], dist[:, -1], _colours(A + A.T))).astype(np.int64)


def lists_in_order(X, idx, dist, order):
    """``X[order]`` and its kNN lists: those of X (`idx` renumbered, `dist`) in that order."""
    order = np.asarray(order)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    return X[order], inv[idx[order]], dist[order]


def rows_as_float64(X, order):
    """``X[order]`` as a new C-contiguous float64 array, gathered and converted in one pass.

    For float32 (or other) input, ``np.asarray(X, float64)[order]`` makes two copies of the
    points (at 10^6 x 50, two blocks of 400 MB of fresh memory, about 1 s each on this
    project's machine: docs/scaling.md); here the rows are gathered a block at a time into
    the one float64 array.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(12, dtype=np.float32).reshape(4, 3)
    >>> rows_as_float64(X, np.array([2, 0, 3, 1]))[:, 0].tolist()
    [6.0, 0.0, 9.0, 3.0]
    """
    X = np.asarray(X)
    order = np.asarray(order)
    out = np.empty((order.size,) + X.shape[1:], dtype=np.float64)
    for a in range(0, order.size, _CHUNK):
        out[a:a + _CHUNK] = X[order[a:a + _CHUNK]]
    return out


def distinct_rows(X):
    """(order, first): `canonical_order` of the rows of X, and where a new distinct row begins.

    ``first[i]`` is True when row ``order[i]`` differs from row ``order[i - 1]`` (and at i = 0):
    equal rows have equal keys (`graphclust.graphs.row_keys`), so in that order they stand
    together, and only neighbours with equal keys are compared, value by value (-0.0 equals
    0.0). Rows equal in single precision but not in double keep their input order among
    themselves, so two equal rows separated by such a row count twice: never two different
    rows as one.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [1.0, 2.0]])
    >>> order, first = distinct_rows(X)
    >>> order.tolist(), first.tolist()
    ([0, 2, 3, 1], [True, False, False, True])
    """
    keys = row_keys(X)
    order = np.argsort(keys, kind="stable").astype(np.int64)
    keys = keys[order]
    first = np.ones(order.size, dtype=bool)
    tied = np.flatnonzero(keys[1:] == keys[:-1]) + 1  # candidates: the key of the row before
    if tied.size:
        a, b = X[order[tied]], X[order[tied - 1]]
        if sp.issparse(X):
            same = (sp.csr_matrix(a) != sp.csr_matrix(b)).getnnz(axis=1) == 0
        else:
            same = (np.asarray(a) == np.asarray(b)).all(axis=1)
        first[tied[same]] = False
    return order, first


def fitted_rows(X, k, n_clusters=None):
    """(rows, owner): the rows of X that a fit on k-NN lists takes, in `canonical_order`, and
    for each row of X the position in `rows` of the point it is (equal rows are one point).

    A kNN list of tied zero distances holds some of a point's copies, so the lists of repeated
    rows see fewer distinct neighbours, their fuzzy weights collapse onto the copies
    (`fuzzy_affinity`: each copy weighs 1 against UMAP's target log2(k + 1)), and the graph
    falls apart: three moons with every row given twice gave 11 clusters, two spirals with
    30 % of the rows twice gave 4 (docs/model_selection.md, *Equal rows are one point*). So
    each point is fitted once and its copies take its results; repeating rows then changes
    nothing. A point repeated more than k times keeps its copies: their lists hold nothing
    else, so in any kNN graph of the rows they are a clique of their own, an atom of the data
    (60 copies beside three blobs: a fourth cluster). With at most k points left, or fewer
    than `n_clusters`, every row is fitted as it is.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    >>> rows, owner = fitted_rows(X, 2)
    >>> rows.size, bool((X[rows][owner] == X).all())
    (4, True)
    """
    order, first = distinct_rows(X)
    n = order.size
    point = np.cumsum(first) - 1  # each row's distinct point, in that order
    copies = np.bincount(point)[point]
    keep = first | (copies > k)
    m = int(keep.sum())
    if not (k < m and (n_clusters is None or n_clusters <= m)):
        keep[:] = True
    kept = np.cumsum(keep) - 1
    owner = np.empty(n, dtype=np.int64)
    owner[order] = np.where(keep, kept, kept[np.flatnonzero(first)[point]])
    return order[keep], owner
