"""A gap test for clusters that are whole components of the kNN graph.

The escape-time null (`_null_model`) compares how slowly the walk leaves each cluster; a
cluster with no edge out (a union of connected components of the weighted graph) is never
left, so that test cannot judge it. Such a cluster can still be chance: in one dimension the
gaps between neighbouring points of a sample without clusters are exponential, and one of them
is often wider than the span of ten neighbours on either side (a 1-D Gaussian of 3 000 points:
its 10-NN graph falls apart in 34 % of draws; docs/model_selection.md).

The statistic is the width of the gap at the cluster's boundary in units of the
neighbourhoods on either side: the bridge ``(a, b)`` that `graphclust.graphs.component_bridges`
adds across the boundary (the shortest edge between the components, the cut property's edge of
a minimum spanning tree), over the wider of the two components' median k-th-neighbour radius,
``g = |ab| / max(med_A r_k, med_B r_k)``. The ratio does not change with the scale of the data
or with its density. The medians, not the radii of a and b: the ends of a gap between two
Gaussian blobs lie in their sparse tails, where r_k is wide, so the ends' own radii make a
real gap look like a chance one (blobs 10 standard deviations apart, 1 000 points: 1.39, which
the null's draws matched, their widest of 200 being 1.53; with the medians 56 against the
fit's null of 3.0). An edge of the kNN lists that crosses the
boundary (its weight pruned) counts with ``|uv| / max(r_k(u), r_k(v)) <= 1``: no gap. A
cluster's value is the smallest over the edges and bridges that cross its boundary.

A null sample's value is the widest bridge ratio of its kNN graph; the samples are
structureless (uniform and Gaussian, the escape null's references), of the data's size (at most
`GAP_NULL_MAX_SAMPLES` points, 20 000 in one dimension), 1 when their graph is connected.
Their dimension is that of the points the gap is measured in: for a cluster whose narrowest
crossing is a bridge, the intrinsic dimension of the component on the bridge's wider side (the
one whose median radius is the ratio's unit); else the data's. Chance gaps are a
one-dimensional phenomenon (a 2-D or 3-D sample's 10-NN graph did not fall apart in 450 draws),
so the data's dimension, a mean over all points, would let a thin curve decide for a plane: in
wut/isolation (two circles of 3 000 points around and inside an annulus of 3 000) the data's
dimension is 1.2, and the bridges of 2.6 annulus radii that set the three rings apart matched a
1-D null (2.60), where the annulus, the side they are measured in, has dimension 1.96 and a 2-D
null of 1.0. `GAP_DRAWS` samples per reference are drawn, and a cluster passes when fewer than
`GAP_EXCEEDANCES` of one reference's draws have a gap as wide as its own: a Monte Carlo test
(Barnard 1963; Hope 1968) whose level, were the data exchangeable with the samples of one
reference, is `GAP_EXCEEDANCES` / (`GAP_DRAWS` + 1) = 5 / 100. The same level from 19 draws and
no exceedance (the rule before) loses power: a gap whose p-value is 0.0055 (three moons of 300
points, 1.95 against 1-D uniform samples) is matched by one of 19 draws in one fit of ten, by
five of 99 in one of 4 000 (Davison & Hinkley 1997, ch. 4: 99 draws or more at this level).
Each reference's null value is thus its `GAP_EXCEEDANCES`-th widest draw. The samples are cheap
(a kNN graph; no scan). The drawing stops as soon as every cluster has been matched
`GAP_EXCEEDANCES` times by some reference's draws (Besag & Clifford 1991).
"""

from __future__ import annotations

import functools
import threading

import numba
import numpy as np
import scipy.sparse as sp

from ..threads import get_num_threads, run_parallel
from ._markov_components import _members
from ._null_model import NULL_REFERENCES, intrinsic_dimension, null_sample

__all__ = ["GAP_DRAWS", "GAP_EXCEEDANCES", "GAP_NULL_MAX_SAMPLES", "GAP_PROBE_NEIGHBORS",
           "bridge_ratios", "cluster_gaps", "gap_dimensions", "gap_test", "gap_warning",
           "join_chance_gaps", "line_spacing_null", "null_gap_ratio", "pair_crossings"]

#: Structureless samples per reference of the gap test, and how many of them must have a gap
#: as wide as a cluster's to match it: a Monte Carlo level of 5 / 100 (module docstring).
GAP_DRAWS = 99
GAP_EXCEEDANCES = 5

#: The gap test's samples have the data's size up to this many points, ten times more in one
#: dimension: there a search is cheap and chance gaps grow with the size (a 1-D Gaussian's
#: 10-NN graph falls apart in 12 % of draws of 1 000 points, 34 % of 3 000), while in two to
#: three dimensions no draw fell apart (450 draws of 1 000 to 10 000 points).
GAP_NULL_MAX_SAMPLES = 2_000

#: Neighbours of a first, cheaper look at a null sample's graph in two or more dimensions: its
#: 5-NN graph is a subgraph of the 10-NN graph, connected in 38-40 of 40 draws of 2 000 points
#: in 2-8 dimensions, and then the sample's value is 1 without the 10-NN lists (25-35 % less
#: time per draw).
GAP_PROBE_NEIGHBORS = 5

#: From this many dimensions a null sample's probe lists come from matrix products
#: (`_product_probe`) instead of a k-d tree, whose queries of 2 000 points cost 5 ms in 5
#: dimensions, 13 ms in 8, 33 ms in 12, 72 ms in 37 and 135 ms in 80 (the test's 198 draws:
#: 21 s of a 3 000-point fit of make_blobs in 100 features, whose scan took 0.1 s); the
#: products' lists 8-9 ms in 5 to 12 dimensions, 11 ms in 37, 14 ms in 80.
GAP_PRODUCT_DIMENSION = 8

_GAP_CACHE = {}
_GAP_CACHE_SIZE = 4096
_GAP_CACHE_LOCK = threading.Lock()


def bridge_ratios(graph, X, dist, metric="euclidean"):
    """(a, b, g) of the bridges that join `graph`'s components: each one's length over the
    wider of its two components' median k-th-neighbour distance (module docstring).

    `dist` (n, k) are the kNN lists' distances of the points `X` (their last column is r_k).
    Ratios are of euclidean lengths (for the cosine metric, of chords of the unit sphere), so
    that they compare with the null's. Empty arrays for a connected graph. Above 5e9
    distances the bridges come from an approximate search, which may find a longer one than
    the shortest: the gap is then overstated, never understated by the search.
    """
    from ..graphs import component_bridges

    # the neighbour-index search: exact (brute force) up to 5e9 distances, the same edges as
    # the all-points scan in a fifth of its time (letters: 0.36 s against 1.76 s)
    a, b, length = component_bridges(graph, X, metric=metric, method="index")
    comp = graph.component_labels
    med = _component_medians(comp, np.asarray(dist, dtype=np.float64)[:, -1])
    return a, b, _ratio(length, np.maximum(med[comp[a]], med[comp[b]]), metric)


def _component_medians(comp, values):
    """The median of `values` over each component (labels 0..m-1), by one sort."""
    order = np.lexsort((values, comp))
    starts = np.searchsorted(comp[order], np.arange(comp.max() + 2))
    lo, hi = starts[:-1], starts[1:] - 1
    v = values[order]
    return 0.5 * (v[lo + (hi - lo) // 2] + v[hi - (hi - lo) // 2])


def _ratio(length, scale, metric):
    with np.errstate(divide="ignore", invalid="ignore"):
        g = length / scale
    g = np.where(np.isnan(g), 1.0, g)  # 0 / 0: duplicates, no gap
    return np.sqrt(g) if metric == "cosine" else g  # the cosine distance is half a squared chord


def cluster_gaps(graph, X, dist, labels, clusters, metric="euclidean", *, return_edges=False):
    """The gap ratio of each cluster in `clusters`: the smallest g over the kNN edges and the
    bridges that cross its boundary (module docstring). Returns a float array like `clusters`,
    and with `return_edges` also the crossing edges and bridges ``(u, v, g)``."""
    labels = np.asarray(labels, dtype=np.int64)
    clusters = np.asarray(clusters, dtype=np.int64)
    u, v, length, _ = graph.edges()
    a, b, g_b = bridge_ratios(graph, X, dist, metric)
    u, v = np.concatenate([u, a]), np.concatenate([v, b])
    rk = np.asarray(dist, dtype=np.float64)[:, -1]
    g = np.concatenate([_ratio(length, np.maximum(rk[u[:length.size]], rk[v[:length.size]]),
                               metric), g_b])
    cross = labels[u] != labels[v]  # an edge across a boundary counts for both its clusters
    best = np.full(int(labels.max()) + 1, np.inf)
    np.minimum.at(best, labels[u[cross]], g[cross])
    np.minimum.at(best, labels[v[cross]], g[cross])
    if return_edges:
        return best[clusters], (u[cross], v[cross], g[cross])
    return best[clusters]


def join_chance_gaps(labels, clusters, gaps, edges, null):
    """`labels` with each cluster of `clusters` whose gap is no wider than `null` (one value, or
    one per cluster) joined to the cluster across its narrowest crossing (`edges`: ``(u, v,
    g)`` from `cluster_gaps`; `gaps`: its values per cluster of `clusters`), transitively;
    renumbered 0..c'-1 in the order of each joined group's smallest cluster number.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array([0, 0, 1, 1, 2, 2])
    >>> edges = (np.array([1, 3]), np.array([2, 4]), np.array([3.0, 1.2]))  # 0-1, 1-2
    >>> join_chance_gaps(labels, [0, 2], [3.0, 1.2], edges, 1.5)  # 2's gap is chance, 0's not
    array([0, 0, 1, 1, 1, 1])
    """
    from scipy.sparse.csgraph import connected_components

    labels = np.asarray(labels, dtype=np.int64)
    c = int(labels.max()) + 1
    u, v, g = (np.asarray(e) for e in edges)
    lu, lv = labels[u], labels[v]
    pairs = []
    gaps = np.asarray(gaps, dtype=np.float64)
    nulls = np.broadcast_to(np.asarray(null, dtype=np.float64), gaps.shape)
    for cl, gap, nul, e in zip(np.asarray(clusters, dtype=np.int64), gaps, nulls,
                               _narrowest_crossings(labels, clusters, gaps, u, v, g)):
        if gap <= nul and e < u.size:
            pairs.append((cl, lv[e] if lu[e] == cl else lu[e]))
    if not pairs:
        return labels
    a, b = np.array(pairs).T
    _, group = connected_components(sp.csr_matrix((np.ones(a.size), (a, b)), shape=(c, c)),
                                    directed=False)
    # each group takes the rank of its smallest cluster number: the clusters keep the order
    # the selection gave them, whatever the row order or scale of the points
    low = np.full(group.max() + 1, c, dtype=np.int64)
    np.minimum.at(low, group, np.arange(c))
    rank = np.empty_like(low)
    rank[np.argsort(low, kind="stable")] = np.arange(low.size)
    return rank[group[labels]]


def _narrowest_crossings(labels, clusters, gaps, u, v, g):
    """Per cluster of `clusters`, the index of its narrowest crossing among the edges ``(u, v,
    g)`` (the first whose ratio is the cluster's gap), or ``u.size`` when it has none; one
    pass over the edges, whatever the number of clusters."""
    labels = np.asarray(labels, dtype=np.int64)
    clusters = np.asarray(clusters, dtype=np.int64)
    gap_of = np.full(int(labels.max()) + 1, np.nan)
    gap_of[clusters] = gaps
    first = np.full(gap_of.size, u.size, dtype=np.int64)
    for ends in (labels[u], labels[v]):
        hit = np.flatnonzero(g == gap_of[ends])  # NaN (an untested cluster) equals nothing
        np.minimum.at(first, ends[hit], hit)
    return first[clusters]


def null_gap_ratio(n, d_hat, n_neighbors, *, reference="uniform", random_state=None,
                   workers=None):
    """The widest bridge ratio of the kNN graph of one structureless sample (1.0 if connected).

    min(n, `GAP_NULL_MAX_SAMPLES`) points (ten times that in one dimension), uniform in the unit
    cube or standard normal, in round(d_hat) dimensions; exact kNN lists of `n_neighbors`
    (the k-d tree's queries on `workers` threads, default `get_num_threads()`). A seeded
    value is kept for later calls.

    Examples
    --------
    >>> g = [null_gap_ratio(3000, 1.0, 10, reference="Gaussian", random_state=r)
    ...      for r in range(20)]
    >>> bool(min(g) == 1.0 and 1.0 < max(g) < 3.0)  # a 1-D sample's graph often falls apart
    True
    """
    from ..graphs import knn_graph_from_neighbors

    d0 = int(max(1, round(d_hat)))
    m = int(min(n, GAP_NULL_MAX_SAMPLES * (10 if d0 == 1 else 1)))
    if m <= n_neighbors + 1:
        return 1.0
    key = (reference, m, d0, int(n_neighbors), random_state)
    cached = None if random_state is None else _GAP_CACHE.get(key)  # one read: the draws
    if cached is not None:  # run in threads, and another may evict the key meanwhile
        return cached
    X0 = null_sample(reference, m, d0, random_state)
    value = 1.0
    if d0 == 1:  # the bridges of a line: its components' boundaries, all from one sort
        n_comp, comp, rk = _line_lists(X0[:, 0], n_neighbors)
        if n_comp > 1:
            value = max(1.0, float(_line_bridge_ratios(X0[:, 0], comp, rk).max()))
    else:
        n_comp, comp, idx, dist = _sample_lists(X0, n_neighbors, probe=GAP_PROBE_NEIGHBORS,
                                                workers=workers)
        if n_comp > 1:  # the library's bridge search (rare: no draw of 450 in 2-3-D)
            value = max(1.0, float(bridge_ratios(knn_graph_from_neighbors(idx, dist), X0,
                                                 dist)[2].max()))
    if random_state is not None:
        with _GAP_CACHE_LOCK:
            if len(_GAP_CACHE) >= _GAP_CACHE_SIZE:
                _GAP_CACHE.pop(next(iter(_GAP_CACHE)))
            _GAP_CACHE[key] = value
    return value


@functools.lru_cache(maxsize=64)
def line_spacing_null(n, n_neighbors, random_state=0):
    """The widest spacing of a uniform sample on a line, over its median k-th neighbour
    distance: the `GAP_EXCEEDANCES`-th widest of `GAP_DRAWS` samples of min(n, ten times
    `GAP_NULL_MAX_SAMPLES`) points (a Monte Carlo level of 5 / 100, as `gap_test`).

    The null of `pair_crossings`' ratio on a curve: a cut of a curve between two adjacent
    clusters lies across the spacing between two neighbours along it, and the narrowest
    crossing is that spacing. Unlike `null_gap_ratio` it does not need the graph to fall
    apart (a spacing of a few neighbours' spans is crossed by the lists of the points beside
    it, and the walk still hardly crosses it).

    Examples
    --------
    >>> g = line_spacing_null(1000, 10)
    >>> bool(1.2 < g < 2.5)  # the widest of 999 spacings: about ln(1000) spacings
    True
    """
    m = int(min(n, GAP_NULL_MAX_SAMPLES * 10))
    if m <= n_neighbors + 1:
        return np.inf
    values = []
    for r in range(GAP_DRAWS):
        x = np.sort(np.random.default_rng((int(random_state), r)).random(m))
        rk = _line_lists(x, n_neighbors)[2]
        values.append(np.diff(x).max() / np.median(rk))
    return float(np.sort(values)[-GAP_EXCEEDANCES])


def pair_crossings(X, W, labels, dist, *, return_edges=False):
    """``(pairs, ratios)``: each pair of adjacent clusters of `labels` (`adjacent_pairs` of
    W) and its narrowest crossing, the shortest edge of W between them over the wider of the
    two clusters' median k-th neighbour distance (the last column of `dist`), as the gap
    test's ratio (`cluster_gaps`) measures a bridge. Euclidean, dense X. With
    `return_edges`, also ``(u, v)``: each pair's shortest edge, u in its first cluster.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = np.c_[[0.0, 1.0, 2.0, 5.0, 6.0, 7.0]]
    >>> W = sp.csr_matrix(np.diag(np.ones(5), 1) + np.diag(np.ones(5), -1))
    >>> dist = np.full((6, 1), 1.0)
    >>> pair_crossings(X, W, np.array([0, 0, 0, 1, 1, 1]), dist)[1].tolist()
    [3.0]
    """
    from ..graphs import edge_lengths

    labels = np.asarray(labels, dtype=np.int64)
    c = int(labels.max()) + 1
    W = sp.coo_matrix(W)
    a, b = labels[W.row], labels[W.col]
    cross = a < b
    u, v, a, b = W.row[cross], W.col[cross], a[cross], b[cross]
    if not u.size:
        none = np.empty(0, np.int64)
        out = np.empty((0, 2), np.int64), np.empty(0)
        return out + (none, none) if return_edges else out
    length = edge_lengths(X, u, v)
    med = _component_medians(labels, np.asarray(dist, dtype=np.float64)[:, -1])
    code = a * c + b
    order = np.lexsort((length, code))  # per pair, its shortest edge first
    first = np.r_[True, code[order][1:] != code[order][:-1]]
    order = order[first]
    pairs = np.stack([code[order] // c, code[order] % c], axis=1)
    ratios = _ratio(length[order], np.maximum(med[pairs[:, 0]], med[pairs[:, 1]]), "euclidean")
    return (pairs, ratios, u[order], v[order]) if return_edges else (pairs, ratios)


def _sample_lists(X0, n_neighbors, probe=None, workers=None):
    """(number, labels) of the components of the exact kNN graph of the sample `X0`
    (continuous: no ties), and its lists (indices, distances; each point itself left out): a
    k-d tree's, a fifth of the library graph's cost (the gap test draws up to 2 x
    `GAP_DRAWS` samples), its components from the lists' pattern alone. With `probe` (fewer
    neighbours) the probe's graph is looked at first: a subgraph of the kNN graph, so when it
    is connected the kNN graph is, and ``(1, zeros, None, None)`` comes back without the
    longer lists."""
    from scipy.spatial import cKDTree

    m = X0.shape[0]
    if probe is not None and probe < n_neighbors and X0.shape[1] >= GAP_PRODUCT_DIMENSION:
        lists = _product_probe(X0, probe, n_neighbors)
        if lists is not None and _weak_components(lists)[0] == 1:
            return 1, np.zeros(m, dtype=np.int64), None, None
    tree = cKDTree(X0)
    workers = get_num_threads() if workers is None else workers  # the library's threads
    if probe is not None and probe < n_neighbors:
        if _weak_components(tree.query(X0, probe + 1, workers=workers)[1])[0] == 1:
            return 1, np.zeros(m, dtype=np.int64), None, None
    dist, idx = tree.query(X0, n_neighbors + 1, workers=workers)  # each point first, at 0
    n_comp, comp = _weak_components(idx)
    return n_comp, comp, idx[:, 1:], dist[:, 1:]


def _product_probe(X0, probe, n_neighbors, block=256):
    """Lists of `probe` neighbours of each point of the sample `X0` (m, d), itself left out,
    by squared distances from matrix products (|x|^2 + |y|^2 - 2 x.y, a block of rows at a
    time), each list within the point's exact `n_neighbors` nearest: or None where rounding
    could have let another point in. Then the lists' graph is a subgraph of the exact kNN
    graph, and when it is connected so is that graph (`_sample_lists`), as with a k-d tree's
    exact probe. A computed squared distance errs by at most ``tol`` (an inner product of d
    terms by d u sum|x_i y_i| <= d u (|x|^2 + |y|^2) / 2, Higham 2002, section 3.1, in any order
    of summation; here four times that bound over), so a list is within the exact kNN list
    when its farthest computed distance is more than 2 tol below the k-th computed one."""
    m, d = X0.shape
    sq = np.einsum("ij,ij->i", X0, X0)
    tol = 4.0 * (d + 4) * np.finfo(np.float64).eps * (sq + sq.max())
    out = np.empty((m, int(probe)), dtype=np.int64)
    for start in range(0, m, block):
        if not _nearest_in_rows(X0[start:start + block] @ X0.T, sq, start, tol, int(probe),
                                int(n_neighbors), out):
            return None
    return out


@numba.njit(cache=True, nogil=True)
def _nearest_in_rows(G, sq, start, tol, probe, k, out):
    """`_product_probe`'s lists of the rows ``start + r`` of the products G (b, m) into
    `out`; False when a row's margin does not hold (then `out` is incomplete)."""
    b, m = G.shape
    vals = np.empty(k)
    ids = np.empty(k, dtype=np.int64)
    for r in range(b):
        i = start + r
        kept = 0
        for j in range(m):
            if j == i:
                continue
            v = sq[i] + sq[j] - 2.0 * G[r, j]
            if kept < k:
                p = kept
                kept += 1
            elif v < vals[k - 1]:
                p = k - 1
            else:
                continue
            while p > 0 and vals[p - 1] > v:  # insertion into the k smallest, in order
                vals[p] = vals[p - 1]
                ids[p] = ids[p - 1]
                p -= 1
            vals[p] = v
            ids[p] = j
        if kept < k or not vals[probe - 1] + 2.0 * tol[i] < vals[k - 1]:
            return False
        out[i, :] = ids[:probe]
    return True


def _weak_components(idx):
    """(number, labels) of the weakly connected components of the lists `idx` (m, k)."""
    from scipy.sparse.csgraph import connected_components

    m, k = idx.shape
    pattern = sp.csr_matrix((np.ones(idx.size, dtype=np.int8), idx.ravel(),
                             np.arange(0, idx.size + 1, k)), shape=(m, m))
    return connected_components(pattern, directed=True, connection="weak")


def _line_lists(x, n_neighbors):
    """``(number, labels, r_k)`` of the components of the exact kNN graph of points `x` on a
    line (continuous: no ties) and each point's k-th neighbour distance, from one sort: a
    point's k nearest lie among the k on either side in sorted order, and there is no edge
    across the gap between sorted neighbours i and i + 1 exactly when no point left of it
    reaches past it (max over a <= i of x_a + r_a < x_(i+1)) and none right of it reaches
    back (min over b > i of x_b - r_b > x_i), counted in sorted positions. A k-d tree's
    lists of a 20 000-point sample cost 31 ms, this 7 ms; `tests/test_gap_null.py` compares
    the two."""
    m, k = x.size, int(n_neighbors)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    pad = np.concatenate([np.full(k, -np.inf), xs, np.full(k, np.inf)])
    near = np.empty((2 * k, m))  # the distances to the k on either side, one row per step
    for j in range(1, k + 1):
        np.subtract(xs, pad[k - j:k - j + m], out=near[j - 1])
        np.subtract(pad[k + j:k + j + m], xs, out=near[k + j - 1])
    rs = np.partition(near, k - 1, axis=0)[k - 1]
    # how far each point's list reaches, in sorted positions (by the distances themselves:
    # x_a + r_a would round differently from the differences the lists are made of)
    at = np.arange(m)
    reach = np.maximum.accumulate(at + (near[k:] <= rs).sum(axis=0))[:-1] < at[1:]
    back = np.minimum.accumulate((at - (near[:k] <= rs).sum(axis=0))[::-1])[::-1][1:] > at[:-1]
    cs = np.concatenate([[0], np.cumsum(reach & back)])
    comp, rk = np.empty(m, dtype=np.int64), np.empty(m)
    comp[order], rk[order] = cs, rs
    return int(cs[-1]) + 1, comp, rk


def _line_bridge_ratios(x, comp, rk):
    """`bridge_ratios` of points on a line: a kNN graph's components there are intervals
    (a point between two neighbours is nearer than the farther), so the bridges of the
    components' minimum spanning tree are the gaps between adjacent intervals, each over the
    wider of its two intervals' median k-th neighbour distance. One sort, where the bridge
    search costs (points outside the largest component) x m (`tests/test_gap_null.py`
    compares the two)."""
    order = np.argsort(x, kind="stable")
    xs, cs = x[order], comp[order]
    cut = np.flatnonzero(cs[1:] != cs[:-1])
    med = _component_medians(comp, rk)
    return _ratio(xs[cut + 1] - xs[cut], np.maximum(med[cs[cut]], med[cs[cut + 1]]),
                  "euclidean")


def gap_test(X, idx, dist, labels, clusters, d_hat, *, metric="euclidean", random_state=None,
             references=NULL_REFERENCES, graph=None, return_edges=False):
    """Test the clusters `clusters` (whole components of the weighted graph) against chance gaps.

    Parameters
    ----------
    X : array (n, d), the points (dense; see Returns for sparse rows)
    idx, dist : arrays (n, k), their kNN lists
    labels : int array (n,), the partition
    clusters : int array, the clusters to test
    d_hat : float, the data's intrinsic dimension (the null's for a cluster whose narrowest
        crossing is not a bridge)
    metric : {"euclidean", "cosine"}
    random_state : int or None, seeds the draws (draw r of reference j: ``(seed, j, r)``)
    graph : Graph or None
        The graph whose edges cross the boundaries (default: the union graph of the lists);
        on a curve, the lists' edges along their points' tangents
        (`_stability_curves.CurveTests._tangent_gaps`).
    return_edges : bool
        Also return the crossing edges and bridges ``(u, v, g)`` (`cluster_gaps`).

    Returns
    -------
    gaps : float array like `clusters` (each cluster's g)
    nulls : float array like `clusters`, per cluster the `GAP_EXCEEDANCES`-th widest ratio of
        each reference's draws made in its null dimension (`gap_dimensions`), the wider of
        the two: a cluster passes when its gap is wider
    references : list like `clusters`, the reference that gave each null
    joined : the labels with every cluster that failed joined across its narrowest gap
        (`join_chance_gaps`)
    dims : int array like `clusters`, each cluster's null dimension
    edges : with `return_edges`, the crossings ``(u, v, g)`` the gaps were read from

    ``(None, None, None, labels, None)`` (and None for `edges`) for sparse `X` (no bridge
    search on sparse rows: the clusters are not tested).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import nearest_neighbors
    >>> X = np.r_[np.random.default_rng(0).normal(size=(200, 1)),
    ...           np.random.default_rng(1).normal(size=(200, 1)) + 20]
    >>> idx, dist = nearest_neighbors(X, 10)
    >>> labels = (X[:, 0] > 10).astype(int)
    >>> gaps, nulls, refs, joined, dims = gap_test(X, idx, dist, labels, [0, 1], 1.0,
    ...                                            random_state=0)
    >>> bool((gaps > nulls).all() and (joined == labels).all())  # 20 deviations: not chance
    True
    >>> dims.tolist()
    [1, 1]
    """
    from ..graphs import knn_graph_from_neighbors

    if sp.issparse(X):
        return (None, None, None, labels, None) + ((None,) if return_edges else ())
    n, k = idx.shape
    graph = knn_graph_from_neighbors(idx, dist) if graph is None else graph
    gaps, edges = cluster_gaps(graph, X, dist, labels, clusters, metric, return_edges=True)
    dims = gap_dimensions(graph, dist, labels, clusters, gaps, edges, d_hat)
    draws = {(int(d), ref): [] for d in np.unique(dims) for ref in references}
    for r in range(GAP_DRAWS):
        # a round's samples (each reference, each dimension) are independent: over the
        # threads, each on one thread (letters' 792 samples: 6 s on one core)
        jobs = [(int(d), ref, None if random_state is None else (int(random_state), j, r))
                for j, ref in enumerate(references) for d in np.unique(dims)]
        values = run_parallel([lambda d=d, ref=ref, seed=seed: null_gap_ratio(
            n, d, k, reference=ref, random_state=seed, workers=1) for d, ref, seed in jobs])
        for (d, ref, _), v in zip(jobs, values):
            draws[d, ref].append(v)
        nulls = _null_values(draws, dims, references)
        if np.all(gaps <= nulls[0]):
            break  # every cluster is matched: more draws change nothing
    null, refs = nulls
    out = gaps, null, refs, join_chance_gaps(labels, clusters, gaps, edges, null), dims
    return out + (edges,) if return_edges else out


def _null_values(draws, dims, references):
    """Per cluster (its null dimension in `dims`): the `GAP_EXCEEDANCES`-th widest of each
    reference's draws so far (1.0 while fewer), the widest of these, and its reference."""
    null, refs = [], []
    for d in dims:
        vals = [(sorted(draws[int(d), ref] + [1.0] * GAP_EXCEEDANCES)[-GAP_EXCEEDANCES], ref)
                for ref in references]
        v, ref = max(vals, key=lambda t: t[0])  # the first reference on a tie
        null.append(v)
        refs.append(ref)
    return np.array(null), refs


def gap_dimensions(graph, dist, labels, clusters, gaps, edges, d_hat):
    """The null dimension of each cluster's gap test: round(intrinsic dimension), at least 1,
    of the component on the wider side of the bridge that is the cluster's narrowest crossing
    (its median k-th-neighbour radius is the ratio's unit), else of the data (`d_hat`).

    `gaps` and `edges` ``(u, v, g)`` as `cluster_gaps` returns them.
    """
    comp = graph.component_labels
    dist = np.asarray(dist, dtype=np.float64)
    med = _component_medians(comp, dist[:, -1])
    labels = np.asarray(labels, dtype=np.int64)
    u, v, g = (np.asarray(e) for e in edges)
    sides = []  # per cluster: the wider side's component, or -1 (the data's dimension)
    for e in _narrowest_crossings(labels, clusters, gaps, u, v, g):
        a, b = (comp[u[e]], comp[v[e]]) if e < u.size else (0, 0)
        sides.append(-1 if a == b else int(a if med[a] >= med[b] else b))  # a bridge or not
    dims = {-1: d_hat}
    needed = sorted(set(sides) - {-1})
    if needed:  # the components' rows by one sort: a graph may have thousands of components
        members = _members(comp, int(comp.max()) + 1)
        for side in needed:
            dims[side] = intrinsic_dimension(dist[members(side)])
    out = [int(max(1, round(float(dims[side])))) for side in sides]
    return np.array(out, dtype=np.int64)


def gap_warning(gaps, nulls, references, clusters, c, dims):
    """The warning text for the clusters whose gap is no wider than their null, or None (the
    caller says what it did about them). `nulls`, `references` and `dims` per cluster, as
    `gap_test` returns them."""
    gaps = np.asarray(gaps, dtype=np.float64)
    nulls = np.broadcast_to(np.asarray(nulls, dtype=np.float64), gaps.shape)
    weak = gaps <= nulls
    if not weak.any():
        return None
    names = np.asarray(clusters)[weak]
    shown = ", ".join(str(int(w)) for w in names[:10]) + (", ..." if names.size > 10 else "")
    refs = sorted({r for r, w in zip(np.broadcast_to(np.asarray(references, dtype=object),
                                                     gaps.shape), weak) if w})
    dims = np.broadcast_to(np.asarray(dims), gaps.shape)[weak]
    return (f"weak cluster structure: {names.size} of the {c} clusters ({shown}) are whole "
            f"components of the kNN graph, set apart by gaps no wider than chance: gap ratio "
            f"(bridge length over the median k-th neighbour distance of the components it "
            f"joins) {_span(gaps[weak])}, while the widest gap of {' and '.join(refs)} samples "
            f"of the same size and intrinsic dimension ({_span(dims, '.0f')}) has "
            f"{_span(nulls[weak])}.")


def _span(values, fmt=".2f"):
    """'lo' or 'lo-hi' of `values`, formatted."""
    lo, hi = format(float(np.min(values)), fmt), format(float(np.max(values)), fmt)
    return lo if lo == hi else f"{lo}-{hi}"
