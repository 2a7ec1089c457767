"""The consistency kernel U = beta (I - alpha S)^-1: deflated CG, dense mode, column norms."""

import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc
from graphclust.datasets import three_moons
from graphclust.kernels import CGConvergenceWarning, ConsistencyKernel, deflated_cg


@pytest.fixture(scope="module")
def small_W():
    X, _ = three_moons(300, noise=0.12, random_state=3)
    return gc.affinity(gc.knn_graph(X, 8))


def dense_U(W, alpha):
    S, _ = gc.normalized_adjacency(W)
    n = S.shape[0]
    return (1 - alpha) * np.linalg.inv(np.eye(n) - alpha * S.toarray())


@pytest.mark.parametrize("method", ["dense", "cg"])
@pytest.mark.parametrize("alpha", [0.5, 0.99, 0.99999])
def test_apply_matches_explicit_inverse(small_W, method, alpha):
    U = dense_U(small_W, alpha)
    K = ConsistencyKernel(small_W, alpha, method=method, rtol=1e-11, random_state=0)
    B = np.random.default_rng(1).normal(size=(300, 7))
    got = K.apply(B)
    assert np.abs(got - U @ B).max() <= 1e-8 * np.abs(U @ B).max()
    # one column as a 1-D array
    assert np.allclose(K.apply(B[:, 0]), U @ B[:, 0], rtol=0, atol=1e-8 * np.abs(U @ B).max())


def test_with_alpha_shares_the_spectrum(small_W):
    K = ConsistencyKernel(small_W, 0.9, method="cg", random_state=0)
    K2 = K.with_alpha(0.999)
    assert K2.spectrum is K.spectrum and K2.alpha == 0.999
    U = dense_U(small_W, 0.999)
    e = np.zeros(300)
    e[5] = 1
    assert np.allclose(K2.apply(e), U[:, 5], atol=1e-9)


def test_cg_stopping_rule_is_met_exactly_as_documented():
    rng = np.random.default_rng(0)
    n = 200
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T / n + np.eye(n)
    B = rng.normal(size=(n, 3))
    X, info = deflated_cg(lambda P: A @ P, B, rtol=1e-9)
    res = np.linalg.norm(B - A @ X, axis=0)
    assert np.all(res <= 1e-9 * np.linalg.norm(B, axis=0))
    assert np.allclose(info.residuals, res / np.linalg.norm(B, axis=0))
    assert info.converged.all()


def test_deflation_basis_of_any_quality_gives_the_same_solution():
    rng = np.random.default_rng(0)
    n = 150
    Q = rng.normal(size=(n, n))
    A = Q @ Q.T / n + 0.01 * np.eye(n)
    B = rng.normal(size=(n, 2))
    exact = np.linalg.solve(A, B)
    for basis in [np.linalg.eigh(A)[1][:, :10], np.linalg.qr(rng.normal(size=(n, 5)))[0]]:
        X, info = deflated_cg(lambda P: A @ P, B, basis=basis, rtol=1e-11)
        assert info.converged.all()
        assert np.allclose(X, exact, atol=1e-6 * np.abs(exact).max())


def test_cg_warns_with_achieved_and_requested_tolerance(small_W):
    K = ConsistencyKernel(small_W, 0.999, method="cg", n_eigenpairs=1, maxiter=2, random_state=0)
    with pytest.warns(CGConvergenceWarning, match=r"achieved relative residual .* requested rtol = 1\.0e-10"):
        out = K.apply(np.ones(300))
    assert np.all(np.isfinite(out))


def test_zero_right_hand_side_returns_zero():
    X, info = deflated_cg(lambda P: 2 * P, np.zeros((5, 2)))
    assert np.all(X == 0) and info.converged.all()


@pytest.mark.parametrize("method", ["dense", "cg"])
def test_exact_column_norms(small_W, method):
    U = dense_U(small_W, 0.99)
    K = ConsistencyKernel(small_W, 0.99, method=method, rtol=1e-12, random_state=0)
    norms = K.column_norms("exact", block_size=64)
    assert norms.method == ("dense" if method == "dense" else "solve")
    assert np.allclose(norms.nu, np.linalg.norm(U, axis=0), rtol=1e-9, atol=0)
    assert norms.max_relative_error == 0


def test_estimated_column_norms_report_their_error(small_W):
    U = dense_U(small_W, 0.999)
    nu = np.linalg.norm(U, axis=0)
    K = ConsistencyKernel(small_W, 0.999, method="cg", n_eigenpairs=32, random_state=0)
    est = K.column_norms("estimate", n_probes=64)
    err = np.abs(est.nu / nu - 1)
    assert est.method == "estimate"
    assert err.max() < 1e-2
    # the reported standard error is the right size: the actual error stays within 5 of them
    assert np.all(err <= 5 * est.relative_error + 1e-6)
    # top part + remainder: the exactly computed top-K part is a lower bound of nu^2
    assert np.all(est.top_fraction <= 1 + 1e-12)
    assert est.remainder_bound > 0
    # the same probe seed gives the same estimate (common random numbers across alpha)
    again = K.column_norms("estimate", n_probes=64, random_state=0)
    assert np.array_equal(again.nu, K.column_norms("estimate", n_probes=64, random_state=0).nu)


def test_isolated_vertex_is_its_own_point():
    W = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0.0]]))
    K = ConsistencyKernel(W, 0.9, method="dense")
    e = np.array([0, 0, 0, 1.0])
    assert np.allclose(K.apply(e), 0.1 * e)


def test_bad_kernel_input(small_W):
    with pytest.raises(ValueError, match=r"alpha must satisfy alpha in \(0, 1\); got 1.0"):
        ConsistencyKernel(small_W, 1.0)
    with pytest.raises(ValueError, match="method must be one of"):
        ConsistencyKernel(small_W, 0.5, method="cholesky")
    big = sp.identity(5001, format="csr")
    with pytest.raises(ValueError, match="method='dense' forms n x n arrays; n = 5001"):
        ConsistencyKernel(big, 0.5, method="dense")
    K = ConsistencyKernel(small_W, 0.5, method="dense")
    with pytest.raises(ValueError, match="needs a cg kernel"):
        K.column_norms("estimate")
    with pytest.raises(ValueError, match="B must have 300 rows"):
        K.apply(np.ones(299))


def test_init_and_full_deflation_agree_on_an_eigenbasis(small_W):
    S, _ = gc.normalized_adjacency(small_W)
    spec = gc.top_eigenpairs(S, 20, method="dense")
    A = lambda P: P - 0.999 * (S @ P)  # noqa: E731
    B = np.random.default_rng(2).normal(size=(300, 4))
    X_full, i_full = deflated_cg(A, B, basis=spec.vectors, rtol=1e-11, deflation="full")
    X_init, i_init = deflated_cg(A, B, basis=spec.vectors, rtol=1e-11, deflation="init")
    assert i_full.converged.all() and i_init.converged.all()
    assert np.allclose(X_full, X_init, rtol=0, atol=1e-8 * np.abs(X_full).max())
    with pytest.raises(ValueError, match="deflation must be one of"):
        deflated_cg(A, B, basis=spec.vectors, deflation="some")


def test_estimated_norms_with_an_approximate_basis(small_W):
    """Regression: with a basis that is not an invariant subspace, the top part of nu^2 comes
    from solves and the remainder from U P z (not P U P z), so the estimate stays unbiased."""
    U = dense_U(small_W, 0.999)
    nu = np.linalg.norm(U, axis=0)
    K = ConsistencyKernel(small_W, 0.999, method="cg", n_eigenpairs=16, random_state=0)
    rng = np.random.default_rng(0)
    rough = np.linalg.qr(K.spectrum.vectors + 1e-2 * rng.normal(size=K.spectrum.vectors.shape))[0]
    K._basis.spectrum.vectors = rough
    K._basis.S_vectors = K.S @ rough
    K._A_basis = rough - K.alpha * K._basis.S_vectors
    K._deflation = "full"
    est = K.column_norms("estimate", n_probes=64)
    assert np.abs(est.nu / nu - 1).max() < 2e-2
    e = np.zeros(300)
    e[7] = 1
    assert np.allclose(K.apply(e), U[:, 7], atol=1e-8)
