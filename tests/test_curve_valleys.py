"""Cuts of a curve: pairs of adjacent clusters along a curve are kept apart only by a density
valley or by a spacing wider than a uniform line's widest (`CurveTests._curve_valleys`,
`cluster._gap_null.pair_crossings`, `line_spacing_null`), in data that are a curve and, pair by
pair, between clusters that are curves on their own (`CurveTests._curve_clusters`)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from graphclust import StabilityClustering, StabilityWarning
from graphclust.cluster._curve_tangents import spread_null, spread_ratios
from graphclust.cluster._gap_null import (GAP_DRAWS, GAP_EXCEEDANCES, _line_lists,
                                          line_spacing_null, pair_crossings)
from graphclust.cluster._null_model import intrinsic_dimension
from graphclust.datasets import two_spirals
from graphclust.graphs import knn_graph_from_neighbors, nearest_neighbors


def _zigzag_and_blobs(seed, modes=False):
    """240 points along a zigzag of three unit segments (uniform in arc length, or with
    `modes` two Gaussian modes 5.6 deviations apart), scatter 0.01, beside two Gaussian blobs
    of 150; labels: the zigzag cut at its middle, then the blobs; and the truth (one zigzag)."""
    rng = np.random.default_rng(seed)
    corners = np.array([[0, 0], [1, 1], [2, 0], [3, 1.0]])
    s = np.sort(np.r_[rng.normal(0.8, 0.25, 120), rng.normal(2.2, 0.25, 120)].clip(0, 3)
                if modes else rng.uniform(0, 3, 240))
    i = np.minimum(s.astype(int), 2)
    Z = corners[i] + (s - i)[:, None] * (corners[i + 1] - corners[i])
    X = np.r_[Z + rng.normal(0, 0.01, Z.shape), rng.normal([0.5, 2.4], 0.2, (150, 2)),
              rng.normal([2.5, 2.4], 0.2, (150, 2))]
    labels = np.r_[(s > 1.5).astype(int), np.full(150, 2), np.full(150, 3)]
    return X, labels, np.r_[np.zeros(240, int), labels[240:] - 1]


def _read_pairwise(X, labels):
    """`_curve_clusters` and `_curve_valleys` of a model fitted to nothing but the 10-NN lists'
    intrinsic dimension, on the 10-NN graph's distances as W."""
    idx, dist = nearest_neighbors(X, 10, method="exact")
    model = StabilityClustering()
    model.intrinsic_dimension_, model.selection_rule_ = intrinsic_dimension(dist), "metastable"
    W = knn_graph_from_neighbors(idx, dist).distances.tocsr()
    return (model, model._curve_clusters(X, labels),
            model._curve_valleys(X, dist, W, labels, pairs=True))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_curve_cut_beside_blobs_is_joined_pair_by_pair(seed):
    # the data are no curve (intrinsic dimension 1.56-1.59), the zigzag's pieces are
    X, labels, truth = _zigzag_and_blobs(seed)
    model, curves, joined = _read_pairwise(X, labels)
    assert round(model.intrinsic_dimension_) == 2
    assert curves.tolist() == [True, True, False, False]
    assert adjusted_rand_score(truth, joined) == 1.0


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_curves_density_valley_beside_blobs_stays(seed):
    X, labels, _ = _zigzag_and_blobs(seed, modes=True)
    model, curves, joined = _read_pairwise(X, labels)
    assert curves.tolist() == [True, True, False, False]
    assert (joined == labels).all()


def test_blobs_cut_in_two_are_no_curves_to_join():
    # a blob cut through its middle has no valley either, but it is no curve: the support
    # test and the null model judge it, not this one
    X, labels, _ = _zigzag_and_blobs(0)
    labels = labels.copy()
    labels[240:390][X[240:390, 0] > 0.5] = 4
    model, curves, joined = _read_pairwise(X, labels)
    assert curves.tolist() == [True, True, False, False, False]
    assert joined.max() == 3 and (joined[:240] == 0).all()  # the zigzag joined, no blob


@settings(max_examples=30, deadline=None)
@given(st.integers(15, 120), st.integers(1, 4), st.integers(0, 10**6))
def test_curve_clusters_match_a_dense_reference(n, c, seed):
    # each cluster's median over points of the second over the first principal variance of
    # the point and its nearest 20 within the cluster (at most half the others; none read
    # below 10), against the lowest of 19 uniform squares' medians: curves where it is lower
    rng = np.random.default_rng(seed)
    t = rng.random(n)
    X = np.c_[t, np.sin(3 * t)] + rng.normal(0, rng.choice([1e-3, 0.3]), (n, 2))
    labels = np.unique(rng.integers(0, c, n), return_inverse=True)[1]
    model = StabilityClustering()
    model.intrinsic_dimension_ = 1.7
    want = []
    for j in range(labels.max() + 1):
        P = X[labels == j]
        k = min(20, (len(P) - 1) // 2)
        if k < 10:
            want.append(False)
            continue
        near = np.argsort(np.linalg.norm(P[:, None] - P[None], axis=2), axis=1)[:, :k + 1]
        sv = np.array([np.linalg.svd(P[r] - P[r].mean(axis=0))[1] for r in near])
        want.append(bool(np.median((sv[:, 1] / sv[:, 0]) ** 2) < spread_null(len(P), 2, k)))
    assert model._curve_clusters(X, labels).tolist() == want
    model.intrinsic_dimension_ = 2.6  # past the support test's reach: none read
    assert not model._curve_clusters(X, labels).any()


@pytest.mark.parametrize("seed", [3, 5])
def test_a_fit_joins_a_zigzag_its_walk_cut_beside_blobs(seed):
    # seeds 3 and 5: the fit cut the zigzag in two, 4 clusters with no warning (ARI 0.77,
    # 0.78) before the curve tests read pairs of clusters that are curves on their own
    X, _, truth = _zigzag_and_blobs(seed)
    m = StabilityClustering(random_state=seed).fit(X)
    assert m.n_clusters_ == 3 and adjusted_rand_score(truth, m.labels_) == 1.0


def test_an_arm_cut_at_a_chance_sparse_spot_is_joined(capsys):
    # two spirals of 1 000 points (seed 3): the walk cut one arm 402 : 98 at its widest
    # spacing (4.2 spacings, where a uniform sample of 500 has about 6.8), escaped far more
    # slowly than the null's tiles (13.1 against 8.4); no density valley lies along the arm
    X, y = two_spirals(1000, random_state=3)
    m = StabilityClustering(random_state=3, verbose=True).fit(X)
    assert m.n_clusters_ == 2 and adjusted_rand_score(y, m.labels_) == 1.0
    assert "the data are a curve" in capsys.readouterr().err


def test_arms_linked_by_one_long_edge_stay_apart():
    # two spirals of 600 points (seed 0): five kNN edges link the arms, the shortest 2.7
    # times the arms' median 10th-neighbour distance, beyond a uniform line's widest spacing
    # (about 1.8): a gap, not a chance sparse spot, though the dip test of the arms' union
    # along the graph sees no valley (one gap in a long uniform curve moves its CDF little)
    X, y = two_spirals(600, random_state=0)
    m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 2 and adjusted_rand_score(y, m.labels_) == 1.0


def test_the_walks_cuts_of_a_curve_keep_its_density_valley():
    # a thin spiral whose points have two Gaussian modes in arc length, 300 each, 6.7
    # deviations apart (seed 2): the walk cut it into 4 (ARI 0.69, silent before); the two
    # cuts at chance sparse spots within a mode are joined, the valley between modes stays
    rng = np.random.default_rng(2)
    s = np.r_[rng.normal(3, 0.6, 300), rng.normal(7, 0.6, 300)]
    t = np.sqrt(2 * s + 4)  # the arc length of r = t grows like t^2 / 2
    X = np.c_[t * np.cos(t), t * np.sin(t)] / 5 + rng.normal(0, 0.0005, (600, 2))
    m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 2 and m.intrinsic_dimension_ < 1.5
    assert adjusted_rand_score(np.repeat([0, 1], 300), m.labels_) == 1.0


def test_arms_cut_in_two_each_are_joined_arm_by_arm():
    # two spirals of 600 points (seed 5): each arm, a component of its own, cut in two at
    # chance spots (4 clusters, silent before)
    X, y = two_spirals(600, random_state=5)
    m = StabilityClustering(random_state=5).fit(X)
    assert m.n_clusters_ == 2 and adjusted_rand_score(y, m.labels_) == 1.0


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 40), st.integers(1, 5), st.integers(0, 10**6))
def test_pair_crossings_match_a_dense_reference(n, c, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    A = np.triu(rng.random((n, n)) < 0.3, 1)
    W = sp.csr_matrix((A | A.T).astype(float))
    labels = rng.integers(0, c, n)
    labels = np.unique(labels, return_inverse=True)[1]
    dist = np.sort(rng.random((n, 3)), axis=1)
    pairs, ratios = pair_crossings(X, W, labels, dist)
    med = [np.median(dist[labels == a, -1]) for a in range(labels.max() + 1)]
    want = {}
    for u, v in zip(*np.nonzero(A | A.T)):
        a, b = sorted((labels[u], labels[v]))
        if a != b:
            g = np.linalg.norm(X[u] - X[v]) / max(med[a], med[b])
            want[a, b] = min(want.get((a, b), np.inf), g)
    assert sorted(want) == [tuple(p) for p in pairs.tolist()]
    np.testing.assert_allclose(ratios, [want[tuple(p)] for p in pairs.tolist()], rtol=1e-12)


def test_line_spacing_null_is_the_monte_carlo_quantile_of_the_widest_spacing():
    # the same statistic computed by brute force: a point's k-th neighbour on the line from
    # every distance, the widest spacing over the median of those radii
    n, k = 300, 10
    values = []
    for r in range(GAP_DRAWS):
        x = np.sort(np.random.default_rng((7, r)).random(n))
        rk = np.sort(np.abs(x[:, None] - x[None, :]), axis=1)[:, k]
        values.append(np.diff(x).max() / np.median(rk))
    want = np.sort(values)[-GAP_EXCEEDANCES]
    assert line_spacing_null(n, k, 7) == pytest.approx(want, rel=1e-12)
    x = np.sort(np.random.default_rng(0).random(50))
    exact = np.sort(np.abs(x[:, None] - x[None, :]), axis=1)[:, k]
    np.testing.assert_allclose(_line_lists(x, k)[2], exact, rtol=1e-12)
    assert line_spacing_null(k + 1, k) == np.inf  # too few points for a k-th neighbour


def test_pair_crossings_of_a_line_are_its_spacings():
    x = np.array([0.0, 1.0, 2.0, 6.0, 7.0, 8.0])[:, None]
    idx, dist = nearest_neighbors(x, 3, method="exact")  # 2 -> 6 and 6 -> 2 cross the gap
    W = sp.csr_matrix((np.ones(idx.size), (np.repeat(np.arange(6), 3), idx.ravel())),
                      shape=(6, 6))
    W = W + W.T
    labels = np.array([0, 0, 0, 1, 1, 1])
    pairs, ratios = pair_crossings(x, W, labels, dist)
    assert pairs.tolist() == [[0, 1]]
    assert ratios[0] == pytest.approx(4.0 / 5.0)  # both sides' median 3rd-neighbour span: 5


def test_small_blobs_and_tight_groups_are_no_curves():
    # a small blob reads as scatter from its nearest half; so do two tight groups of 15 points
    # 15 deviations apart (each point's 14 nearest are its own group, where a ball of all the
    # others spans both and reads as a line); two groups of 10 outliers in one cluster beside
    # a ring (graves' ring_outliers) are too few to be read
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 500)
    ring = np.c_[np.cos(t), np.sin(t)] + rng.normal(0, 0.01, (500, 2))
    blob = rng.normal([1.3, 0.0], 0.01, (30, 2))
    groups = np.r_[rng.normal([1.3, 0.0], 0.01, (10, 2)), rng.normal([1.3, 0.15], 0.01, (10, 2))]
    pair = np.r_[rng.normal([1.3, 0.0], 0.01, (15, 2)), rng.normal([1.3, 0.15], 0.01, (15, 2))]
    far = np.argsort(np.linalg.norm(pair[:, None] - pair[None], axis=2), axis=1)
    assert np.median(spread_ratios(pair, far[:, 1:])) < 0.05  # all the others: a line
    model = StabilityClustering()
    model.intrinsic_dimension_ = 1.7
    for small in (blob, groups, pair):
        X, labels = np.r_[ring, small], np.repeat([0, 1], [500, len(small)])
        assert model._curve_clusters(X, labels).tolist() == [True, False]


def test_a_band_cut_by_chance_is_warned_not_half_joined():
    # a noisy spiral arm of 500 points (the structureless checks' "spiral arm", seed 2): the
    # walk that sees density cuts it into 7 arcs, which the support test calls chance cuts;
    # 4 of the arcs read as curves on their own, and joining them first let the 3 clusters
    # left outlast the support's partitions, silently. Pairs of curves are read only in a
    # partition the support test passed
    rng = np.random.default_rng(2)
    t = np.sqrt(rng.uniform(1, 16, 500)) * np.pi
    X = np.c_[t * np.cos(t), t * np.sin(t)] / 4 + rng.normal(0, 0.1, (500, 2))
    with pytest.warns(StabilityWarning, match="weak cluster structure"):
        StabilityClustering(random_state=0).fit(X)


def test_two_noisy_rings_flatter_than_scatter_stay_apart():
    # make_circles' rings at noise 0.08 read as curves by their local PCA (medians 0.46 and
    # 0.53 against 0.53) and touch; whole rings have no ends, so they are no pair to join
    from sklearn.datasets import make_circles

    X, y = make_circles(1000, noise=0.08, factor=0.5, random_state=0)
    model = StabilityClustering(random_state=0).fit(X)
    assert adjusted_rand_score(y, model.labels_) > 0.95
