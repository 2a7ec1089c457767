"""Nearest training points of new points: the neighbour search behind ``predict``.

An exact search costs (training points x dimension) per new point, so `predict` slowed down in
proportion to the training set (182 points/s against 250 000 training points, about 50 against
10^6; docs/scaling.md). `NeighbourIndex` keeps scikit-learn's exact search for small training
sets and for sparse (text) data, and above `EXACT_INDEX_MAX_SAMPLES` points searches the
training points' own kNN graph, which the fit has already built (`StabilityClustering` keeps
its kNN lists for it; the other estimators still search exactly):

- *entry*: the new point's 3 nearest *pivots*, a seeded sample of 8 sqrt(n) training
  points plus one point of every connected component of the graph that the sample missed
  (distances to all of them by one matrix product per block of new points: the coarse layer of
  a navigable graph, as HNSW's top layer);
- *best-first search* from there on the graph (Malkov & Yashunin 2018; pynndescent's query):
  the closest unexpanded candidate is expanded while it is closer than the worst of the `ef`
  best points found, each training point measured at most once.

The result is a function of the data, the graph and the seed (each query is independent, so the
thread count does not change it). Its recall against the exact search is measured, not assumed:
``tests/test_neighbour_search.py`` and ``scripts/bench_predict.py``.
"""

from __future__ import annotations

import threading

import numba
import numpy as np
import scipy.sparse as sp
from numba import prange

from .._validation import check_int
from ._fuzzy import _fuzzy_union_csr
from ._scale import far_offset
from ._numba import root_labels

__all__ = ["EXACT_INDEX_MAX_SAMPLES", "LazyNeighbourIndex", "NeighbourIndex"]

#: Training sets up to this size (and sparse data) are searched exactly by scikit-learn.
EXACT_INDEX_MAX_SAMPLES = 50_000


@numba.njit(cache=True, inline="always")
def _sqdist(A, i, B, j):
    s = 0.0
    for t in range(A.shape[1]):
        x = A[i, t] - B[j, t]
        s += x * x
    return s


@numba.njit(cache=True, inline="always")
def _heap_push(hd, hi, size, d, i, sign):
    # binary heap on sign * d (sign 1: min-heap, sign -1: max-heap); returns the new size
    pos = size
    hd[pos] = d
    hi[pos] = i
    while pos > 0:
        parent = (pos - 1) // 2
        if sign * hd[parent] <= sign * hd[pos]:
            break
        hd[parent], hd[pos] = hd[pos], hd[parent]
        hi[parent], hi[pos] = hi[pos], hi[parent]
        pos = parent
    return size + 1


@numba.njit(cache=True, inline="always")
def _heap_sift_down(hd, hi, size, sign):
    pos = 0
    while True:
        left = 2 * pos + 1
        if left >= size:
            break
        best = left
        if left + 1 < size and sign * hd[left + 1] < sign * hd[left]:
            best = left + 1
        if sign * hd[pos] <= sign * hd[best]:
            break
        hd[pos], hd[best] = hd[best], hd[pos]
        hi[pos], hi[best] = hi[best], hi[pos]
        pos = best


@numba.njit(cache=True, parallel=True)
def _graph_search(X, indptr, indices, entries, Y, k, ef, out_idx, out_dst):
    n = X.shape[0]
    m = Y.shape[0]
    chunk = 64
    for c in prange((m + chunk - 1) // chunk):
        visited = np.zeros(n, np.int32)
        cap = 4096
        cd = np.empty(cap)
        ci = np.empty(cap, np.int64)
        rd = np.empty(ef)
        ri = np.empty(ef, np.int64)
        stamp = 0
        for q in range(c * chunk, min(m, (c + 1) * chunk)):
            stamp += 1
            nc = 0
            nr = 0
            for e in range(entries.shape[1]):
                node = entries[q, e]
                if visited[node] == stamp:
                    continue
                visited[node] = stamp
                de = _sqdist(Y, q, X, node)
                nc = _heap_push(cd, ci, nc, de, node, 1.0)
                if nr < ef:
                    nr = _heap_push(rd, ri, nr, de, node, -1.0)
                elif de < rd[0]:
                    rd[0] = de
                    ri[0] = node
                    _heap_sift_down(rd, ri, nr, -1.0)
            while nc > 0:
                d = cd[0]
                node = ci[0]
                nc -= 1
                cd[0] = cd[nc]
                ci[0] = ci[nc]
                _heap_sift_down(cd, ci, nc, 1.0)
                if nr == ef and d > rd[0]:
                    break
                for t in range(indptr[node], indptr[node + 1]):
                    u = indices[t]
                    if visited[u] == stamp:
                        continue
                    visited[u] = stamp
                    du = _sqdist(Y, q, X, u)
                    if nr < ef or du < rd[0]:
                        if nc == cap:
                            cap *= 2
                            cd2 = np.empty(cap)
                            ci2 = np.empty(cap, np.int64)
                            cd2[:nc] = cd[:nc]
                            ci2[:nc] = ci[:nc]
                            cd = cd2
                            ci = ci2
                        nc = _heap_push(cd, ci, nc, du, u, 1.0)
                        if nr < ef:
                            nr = _heap_push(rd, ri, nr, du, u, -1.0)
                        else:
                            rd[0] = du
                            ri[0] = u
                            _heap_sift_down(rd, ri, nr, -1.0)
            order = np.argsort(rd[:nr], kind="mergesort")
            for j in range(k):
                if j < nr:
                    out_idx[q, j] = ri[order[j]]
                    out_dst[q, j] = np.sqrt(max(rd[order[j]], 0.0))
                else:  # the query's component holds fewer than k points
                    out_idx[q, j] = -1
                    out_dst[q, j] = np.inf


class NeighbourIndex:
    """The k nearest training points (euclidean) of new points, for ``predict``.

    Parameters
    ----------
    X : array (n, dim) or sparse matrix
        The training points, in the metric's coordinates (unit rows for cosine).
    graph : sparse matrix (n, n) or int array (n, k), optional
        A kNN graph of `X` (any weights; its pattern is used, symmetrised) or its neighbour
        lists. Without it, or with at most `exact_max_samples` points, or for sparse `X`, the
        search is exact.
    ef : int
        Size of the best-first search's list (>= k is used): larger is slower and closer to
        exact. At 125 000 infinite-MNIST training points, 96 gives the labels of the exact
        search to 99.5 % in `StabilityClustering.predict` (48: 98.9 %, 192: 99.8 %;
        docs/scaling.md).
    n_entry : int
        Number of nearest pivots the search starts from.
    random_state : int
        Seed of the pivot sample.
    exact_max_samples : int, optional
        Above this many training points (and with a graph) the graph search is used; default
        `EXACT_INDEX_MAX_SAMPLES`.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import NeighbourIndex, nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(3000, 5))
    >>> lists, _ = nearest_neighbors(X, 10, random_state=0)
    >>> index = NeighbourIndex(X, lists, exact_max_samples=0)
    >>> dist, idx = index.kneighbors(X[:3] + 1e-3, 2)
    >>> idx[:, 0].tolist()
    [0, 1, 2]
    """

    def __init__(self, X, graph=None, *, ef=96, n_entry=3, random_state=0,
                 exact_max_samples=None):
        if exact_max_samples is None:
            exact_max_samples = EXACT_INDEX_MAX_SAMPLES
        self.n_samples = X.shape[0]
        self.exact = graph is None or sp.issparse(X) or self.n_samples <= exact_max_samples
        self.ef = check_int(ef, "ef", low=1)
        self.n_entry = check_int(n_entry, "n_entry", low=1)
        if graph is not None and not sp.issparse(graph) and np.ndim(graph) != 2:
            raise ValueError("graph must be a sparse (n, n) matrix or (n, k) neighbour lists; "
                             f"got an array of shape {np.shape(graph)}.")
        if graph is not None and np.shape(graph)[0] != self.n_samples:
            raise ValueError(f"graph has {np.shape(graph)[0]} rows but X has {self.n_samples} "
                             "points: they must describe the same training points.")
        # searched less the training points' far offset (`far_offset`), queries alike: the
        # same neighbours, without the rounding of coordinates far from the origin
        self._centre = far_offset(X)
        if self._centre is not None:
            X = X - self._centre
        if self.exact:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors().fit(X)
            return
        n = self.n_samples
        self._X = np.ascontiguousarray(X, dtype=np.float64)
        if sp.issparse(graph):
            A = sp.csr_matrix(graph, copy=True)
            A = (A + A.T).tocsr()
            A.setdiag(0)
            A.eliminate_zeros()
            A.sort_indices()
            indptr, indices = A.indptr, A.indices
        else:  # neighbour lists (n, k): the pattern of their union in one pass (rows sorted)
            lists = np.asarray(graph)
            indptr, indices, _ = _fuzzy_union_csr(lists, np.ones(lists.shape))
        self._indptr = indptr.astype(np.int64)
        self._indices = indices.astype(np.int64)
        rng = np.random.default_rng(random_state)
        m = int(min(n, max(256, 8 * np.sqrt(n))))
        pivots = rng.choice(n, size=m, replace=False)
        # one entry per component the sample missed: a search cannot leave its component
        comp = root_labels(n, np.repeat(np.arange(n), np.diff(self._indptr)), self._indices)
        roots, first = np.unique(comp, return_index=True)  # first: each one's smallest node
        missed = ~np.isin(roots, comp[pivots])
        self._pivots = np.sort(np.r_[pivots, first[missed]]).astype(np.int64)
        self._pivot_points = self._X[self._pivots]
        self._pivot_norms = np.einsum("ij,ij->i", self._pivot_points, self._pivot_points)
        self._exact_fallback = None

    def centred(self, Y):
        """Query points in the index's coordinates: less the training points' far offset."""
        centre = getattr(self, "_centre", None)  # (indexes pickled before it have none)
        if centre is None:
            return Y
        return (Y.toarray() if sp.issparse(Y) else np.asarray(Y, dtype=np.float64)) - centre

    def _entries(self, Y, block=4096, exclude=None):
        """The `n_entry` nearest pivots of each row of Y (m, n_entry): BLAS, by blocks of rows.

        `exclude` = (row_labels (m,), node_labels (n,)): only pivots whose node label differs
        from the row's are entries (the first of them repeated where fewer than `n_entry` are
        left; at least one must be).
        """
        n_entry = min(self.n_entry, self._pivots.size)
        P, p2 = self._pivot_points, self._pivot_norms
        out = np.empty((Y.shape[0], n_entry), np.int64)
        for s in range(0, Y.shape[0], block):
            D = p2 - 2.0 * (Y[s:s + block] @ P.T)  # + |y|^2, the same along a row
            if exclude is not None:
                row_labels, node_labels = exclude
                D[node_labels[self._pivots][None, :] == row_labels[s:s + block][:, None]] = np.inf
            part = np.argpartition(D, n_entry - 1, axis=1)[:, :n_entry]
            if exclude is not None:
                Dp = np.take_along_axis(D, part, axis=1)
                best = part[np.arange(part.shape[0]), np.argmin(Dp, axis=1)]
                part = np.where(np.isfinite(Dp), part, best[:, None])
            out[s:s + block] = self._pivots[part]
        return out

    def _search(self, Y, entries, k):
        """(dist, idx) of the best-first search from `entries`; -1 / inf where it found < k."""
        idx = np.empty((Y.shape[0], k), np.int64)
        dist = np.empty((Y.shape[0], k))
        _graph_search(self._X, self._indptr, self._indices, entries, Y, k, max(self.ef, k),
                      idx, dist)
        return dist, idx

    def kneighbors(self, Y, n_neighbors):
        """(dist, idx), each (m, n_neighbors), sorted by distance; the exact search's layout."""
        k = check_int(n_neighbors, "n_neighbors", low=1, high=self.n_samples)
        Y = self.centred(Y)
        if self.exact:
            return self._nn.kneighbors(Y, n_neighbors=k)
        Y = np.ascontiguousarray(Y, dtype=np.float64)
        dist, idx = self._search(Y, self._entries(Y), k)
        short = (idx < 0).any(axis=1)
        if short.any():  # a component smaller than k: complete those rows exactly
            if self._exact_fallback is None:
                from sklearn.neighbors import NearestNeighbors

                self._exact_fallback = NearestNeighbors().fit(self._X)
            d2, i2 = self._exact_fallback.kneighbors(Y[short], n_neighbors=k)
            dist[short], idx[short] = d2, i2
        return dist, idx


class LazyNeighbourIndex:
    """A `NeighbourIndex` of the training points `X` and their kNN `lists`, built by `get`.

    Estimators hold one for ``predict``, and the first ``get`` builds the index, not the fit
    or a load: at 10^6 points it takes 2.7 s that a user who never predicts would pay for
    nothing (docs/scaling.md). The index is a function of the stored points and lists, so when
    it is built changes no answer; the holder stays the same object, so a predict leaves the
    estimator's attributes as they were. Thread-safe; pickles without its lock.

    Parameters
    ----------
    X : array (n, dim) or sparse matrix
        The training points, as `NeighbourIndex` takes them.
    lists : int array (n, k) or None
        Their kNN lists (None: the exact search).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import LazyNeighbourIndex, nearest_neighbors
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> lists, _ = nearest_neighbors(X, 10, random_state=0)
    >>> holder = LazyNeighbourIndex(X, lists)
    >>> dist, idx = holder.get().kneighbors(X[:2], 1)
    >>> idx[:, 0].tolist(), holder.get() is holder.get()
    ([0, 1], True)
    """

    def __init__(self, X, lists):
        self._args, self._index = (X, lists), None
        self._lock = threading.Lock()

    def get(self):
        with self._lock:
            if self._index is None:
                X, lists = self._args
                self._index = NeighbourIndex(X, lists, random_state=0)
            return self._index

    def __getstate__(self):  # a lock does not pickle
        return {"_args": self._args, "_index": self._index}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
