"""top_eigenpairs: solvers agree with the dense reference; deflation; warnings; bad input."""

import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc
from graphclust.kernels import _spectrum
from _spectral_helpers import assert_orthonormal


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _knn_S(n=400, seed=0, k=8, blobs=1):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(10 * b, 1.0, (n // blobs, 3)) for b in range(blobs)])
    W = gc.affinity(gc.knn_graph(X, k))
    return gc.normalized_adjacency(W)[0], W


@pytest.mark.parametrize("method", ["eigsh", "lobpcg"])
def test_iterative_solvers_match_dense(method):
    S, _ = _knn_S()
    ref = gc.top_eigenpairs(S, 12, method="dense")
    got = gc.top_eigenpairs(S, 12, method=method, tol=1e-10, random_state=0)
    np.testing.assert_allclose(got.values, ref.values, atol=1e-7)
    assert np.all(np.diff(got.values) <= 1e-12)  # descending
    assert_orthonormal(got.vectors, atol=1e-6)
    # stated contract: residuals are the achieved accuracy
    R = S @ got.vectors - got.vectors * got.values
    np.testing.assert_allclose(np.linalg.norm(R, axis=0), got.residuals, rtol=1e-6, atol=1e-12)
    assert got.residuals.max() < 1e-5


def test_dense_residuals_tiny_and_exact_eigenvalue_one():
    S, _ = _knn_S()
    spec = gc.top_eigenpairs(S, 5, method="dense")
    assert spec.method == "dense"
    assert abs(spec.values[0] - 1.0) < 1e-12  # connected graph: mu_1 = 1
    assert spec.residuals.max() < 1e-10


def test_seeded_eigsh_is_deterministic():
    S, _ = _knn_S()
    a = gc.top_eigenpairs(S, 6, method="eigsh", random_state=3)
    b = gc.top_eigenpairs(S, 6, method="eigsh", random_state=3)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.vectors, b.vectors)


def test_deflation_removes_multiple_top_eigenvalue_exactly():
    # three separate blobs: eigenvalue 1 of S has multiplicity 3, the Lanczos trap
    S, W = _knn_S(n=600, blobs=3)
    form = gc.symmetric_form(W, "sym")
    assert form.n_components == 3
    Z = form.trivial
    np.testing.assert_allclose((S @ Z - Z).toarray(), 0, atol=1e-12)
    for method in ("dense", "eigsh"):
        spec = gc.top_eigenpairs(S, 8, method=method, random_state=0, deflate=Z)
        assert spec.values[0] < 1 - 1e-6  # no trivial eigenvalue returned
        np.testing.assert_allclose(Z.T @ spec.vectors, 0, atol=1e-6)
    dense_all = np.linalg.eigvalsh(S.toarray())[::-1]
    np.testing.assert_allclose(spec.values, dense_all[3:11], atol=1e-7)


def test_deflated_count_limits_n_eigenpairs():
    S, W = _knn_S(n=60, blobs=3, k=5)
    Z = gc.symmetric_form(W, "sym").trivial
    spec = gc.top_eigenpairs(S, 57, method="dense", deflate=Z)
    assert spec.n_eigenpairs == 57
    with pytest.raises(ValueError, match="n_eigenpairs must satisfy 1 <= n_eigenpairs <= 57"):
        gc.top_eigenpairs(S, 58, deflate=Z)


def test_non_convergence_is_completed_and_warned(monkeypatch):
    import scipy.sparse.linalg as spla

    S, _ = _knn_S()

    def no_convergence(*args, **kwargs):
        raise spla.ArpackNoConvergence("forced", np.array([]), np.zeros((S.shape[0], 0)))

    def poor_lobpcg(op, k, vals0, vecs0, tol, rng, n_defl=0):
        X = np.linalg.qr(rng.standard_normal((op.shape[0], k)))[0]
        return np.linspace(1, 0.5, k), X

    monkeypatch.setattr(_spectrum.spla, "eigsh", no_convergence)
    monkeypatch.setattr(_spectrum, "_lobpcg", poor_lobpcg)
    with pytest.warns(gc.SpectrumConvergenceWarning, match=r"largest residual .* requested tol"):
        spec = gc.top_eigenpairs(S, 4, method="eigsh", random_state=0)
    assert spec.method == "lobpcg"
    assert np.all(np.isfinite(spec.values))


def test_arpack_failure_falls_back_to_lobpcg_and_converges(monkeypatch):
    import scipy.sparse.linalg as spla

    S, _ = _knn_S()
    real = spla.eigsh

    def tiny_maxiter(*args, **kwargs):
        kwargs["maxiter"] = 1
        return real(*args, **kwargs)

    monkeypatch.setattr(_spectrum.spla, "eigsh", tiny_maxiter)
    spec = gc.top_eigenpairs(S, 4, method="eigsh", tol=1e-6, random_state=0)
    ref = gc.top_eigenpairs(S, 4, method="dense")
    assert spec.method == "lobpcg"
    np.testing.assert_allclose(spec.values, ref.values, atol=1e-5)


def test_bad_input_messages():
    S, _ = _knn_S(n=50, k=5)
    with pytest.raises(ValueError, match="method must be one of 'auto', 'dense', 'eigsh', 'lobpcg'"):
        gc.top_eigenpairs(S, 3, method="arnoldi")
    with pytest.raises(ValueError, match="n_eigenpairs must satisfy 1 <= n_eigenpairs <= 50"):
        gc.top_eigenpairs(S, 51)
    with pytest.raises(ValueError, match="eigsh needs n_eigenpairs < n - 1"):
        gc.top_eigenpairs(S, 49, method="eigsh")
    with pytest.raises(ValueError, match="deflate must have 50 rows"):
        gc.top_eigenpairs(S, 3, deflate=np.ones((10, 1)))


def test_dense_refuses_large_n():
    S = sp.identity(20_001, format="csr")
    with pytest.raises(ValueError, match="above the 20000 limit"):
        gc.top_eigenpairs(S, 2, method="dense")


def test_normalized_adjacency_isolated_vertex_zero_row():
    W = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=float))
    S, d = gc.normalized_adjacency(W)
    assert d.tolist() == [1.0, 1.0, 0.0]
    assert S[2].nnz == 0


@pytest.mark.parametrize("deflated", [False, True])
def test_shift_invert_matches_dense_on_a_pixel_grid(deflated):
    """Shift-invert Lanczos (crowded top spectrum of a grid) against numpy's eigh, 1e-10."""
    from graphclust.kernels import normalized_adjacency, top_eigenpairs

    img = np.random.default_rng(3).uniform(size=(25, 30))
    S, d = normalized_adjacency(gc.affinity(gc.grid_graph(img), sigma=1.0))
    Z = (np.sqrt(d) / np.linalg.norm(np.sqrt(d)))[:, None] if deflated else None
    ref = top_eigenpairs(S, 8, method="dense", deflate=Z)
    got = top_eigenpairs(S, 8, method="shift-invert", deflate=Z, upper=1.0, random_state=0)
    np.testing.assert_allclose(got.values, ref.values, atol=1e-10)
    assert got.residuals.max() < 1e-8 and got.method == "shift-invert"
    P = got.vectors @ got.vectors.T - ref.vectors @ ref.vectors.T
    assert np.abs(P).max() < 1e-6
