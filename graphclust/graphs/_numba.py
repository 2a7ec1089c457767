"""numba kernels of the graph layer: arrays in, arrays out (CSR as indptr, indices, data)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["kruskal", "edge_length_kernel", "list_lengths", "merge_lists", "nearest_outside",
           "sort_rows_by_length",
           "row_smallest_mean", "root_labels"]


@njit(cache=True)
def _find(parent, i):
    # path halving: every visited node points to its grandparent
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit(cache=True)
def kruskal(n, u, v, order, available, max_edges):
    """Kruskal's algorithm over edges visited in `order`, skipping those not `available`.

    Returns (selected, roots): a boolean mask over the edge list of the chosen forest edges (at
    most `max_edges`), and the union-find root of every node (equal roots = same component).
    """
    parent = np.arange(n)
    size = np.ones(n, dtype=np.int64)
    selected = np.zeros(u.shape[0], dtype=np.bool_)
    count = 0
    for t in range(order.shape[0]):
        if count >= max_edges:
            break
        e = order[t]
        if not available[e]:
            continue
        a = _find(parent, u[e])
        b = _find(parent, v[e])
        if a == b:
            continue
        if size[a] < size[b]:
            a, b = b, a
        parent[b] = a
        size[a] += size[b]
        selected[e] = True
        count += 1
    roots = np.empty(n, dtype=np.int64)
    for i in range(n):
        roots[i] = _find(parent, i)
    return selected, roots


@njit(cache=True)
def root_labels(n, u, v):
    """Union-find roots of the graph with edges (u, v)."""
    parent = np.arange(n)
    for e in range(u.shape[0]):
        a = _find(parent, u[e])
        b = _find(parent, v[e])
        if a != b:
            parent[b] = a
    roots = np.empty(n, dtype=np.int64)
    for i in range(n):
        roots[i] = _find(parent, i)
    return roots


@njit(cache=True, inline="always")
def _length(Y, a, b, inv):
    # sum of squares in float64, in column order: the one formula of every length here. The
    # coordinates are read as Y * inv (inv a power of two: the products are those of a scaled
    # copy of Y, bit for bit, without the copy)
    s = 0.0
    for j in range(Y.shape[1]):
        diff = Y[a, j] * inv - Y[b, j] * inv
        s += diff * diff
    return np.sqrt(s)


@njit(cache=True, parallel=True)
def edge_length_kernel(Y, u, v):
    """Euclidean length ||Y[u_e] - Y[v_e]|| of every edge, without an (m, d) temporary; no
    checks (the public, checked entry is `graphs.edge_lengths`).

    Edges in chunks over the threads; each length is summed in column order, so the result
    does not depend on the thread count.
    """
    m = u.shape[0]
    out = np.empty(m, dtype=np.float64)
    chunk = 4096
    for c in prange((m + chunk - 1) // chunk):
        for e in range(c * chunk, min(m, (c + 1) * chunk)):
            out[e] = _length(Y, u[e], v[e], 1.0)
    return out


@njit(cache=True, parallel=True)
def list_lengths(Y, lists, visit, inv=1.0):
    """``||Y[i] - Y[lists[i, s]]||`` for every row i of `lists`, rows taken in the order `visit`.

    `edge_length_kernel`'s numbers (those of ``Y * inv`` when `inv`, a power of two, is given).
    Visiting the rows so that consecutive ones share neighbours (the leaf order of a
    random-projection tree) serves most rows of Y from the cache: a point's neighbours were
    read for the points just before it.
    """
    n, k = lists.shape
    out = np.empty((n, k), dtype=np.float64)
    chunk = 1024
    for c in prange((n + chunk - 1) // chunk):
        for p in range(c * chunk, min(n, (c + 1) * chunk)):
            a = visit[p]
            for t in range(k):
                out[a, t] = _length(Y, a, lists[a, t], inv)
    return out


@njit(cache=True, parallel=True)
def sort_rows_by_length(dist, idx):
    """Each row of (dist, idx) sorted by dist in place, tied lengths in their order: the
    permutation of ``np.argsort(dist, axis=1, kind="stable")`` for lengths that are not NaN,
    by an insertion sort per row (rows are a few dozen long), with no index arrays or fresh
    n x k blocks (numpy's argsort and two gathers make three; docs/scaling.md)."""
    n, m = dist.shape
    for i in prange(n):
        for a in range(1, m):
            d = dist[i, a]
            j = idx[i, a]
            b = a
            while b > 0 and dist[i, b - 1] > d:
                dist[i, b] = dist[i, b - 1]
                idx[i, b] = idx[i, b - 1]
                b -= 1
            dist[i, b] = d
            idx[i, b] = j


@njit(cache=True, parallel=True)
def merge_lists(idx, dist, k):
    """Each row's `k` nearest distinct entries of several neighbour lists laid side by side.

    `idx` and `dist` (n, r k) hold r searches' lists of every point; the result (n, k) keeps
    the k distinct indices of smallest distance, sorted by (distance, index), so that it does
    not depend on the order of the searches. An index found by several searches is kept once.
    """
    n, m = idx.shape
    out_i = np.empty((n, k), dtype=np.int64)
    out_d = np.empty((n, k), dtype=np.float64)
    for i in prange(n):
        d = dist[i].copy()
        j = idx[i].copy()
        for a in range(1, m):  # insertion sort by (distance, index): rows are a few dozen long
            b = a
            while b > 0 and (d[b - 1] > d[b] or (d[b - 1] == d[b] and j[b - 1] > j[b])):
                d[b - 1], d[b] = d[b], d[b - 1]
                j[b - 1], j[b] = j[b], j[b - 1]
                b -= 1
        t = 0
        for a in range(m):
            if t == k:
                break
            if j[a] < 0:
                continue
            seen = False
            for s in range(t):
                if out_i[i, s] == j[a]:
                    seen = True
                    break
            if not seen:
                out_i[i, t] = j[a]
                out_d[i, t] = d[a]
                t += 1
        for s in range(t, k):  # fewer distinct entries than k: cannot happen for searches of k
            out_i[i, s] = -1
            out_d[i, s] = np.inf
    return out_i, out_d


@njit(cache=True, parallel=True)
def nearest_outside(dots, Y, rows, sqnorm, labels):
    """Per point of `rows`, the point of Y nearest to it with another label (-1 if none);
    `dots` (len(rows), n) are the rows' inner products with all n points (BLAS), `sqnorm` the
    points' squared norms.

    The expansion |a|^2 + |b|^2 - 2 a.b screens, in one pass over the block (where the
    expansion, the mask and the argmin in numpy took six). Its rounding is below 4 (dim + 2) u
    (|a|^2 + |b|^2) (an inner product's error bound, Higham 2002, 3.1), so every point whose
    expansion is within that of the smallest so far is measured again directly, and the
    nearest of those by the direct sums is returned. The exact nearest is among them (the
    smallest so far is never below the smallest), as a scan of direct distances finds it."""
    m, n = dots.shape
    dim = Y.shape[1]
    u = 2.0**-53
    top = 0.0
    for j in range(n):
        top = max(top, sqnorm[j])
    out = np.full(m, -1, dtype=np.int64)
    for i in prange(m):
        r = rows[i]
        own = labels[r]
        tol = 4.0 * (dim + 2) * u * (sqnorm[r] + top)
        low = np.inf
        best = np.inf
        for j in range(n):
            if labels[j] == own:
                continue
            e = sqnorm[r] + sqnorm[j] - 2.0 * dots[i, j]
            if e <= low + tol:
                low = min(low, e)
                d = 0.0
                for c in range(dim):
                    x = Y[r, c] - Y[j, c]
                    d += x * x
                if d < best:
                    best = d
                    out[i] = j
    return out


@njit(cache=True)
def row_smallest_mean(indptr, data, k):
    """Mean of the k smallest stored values of each CSR row (all of them if fewer; 0 if none)."""
    n = indptr.shape[0] - 1
    out = np.zeros(n, dtype=np.float64)
    for i in range(n):
        row = np.sort(data[indptr[i] : indptr[i + 1]])
        m = min(k, row.shape[0])
        if m > 0:
            out[i] = row[:m].mean()
    return out
