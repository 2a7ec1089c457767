"""The gap test for clusters that are whole components of the kNN graph (`cluster._gap_null`)."""

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist

import graphclust as gc
from graphclust.cluster import StabilityClustering
from graphclust.cluster._gap_null import (GAP_DRAWS, GAP_EXCEEDANCES, bridge_ratios,
                                          cluster_gaps, gap_test, gap_warning, join_chance_gaps,
                                          null_gap_ratio)
from graphclust.graphs import knn_graph_from_neighbors, nearest_neighbors


def _clumps(seed, n_clumps=4, size=15, d=2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(n_clumps, d))
    return np.concatenate([c + rng.normal(size=(size, d)) for c in centres])


def _dense_cluster_gaps(X, k, labels, clusters):
    """Reference: the components' single-linkage tree from all pairwise distances; each
    cluster's smallest ratio over the kNN edges (length over the wider r_k of the ends) and
    the tree's edges (over the wider median r_k of the two components) across its boundary."""
    D = cdist(X, X)
    np.fill_diagonal(D, np.inf)
    order = np.argsort(D, axis=1, kind="stable")[:, :k]
    rk = D[np.arange(len(X))[:, None], order][:, -1]
    A = np.zeros_like(D, dtype=bool)
    A[np.repeat(np.arange(len(X)), k), order.ravel()] = True
    A |= A.T
    _, comp = gc.graphs.knn_graph_from_neighbors(order, D[np.arange(len(X))[:, None], order]) \
        ._compute_components()
    m = comp.max() + 1
    # the shortest pair between each two components, and the tree over components
    best = np.full((m, m), np.inf)
    pair = {}
    for i in range(m):
        for j in range(i + 1, m):
            sub = D[np.ix_(comp == i, comp == j)]
            a, b = np.unravel_index(np.argmin(sub), sub.shape)
            best[i, j] = sub[a, b]
            pair[i, j] = (np.flatnonzero(comp == i)[a], np.flatnonzero(comp == j)[b])
    tree = minimum_spanning_tree(np.where(np.isfinite(best), best, 0)).tocoo()
    bridges = [pair[min(i, j), max(i, j)] for i, j in zip(tree.row, tree.col)]
    med = np.array([np.median(rk[comp == i]) for i in range(m)])
    ratio = {(u, v): D[u, v] / max(med[comp[u]], med[comp[v]]) for u, v in bridges}
    ratio.update({(u, v): D[u, v] / max(rk[u], rk[v]) for u, v in zip(*np.nonzero(np.triu(A)))})
    out = []
    for c in clusters:
        g = [r for (u, v), r in ratio.items() if (labels[u] == c) != (labels[v] == c)]
        out.append(min(g) if g else np.inf)
    return np.array(out)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n_clumps=st.integers(2, 5))
def test_cluster_gaps_match_the_dense_reference(seed, n_clumps):
    X = _clumps(seed, n_clumps)
    idx, dist = nearest_neighbors(X, 5, method="exact")
    graph = knn_graph_from_neighbors(idx, dist)
    labels = graph.component_labels  # every component a cluster
    assume(labels.max() >= 1)
    clusters = np.arange(labels.max() + 1)
    got = cluster_gaps(graph, X, dist, labels, clusters)
    want = _dense_cluster_gaps(X, 5, labels, clusters)
    np.testing.assert_allclose(got, want, rtol=1e-10)


def test_gaps_do_not_change_with_scale_or_row_order():
    X = _clumps(3)
    idx, dist = nearest_neighbors(X, 5, method="exact")
    labels = knn_graph_from_neighbors(idx, dist).component_labels
    base = cluster_gaps(knn_graph_from_neighbors(idx, dist), X, dist, labels, [0, 1, 2])
    for s in (1e-200, 1e-3, 1e150):
        i2, d2 = nearest_neighbors(X * s, 5, method="exact")
        got = cluster_gaps(knn_graph_from_neighbors(i2, d2), X * s, d2, labels, [0, 1, 2])
        np.testing.assert_allclose(got, base, rtol=1e-9)
    p = np.random.default_rng(0).permutation(len(X))
    i3, d3 = nearest_neighbors(X[p], 5, method="exact")
    got = cluster_gaps(knn_graph_from_neighbors(i3, d3), X[p], d3, labels[p], [0, 1, 2])
    np.testing.assert_allclose(got, base, rtol=1e-12)


def test_cosine_ratios_are_those_of_chords():
    X = np.abs(_clumps(5, d=3)) + 0.1
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    ic, dc = nearest_neighbors(X, 5, metric="cosine", method="exact")
    ie, de = nearest_neighbors(U, 5, method="exact")
    gc_ = knn_graph_from_neighbors(ic, dc, provenance={"metric": "cosine"})
    if gc_.n_components == 1:
        pytest.skip("this draw's cosine graph is connected")
    rc = np.sort(bridge_ratios(gc_, X, dc, "cosine")[2])
    re = np.sort(bridge_ratios(knn_graph_from_neighbors(ie, de), U, de)[2])
    np.testing.assert_allclose(rc, re, rtol=1e-6)


def test_null_gap_ratio_is_one_for_a_connected_graph_and_seeded():
    assert null_gap_ratio(2000, 2.0, 10, reference="uniform", random_state=(0, 0, 0)) == 1.0
    vals = [null_gap_ratio(3000, 1.0, 10, reference="Gaussian", random_state=(1, 1, r))
            for r in range(GAP_DRAWS)]
    assert min(vals) == 1.0 and max(vals) > 1.0  # a 1-D sample's 10-NN graph often splits
    from graphclust.cluster import _gap_null

    _gap_null._GAP_CACHE.clear()
    again = [null_gap_ratio(3000, 1.0, 10, reference="Gaussian", random_state=(1, 1, r))
             for r in range(GAP_DRAWS)]
    assert again == vals
    assert null_gap_ratio(11, 1.0, 10) == 1.0  # too few points for a graph of 10 neighbours
    with pytest.raises(ValueError, match="reference must be one of"):
        null_gap_ratio(3000, 1.0, 10, reference="gaussian", random_state=(9, 9, 9))


def test_gap_test_passes_real_gaps_and_stops_once_every_cluster_is_matched(monkeypatch):
    from graphclust.cluster import _gap_null

    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(300, 1)), rng.normal(size=(300, 1)) + 30]
    idx, dist = nearest_neighbors(X, 10)
    labels = (X[:, 0] > 15).astype(int)
    gaps, null, ref, joined, dims = gap_test(X, idx, dist, labels, [0, 1], 1.0, random_state=0)
    assert np.all(gaps > 5 * null) and gap_warning(gaps, null, ref, [0, 1], 2, dims) is None
    assert (joined == labels).all() and dims.tolist() == [1, 1]
    # a cut through the middle of one blob is matched at once: the warning names it
    labels2 = np.where(X[:, 0] > 15, 2, (X[:, 0] > 0).astype(int))
    calls = []
    real = _gap_null.null_gap_ratio
    monkeypatch.setattr(_gap_null, "null_gap_ratio",
                        lambda *a, **kw: calls.append(1) or real(*a, **kw))
    gaps2, null2, _, joined2, _ = gap_test(X, idx, dist, labels2, [0], 1.0, random_state=0)
    assert gaps2[0] <= 1.0 <= null2[0] and len(calls) == 2  # one draw per reference
    # cluster 0 (x <= 0 of the first blob) joins cluster 1 across its cut: two clusters
    assert joined2.max() == 1 and (joined2 == (X[:, 0] > 15)).all()
    text = gap_warning(np.array([0.9, 7.0]), 1.0, "uniform", [0, 2], 3, 1)
    assert "1 of the 3 clusters (0)" in text and "0.90" in text and "1.00" in text
    text = gap_warning(np.array([0.9, 1.5]), [1.0, 2.6], ["uniform", "Gaussian"], [0, 2], 3,
                       [2, 1])
    assert "2 of the 3 clusters (0, 2)" in text and "0.90-1.50" in text
    assert "Gaussian and uniform" in text and "(1-2)" in text and "1.00-2.60" in text


def test_a_cluster_passes_with_fewer_than_the_exceedances_and_fails_with_them(monkeypatch):
    # the rank rule: matched by GAP_EXCEEDANCES - 1 draws of a reference, a gap passes; by
    # GAP_EXCEEDANCES it fails (level 5 / 100), and the drawing stops as soon as it has
    from graphclust.cluster import _gap_null

    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(300, 1)), rng.normal(size=(300, 1)) + 30]
    idx, dist = nearest_neighbors(X, 10)
    labels = (X[:, 0] > 15).astype(int)
    gap = cluster_gaps(knn_graph_from_neighbors(idx, dist), X, dist, labels, [0])[0]
    for wide, passes in ((GAP_EXCEEDANCES - 1, True), (GAP_EXCEEDANCES, False)):
        calls = []

        def fake(n, d, k, *, reference, random_state, workers=None):
            calls.append(random_state)  # (seed, reference, draw): uniform's first `wide` draws
            return gap + 1.0 if reference == "uniform" and random_state[2] < wide else 1.0

        monkeypatch.setattr(_gap_null, "null_gap_ratio", fake)
        gaps, nulls, refs, joined, _ = gap_test(X, idx, dist, labels, [0], 1.0, random_state=0)
        assert (gaps[0] > nulls[0]) == passes and (joined == labels).all() == passes
        assert len(calls) == (2 * GAP_DRAWS if passes else 2 * GAP_EXCEEDANCES)
        assert nulls[0] == (1.0 if passes else gap + 1.0) and refs == ["uniform"]


@pytest.mark.parametrize("reference", ["uniform", "Gaussian"])
def test_a_line_samples_bridges_by_one_sort_match_the_bridge_search(reference):
    # the null's fast path in one dimension (components are intervals) against the general
    # one (the library's graph and its bridge search): the same ratios, to rounding
    from graphclust.cluster._gap_null import _line_bridge_ratios, _sample_lists
    from graphclust.cluster._null_model import null_sample

    split = 0
    for r in range(30):
        X = null_sample(reference, 3000, 1, r)
        n_comp, comp, _, tree_dist = _sample_lists(X, 10)
        idx, dist = nearest_neighbors(X, 10, method="exact")
        graph = knn_graph_from_neighbors(idx, dist)
        assert graph.n_components == n_comp
        np.testing.assert_allclose(tree_dist, dist, rtol=1e-12)  # the same exact lists
        if n_comp > 1:
            split += 1
            np.testing.assert_allclose(np.sort(_line_bridge_ratios(X[:, 0], comp, dist[:, -1])),
                                       np.sort(bridge_ratios(graph, X, dist)[2]), rtol=1e-12)
    assert split >= 3  # a 1-D sample of 3 000 points falls apart in 17-23 % of draws


@given(x=st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=3, max_size=200,
                  unique=True),
       k=st.integers(1, 12))
@settings(max_examples=200, deadline=None)
def test_a_lines_components_by_one_sort_match_the_k_d_tree(x, k):
    # `_line_lists` (one sort) against the exact lists of a k-d tree (`_sample_lists`): the
    # same components and the same k-th neighbour distances, on any points without ties
    from graphclust.cluster._gap_null import _line_lists, _sample_lists

    x = np.asarray(x)
    assume(k + 1 < x.size)
    d = np.abs(x[:, None] - x[None, :])
    d[np.arange(x.size), np.arange(x.size)] = np.inf
    assume(np.unique(d[np.isfinite(d)]).size == np.isfinite(d).sum() // 2)  # no tied distances
    # the tree's squared lengths underflow to 0 below 1e-154 (x = 2e-251 beside 0): the
    # reference's limit, not the sort's
    assume(d[np.isfinite(d)].min() > 1e-150)
    n_comp, comp, rk = _line_lists(x, k)
    n_tree, comp_tree, _, dist = _sample_lists(x[:, None], k)
    assert n_comp == n_tree
    assert gc.metrics.clustering_error(comp, comp_tree) == 0.0
    np.testing.assert_allclose(rk, dist[:, -1], rtol=1e-15)  # |x_a - x_b| against sqrt(d^2)


@pytest.mark.parametrize("d", [2, 3])
def test_a_connected_probe_graph_stands_for_the_knn_graph(d):
    # the 5-NN graph is a subgraph of the 10-NN graph: when it is connected so is the other,
    # and the sample's value is 1 without the longer lists; when it is not, the lists come
    from graphclust.cluster._gap_null import _sample_lists
    from graphclust.cluster._null_model import null_sample

    probes = set()
    for r in range(40):
        X = null_sample("uniform", 300 if d == 2 else 2000, d, r)
        full = _sample_lists(X, 10)
        n_comp, comp, idx, dist = _sample_lists(X, 10, probe=5)
        probes.add(idx is None)
        if idx is None:
            assert n_comp == 1 and full[0] == 1
        else:
            assert n_comp == full[0] and np.array_equal(dist, full[3])
    assert probes == ({True, False} if d == 2 else {True})


@pytest.mark.parametrize("reference", ["uniform", "Gaussian"])
@pytest.mark.parametrize("d", [8, 20, 60])
def test_the_products_probe_lists_are_the_k_d_trees(reference, d):
    # `_product_probe` (squared distances from matrix products, from GAP_PRODUCT_DIMENSION
    # on) against the exact lists of a k-d tree: the same neighbours, each point's own left out
    from scipy.spatial import cKDTree

    from graphclust.cluster._gap_null import GAP_PRODUCT_DIMENSION, _product_probe
    from graphclust.cluster._null_model import null_sample

    assert GAP_PRODUCT_DIMENSION <= d
    for r in range(3):
        X = null_sample(reference, 700, d, r)
        lists = _product_probe(X, 5, 10, block=64)  # several blocks, the last a part one
        exact = cKDTree(X).query(X, 6)[1][:, 1:]
        assert lists is not None
        assert np.array_equal(np.sort(lists, axis=1), np.sort(exact, axis=1))


def test_the_products_probe_gives_way_where_rounding_could_decide():
    # twelve copies of a point: its ten nearest are all at distance 0, no margin between the
    # probe's farthest and the tenth, so the lists are not vouched for (None) and the k-d
    # tree decides; the sample's value is what the k-d tree alone gives
    from graphclust.cluster import _gap_null
    from graphclust.cluster._null_model import null_sample

    X = null_sample("uniform", 300, 12, 0)
    X[:12] = X[0]
    assert _gap_null._product_probe(X, 5, 10) is None
    assert _gap_null._sample_lists(X, 10, probe=5)[0] == _gap_null._sample_lists(X, 10)[0]


def test_null_values_do_not_depend_on_how_the_probe_is_found(monkeypatch):
    # the products' probe only shortcuts a connected graph: every draw's value in 8-40
    # dimensions is the k-d tree's (the draws of a 3 000-point fit in 37 dimensions)
    from graphclust.cluster import _gap_null

    def values():
        _gap_null._GAP_CACHE.clear()
        return [_gap_null.null_gap_ratio(600, d, 10, reference=ref, random_state=(5, j, r))
                for d in (8.0, 15.0, 40.0) for j, ref in enumerate(("uniform", "Gaussian"))
                for r in range(4)]

    # and a sample whose graph falls apart (two blobs 50 deviations apart in 12 dimensions):
    # the probe's lists are not connected, and the k-d tree's lists decide
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(size=(200, 12)), rng.normal(size=(150, 12)) + 50]
    fast, lists = values(), _gap_null._sample_lists(X, 10, probe=5)
    monkeypatch.setattr(_gap_null, "GAP_PRODUCT_DIMENSION", 10 ** 6)
    assert values() == fast
    tree = _gap_null._sample_lists(X, 10, probe=5)
    assert lists[0] == tree[0] == 2 and np.array_equal(lists[3], tree[3])
    _gap_null._GAP_CACHE.clear()


def test_three_moons_of_300_points_keep_their_gaps_under_every_seed_tried():
    # 1.95 neighbourhoods: a p-value of about 0.0055 against 1-D uniform samples, so one of 19
    # draws matched it in about one fit of ten (random_state 4 and 21 below gave 2 clusters);
    # five of 99 must now (docs/model_selection.md, *The gap test's power*)
    X, y = gc.datasets.three_moons(300, random_state=0)
    for seed in (4, 21):
        m = StabilityClustering(random_state=seed).fit(X)
        assert m.n_clusters_ == 3 and gc.metrics.clustering_error(y, m.labels_) == 0.0
        assert m.gap_ratio_ > m.null_gap_ratio_


def test_a_gap_is_judged_in_the_dimension_of_the_points_it_is_measured_in():
    # a thin circle (1-D) inside an annulus (2-D), 1 500 points each: the data's dimension is
    # 1.3, and a 1-D null has chance gaps as wide as the 1.8 annulus radii between them; the
    # gap is measured in the annulus's radius, and a 2-D sample does not fall apart
    from graphclust.cluster._null_model import intrinsic_dimension

    rng = np.random.default_rng(0)
    t1, t2 = rng.uniform(0, 2 * np.pi, (2, 1500))
    r2 = np.sqrt(rng.uniform(0.6 ** 2, 0.9 ** 2, 1500))
    X = np.r_[np.c_[0.5 * np.cos(t1), 0.5 * np.sin(t1)], np.c_[r2 * np.cos(t2), r2 * np.sin(t2)]]
    labels = np.repeat([0, 1], 1500)
    idx, dist = nearest_neighbors(X, 10)
    d_hat = intrinsic_dimension(dist)
    assert round(d_hat) == 1
    gaps, nulls, _, joined, dims = gap_test(X, idx, dist, labels, [0, 1], d_hat, random_state=0)
    assert dims.tolist() == [2, 2] and (joined == labels).all()
    assert np.all(gaps > nulls) and np.all(nulls == 1.0)
    # judged in the data's dimension (the rule before), the same gaps match a 1-D null
    one_d = max(null_gap_ratio(3000, 1.0, 10, reference=r, random_state=(0, j, i))
                for i in range(GAP_DRAWS) for j, r in enumerate(("uniform", "Gaussian")))
    assert gaps.max() <= one_d


def test_a_chance_split_of_a_one_dimensional_gaussian_is_warned():
    # its 10-NN graph falls into two components (701 / 2 299 points): the escape-time test
    # cannot see them, and the fit returned two confident clusters before the gap test
    X = np.random.default_rng(1003).normal(size=(3000, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = StabilityClustering(random_state=0).fit(X)
    msgs = [str(w.message) for w in caught if issubclass(w.category, gc.StabilityWarning)]
    # the two components are joined across their chance gap: one cluster
    assert m.n_clusters_ == 1 and m.escape_time_ is None and m.selection_rule_ == "none"
    assert any("whole components of the kNN graph" in t and "1 cluster." in t for t in msgs)
    assert 1.0 < m.gap_ratio_ <= m.null_gap_ratio_
    # a given c is kept: the warning only (the dip test's: the sample is unimodal)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m2 = StabilityClustering(n_clusters=2, random_state=0).fit(X)
    msgs = [str(w.message) for w in caught if issubclass(w.category, gc.StabilityWarning)]
    assert m2.n_clusters_ == 2 and any("dip test finds unimodal" in t for t in msgs)


def test_separated_moons_pass_the_gap_test_and_save_it(tmp_path):
    X, _ = gc.datasets.two_moons(400, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gc.StabilityWarning)
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 2 and m.gap_ratio_ > m.null_gap_ratio_ >= 1.0
    m2 = StabilityClustering.load(m.save(tmp_path / "m.npz"))
    assert (m2.gap_ratio_, m2.null_gap_ratio_) == (m.gap_ratio_, m.null_gap_ratio_)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0, 10)), min_size=1, max_size=40))
def test_component_medians_match_numpy(pairs):
    from graphclust.cluster._gap_null import _component_medians

    comp = np.array([p[0] for p in pairs])
    _, comp = np.unique(comp, return_inverse=True)
    vals = np.array([p[1] for p in pairs])
    want = [np.median(vals[comp == c]) for c in range(comp.max() + 1)]
    np.testing.assert_allclose(_component_medians(comp, vals), want, rtol=1e-12)


def test_blobs_ten_deviations_apart_in_one_dimension_pass():
    # the gap's ends lie in the blobs' sparse tails: measured against the ends' own k-NN radii
    # this gap (1.39) looked like chance (the null's 1.5); against the components' medians, 56
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 333)
    X = (rng.normal(size=999) + 10 * y)[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", gc.StabilityWarning)
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 3 and gc.metrics.clustering_error(y, m.labels_) == 0.0
    assert m.gap_ratio_ > 10 * m.null_gap_ratio_


def test_join_chance_gaps_joins_only_failing_clusters_transitively():
    labels = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    # crossings 0-1 (g 1.1), 1-2 (g 0.9), 2-3 (g 4.0); clusters 1 and 2 are tested
    edges = (np.array([1, 3, 5]), np.array([2, 4, 6]), np.array([1.1, 0.9, 4.0]))
    got = join_chance_gaps(labels, [1, 2], [0.9, 0.9], edges, 1.5)
    np.testing.assert_array_equal(got, [0, 0, 1, 1, 1, 1, 2, 2])  # 1 and 2 joined; 3 apart
    assert (join_chance_gaps(labels, [3], [4.0], edges, 1.5) == labels).all()
    # renumbered: the same groups, ranked by their smallest cluster number
    perm = np.array([2, 0, 3, 1])
    got2 = join_chance_gaps(perm[labels], [0, 3], [0.9, 0.9], edges, 1.5)
    np.testing.assert_array_equal(got2, [2, 2, 0, 0, 0, 0, 1, 1])
