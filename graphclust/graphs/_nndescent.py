"""Approximate k nearest neighbours by NN-descent, compiled once and cached on disk.

NN-descent (Dong, Moses & Li, WWW 2011) starts from the neighbours found in the leaves of a
forest of random-projection trees (as pynndescent does, McInnes 2018) and repeats the *local
join*: two neighbours of a point are likely neighbours of each other, so every pair among a
point's new and old neighbours is measured and offered to both lists. It stops when an
iteration changes fewer than ``delta n k`` entries.

Why graphclust has its own: pynndescent compiles its search for every new process (45-50 s on
this project's 2-core machine before the first query, docs/scaling.md), and with a fixed seed it
runs on one thread. This implementation is specialised to the squared euclidean distance in
float32 (cosine reaches it through unit rows, ``_knn.prepare_metric``), its numba functions are
cached on disk, and it is deterministic *and* parallel: every random choice is a hash of
(seed, point, neighbour, iteration), and every write to a point's list is done by the thread that
owns the point, so the result is a function of the data and the seed, not of the thread count or
timing. Each list keeps the k smallest (distance, index) pairs offered, which does not depend on
the order in which they were offered.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from .._hashing import GOLDEN, splitmix64
from .._prefetch import prefetch_row
from ._numba import list_lengths, merge_lists

__all__ = ["nn_descent"]

# fast math without "no infinities": empty list entries hold +inf
_FASTMATH = {"nsz", "arcp", "contract", "afn", "reassoc"}
#: How many rows ahead the trees and the leaves prefetch the points they will read next.
AHEAD = 4


@numba.njit(cache=True, inline="always")
def _hash3(seed, a, b):
    return splitmix64(splitmix64(np.uint64(seed) + np.uint64(a) * GOLDEN) + np.uint64(b))


@numba.njit(cache=True, inline="always", fastmath=_FASTMATH)
def _sqdist(X, i, j):
    s = np.float32(0.0)
    for t in range(X.shape[1]):
        diff = X[i, t] - X[j, t]
        s += diff * diff
    return s


@numba.njit(cache=True, inline="always")
def _after(d1, j1, d2, j2):
    """(d1, j1) comes after (d2, j2) in the order of the lists: by distance, then index."""
    return d1 > d2 or (d1 == d2 and j1 > j2)


@numba.njit(cache=True)
def _push(ind, dst, flag, fresh, i, j, d):
    """Offer j at distance d to the bounded max-heap of point i; True if it entered."""
    if not _after(dst[i, 0], ind[i, 0], d, j):
        return False
    k = ind.shape[1]
    for s in range(k):
        if ind[i, s] == j:
            return False
    # replace the root (the farthest entry) and sift down
    pos = 0
    while True:
        left = 2 * pos + 1
        right = left + 1
        if left >= k:
            break
        child = left
        if right < k and _after(dst[i, right], ind[i, right], dst[i, left], ind[i, left]):
            child = right
        if _after(d, j, dst[i, child], ind[i, child]):
            break
        ind[i, pos] = ind[i, child]
        dst[i, pos] = dst[i, child]
        flag[i, pos] = flag[i, child]
        fresh[i, pos] = fresh[i, child]
        pos = child
    ind[i, pos] = j
    dst[i, pos] = d
    flag[i, pos] = 1
    fresh[i, pos] = 1
    return True


@numba.njit(cache=True, fastmath=_FASTMATH)
def _rp_tree(X, seed, leaf_size, order, starts):
    """One random-projection tree: `order` is permuted so that each leaf is a contiguous run,
    and starts[r] = 1 where a leaf begins."""
    n, dim = X.shape
    for p in range(n):
        order[p] = p
        starts[p] = 0
    # depth first, so the stack holds at most one pending run per leaf
    stack = np.empty((n // max(leaf_size, 1) + 64, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n
    top = 1
    normal = np.empty(dim, dtype=np.float32)
    side = np.empty(n, dtype=np.uint8)
    buf = np.empty(n, dtype=order.dtype)
    node = 0
    while top > 0:
        top -= 1
        s = stack[top, 0]
        e = stack[top, 1]
        node += 1
        m = e - s
        # a full stack (only a pathologically unbalanced tree) makes the run a leaf: slower,
        # never out of bounds
        if m <= leaf_size or top >= stack.shape[0] - 2:
            starts[s] = 1
            continue
        h = _hash3(seed, node, 0)
        a = order[s + np.int64(h % np.uint64(m))]
        b = order[s + np.int64(_hash3(seed, node, 1) % np.uint64(m))]
        if a == b:
            b = order[s + (np.int64(h % np.uint64(m)) + 1) % m]
        offset = np.float32(0.0)
        for t in range(dim):
            normal[t] = X[a, t] - X[b, t]
            offset += normal[t] * (X[a, t] + X[b, t]) * np.float32(0.5)
        n_left = 0
        for r in range(s, e):
            p = order[r]
            if r + AHEAD < e:  # the rows of a run lie apart in memory below the root
                prefetch_row(X, order[r + AHEAD])
            v = np.float32(0.0)
            for t in range(dim):
                v += normal[t] * X[p, t]
            v -= offset
            if v > 0 or (v == 0 and (_hash3(seed, node, p + 2) & np.uint64(1)) == 0):
                side[r] = 0
                n_left += 1
            else:
                side[r] = 1
        if n_left == 0 or n_left == m:
            # all points on one side (duplicates): split the run in the middle
            n_left = m // 2
            for r in range(s, e):
                side[r] = 0 if r - s < n_left else 1
        # stable partition of order[s:e] by side
        lo = s
        nb = 0
        for r in range(s, e):
            if side[r] == 0:
                order[lo] = order[r]
                lo += 1
            else:
                buf[nb] = order[r]
                nb += 1
        for r in range(nb):
            order[lo + r] = buf[r]
        stack[top, 0] = s
        stack[top, 1] = s + n_left
        stack[top + 1, 0] = s + n_left
        stack[top + 1, 1] = e
        top += 2


@numba.njit(cache=True, parallel=True)
def _scaled_float32(X, centre, inv):
    """float32((X - centre) * inv) over the threads, by rows (the difference in float64;
    with a zero centre, float32(X * inv) bit for bit)."""
    n, dim = X.shape
    out = np.empty((n, dim), dtype=np.float32)
    for i in prange(n):
        for t in range(dim):
            out[i, t] = np.float32((X[i, t] - centre[t]) * inv)
    return out


@numba.njit(cache=True, parallel=True)
def _forest(X, seed, n_trees, leaf_size):
    n = X.shape[0]
    orders = np.empty((n_trees, n), dtype=np.int32)
    starts = np.empty((n_trees, n), dtype=np.uint8)
    for t in prange(n_trees):
        _rp_tree(X, _hash3(seed, 7919, t), leaf_size, orders[t], starts[t])
    return orders, starts


@numba.njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _init_leaves(X, order, bounds, ind, dst, flag, fresh):
    """Every pair within each leaf of one tree, offered to both lists. The leaves of a tree
    are disjoint, so each list is written by one thread; the leaf's points and their current
    thresholds are copied next to each other first (the heaps are touched only to insert)."""
    dim = X.shape[1]
    for leaf in prange(bounds.shape[0] - 1):
        s = bounds[leaf]
        e = bounds[leaf + 1]
        m = e - s
        local = np.empty((m, dim), dtype=np.float32)
        pts = np.empty(m, dtype=np.int64)
        thr = np.empty(m, dtype=np.float32)
        for r in range(m):
            pts[r] = order[s + r]
            if r + AHEAD < m:
                prefetch_row(X, order[s + r + AHEAD])
            local[r] = X[pts[r]]
            thr[r] = dst[pts[r], 0]
        for a in range(m):
            for b in range(a + 1, m):
                d = np.float32(0.0)
                for t in range(dim):
                    diff = local[a, t] - local[b, t]
                    d += diff * diff
                if d <= thr[a]:
                    if _push(ind, dst, flag, fresh, pts[a], pts[b], d):
                        thr[a] = dst[pts[a], 0]
                if d <= thr[b]:
                    if _push(ind, dst, flag, fresh, pts[b], pts[a], d):
                        thr[b] = dst[pts[b], 0]


@numba.njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _init_random(X, ind, dst, flag, fresh, seed):
    """Top up lists that the leaves left short with hashed random points."""
    n = X.shape[0]
    k = ind.shape[1]
    for i in prange(n):
        tries = 0
        while ind[i, 0] < 0 and tries < 8 * k:
            j = np.int64(_hash3(seed, i, 104729 + tries) % np.uint64(n))
            if j != i:
                _push(ind, dst, flag, fresh, i, j, _sqdist(X, i, j))
            tries += 1


_EMPTY = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(cache=True, inline="always")
def _push_candidate(cand, i, packed):
    """Keep in cand[i] the smallest packed (priority << 32 | index) values: a max-heap. The
    priority of a pair is symmetric, so an entry offered twice (forward and reverse) is the
    same value and is kept once."""
    m = cand.shape[1]
    if packed >= cand[i, 0]:
        return
    for s in range(m):
        if cand[i, s] == packed:
            return
    pos = 0
    while True:
        left = 2 * pos + 1
        right = left + 1
        if left >= m:
            break
        child = left
        if right < m and cand[i, right] > cand[i, left]:
            child = right
        if packed >= cand[i, child]:
            break
        cand[i, pos] = cand[i, child]
        pos = child
    cand[i, pos] = packed


#: Row chunks and target buckets of the bucketed counting sorts (the reverse lists, the
#: offers of a join block); fixed, so the result does not depend on the thread count.
_REVERSE_PARTS = 64


@numba.njit(cache=True)
def _bucket_offsets(cnt):
    """Where each (row chunk, bucket) cell of a bucketed counting sort starts: buckets in
    order, and within a bucket the row chunks in order. Returns (off[chunk, bucket],
    bucket starts with the total last)."""
    P, B = cnt.shape
    off = np.empty((P, B), dtype=np.int64)
    bstart = np.zeros(B + 1, dtype=np.int64)
    total = 0
    for b in range(B):
        bstart[b] = total
        for c in range(P):
            off[c, b] = total
            total += cnt[c, b]
    bstart[B] = total
    return off, bstart


def _candidate_work(n, k, m):
    """The arrays every iteration's `_candidates` fills, allocated once per search: the
    reverse lists' (tj, ti, ts, start, src, slot; `_reverse_lists`) and the candidates'.

    About 300 MB at 10^6 points and k = 10: allocated per iteration they were fresh memory
    maps (above glibc's 32 MB threshold) whose pages the kernel faulted in every time, 1.3
    million faults in the three searches of a fit at 10^6 against 0.23 million at 500 000
    (docs/scaling.md).
    """
    tj, ti, ts, src, slot = (np.empty(n * k, dtype=np.int32) for _ in range(5))
    return (tj, ti, ts, np.empty(n + 1, dtype=np.int64), src, slot,
            np.empty((n, m), dtype=np.int32), np.empty((n, m), dtype=np.int32))


@numba.njit(cache=True, parallel=True)
def _reverse_lists(ind, want, tj, ti, ts, start, src, slot):
    """For every point j with ``want[j]``, the (point, slot) pairs whose list holds j,
    contiguous (CSR), each point's pairs in increasing (point, slot) order: ``start`` (n + 1)
    and the first ``start[n]`` entries of ``src`` and ``slot`` (all of size >= n k, like the
    scratch arrays tj, ti, ts; `_candidate_work`). Points without ``want`` get no pairs.

    A counting sort over the threads: the entries are first grouped by bucket of targets, row
    chunk by row chunk (so in increasing point order within a bucket), then each bucket is
    sorted by target on its own. The same arrays as a serial counting sort.
    """
    n, k = ind.shape
    P = _REVERSE_PARTS
    rows = (n + P - 1) // P
    width = (n + P - 1) // P  # targets per bucket
    cnt = np.zeros((P, P), dtype=np.int64)  # [chunk, bucket]
    for c in prange(P):
        for i in range(c * rows, min(n, (c + 1) * rows)):
            for s in range(k):
                j = ind[i, s]
                if j >= 0 and want[j]:
                    cnt[c, j // width] += 1
    off, bstart = _bucket_offsets(cnt)
    for c in prange(P):
        pos = off[c].copy()
        for i in range(c * rows, min(n, (c + 1) * rows)):
            for s in range(k):
                j = ind[i, s]
                if j >= 0 and want[j]:
                    b = j // width
                    tj[pos[b]] = j
                    ti[pos[b]] = i
                    ts[pos[b]] = s
                    pos[b] += 1
    start[0] = 0
    for b in prange(P):
        j0 = b * width
        j1 = min(n, j0 + width)
        if j0 >= j1:
            continue
        local = np.zeros(j1 - j0 + 1, dtype=np.int64)
        for r in range(bstart[b], bstart[b + 1]):
            local[tj[r] - j0 + 1] += 1
        for t in range(j1 - j0):
            local[t + 1] += local[t]
        for t in range(j1 - j0):
            start[j0 + t + 1] = bstart[b] + local[t + 1]
        for r in range(bstart[b], bstart[b + 1]):
            q = bstart[b] + local[tj[r] - j0]
            src[q] = ti[r]
            slot[q] = ts[r]
            local[tj[r] - j0] += 1
    return start, src, slot


@numba.njit(cache=True, parallel=True)
def _candidates(ind, flag, m, seed, it, work):
    """New and old candidates of every point: its neighbours and the points that list it,
    at most m of each kind, chosen by hashed priority; the sampled new ones become old.

    A point's two heaps are built in a scratch pair of rows that stays in the L1 cache and
    are written out as indices (-1 where empty), in the heaps' own order: n x m heaps of
    packed uint64 for all points (190 MB at 10^6 points and m = 12) were filled, pushed into
    and unpacked at every iteration. Every array is `work`'s (`_candidate_work`).

    Only a point with a new candidate has a local join (`_join_block` pairs each new
    candidate with the others), so only such points get candidates; the rest get none, the
    same join. Late iterations change a few lists in a thousand, and building every point's
    heaps and reverse lists made each of them cost as much as the third (0.2 s of a search's
    6 s at 500 000 points, where the stopping rule asks for one iteration more than at
    250 000).
    """
    n, k = ind.shape
    tj, ti, ts, start, src, slot, new_i, old_i = work
    # points with a new candidate: the two ends of every new (flagged) entry. Threads may
    # write the same 1 to one byte at once: the same array on any thread count.
    live = np.zeros(n, dtype=np.uint8)
    for i in prange(n):
        for s in range(k):
            if flag[i, s] and ind[i, s] >= 0:
                live[i] = 1
                live[ind[i, s]] = 1
    start, src, slot = _reverse_lists(ind, live, tj, ti, ts, start, src, slot)
    s32 = np.uint64(32)
    low = np.uint64(0xFFFFFFFF)
    chunk = 4096
    for c in prange((n + chunk - 1) // chunk):
        heap = np.empty((2, m), dtype=np.uint64)  # [0]: new, [1]: old
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            if not live[i]:
                new_i[i] = -1
                old_i[i] = -1
                continue
            heap[:] = _EMPTY
            for s in range(k):
                j = ind[i, s]
                if j < 0:
                    continue
                p = _hash3(seed + it, min(i, j), max(i, j)) >> s32 << s32
                _push_candidate(heap, 0 if flag[i, s] else 1, p | np.uint64(j))
            for r in range(start[i], start[i + 1]):
                j = src[r]
                p = _hash3(seed + it, min(i, j), max(i, j)) >> s32 << s32
                _push_candidate(heap, 0 if flag[j, slot[r]] else 1, p | np.uint64(j))
            for s in range(m):
                new_i[i, s] = -1 if heap[0, s] == _EMPTY else np.int32(heap[0, s] & low)
                old_i[i, s] = -1 if heap[1, s] == _EMPTY else np.int32(heap[1, s] & low)
    # after every point's candidates: they read the flags of the points that list them
    for i in prange(n):
        for s in range(k):
            if flag[i, s]:
                j = ind[i, s]
                for r in range(m):
                    if new_i[i, r] == j:
                        flag[i, s] = 0
                        break
    return new_i, old_i


@numba.njit(cache=True, parallel=True, fastmath=_FASTMATH)
def _join_block(X, thr, new_c, old_c, start, stop, out_p, out_q, out_d):
    """The local join of points start..stop: pairs (new, new) and (new, old) of each point's
    candidates that would enter either list (thr: each list's current largest distance, one
    contiguous array that stays in cache); returns the count of pairs written per point."""
    m = new_c.shape[1]
    per = out_p.shape[1]
    counts = np.zeros(stop - start, dtype=np.int64)
    for v in prange(start, stop):
        c = 0
        row = v - start
        if v + 1 < stop:  # the next point's candidates, while this point's pairs are computed
            for a in range(m):
                if new_c[v + 1, a] >= 0:
                    prefetch_row(X, new_c[v + 1, a])
                if old_c[v + 1, a] >= 0:
                    prefetch_row(X, old_c[v + 1, a])
        for a in range(m):
            p = new_c[v, a]
            if p < 0:
                continue
            for b in range(a + 1, m + m):
                if b < m:
                    q = new_c[v, b]
                else:
                    q = old_c[v, b - m]
                if q < 0 or q == p:
                    continue
                d = _sqdist(X, p, q)
                if d <= thr[p] or d <= thr[q]:
                    if c < per:
                        out_p[row, c] = p
                        out_q[row, c] = q
                        out_d[row, c] = d
                        c += 1
        counts[row] = c
    return counts


@numba.njit(cache=True, parallel=True)
def _apply(ind, dst, thr, flag, fresh, out_p, out_q, out_d, counts, start, stop):
    """Offer every pair of the block to both lists, each list written by one thread, and
    keep ``thr = dst[:, 0]``, each list's largest distance, which the joins read.

    The offers are grouped by bucket of target points (a counting sort over row chunks, so
    each list receives its offers in the order of the pairs), then every bucket's offers are
    pushed by one thread. Work in proportion to the block's pairs, not to n.
    """
    n = ind.shape[0]
    P = _REVERSE_PARTS
    m = stop - start
    rows = (m + P - 1) // P
    width = (n + P - 1) // P
    cnt = np.zeros((P, P), dtype=np.int64)  # [row chunk, bucket]
    for c in prange(P):
        for row in range(c * rows, min(m, (c + 1) * rows)):
            for t in range(counts[row]):
                cnt[c, out_p[row, t] // width] += 1
                cnt[c, out_q[row, t] // width] += 1
    off, bstart = _bucket_offsets(cnt)
    total = bstart[P]
    target = np.empty(total, dtype=np.int32)
    other = np.empty(total, dtype=np.int32)
    dist = np.empty(total, dtype=np.float32)
    for c in prange(P):
        pos = off[c].copy()
        for row in range(c * rows, min(m, (c + 1) * rows)):
            for t in range(counts[row]):
                p = out_p[row, t]
                q = out_q[row, t]
                b = p // width
                target[pos[b]] = p
                other[pos[b]] = q
                dist[pos[b]] = out_d[row, t]
                pos[b] += 1
                b = q // width
                target[pos[b]] = q
                other[pos[b]] = p
                dist[pos[b]] = out_d[row, t]
                pos[b] += 1
    for b in prange(P):
        for r in range(bstart[b], bstart[b + 1]):
            if r + AHEAD < bstart[b + 1]:  # the lists of the coming targets
                prefetch_row(dst, target[r + AHEAD])
                prefetch_row(ind, target[r + AHEAD])
            if _push(ind, dst, flag, fresh, target[r], other[r], dist[r]):
                thr[target[r]] = dst[target[r], 0]


@numba.njit(cache=True, parallel=True)
def _take_rows(X, rows):
    """X[rows], rows over the threads (numpy's gather runs on one)."""
    out = np.empty((rows.shape[0], X.shape[1]), dtype=X.dtype)
    for r in prange(rows.shape[0]):
        out[r] = X[rows[r]]
    return out


@numba.njit(cache=True, parallel=True)
def _sort_rows(ind, dst):
    n, k = ind.shape
    for i in prange(n):
        order = np.argsort(dst[i])
        # ties by index, so that the rows do not depend on the heap's layout
        di = dst[i][order].copy()
        ji = ind[i][order].copy()
        for a in range(1, k):
            b = a
            while b > 0 and di[b - 1] == di[b] and ji[b - 1] > ji[b]:
                di[b - 1], di[b] = di[b], di[b - 1]
                ji[b - 1], ji[b] = ji[b], ji[b - 1]
                b -= 1
        ind[i] = ji
        dst[i] = di


def _search(X, seed, k, n_trees, leaf_size, m, n_iters, delta, block_size):
    """One NN-descent search of the points X (float32, in leaf order): lists (n, k) of
    indices into X and their float32 squared distances, unsorted."""
    n = X.shape[0]
    ind = np.full((n, k), -1, dtype=np.int32)
    dst = np.full((n, k), np.inf, dtype=np.float32)
    flag = np.zeros((n, k), dtype=np.uint8)
    fresh = np.zeros((n, k), dtype=np.uint8)
    orders, starts = _forest(X, seed, n_trees, leaf_size)
    for t in range(n_trees):
        bounds = np.append(np.flatnonzero(starts[t]), n)
        _init_leaves(X, orders[t], bounds, ind, dst, flag, fresh)
    del orders, starts
    _init_random(X, ind, dst, flag, fresh, seed)

    block = min(int(block_size), n)
    per = m * (m - 1) // 2 + m * m
    out_p = np.empty((block, per), dtype=np.int32)
    out_q = np.empty((block, per), dtype=np.int32)
    out_d = np.empty((block, per), dtype=np.float32)
    work = _candidate_work(n, k, m)
    # each list's largest distance, contiguous, kept by `_apply` (a copy of dst[:, 0] per
    # block cost n per block: 1.1 s of the three searches at 10^6)
    thr = dst[:, 0].copy()
    for it in range(n_iters):
        fresh[:] = 0
        new_c, old_c = _candidates(ind, flag, m, seed, it + 1, work)
        for start in range(0, n, block):
            stop = min(start + block, n)
            counts = _join_block(X, thr, new_c, old_c, start, stop, out_p, out_q, out_d)
            _apply(ind, dst, thr, flag, fresh, out_p, out_q, out_d, counts, start, stop)
        if int(fresh.sum(dtype=np.int64)) <= delta * n * k:
            break
    return ind, dst


def nn_descent(X, n_neighbors, *, random_state=0, n_trees=None, leaf_size=None,
               max_candidates=None, n_iters=None, delta=0.001, block_size=32768, exact=False,
               scale=1.0, n_searches=1, centre=None):
    """Approximate nearest neighbours of every point (itself excluded) by NN-descent.

    Parameters
    ----------
    X : array (n, d)
        Finite points; computed in float32.
    n_neighbors : int
        Neighbours per point, 1 <= n_neighbors < n.
    random_state : int
        Seed of the trees and of the candidate sampling; the result depends only on it and X.
    n_trees : int, optional
        Random-projection trees for the start, default ``clip(4 + n^(1/4) / 2, 4, 12)``.
    leaf_size : int, optional
        Largest leaf, default ``clip(5 n_neighbors, 60, 256)`` (pynndescent's).
    max_candidates : int, optional
        New (and old) candidates per point and iteration, default ``max(n_neighbors, 12)``.
    n_iters : int, optional
        At most this many joins, default ``max(8, round(log2 n))``.
    delta : float
        Stop when an iteration changes fewer than ``delta n n_neighbors`` entries.
    exact : bool, default False
        Return the lists' distances recomputed from X as given (float64 for float64 X) as
        ``sqrt(sum (x_i - x_j)^2)``: exact to rounding and symmetric in (i, j), unlike the
        search's float32 ones. They are computed in the search's leaf order, where a point's
        neighbours lie near it in memory. The rows stay in the search's order.
    scale : float, default 1.0
        A power of two: the search (and the lengths) are those of ``X / scale``, bit for bit,
        without a scaled copy of X (`graphclust.graphs._scale`).
    centre : array (d,), optional
        A point subtracted from every row before the float32 copy (and `scale`): the search
        of ``(X - centre) / scale``, the lengths still from X as given. Points far from the
        origin keep their float32 digits for their differences (`graphclust.graphs._scale.
        far_offset`).
    n_searches : int, default 1
        Independent searches (trees and candidate sampling of their own seeds; the first is
        the one ``n_searches=1`` runs) on one copy of the points in leaf order; each point
        keeps the `n_neighbors` nearest distinct points of their lists, by the searches'
        distances. The copy, the return to the caller's numbering, the sort and the exact
        lengths are done once for all of them.

    Returns
    -------
    indices : int64 array (n, n_neighbors), each row sorted by the search's distance
    distances : float32 array (n, n_neighbors), euclidean (float64 with ``exact=True``)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(500, 5))
    >>> idx, dist = nn_descent(X, 5, random_state=0)
    >>> idx.shape, bool(np.all(np.diff(dist, axis=1) >= 0))
    ((500, 5), True)
    """
    X_given = X
    inv = 1.0 / float(scale)
    if inv != 1.0 and np.frexp(inv)[0] != 0.5:
        raise ValueError(f"scale must be a power of two; got {scale!r}.")
    # float32(X * inv) is float32 of the exact X / scale: the scaled copy's numbers
    X = np.asarray(X)
    if centre is None and inv == 1.0:
        X = np.ascontiguousarray(X, dtype=np.float32)
    else:
        X = _scaled_float32(X, np.zeros(X.shape[1]) if centre is None else np.asarray(
            centre, dtype=np.float64), inv)
    n = X.shape[0]
    k = int(n_neighbors)
    seed = int(random_state) & 0x7FFFFFFFFFFFFFFF
    n_trees = int(np.clip(4 + n ** 0.25 / 2, 4, 12)) if n_trees is None else int(n_trees)
    leaf_size = int(np.clip(5 * k, 60, 256)) if leaf_size is None else int(leaf_size)
    m = max(k, 12) if max_candidates is None else int(max_candidates)
    n_iters = max(8, int(round(np.log2(max(n, 2))))) if n_iters is None else int(n_iters)
    n_searches = int(n_searches)
    if n_searches < 1:
        raise ValueError(f"n_searches must be an integer >= 1; got {n_searches}.")

    # Work on a copy of the points in the leaf order of one tree: neighbours then lie near
    # each other in memory, and the gathers of rows in the trees and the joins hit the cache
    # (2-3x faster at 250 000 points on this project's machine, same lists).
    perm = _forest(X, seed ^ 0x5BD1E995, 1, leaf_size)[0][0]
    X = _take_rows(X, perm)
    # the searches after the first: seeds drawn from the first, so one seed fixes them all
    seeds = [seed] + [int(v) for v in np.random.default_rng(seed).integers(
        2**62, size=n_searches - 1)]
    runs = [_search(X, sd, k, n_trees, leaf_size, m, n_iters, delta, block_size)
            for sd in seeds]
    ind, dst = runs[0]
    if n_searches > 1:
        ind, dst = merge_lists(np.hstack([r[0] for r in runs]),
                               np.hstack([r[1] for r in runs]), k)
        ind, dst = ind.astype(np.int32), dst.astype(np.float32)
    del runs
    # back to the caller's numbering, each row sorted by (distance, index) in that numbering
    out = np.empty((n, k), dtype=np.int32)
    out_dst = np.empty((n, k), dtype=np.float32)
    out[perm] = perm[ind]
    out_dst[perm] = dst
    _sort_rows(out, out_dst)
    if not exact:
        return out.astype(np.int64), np.sqrt(np.maximum(out_dst, 0))
    # the lists' lengths with the rows visited in leaf order, where a point's neighbours were
    # read for the points just before it (in the caller's order each is a random read: 2.0
    # against 0.3 s at 10^6 points on this project's machine; the same numbers)
    return out.astype(np.int64), list_lengths(np.asarray(X_given), out, perm, inv)
