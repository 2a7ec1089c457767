"""The kNN graph of points on curves kept to the edges along their tangents (`_curve_tangents`),
and the fit's look at its components."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import connected_components
from sklearn.metrics import adjusted_rand_score

import graphclust as gc
from graphclust.cluster._curve_tangents import (
    TANGENT_MIN_COSINE,
    along_tangents,
    apart_along_tangents,
    SPREAD_DRAWS,
    SPREAD_NULL_MAX_SAMPLES,
    curve_tangents,
    spread_null,
    spread_ratios,
    tangent_components,
    tangent_edges,
)
from graphclust.cluster._gap_null import cluster_gaps, gap_test
from graphclust.graphs import knn_graph_from_neighbors, nearest_neighbors


def _lists(X, k):
    d = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(d, np.inf)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


def _scattered(seed, n, D, k):
    """``(rng, X, idx)``: n Gaussian points in D features of random scales, their k-NN lists."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D)) * rng.uniform(0.1, 3.0, size=D)
    return rng, X, _lists(X, k)


def _reference_tangents(X, idx, m):
    """Per point, the top right singular vector of its centred neighbourhood, and the ratio of
    its two largest singular values (how well the direction is defined)."""
    T, gap = np.zeros_like(X), np.zeros(len(X))
    for i in range(len(X)):
        P = X[np.r_[i, idx[i, :m - 1]]]
        s, vt = np.linalg.svd(P - P.mean(axis=0))[1:]
        T[i], gap[i] = vt[0], s[0] / max(s[1] if s.size > 1 else 0.0, 1e-300)
    return T, gap


def _reference_edges(X, idx, m, min_cos):
    T = _reference_tangents(X, idx, m)[0]
    keep = np.zeros(idx.shape, dtype=bool)
    for i in range(len(X)):
        for r, j in enumerate(idx[i]):
            e = X[j] - X[i]
            length = np.linalg.norm(e)
            keep[i, r] = length == 0 or (abs(e @ T[i]) / length >= min_cos
                                         and abs(e @ T[j]) / length >= min_cos)
    return keep


def _reference_components(X, idx, m, min_cos):
    keep = _reference_edges(X, idx, m, min_cos)
    n = len(X)
    A = np.zeros((n, n))
    for i in range(n):
        for r, j in enumerate(idx[i]):
            if keep[i, r]:
                A[i, j] = A[j, i] = 1
    return connected_components(A, directed=False)[1]


def _fit(X, seed):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", gc.StabilityWarning)
        model = gc.StabilityClustering(random_state=seed).fit(X)
    return model, [w for w in said if issubclass(w.category, gc.StabilityWarning)]


def _same_partition(a, b):
    return adjusted_rand_score(a, b) == 1.0 or (a.max() == 0 and b.max() == 0)


points = st.integers(0, 2**31 - 1).flatmap(lambda seed: st.tuples(
    st.just(seed), st.integers(12, 40), st.integers(2, 14), st.integers(3, 6),
    st.integers(2, 12)))


@settings(max_examples=60, deadline=None)
@given(points)
def test_tangents_match_a_dense_reference(args):
    # both ways of finding the direction (covariance when D <= m, Gram matrix when D > m)
    seed, n, D, k, m = args
    _, X, idx = _scattered(seed, n, D, k)
    m = min(m, k + 1)
    T = curve_tangents(X, idx, m)
    R, gap = _reference_tangents(X, idx, m)
    assert np.allclose(np.linalg.norm(T, axis=1), 1.0)
    clear = gap > 1.01  # a direction defined well enough to compare (up to its sign)
    assert np.allclose(np.abs(np.sum(T[clear] * R[clear], axis=1)), 1.0, atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(points)
def test_spread_ratios_match_a_dense_reference(args):
    # per point, the squared ratio of its centred neighbourhood's two largest singular values
    # (the covariance's eigenvalues when D <= k + 1, the Gram matrix's when D > k + 1)
    seed, n, D, k, _ = args
    rng, X, idx = _scattered(seed, n, D, k)
    want = _reference_tangents(X, idx, k + 1)[1] ** -2.0  # (s1 / s0)^2 of all k + 1 points
    got = spread_ratios(X, idx)
    assert np.allclose(got, want, atol=1e-9)
    # rotation, scale, shift and row order leave each point's ratio as it is
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    perm = rng.permutation(n)
    inv = np.argsort(perm)
    moved = spread_ratios((3.0 * X @ Q + 7.0)[perm], inv[idx[perm]])
    assert np.allclose(moved, got[perm], atol=1e-9)


def test_spread_ratios_tell_a_curve_from_scatter():
    # an arc of scatter 0.02 reads 0.2 or less, a blob and a square about 0.6, copies 1
    rng = np.random.default_rng(0)
    t = rng.uniform(0, np.pi, 200)
    arc = np.c_[np.cos(t), np.sin(t)] + rng.normal(0, 0.02, (200, 2))
    for P, low, high in ((arc, 0.0, 0.2), (rng.normal(size=(200, 2)), 0.5, 0.8),
                         (rng.random((200, 2)), 0.45, 0.75), (np.ones((30, 2)), 1.0, 1.0)):
        med = np.median(spread_ratios(P, _lists(P, 20)))
        assert low <= med <= high
    assert np.median(spread_ratios(arc, _lists(arc, 20))) < spread_null(200, 2, 20)


def test_spread_null_is_the_lowest_of_its_draws():
    # the Monte Carlo bar: the lowest median of SPREAD_DRAWS uniform squares of n points, at
    # most SPREAD_NULL_MAX_SAMPLES; deterministic; larger samples raise the bar
    medians = []
    for r in range(SPREAD_DRAWS):
        U = np.random.default_rng((0, r)).random((64, 2))
        medians.append(np.median(spread_ratios(U, _lists(U, 20))))
    assert spread_null(64, 2, 20) == pytest.approx(min(medians), abs=1e-12)
    assert spread_null(SPREAD_NULL_MAX_SAMPLES + 1, 3, 20) == spread_null(10**6, 3, 20)
    assert spread_null(64, 2, 20, 1) != spread_null(64, 2, 20)
    assert 0.3 < spread_null(64, 2, 20) < spread_null(1000, 2, 20) < 0.7
    assert spread_null(64, 2, 20) < spread_null(64, 3, 20)  # more room across a third axis


@settings(max_examples=60, deadline=None)
@given(points)
def test_components_match_a_dense_reference(args):
    seed, n, D, k, m = args
    rng = np.random.default_rng(seed)
    # noisy points along a few random lines: edges both along and across them
    lines = rng.integers(0, 3, size=n)
    X = (rng.normal(size=(3, D))[lines] + rng.uniform(-1, 1, size=(n, 1))
         * rng.normal(size=(3, D))[lines] + 0.05 * rng.normal(size=(n, D)))
    idx = _lists(X, k)
    m = min(m, k + 1)
    T, gap = _reference_tangents(X, idx, m)
    if np.any(gap <= 1.01):  # an undefined tangent: either direction is right
        return
    # a cosine within rounding of the threshold could go either way
    e = X[idx] - X[:, None]
    length = np.linalg.norm(e, axis=2)
    cos = np.abs(np.einsum("nkd,nd->nk", e, T)) / length
    if np.any(np.abs(cos - TANGENT_MIN_COSINE) < 1e-9):
        return
    got = tangent_components(X, idx, m)
    assert _same_partition(got, _reference_components(X, idx, m, TANGENT_MIN_COSINE))
    keep = tangent_edges(X, idx, m)
    assert np.array_equal(keep, _reference_edges(X, idx, m, TANGENT_MIN_COSINE))
    assert _same_partition(tangent_components(X, idx, m, keep=keep), got)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 20), st.integers(2, 6), st.integers(1, 40))
def test_along_tangents_matches_a_loop_and_its_invariances(seed, n, D, m):
    # per segment, |cos| of its angle to each end's tangent against the threshold; the same
    # verdict both ways, for tangents of either sign, and for the points rotated, scaled and
    # shifted with their tangents
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, D))
    T = rng.normal(size=(n, D))
    T /= np.linalg.norm(T, axis=1, keepdims=True)
    u, v = rng.integers(0, n, size=m), rng.integers(0, n, size=m)
    got = along_tangents(X, T, u, v)
    for r, (a, b) in enumerate(zip(u, v)):
        e = X[b] - X[a]
        length = np.sqrt(e @ e)
        want = length == 0 or (abs(e @ T[a]) / length >= TANGENT_MIN_COSINE
                               and abs(e @ T[b]) / length >= TANGENT_MIN_COSINE)
        cosines = [abs(e @ T[a]) / length, abs(e @ T[b]) / length] if length else [1.0]
        if min(abs(c - TANGENT_MIN_COSINE) for c in cosines) > 1e-9:  # off the threshold
            assert got[r] == want
    Q = np.linalg.qr(rng.normal(size=(D, D)))[0]
    sign = rng.choice([-1.0, 1.0], size=(n, 1))
    assert (along_tangents(X, T, v, u) == got).all()
    assert (along_tangents(3.7 * X @ Q + 5.0, sign * T @ Q, u, v) == got).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(2, 30), st.integers(1, 5), st.integers(1, 4))
def test_apart_along_tangents_matches_a_dense_reference(seed, n, k, c):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n, k))
    keep = rng.random((n, k)) < rng.uniform(0, 1)
    labels = rng.integers(0, c, size=n)
    expected = all(labels[i] == labels[idx[i, r]] for i in range(n) for r in range(k)
                   if keep[i, r])
    assert apart_along_tangents(labels, idx, keep) == expected
    # the clusters of the kept entries' components are always apart
    assert apart_along_tangents(tangent_components(None, idx, keep=keep), idx, keep)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(3, 25), st.integers(1, 5),
       st.sampled_from(["union", "mutual"]))
def test_kept_lists_graph_matches_a_dense_reference(seed, n, k, mode):
    rng = np.random.default_rng(seed)
    k = min(k, n - 1)
    X = rng.normal(size=(n, 2))
    idx = _lists(X, k)
    dist = np.linalg.norm(X[idx] - X[:, None], axis=2)
    keep = rng.random((n, k)) < 0.6
    A = np.zeros((n, n), dtype=int)
    for i in range(n):
        for r in range(k):
            A[i, idx[i, r]] += keep[i, r]
    want = (A + A.T > 0) if mode == "union" else (A * A.T > 0)
    got = knn_graph_from_neighbors(idx, dist, keep=keep, mode=mode).distances.toarray() > 0
    assert np.array_equal(got, want)


def test_kept_lists_of_the_wrong_shape_are_refused():
    idx = np.zeros((4, 2), dtype=np.int64)
    with pytest.raises(ValueError, match=r"keep must be a bool array of the lists' shape"):
        knn_graph_from_neighbors(idx, np.ones((4, 2)), keep=np.ones((4, 3), dtype=bool))
    with pytest.raises(ValueError, match="keep"):
        knn_graph_from_neighbors(idx, np.ones((4, 2)), keep=np.ones((4, 2)))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_components_do_not_depend_on_rotation_scale_shift_or_row_order(seed):
    rng = np.random.default_rng(seed)
    a = np.sort(rng.uniform(0, 2 * np.pi, 120))
    X = np.r_[np.c_[np.cos(a), np.sin(a)], 1.2 * np.c_[np.cos(a), np.sin(a)]]
    X += 0.02 * rng.normal(size=X.shape)
    idx = _lists(X, 6)
    base = tangent_components(X, idx)
    Q = np.linalg.qr(rng.normal(size=(2, 2)))[0]
    moved = tangent_components(3.7 * X @ Q + rng.normal(size=2), idx)
    assert _same_partition(base, moved)
    p = rng.permutation(len(X))
    back = np.argsort(p)
    permuted = tangent_components(X[p], back[idx[p]])
    assert _same_partition(base[p], permuted)


def test_copies_of_a_point_stay_joined():
    # edges of length 0 have no direction: copies are one point
    t = np.linspace(0, 1, 40)
    X = np.r_[np.c_[t, 0 * t], np.c_[t[:5], 0 * t[:5]]]
    idx = _lists(X, 4)
    assert tangent_components(X, idx).max() == 0


def test_two_curves_side_by_side_are_apart_where_their_lists_cross():
    # the outer circle's gap: its ends' lists reach the inner circle, across both tangents
    a = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    X = np.r_[np.c_[np.cos(a), np.sin(a)], 1.15 * np.c_[np.cos(a[6:]), np.sin(a[6:])]]
    idx = _lists(X, 6)
    n = len(X)
    union = sp.csr_matrix((np.ones(idx.size), (np.repeat(np.arange(n), 6), idx.ravel())),
                          shape=(n, n))
    assert connected_components(union, directed=False)[0] == 1
    comp = tangent_components(X, idx, 5)
    assert comp.max() == 1
    assert len(set(comp[:200])) == 1 and len(set(comp[200:])) == 1


@pytest.mark.parametrize("n, seed", [(900, 4), (1000, 0)])
def test_the_fit_finds_spiral_arms_whose_lists_cross(n, seed):
    # the demo's three spirals of 900 points at seed 4: the walk's tiles (32, warned), then
    # the arms warned as escaped like a line's tiles; of 1 000 at seed 0, 9 clusters (warned).
    # Every arm is joined to another only across the tangents, by a gap wider than the lists'
    # median radius (1.5-1.8), which a uniform line's chance gaps at 1 000 points match
    X, y = gc.datasets.three_spirals(n, random_state=seed)
    model, said = _fit(X, seed)
    assert not said
    assert model.n_clusters_ == 3
    assert model.selection_rule_ == "mutual"
    assert adjusted_rand_score(y, model.labels_) == pytest.approx(1.0)
    assert model.gap_ratio_ > model.null_gap_ratio_ == 1.0


def test_the_gap_test_reads_the_lists_graph_by_default():
    X, _ = gc.datasets.two_spirals(200, random_state=0)
    idx, dist = nearest_neighbors(X, 10)
    labels = (X[:, 0] > 0).astype(np.int64)
    a = gap_test(X, idx, dist, labels, [0, 1], 1.0, random_state=0)
    b = gap_test(X, idx, dist, labels, [0, 1], 1.0, random_state=0,
                 graph=knn_graph_from_neighbors(idx, dist))
    for x, y in zip(a, b):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    # with its crossings: the same answer, and the edges `cluster_gaps` reads the gaps from
    c = gap_test(X, idx, dist, labels, [0, 1], 1.0, random_state=0, return_edges=True)
    for x, y in zip(a, c[:5]):
        assert np.array_equal(np.asarray(x), np.asarray(y))
    gaps, edges = cluster_gaps(knn_graph_from_neighbors(idx, dist), X, dist, labels, [0, 1],
                               return_edges=True)
    assert np.array_equal(gaps, a[0])
    for x, y in zip(c[5], edges):
        assert np.array_equal(x, y)



def test_spiral_arms_joined_only_across_their_direction_pass_by_their_gaps():
    # the demo's two spirals of 300 points at seed 1: the arms' ends reach the other arm, so
    # the walk leaves them as fast as tiles of a line (17 tiles, warned, before); along the
    # tangents they are whole components whose gap the gap test passes
    X, y = gc.datasets.two_spirals(300, random_state=1)
    model, said = _fit(X, 1)
    assert not said
    assert model.n_clusters_ == 2
    assert adjusted_rand_score(y, model.labels_) == pytest.approx(1.0)
    assert model.gap_ratio_ > model.null_gap_ratio_


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_single_thin_curve_is_not_cut_silently(seed):
    # a noisy spiral arm and a thin segment, 1 000 points: one curve, whatever its tangents
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(1, 16, 1000)) * np.pi
    arm = np.c_[t * np.cos(t), t * np.sin(t)] / 4 + rng.normal(0, 0.01, (1000, 2))
    segment = np.c_[rng.uniform(0, 10, 1000), rng.normal(0, 0.005, 1000)]
    for X in (arm, segment):
        model, said = _fit(X, seed)
        assert model.n_clusters_ == 1 or said


def test_tangent_gaps_draw_the_null_when_a_cluster_is_a_component_of_the_graph():
    # two circles whose lists cross at the outer one's gap, and a third far away: the third
    # is a component of the kNN graph, so the gaps are tested against the gap test's draws
    a = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    ring = np.c_[np.cos(a), np.sin(a)]
    X = np.r_[ring, 1.15 * ring[6:], ring + [10.0, 0.0]]
    labels = np.repeat([0, 1, 2], [200, 194, 200])
    idx, dist = nearest_neighbors(X, 6, method="exact")
    model = gc.StabilityClustering(n_neighbors=6)
    model.intrinsic_dimension_ = 1.0
    W = knn_graph_from_neighbors(idx, dist).distances  # the paths (their pattern)
    model.selection_rule_ = "metastable"
    assert model._apart_on_curve(X, idx, labels)
    # the three are curves apart, and no two continue each other across a gap: kept
    assert (model._tangent_gaps(X, idx, dist, W, labels, draws=True) == labels).all()
    assert model.gap_ratio_ > model.null_gap_ratio_ >= 1.0
    # halves of one circle are joined along it: not apart, and left to the escape time
    halves = labels.copy()
    halves[:100] = 3
    assert not model._apart_on_curve(X, idx, halves)
    assert model._tangent_gaps(X, idx, dist, W, halves, draws=True) is None
    # a plane is no curve
    model.intrinsic_dimension_ = 2.0
    assert model._tangent_gaps(X, idx, dist, W, labels, draws=True) is None
