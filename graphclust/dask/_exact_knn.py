"""The exact kNN lists of a dask array: every query block against every candidate block."""

from __future__ import annotations

import dask
import numpy as np
from numba import njit

from .._validation import check_int
from ._gates import _as_dask, _check_block, _known_rows

#: rows of a query block compared at once in `kneighbors_graph` (caps a temporary at 1024 x m)
_QUERY_ROWS = 1024
#: extra candidates per row kept from the BLAS distances before the exact recomputation
_EXTRA = 8


@njit(cache=True)
def _candidate_lengths(Q, C, cand):
    """||Q[i] - C[cand[i, t]]||, summed in the order of `knn_graph` (bit-identical lengths)."""
    m, k = cand.shape
    d = Q.shape[1]
    out = np.empty((m, k), dtype=np.float64)
    for i in range(m):
        for t in range(k):
            b = cand[i, t]
            s = 0.0
            for j in range(d):
                diff = Q[i, j] - C[b, j]
                s += diff * diff
            out[i, t] = np.sqrt(s)
    return out


def _block_topk(Q, C, q0, c0, k, q_loc, c_loc):
    """The k nearest points of C (global rows c0..) to each row of Q (global rows q0..), exact.

    Squared distances come from BLAS (|q|^2 + |c|^2 - 2 q.c), whose error is at most
    tol = 4 gamma_(d+2) (|q|^2 + max |c|^2) with gamma_m = m u / (1 - m u). If T is the k-th
    smallest of them, every true k-nearest has a BLAS value <= T + 2 tol: all such candidates
    (k + 8 of them, or the whole row where more tie) get their lengths recomputed exactly and
    the k shortest are kept, ties by the smaller index. Returns (indices, lengths), padded with
    (-1, inf) where C holds fewer than k other points.
    """
    Q = np.asarray(Q, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    if c_loc == 0:  # every block is checked once, as the queries of its first task
        _check_block(Q, q_loc, (q0, q0 + Q.shape[0]))
    mq, mc, d = Q.shape[0], C.shape[0], Q.shape[1]
    idx = np.full((mq, k), -1, dtype=np.int64)
    dist = np.full((mq, k), np.inf)
    if mq == 0 or mc == 0:
        return idx, dist
    cc = np.einsum("ij,ij->i", C, C)
    for B, norms, loc, b0 in ((Q, np.einsum("ij,ij->i", Q, Q), q_loc, q0), (C, cc, c_loc, c0)):
        if not np.isfinite(norms).all():
            _check_block(B, loc, (b0, b0 + B.shape[0]))  # NaN / inf: name them
            raise ValueError(
                f"X chunk {loc} has coordinates whose squared norms overflow float64 "
                "(|x| > 1e154): divide X by a constant first (the graph scales with it).")
    u = np.finfo(np.float64).eps / 2
    gamma = (d + 2) * u / (1 - (d + 2) * u)
    same = q0 == c0
    for s in range(0, mq, _QUERY_ROWS):
        Qs = Q[s:s + _QUERY_ROWS]
        r = Qs.shape[0]
        qq = np.einsum("ij,ij->i", Qs, Qs)
        D = qq[:, None] + cc[None, :] - 2.0 * (Qs @ C.T)
        if same:
            D[np.arange(r), np.arange(s, s + r)] = np.inf
        avail = mc - 1 if same else mc
        kk = min(k, avail)
        if kk <= 0:
            continue
        tol = 4.0 * gamma * (qq + cc.max())
        m = min(kk + _EXTRA, avail)
        if m < mc:
            part = np.argpartition(D, m, axis=1)
            cand = part[:, :m]
            outside = np.take_along_axis(D, part[:, m:m + 1], axis=1)[:, 0]
        else:
            cand = np.broadcast_to(np.arange(mc), (r, mc))
            outside = np.full(r, np.inf)
        vals = np.sort(np.take_along_axis(D, cand, axis=1), axis=1)
        bound = vals[:, kk - 1] + 2.0 * tol
        lengths = _candidate_lengths(Qs, C, np.ascontiguousarray(cand))
        full = np.flatnonzero(outside <= bound)  # more near-ties than candidates: whole row
        gi = cand + c0
        if same:
            lengths[gi == np.arange(q0 + s, q0 + s + r)[:, None]] = np.inf
        order = np.lexsort((gi, lengths), axis=-1)[:, :kk]
        idx[s:s + r, :kk] = np.take_along_axis(gi, order, axis=1)
        dist[s:s + r, :kk] = np.take_along_axis(lengths, order, axis=1)
        for i in full:
            all_c = np.arange(mc)[None, :]
            li = _candidate_lengths(Qs[i:i + 1], C, all_c)[0]
            if same:
                li[s + i] = np.inf
            o = np.lexsort((all_c[0] + c0, li))[:kk]
            idx[s + i, :kk], dist[s + i, :kk] = o + c0, li[o]
    return idx, dist


def _merge_topk(*parts):
    """Merge (indices, lengths) lists of the same query rows: the k shortest, ties by index."""
    idx = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    k = parts[0][0].shape[1]
    key = np.where(idx < 0, np.iinfo(np.int64).max, idx)
    order = np.lexsort((key, dist), axis=-1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1)


def kneighbors_lists(X, n_neighbors, *, merge_width=8):
    """Exact k nearest other points of every row of X, blockwise (see `kneighbors_graph`).

    Returns a list of ``dask.delayed`` (indices, lengths) pairs, one per row chunk of X.
    """
    X = _as_dask(X)
    offsets = _known_rows(X)
    n = int(offsets[-1])
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    merge_width = check_int(merge_width, "merge_width", low=2)
    blocks = X.to_delayed().ravel()
    topk = dask.delayed(_block_topk, pure=True)
    merge = dask.delayed(_merge_topk, pure=True)
    out = []
    for i, Q in enumerate(blocks):
        level = [topk(Q, C, int(offsets[i]), int(offsets[j]), k, i, j)
                 for j, C in enumerate(blocks)]
        while len(level) > 1:  # tree merge: at most merge_width partial lists in memory per task
            level = [merge(*level[t:t + merge_width]) if len(level[t:t + merge_width]) > 1
                     else level[t] for t in range(0, len(level), merge_width)]
        out.append(level[0])
    return out
