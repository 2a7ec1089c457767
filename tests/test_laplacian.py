"""Laplacian normalisations, their symmetric forms and truncated generalised spectra."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.cluster._spectral_reference import dense_laplacian_spectrum
from _spectral_helpers import assert_orthonormal

NORMS = ["nn", "sym", "rw", "fp", "lbn"]


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _W(n=300, seed=0, blobs=1, k=8):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(10 * b, 1.0, (n // blobs, 3)) for b in range(blobs)])
    return gc.affinity(gc.knn_graph(X, k))


def _dense_L(W, name):
    A = W.toarray()
    d = A.sum(1)
    if name == "nn":
        return np.diag(d) - A
    if name == "sym":
        return np.eye(len(d)) - A / np.sqrt(np.outer(d, d))
    a = {"rw": 0, "fp": 0.5, "lbn": 1}[name]
    Wa = A / np.outer(d**a, d**a)
    return np.eye(len(d)) - Wa / Wa.sum(1)[:, None]


@pytest.mark.parametrize("name", NORMS)
def test_laplacian_matches_definition(name):
    W = _W(80)
    L = gc.laplacian(W, name)
    assert sp.issparse(L)
    np.testing.assert_allclose(L.toarray(), _dense_L(W, name), atol=1e-12)
    if name != "sym":
        np.testing.assert_allclose(L @ np.ones(80), 0, atol=1e-12)


@pytest.mark.parametrize("name", NORMS)
@pytest.mark.parametrize("method", ["dense", "eigsh"])
def test_generalised_eigenpairs_match_dense_reference(name, method):
    W = _W()
    spec = gc.laplacian_eigenpairs(W, 15, name, method=method, random_state=0, tol=1e-12)
    ref_vals, ref_vecs, c = dense_laplacian_spectrum(W, name)
    assert c == 1 and spec.n_components == 1
    scale = 1.0 if name != "nn" else ref_vals[-1]
    np.testing.assert_allclose(spec.values, ref_vals[1:16], atol=1e-8 * scale)
    assert np.all(spec.values > 0) and np.all(np.diff(spec.values) >= -1e-12)
    # generalised eigen-equation L psi = lambda psi, and M-orthonormality
    L = gc.laplacian(W, name)
    R = L @ spec.vectors - spec.vectors * spec.values
    assert np.abs(R).max() < 1e-6 * scale
    assert_orthonormal(spec.vectors, spec.mass, atol=1e-8)


@pytest.mark.parametrize("name", NORMS)
def test_disconnected_graph_deflates_each_component(name):
    W = _W(n=240, blobs=3, k=6)
    spec = gc.laplacian_eigenpairs(W, 10, name, method="eigsh", random_state=0, tol=1e-12)
    ref_vals, _, c = dense_laplacian_spectrum(W, name)
    assert c == 3 and spec.n_components == 3
    np.testing.assert_allclose(ref_vals[:3], 0, atol=1e-9 * max(1.0, ref_vals[-1]))
    np.testing.assert_allclose(spec.values, ref_vals[3:13], atol=1e-7 * max(1.0, ref_vals[-1]))
    # returned vectors are M-orthogonal to every component's constant vector
    T = spec.trivial_vectors.toarray()
    np.testing.assert_allclose(T.T @ (spec.vectors * spec.mass[:, None]), 0, atol=1e-7)
    d = np.asarray(W.sum(axis=1)).ravel()
    for j in range(3):  # each trivial vector is constant on its component (sym: sqrt(d)), else 0
        col = T[:, j] / (np.sqrt(d) if name == "sym" else 1.0)
        on = col != 0
        assert np.ptp(col[on]) < 1e-12 and len(np.unique(spec.component_labels[on])) == 1


def test_symmetric_form_properties():
    W = _W(100)
    for name in NORMS:
        f = gc.symmetric_form(W, name)
        A = f.operator
        assert abs(A - A.T).max() == 0
        z = f.trivial.toarray()[:, 0]
        np.testing.assert_allclose(A @ z, f.shift * z, atol=1e-10 * f.shift)


def test_n_eigenpairs_bounds():
    W = _W(n=30, blobs=3, k=4)
    spec = gc.laplacian_eigenpairs(W, 27, "lbn")
    assert spec.n_eigenpairs == 27
    with pytest.raises(ValueError, match=r"n_eigenpairs <= n - n_components = 30 - 3 = 27"):
        gc.laplacian_eigenpairs(W, 28, "lbn")
    with pytest.raises(ValueError, match="n_eigenpairs must satisfy 1 <= n_eigenpairs"):
        gc.laplacian_eigenpairs(W, 0, "lbn")


def test_unknown_normalization_lists_valid_ones():
    with pytest.raises(ValueError, match="normalization must be one of 'fp', 'lbn', 'nn', 'rw', 'sym'"):
        gc.laplacian(_W(20, k=3), "lapl")
    with pytest.raises(ValueError, match="normalization must be one of"):
        gc.laplacian_eigenpairs(_W(20, k=3), 2, "LBN")


def test_isolated_vertex_is_refused_with_its_index():
    A = np.zeros((5, 5))
    A[0, 1] = A[1, 0] = A[1, 2] = A[2, 1] = A[3, 4] = A[4, 3] = 1.0
    A[3, 4] = A[4, 3] = 0.0
    with pytest.raises(ValueError, match=r"2 isolated vertex\(es\) with zero degree \(node\(s\) 3, 4\)"):
        gc.laplacian_eigenpairs(A, 1, "lbn")


def test_nan_and_asymmetric_affinity_refused():
    A = np.array([[0, 1.0, np.nan], [1.0, 0, 1], [np.nan, 1, 0]])
    with pytest.raises(ValueError, match="NaN or infinite"):
        gc.laplacian(A, "sym")
    B = np.array([[0, 1.0, 0], [2.0, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="must be symmetric"):
        gc.laplacian(B, "sym")


def test_seeded_eigenpairs_are_deterministic():
    W = _W(400)
    a = gc.laplacian_eigenpairs(W, 10, method="eigsh", random_state=7)
    b = gc.laplacian_eigenpairs(W, 10, method="eigsh", random_state=7)
    np.testing.assert_array_equal(a.vectors, b.vectors)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 30), density=st.floats(0.05, 0.6), noise=st.sampled_from([0.0, 1e-13]),
       diagonal=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_symmetric_adjacency_check_against_dense(n, density, noise, diagonal, seed):
    """The one-transpose check: exactly symmetric values (pairs within the tolerance averaged),
    the diagonal dropped, explicit zeros kept as edges, sorted indices; dense reference."""
    from graphclust._validation import check_symmetric_adjacency

    rng = np.random.default_rng(seed)
    mask = np.triu(rng.random((n, n)) < density, 1)
    mask = mask | mask.T
    vals = np.triu(rng.random((n, n)), 1)
    vals = vals + vals.T
    vals[mask & (rng.random((n, n)) < 0.1)] = 0.0  # some stored zeros (mirrored below)
    vals = np.triu(vals, 1) + np.triu(vals, 1).T
    dense = np.where(mask, vals * (1 + noise * rng.standard_normal((n, n))), 0.0)
    rows, cols = np.nonzero(mask | (np.eye(n, dtype=bool) & diagonal))
    if diagonal:
        dense[np.diag_indices(n)] = 5.0
    A = sp.csr_matrix((dense[rows, cols], (rows, cols)), shape=(n, n))
    got = check_symmetric_adjacency(A)
    for i in range(n):  # sorted, no duplicates
        assert np.all(np.diff(got.indices[got.indptr[i]:got.indptr[i + 1]]) > 0)
    assert (got != got.T).nnz == 0
    expected = (dense + dense.T) / 2
    np.fill_diagonal(expected, 0.0)
    np.testing.assert_allclose(got.toarray(), expected, rtol=1e-12, atol=0)
    stored = np.zeros((n, n), dtype=bool)
    stored[np.repeat(np.arange(n), np.diff(got.indptr)), got.indices] = True
    np.testing.assert_array_equal(stored, mask)  # explicit zeros are edges; no diagonal


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 25), seed=st.integers(0, 2**31 - 1))
def test_diagonal_scaling_is_exactly_symmetric_and_matches_dense(n, seed):
    from graphclust.kernels import diagonal_scaling

    rng = np.random.default_rng(seed)
    M = np.triu(rng.random((n, n)) * (rng.random((n, n)) < 0.4))
    M = M + M.T
    s = rng.random(n) * 10.0 ** rng.integers(-3, 4, size=n)
    got = diagonal_scaling(sp.csr_matrix(M), s)
    assert (got != got.T).nnz == 0
    np.testing.assert_allclose(got.toarray(), np.diag(s) @ M @ np.diag(s), rtol=1e-14, atol=0)
    # in place on a CSR copy of one's own: the same matrix, W itself written over
    W = sp.csr_matrix(M)
    mine = diagonal_scaling(W, s, overwrite=True)
    assert mine is W
    assert (mine != got).nnz == 0
    assert np.array_equal(mine.indptr, got.indptr) and np.array_equal(mine.indices, got.indices)
