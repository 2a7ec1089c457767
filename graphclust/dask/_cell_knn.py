"""Approximate kNN lists of a dask array by k-means cells with several probes (an inverted file)."""

from __future__ import annotations

import warnings

import dask
import numpy as np
from numba import njit
from sklearn.cluster import KMeans
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_int, check_random_state
from ..graphs import nearest_neighbors
from ._exact_knn import _candidate_lengths, _merge_topk
from ._gates import _as_dask, _check_block, _known_rows

#: sample rows per cell for the k-means centroids of `kneighbors_graph(method="cells")`
_SAMPLE_PER_CELL = 64
#: rows of a block whose distances to the centroids are computed at once
_SPLIT_ROWS = 32_768


def _nearest_cells(block, centroids, probes):
    """The `probes` nearest centroids of each row (int64 (m, probes), nearest first)."""
    D = (np.einsum("ij,ij->i", block, block)[:, None]
         + np.einsum("ij,ij->i", centroids, centroids)[None, :] - 2.0 * (block @ centroids.T))
    if probes < centroids.shape[0]:
        part = np.argpartition(D, probes - 1, axis=1)[:, :probes]
    else:
        part = np.broadcast_to(np.arange(centroids.shape[0]), (block.shape[0], probes))
    order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def _split_block(block, b0, loc, centroids, probes, lo, hi):
    """One row block cut into cells lo..hi-1: a list, per cell, of (global rows, points).

    Each row goes to its `probes` nearest centroids among all of them; only the rows of the
    cells of this pass are kept.
    """
    block = np.asarray(block)
    _check_block(block, loc, (b0, b0 + block.shape[0]))
    # by row chunks: a block's distances to all centroids would be m x n_cells floats (1.6 GB
    # for 10^6 rows and 200 cells, which took a worker past its memory limit at 10^7 points)
    cells = np.empty((block.shape[0], probes), dtype=np.int64)
    for s in range(0, block.shape[0], _SPLIT_ROWS):
        part = np.asarray(block[s:s + _SPLIT_ROWS], dtype=np.float64)
        cells[s:s + _SPLIT_ROWS] = _nearest_cells(part, centroids, probes)
    rows = np.repeat(np.arange(block.shape[0]), probes)
    flat = cells.ravel()
    order = np.argsort(flat, kind="stable")
    bounds = np.searchsorted(flat[order], np.arange(centroids.shape[0] + 1))
    out = []
    for p in range(lo, hi):
        r = rows[order[bounds[p]:bounds[p + 1]]]
        out.append((r + b0, block[r]))
    return out


def _cell_lists(parts, k, seed):
    """The k nearest other points of each member of one cell, among the cell's members.

    `graphclust.nearest_neighbors` on the cell (exact up to ``EXACT_SEARCH_MAX_SAMPLES``
    points, NN-descent above, seeded). Returns (global rows, global neighbour rows, lengths),
    padded with (-1, inf) where the cell holds k or fewer points.
    """
    ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
    m = ids.size
    idx = np.full((m, k), -1, dtype=np.int64)
    dist = np.full((m, k), np.inf)
    if m >= 2:
        pts = np.concatenate([p[1] for p in parts]).astype(np.float64, copy=False)
        kk = min(k, m - 1)
        li, ld = nearest_neighbors(pts, kk, random_state=seed)
        idx[:, :kk], dist[:, :kk] = ids[li], ld
    return ids, idx, dist


@njit(cache=True)
def _merge_into(out_i, out_d, ids, idx, dist):
    """Merge lists (ids, idx, dist) into the running lists (out_i, out_d), row by row, in place.

    Each row of the result holds its shortest distinct neighbours so far, sorted by (length,
    index), padded with (-1, inf); a neighbour found again keeps its shorter length. The final
    lists are the k shortest of the union whatever order the parts come in.
    """
    m, k = idx.shape
    K = out_i.shape[1]
    for t in range(m):
        r = ids[t]
        for s in range(k):
            j = idx[t, s]
            v = dist[t, s]
            if j < 0:
                continue
            pos = -1
            for u in range(K):
                if out_i[r, u] == j:
                    pos = u
                    break
            if pos >= 0:
                if v >= out_d[r, pos]:
                    continue
                for u in range(pos, K - 1):  # take it out, to be inserted at its new length
                    out_i[r, u] = out_i[r, u + 1]
                    out_d[r, u] = out_d[r, u + 1]
                out_i[r, K - 1] = -1
                out_d[r, K - 1] = np.inf
            last_i, last_d = out_i[r, K - 1], out_d[r, K - 1]
            if v > last_d or (v == last_d and last_i >= 0 and j > last_i):
                continue
            u = K - 1
            while u > 0 and (out_d[r, u - 1] > v or (out_d[r, u - 1] == v
                                                     and (out_i[r, u - 1] < 0
                                                          or out_i[r, u - 1] > j))):
                out_i[r, u] = out_i[r, u - 1]
                out_d[r, u] = out_d[r, u - 1]
                u -= 1
            out_i[r, u] = j
            out_d[r, u] = v


#: share of the distributed cluster's memory that the cut blocks of one pass may take
_PASS_MEMORY = 0.25


def _passes(nbytes, n_cells):
    """Passes over X so that one pass's cut blocks take at most `_PASS_MEMORY` of the workers'
    memory (1 without a distributed client, or when the workers state no memory limit)."""
    try:
        from distributed import default_client

        workers = default_client().scheduler_info()["workers"].values()
    except (ImportError, ValueError):
        return 1
    memory = sum(float(w.get("memory_limit") or 0) for w in workers)
    if memory <= 0:
        return 1
    return int(min(n_cells, max(1, np.ceil(nbytes / (_PASS_MEMORY * memory)))))


def _each_result(tasks, consume):
    """Compute dask `tasks`, handing each result to `consume` as it arrives.

    On a distributed client the results stream in (the client holds one cell's lists at a
    time, and merges while the workers compute); otherwise one ``dask.compute``.
    """
    try:
        from distributed import as_completed, default_client

        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is None:
        for r in dask.compute(*tasks):
            consume(r)
        return
    for fut in as_completed(client.compute(list(tasks))):
        consume(fut.result())
        fut.release()


def _rows_topk(Q, qids, C, c0, k):
    """Exact k nearest points of C (global rows c0..) to the rows `qids` (points Q), self excluded."""
    Q = np.asarray(Q, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    all_c = np.broadcast_to(np.arange(C.shape[0]), (Q.shape[0], C.shape[0]))
    L = _candidate_lengths(Q, C, np.ascontiguousarray(all_c))
    gi = all_c + c0
    L[gi == qids[:, None]] = np.inf
    kk = min(k, C.shape[0])
    o = np.lexsort((gi, L), axis=-1)[:, :kk]
    idx = np.full((Q.shape[0], k), -1, dtype=np.int64)
    dist = np.full((Q.shape[0], k), np.inf)
    idx[:, :kk], dist[:, :kk] = np.take_along_axis(gi, o, axis=1), np.take_along_axis(L, o, axis=1)
    idx[~np.isfinite(dist)] = -1
    return idx, dist


def kneighbors_lists_by_cells(X, n_neighbors, *, cell_size=50_000, probes=2, random_state=None):
    """Approximate k nearest other points of every row of X, found cell by cell.

    The method of ``kneighbors_graph(method="cells")``, whose parameters these are: the rows
    are cut into about ``n / cell_size`` cells by k-means centroids of a seeded sample, each row
    goes to its `probes` nearest cells, the kNN lists inside each cell come from one task
    (`graphclust.nearest_neighbors`: exact up to 20 000 points, NN-descent above), and each
    row's lists from its cells are merged on the client. Rows left with fewer than k
    neighbours (cells of k or fewer points) get an exact search of every block.

    Memory: the cut blocks wait in the workers' memory until their cells run, probes x n x d
    x itemsize bytes over the cluster. On a distributed client whose workers state a memory
    limit, the cells run in as many passes over X as keep that under a quarter of the limits'
    sum (each pass reads X again); the client holds the n x k lists and one cell's result.

    Parameters
    ----------
    X : dask.array.Array (n, d)
        Row chunks of known sizes; finite values (a NaN names its chunk).
    n_neighbors : int
        1 <= n_neighbors < n.
    cell_size : int, default 50 000
        Rows per cell on average, > n_neighbors.
    probes : int, default 2
        Cells per row, >= 1 (capped at the number of cells).
    random_state : int, Generator, RandomState or None
        Seed of the sample, the k-means and the cells' NN-descent.

    Returns
    -------
    indices : int64 array (n, n_neighbors), sorted by length
    lengths : float64 array (n, n_neighbors)

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from graphclust.dask import kneighbors_lists_by_cells
    >>> X = np.random.default_rng(0).normal(size=(2000, 3))
    >>> idx, dist = kneighbors_lists_by_cells(da.from_array(X, chunks=(500, 3)), 5,
    ...                                       cell_size=500, random_state=0)
    >>> idx.shape, bool((np.diff(dist, axis=1) >= 0).all())
    ((2000, 5), True)
    """
    X = _as_dask(X)
    offsets = _known_rows(X)
    n = int(offsets[-1])
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    cell_size = check_int(cell_size, "cell_size", low=k + 1)
    n_cells = -(-n // cell_size)
    probes = check_int(probes, "probes", low=1)
    rng = check_random_state(random_state)
    # centroids: k-means (Lloyd, k-means++ start, scikit-learn) on a seeded uniform sample
    m = min(n, max(_SAMPLE_PER_CELL * n_cells, 10 * k))
    sample = np.sort(rng.choice(n, size=m, replace=False))
    Xs = np.asarray(X[sample].compute(), dtype=np.float64)
    _check_block(Xs, "sample", None)
    if n_cells > 1:
        with warnings.catch_warnings():  # fewer distinct points than cells (duplicates): some
            warnings.simplefilter("ignore", ConvergenceWarning)  # cells share a centre, no harm
            centroids = KMeans(n_clusters=n_cells, n_init=1,
                               random_state=int(rng.integers(2**31 - 1))).fit(Xs).cluster_centers_
    else:
        centroids = Xs.mean(axis=0, keepdims=True)
    n_cells = centroids.shape[0]
    probes = min(probes, n_cells)
    cents = dask.delayed(centroids, pure=True, traverse=False)
    blocks = X.to_delayed().ravel()
    seeds = rng.integers(2**31 - 1, size=n_cells)
    cell = dask.delayed(_cell_lists, pure=True)
    idx = np.full((n, k), -1, dtype=np.int64)
    dist = np.full((n, k), np.inf)
    # the cut blocks wait in the workers' memory until their cells run: in passes over X when
    # they would take more than a quarter of the cluster's memory (each pass reads X again)
    passes = _passes(probes * n * int(X.shape[1]) * X.dtype.itemsize, n_cells)
    bounds = np.linspace(0, n_cells, passes + 1).round().astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        split = dask.delayed(_split_block, pure=True, nout=int(hi - lo))
        pieces = [split(B, int(offsets[i]), i, cents, probes, int(lo), int(hi))
                  for i, B in enumerate(blocks)]
        _each_result([cell([pc[p - lo] for pc in pieces], k, int(seeds[p]))
                      for p in range(lo, hi)],
                     lambda part: _merge_into(idx, dist, *part))
    short = np.flatnonzero((idx < 0).any(axis=1))
    if short.size:  # rows whose cells held too few points: an exact search of all blocks
        Q = np.asarray(X[short].compute(), dtype=np.float64)
        topk = dask.delayed(_rows_topk, pure=True)
        parts = dask.compute(*[topk(Q, short, B, int(offsets[i]), k)
                               for i, B in enumerate(blocks)])
        idx[short], dist[short] = _merge_topk(*parts)
    return idx, dist
