"""k-nearest-neighbour search (exact for small inputs, NN-descent for large) and the kNN graph."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_option, check_points, check_random_state, check_seed
from ..threads import limit_threads
from ._graph import Graph
from ._nndescent import nn_descent
from ._row_keys import canonical_order
from ._numba import edge_length_kernel, list_lengths, merge_lists, sort_rows_by_length
from ._scale import centre_and_scale, centred_rescale, row_rescale, scale_back
from ._ties import break_ties

__all__ = ["knn_graph", "nearest_neighbors", "EXACT_SEARCH_MAX_SAMPLES", "METRICS"]

#: ``method="auto"`` searches exactly up to this many points and with NN-descent above it.
#: graphclust's NN-descent (`_nndescent`) is compiled once per installation (numba's disk cache),
#: so a fresh process pays nothing for it; exact search is brute force O(n^2 d) (trees in low
#: dimension). First call in a fresh process, MNIST PCA-50, k = 10, default threads
#: (scripts/bench_first_call.py, docs/reliability.md): exact 2.7 / 5.9 / 32.8 / 34.0 s against
#: NN-descent 1.7 / 2.8 / 3.4 / 4.5 s at 10 000 / 20 000 / 50 000 / 70 000 points. Up to 20 000
#: the exact lists cost a few seconds and are kept; above, their quadratic cost is not worth it.
EXACT_SEARCH_MAX_SAMPLES = 20_000

METRICS = ("euclidean", "cosine")


def prepare_metric(X, metric):
    """Map cosine to euclidean on unit rows: ||a - b||^2 = 2 (1 - cos) is monotone in cosine.

    Each row is first divided by a power of two near its largest entry (exact), so that the norms
    neither underflow nor overflow whatever the scale of the row.
    """
    if metric == "euclidean":
        return X
    X = row_rescale(X)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel()) if sp.issparse(X) else (
        np.linalg.norm(X, axis=1)
    )
    if np.any(norms == 0):
        bad = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(
            f"metric='cosine' is undefined for all-zero rows; X row {bad} is all zeros "
            f"({int((norms == 0).sum())} such rows): drop them or use metric='euclidean'."
        )
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(1.0 / norms) @ X)
    return X / norms[:, None]


def euclidean_to_metric(dist, metric):
    """Convert euclidean distances on the prepared (unit-row) data back to `metric` values."""
    if metric == "cosine":
        return 0.5 * dist**2
    return dist


def _drop_self(indices, distances, k, rows=None):
    """Remove each row's own index (or its farthest entry if absent) and keep k columns; row t
    is the list of point ``rows[t]`` (default t)."""
    n = indices.shape[0]
    own = np.arange(n) if rows is None else np.asarray(rows)
    is_self = indices == own[:, None]
    is_self[~is_self.any(axis=1), -1] = True  # self not found: drop the farthest instead
    first_self = np.argmax(is_self, axis=1)
    mask = np.ones_like(is_self)
    mask[np.arange(n), first_self] = False
    idx = indices[mask].reshape(n, -1)[:, :k]
    dst = distances[mask].reshape(n, -1)[:, :k]
    return idx, dst


def _exact_lengths(Y, idx):
    """Distances of the neighbour lists recomputed as sqrt(sum (y_i - y_j)^2), rows re-sorted.

    scikit-learn's brute force uses |a|^2 + |b|^2 - 2 a.b, which loses digits (duplicates come out
    at 1e-8 instead of 0) and is not symmetric in (i, j), so d(i, j) and d(j, i) could differ in
    the last bit and the graph's lengths would depend on the row order. The direct formula is
    exact to rounding and symmetric; ties in the re-sort keep the search's order.
    """
    dist = list_lengths(Y, idx, np.arange(idx.shape[0]))
    return _sorted_by_length(dist, idx)


def _sorted_by_length(dist, idx):
    """Each row of (dist, idx) sorted by dist; ties keep their order. Sorted in place: every
    caller passes lists of its own."""
    sort_rows_by_length(dist, idx)
    return dist, idx


def nearest_neighbors(X, n_neighbors, *, metric="euclidean", method="auto", random_state=None,
                      n_searches=1, search_neighbors=None):
    """Indices and distances of each point's `n_neighbors` nearest other points.

    Parameters
    ----------
    X : array (n, d) or CSR matrix
        Finite points (validated by the caller).
    n_neighbors : int
        Neighbours per point, excluding the point itself (duplicates of it are neighbours).
    metric : {"euclidean", "cosine"}
        Cosine distance is ``1 - cos``.
    method : {"auto", "exact", "approximate"}
        ``exact``: scikit-learn's NearestNeighbors (tree or brute force). ``approximate``:
        NN-descent (`graphclust.graphs._nndescent` for dense points, deterministic for a seed
        whatever the number of threads; pynndescent for sparse rows). ``auto``: exact up to
        `EXACT_SEARCH_MAX_SAMPLES` points.
    random_state : int, Generator, RandomState or None
        Seed of NN-descent.
    n_searches : int >= 1, default 1
        Independent NN-descent searches (approximate path only); each point keeps the
        `n_neighbors` nearest distinct points of their lists. One search misses about 1.7 % of
        the true neighbours on MNIST and two seeds' lists differ in 2.4 % of their entries;
        three searches miss 0.16 %, at three times the cost (docs/model_selection.md, *More
        kNN searches and more Leiden runs*). The first search is the one ``n_searches=1`` runs;
        the others' seeds are drawn from its seed.
    search_neighbors : int >= n_neighbors, optional
        Approximate path only: each search builds lists of this many neighbours (at most
        n - 1) and the `n_neighbors` nearest are kept. NN-descent's misses sit at the tail of
        its lists, and a longer list joins more candidates: one search of 20 finds as many of
        MNIST's 10 true neighbours as three searches of 10 (0.9982-0.9984 against
        0.9983-0.9985), and at 500 000 points more (0.9966-0.9976 against 0.9958-0.9960) in
        two thirds of the time; but MNIST's clusters then move more with the seed (32 seeds,
        docs/scaling.md). Default: `n_neighbors`.

    Distances are computed on ``X / s`` with s a power of two near the largest coordinate and
    multiplied back by s (exact), so that neither tiny nor huge coordinates underflow or overflow
    (see ``graphclust.graphs._scale``), and on X less each feature's midrange where the feature
    lies far from the origin for its width (``_scale.far_offset``; exact), whose rounding
    would otherwise be the offset's.

    Returns
    -------
    indices : int64 array (n, n_neighbors), sorted by distance
    distances : float64 array (n, n_neighbors)
    """
    n = X.shape[0]
    n_searches = check_int(n_searches, "n_searches", low=1)
    search = n_neighbors if search_neighbors is None else check_int(
        search_neighbors, "search_neighbors", low=n_neighbors)
    search = min(search, n - 1)
    if method == "auto":
        method = "exact" if n <= EXACT_SEARCH_MAX_SAMPLES else "approximate"
    Xm = prepare_metric(X, metric)
    # features far from the origin are searched less their midranges (`far_offset`): their
    # rounding would otherwise be that of the offset (float32 NN-descent, brute force's |a|^2)
    if method != "exact" and not sp.issparse(Xm):
        # NN-descent reads (X - centre) / s as it goes: no scaled copy of the points (400 MB
        # at 10^6 x 50)
        centre, s = centre_and_scale(Xm)
    else:
        Xm, s = centred_rescale(Xm)
    if method == "exact":
        from sklearn.neighbors import NearestNeighbors

        # searched in the rows' own order (`canonical_order`): the search breaks tied
        # distances by row number, so the lists of integer data (scikit-learn's digits: 62 of
        # 1 797 points with tied 10th and 11th neighbours) moved with the row order
        order = canonical_order(Xm)
        inv = np.empty_like(order)
        inv[order] = np.arange(order.size)
        # a tree search meets tied neighbours in the order of its cells, which follows the
        # features (a k-d tree cuts the first of equally spread features first), and kept the
        # ties on the query's side of its first cut: those lists are searched one longer, so
        # that a tie at the k-th distance shows as an equal (k + 1)-th, and their ties are
        # decided by the pairs (`break_ties`). Brute force meets them in the rows' canonical
        # order, a hash of their values, and is left as it is (docs/reliability.md, *Tied
        # distances: a search's choice is not the data's*)
        nn = NearestNeighbors(n_neighbors=n_neighbors).fit(Xm[order])  # its choice of search
        tree = getattr(nn, "_fit_method", "brute") != "brute" and not sp.issparse(Xm)
        wide = min(n_neighbors + 1, n - 1) if tree else n_neighbors
        # on one thread: scikit-learn's brute force rounds its distances differently on one
        # thread and on two, so tied and near-tied neighbours came out in another order and
        # the lists differed. The library's thread count follows the machine's load, and the
        # same data gave another graph beside busy processes (docs/reliability.md)
        with limit_threads(1):
            # X=None excludes each point itself, keeps duplicates
            dist, idx = nn.kneighbors(n_neighbors=wide)
        dist, idx = dist[inv], order[idx[inv]]
        if not sp.issparse(Xm):
            dist, idx = _exact_lengths(Xm, idx)
        if tree:

            def wider(rows):  # the tied rows' 2 k + 1 nearest, measured as the lists are
                with limit_threads(1):
                    d, i = nn.kneighbors(Xm[rows], n_neighbors=min(2 * n_neighbors + 2, n))
                i, _ = _drop_self(order[i], d, 2 * n_neighbors + 1, rows)
                lengths = edge_length_kernel(Xm, np.repeat(rows, i.shape[1]), i.ravel())
                d, i = _sorted_by_length(lengths.reshape(i.shape), np.ascontiguousarray(i))
                return i, d

            def within(rows, r):
                with limit_threads(1):
                    found = nn.radius_neighbors(Xm[rows], radius=r, return_distance=False)
                return [order[f] for f in found]

            idx, dist = break_ties(Xm, idx, dist, n_neighbors, wider, within)
    else:
        rng = np.random.default_rng() if random_state is None else check_random_state(random_state)
        if not sp.issparse(Xm):
            # graphclust's NN-descent (cached compilation, parallel and deterministic for a
            # seed) runs the searches itself, on one copy of the points; the float32 search
            # distances recomputed from Xm (`_exact_lengths`' numbers, in the search's memory
            # order), each row re-sorted
            idx, dist = nn_descent(Xm, search,
                                   random_state=int(rng.integers(2**62)), exact=True, scale=s,
                                   n_searches=n_searches, centre=centre)
            dist, idx = _sorted_by_length(dist, idx)
        else:
            # one generator draws every search's seed: the first is the one a single search uses
            runs = [_sparse_search(Xm, search, rng, random_state is None)
                    for _ in range(n_searches)]
            idx, dist = runs[0]
            if n_searches > 1:
                # a point found by several searches is kept once (merge_lists compares indices)
                idx, dist = merge_lists(np.hstack([r[0] for r in runs]),
                                        np.hstack([r[1] for r in runs]), runs[0][0].shape[1])
            dist, idx = _sorted_by_length(dist, idx)
        # the nearest n_neighbors of each (sorted) list
        idx, dist = idx[:, :n_neighbors], dist[:, :n_neighbors]
    dist = scale_back(dist.astype(np.float64), s)
    return idx.astype(np.int64), euclidean_to_metric(dist, metric)


def _sparse_search(Xm, n_neighbors, rng, unseeded):
    """One NN-descent search of the prepared sparse rows `Xm`, its seed drawn from `rng`.

    Sparse rows (cosine on text) go to pynndescent's sparse NN-descent; a fixed seed makes it
    run single-threaded, which is what reproducibility costs there.
    """
    from pynndescent import NNDescent

    n = Xm.shape[0]
    seed = None if unseeded else int(rng.integers(2**31 - 1))
    index = NNDescent(
        Xm,
        n_neighbors=min(n_neighbors + 1, n),
        metric="euclidean",
        random_state=seed,
        n_jobs=1 if seed is not None else -1,
        low_memory=True,
        compressed=False,
    )
    idx, dist = index.neighbor_graph
    return _drop_self(idx.astype(np.int64), dist.astype(np.float64), n_neighbors)


def knn_graph(
    X,
    n_neighbors=10,
    *,
    metric="euclidean",
    method="auto",
    mode="union",
    random_state=None,
    n_searches=1,
    search_neighbors=None,
):
    """Symmetrised k-nearest-neighbour graph.

    Each point is joined to its `n_neighbors` nearest other points; the directed relation is
    symmetrised (``mode="union"``: i ~ j if either is among the other's neighbours;
    ``mode="mutual"``: if both are). Nothing n x n is allocated: exact search uses trees or chunked
    brute force, large inputs use NN-descent (graphclust's own for dense points, pynndescent for
    sparse rows).

    Parameters
    ----------
    X : array-like (n_samples, n_features) or scipy sparse matrix (cosine text data)
    n_neighbors : int, default 10
        1 <= n_neighbors < n_samples.
    metric : {"euclidean", "cosine"}, default "euclidean"
    method : {"auto", "exact", "approximate"}, default "auto"
        ``auto`` is exact for at most `EXACT_SEARCH_MAX_SAMPLES` (20 000) points, NN-descent above
        (recall >= 0.95 measured at 20 000 points, see the tests; 0.97 at 250 000).
    mode : {"union", "mutual"}, default "union"
    random_state : int, Generator, RandomState or None
        Seed for NN-descent; the exact path is deterministic (the value is validated either way).
    n_searches : int >= 1, default 1
        Independent NN-descent searches merged point by point (`nearest_neighbors`): fewer
        missed neighbours and a graph that depends less on the seed, at that many times the
        search's cost.
    search_neighbors : int >= n_neighbors, optional
        Lists of this many searched, the `n_neighbors` nearest kept (`nearest_neighbors`):
        one search of 2 n_neighbors finds about as many true neighbours as three of
        n_neighbors, in less time (another seed's lists then differ more).

    Returns
    -------
    Graph
        ``distances`` hold the metric distances; ``n_components`` says whether it fell apart
        (the kNN graph is not joined; MST-based builders are).

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> g = gc.knn_graph(X, n_neighbors=5)
    >>> g.n_nodes, bool(g.degrees.min() >= 5)
    (200, True)
    """
    X = check_points(X, accept_sparse=True)
    n = X.shape[0]
    check_option(metric, "metric", set(METRICS))
    check_option(method, "method", {"auto", "exact", "approximate"})
    check_option(mode, "mode", {"union", "mutual"})
    n_neighbors = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    check_seed(random_state)  # refuse a bad seed even where the exact path ignores it
    n_searches = check_int(n_searches, "n_searches", low=1)
    idx, dist = nearest_neighbors(
        X, n_neighbors, metric=metric, method=method, random_state=random_state,
        n_searches=n_searches, search_neighbors=search_neighbors,
    )
    return knn_graph_from_neighbors(
        idx,
        dist,
        mode=mode,
        provenance={
            "builder": "knn_graph",
            "n_neighbors": n_neighbors,
            "metric": metric,
            "method": method,
            "mode": mode,
            "n_searches": n_searches,
        },
    )


def knn_graph_from_neighbors(idx, dist, *, mode="union", keep=None, provenance=None):
    """Symmetrise neighbour lists (n, k) into a `Graph`.

    `mode` "union" keeps an edge in either point's list, "mutual" one in both. `keep`, a
    boolean (n, k) array, leaves out the list entries where it is False before that (an edge
    left out of one list and kept in the other stays in the union).
    """
    n, k = idx.shape
    u = np.repeat(np.arange(n, dtype=np.int64), k)
    v = idx.ravel()
    d = dist.ravel()
    if keep is not None:
        keep = np.asarray(keep)
        if keep.shape != (n, k) or keep.dtype != bool:
            raise ValueError(f"keep must be a bool array of the lists' shape {(n, k)}; got "
                             f"{keep.dtype} of shape {keep.shape}.")
        u, v, d = u[keep.ravel()], v[keep.ravel()], d[keep.ravel()]
    if mode == "mutual":
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        key = lo * n + hi
        keys, counts = np.unique(key, return_counts=True)
        mutual = np.isin(key, keys[counts >= 2])
        u, v, d = u[mutual], v[mutual], d[mutual]
    return Graph._from_edges(n, u, v, d, provenance=provenance)
