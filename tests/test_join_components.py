"""join_components: the neighbour-index join against the exact Boruvka scan (its oracle).

The exact property both searches must meet: the added edges bridge the components with the
total length of a minimum spanning forest of the complete graph whose nodes are the components
and whose weights are the shortest distances between them (Boruvka + the cut property). The
dense oracle here computes that forest directly from all pairwise distances.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist

import graphclust as gc
import graphclust.graphs._join as join_module

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def bridging_length(X, labels, metric="euclidean"):
    """Dense oracle: MST weight of the component graph with shortest inter-component distances."""
    D = cdist(X, X, metric=metric)
    _, lab = np.unique(labels, return_inverse=True)
    m = lab.max() + 1
    W = np.full((m, m), np.inf)
    for a in range(m):
        for b in range(a + 1, m):
            W[a, b] = W[b, a] = D[np.ix_(lab == a, lab == b)].min()
    # scipy drops zero weights: shift by 1 (every spanning tree has m - 1 edges)
    T = minimum_spanning_tree(np.where(np.isfinite(W), W + 1.0, 0.0))
    return T.sum() - (m - 1)


def added(joined, graph):
    """The added edges (u, v, length) of a joined graph."""
    old = set(zip(*graph.edges()[:2]))
    u, v, d, _ = joined.edges()
    keep = np.array([(a, b) not in old for a, b in zip(u, v)], dtype=bool)
    return u[keep], v[keep], d[keep]


def assert_real_edges(X, u, v, d, metric="euclidean"):
    """Every added edge is a pair of distinct points carrying its true length."""
    assert np.all(u != v)
    true = np.array([cdist(X[[a]], X[[b]], metric=metric)[0, 0] for a, b in zip(u, v)])
    np.testing.assert_allclose(d, true, rtol=1e-9, atol=1e-12)


def blobs(seed, n_blobs=12, spread=6.0, dim=3):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=n_blobs)
    return np.concatenate([rng.normal(size=(s, dim)) + spread * rng.normal(size=dim) for s in sizes])


@pytest.mark.parametrize("seed", range(6))
def test_index_join_adds_the_exact_bridging_length(seed):
    X = blobs(seed)
    g = gc.knn_graph(X, 4)
    assert g.n_components > 1
    exact = gc.join_components(g, X, method="exact")
    index = gc.join_components(g, X, method="index")
    assert exact.n_components == index.n_components == 1
    assert index.provenance["join_search"] == "exact"
    assert index.provenance["joined_edges"] == g.n_components - 1
    ref = bridging_length(X, g.component_labels)
    assert added(exact, g)[2].sum() == pytest.approx(ref, rel=1e-12)
    assert added(index, g)[2].sum() == pytest.approx(ref, rel=1e-12)
    assert_real_edges(X, *added(index, g))


def test_auto_keeps_the_exact_scan_on_small_inputs():
    X = blobs(1)
    g = gc.knn_graph(X, 4)
    a, e = gc.join_components(g, X), gc.join_components(g, X, method="exact")
    assert (a.distances != e.distances).nnz == 0
    assert a.provenance["join_search"] == "exact"


def test_edgeless_graph_joins_into_the_minimum_spanning_tree():
    # every point its own component: the bridges are a minimum spanning tree of all points
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    g = gc.Graph(sp.csr_matrix((60, 60)))
    j = gc.join_components(g, X, method="index")
    assert j.n_components == 1 and j.n_edges == 59
    assert j.edges()[2].sum() == pytest.approx(minimum_spanning_tree(cdist(X, X)).sum(), rel=1e-12)


def test_cosine_metric():
    rng = np.random.default_rng(2)
    dirs = rng.normal(size=(8, 5))
    X = np.concatenate([d + 0.05 * rng.normal(size=(rng.integers(3, 25), 5)) for d in dirs])
    X *= rng.uniform(0.5, 20, size=(len(X), 1))  # cosine ignores row lengths
    g = gc.knn_graph(X, 3, metric="cosine")
    assert g.n_components > 1
    exact = gc.join_components(g, X, method="exact")
    index = gc.join_components(g, X, method="index")
    assert index.n_components == 1
    ref = bridging_length(X, g.component_labels, metric="cosine")
    assert added(exact, g)[2].sum() == pytest.approx(ref, rel=1e-9)
    assert added(index, g)[2].sum() == pytest.approx(ref, rel=1e-9)
    assert_real_edges(X, *added(index, g), metric="cosine")


def test_duplicates_inside_and_across_components():
    rng = np.random.default_rng(3)
    base = rng.normal(size=(10, 3)) * 8
    # cliques of exact duplicates (each its own component under a 3-NN graph), and a copy of a
    # point of one clique given to another component: a zero-length bridge must be found
    X = np.concatenate([np.repeat(base, 6, axis=0), base[:1] + rng.normal(size=(5, 3)) * 0.01])
    g = gc.knn_graph(X, 3)
    assert g.n_components > 1
    exact = gc.join_components(g, X, method="exact")
    index = gc.join_components(g, X, method="index")
    assert index.n_components == 1
    ref = bridging_length(X, g.component_labels)
    assert added(index, g)[2].sum() == pytest.approx(added(exact, g)[2].sum(), rel=1e-12, abs=1e-12)
    assert added(index, g)[2].sum() == pytest.approx(ref, rel=1e-12, abs=1e-12)


def test_large_duplicate_clique_needs_long_lists():
    # a component of 200 identical points: its lists stay inside it (the exact scan settles it)
    rng = np.random.default_rng(4)
    X = np.concatenate([np.zeros((200, 3)), rng.normal(size=(50, 3)) + 10])
    g = gc.Graph(sp.csr_matrix((250, 250)))
    g = gc.join_components(gc.knn_graph(X[200:], 3), X[200:])  # a connected far part
    n_far = 50
    # one graph: the 200 duplicates joined among themselves by a path, the far part as built
    u, v, d, m = g.edges()
    path = np.arange(199)
    G = gc.Graph._from_edges(
        250, np.r_[path, u + 200], np.r_[path + 1, v + 200], np.r_[np.zeros(199), d], np.r_[np.ones(199), m]
    )
    assert G.n_components == 2 and n_far == 50
    j = gc.join_components(G, X, method="index")
    assert j.n_components == 1
    ref = bridging_length(X, G.component_labels)
    assert added(j, G)[2].sum() == pytest.approx(ref, rel=1e-12)


@pytest.mark.slow
def test_approximate_index_still_connects_with_true_lengths(monkeypatch):
    # force the approximate search (the graph searched from pivots of other components): the
    # bridges may be longer than the exact ones, never shorter, and the result is connected
    # with real edges of true length
    monkeypatch.setattr(join_module, "BRUTE_QUERY_MAX_WORK", -1)
    X = blobs(5, n_blobs=20)
    g = gc.knn_graph(X, 4)
    j = gc.join_components(g, X, method="index")
    assert j.provenance["join_search"] == "approximate"
    assert j.n_components == 1 and j.provenance["joined_edges"] == g.n_components - 1
    u, v, d = added(j, g)
    assert_real_edges(X, u, v, d)
    assert d.sum() >= bridging_length(X, g.component_labels) * (1 - 1e-12)


class SelfishIndex:
    """An approximate index at its worst: it answers only with points of the query's own
    initial component (the point itself when that runs out), so no list ever leaves it."""

    exact = False

    def __init__(self, labels):
        self.labels = labels

    def query(self, points, k, labels):
        out = np.empty((points.size, k), np.int64)
        for i, p in enumerate(points):
            same = np.flatnonzero(self.labels == self.labels[p])[:k]
            out[i] = np.r_[same, np.full(k - same.size, p)]
        return out


def test_connectivity_never_depends_on_the_index(monkeypatch):
    # the exact scan settles every component the index cannot lead out of
    X = blobs(6, n_blobs=15)
    g = gc.knn_graph(X, 4)
    selfish = SelfishIndex(g.component_labels)
    monkeypatch.setattr(join_module, "_make_index", lambda Y, n_queries, search, graph: selfish)
    j = gc.join_components(g, X, method="index")
    assert j.provenance["join_search"] == "approximate"
    assert j.n_components == 1 and j.provenance["joined_edges"] == g.n_components - 1
    u, v, d = added(j, g)
    assert_real_edges(X, u, v, d)
    assert d.sum() == pytest.approx(bridging_length(X, g.component_labels), rel=1e-12)


def test_method_is_validated():
    X = blobs(0)
    with pytest.raises(ValueError, match="method must be one of 'auto', 'exact', 'index'"):
        gc.join_components(gc.knn_graph(X, 4), X, method="fast")


@st.composite
def clustered_points(draw):
    seed = draw(st.integers(0, 2**16))
    n_blobs = draw(st.integers(1, 8))
    dim = draw(st.integers(1, 4))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=n_blobs)
    X = np.concatenate([rng.normal(size=(s, dim)) + 8 * rng.normal(size=dim) for s in sizes])
    return X * scale


@SETTINGS
@given(X=clustered_points(), k=st.integers(1, 3))
def test_property_index_matches_exact(X, k):
    if len(X) < 2:
        return
    g = gc.knn_graph(X, min(k, len(X) - 1))
    exact = gc.join_components(g, X, method="exact")
    index = gc.join_components(g, X, method="index")
    assert exact.n_components == index.n_components == 1
    ea, ia = added(exact, g)[2].sum(), added(index, g)[2].sum()
    assert ia == pytest.approx(ea, rel=1e-9, abs=1e-300)
    assert_real_edges(X, *added(index, g))


@pytest.mark.parametrize("seed", range(4))
def test_graph_search_finds_only_other_components_and_near_exact_bridges(seed, monkeypatch):
    """The approximate search (the kNN graph entered at pivots of other components) answers
    each query with points outside the query's current component, and its bridges add at most
    a few per cent to the exact bridging length on well-separated blobs."""
    monkeypatch.setattr(join_module, "BRUTE_QUERY_MAX_WORK", -1)
    X = blobs(seed, n_blobs=30, dim=5)
    g = gc.knn_graph(X, 4)
    labels = g.component_labels
    index = join_module._GraphIndex(X, g.distances)
    points = np.arange(g.n_nodes)
    found = index.query(points, 3, labels)
    own = labels[found] == labels[points][:, None]
    # a query may get itself back only when the entries' components hold fewer than k points
    assert np.all(~own | (found == points[:, None]))
    j = gc.join_components(g, X, method="index")
    assert j.provenance["join_search"] == "approximate" and j.n_components == 1
    ref = bridging_length(X, labels)
    total = added(j, g)[2].sum()
    assert ref * (1 - 1e-12) <= total <= 1.05 * ref


@settings(max_examples=60, deadline=None)
@given(widths=st.lists(st.sampled_from([1, 2, 5, 16]), min_size=1, max_size=30),
       seed=st.integers(0, 10_000), nan=st.booleans())
def test_rows_sorted_as_one_lexsort(widths, seed, nan):
    """The ragged lists sorted row by row equal one lexsort by (row, length), ties and NaN
    lengths included."""
    rng = np.random.default_rng(seed)
    row_of = np.repeat(np.arange(len(widths)), widths)
    dist = rng.integers(0, 4, size=row_of.size).astype(float)  # many ties
    if nan:
        dist[rng.random(row_of.size) < 0.2] = np.nan
    flat = rng.integers(0, 100, size=row_of.size)
    order = np.lexsort((dist, row_of))
    width = np.asarray(widths)
    ptr = np.concatenate([[0], np.cumsum(width)])
    got_flat, got_dist = join_module._sort_rows(width, ptr, flat, dist)
    np.testing.assert_array_equal(got_flat, flat[order])
    np.testing.assert_array_equal(got_dist, dist[order])


def test_far_components_are_settled_by_the_scan_not_by_longer_lists(monkeypatch):
    # blobs far apart: every point's first list lies in its own blob. The brute-force search
    # is not asked for longer lists (they would grow to the blob: 16 GB for 8 blobs of 2 500
    # points in 10 dimensions), and the bridges are still the exact ones
    from graphclust.graphs import _join

    asked = []
    query = _join._BruteIndex.query
    monkeypatch.setattr(_join._BruteIndex, "query",
                        lambda self, pts, k, labels: asked.append(k) or query(self, pts, k, labels))
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(300, 5)) + 40.0 * i for i in range(4)])
    g = gc.knn_graph(X, 10)
    assert g.n_components == 4
    j = gc.join_components(g, X, method="index")
    assert j.n_components == 1 and max(asked) == _join._FIRST_K
    ref = bridging_length(X, g.component_labels)
    assert added(j, g)[2].sum() == pytest.approx(ref, rel=1e-12)


def test_nearest_outside_matches_the_masked_argmin():
    from graphclust.graphs._numba import nearest_outside

    rng = np.random.default_rng(1)
    Y = rng.normal(size=(120, 3))
    labels = rng.integers(0, 4, 120)
    rows = np.arange(0, 120, 7)
    sq = (Y**2).sum(axis=1)
    got = nearest_outside(Y[rows] @ Y.T, Y, rows, sq, labels)
    D = cdist(Y[rows], Y)
    D[labels[None, :] == labels[rows][:, None]] = np.inf
    np.testing.assert_array_equal(got, D.argmin(axis=1))
    # far from the origin, two candidates 1e-7 apart in distance: the expansion's rounding
    # (about 1e-16 of |a|^2 = 1e16) cannot tell them apart; the direct sums can
    Z = np.array([[1e8, 0.0], [1e8 - 1.0 - 1e-7, 0.0], [1e8 + 1.0, 0.0]])
    sz = (Z**2).sum(axis=1)
    assert nearest_outside(Z[:1] @ Z.T, Z, np.array([0]), sz, np.array([0, 1, 2]))[0] == 2
    one = np.zeros(120, dtype=np.int64)  # no point outside the row's own label
    assert nearest_outside(Y[:1] @ Y.T, Y, np.array([0]), sq, one)[0] == -1


@SETTINGS
@given(seed=st.integers(0, 2**16), m=st.integers(2, 6), dim=st.integers(1, 4))
def test_ball_gaps_never_exceed_a_distance_to_the_component(seed, m, dim):
    # the balls' bound prunes the exact scan: it must be a lower bound of every distance
    from graphclust.graphs._join import _ball_gaps

    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(60, dim)) * rng.uniform(0.1, 10) + rng.normal(size=dim) * 1e3
    labels = np.r_[np.arange(m), rng.integers(0, m, 60 - m)]
    points = np.arange(0, 60, 3)
    gaps = _ball_gaps(Y, labels, points)
    D = cdist(Y[points], Y)
    for c in range(m):
        assert np.all(gaps[:, c] <= D[:, labels == c].min(axis=1))
