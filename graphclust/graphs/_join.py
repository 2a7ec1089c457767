"""Joining components from a neighbour index queried only by the points of the small components.

Boruvka rounds on the components, as in `join_edges`, but the shortest edge out of a component
is read from the sorted neighbour lists of its own points (an index over all points, queried
only by points outside the initial largest component) instead of from a scan of all n points:
the first entry of a point's list that lies in another component is that point's shortest
edge out, and the shortest of these over the component's points is the component's.

A list can be exhausted (all its k entries in the point's own component, as in a clique of
near-duplicates). Such a point matters only if its k-th distance is below the component's best
candidate so far (its outside neighbours are at least that far). With brute force, which
computes all n distances of a point at any k, such a list is replaced at once by the point's
nearest outside point from an exact scan against all n, in blocks of bounded memory (longer
lists would cost the same distances, and a point of a component far from the others would
grow its list to its whole component: 8 blobs of 2 500 points in 10 dimensions, lists of 4 096
for 17 500 points, 16 GB). The scans take a few points of each component first, the nearest to
the other components' balls; then only the points whose distance bound from the balls
(`_ball_gaps`) is below their component's best edge so far. This makes every component's edge
the exact shortest one, so the added length is exactly that of the all-pairs minimum spanning
forest between the components (the cut property, as in `join_edges`).

Two searches answer the queries. Brute force (scikit-learn, exact) costs P x n x dim, with P
the number of queried points: linear in n, and used while P x n <= `BRUTE_QUERY_MAX_WORK`.
Above it, the graph's own edges are searched (`_GraphIndex`): a best-first search
(`NeighbourIndex`'s, the one behind ``predict``) entered at the query's nearest pivots whose
component is not the query's. The graph's edges never leave a component, so everything it
finds is outside the query's component. It costs P x (8 sqrt(n) pivots + a few hundred
distances) x dim and builds nothing over all n points (an NN-descent index of all points,
pynndescent's, was used before: single-threaded when seeded, compiled in every fresh process;
docs/scaling.md compares the two). With the approximate search a point re-queries only while
its whole component has no candidate (k = 16, 64, 256, 1024), and a component still without
one is settled by an exact scan of its own points against all n, so connectivity never
depends on the search. Every added edge is measured again
in float64 on the points, whatever the search. Per round the bookkeeping is O(P k + n) array
work, for at most log2(components) rounds (every component but one merges each round).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._numba import edge_length_kernel, kruskal, nearest_outside, root_labels
from ._search import NeighbourIndex

__all__ = ["index_join_edges", "BRUTE_QUERY_MAX_WORK"]

#: The brute-force search is used when (queried points) x n is at most this (about 20 s of BLAS
#: at 50 dimensions on one core); above it, NN-descent (approximate) answers the queries.
BRUTE_QUERY_MAX_WORK = 5 * 10**9
_FIRST_K = 16
_APPROX_MAX_K = 1024
#: Components whose balls bound the scan (`_ball_gaps`), and how many points of each are
#: scanned at a time, nearest to the other components first: the edges they find bound the
#: rest, which the balls then leave out (separated blobs: most of their points).
_BALLS_MAX = 256
_BALL_BATCH = 64


def _sort_rows(width, ptr, flat, dist):
    """Sort each row's entries by their exact length (row i holds entries ptr[i]:ptr[i+1],
    `width` of them; rows stay contiguous, ties keep their order): ``np.lexsort((dist,
    row))`` as one sort of short rows per row width (the lists have a few widths; one sort of
    every entry took a gap test's time on 3 000 points with lists of 1 024)."""
    order = np.empty(flat.size, np.int64)
    for w in np.unique(width[width > 0]):
        idx = ptr[np.flatnonzero(width == w)][:, None] + np.arange(w)
        o = np.argsort(dist[idx], axis=1, kind="stable")
        order[idx] = np.take_along_axis(idx, o, axis=1)
    return flat[order], dist[order]


def _exact_nearest_outside(Y, rows, labels):
    """For each point of `rows`, its nearest point in another component: an exact scan of all
    n points in blocks of about 2^24 inner products (BLAS), screened and measured again by
    `nearest_outside`, threaded over the rows."""
    n = Y.shape[0]
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    sqnorm = np.einsum("ij,ij->i", Y, Y)
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty(rows.size, np.int64)
    step = max(1, 2**24 // n)
    for s in range(0, rows.size, step):
        r = rows[s : s + step]
        out[s : s + step] = nearest_outside(Y[r] @ Y.T, Y, r, sqnorm, labels)
    return out


def _ball_gaps(Y, labels, points):
    """(len(points), m): a lower bound of each point's distance to each of the m components
    `labels`, or None above `_BALLS_MAX` of them: |p - c_D| - R_D, c_D the mean of D and R_D
    its farthest point from it (the triangle inequality), measured directly and shrunk by
    1e-12 of itself against rounding; 0 inside (or near) a component's ball."""
    m = int(labels.max()) + 1
    if m > _BALLS_MAX:
        return None
    dim = Y.shape[1]
    members = sp.csr_matrix((np.ones(labels.size), (labels, np.arange(labels.size))),
                            shape=(m, labels.size))
    centres = (members @ Y) / np.bincount(labels, minlength=m)[:, None]
    radius = np.zeros(m)
    np.maximum.at(radius, labels, np.sqrt(((Y - centres[labels]) ** 2).sum(axis=1)))
    out = np.empty((points.size, m))
    step = max(1, 2**22 // (m * dim))
    for s in range(0, points.size, step):
        p = points[s : s + step]
        d = np.sqrt(((Y[p][:, None, :] - centres[None]) ** 2).sum(axis=2))
        out[s : s + step] = np.maximum(d * (1 - 1e-12) - radius * (1 + 1e-12), 0.0)
    return out


def _reach(gaps, now, lab):
    """Each queried point's bound from `_ball_gaps` over the first components that are not in
    its component now (`now`: each first component's current one; `lab`: the points'), or
    None without the bounds."""
    if gaps is None:
        return None
    return np.where(now[None, :] == lab[:, None], np.inf, gaps).min(axis=1)


def _nearest_first(rows, comp, bound, per=_BALL_BATCH):
    """The `per` rows of each component with the smallest `bound`."""
    order = np.lexsort((bound, comp))
    c = comp[order]
    start = np.searchsorted(c, c)  # each row's component's first position in the order
    return np.sort(rows[order[np.arange(order.size) - start < per]])


class _BruteIndex:
    """Exact k nearest neighbours among all points (scikit-learn brute force, blocked)."""

    exact = True

    def __init__(self, Y):
        from sklearn.neighbors import NearestNeighbors

        self._nn = NearestNeighbors(algorithm="brute").fit(Y)
        self._Y = Y

    def query(self, points, k, labels):
        _, idx = self._nn.kneighbors(self._Y[points], n_neighbors=k)
        return idx.astype(np.int64)


class _GraphIndex:
    """Approximate nearest points *outside* the query's component, from the kNN graph itself.

    The graph's edges never leave a component, so a best-first search of the graph
    (`NeighbourIndex`, the search behind ``predict``) entered at points of other components only
    ever finds points of those components. The entries are the query's `n_entry` nearest
    pivots (a seeded sample of 8 sqrt(n) points plus one point of every component) whose
    current component differs from the query's. Nothing is built but the pivots: no second
    neighbour index over all n points.
    """

    exact = False

    def __init__(self, Y, graph, random_state=0):
        # the graph's pattern: an edge of length 0 (duplicate points) is an edge too
        graph = sp.csr_matrix(graph)
        pattern = sp.csr_matrix((np.ones(graph.nnz), graph.indices, graph.indptr),
                                shape=graph.shape)
        self._index = NeighbourIndex(Y, pattern, exact_max_samples=0, random_state=random_state)
        self._Y = Y

    def query(self, points, k, labels):
        Yq = np.ascontiguousarray(self._index.centred(self._Y[points]))
        entries = self._index._entries(Yq, exclude=(labels[points], labels))
        _, idx = self._index._search(Yq, entries, k)
        missing = idx < 0  # the entries' components held fewer than k points: the point itself
        idx[missing] = np.broadcast_to(points[:, None], idx.shape)[missing]
        return idx


def _make_index(Y, n_queries, search, graph):
    n = Y.shape[0]
    if search == "auto":
        search = "exact" if n_queries * n <= BRUTE_QUERY_MAX_WORK else "approximate"
    return _BruteIndex(Y) if search == "exact" else _GraphIndex(Y, graph)


def index_join_edges(Y, labels, graph, *, search="auto"):
    """Edges (a, b, length) joining the components `labels` (0..m-1) of the points Y into one.

    `graph` is the (n, n) sparse matrix whose components `labels` are (its pattern is used,
    stored zeros included; only the approximate search reads it).
    `search`: "exact" (brute-force index: every added edge is a component's exact shortest edge
    out, the total added length equals the exact method's), "approximate" (the graph searched
    from pivots of other components: each component's edge is the shortest the search found, not
    always the shortest that exists)
    or "auto" (exact while (queried points) x n <= `BRUTE_QUERY_MAX_WORK`). Whatever the search,
    the returned edges join all components into one, and each is a real pair of points with
    its length measured exactly on Y. Returns the edges and the search used.
    """
    n = Y.shape[0]
    _, labels = np.unique(labels, return_inverse=True)
    n_comp = int(labels.max()) + 1
    if n_comp <= 1:
        e = np.empty(0, np.int64)
        return e, e, np.empty(0), search
    sizes = np.bincount(labels)
    big = int(np.argmax(sizes))
    big_point = int(np.flatnonzero(labels == big)[0])
    pts = np.flatnonzero(labels != big)  # the queried points; the big component never asks
    index = _make_index(Y, pts.size, search, graph)
    exact = index.exact
    k = min(_FIRST_K, n)
    # each queried point's list, sorted by distance, stored ragged: entries ptr[i]:ptr[i+1]
    flat = index.query(pts, k, labels).ravel()
    width = np.full(pts.size, k, np.int64)
    ptr = np.concatenate([[0], np.cumsum(width)])
    row_of = np.repeat(np.arange(pts.size), width)
    fdist = edge_length_kernel(Y, pts[row_of], flat)
    flat, fdist = _sort_rows(width, ptr, flat, fdist)
    scanned = np.zeros(pts.size, dtype=bool)  # settled by the exact scan once: again by it
    first_labels, first_point = labels, np.unique(labels, return_index=True)[1]
    gaps, balls = None, exact  # the balls' bounds, measured when a list is first exhausted
    added_a, added_b, added_d = [], [], []
    while True:
        lab = labels[pts]
        n_comp = int(labels.max()) + 1
        if n_comp <= 1:
            break
        home = labels[big_point]  # the component holding the initial largest one is skipped
        reach = _reach(gaps, labels[first_point], lab)
        batch = reach is not None  # the first scan of the round: a few per component
        while True:
            outside = labels[flat] != lab[row_of]
            pos = np.where(outside, np.arange(flat.size), flat.size)
            first = np.minimum.reduceat(pos, ptr[:-1])
            has = first < flat.size
            cand_d = np.where(has, fdist[np.minimum(first, flat.size - 1)], np.inf)
            best = np.full(n_comp, np.inf)
            np.minimum.at(best, lab, cand_d)
            kth = fdist[ptr[1:] - 1]
            comp_size = np.bincount(labels, minlength=n_comp)[lab]
            # a point is unsettled if its list is exhausted and (exact search) it could still
            # beat its component's best (neither its k-th distance nor its bound from the
            # balls reaches it) and its list does not yet cover its whole component, or
            # (approximate search) its component has no candidate at all
            need = ~has & (lab != home)
            if exact:
                low = kth if reach is None else np.maximum(kth, reach)
                need &= (low < best[lab]) & (width < np.minimum(comp_size + 1, n))
            else:
                need &= ~np.isfinite(best[lab])
            if not need.any():
                break
            if balls:  # the first exhausted lists: how near each point can be to the others
                balls, gaps = False, _ball_gaps(Y, first_labels, pts)
                reach = _reach(gaps, labels[first_point], lab)
                batch = reach is not None
                if batch:
                    continue
            rows = np.flatnonzero(need)
            scan = (exact | scanned[rows] | (4 * width[rows] > _APPROX_MAX_K)
                    | (width[rows] >= n))
            if scan.any():
                # brute force, or lists that outgrew the graph search (it found no edge out of
                # these components): an exact scan of these points, whose lists become their
                # nearest outside point, scanned again if that point joins them
                rows = rows[scan]
                if batch:  # the nearest to other components first: their edges bound the
                    rows, batch = _nearest_first(rows, lab[rows], reach[rows]), False  # rest
                scanned[rows] = True
                new_idx = _exact_nearest_outside(Y, pts[rows], labels)[:, None]
            else:
                new_idx = index.query(pts[rows], int(min(n, 4 * width[rows].max())), labels)
            kk = new_idx.shape[1]
            new_width = width.copy()
            new_width[rows] = kk
            new_ptr = np.concatenate([[0], np.cumsum(new_width)])
            replaced = np.zeros(pts.size, dtype=bool)
            replaced[rows] = True
            keep = ~replaced[row_of]
            dest = new_ptr[row_of[keep]] + (np.arange(flat.size)[keep] - ptr[row_of[keep]])
            new_flat = np.empty(new_ptr[-1], np.int64)
            new_dist = np.empty(new_ptr[-1])
            new_flat[dest] = flat[keep]
            new_dist[dest] = fdist[keep]
            dest = (new_ptr[rows][:, None] + np.arange(kk)).ravel()
            new_flat[dest] = new_idx.ravel()
            new_dist[dest] = edge_length_kernel(Y, np.repeat(pts[rows], kk), new_idx.ravel())
            width, ptr = new_width, new_ptr
            row_of = np.repeat(np.arange(pts.size), width)
            flat, fdist = _sort_rows(width, ptr, new_flat, new_dist)
        # each component's candidate: its point with the shortest edge out (ties: first point)
        order = np.lexsort((cand_d, lab))
        ok = np.isfinite(best)
        ok[home] = False
        comps = np.flatnonzero(ok)
        r = order[np.searchsorted(lab[order], comps)]
        ra = pts[r]
        rb = flat[first[r]]
        rd = cand_d[r]
        if ra.size == 0:
            raise RuntimeError("join: no component found an edge out; this is a bug")  # pragma: no cover
        o = np.argsort(rd, kind="stable")
        ra, rb, rd = ra[o], rb[o], rd[o]
        every = np.ones(ra.size, np.bool_)
        sel, _ = kruskal(n_comp, labels[ra], labels[rb], np.arange(ra.size), every, ra.size)
        added_a.append(ra[sel])
        added_b.append(rb[sel])
        added_d.append(rd[sel])
        new_roots = root_labels(n_comp, labels[ra[sel]], labels[rb[sel]])
        _, labels = np.unique(new_roots[labels], return_inverse=True)
    return (np.concatenate(added_a), np.concatenate(added_b), np.concatenate(added_d),
            "exact" if exact else "approximate")
