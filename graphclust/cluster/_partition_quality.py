"""Qualities of a partition of a weighted graph: modularity and Markov stability, exactly.

Also the input gate of the partition optimisers (`graphclust.cluster.leiden`): a symmetric
non-negative adjacency with self-loops kept (the shared ``check_symmetric_adjacency`` drops the
diagonal, which modularity needs), as CSR arrays; and partitions in canonical form.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp

__all__ = ["adjacency_arrays", "adjacent_pairs", "canonical_labels", "check_labels",
           "community_representatives", "cut_and_volume", "markov_stability", "modularity",
           "renumber_labels", "strength", "strongest_members"]


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def adjacency_arrays(A, *, name="A", rtol=1e-10, copy=True):
    """Return (indptr int64, indices int64, data float64, n) of a clean symmetric CSR adjacency.

    Self-loops are kept as diagonal entries. A networkx graph is converted with its self-loop
    weights doubled on the diagonal, so that `modularity` agrees with networkx's (networkx counts
    a loop twice in the degree and once in the internal weight).

    With ``copy=False`` and `A` a float64 CSR matrix, `A` itself is cleaned (rows sorted,
    duplicates summed, zeros removed) and its own arrays are returned, indices int32 or int64
    as stored: for a caller that built `A` and needs no second copy of its edges.
    """
    if hasattr(A, "adj") and hasattr(A, "nodes") and not sp.issparse(A):  # networkx graph
        import networkx as nx

        if A.is_directed():
            raise ValueError(
                f"{name} is a directed networkx graph; modularity here is for undirected graphs: "
                f"pass {name}.to_undirected()."
            )
        M = nx.to_scipy_sparse_array(A, nodelist=list(A), weight="weight", format="csr")
        M = sp.csr_matrix(M, dtype=np.float64)
        d = M.diagonal()
        if np.any(d != 0):
            M = M + sp.diags(d)  # loop of weight w -> A_ii = 2 w (networkx convention)
            M = sp.csr_matrix(M)
        A = M
    own = not copy and sp.isspmatrix_csr(A) and A.dtype == np.float64
    if sp.issparse(A):
        A = A if own else sp.csr_matrix(A, dtype=np.float64, copy=True)
    else:
        arr = np.asarray(A)
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
        ):
            raise TypeError(f"{name} must be a numeric matrix; got dtype {arr.dtype}.")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a square 2-D matrix; got shape {arr.shape}.")
        A = sp.csr_matrix(arr.astype(np.float64))
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square (n_nodes, n_nodes); got shape {A.shape}.")
    if A.shape[0] < 1:
        raise ValueError(f"{name} is empty; a graph needs at least 1 node.")
    if not A.has_canonical_format:
        # rows sorted over the threads (scipy sorts on one core), then scipy sums duplicates
        # (none in a graph built here): the same arrays as scipy's sum_duplicates
        _sort_rows(A.indptr, A.indices, A.data)
        A.has_sorted_indices = True
    A.sum_duplicates()
    if not np.all(np.isfinite(A.data)):
        raise ValueError(f"{name} contains NaN or infinite entries; all entries must be finite.")
    if A.data.size and A.data.min() < 0:
        raise ValueError(
            f"{name} has negative entries (minimum {A.data.min():.3g}); modularity needs "
            "non-negative edge weights."
        )
    A.eliminate_zeros()
    # |A_ij - A_ji| by looking each entry above the diagonal up in its mirror row (over the
    # threads); scipy's A - A.T only when the pattern is not symmetric, for the message
    err = _mirror_error(A.indptr, A.indices, A.data)
    if err < 0:
        diff = A - A.T
        diff.eliminate_zeros()
        err = float(np.abs(diff.data).max()) if diff.nnz else 0.0
    if err > 0:
        scale = max(float(A.data.max()) if A.data.size else 0.0, 1e-300)
        if err > rtol * scale:
            raise ValueError(
                f"{name} must be symmetric; max |{name} - {name}.T| = {err:.3g}. Symmetrise it "
                f"first, e.g. ({name} + {name}.T) / 2 or {name}.maximum({name}.T)."
            )
    A.sort_indices()
    if own:
        return A.indptr, A.indices, A.data, A.shape[0]
    return (
        A.indptr.astype(np.int64, copy=False),
        A.indices.astype(np.int64, copy=False),
        A.data,  # float64: A is this function's own copy
        A.shape[0],
    )


@numba.njit(cache=True, parallel=True)
def _sort_rows(indptr, indices, data):
    """Sort each row's entries by column in place (stable), rows over the threads."""
    n = indptr.size - 1
    for i in numba.prange(n):
        a, b = indptr[i], indptr[i + 1]
        sorted_row = True
        for p in range(a + 1, b):
            if indices[p] < indices[p - 1]:
                sorted_row = False
                break
        if sorted_row:
            continue
        if b - a > 64:
            o = np.argsort(indices[a:b], kind="mergesort")
            indices[a:b] = indices[a:b][o]
            data[a:b] = data[a:b][o]
            continue
        for p in range(a + 1, b):  # insertion sort: short rows, no allocation
            key, val = indices[p], data[p]
            q = p - 1
            while q >= a and indices[q] > key:
                indices[q + 1] = indices[q]
                data[q + 1] = data[q]
                q -= 1
            indices[q + 1] = key
            data[q + 1] = val


@numba.njit(cache=True, parallel=True)
def _mirror_error(indptr, indices, data):
    """max |A_ij - A_ji| of a CSR matrix with sorted, duplicate-free rows; -1.0 when the
    pattern is not symmetric.

    Each entry above the diagonal is found in its mirror row by bisection. When all are found
    and there are as many entries below the diagonal as above, the map from one to the other
    is a bijection, so every entry has been compared. The maximum does not depend on the order
    of the rows' chunks, so neither does the result on the thread count.
    """
    n = indptr.size - 1
    chunk = 4096
    m = (n + chunk - 1) // chunk
    err = np.zeros(m)
    above = np.zeros(m, dtype=np.int64)
    below = np.zeros(m, dtype=np.int64)
    for c in numba.prange(m):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            for p in range(indptr[i], indptr[i + 1]):
                j = indices[p]
                if j < i:
                    below[c] += 1
                    continue
                if j == i:
                    continue
                above[c] += 1
                lo, hi = indptr[j], indptr[j + 1]
                while lo < hi:
                    mid = (lo + hi) // 2
                    if indices[mid] < i:
                        lo = mid + 1
                    else:
                        hi = mid
                if lo == indptr[j + 1] or indices[lo] != i:
                    err[c] = -np.inf
                    continue
                e = abs(data[p] - data[lo])
                if e > err[c]:
                    err[c] = e
    if m == 0:
        return 0.0
    if err.min() < 0 or above.sum() != below.sum():
        return -1.0
    return err.max()


def check_labels(labels, n, name="labels"):
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one label per node); got {labels.shape}.")
    if labels.dtype == object or not (
        np.issubdtype(labels.dtype, np.integer) or np.issubdtype(labels.dtype, np.bool_)
    ):
        if np.issubdtype(labels.dtype, np.floating) and np.all(labels == np.round(labels)):
            labels = labels.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers; got dtype {labels.dtype}.")
    return canonical_labels(labels)


@numba.njit(cache=True, nogil=True)
def renumber_labels(memb, n_max):
    """Labels 0..k-1 (int32) by first appearance, and k; memb values in [0, n_max)."""
    mapping = np.full(n_max, -1, dtype=np.int32)
    out = np.empty(memb.size, dtype=np.int32)
    k = 0
    for i in range(memb.size):
        c = memb[i]
        if mapping[c] < 0:
            mapping[c] = k
            k += 1
        out[i] = mapping[c]
    return out, k


def adjacent_pairs(W, labels):
    """The pairs (i, j), i < j, of clusters of `labels` (0..c-1) joined by an edge of W.

    Returns an int64 array (m, 2), rows sorted. An entry of W counts as an edge whatever its
    value (W's stored pattern).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]]))
    >>> adjacent_pairs(W, np.array([2, 0, 1])).tolist()
    [[0, 1], [0, 2]]
    """
    labels = np.asarray(labels, dtype=np.int64)
    c = int(labels.max()) + 1 if labels.size else 0
    W = sp.coo_matrix(W)
    a, b = labels[W.row], labels[W.col]
    cross = a < b
    codes = np.unique(a[cross] * c + b[cross])
    return np.stack([codes // c, codes % c], axis=1) if codes.size else np.empty((0, 2), np.int64)


def canonical_labels(labels):
    """Renumber labels 0..k-1 by order of first appearance (a canonical form of a partition).

    Returns int64 labels (n,) (the input flattened). Integer labels in [0, 4 n) take one pass
    (`renumber_labels`); others are ranked through a sort.

    Examples
    --------
    >>> canonical_labels([7, 7, 2, 9, 2]).tolist()
    [0, 0, 1, 2, 1]
    """
    labels = np.asarray(labels)
    if labels.size and labels.dtype.kind in "iu" and labels.dtype.itemsize <= 8:
        lo, hi = int(labels.min()), int(labels.max())
        if lo >= 0 and hi < 4 * labels.size:
            # one pass, no sort of n (0.01 against 0.15 s at 10^6 labels): the same ranks
            flat = np.ascontiguousarray(labels.ravel())
            if flat.dtype not in (np.int32, np.int64):
                flat = flat.astype(np.int64)
            return renumber_labels(flat, hi + 1)[0].astype(np.int64)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return rank[inverse.ravel()]


@numba.njit(cache=True)
def _internal_weight(indptr, indices, data, labels, k):
    """Per-community sum_{i,j in c} A_ij (both directions, diagonal once)."""
    n = indptr.size - 1
    e = np.zeros(k)
    for i in range(n):
        ci = labels[i]
        for p in range(indptr[i], indptr[i + 1]):
            if labels[indices[p]] == ci:
                e[ci] += data[p]
    return e


@numba.njit(cache=True, parallel=True)
def _chunk_cuts(indptr, indices, data, labels, k, chunk):
    n = indptr.size - 1
    m = (n + chunk - 1) // chunk
    cuts = np.zeros((m, k))
    vols = np.zeros((m, k))
    for c in numba.prange(m):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            li = labels[i]
            for p in range(indptr[i], indptr[i + 1]):
                vols[c, li] += data[p]
                if labels[indices[p]] != li:
                    cuts[c, li] += data[p]
    return cuts, vols


def cut_and_volume(indptr, indices, data, labels, k):
    """Per-cluster cut (weight of the edges to other clusters) and volume (sum of degrees).

    One pass over the edges, rows in fixed chunks over the threads; each chunk's sums are added
    in chunk order, so the result does not depend on the thread count. `labels`: integers in
    0..k-1. Returns two float64 arrays (k,).

    The labels are read at random, once per edge, so they are passed in the smallest integer
    type that holds k: at 10^6 nodes in a random order, int16 labels took 92 ms against 296 ms
    for int64 (the int64 array had left the cache; docs/scaling.md).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.csr_matrix(np.array([[0, 2.0, 1.0], [2.0, 0, 0], [1.0, 0, 0]]))
    >>> cut, vol = cut_and_volume(A.indptr, A.indices, A.data, np.array([0, 0, 1]), 2)
    >>> cut.tolist(), vol.tolist()
    ([1.0, 1.0], [5.0, 1.0])
    """
    n = indptr.size - 1
    # at most about 2^22 partial sums, whatever k
    chunk = max(16384, -(-n * k // 2**22))
    cuts, vols = _chunk_cuts(indptr, indices, data, np.asarray(labels).astype(label_dtype(k)),
                             k, chunk)
    return _in_order(cuts), _in_order(vols)


@numba.njit(cache=True, parallel=True)
def _within_degree(indptr, indices, data, labels):
    n = indptr.size - 1
    out = np.zeros(n)
    for i in numba.prange(n):
        li, s = labels[i], 0.0
        for p in range(indptr[i], indptr[i + 1]):
            if labels[indices[p]] == li:
                s += data[p]
        out[i] = s
    return out


@numba.njit(cache=True)
def _first_argmax(values, tiebreak, labels, k):
    best = np.full(k, -1, dtype=np.int64)
    for i in range(values.size):
        b = best[labels[i]]
        if b < 0 or values[i] > values[b] or (values[i] == values[b]
                                               and tiebreak[i] > tiebreak[b]):
            best[labels[i]] = i
    return best


def community_representatives(belonging, labels, tiebreak=None):
    """Index of the member of largest `belonging` of each community (ties: larger `tiebreak`,
    then the first such member); -1 for a label with no member. Scores are finite.

    One pass over the nodes (a lexicographic sort took 0.33 s at 10^6 nodes).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.cluster import community_representatives
    >>> community_representatives(np.array([0.5, 0.9, 0.7, 0.6]), np.array([0, 0, 1, 1])).tolist()
    [1, 2]
    """
    labels = np.asarray(labels)
    score = np.asarray(belonging, dtype=np.float64)
    tb = np.zeros_like(score) if tiebreak is None else np.asarray(tiebreak, dtype=np.float64)
    k = int(labels.max()) + 1
    return _first_argmax(score, tb, labels.astype(label_dtype(k)), k)


def strongest_members(W, labels):
    """Each cluster's node of largest degree inside the cluster (ties: the first such node):
    `community_representatives` of the within-cluster degrees.

    One threaded pass over the edges and one over the nodes: at 10^6 nodes a cluster-by-cluster
    search (a scan of all labels per cluster) took 0.7-0.9 s. `labels`: integers in 0..k-1,
    every cluster non-empty.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.array([[0, 2.0, 1.0], [2.0, 0, 0], [1.0, 0, 0]]))
    >>> strongest_members(W, np.array([0, 0, 1])).tolist()
    [0, 2]
    """
    W = sp.csr_matrix(W)
    labels = np.asarray(labels)
    lab = labels.astype(label_dtype(int(labels.max()) + 1))
    d_in = _within_degree(W.indptr, W.indices, np.asarray(W.data, dtype=np.float64), lab)
    return community_representatives(d_in, labels)


def label_dtype(k):
    """The smallest integer type that holds labels 0..k-1.

    For labels read at random once per edge (a pass over a graph in a random node order): at
    10^6 nodes an int64 array of them leaves the cache beside the edges streamed past it.
    """
    top = max(int(k) - 1, 0)
    for t in (np.int16, np.int32):
        if top <= np.iinfo(t).max:
            return t
    return np.int64


def _in_order(parts):
    out = parts[0].copy()
    for row in parts[1:]:
        out += row
    return out


def strength(indptr, data, n):
    """Weighted degrees k_i = sum_j A_ij (diagonal once), as float64.

    Each row's entries are added in their order from 0.0, as ``np.bincount`` of the row
    numbers adds them: the same numbers, without its array of a row number per edge (at 10^6
    nodes 112 MB, made at once by each of the fit's three Leiden runs).
    """
    return _row_sums(np.asarray(indptr), np.asarray(data, dtype=np.float64), int(n))


@numba.njit(cache=True, nogil=True)
def _row_sums(indptr, data, n):
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            s += data[p]
        out[i] = s
    return out


def modularity(A, labels, resolution=1.0):
    """Newman's modularity with resolution, exactly.

    Q = (1/2m) sum_ij (A_ij - gamma k_i k_j / 2m) delta(c_i, c_j)
      = sum_c [ e_c / 2m - gamma (K_c / 2m)^2 ],
    with k_i = sum_j A_ij, 2m = sum_ij A_ij, e_c = sum_{i,j in c} A_ij, K_c = sum_{i in c} k_i.
    A graph without edges has Q = 0. A networkx graph is read with its self-loops doubled
    (networkx's convention), so the value equals ``networkx.community.modularity``.
    """
    indptr, indices, data, n = adjacency_arrays(A)
    labels = check_labels(labels, n)
    two_m = float(data.sum())
    if two_m <= 0:
        return 0.0
    k = labels.max() + 1
    e = _internal_weight(indptr, indices, data, labels, k)
    deg = strength(indptr, data, n)
    K = np.bincount(labels, weights=deg, minlength=k)
    return float(e.sum() / two_m - resolution * np.sum((K / two_m) ** 2))


def markov_stability(A, labels, t, *, block_size=64):
    """Markov stability of a partition for the continuous-time random walk at time t.

    r(t) = trace( H^T [ Pi exp(-t L_rw) - pi pi^T ] H ),
    with L_rw = I - D^-1 A, pi = k / 2m (stationary distribution), Pi = diag(pi), H the n x c
    cluster-indicator matrix. Computed matrix-free: exp(-t L_rw) H by
    `scipy.sparse.linalg.expm_multiply` on blocks of `block_size` indicator columns, so memory
    is O(n * block_size) and never n x n. `t` may be a scalar or a 1-D array of times.

    Notes
    -----
    (Delvenne, Yaliraki & Barahona 2010; Lambiotte, Delvenne & Barahona 2014.)
    * r(t) is the modularity (resolution 1) of the partition on the weighted graph whose
      adjacency is the autocovariance-based flow matrix W(t) = Pi exp(-t L_rw) (symmetric,
      row sums pi, total 1): optimising r(t) is optimising modularity of W(t). W(t) is dense for
      t of order 1 and more, so this module evaluates r(t) but optimises only the sparse cases.
    * Linearised at small t, exp(-t L_rw) ~ I - t L_rw gives
      r(t) ~ (1 - t) + t Q(gamma = 1/t), so the optimal partitions of the linearised stability
      are those of modularity with resolution gamma = 1/t: `leiden(A, resolution=1/t)`.
    * r(1) of the linearised walk is Newman's modularity; r(0) = 1 - sum_c pi(c)^2.
    Nodes with no edges have pi_i = 0 and do not contribute.
    """
    from scipy.sparse.linalg import expm_multiply

    indptr, indices, data, n = adjacency_arrays(A)
    labels = check_labels(labels, n)
    ts = np.atleast_1d(np.asarray(t, dtype=np.float64))
    if ts.ndim != 1 or np.any(~np.isfinite(ts)) or np.any(ts < 0):
        raise ValueError(f"t must be a finite time >= 0 or a 1-D array of them; got {_describe(t)}.")
    W = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    deg = np.asarray(W.sum(axis=1)).ravel()
    two_m = deg.sum()
    if two_m <= 0:
        out = np.zeros(ts.size)
        return float(out[0]) if np.ndim(t) == 0 else out
    pi = deg / two_m
    has = deg > 0
    dinv = np.where(has, 1.0 / np.where(has, deg, 1.0), 0.0)
    M = (sp.diags(dinv) @ W - sp.diags(has.astype(np.float64))).tocsr()  # -L_rw
    k = int(labels.max()) + 1
    pic = np.bincount(labels, weights=pi, minlength=k)
    out = np.empty(ts.size)
    for it, tt in enumerate(ts):
        acc = 0.0
        for c0 in range(0, k, block_size):
            c1 = min(k, c0 + block_size)
            sel = (labels >= c0) & (labels < c1)
            rows = np.nonzero(sel)[0]
            Hb = np.zeros((n, c1 - c0))
            Hb[rows, labels[rows] - c0] = 1.0
            Y = expm_multiply(tt * M, Hb) if tt > 0 else Hb
            acc += float(np.sum(pi[rows] * Y[rows, labels[rows] - c0]))
        out[it] = acc - float(np.sum(pic**2))
    return float(out[0]) if np.ndim(t) == 0 else out
