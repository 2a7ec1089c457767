"""The groups that a split's unimodal pairs join are tested again as they came out
(`_valley_joins._groups_retested`): a chance gap that the walk cut at is a valley only in
the few points around it, a small cluster beside a large one keeps its valley on a balanced
window."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.neighbors import kneighbors_graph

from graphclust.cluster import _valley_joins as vj
from graphclust.cluster._partition_quality import canonical_labels


def _knn(X, k=10):
    A = kneighbors_graph(X, k)
    return (A + A.T).tocsr()


def _chain(n):
    return sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]).tocsr()


def _strip_with_a_gap(seed, gap=0.2):
    """400 points uniform on a strip 10 x 0.3 with an empty band of width `gap` at x = 6, cut
    into five parts left of it and three right of it (the gap a boundary between parts 4
    and 5)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(0, 10, 400))
    X = np.c_[np.where(x > 6, x + gap, x), rng.uniform(0, 0.3, 400)]
    sub = np.where(x < 6, np.minimum((x / 6 * 5).astype(np.int64), 4),
                   5 + np.minimum(((x - 6) / 4 * 3).astype(np.int64), 2))
    return X, sub


@pytest.mark.parametrize("seed", [0, 4])
def test_a_chance_gap_is_a_valley_only_in_the_parts_beside_it(seed):
    # the pair at the gap is bimodal on its own (p below its level: the parts were cut
    # there), but the two groups it separates, once their pieces joined, are one mode whole
    # and on the balanced window: the strip is one group
    X, sub = _strip_with_a_gap(seed)
    joined, p = vj.join_unimodal_pairs(X, sub, _knn(X), ends=2)
    assert p[4, 5] < 0.05 / len(p)
    assert joined.max() == 0


def test_without_the_gap_the_strip_is_one_group_in_the_first_round():
    X, sub = _strip_with_a_gap(0, gap=0.0)
    joined, p = vj.join_unimodal_pairs(X, sub, _knn(X), ends=2)
    assert joined.max() == 0 and min(p.values()) >= 0.05 / len(p)


def _band_and_cluster(seed, m=40, gap=0.3):
    """A band of 1 000 points uniform on [0, 20] in eight parts, and beyond a gap a denser
    cluster of `m` points (twice the band's density) as a ninth; a chain graph."""
    rng = np.random.default_rng(seed)
    x = np.r_[np.sort(rng.uniform(0, 20, 1000)), 20 + gap + np.sort(rng.uniform(0, 0.01 * m, m))]
    sub = np.r_[np.minimum((x[:1000] / 20 * 8).astype(np.int64), 7), np.full(m, 8)]
    return x[:, None], sub, _chain(x.size)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_small_cluster_beside_a_large_group_keeps_its_valley_on_the_balanced_window(seed):
    X, sub, W = _band_and_cluster(seed)
    joined, p = vj.join_unimodal_pairs(X, sub, W, ends=2)
    assert np.bincount(joined).tolist() == [1000, 40]
    # the band's pieces joined, and tested whole beside the cluster the union has too little
    # of the cluster's mass for the dip to see its valley; the window (the cluster and the
    # band's 40 points nearest it) sees it
    lengths = vj.edge_length_matrix(vj.rescale(X)[0], W)
    edge = float(np.median(lengths.data))
    band, cluster = np.arange(1000), np.arange(1000, 1040)
    assert vj._pair_pvalue(X, lengths, edge, band, cluster, 0.025, 0, 2) >= 0.05
    window = vj._balanced_window(lengths, band, cluster)
    assert window[0].tolist() == list(range(960, 1000)) and window[1] is cluster
    assert vj._pair_pvalue(X, lengths, edge, *window, 0.025, 0, 2) < 0.025


def test_the_balanced_window_takes_the_larger_groups_points_nearest_the_cut():
    # a chain of unit edges, 0..9 and 10..13: the first group's four points nearest the cut
    lengths = _chain(14)
    first, second = np.arange(10), np.arange(10, 14)
    a, b = vj._balanced_window(lengths, first, second)
    assert a.tolist() == [6, 7, 8, 9] and b is second
    a, b = vj._balanced_window(lengths, second, first)  # either order
    assert a is second and b.tolist() == [6, 7, 8, 9]
    a, b = vj._balanced_window(lengths, np.arange(7), np.arange(7, 14))  # equal: both whole
    assert a.tolist() == list(range(7)) and b.tolist() == list(range(7, 14))


@pytest.mark.parametrize("seed", [0, 4])
def test_the_retest_does_not_depend_on_the_parts_numbers(seed):
    X, sub = _strip_with_a_gap(seed, gap=0.3)
    W = _knn(X)
    first = vj.join_unimodal_pairs(X, sub, W, ends=2)[0]
    relabel = np.random.default_rng(seed).permutation(sub.max() + 1)
    again = vj.join_unimodal_pairs(X, relabel[sub], W, ends=2)[0]
    assert np.array_equal(canonical_labels(first), canonical_labels(again))


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(2, 40), st.integers(0, 2**31 - 1))
def test_cut_distances_and_the_window_match_a_dense_reference(m1, m2, seed):
    # the distance of each point of a group to the cut, along the group's own graph from the
    # midpoints of the edges across: min over the edges (u, v) across of d_own(point, u) +
    # |uv| / 2, by all-pairs shortest paths within the group
    from scipy.sparse.csgraph import floyd_warshall

    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(size=(m1, 2)), rng.normal(size=(m2, 2)) + [1.5, 0.0]]
    lengths = vj.edge_length_matrix(X, _knn(X, k=min(4, m1 + m2 - 1)))
    first, second = np.arange(m1), np.arange(m1, m1 + m2)
    for own, other in ((first, second), (second, first)):
        dense = lengths.toarray()
        inside = floyd_warshall(sp.csr_matrix(dense[np.ix_(own, own)]), directed=False)
        across = dense[np.ix_(own, other)]
        half = np.where(across > 0, 0.5 * across, np.inf).min(axis=1)  # at each point
        reference = (inside + half[None, :]).min(axis=1)
        got = vj._cut_distances(lengths, own, other)
        np.testing.assert_allclose(got, reference, rtol=1e-12, atol=0)
    a, b = vj._balanced_window(lengths, first, second)
    m = min(m1, m2)
    assert a.size == b.size == m
    assert np.array_equal(a, first) or np.array_equal(b, second)  # the smaller one whole
    large, small, chosen = (first, second, a) if m1 > m2 else (second, first, b)
    if m1 != m2:  # the larger group's m points nearest the cut (ties by index)
        d = vj._cut_distances(lengths, large, small)
        assert np.array_equal(chosen, np.sort(large[np.lexsort((large, d))[:m]]))


def _reference_at_ends(X, W, labels, u, v, share=vj.CURVE_END_SHARE):
    """cut_at_ends by dense Floyd-Warshall distances within each cluster: the double sweep
    from the point, and the middle of the diameter of the sweep from the cluster's first
    point, read from the full matrix."""
    from scipy.sparse.csgraph import floyd_warshall

    L = vj.edge_length_matrix(X, W).toarray()
    ends = {}
    for j in np.unique(labels):
        members = np.flatnonzero(labels == j)
        D = floyd_warshall(L[np.ix_(members, members)], directed=False)
        D[~np.isfinite(D)] = -1.0
        ends[j] = (members, D)

    def has_ends(members, D):  # the sweep from the cluster's first point
        d1 = D[np.argmax(D[0])]
        sub = L[np.ix_(members, members)]
        edges = sub[sub > 0]
        short = not edges.size or d1.max() < vj.PATH_EDGES * np.median(edges)
        return short or D[np.argmin(np.abs(d1 - 0.5 * d1.max()))].max() < share * d1.max()

    def at_end(p):
        members, D = ends[labels[p]]
        d0 = D[np.searchsorted(members, p)]
        d1 = D[np.argmax(d0)]
        return bool(d0.max() >= share * d1.max() and has_ends(members, D))

    return [at_end(a) and at_end(b) for a, b in zip(u, v)]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(20, 70), st.sampled_from(["arc", "ring", "blob"]))
def test_cut_at_ends_matches_a_dense_reference(seed, n, shape):
    # a curve or blob cut in two or three by angle, each edge between clusters read
    rng = np.random.default_rng(seed)
    a = rng.uniform(0, 2 * np.pi if shape == "ring" else 2.5, n)
    X = np.c_[np.cos(a), np.sin(a)] + rng.normal(0, 0.03, (n, 2))
    if shape == "blob":
        X = rng.normal(size=(n, 2))
        a = np.arctan2(X[:, 1], X[:, 0]) + np.pi
    labels = canonical_labels(np.minimum((a / (2 * np.pi) * rng.integers(2, 4)).astype(int), 2))
    W = kneighbors_graph(X, 5, mode="connectivity")
    W = (W + W.T).tocsr()
    C = W.tocoo()
    across = labels[C.row] != labels[C.col]
    if not across.any():
        return
    u, v = C.row[across], C.col[across]
    assert vj.cut_at_ends(X, W, labels, u, v).tolist() == _reference_at_ends(X, W, labels, u, v)


def test_whole_rings_side_by_side_have_no_ends_and_halves_of_one_do():
    # two rings (make_circles' noise 0.08) touch; neither is a piece of one curve cut at a
    # chance spot. Halves of one ring are, at the cut's both sides
    from sklearn.datasets import make_circles

    X, y = make_circles(1000, noise=0.08, factor=0.5, random_state=0)
    W = kneighbors_graph(X, 10, mode="connectivity")
    W = (W + W.T).tocsr()
    C = W.tocoo()
    across = y[C.row] != y[C.col]
    assert across.any()
    assert not vj.cut_at_ends(X, W, y, C.row[across], C.col[across]).any()
    outer = np.flatnonzero(y == 0)
    halves = (X[outer, 1] > 0).astype(int)
    Wo = W[outer][:, outer].tocoo()
    cut = halves[Wo.row] != halves[Wo.col]  # at both ends of a diameter
    assert vj.cut_at_ends(X[outer], Wo.tocsr(), halves, Wo.row[cut], Wo.col[cut]).all()


def _pi_band(seed, n=1700):
    """n points uniform on a band of width 1 shaped like a Pi (legs 6 long, bar 5), cut in the
    middle of its bar: no density valley anywhere."""
    rng = np.random.default_rng(seed)
    legs = [(0, 1, 0, 6), (0, 5, 6, 7), (4, 5, 0, 6)]
    area = np.array([(x1 - x0) * (y1 - y0) for x0, x1, y0, y1 in legs])
    counts = rng.multinomial(n, area / area.sum())
    X = np.concatenate([np.c_[rng.uniform(x0, x1, m), rng.uniform(y0, y1, m)]
                        for (x0, x1, y0, y1), m in zip(legs, counts)])
    return X, (X[:, 0] >= 2.5).astype(np.int64)


@pytest.mark.xfail(strict=True, reason="known gap: geodesic fronts fan out at a band's corners, "
                   "and two corners read as two modes (docs/model_selection.md, *Measured, not "
                   "built: a band with two corners reads as two modes*)")
def test_a_uniform_band_with_two_corners_is_no_valley():
    # at the level 0.025 a valid test calls at most a few of ten uniform bands bimodal; the
    # geodesic views call 6 of these ten so, 13 of 20 (a straight band and an L of the same
    # area: 2 and 0 of 20)
    found = 0
    for seed in range(10):
        X, sub = _pi_band(seed)
        joined, p = vj.join_unimodal_pairs(X, sub, _knn(X), level=0.025, ends=2)
        found += int(joined.max() == 1)
    assert found <= 2
