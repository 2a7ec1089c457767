"""Affinities of kNN graphs with per-point scales: UMAP's fuzzy union and shared neighbours.

Both read a kNN `Graph` (`knn_graph`, `knn_graph_from_neighbors`): each node's directed kNN list
is recovered as its `n_neighbors` shortest edges (the symmetrised graph holds the list plus the
reverse neighbours, all longer than the k-th), so no sigma is needed or searched.

- `fuzzy_affinity`: the local-connectivity fuzzy union of UMAP (McInnes, Healy & Melville 2018,
  section 3.1). Per node, rho_i is the distance to its nearest neighbour at positive distance
  and sigma_i solves ``sum_j exp(-(d_ij - rho_i)_+ / sigma_i) = log2(k + 1)``; the directed
  weights ``a_ij = exp(-(d_ij - rho_i)_+ / sigma_i)`` are joined by the probabilistic union
  ``w_ij = a_ij + a_ji - a_ij a_ji``. The weights depend on the distances only through
  ``(d - rho_i) / sigma_i``, so they do not change when the data are rescaled (up to the
  bisection's stopping rule, |sum - log2(k + 1)| < 1e-5: about 1e-5 in each weight).
- `jaccard_affinity`: shared nearest neighbours, ``w_ij = |N_i & N_j| / |N_i | N_j|`` with
  N_i = {i} + kNN(i) the closed neighbourhood, on the edges of the graph (the weights of
  PhenoGraph and Seurat).

Cost: O(n k log k) to recover the lists, O(n k) for the fuzzy weights (a bisection of 64 steps
at most per node), O(|E| k) for the Jaccard weights.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._validation import check_int
from ._graph import Graph

__all__ = ["fuzzy_affinity", "fuzzy_affinity_from_lists", "fuzzy_scales", "fuzzy_scales_of_lists",
           "jaccard_affinity", "jaccard_affinity_from_lists", "knn_lists", "smooth_knn"]


@njit(cache=True)
def _row_knn(indptr, indices, data, k, idx, dist):
    n = indptr.shape[0] - 1
    for i in range(n):
        a, b = indptr[i], indptr[i + 1]
        row = data[a:b]
        order = np.argsort(row, kind="mergesort")
        m = min(k, b - a)
        for t in range(m):
            idx[i, t] = indices[a + order[t]]
            dist[i, t] = row[order[t]]
        for t in range(m, k):
            idx[i, t] = -1
            dist[i, t] = np.inf


def knn_lists(graph, n_neighbors=None):
    """Each node's `n_neighbors` shortest edges: (indices, distances), (n, k), ascending.

    `n_neighbors` defaults to the graph's ``provenance["n_neighbors"]`` when `knn_graph` built
    it; other graphs need it given.
    Nodes with fewer edges are padded with index -1 and distance inf.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a graphclust Graph; got {type(graph).__name__}.")
    if n_neighbors is None:
        prov = graph.provenance
        n_neighbors = prov.get("n_neighbors") if prov.get("builder") == "knn_graph" else None
        if n_neighbors is None:
            raise ValueError("this graph does not record n_neighbors (it was not built by "
                             "knn_graph); pass n_neighbors.")
    k = check_int(n_neighbors, "n_neighbors", low=1)
    D = graph.distances
    n = graph.n_nodes
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k), dtype=np.float64)
    _row_knn(D.indptr.astype(np.int64), D.indices.astype(np.int64), D.data.astype(np.float64),
             k, idx, dist)
    return idx, dist


@njit(cache=True, parallel=True)
def smooth_knn(dist, target, n_iter=64, tol=1e-5):
    """rho_i, sigma_i of UMAP's local connectivity for the kNN distances `dist` (n, k).

    rho_i: distance to the nearest neighbour at positive distance (0 if all are duplicates);
    sigma_i: bisection on ``sum_j exp(-(d_ij - rho_i)_+ / sigma_i) = target`` (UMAP:
    target = log2(k + 1)), floored at 1e-3 times the mean neighbour distance. Padding entries
    (inf) contribute nothing.
    """
    n, k = dist.shape
    rho = np.zeros(n)
    sig = np.ones(n)
    for i in prange(n):  # rows are independent: the same numbers on any thread count
        r = 0.0
        for j in range(k):
            if dist[i, j] > 0.0 and dist[i, j] < np.inf:
                r = dist[i, j]
                break
        rho[i] = r
        lo, hi, mid = 0.0, np.inf, 1.0
        for _ in range(n_iter):
            s = 0.0
            for j in range(k):
                d = dist[i, j] - r
                if d > 0:
                    s += np.exp(-d / mid)
                else:
                    s += 1.0
            if abs(s - target) < tol:
                break
            if s > target:
                hi = mid
                mid = (lo + hi) / 2.0
            else:
                lo = mid
                mid = mid * 2.0 if hi == np.inf else (lo + hi) / 2.0
        m = 0.0
        cnt = 0
        for j in range(k):
            if dist[i, j] < np.inf:
                m += dist[i, j]
                cnt += 1
        m = m / cnt if cnt > 0 else 0.0
        sig[i] = max(mid, 1e-3 * m) if m > 0 else mid
    return rho, sig


def _unit(dist):
    """A power of two near the typical distance when it lies outside 2^-16 .. 2^16, else 1.

    UMAP's bisection starts at sigma = 1 and takes at most 64 halvings or doublings, so it
    cannot reach the scale of data at 1e-300 or 1e300. Expressing the distances in this unit
    (exact: a power of two) makes the result scale-free, and leaves UMAP's arithmetic untouched
    for data at ordinary scales.
    """
    d = dist[np.isfinite(dist) & (dist > 0)]
    if d.size == 0:
        return 1.0
    e = int(np.round(np.log2(np.median(d))))
    return 1.0 if -16 <= e <= 16 else float(2.0**e)


def fuzzy_scales(graph, n_neighbors=None):
    """(rho, sigma): the per-node offsets and scales of `fuzzy_affinity` (see `smooth_knn`)."""
    _, dist = knn_lists(graph, n_neighbors)
    return _scales(dist)


def fuzzy_scales_of_lists(dist):
    """(rho, sigma) of `fuzzy_affinity` from kNN distances (n, k) (`nearest_neighbors`)."""
    return _scales(np.asarray(dist, dtype=np.float64))


def _scales(dist):
    u = _unit(dist)
    k = dist.shape[1]
    rho, sig = smooth_knn(np.ascontiguousarray(dist / u), float(np.log2(k + 1)))
    return rho * u, sig * u


@njit(cache=True, parallel=True)
def _fuzzy_union_csr(idx, a):
    """CSR arrays of ``w = a + a^T - a o a^T`` from directed lists (n, k).

    Padding (-1), self-loops and zero weights are dropped, a neighbour listed twice in a row
    has its weights summed; rows come out sorted. The numbers
    are scipy's ``A + A.T - A.multiply(A.T)``, (a + b) - a b, bit for bit: the directed rows
    sorted and the transpose by a counting sort, then each row of both merged in one pass.
    """
    n, k = idx.shape
    cols = np.empty((n, k), dtype=np.int64)
    vals = np.empty((n, k))
    cnt = np.zeros(n, dtype=np.int64)
    for i in prange(n):
        order = np.argsort(idx[i], kind="mergesort")
        c = 0
        for t in order:
            j = idx[i, t]
            if j >= 0 and j != i and a[i, t] != 0.0:
                if c and cols[i, c - 1] == j:  # a repeated neighbour: summed, as scipy does
                    vals[i, c - 1] += a[i, t]
                    continue
                cols[i, c] = j
                vals[i, c] = a[i, t]
                c += 1
        cnt[i] = c
    tptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        for c in range(cnt[i]):
            tptr[cols[i, c] + 1] += 1
    for i in range(n):
        tptr[i + 1] += tptr[i]
    tsrc = np.empty(tptr[n], dtype=np.int64)
    tval = np.empty(tptr[n])
    pos = tptr[:n].copy()
    for i in range(n):  # sources in order: each transposed row comes out sorted
        for c in range(cnt[i]):
            j = cols[i, c]
            tsrc[pos[j]] = i
            tval[pos[j]] = vals[i, c]
            pos[j] += 1
    size = np.empty(n, dtype=np.int64)
    for i in prange(n):
        p, q, m = 0, tptr[i], 0
        while p < cnt[i] or q < tptr[i + 1]:
            if q == tptr[i + 1] or (p < cnt[i] and cols[i, p] < tsrc[q]):
                p += 1
            elif p == cnt[i] or tsrc[q] < cols[i, p]:
                q += 1
            else:
                p += 1
                q += 1
            m += 1
        size[i] = m
    indptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        indptr[i + 1] = indptr[i] + size[i]
    indices = np.empty(indptr[n], dtype=np.int32)
    data = np.empty(indptr[n])
    for i in prange(n):
        p, q, e = 0, tptr[i], indptr[i]
        while p < cnt[i] or q < tptr[i + 1]:
            if q == tptr[i + 1] or (p < cnt[i] and cols[i, p] < tsrc[q]):
                indices[e] = cols[i, p]
                data[e] = vals[i, p]
                p += 1
            elif p == cnt[i] or tsrc[q] < cols[i, p]:
                indices[e] = tsrc[q]
                data[e] = tval[q]
                q += 1
            else:
                x, y = vals[i, p], tval[q]
                indices[e] = cols[i, p]
                data[e] = (x + y) - x * y
                p += 1
                q += 1
            e += 1
    return indptr, indices, data


def fuzzy_affinity(graph, n_neighbors=None):
    """UMAP's fuzzy simplicial set of a kNN graph: ``w = a + a^T - a o a^T`` (module docstring).

    Parameters
    ----------
    graph : Graph
        A kNN graph (`knn_graph`); its edge lengths are the metric distances.
    n_neighbors : int, optional
        k of the directed lists; default ``graph.provenance["n_neighbors"]``.

    Returns
    -------
    scipy.sparse.csr_matrix (n, n), symmetric, entries in (0, 1], zero diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> W = gc.fuzzy_affinity(gc.knn_graph(X, 5))
    >>> bool(abs(W - W.T).max() < 1e-15), bool(W.max() <= 1.0)
    (True, True)
    >>> bool(abs(gc.fuzzy_affinity(gc.knn_graph(1e-200 * X, 5)) - W).max() < 1e-4)
    True
    """
    return fuzzy_affinity_from_lists(*knn_lists(graph, n_neighbors))


def fuzzy_affinity_from_lists(idx, dist, scales=None):
    """`fuzzy_affinity` from kNN lists (n, k) (`nearest_neighbors`; index -1 = padding).

    `scales`: the lists' (rho, sigma) when the caller has them (`fuzzy_scales_of_lists`).
    """
    idx = np.asarray(idx, dtype=np.int64)
    dist = np.asarray(dist, dtype=np.float64)
    n, k = idx.shape
    rho, sig = _scales(dist) if scales is None else scales
    with np.errstate(invalid="ignore", over="ignore"):
        a = np.exp(-np.clip(dist - rho[:, None], 0, None) / sig[:, None])
    indptr, indices, data = _fuzzy_union_csr(idx, np.ascontiguousarray(a))
    return sp.csr_matrix((data, indices, indptr), shape=(n, n))


@njit(cache=True)
def _jaccard_weights(nb, rows, cols):
    m = rows.size
    out = np.empty(m)
    k = nb.shape[1]
    for e in range(m):
        a = nb[rows[e]]
        b = nb[cols[e]]
        i = j = 0
        inter = 0
        na = nbn = 0
        for t in range(k):
            if a[t] >= 0:
                na += 1
            if b[t] >= 0:
                nbn += 1
        while i < k and j < k:
            if a[i] < 0:
                i += 1
            elif b[j] < 0:
                j += 1
            elif a[i] == b[j]:
                inter += 1
                i += 1
                j += 1
            elif a[i] < b[j]:
                i += 1
            else:
                j += 1
        out[e] = inter / (na + nbn - inter)
    return out


def jaccard_affinity(graph, n_neighbors=None):
    """Shared-nearest-neighbour weights on the edges of a kNN graph (module docstring).

    Parameters
    ----------
    graph : Graph
        A kNN graph (`knn_graph`).
    n_neighbors : int, optional
        k of the directed lists; default ``graph.provenance["n_neighbors"]``.

    Returns
    -------
    scipy.sparse.csr_matrix (n, n), symmetric, entries in (0, 1], zero diagonal.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> W = gc.jaccard_affinity(gc.knn_graph(X, 5))
    >>> bool(abs(W - W.T).max() == 0), bool(0 < W.data.min() and W.max() <= 1)
    (True, True)
    """
    idx, _ = knn_lists(graph, n_neighbors)
    # the pattern, not the lengths (duplicates have length 0 and are still edges)
    D = graph.distances
    n = graph.n_nodes
    r_all = np.repeat(np.arange(n), np.diff(D.indptr))
    c_all = D.indices.astype(np.int64)
    up = c_all > r_all
    return _jaccard(idx, r_all[up].astype(np.int64), c_all[up])


def jaccard_affinity_from_lists(idx):
    """`jaccard_affinity` from kNN lists (n, k) (`nearest_neighbors`), on their union edges."""
    idx = np.asarray(idx, dtype=np.int64)
    n, k = idx.shape
    u = np.repeat(np.arange(n, dtype=np.int64), k)
    v = idx.ravel()
    keep = (v >= 0) & (v != u)
    key = np.unique(np.minimum(u, v)[keep] * n + np.maximum(u, v)[keep])
    return _jaccard(idx, key // n, key % n)


def _jaccard(idx, rows, cols):
    n = idx.shape[0]
    nb = np.sort(np.hstack([np.arange(n)[:, None], idx]), axis=1)
    w = _jaccard_weights(nb, rows, cols)
    W = sp.coo_matrix((np.concatenate([w, w]), (np.concatenate([rows, cols]),
                                                 np.concatenate([cols, rows]))), shape=(n, n))
    W = W.tocsr()
    W.eliminate_zeros()
    return W
