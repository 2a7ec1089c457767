"""The null drawn on the data's own support (`cluster._support_null`) and its use by
`StabilityClustering`: a thin ring's chance arcs are reported, a shape's bottleneck is not."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import cKDTree
from sklearn.datasets import make_circles, make_swiss_roll
from sklearn.metrics import adjusted_rand_score
from sklearn.preprocessing import StandardScaler

from graphclust import StabilityClustering, StabilityWarning
from graphclust.cluster._stability_null import _weak_adjacent_groups
from graphclust.cluster._support_null import (SUPPORT_AGREEMENT, SUPPORT_MAX_DIMENSION,
                                              _tangent_slabs, carried_labels, hull_coordinates,
                                              support_sample)
from graphclust.datasets import two_moons
from graphclust.graphs import nearest_neighbors


def _ring(n, width, seed):
    rng = np.random.default_rng(seed)
    t, r = rng.uniform(0, 2 * np.pi, n), 1 + width * rng.uniform(-1, 1, n)
    return np.c_[r * np.cos(t), r * np.sin(t)]


def _diamonds(seed):
    """Two uniform diamonds of 400 points touching at one tip: a bottleneck of the shape."""
    rng = np.random.default_rng(seed)
    parts = []
    for shift in (-1.0, 1.0):
        P = rng.uniform(-1, 1, (4000, 2))
        parts.append(P[np.abs(P).sum(axis=1) <= 1][:400] + [shift, 0.0])
    return np.concatenate(parts)


def test_support_sample_is_uniform_on_the_union_of_balls():
    # dense reference: the union's area on a fine grid, each cell tested against every ball;
    # a dense blob beside a sparse one, so that the balls' radii differ by about 4 times
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 0.3, (150, 2)), rng.normal(0, 1.2, (150, 2)) + [4.0, 0.0]]
    dist = nearest_neighbors(X, 10, method="exact")[1]
    r = dist[:, 4]
    Y = support_sample(X, dist, 4000, random_state=1)
    # every point inside some ball
    d2 = ((Y[:, None, :] - X[None, :, :]) ** 2).sum(axis=2)
    assert (d2 <= (r ** 2)[None, :] * (1 + 1e-9)).any(axis=1).all()
    g = np.linspace(-4, 9, 521)
    gx, gy = np.meshgrid(g, g)
    G = np.c_[gx.ravel(), gy.ravel()]
    inside = np.zeros(G.shape[0], dtype=bool)
    for x, rad in zip(X, r):
        inside |= ((G - x) ** 2).sum(axis=1) <= rad ** 2
    left_area = (inside & (G[:, 0] < 2.0)).sum() / inside.sum()
    left = float(np.mean(Y[:, 0] < 2.0))
    # binomial standard error at 4 000 draws is <= 0.008; the grid's error is smaller
    assert abs(left - left_area) < 4 * np.sqrt(left_area * (1 - left_area) / Y.shape[0]) + 0.01


def test_support_sample_is_seeded_and_keeps_duplicates_finite():
    X = np.r_[np.zeros((20, 2)), np.random.default_rng(0).random((80, 2))]
    dist = nearest_neighbors(X, 10, method="exact")[1]
    a = support_sample(X, dist, 200, random_state=3)
    b = support_sample(X, dist, 200, random_state=3)
    assert a.shape == (200, 2) and np.isfinite(a).all()
    np.testing.assert_array_equal(a, b)


def _tilted_sheet(seed, noise=0.01):
    """A flat noisy sheet in three features, tilted out of every coordinate plane: 200 points
    on [0, 2] x [0, 2] beside 100 on [2, 4] x [0, 2] (slabs of two sizes)."""
    rng = np.random.default_rng(seed)
    P = np.r_[rng.uniform([0, 0], [2, 2], (200, 2)), rng.uniform([2, 0], [4, 2], (100, 2))]
    P = np.c_[P, rng.normal(0, noise, 300)]
    Q = np.linalg.qr(np.random.default_rng(99).normal(size=(3, 3)))[0]
    return P @ Q.T, Q


def test_a_sheets_support_sample_is_uniform_on_its_tangent_slabs():
    # dense reference: the union of the slabs on a fine grid in the sheet's own coordinates,
    # each cell tested against every slab (its disc of radius r in the tangent plane, its
    # half-width h along the normal)
    X, Q = _tilted_sheet(0)
    dist = nearest_neighbors(X, 10, method="exact")[1]
    Y = support_sample(X, dist, 3000, random_state=1, dimension=2.1)
    r = np.sort(dist, axis=1)[:, 4]
    frame, h = _tangent_slabs(X, r, 10, 2, cKDTree(X))

    def inside(Z):
        hit = np.zeros(Z.shape[0], dtype=bool)
        for x, F, rad, w in zip(X, frame, r, h):
            off = (Z - x) @ F.T
            hit |= (np.hypot(off[:, 0], off[:, 1]) <= rad * (1 + 1e-9)) & (
                np.abs(off[:, 2]) <= w * (1 + 1e-9))
        return hit

    assert inside(Y).all()
    g = np.meshgrid(np.linspace(-0.5, 4.5, 161), np.linspace(-0.5, 2.5, 97),
                    np.linspace(-0.08, 0.08, 33))
    G = np.c_[g[0].ravel(), g[1].ravel(), g[2].ravel()]  # sheet coordinates
    cells = inside(G @ Q.T)
    left_volume = (cells & (G[:, 0] < 2.0)).sum() / cells.sum()
    left = float(np.mean((Y @ Q)[:, 0] < 2.0))
    # binomial standard error at 3 000 draws is <= 0.009; the grid's error is smaller
    assert abs(left - left_volume) < 4 * np.sqrt(left_volume * (1 - left_volume) / 3000) + 0.01


def test_a_sheets_support_stays_as_thin_as_the_sheet():
    # balls as wide as the 5th neighbour's distance (0.2-0.4) thicken a sheet of scatter
    # 0.01 to half of that (a swiss roll's turns then touch); the tangent slabs keep it
    # within a few times its own scatter (their tilt and the sampling noise of h): measured
    # medians 0.12-0.13 against 0.015-0.019 over seeds 0-2
    X, Q = _tilted_sheet(1)
    dist = nearest_neighbors(X, 10, method="exact")[1]
    off_sheet = {dim: np.abs(support_sample(X, dist, 2000, random_state=2, dimension=dim)
                             @ Q[:, 2]) for dim in (None, 2.0)}
    assert np.median(off_sheet[None]) > 0.08
    assert np.median(off_sheet[2.0]) < 0.03 and off_sheet[2.0].max() < 0.15


def test_balls_stay_balls_off_a_sheet():
    # two features, or a dimension that does not round to 2: the balls of before, draw for draw
    rng = np.random.default_rng(0)
    for X, dim in [(rng.random((200, 2)), 1.3), (rng.random((200, 2)), 2.0),
                   (rng.random((200, 3)), 2.9), (rng.random((200, 3)), 1.2)]:
        dist = nearest_neighbors(X, 10, method="exact")[1]
        np.testing.assert_array_equal(support_sample(X, dist, 300, random_state=4),
                                      support_sample(X, dist, 300, random_state=4,
                                                     dimension=dim))


def test_a_swiss_roll_of_500_points_is_reported():
    # no clusters along the roll. With balls, its support's turns touched, the support's
    # partitions escaped faster and the roll's three cuts were silent; in tangent slabs the
    # support is the roll (docs/battery.md, *Built: a sheet's support in its tangent planes*)
    X = make_swiss_roll(500, noise=0.05, random_state=1)[0]
    with pytest.warns(StabilityWarning, match="the data's own support"):
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ > 1 and m.support_agreement_ < SUPPORT_AGREEMENT


def test_carried_labels_take_the_nearest_points_label():
    X = np.array([[0.0, 0.0], [10.0, 0.0]])
    Y = np.array([[1.0, 0.0], [9.0, 1.0], [4.9, 0.0]])
    assert carried_labels(X, np.array([3, 7]), Y).tolist() == [3, 7, 3]


def test_a_thin_ring_is_reported_as_chance_cuts_of_its_shape():
    # 2-D at the kNN scale, 1-D at its arcs' scale: the structureless references pass its 19
    # arcs (docs/battery.md); the support's sample is cut into arcs elsewhere
    X = _ring(600, 0.1, 0)
    with pytest.warns(StabilityWarning, match="data's own support") as caught:
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ > 1 and m.support_agreement_ < SUPPORT_AGREEMENT
    assert any(f"the {m.n_clusters_} clusters found" in str(w.message) for w in caught)


def test_a_bottleneck_of_the_shape_is_kept_silently():
    # the support's sample is escaped as slowly here, but it is cut at the same tip
    X = _diamonds(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        m = StabilityClustering(random_state=1).fit(X)
    assert m.n_clusters_ == 2
    assert m.support_agreement_ is not None and m.support_agreement_ >= SUPPORT_AGREEMENT
    assert np.bincount(m.labels_[:400]).max() >= 390  # each diamond one cluster


def test_the_support_test_reads_hulls_of_two_and_three_dimensions(tmp_path):
    # in more features the test does not read the points (a hull of four dimensions and up),
    # but a planar shape padded into three or four features is read in its plane's
    # coordinates (`hull_coordinates`), as in two: the same verdict (the support samples are
    # drawn in the hull's own frame, so their agreement is another draw of the same test)
    X = _ring(600, 0.1, 0)
    with pytest.warns(StabilityWarning, match="data's own support"):
        m = StabilityClustering(random_state=0).fit(X)
    path = tmp_path / "ring.npz"
    m.save(path)
    assert StabilityClustering.load(path).support_agreement_ == m.support_agreement_
    for padded in (np.c_[X, np.zeros(600)], np.c_[X, np.zeros(600), np.full(600, 7.0)]):
        with pytest.warns(StabilityWarning, match="data's own support"):
            m_padded = StabilityClustering(random_state=0).fit(padded)
        assert m_padded.support_agreement_ < SUPPORT_AGREEMENT
        assert m_padded.n_clusters_ == m.n_clusters_
    rng = np.random.default_rng(0)
    X4 = np.c_[X, 0.05 * rng.normal(size=(600, 2))]  # a hull of four dimensions
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m4 = StabilityClustering(random_state=0).fit(X4)
    assert m4.support_agreement_ is None
    assert not any("own support" in str(w.message) for w in caught)


def test_three_dimensional_gaussian_clusters_are_not_reported():
    # three Gaussian clusters 3.5 deviations apart fill three dimensions (d = 3.1, as battery
    # wut/mk3): the support's partitions agree with theirs too little (0.57) to tell them
    # from a tube's arcs, but density valleys lie between them, so the test stays silent
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 1, (300, 3)) + [3.5 * i, 0, 0] for i in range(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 3 and SUPPORT_MAX_DIMENSION <= m.intrinsic_dimension_
    assert m.support_agreement_ is not None and m.support_agreement_ < SUPPORT_AGREEMENT


def test_a_noisy_circle_in_three_dimensions_is_reported():
    # 2.6-dimensional at the kNN scale, so its 17 arcs outlast the null model's 3-D tiles;
    # the support's partitions cut it elsewhere and no density valley lies between arcs
    rng = np.random.default_rng(2)
    a = rng.uniform(0, 2 * np.pi, 500)
    X = np.c_[np.cos(a), np.sin(a), np.zeros(500)] + rng.normal(0, 0.05, (500, 3))
    with pytest.warns(StabilityWarning, match="no density valley between any two"):
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ > 1 and m.intrinsic_dimension_ >= SUPPORT_MAX_DIMENSION


def test_a_spiral_arm_cut_at_its_sparsest_spot_is_reported():
    # one noisy spiral arm of 2 000 points: its two clusters are escaped more slowly than the
    # support's partitions (the cut lies at the sample's own sparsest spot), but carried to
    # the support their escape time falls no more than a support sample's own partition's
    # does, no density valley lies between them, and the support's partitions cut elsewhere
    # (silent before: docs/battery.md, *Built: chance cuts at sparse spots*)
    rng = np.random.default_rng(2)
    t = np.sqrt(rng.uniform(0.5, 9, 2000)) * 2
    X = np.c_[t * np.cos(t), t * np.sin(t)] + rng.normal(0, 0.15, (2000, 2))
    with pytest.warns(StabilityWarning, match="only at sparse spots of one shape"):
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ > 1 and m.support_agreement_ < SUPPORT_AGREEMENT
    assert m.escape_time_ > m.null_escape_time_


def test_moons_escaped_slowly_because_of_their_gap_are_not_reported():
    # the papers' two moons (seed 6): the support's balls bridge their gap, so its partitions
    # cut elsewhere (agreement below 0.75) and a path between the moons folds (no dip); but
    # carried to the support the moons' escape time falls by far more than a chance
    # partition's (5.4 against at most 2.8): their slowness is the gap's
    X, y = two_moons(400, random_state=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        m = StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 2 and m.support_agreement_ < SUPPORT_AGREEMENT
    assert adjusted_rand_score(y, m.labels_) == 1.0


def test_chance_arcs_beside_a_ring_the_walk_hardly_leaves_are_joined(capsys):
    # scikit-learn's circles at noise 0.08 (seed 0): the density look keeps the outer ring
    # whole and cuts the inner one into 6 arcs. The partition's mass-weighted escape time
    # (4.86) passes the support's partitions (4.44 plus the margin) only through the outer
    # ring (7.83); the arcs (3.90-4.56), judged on their own points, are chance cuts of the
    # inner ring's shape with no density valley between them, and are joined into one
    # cluster; the progress lines say so, and no warning does (the rings have passed)
    X, y = make_circles(1000, noise=0.08, factor=0.5, random_state=0)
    X = StandardScaler().fit_transform(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", StabilityWarning)
        m = StabilityClustering(random_state=0, verbose=True).fit(X)
    assert m.n_clusters_ == 2 and adjusted_rand_score(y, m.labels_) == 1.0
    said = capsys.readouterr().err
    assert "6 clusters of 500 points" in said and "each group joined into one cluster" in said


def test_weak_adjacent_groups_are_the_connected_weak_clusters():
    # clusters 0-1-2-3 in a path, 4 apart: 0, 1 and 3 weak; 0-1 touch, 3 touches only 2
    labels = np.repeat(np.arange(5), 2)
    edges = [(1, 2), (3, 4), (5, 6)]  # 0-1, 1-2, 2-3 (points 2k, 2k + 1 of cluster k)
    rows, cols = zip(*edges)
    W = sp.csr_matrix((np.ones(3), (rows, cols)), shape=(10, 10))
    W = W + W.T
    found = _weak_adjacent_groups(W, labels, np.array([True, True, False, True, False]))
    assert [(g.tolist(), m.tolist()) for g, m in found] == [([0, 1], [0, 1, 2, 3])]
    assert _weak_adjacent_groups(W, labels, np.array([True] + [False] * 4)) == []


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(4, 12), st.integers(12, 60), st.integers(0, 2**31 - 1),
       st.booleans(), st.sampled_from([2.0**-990, 1.0, 2.0**990]))
def test_hull_coordinates_keep_every_distance(rank, features, n, seed, padded, scale):
    # points of a hull of `rank` dimensions placed in more features by an orthonormal map
    # and an offset (or padded with a constant and a repeated column): the coordinates
    # have the hull's dimension and the same pairwise distances (to 1e-9 relative), at any
    # scale (at 1e300 the sketch's norm overflowed and the hull went unseen)
    from scipy.spatial.distance import pdist

    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, rank)) * rng.uniform(0.1, 10, rank)
    if padded:
        X = np.c_[P, np.full(n, 3.0), P[:, :1]]  # rank + 2 features
        X = np.c_[X, np.zeros((n, max(0, features - X.shape[1])))]
    else:
        Q = np.linalg.qr(rng.normal(size=(features, features)))[0][:, :rank]
        X = P @ Q.T + rng.normal(size=features) * 100
    H = hull_coordinates(X * scale) / scale
    assert H.shape == (n, rank)
    np.testing.assert_allclose(pdist(H), pdist(X), rtol=1e-9, atol=1e-9 * pdist(X).max())


def test_hull_coordinates_leave_other_points_as_they_are():
    rng = np.random.default_rng(0)
    full = rng.normal(size=(50, 6))  # a hull of six dimensions
    assert hull_coordinates(full) is full
    plane = rng.normal(size=(50, 2))
    assert hull_coordinates(plane) is plane  # a hull as wide as the features: as they are
    same = np.ones((50, 8))  # every point the same: no hull to speak of
    assert hull_coordinates(same) is same
    import scipy.sparse as sp

    sparse = sp.random(50, 8, density=0.1, random_state=0, format="csr")
    assert hull_coordinates(sparse) is sparse
