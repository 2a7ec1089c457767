"""AHK's full kernel (every eigenpair) from the sparse M = L + gamma B: `resolvent_eigenpairs`,
``AHKClustering(n_eigenpairs="all")`` (the default for the ahk and commute kernels), its
extension to new points and its model file. The dense reference is `ahk_reference` with every
non-trivial eigenpair kept (the paper's H)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings, strategies as st
from sklearn.datasets import make_blobs

import graphclust as gc
from graphclust.cluster._spectral_reference import ahk_reference
from graphclust.kernels import resolvent_eigenpairs
from graphclust.metrics import nmi
from _spectral_helpers import sin_theta

pytestmark = pytest.mark.usefixtures("one_blas_thread")

NORMALIZATIONS = ["nn", "sym", "rw", "fp", "lbn"]


@pytest.fixture(scope="module")
def connected():
    X, y = make_blobs(300, centers=[[0, 0], [4, 0], [2, 3.5]], cluster_std=1.0, random_state=0)
    W = gc.affinity(gc.knn_graph(X, 10))
    assert gc.laplacian_eigenpairs(W, 1).n_components == 1
    return X, y, W


@pytest.fixture(scope="module")
def disconnected():
    """Three far-apart blobs, 3 components (different draws: translated copies of one blob
    would give every eigenvalue of the drop kernel three times)."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 1, (50, 2)) for c in (0, 20, 40)])
    W = gc.affinity(gc.knn_graph(X, 5), sigma=1.0)
    assert gc.laplacian_eigenpairs(W, 1).n_components == 3
    return X, np.repeat([0, 1, 2], 50), W


def _check_against_reference(W, k, normalization, mode, kernel="ahk", method="dense", rtol=1e-9,
                             max_sin=1e-6):
    labels, U, theta, _ = ahk_reference(W, k, normalization=normalization, kernel=kernel,
                                        component_vectors=mode, random_state=0)
    model = gc.AHKClustering(k, affinity="precomputed", normalization=normalization,
                             kernel=kernel, n_eigenpairs="all", component_vectors=mode,
                             eigen_solver=method, random_state=0).fit(W)
    np.testing.assert_allclose(model.kernel_eigenvalues_, theta, rtol=rtol)
    # a multiple top eigenvalue (the contrasts, theta = 1 / gamma) has no unique basis
    if np.min(np.abs(np.diff(theta))) > 1e-8 * theta[0]:
        # the eigenvectors before row normalisation are what predict extends
        assert sin_theta(U, model._ext_vectors) < max_sin
    return model, labels


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("kernel", ["ahk", "commute"])
def test_full_kernel_equals_dense_reference_connected(connected, normalization, kernel):
    _, _, W = connected
    model, labels = _check_against_reference(W, 3, normalization, "contrast", kernel=kernel)
    assert nmi(labels, model.labels_) == 1.0
    assert model.n_eigenpairs_ == 299 and model.eigen_method_ == "dense"


@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("mode", ["contrast", "drop"])
def test_full_kernel_equals_dense_reference_disconnected(disconnected, normalization, mode):
    _, y, W = disconnected
    model, labels = _check_against_reference(W, 3, normalization, mode)
    assert model.component_vectors_ == mode
    if mode == "contrast":  # the contrasts keep the components apart (test_ahk: drop does not)
        assert nmi(y, model.labels_) == 1.0


@pytest.mark.parametrize("method", ["eigsh", "lobpcg-amg", "shift-invert"])
@pytest.mark.parametrize("normalization", ["lbn", "sym"])
def test_iterative_solvers_meet_the_reference(connected, method, normalization):
    _, _, W = connected
    # eigsh: relative tol 1e-8 on I - M / g; LOBPCG-AMG: absolute residual 1e-6 there, and
    # theta = 1 / mu amplifies it by g / mu (<= 1e3 here): measured 2e-9 / 3e-8 on theta
    rtol = 1e-7 if method != "lobpcg-amg" else 1e-5
    _check_against_reference(W, 3, normalization, "contrast", method=method, rtol=rtol,
                             max_sin=1e-3)


@pytest.mark.parametrize("method", ["eigsh", "lobpcg-amg"])
@pytest.mark.parametrize("normalization", ["nn", "sym", "lbn"])
def test_iterative_solvers_on_a_disconnected_graph(disconnected, method, normalization):
    """sym / nn: the c - 1 contrasts are a multiple eigenvalue of M, which single-vector
    Lanczos would return once; they are put in exactly (theta = 1 / gamma)."""
    _, _, W = disconnected
    _check_against_reference(W, 4, normalization, "contrast", method=method, rtol=1e-5,
                             max_sin=1e-3)


def test_auto_is_the_full_kernel_for_resolvent_weights_only(connected):
    _, _, W = connected
    kw = dict(affinity="precomputed", eigen_solver="dense", random_state=0)
    for kernel in ("ahk", "commute"):
        auto = gc.AHKClustering(3, kernel=kernel, **kw).fit(W)
        full = gc.AHKClustering(3, kernel=kernel, n_eigenpairs="all", **kw).fit(W)
        np.testing.assert_array_equal(auto.embedding_, full.embedding_)
        assert auto.kernel_ is None
    for kernel in ("heat", "mdm"):
        model = gc.AHKClustering(3, kernel=kernel, **kw).fit(W)
        assert model.n_eigenpairs_ == 100 and model.kernel_ is not None


def test_full_kernel_is_the_limit_of_the_truncated_one(connected):
    _, _, W = connected
    full = gc.AHKClustering(3, affinity="precomputed", eigen_solver="dense", random_state=0).fit(W)
    m299 = gc.AHKClustering(3, affinity="precomputed", n_eigenpairs=299, eigen_solver="dense",
                            random_state=0).fit(W)
    np.testing.assert_allclose(full.kernel_eigenvalues_, m299.kernel_eigenvalues_, rtol=1e-9)
    np.testing.assert_allclose(full.embedding_, m299.embedding_, atol=1e-7)
    np.testing.assert_array_equal(full.labels_, m299.labels_)


# ---------------------------------------------------------------- extension to new points
@pytest.mark.parametrize("normalization", NORMALIZATIONS)
@pytest.mark.parametrize("graph", ["connected", "disconnected-contrast", "disconnected-drop"])
def test_extension_reproduces_training_rows(connected, disconnected, normalization, graph):
    """The extension solves the row x of M y = mu y + Z nu for y(x): with a training point's
    own affinity row it gives that point's embedding back."""
    name, _, mode = graph.partition("-")
    X, _, W = connected if name == "connected" else disconnected
    model = gc.AHKClustering(3, affinity="precomputed", normalization=normalization,
                             component_vectors=mode or "auto", eigen_solver="dense",
                             random_state=0).fit(W)
    W = sp.csr_matrix(W)
    rows = np.arange(0, W.shape[0], 7)
    dx = np.asarray(W[rows].sum(axis=1)).ravel()
    E = model._extend(W[rows], dx, rows)
    np.testing.assert_allclose(E, model._ext_vectors[rows], atol=1e-10)


def test_predict_new_points_and_training_points():
    X, y = make_blobs(400, centers=[[0, 0], [6, 0], [3, 5]], cluster_std=0.8, random_state=3)
    model = gc.AHKClustering(3, n_neighbors=10, random_state=0).fit(X)
    assert nmi(y, model.labels_) > 0.95
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    centres = np.array([[0, 0], [6, 0], [3, 5]]) + 0.1
    near = np.array([model.labels_[np.argmin(((X - c) ** 2).sum(axis=1))] for c in centres])
    np.testing.assert_array_equal(model.predict(centres), near)


def test_save_load_round_trip_of_the_full_kernel(tmp_path, disconnected):
    X, _, _ = disconnected
    model = gc.AHKClustering(3, n_neighbors=5, sigma=1.0, component_vectors="drop",
                             random_state=0).fit(X)
    assert model._ext_kind == "resolvent" and model._ext_coef.shape == (3, 3)
    back = gc.AHKClustering.load(model.save(tmp_path / "full.npz"))
    new = X[::9] + 0.05
    np.testing.assert_array_equal(back.predict(new), model.predict(new))
    assert back.n_eigenpairs == "auto" and back.kernel_eigenvalues_.shape == (3,)


def test_damaged_full_kernel_file_is_named(tmp_path, connected):
    X, _, _ = connected
    path = gc.AHKClustering(3, random_state=0).fit(X).save(tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    data["ext_components"] = np.full_like(data["ext_components"], 5)
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match="ext_components holds values outside 0..0"):
        gc.AHKClustering.load(tmp_path / "bad.npz")
    del data["ext_components"]
    np.savez(tmp_path / "bad2.npz", **data)
    with pytest.raises(ValueError, match="ext_components"):
        gc.AHKClustering.load(tmp_path / "bad2.npz")


# ---------------------------------------------------------------- resolvent_eigenpairs
def test_resolvent_eigenpairs_contract(connected):
    _, _, W = connected
    spec = resolvent_eigenpairs(W, 4, "lbn", method="dense")
    assert spec.vectors.shape == (300, 4) and spec.offsets.shape == (1, 4)
    np.testing.assert_allclose(spec.values, 1.0 / spec.mu)
    assert np.all(np.diff(spec.values) <= 0)
    np.testing.assert_allclose(spec.vectors.T @ spec.vectors, np.eye(4), atol=1e-10)
    d = np.asarray(sp.csr_matrix(W).sum(axis=1)).ravel()
    Wa = sp.diags(1 / d) @ W @ sp.diags(1 / d)
    b = np.asarray(Wa.sum(axis=1)).ravel()  # B psi_1 for lbn: the degrees of W^(1)
    np.testing.assert_allclose(b @ spec.vectors, 0.0, atol=1e-10 * np.linalg.norm(b))


def test_resolvent_eigenpairs_bad_input(connected):
    _, _, W = connected
    with pytest.raises(ValueError, match="components must be one of"):
        resolvent_eigenpairs(W, 2, components="keep")
    with pytest.raises(ValueError, match="gamma = 0 gives the component contrasts"):
        resolvent_eigenpairs(W, 2, gamma=0.0)
    with pytest.raises(ValueError, match="gamma"):
        resolvent_eigenpairs(W, 2, gamma=-1.0)
    with pytest.raises(ValueError, match="k must satisfy"):
        resolvent_eigenpairs(W, 300)
    # gamma = 0 with drop: the pseudo-inverse, still exact
    _, U, theta, _ = ahk_reference(W, 2, gamma=0.0, component_vectors="drop", random_state=0)
    spec = resolvent_eigenpairs(W, 2, gamma=0.0, components="drop", method="dense")
    np.testing.assert_allclose(spec.values, theta, rtol=1e-8)


# ---------------------------------------------------------------- restricted top_eigenpairs
def _restricted_reference(S, Z, k):
    """Top-k eigenpairs of S on span(Z)^perp, through an orthonormal basis of the complement."""
    Q, _ = np.linalg.qr(np.hstack([Z, np.eye(S.shape[0])]))
    N = Q[:, Z.shape[1]:]
    vals, vecs = np.linalg.eigh(N.T @ S @ N)
    return vals[::-1][:k], N @ vecs[:, ::-1][:, :k]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(8, 40), c=st.integers(1, 3),
       method=st.sampled_from(["dense", "eigsh", "shift-invert"]))
def test_top_eigenpairs_restricted_to_non_invariant_columns(seed, n, c, method):
    """`deflate` columns that are not eigenvectors: the pairs of Q S Q on span(Z)^perp."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.4, random_state=rng)
    S = ((A + A.T) / 2).toarray()
    Z, _ = np.linalg.qr(rng.normal(size=(n, c)))
    k = min(3, n - c - 2)
    ref_vals, ref_vecs = _restricted_reference(S, Z, k)
    # a (nearly) multiple eigenvalue has no unique vectors to compare
    assume(np.min(np.abs(np.diff(_restricted_reference(S, Z, k + 1)[0]))) >= 1e-6)
    spec = gc.top_eigenpairs(sp.csr_matrix(S), k, method=method, deflate=Z, random_state=0)
    np.testing.assert_allclose(spec.values, ref_vals, atol=1e-7)
    assert np.abs(Z.T @ spec.vectors).max() < 1e-7
    assert sin_theta(ref_vecs, spec.vectors) < 1e-5
    assert spec.residuals.max() < 1e-6


@pytest.mark.parametrize("normalization", ["sym", "nn"])
def test_more_components_than_pairs_gives_contrasts(normalization):
    """k <= c - 1: every top pair is a component contrast (theta = 1 / gamma), orthonormal,
    orthogonal to the global trivial vector, constant-times-root on each component."""
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c * 50, 1, (4, 2)) for c in range(30)])
    W = sp.csr_matrix(gc.affinity(gc.knn_graph(X, 3), sigma=1.0))
    spec = resolvent_eigenpairs(W, 5, normalization, gamma=0.02)
    assert spec.n_components == 30
    np.testing.assert_allclose(spec.values, 50.0)
    V = spec.vectors
    np.testing.assert_allclose(V.T @ V, np.eye(5), atol=1e-12)
    d = np.asarray(W.sum(axis=1)).ravel()
    root = np.sqrt(d) if normalization == "sym" else np.ones_like(d)
    np.testing.assert_allclose(root @ V, 0.0, atol=1e-10)
    ratio = V / root[:, None]  # constant on each component of 4 consecutive points
    np.testing.assert_allclose(ratio.reshape(30, 4, 5).std(axis=1), 0.0, atol=1e-12)
