"""`join_transient_pairs`: adjacent clusters joined until every adjacent pair's split is
metastable, and the density look that uses it."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.cluster._density_walk import density_weighted, log_density
from graphclust.cluster._markov_selection import metastability
from graphclust.cluster._metastable_pairs import (BASIN_MIN_DEPTH, join_transient_pairs,
                                                  valley_depths)
from graphclust.graphs import nearest_neighbors


def _depth(A, labels, lp, i, j):
    # the pair's valley from its definition: the estimate averaged over each point and its
    # neighbours, the lesser peak of the two, the highest pass over their edges
    adj = A > 0
    f = (adj @ lp + lp) / (adj.sum(axis=1) + 1.0)
    passes = [min(f[u], f[v]) for u in np.flatnonzero(labels == i)
              for v in np.flatnonzero(labels == j) if adj[u, v]]
    return min(f[labels == i].max(), f[labels == j].max()) - max(passes)


def _reference(W, labels, lp=None):
    # every adjacent pair measured again after each join, on dense arrays, clusters renumbered
    A = W.toarray()
    labels = np.unique(labels, return_inverse=True)[1]
    while True:
        c = labels.max() + 1
        best = None
        for i in range(c):
            for j in range(i + 1, c):
                a, b = labels == i, labels == j
                if A[np.ix_(a, b)].sum() <= 0:
                    continue
                if lp is not None and _depth(A, labels, lp, i, j) >= BASIN_MIN_DEPTH:
                    continue
                union = np.flatnonzero(a | b)
                q = metastability(sp.csr_matrix(A[np.ix_(union, union)]),
                                  (labels[union] == j).astype(int), exact=True)[0]
                if np.isfinite(q) and q <= 0 and (best is None or q < best[0]):
                    best = (q, i, j)
        if best is None:
            return labels
        labels = np.unique(np.where(labels == best[2], best[1], labels), return_inverse=True)[1]


def _same_partition(a, b):
    _, first = np.unique(a, return_index=True)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(np.unique(a)) == len(np.unique(b)) and first.size == len(pairs)


def _strip(seed, n=400):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2)) * [8.0, 1.0]
    return X, np.minimum((X[:, 0] // 2).astype(int), 3)


def _density_graph(X, k=10):
    idx, dist = nearest_neighbors(X, k, method="exact")
    W = gc.fuzzy_affinity(gc.knn_graph(X, k))
    return sp.csr_matrix(density_weighted(W, dist[:, -1], 2.0))


@pytest.mark.parametrize("seed", range(5))
def test_quarters_of_a_uniform_strip_join_into_one(seed):
    # even density: no basin; the union of two quarters mixes no faster than it is left
    X, quarters = _strip(seed)
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    assert np.all(join_transient_pairs(W, quarters) == 0)


def test_two_basins_of_the_density_stay_apart():
    # two unit Gaussians 3 deviations apart, cut at the valley, on the walk that sees density
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + [3.0, 0.0]])
    halves = (X[:, 0] > 1.5).astype(int)
    W = _density_graph(X)
    assert metastability(W, halves, exact=True)[0] > 0
    np.testing.assert_array_equal(join_transient_pairs(W, halves), halves)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), c=st.integers(2, 6), valleys=st.booleans())
def test_equals_the_plain_reference(seed, c, valleys):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(120, 2)) * [4.0, 1.0]
    X[:40] *= 0.5  # a denser corner
    W = _density_graph(X, 8)
    labels = rng.integers(0, c, size=120)
    labels[np.argsort(X[:, 0])] = np.sort(labels)  # contiguous bands along x
    # with valleys: a rough density, so that some pairs' valleys are deep enough and others not
    lp = rng.normal(scale=4.0, size=120) if valleys else None
    got = join_transient_pairs(W, labels, lp)
    assert _same_partition(got, _reference(W, labels, lp))
    # a coarsening of the input, numbered by first appearance
    assert all(np.unique(got[labels == i]).size == 1 for i in np.unique(labels))
    assert np.array_equal(np.unique(got, return_index=True)[1],
                          np.sort(np.unique(got, return_index=True)[1]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), c=st.integers(2, 5))
def test_valley_depths_match_their_definition(seed, c):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(60, 2))
    W = _density_graph(X, 5)
    labels = np.unique(rng.integers(0, c, size=60), return_inverse=True)[1]
    lp = rng.normal(size=60)
    peaks, passes = valley_depths(W, labels, lp)
    A = W.toarray()
    pairs = {(i, j) for i in range(labels.max() + 1) for j in range(i + 1, labels.max() + 1)
             if A[np.ix_(labels == i, labels == j)].sum() > 0}
    assert set(passes) == pairs
    for i, j in pairs:
        np.testing.assert_allclose(min(peaks[i], peaks[j]) - passes[i, j],
                                   _depth(A, labels, lp, i, j), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_two_long_bands_across_a_sparse_gap_stay_apart(seed):
    # each band (16 x 1) mixes along itself more slowly than the walk crosses the gap (0.8
    # wide, 6 % of their density): Q <= 0, so the time scales alone join them; the density
    # falls between them by more than an e-fold, so they are two basins
    rng = np.random.default_rng(seed)
    bands = [rng.uniform(size=(1600, 2)) * [16.0, 1.0] + [0.0, y0] for y0 in (0.0, 1.8)]
    gap = rng.uniform(size=(96, 2)) * [16.0, 0.8] + [0.0, 1.0]
    X = np.vstack(bands + [gap])
    halves = (X[:, 1] > 1.4).astype(int)
    idx, dist = nearest_neighbors(X, 10, method="exact")
    W = sp.csr_matrix(density_weighted(gc.fuzzy_affinity(gc.knn_graph(X, 10)), dist[:, -1], 2.0))
    lp = log_density(dist[:, -1], 2.0)
    assert metastability(W, halves, exact=True)[0] <= 0
    peaks, passes = valley_depths(W, halves, lp)
    assert min(peaks) - passes[0, 1] >= BASIN_MIN_DEPTH
    assert np.all(join_transient_pairs(W, halves) == 0)
    np.testing.assert_array_equal(join_transient_pairs(W, halves, lp), halves)


@pytest.mark.parametrize("seed", range(5))
def test_quarters_of_a_uniform_strip_are_no_valleys(seed):
    # an even density's cuts are shallow: the depth leaves them to the time scales
    X, quarters = _strip(seed)
    idx, dist = nearest_neighbors(X, 10, method="exact")
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    assert np.all(join_transient_pairs(W, quarters, log_density(dist[:, -1], 2.0)) == 0)


def test_the_same_partition_for_any_node_order():
    X, quarters = _strip(3)
    X[:100] *= [1.0, 0.3]  # some structure, so that not everything joins
    W = _density_graph(X)
    base = join_transient_pairs(W, quarters)
    perm = np.random.default_rng(1).permutation(X.shape[0])
    got = join_transient_pairs(W[perm][:, perm], quarters[perm])
    assert _same_partition(got, base[perm])


def test_clusters_that_share_no_edge_are_left_alone():
    A = np.zeros((8, 8))
    A[:4, :4] = A[4:, 4:] = 1.0
    np.fill_diagonal(A, 0.0)
    labels = np.repeat([1, 0], 4)
    np.testing.assert_array_equal(join_transient_pairs(sp.csr_matrix(A), labels),
                                  np.repeat([0, 1], 4))
    np.testing.assert_array_equal(labels, np.repeat([1, 0], 4))  # the input is left as it was


def _disk_in_ring(n=4000, seed=0, r_disk=4.6, r0=4.95, r1=10.0, frac=0.2):
    # a disk inside an annulus of the same density, a thin gap between them
    rng = np.random.default_rng(seed)
    m = int(n * frac)
    r = np.r_[r_disk * np.sqrt(rng.uniform(size=m)), np.sqrt(rng.uniform(r0**2, r1**2, n - m))]
    t = rng.uniform(0.0, 2.0 * np.pi, size=n)
    return np.c_[r * np.cos(t), r * np.sin(t)], np.repeat([1, 0], [m, n - m])


def test_the_density_look_does_not_answer_with_slices_of_a_disk_in_a_ring():
    # the walk that sees density cut this draw into five slices of disk and ring alike (each
    # cluster 18-22 % disk), unwarned: no slice is a basin, their pairs join into one, and
    # the look finds nothing
    X, y = _disk_in_ring()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    share = [y[model.labels_ == i].mean() for i in range(model.n_clusters_)]
    sliced = max(share) < 0.5
    assert not sliced or any(issubclass(x.category, gc.StabilityWarning) for x in w)
    assert model.density_exponent_ is None
