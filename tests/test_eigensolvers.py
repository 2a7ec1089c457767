"""`top_eigenpairs` solvers against the dense reference, on connected and nearly disconnected graphs.

Contract checked: every iterative solver returns the dense eigenvalues within 1e-6 (relative to
||S|| = 1) and residuals ||S v - mu v|| <= 1e-6, with the components' vectors deflated.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.kernels import _amg, _spectrum
from graphclust.kernels._spectrum import top_eigenpairs

pytest.importorskip("pyamg")

TOL = 1e-6


def _form(X, k=8):
    return gc.symmetric_form(gc.affinity(gc.knn_graph(X, k, method="exact"), sigma=1.0), "sym")


def nearly_disconnected(n_blobs=6, per=150, seed=0):
    """Well-separated blobs joined by one weak bridge each: top eigenvalues crowd below 1."""
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(per, 3)) + 12.0 * i for i in range(n_blobs)])
    W = sp.lil_matrix(gc.affinity(gc.knn_graph(X, 8, method="exact"), sigma=1.0))
    for i in range(n_blobs - 1):
        a, b = i * per, (i + 1) * per
        W[a, b] = W[b, a] = 1e-4
    return gc.symmetric_form(sp.csr_matrix(W), "sym")


def connected_blob(seed=0):
    return _form(np.random.default_rng(seed).normal(size=(900, 3)))


def disconnected(seed=0):
    """Three components: the deflation basis has three columns."""
    rng = np.random.default_rng(seed)
    return _form(np.vstack([rng.normal(size=(300, 3)) + 40.0 * i for i in range(3)]))


@pytest.mark.parametrize("make", [connected_blob, nearly_disconnected, disconnected])
@pytest.mark.parametrize("method", ["eigsh", "lobpcg-amg"])
def test_iterative_solvers_match_dense(make, method):
    form = make()
    S, Z = form.operator, form.trivial
    ref = top_eigenpairs(S, 10, method="dense", deflate=Z)
    spec = top_eigenpairs(S, 10, method=method, deflate=Z, upper=1.0, tol=1e-9, random_state=0)
    assert spec.method == method
    np.testing.assert_allclose(spec.values, ref.values, atol=TOL)
    assert spec.residuals.max() <= TOL
    # orthonormal and orthogonal to the deflated component vectors
    V = spec.vectors
    np.testing.assert_allclose(V.T @ V, np.eye(10), atol=1e-6)
    assert np.abs(Z.T @ V).max() <= 1e-6


def _auto_on_small_graphs(monkeypatch, **constants):
    """`method="auto"`'s large-graph path (probe, hand-over) on a test-sized graph."""
    monkeypatch.setattr(_spectrum, "AMG_MIN_NODES", 10)
    monkeypatch.setattr(_spectrum, "DENSE_SPECTRUM_MAX_NODES", 10)
    for name, value in constants.items():
        monkeypatch.setattr(_spectrum, name, value)


def test_auto_falls_back_to_amg_when_arpack_stalls(monkeypatch):
    form = nearly_disconnected()
    ref = top_eigenpairs(form.operator, 8, method="dense", deflate=form.trivial)
    _auto_on_small_graphs(monkeypatch, AUTO_EIGSH_RESTARTS=1)
    spec = top_eigenpairs(form.operator, 8, deflate=form.trivial, upper=1.0, tol=1e-9,
                          random_state=0)
    assert spec.method == "eigsh+lobpcg-amg"
    np.testing.assert_allclose(spec.values, ref.values, atol=TOL)
    assert spec.residuals.max() <= TOL


def test_auto_hands_over_when_arpack_converges_no_pair(monkeypatch):
    # the probe, not the restart budget, ends ARPACK: no pair converged after one restart
    form = nearly_disconnected()
    ref = top_eigenpairs(form.operator, 8, method="dense", deflate=form.trivial)
    _auto_on_small_graphs(monkeypatch, AUTO_PROBE_RESTARTS=1)
    seen = {}
    real = _spectrum.lobpcg_amg

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(_spectrum, "lobpcg_amg", spy)
    spec = top_eigenpairs(form.operator, 8, deflate=form.trivial, upper=1.0, random_state=0)
    assert spec.method == "eigsh+lobpcg-amg"
    assert seen["start"] is None  # nothing converged to start from
    assert seen["tol"] == _spectrum.AUTO_TOL_LOBPCG_AMG  # tol="auto" loosens for LOBPCG-AMG
    np.testing.assert_allclose(spec.values, ref.values, atol=1e-5)
    assert spec.residuals.max() <= 1e-5


def test_auto_keeps_arpack_while_it_converges(monkeypatch):
    form = connected_blob()
    ref = top_eigenpairs(form.operator, 6, method="dense", deflate=form.trivial)
    _auto_on_small_graphs(monkeypatch)
    spec = top_eigenpairs(form.operator, 6, deflate=form.trivial, upper=1.0, random_state=0)
    assert spec.method == "eigsh"
    np.testing.assert_allclose(spec.values, ref.values, atol=TOL)


def test_probed_eigsh_is_eigsh_without_scipys_private_driver(monkeypatch):
    form = connected_blob()
    S = form.operator.tocsr()
    v0 = np.random.default_rng(0).uniform(-1, 1, S.shape[0])
    with_probe = _spectrum._probed_eigsh(S, 4, 1e-10, v0, 30, 1000)
    monkeypatch.setattr(_spectrum, "_arpack_driver", lambda *args: None)
    without = _spectrum._probed_eigsh(S, 4, 1e-10, v0, 30, 1000)
    np.testing.assert_allclose(np.sort(with_probe[0]), np.sort(without[0]), atol=1e-9)


@pytest.mark.parametrize("tol", ["fast", 0.0, -1e-8, float("nan")])
def test_tol_is_checked(tol):
    S = sp.diags([np.linspace(-1, 1, 50)], [0])
    with pytest.raises((ValueError, TypeError), match="tol"):
        top_eigenpairs(S, 3, tol=tol)


def test_auto_without_pyamg_warns_and_finishes(monkeypatch):
    form = nearly_disconnected()
    _auto_on_small_graphs(monkeypatch, AUTO_EIGSH_RESTARTS=1)
    monkeypatch.setattr(_spectrum, "amg_available", lambda: False)
    with pytest.warns(_spectrum.SpectrumPerformanceWarning, match=r"pip install graphclust\[amg\]"):
        spec = top_eigenpairs(form.operator, 8, deflate=form.trivial, tol=1e-9, random_state=0)
    assert spec.method == "eigsh" and spec.residuals.max() <= TOL


def test_lobpcg_amg_without_pyamg_says_how_to_install(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_pyamg(name, *args, **kwargs):
        if name == "pyamg":
            raise ImportError("no pyamg")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyamg)
    form = connected_blob()
    with pytest.raises(ImportError, match=r"pip install graphclust\[amg\]"):
        top_eigenpairs(form.operator, 3, method="lobpcg-amg", deflate=form.trivial)
    assert not _amg.amg_available()


def test_start_vectors_are_used_and_checked():
    form = nearly_disconnected()
    S, Z = form.operator, form.trivial
    first = top_eigenpairs(S, 6, method="lobpcg-amg", deflate=Z, upper=1.0, tol=1e-9,
                           random_state=0)
    again = top_eigenpairs(S, 6, method="lobpcg-amg", deflate=Z, upper=1.0, tol=1e-9,
                           random_state=1, start=first.vectors)
    np.testing.assert_allclose(again.values, first.values, atol=TOL)
    with pytest.raises(ValueError, match="start must be a finite"):
        top_eigenpairs(S, 6, method="lobpcg-amg", deflate=Z, start=np.ones((5, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        top_eigenpairs(S, 6, method="lobpcg", deflate=Z, start=first.vectors[:, :3], tol=1e-6,
                       random_state=0)


def test_estimators_take_lobpcg_amg_by_name():
    """The estimators take eigen_solver="lobpcg-amg" by name: the dense solver's partition."""
    X, _ = gc.datasets.three_moons(600, random_state=0)
    dense = gc.SpectralClustering(n_clusters=3, eigen_solver="dense", random_state=0).fit(X)
    amg = gc.SpectralClustering(n_clusters=3, eigen_solver="lobpcg-amg", random_state=0).fit(X)
    assert gc.metrics.clustering_error(dense.labels_, amg.labels_) == 0.0
    ahk = {solver: gc.AHKClustering(n_clusters=3, n_eigenpairs=10, eigen_solver=solver,
                                    random_state=0).fit(X).labels_
           for solver in ("dense", "lobpcg-amg")}
    assert gc.metrics.clustering_error(ahk["dense"], ahk["lobpcg-amg"]) == 0.0


@pytest.mark.parametrize("make", [connected_blob, nearly_disconnected])
@pytest.mark.parametrize("width", [1, 3, 10])
def test_block_vcycle_is_pyamgs_cycle_on_every_column(make, width):
    """The block V-cycle is pyamg's preconditioner applied column by column (to rounding)."""
    import pyamg

    from graphclust.kernels._vcycle import BlockProduct, BlockVCycle

    S = make().operator
    n = S.shape[0]
    A = (sp.identity(n, format="csr") * (1 + 1e-5) - S).tocsr()
    ml = pyamg.smoothed_aggregation_solver(A, **{**_amg.AMG_OPTIONS, "max_coarse": 20})
    assert len(ml.levels) >= 3  # a real recursion, not one smoothing and a coarse solve
    B = np.random.default_rng(width).normal(size=(n, width))
    M = ml.aspreconditioner(cycle="V")
    reference = np.column_stack([M @ col for col in B.T])
    out = BlockVCycle(ml)(B)
    assert out.shape == (n, width)
    np.testing.assert_allclose(out, reference, rtol=1e-10, atol=1e-12 * np.abs(reference).max())
    np.testing.assert_allclose(BlockVCycle(ml)(B[:, 0]), reference[:, 0], rtol=1e-10,
                               atol=1e-12 * np.abs(reference).max())
    np.testing.assert_allclose(BlockProduct(A)(B), A @ B, rtol=1e-12, atol=1e-14)
    # into a kept block holding garbage: the same result, in that block, twice in a row
    cycle, product = BlockVCycle(ml), BlockProduct(A)
    for _ in range(2):
        kept = np.full((n, width), np.nan)
        assert np.shares_memory(cycle(B, out=kept), kept)
        np.testing.assert_allclose(kept, out, rtol=1e-13, atol=0)
        kept[...] = np.nan
        assert np.shares_memory(product(B, out=kept), kept)
        np.testing.assert_allclose(kept, A @ B, rtol=1e-12, atol=1e-14)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300), b=st.integers(1, 6), extra=st.integers(0, 5),
       seed=st.integers(0, 2**31 - 1))
def test_ritz_residual_matches_numpy_on_column_slices(n, b, extra, seed):
    """R = AX - X theta and its column norms, from column slices of wider blocks (the LOBPCG
    basis), against numpy."""
    from graphclust.kernels._spmm import ritz_residual

    rng = np.random.default_rng(seed)
    Q, AQ = rng.normal(size=(n, b + extra)), rng.normal(size=(n, b + extra))
    theta = rng.normal(size=b)
    R = np.empty((n, b))
    norms = ritz_residual(AQ[:, :b], Q[:, :b], theta, R)
    expected = AQ[:, :b] - Q[:, :b] * theta
    np.testing.assert_allclose(R, expected, rtol=1e-15, atol=0)
    np.testing.assert_allclose(norms, np.linalg.norm(expected, axis=0), rtol=1e-12)


@pytest.mark.parametrize("blocks", [1, 3])
def test_block_vcycle_does_not_depend_on_the_thread_count(blocks):
    import numba
    import pyamg

    from graphclust.kernels._vcycle import BlockVCycle

    S = nearly_disconnected().operator
    n = S.shape[0]
    ml = pyamg.smoothed_aggregation_solver((sp.identity(n) * 1.00001 - S).tocsr(),
                                           **{**_amg.AMG_OPTIONS, "max_coarse": 20})
    B = np.random.default_rng(0).normal(size=(n, 7))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = BlockVCycle(ml, blocks=blocks)(B)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = BlockVCycle(ml, blocks=blocks)(B)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, many)


@pytest.mark.parametrize("blocks", [1, 2, 5])
def test_block_vcycle_is_symmetric_positive_definite(blocks):
    """What LOBPCG needs of a preconditioner, for pyamg's sweeps and the hybrid ones."""
    import pyamg

    from graphclust.kernels._vcycle import BlockVCycle

    S = _form(np.random.default_rng(0).normal(size=(400, 3))).operator  # connected
    n = S.shape[0]
    ml = pyamg.smoothed_aggregation_solver((sp.identity(n) * 1.00001 - S).tocsr(),
                                           **{**_amg.AMG_OPTIONS, "max_coarse": 20})
    M = BlockVCycle(ml, blocks=blocks)(np.eye(n))
    scale = np.abs(M).max()
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12 * scale)
    assert np.linalg.eigvalsh((M + M.T) / 2).min() > 0
    if blocks > 1:  # the hybrid sweep is another smoother, not pyamg's
        assert np.abs(M - BlockVCycle(ml)(np.eye(n))).max() > 1e-3 * scale


def _crowded(n=400, seed=0):
    """A symmetric matrix whose smallest eigenvalues form a continuum: 1e-4 (1 + j / 50)."""
    rng = np.random.default_rng(seed)
    values = np.concatenate([1e-4 * (1 + np.arange(40) / 50), rng.uniform(0.01, 2.0, n - 40)])
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return (Q * values) @ Q.T, np.sort(values)


@pytest.mark.parametrize("buffer", [0, 3])
@pytest.mark.parametrize("seed", [0, 1])
def test_block_lobpcg_matches_dense_on_a_crowded_spectrum(buffer, seed):
    """The k smallest pairs to the tolerance, whatever the buffer (its columns are not awaited)."""
    from graphclust.kernels._lobpcg import block_lobpcg

    A, values = _crowded(seed=seed)
    k = 6
    X0 = np.random.default_rng(seed).normal(size=(A.shape[0], k + buffer))
    M = np.linalg.inv(A + 1e-5 * np.eye(A.shape[0]))  # a shifted inverse, as AMG approximates
    vals, vecs, its, res = block_lobpcg(lambda x: A @ x, lambda r: M @ r, X0, k, tol=1e-9,
                                        maxiter=2000)
    assert its < 2000 and vecs.shape == (A.shape[0], k)
    assert np.all(res <= 1e-9)
    np.testing.assert_allclose(np.linalg.norm(A @ vecs - vecs * vals, axis=0), res, atol=1e-12)
    # eigenvalue error <= residual^2 / gap (here gaps >= 2e-6): well inside 1e-9
    np.testing.assert_allclose(vals, values[:k], rtol=0, atol=1e-9)
    np.testing.assert_allclose(vecs.T @ vecs, np.eye(k), atol=1e-10)


def test_block_lobpcg_projection_keeps_known_vectors_out():
    """With a projection, the known lowest eigenvector never comes back, even by rounding."""
    from graphclust.kernels._lobpcg import block_lobpcg

    A, values = _crowded(seed=2)
    w, V = np.linalg.eigh(A)
    z = V[:, :1]

    def project(x):
        x -= z @ (z.T @ x)
        return x

    X0 = np.random.default_rng(0).normal(size=(A.shape[0], 6))
    M = np.linalg.inv(A + 1e-5 * np.eye(A.shape[0]))  # amplifies z most: the projection's test
    vals, vecs, _, res = block_lobpcg(lambda x: A @ x, lambda r: M @ r, X0, 4, tol=1e-9,
                                      maxiter=2000, project=project)
    np.testing.assert_allclose(vals, w[1:5], rtol=0, atol=1e-9)
    assert np.abs(z.T @ vecs).max() < 1e-12


@settings(max_examples=40, deadline=None)
@given(width=st.integers(4, 12), p=st.integers(1, 4), seed=st.integers(0, 2**31 - 1))
def test_lobpcg_complement_spans_the_old_and_new_x(width, p, seed):
    """The new P's coefficients: G-orthonormal, G-orthogonal to the new X's, and with them
    spanning the old X (the first p basis vectors): the three-term recurrence, without any
    n-dimensional orthonormalisation."""
    from graphclust.kernels._lobpcg import _complement

    p = min(p, width // 2)
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(50, width))
    G = B.T @ B  # a well-conditioned Gram matrix of a non-orthonormal basis
    H = (lambda M: M + M.T)(rng.normal(size=(width, width)))
    import scipy.linalg as sla

    _, C = sla.eigh(H, G, subset_by_index=(0, p - 1))
    CP = _complement(C, G, p)
    assert CP.shape[1] <= p
    np.testing.assert_allclose(CP.T @ G @ CP, np.eye(CP.shape[1]), atol=1e-9)
    np.testing.assert_allclose(C.T @ G @ CP, 0.0, atol=1e-9)
    # the old X (E = [I_p; 0]) lies in span[C, CP]: its G-projection there is itself
    basis = np.hstack([C, CP])
    E = np.eye(width)[:, :p]
    np.testing.assert_allclose(basis @ (basis.T @ G @ E), E, atol=1e-8)


def test_block_lobpcg_refuses_a_start_block_narrower_than_k():
    from graphclust.kernels._lobpcg import block_lobpcg

    A, _ = _crowded()
    with pytest.raises(ValueError, match="spans 2 < k = 3"):
        block_lobpcg(lambda x: A @ x, None, np.eye(A.shape[0], 2), 3, tol=1e-8, maxiter=10)
    with pytest.raises(ValueError, match="spans 1 < k = 2"):  # dependent columns count once
        block_lobpcg(lambda x: A @ x, None, np.ones((A.shape[0], 4)), 2, tol=1e-8, maxiter=10)


@pytest.mark.parametrize("estimator", [gc.SpectralClustering, gc.AHKClustering])
def test_estimators_take_eigen_tol_auto_and_refuse_other_words(estimator):
    X, _ = gc.datasets.three_moons(300, random_state=0)
    auto = estimator(n_clusters=3, random_state=0).fit(X)
    fixed = estimator(n_clusters=3, eigen_tol=1e-8, random_state=0).fit(X)
    assert np.array_equal(auto.labels_, fixed.labels_)  # "auto" is 1e-8 below LOBPCG-AMG
    with pytest.raises(ValueError, match="eigen_tol"):
        estimator(n_clusters=3, eigen_tol="fast").fit(X)
