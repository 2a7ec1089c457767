"""The cluster tree of the kNN density on the kNN graph: HDBSCAN* without a full distance matrix.

A density's clusters are the connected parts of its upper level sets, and they form a tree
(Hartigan 1975). Robust single linkage estimates that tree consistently from a sample
(Chaudhuri & Dasgupta 2010, *Rates of convergence for the cluster tree*): single linkage on
the mutual reachability distance ``max(core_i, core_j, d_ij)``, ``core_i`` the distance from
point i to its k-th nearest neighbour (the radius of the ball holding k points: the density
at i is about k / (n vol(ball))). HDBSCAN* (Campello, Moulavi & Sander 2013) condenses the
tree to the splits whose both sides hold at least ``min_size`` points and keeps the clusters
of largest excess of mass: a cluster's stability is the sum over its points of how long,
in lambda = 1 / distance, each stays in it after it is born; a cluster is kept when its
stability is at least the sum of its kept descendants'.

Here the tree is read on a sparse graph (the fit's kNN graph, its edges' lengths): a point's
core distance is its k-th shortest edge, the minimum spanning forest of the graph's mutual
reachability lengths replaces the full one (pairs beyond both points' core distances, which
the kNN graph leaves out, would enter the full tree only where a graph's components meet:
those are joined at lambda = 0 here, each a cluster of the density tree when it holds
``min_size`` points). On a complete graph the labels are HDBSCAN*'s with ``min_samples`` =
k + 1 (scikit-learn counts the point itself): `tests/test_density_tree.py` compares the two.
The cost is the forest (O(m log n) for m edges) and two passes over the tree's 2 n - 1 nodes.

Used by `StabilityClustering` where the walk's scan finds no structure (its fine tier):
a large blob beside small ones, the large one holding most of the mass, is no partition of
Markov stability at any walk length (the resolution limit: docs/battery.md, *Measured, not
built: one large cluster beside small ones*), while its small blobs are modes of the density
(`FineTierLooks._tree_choice`).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

from ._partition_quality import canonical_labels

__all__ = ["core_distances", "density_tree_labels"]


def core_distances(lengths, k):
    """Each node's k-th shortest edge in the CSR matrix of edge `lengths` (its longest when it
    has fewer than k; inf when it has none)."""
    lengths = sp.csr_matrix(lengths, dtype=np.float64)
    return _kth_of_rows(lengths.indptr, lengths.data, int(k))


@numba.njit(cache=True)
def _kth_of_rows(indptr, data, k):
    n = indptr.size - 1
    core = np.full(n, np.inf)
    for i in range(n):
        a, b = indptr[i], indptr[i + 1]
        if b > a:
            row = np.sort(data[a:b])
            core[i] = row[min(k, b - a) - 1]
    return core


def density_tree_labels(lengths, k, min_size):
    """HDBSCAN*'s clusters of the graph with edge `lengths`: labels 0..c-1, -1 for noise.

    Parameters
    ----------
    lengths : sparse matrix (n, n)
        Symmetric, positive edge lengths (the kNN graph's, in the data's metric).
    k : int
        The core distance's neighbour: a point's k-th shortest edge.
    min_size : int
        The smallest cluster (HDBSCAN*'s ``min_cluster_size``), at least 2.

    Returns
    -------
    labels : int array (n,)
        The clusters of largest excess of mass, numbered by first appearance; -1 for the
        points that fall out of every cluster kept (noise). All -1 when the tree never
        splits into two parts of ``min_size`` points (the root is never a cluster).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from scipy.spatial.distance import pdist, squareform
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (200, 2)), rng.normal(8, 1, (40, 2))])
    >>> labels = density_tree_labels(sp.csr_matrix(squareform(pdist(X))), 5, 20)
    >>> np.bincount(labels + 1).tolist()  # noise, then the clusters by first appearance
    [0, 200, 40]
    """
    if int(min_size) < 2:
        raise ValueError(f"min_size must be at least 2; got {min_size!r}.")
    lengths = sp.csr_matrix(lengths, dtype=np.float64)
    n = lengths.shape[0]
    if n < 2 * int(min_size):
        return np.full(n, -1, dtype=np.int64)
    core = core_distances(lengths, int(k))
    coo = lengths.tocoo()
    reach = np.maximum(coo.data, np.maximum(core[coo.row], core[coo.col]))
    forest = minimum_spanning_tree(sp.csr_matrix((reach, (coo.row, coo.col)), shape=(n, n)))
    forest = forest.tocoo()
    order = np.lexsort((forest.col, forest.row, forest.data))  # ties in node order
    left, right, height, size = _single_linkage(n, forest.row[order].astype(np.int64),
                                                forest.col[order].astype(np.int64),
                                                forest.data[order])
    labels = _excess_of_mass_labels(n, left, right, height, size, int(min_size))
    kept = labels >= 0
    labels[kept] = canonical_labels(labels[kept])  # by first appearance
    return labels


@numba.njit(cache=True)
def _root(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True)
def _single_linkage(n, u, v, w):
    """The dendrogram of the forest's edges (u, v, w), sorted by w: merge j joins nodes
    ``left[j]`` and ``right[j]`` (leaves 0..n-1, merges n + j) at ``height[j]`` into
    ``size[j]`` points; the forest's trees are joined last at height inf."""
    parent = np.arange(2 * n - 1)
    node = np.arange(n)  # the dendrogram node of each union-find root
    left = np.empty(n - 1, np.int64)
    right = np.empty(n - 1, np.int64)
    height = np.empty(n - 1)
    size = np.empty(n - 1, np.int64)
    count = np.ones(2 * n - 1, np.int64)
    j = 0
    for e in range(u.size):
        a, b = _root(parent, u[e]), _root(parent, v[e])
        if a == b:
            continue
        left[j], right[j], height[j] = node[a], node[b], w[e]
        size[j] = count[a] + count[b]
        parent[b] = a
        count[a] = size[j]
        node[a] = n + j
        j += 1
    if j < n - 1:  # the forest's trees, joined at infinity (lambda = 0) in node order
        first = -1
        for i in range(n):
            if _root(parent, i) == i:
                if first < 0:
                    first = i
                    continue
                left[j], right[j], height[j] = node[first], node[i], np.inf
                size[j] = count[first] + count[i]
                parent[i] = first
                count[first] = size[j]
                node[first] = n + j
                j += 1
    return left, right, height, size


@numba.njit(cache=True)
def _excess_of_mass_labels(n, left, right, height, size, min_size):
    """HDBSCAN*'s condensed tree and excess-of-mass selection (Campello et al. 2013, as
    scikit-learn's `_condense_tree`, `_compute_stability`, `_get_clusters` with
    allow_single_cluster False): cluster labels of the points, -1 for noise."""
    m = 2 * n - 1
    cluster = np.full(m, -1, np.int64)  # each dendrogram node's condensed cluster
    cluster[m - 1] = 0
    n_clusters = 1
    parent_of = np.full(n, -1, np.int64)  # condensed clusters' parents (0: the root)
    birth = np.zeros(n)
    stability = np.zeros(n)
    fall = np.full(n, -1, np.int64)  # the cluster each point falls out of
    stack = np.empty(m, np.int64)
    sub = np.empty(m + 1, np.int64)
    stack[0] = m - 1
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if node < n:  # a leaf that stayed in its cluster to the end
            fall[node] = cluster[node]
            continue
        j = node - n
        c = cluster[node]
        lam = 1.0 / height[j]  # 0 where the forest's trees are joined (height inf)
        sa = 1 if left[j] < n else size[left[j] - n]
        sb = 1 if right[j] < n else size[right[j] - n]
        split = sa >= min_size and sb >= min_size
        for side in range(2):
            child, s = (left[j], sa) if side == 0 else (right[j], sb)
            if split:  # both sides clusters: two new ones, born at lam
                cluster[child] = n_clusters
                parent_of[n_clusters] = c
                birth[n_clusters] = lam
                stability[c] += s * (lam - birth[c])
                n_clusters += 1
                stack[top] = child
                top += 1
            elif s >= min_size:  # the cluster goes on as this side
                cluster[child] = c
                stack[top] = child
                top += 1
            else:  # this side's points fall out of c at lam
                stability[c] += s * (lam - birth[c])
                sub[0] = child
                st = 1
                while st > 0:
                    st -= 1
                    x = sub[st]
                    if x < n:
                        fall[x] = c
                    else:
                        sub[st] = left[x - n]
                        sub[st + 1] = right[x - n]
                        st += 2
    # excess of mass, leaves up (children are numbered after their parents)
    chosen = np.zeros(n_clusters, np.bool_)
    below = np.zeros(n_clusters)  # the kept stability of each cluster's children
    for c in range(n_clusters - 1, 0, -1):
        if below[c] > stability[c]:
            total = below[c]
        else:
            chosen[c] = True
            total = stability[c]
        below[parent_of[c]] += total
    # a chosen cluster's descendants are not chosen; a point's label is its chosen ancestor
    label = np.full(n_clusters, -1, np.int64)
    for c in range(1, n_clusters):
        up = label[parent_of[c]]
        label[c] = up if up >= 0 else (c if chosen[c] else -1)
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = label[fall[i]] if fall[i] >= 0 else -1
    return out
