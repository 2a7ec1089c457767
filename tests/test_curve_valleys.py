"""Cuts of a curve: pairs of adjacent clusters along a curve are kept apart only by a density
valley or by a spacing wider than a uniform line's widest (`CurveTests._curve_valleys`,
`cluster._gap_null.pair_crossings`, `line_spacing_null`)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from graphclust import StabilityClustering
from graphclust.cluster._gap_null import (GAP_DRAWS, GAP_EXCEEDANCES, _line_lists,
                                          line_spacing_null, pair_crossings)
from graphclust.datasets import two_spirals
from graphclust.graphs import nearest_neighbors


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
