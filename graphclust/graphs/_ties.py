"""Tied distances in exact kNN lists, broken by a key of the pair instead of by the search.

Points of a few values per feature (binary answers, counts, a lattice) have many neighbours at
exactly the same distance, and a list of k must choose among those at its k-th distance. A tree
search chooses by the order it visits its cells, and a k-d tree of data whose features have
equal spreads cuts first on the first feature: the tied neighbours on the query's side of that
cut are found first and kept. Uniform binary data in 12 dimensions (1 000 rows) then has a kNN
graph that is sparser across the first feature than along the others, and the walk's
clusters were the two halves of that feature, whichever feature came first, with no warning
(docs/reliability.md, *Tied distances: a search's choice is not the data's*). Brute force
(`nearest_neighbors` from 16 features) meets ties in the rows' canonical order, a hash of their
values, and is left to it.

The kNN rule's theory breaks ties at random (Devroye, Gyorfi & Lugosi 1996, *A Probabilistic
Theory of Pattern Recognition*, chapter 11, on breaking distance ties): the choice among tied
neighbours then carries no structure of its own. Here the randomness is a hash of the pair, so
the lists stay a function of the data:

- symmetric in (i, j): i keeps j among its ties exactly as j keeps i. A key of the neighbour
  alone would make every point's tied neighbours prefer the same few points, hubs of the graph;
- except among copies of one point (ties at distance 0), which are one point: a random choice
  among more than k copies makes a sparse random graph of them, whose chance communities the
  walk cuts (a point mass split between clusters). Their lists share one core of k + 1
  copies instead, the closest a list of k comes to the copies' complete graph;
- of each feature's ranks, not its values: the same choice for any order of the rows and any
  positive scale or translation of a feature that keeps the tied lengths equal in floating
  point (the features' order does enter it, as the rounding of a sum of squares does for
  points without ties).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._hashing import GOLDEN, splitmix64
from ._numba import edge_length_kernel

__all__ = ["break_ties", "pair_keys", "rank_keys"]

#: Rows whose tied neighbours are looked up in one radius query.
_BATCH = 4096


def break_ties(Y, idx, dist, k, wider, within):
    """Exact kNN lists with every tie decided by the pair's key (module docstring).

    Parameters
    ----------
    Y : array (n, d)
        The points the lengths are measured on (`_numba.edge_length_kernel`'s formula).
    idx, dist : arrays (n, m), m > k (or m = k = n - 1)
        Each point's m nearest other points, sorted by that length: an equal (k + 1)-th
        length is a tie at the k-th distance. Modified in place.
    k : int
        Neighbours kept.
    wider : callable or None
        ``wider(rows)``: (indices, lengths) of more than m nearest other points of each of
        `rows`, sorted by length as `idx` and `dist` are, for the ties that run to the end of
        `idx`; a tie that ends inside them is decided there.
    within : callable
        ``within(rows, r)``: for each of `rows`, the indices of the points at distance at most
        `r` from it (itself included or not); `r` is given with room for rounding. Asked for
        the ties that run to the end of `wider`'s lists.

    Returns
    -------
    idx, dist : arrays (n, k)
        Within a list, tied lengths in the order of the pairs' keys; at the k-th distance, the
        tied points with the smallest keys, but for a point of more than k copies, whose list
        is its copies' core (the first k + 1 copies, itself left out). Lists without ties
        are the first k entries.

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[0.0, 0.0], [1, 0], [-1, 0], [0, 1], [0, -1]])  # four at distance 1
    >>> d = np.linalg.norm(Y[:, None] - Y[None], axis=2)
    >>> order = np.argsort(d, axis=1, kind="stable")
    >>> def wider(rows):
    ...     i = order[rows, 1:]
    ...     return i, np.take_along_axis(d[rows], i, axis=1)
    >>> def within(rows, r):
    ...     return [np.flatnonzero(d[i] <= r) for i in rows]
    >>> idx, dist = wider(np.arange(5))
    >>> other = idx.copy()
    >>> other[0] = other[0, ::-1]  # another search's order of point 0's tied neighbours
    >>> a, _ = break_ties(Y, idx[:, :3].copy(), dist[:, :3].copy(), 2, wider, within)
    >>> b, _ = break_ties(Y, other[:, :3].copy(), dist[:, :3].copy(), 2, wider, within)
    >>> bool((a == b).all())
    True
    """
    n, m = idx.shape
    tied_end = np.zeros(n, dtype=bool)
    if m > k:
        tied_end = dist[:, k - 1] == dist[:, k]
    tied_inside = (dist[:, 1:k] == dist[:, :k - 1]).any(axis=1) if k > 1 else tied_end
    if not (tied_end.any() or tied_inside.any()):
        return np.ascontiguousarray(idx[:, :k]), np.ascontiguousarray(dist[:, :k])
    keys = rank_keys(Y)
    rows = np.flatnonzero(tied_end)
    # copies of one point, more than k of them: one core of k + 1 copies that every copy lists
    # (no search needed, and none that would list every copy for every copy)
    zero = rows[dist[rows, k - 1] == 0]
    if zero.size:  # equal rows, equal keys: sorted by key, the copies of a point are one run
        _keep_copies(idx, dist, keys, zero[np.argsort(keys[zero], kind="stable")], k)
    rows = rows[dist[rows, k - 1] > 0]
    # a tie that ends inside a list (these, then `wider`'s) is decided there; one that runs to
    # its end is looked up by length
    for lists in ("these", "wider"):
        if not rows.size or (lists == "wider" and wider is None):
            continue
        widx, wdist = (idx[rows], dist[rows]) if lists == "these" else wider(rows)
        widx, wdist = np.ascontiguousarray(widx, np.int64), np.ascontiguousarray(wdist)
        done = _keep_in_lists(widx, wdist, keys, rows, k)
        idx[rows[done], :k], dist[rows[done], :k] = widx[done, :k], wdist[done, :k]
        rows = rows[~done]
    radii = dist[rows, k - 1]
    for r in np.unique(radii):  # one query per tied length: few on data with ties
        group = rows[radii == r]
        for a in range(0, group.size, _BATCH):
            part = group[a:a + _BATCH]
            # room for the search's own rounding; the lengths are then measured exactly
            found = [np.asarray(f, dtype=np.int64) for f in within(part, r * (1 + 1e-9))]
            indptr = np.concatenate([[0], np.cumsum([f.size for f in found])]).astype(np.int64)
            cand = np.concatenate(found) if found else np.empty(0, dtype=np.int64)
            lengths = edge_length_kernel(Y, np.repeat(part, np.diff(indptr)), cand)
            _keep_found(idx, dist, keys, part, indptr, cand, lengths, r, k)
    idx, dist = np.ascontiguousarray(idx[:, :k]), np.ascontiguousarray(dist[:, :k])
    _order_ties(idx, dist, keys)
    return idx, dist


def rank_keys(Y):
    """A 64-bit key of each row from its features' ranks (equal rows, equal keys)."""
    keys = np.zeros(Y.shape[0], dtype=np.uint64)
    for f in range(Y.shape[1]):
        _mix_column(keys, np.unique(Y[:, f], return_inverse=True)[1].astype(np.int64))
    return keys


@njit(cache=True)
def _mix_column(keys, codes):
    for i in range(keys.size):
        keys[i] = splitmix64(keys[i] + GOLDEN + np.uint64(codes[i]))


@njit(cache=True, inline="always")
def _pair_key(keys, i, j):
    return splitmix64(keys[i] + keys[j])  # a sum: the same key for (i, j) and (j, i)


@njit(cache=True)
def _keep_in_lists(idx, dist, keys, points, k):
    """Each list's tie at its k-th distance decided among the list's own entries where the
    tie ends inside it (in place; row t is the list of `points[t]`); True for those lists,
    False where the tie runs to the end."""
    n, m = idx.shape
    done = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        r = dist[i, k - 1]
        if dist[i, m - 1] == r:
            continue
        nearer = 0
        while dist[i, nearer] < r:
            nearer += 1
        end = nearer
        while dist[i, end] == r:
            end += 1
        _keep_smallest(idx, dist, keys, i, points[i], idx[i, nearer:end].copy(), nearer, r, k)
        done[i] = True
    return done


@njit(cache=True)
def _keep_copies(idx, dist, keys, copies, k):
    """Lists of points whose k nearest are all copies of themselves (distance 0), `copies`
    sorted by key (equal rows, equal keys: the copies of one point are one run): the
    first k + 1 copies of a run are its core, and each copy lists the core but itself (in
    place). Copies are interchangeable, so which are the core names no point of the data."""
    a = 0
    while a < copies.size:
        b = a
        while b < copies.size and keys[copies[b]] == keys[copies[a]]:
            b += 1
        for t in range(a, b):
            i = copies[t]
            s = 0
            for c in range(a, min(b, a + k + 1)):
                if copies[c] != i and s < k:
                    idx[i, s] = copies[c]
                    dist[i, s] = 0.0
                    s += 1
        a = b


@njit(cache=True)
def _keep_found(idx, dist, keys, rows, indptr, cand, lengths, r, k):
    """Rows whose tie ran to the list's end, from the points `within` found (in place)."""
    for t in range(rows.size):
        i = rows[t]
        nearer = 0
        for s in range(k):
            nearer += dist[i, s] < r
        count, tied = 0, 0
        for e in range(indptr[t], indptr[t + 1]):
            if cand[e] != i:
                count += lengths[e] < r
                tied += lengths[e] == r
        if count != nearer or nearer + tied < k:
            continue  # the query and the list disagree (rounding): the search's list stands
        ties = np.empty(tied, dtype=np.int64)
        tied = 0
        for e in range(indptr[t], indptr[t + 1]):
            if cand[e] != i and lengths[e] == r:
                ties[tied] = cand[e]
                tied += 1
        _keep_smallest(idx, dist, keys, i, i, ties, nearer, r, k)


@njit(cache=True)
def _keep_smallest(idx, dist, keys, row, point, ties, nearer, r, k):
    """Slots nearer..k-1 of list `row` (the list of `point`): the tied points of smallest
    pair key, equal keys (copies of one point) by number."""
    ties = np.sort(ties)
    order = np.argsort(pair_keys(keys, point, ties), kind="mergesort")
    for s in range(k - nearer):
        idx[row, nearer + s] = ties[order[s]]
        dist[row, nearer + s] = r


@njit(cache=True)
def pair_keys(keys, i, others):
    """The pair keys of (i, j) for each j of `others`."""
    out = np.empty(others.size, dtype=np.uint64)
    for t in range(others.size):
        out[t] = _pair_key(keys, i, others[t])
    return out


@njit(cache=True)
def _order_ties(idx, dist, keys):
    """Each row's runs of equal lengths in the order of the pairs' keys (equal keys, copies of
    one point, by number), in place."""
    n, k = idx.shape
    for i in range(n):
        for a in range(1, k):
            d = dist[i, a]
            j = idx[i, a]
            key = _pair_key(keys, i, j)
            b = a
            while b > 0 and dist[i, b - 1] == d:
                other = _pair_key(keys, i, idx[i, b - 1])
                if other < key or (other == key and idx[i, b - 1] < j):
                    break
                idx[i, b] = idx[i, b - 1]
                b -= 1
            idx[i, b] = j
