"""Tied distances in exact kNN lists: decided by the pair's key, not by the search (`_ties`)."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.graphs import nearest_neighbors
from graphclust.graphs._scale import centred_rescale
from graphclust.graphs._ties import rank_keys, pair_keys


def _reference_lists(X, k):
    """Dense reference: every other point sorted by (distance, pair key, number), the first k
    kept (copies of one point have equal keys: the first k + 1 copies are every copy's core).

    Distances by the direct formula on the search's points (`centred_rescale`), so that the
    ties are the same ties."""
    Y, s = centred_rescale(np.asarray(X, dtype=np.float64))
    keys = rank_keys(Y)
    n = Y.shape[0]
    idx = np.empty((n, k), dtype=np.int64)
    dist = np.empty((n, k))
    for i in range(n):
        others = np.delete(np.arange(n), i)
        d = np.sqrt(((Y[others] - Y[i]) ** 2).sum(axis=1))
        key = pair_keys(keys, i, others)
        order = np.lexsort((others, key, d))[:k]  # equal keys: copies of one point
        idx[i], dist[i] = others[order], d[order] * s
    return idx, dist


def _lattice(n, d, values, seed):
    return np.random.default_rng(seed).integers(0, values, size=(n, d)).astype(np.float64)


def _distinct(X):
    return X[np.sort(np.unique(X, axis=0, return_index=True)[1])]


def _assert_lists_are_the_references(X, k):
    if k >= X.shape[0] // 2:  # scikit-learn searches by brute force there: ties by row number
        return
    idx, dist = nearest_neighbors(X, k, method="exact")
    ref_idx, ref_dist = _reference_lists(X, k)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-12, atol=0)
    assert np.array_equal(idx, ref_idx)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(12, 80), d=st.integers(1, 6), values=st.integers(2, 4),
       k=st.integers(1, 10), seed=st.integers(0, 2**16))
def test_exact_lists_of_tied_points_match_the_dense_reference(n, d, values, k, seed):
    # distinct points of a few values per feature: ties at almost every k-th distance. The
    # rule is a tree search's (scikit-learn's choice below 16 features and k < n / 2)
    _assert_lists_are_the_references(_distinct(_lattice(n, d, values, seed)), k)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(12, 80), d=st.integers(1, 3), k=st.integers(1, 10),
       seed=st.integers(0, 2**16))
def test_exact_lists_of_repeated_points_match_the_dense_reference(n, d, k, seed):
    # copies at distance 0, some points with more than k of them: the copies a list keeps
    # are the first k + 1 copies but itself, one core for all
    _assert_lists_are_the_references(_lattice(n, d, 2, seed), k)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(15, 60), d=st.integers(2, 5), seed=st.integers(0, 2**16),
       scale=st.integers(1, 1000), shift=st.integers(-10**6, 10**6),
       tiny=st.sampled_from([1.0, 2.0**-1000]))
def test_tied_lists_follow_a_row_permutation_a_scale_and_a_shift(n, d, seed, scale, shift, tiny):
    # a scale and a shift that keep the ties exact in floating point (integers, powers of
    # two): a shift such as 0.42 rounds the tied lengths apart, as it would any lengths
    X = _distinct(_lattice(n, d, 3, seed))
    scale, shift = scale * tiny, shift * tiny
    if X.shape[0] < 12:  # brute force below (see above)
        return
    p = np.random.default_rng(seed + 1).permutation(X.shape[0])
    inv = np.argsort(p)
    a, _ = nearest_neighbors(X, 5, method="exact")
    b, _ = nearest_neighbors(X[p] * scale + shift, 5, method="exact")
    # b's rows are a's rows permuted, with b's indices renamed through the permutation
    assert np.array_equal(p[b[inv]], a)


def test_the_choice_among_ties_is_symmetric_and_favours_no_feature():
    # the 10-cube's vertices: every vertex has 10 neighbours at distance 1, 45 at sqrt(2)
    X = ((np.arange(1024)[:, None] >> np.arange(10)) & 1).astype(float)
    idx, dist = nearest_neighbors(X, 15, method="exact")
    assert np.all(dist[:, :10] == 1) and np.all(dist[:, 10:] == np.sqrt(2))
    # the 5 slots at sqrt(2) go by the pair's key: i keeps j when j keeps i more often than
    # chance (a key of the neighbour alone would make every point pick the same few)
    picked = set(zip(np.repeat(np.arange(1024), 5), idx[:, 10:].ravel()))
    mutual = np.mean([(j, i) in picked for i, j in picked])
    assert mutual > 5 / 45 * 1.5
    indegree = np.bincount(idx[:, 10:].ravel(), minlength=1024)
    assert indegree.max() <= 20  # 5 on average; a hub would be listed by most of its 45
    # no feature is preferred: the k-d tree's lists agreed with a point on its first
    # feature 93 % of the time and on its last 80 %
    agree = (X[np.repeat(np.arange(1024), 15)] == X[idx.ravel()]).mean(axis=0)
    assert agree.max() - agree.min() < 0.03


def test_lists_without_ties_are_those_of_the_search():
    X = np.random.default_rng(0).normal(size=(300, 3))
    idx, dist = nearest_neighbors(X, 10, method="exact")
    d = np.linalg.norm(X[:, None] - X[None], axis=2)
    np.fill_diagonal(d, np.inf)
    assert np.array_equal(idx, np.argsort(d, axis=1)[:, :10])


def test_uniform_binary_data_gives_no_confident_clusters_whatever_the_feature_order():
    # a k-d tree's ties kept the neighbours on the query's side of its first cut (the first
    # feature): the fit answered with that feature's two halves, unwarned (12 features,
    # 1 000 rows, seed 2). With ties by the pair's key: one cluster or a warning, for the
    # features in any order
    X = (np.random.default_rng(2).random((1000, 12)) > 0.5).astype(float)
    for perm in (np.arange(12), np.arange(12)[::-1]):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model = gc.StabilityClustering(random_state=0).fit(X[:, perm])
        warned = any(issubclass(w.category, gc.StabilityWarning) for w in caught)
        assert model.n_clusters_ == 1 or warned
