"""fuzzy_affinity (UMAP's fuzzy union) and jaccard_affinity (shared neighbours) on kNN graphs,
against plain-Python references."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc


def _lists(X, k):
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(D, idx, axis=1)


def fuzzy_reference(X, k):
    """UMAP's section 3.1 written out in Python: rho, sigma by bisection, probabilistic union."""
    idx, dist = _lists(X, k)
    n = len(X)
    target = math.log2(k + 1)
    a = np.zeros((n, n))
    for i in range(n):
        rho = min(d for d in dist[i] if d > 0)
        lo, hi, mid = 0.0, math.inf, 1.0
        for _ in range(64):
            s = sum(math.exp(-(d - rho) / mid) if d > rho else 1.0 for d in dist[i])
            if abs(s - target) < 1e-5:
                break
            if s > target:
                hi = mid
                mid = (lo + hi) / 2
            else:
                lo = mid
                mid = mid * 2 if hi == math.inf else (lo + hi) / 2
        sigma = max(mid, 1e-3 * dist[i].mean())
        for j, d in zip(idx[i], dist[i]):
            a[i, j] = math.exp(-max(d - rho, 0.0) / sigma)
    return a + a.T - a * a.T


def jaccard_reference(X, k):
    idx, _ = _lists(X, k)
    n = len(X)
    N = [set(idx[i]) | {i} for i in range(n)]
    W = np.zeros((n, n))
    for i in range(n):
        for j in idx[i]:
            W[i, j] = W[j, i] = len(N[i] & N[j]) / len(N[i] | N[j])
    return W


@pytest.fixture(scope="module")
def points():
    return np.random.default_rng(0).normal(size=(120, 3))


@pytest.mark.parametrize("k", [3, 10])
def test_fuzzy_matches_the_reference(points, k):
    W = gc.fuzzy_affinity(gc.knn_graph(points, k))
    np.testing.assert_allclose(W.toarray(), fuzzy_reference(points, k), atol=1e-12)
    assert abs(W - W.T).max() < 1e-15 and W.diagonal().max() == 0


@pytest.mark.parametrize("k", [3, 10])
def test_jaccard_matches_the_reference(points, k):
    W = gc.jaccard_affinity(gc.knn_graph(points, k))
    np.testing.assert_allclose(W.toarray(), jaccard_reference(points, k), atol=1e-15)


def test_knn_lists_recover_the_directed_lists(points):
    g = gc.knn_graph(points, 6)
    idx, dist = gc.knn_lists(g)
    ridx, rdist = _lists(points, 6)
    np.testing.assert_array_equal(idx, ridx)
    np.testing.assert_allclose(dist, rdist, rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e-5, 1e5, 1e300])
def test_fuzzy_weights_do_not_depend_on_the_scale(points, scale):
    W = gc.fuzzy_affinity(gc.knn_graph(points, 8)).toarray()
    Ws = gc.fuzzy_affinity(gc.knn_graph(scale * points, 8)).toarray()
    # equal up to the bisection's stopping rule (|sum - log2(k + 1)| < 1e-5)
    np.testing.assert_allclose(Ws, W, atol=2e-5)


def test_duplicates_and_identical_points():
    X = np.zeros((20, 2))
    W = gc.fuzzy_affinity(gc.knn_graph(X, 5))
    assert np.all(np.isfinite(W.data)) and np.allclose(W.data, 1.0)
    J = gc.jaccard_affinity(gc.knn_graph(X, 5))
    assert J.nnz > 0 and np.all((J.data > 0) & (J.data <= 1))


def test_bad_input(points):
    with pytest.raises(TypeError, match="graphclust Graph"):
        gc.fuzzy_affinity(np.eye(3))
    g = gc.mst_graph(points)
    with pytest.raises(ValueError, match="n_neighbors"):
        gc.fuzzy_affinity(g)
    W = gc.fuzzy_affinity(g, n_neighbors=2)  # an explicit k reads any graph
    assert W.shape == (120, 120)


def test_the_list_forms_equal_the_graph_forms(points):
    idx, dist = gc.nearest_neighbors(points, 7)
    g = gc.knn_graph(points, 7)
    assert abs(gc.fuzzy_affinity_from_lists(idx, dist) - gc.fuzzy_affinity(g)).max() == 0
    assert abs(gc.jaccard_affinity_from_lists(idx) - gc.jaccard_affinity(g)).max() == 0
    rho, sigma = gc.fuzzy_scales(g)
    rho2, sigma2 = gc.fuzzy_scales_of_lists(dist)
    np.testing.assert_array_equal(rho, rho2)
    np.testing.assert_array_equal(sigma, sigma2)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 6), seed=st.integers(0, 2**31 - 1))
def test_property_fuzzy_union_is_scipys_formula_bit_for_bit(n, k, seed):
    # the numba union against A + A.T - A.multiply(A.T) with scipy (the previous code): lists
    # of distinct indices with padding, self-loops and zero weights mixed in
    import scipy.sparse as sp

    from graphclust.graphs._fuzzy import _fuzzy_union_csr

    rng = np.random.default_rng(seed)
    idx = np.array([rng.permutation(n + k)[:k] for _ in range(n)]) - k  # distinct, some < 0
    idx[idx < 0] = -1
    if seed % 3 == 0:  # a repeated neighbour in some rows: its weights are summed
        idx[::2, -1] = idx[::2, 0]
    a = rng.random((n, k)) * (rng.random((n, k)) > 0.2)  # some zero weights
    rows = np.repeat(np.arange(n), k)
    keep = idx.ravel() >= 0
    A = sp.csr_matrix((a.ravel()[keep], (rows[keep], idx.ravel()[keep])), shape=(n, n))
    A.sum_duplicates()
    A.setdiag(0.0)
    A.eliminate_zeros()
    At = A.T.tocsr()
    ref = sp.csr_matrix(A + At - A.multiply(At))
    ref.sort_indices()
    indptr, indices, data = _fuzzy_union_csr(idx, a)
    np.testing.assert_array_equal(indptr, ref.indptr)
    np.testing.assert_array_equal(indices, ref.indices)
    np.testing.assert_array_equal(data, ref.data)
