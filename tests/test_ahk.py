"""AHKClustering: reference agreement, truncation, kernels, input kinds, determinism, bad input."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

import graphclust as gc
from graphclust.cluster._spectral_reference import ahk_reference
from graphclust.metrics import nmi
from _spectral_helpers import assert_is_partition, sin_theta


pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def blobs1000():
    """Seeded 1 000 points, 3 overlapping blobs; its 10-NN graph is connected."""
    X, y = make_blobs(1000, centers=[[0, 0], [4, 0], [2, 3.5]], cluster_std=1.0, random_state=0)
    W = gc.affinity(gc.knn_graph(X, 10))
    assert gc.laplacian_eigenpairs(W, 1).n_components == 1
    return X, y, W


@pytest.fixture(scope="module")
def ref_lbn(blobs1000):
    _, _, W = blobs1000
    return ahk_reference(W, 3, normalization="lbn", gamma=0.01, random_state=0)


def test_full_truncation_reproduces_dense_reference(blobs1000, ref_lbn):
    """m = n - 1 (every non-trivial pair): the sparse path equals the dense Algorithm 2."""
    _, _, W = blobs1000
    labels, U, theta, H = ref_lbn
    model = gc.AHKClustering(3, affinity="precomputed", n_eigenpairs=999, random_state=0).fit(W)
    V, th = model.kernel_.top_eigenvectors(3)
    np.testing.assert_allclose(th, theta, rtol=1e-10)
    assert sin_theta(U, V) < 1e-6
    np.testing.assert_allclose(np.abs(V), np.abs(U), atol=1e-6)
    assert nmi(labels, model.labels_) == 1.0
    # the factored kernel applies like the dense H
    B = np.random.default_rng(0).normal(size=(1000, 2))
    np.testing.assert_allclose(model.kernel_.apply(B), H @ B, rtol=1e-9, atol=1e-9 * np.abs(H).max())


@pytest.mark.parametrize(
    # measured on this data: sin(theta) 3.3e-4 (m=500), 4.0e-3 (100), 2.4e-2 (50), 0.13 (20)
    ("m", "max_sin", "min_nmi"),
    [(500, 2e-3, 1.0), (100, 2e-2, 1.0), (50, 0.1, 0.95), (20, 0.3, 0.9)],
)
def test_smaller_m_approaches_the_full_kernel(blobs1000, ref_lbn, m, max_sin, min_nmi):
    _, _, W = blobs1000
    labels, U, _, _ = ref_lbn
    model = gc.AHKClustering(
        3, affinity="precomputed", n_eigenpairs=m, eigen_solver="eigsh", random_state=0
    ).fit(W)
    V, _ = model.kernel_.top_eigenvectors(3)
    assert sin_theta(U, V) < max_sin
    assert nmi(labels, model.labels_) >= min_nmi


def test_lanczos_truncated_kernel_equals_dense_truncated_kernel(blobs1000):
    _, _, W = blobs1000
    labels, U, theta, _ = ahk_reference(W, 3, n_eigenpairs=60, random_state=0)
    model = gc.AHKClustering(
        3, affinity="precomputed", n_eigenpairs=60, eigen_solver="eigsh", random_state=0
    ).fit(W)
    assert model.eigen_method_ == "eigsh"
    np.testing.assert_allclose(model.kernel_eigenvalues_, theta, rtol=1e-7)
    assert sin_theta(U, model.kernel_.top_eigenvectors(3)[0]) < 1e-6


@pytest.mark.parametrize("normalization", ["nn", "sym", "rw", "fp"])
@pytest.mark.parametrize("kernel", ["ahk", "heat", "mdm", "commute"])
def test_every_normalization_and_kernel_matches_reference(normalization, kernel):
    X, _ = make_blobs(200, centers=3, cluster_std=1.5, random_state=1)
    W = gc.affinity(gc.knn_graph(X, 8))
    t = 2.0 if normalization != "nn" else 0.05
    _, U, theta, _ = ahk_reference(
        W, 3, normalization=normalization, kernel=kernel, t=t, random_state=0
    )
    c = gc.laplacian_eigenpairs(W, 1).n_components
    model = gc.AHKClustering(
        3, affinity="precomputed", normalization=normalization, kernel=kernel, t=t,
        n_eigenpairs=200 - c, component_vectors="drop", random_state=0,
    ).fit(W)
    np.testing.assert_allclose(model.kernel_eigenvalues_, theta, rtol=1e-8)
    assert sin_theta(U, model.kernel_.top_eigenvectors(3)[0]) < 1e-5


@pytest.mark.parametrize("normalization", ["nn", "sym", "rw", "lbn"])
def test_disconnected_clusters_contrast_recovers_them_drop_does_not(normalization):
    """Regression: dropping every component's vector loses perfectly separated clusters."""
    X = np.vstack([np.random.default_rng(0).normal(c, 1, (60, 2)) for c in (0, 20, 40)])
    y = np.repeat([0, 1, 2], 60)
    fits = {}
    for mode in ("contrast", "drop"):
        model = gc.AHKClustering(
            3, normalization=normalization, n_neighbors=5, n_eigenpairs=177,
            component_vectors=mode, random_state=0,
        ).fit(X)
        assert model.n_components_ == 3
        labels, _, theta, _ = ahk_reference(
            model.affinity_matrix_, 3, normalization=normalization, component_vectors=mode,
            random_state=0,
        )
        np.testing.assert_allclose(model.kernel_eigenvalues_, theta, rtol=1e-10)
        fits[mode] = nmi(y, model.labels_)
    assert fits["contrast"] == 1.0
    assert fits["drop"] < 0.6
    auto = gc.AHKClustering(3, normalization=normalization, n_neighbors=5, random_state=0).fit(X)
    assert auto.component_vectors_ == "contrast"
    with pytest.raises(ValueError, match="infinite for kernel='ahk' with gamma=0"):
        gc.AHKClustering(3, gamma=0, n_neighbors=5, component_vectors="contrast").fit(X)
    assert gc.AHKClustering(3, gamma=0, n_neighbors=5).fit(X).component_vectors_ == "drop"


def test_sym_and_nn_kernels_reduce_to_laplacian_eigenvectors():
    """With orthonormal psi (sym, nn) the top eigenvectors of H are psi_1..psi_k for any m."""
    X, _ = make_blobs(150, centers=3, random_state=2)
    W = gc.affinity(gc.knn_graph(X, 8))
    for name in ("sym", "nn"):
        spec = gc.laplacian_eigenpairs(W, 3, name)
        model = gc.AHKClustering(
            3, affinity="precomputed", normalization=name, n_eigenpairs=40, component_vectors="drop"
        ).fit(W)
        assert sin_theta(spec.vectors, model.kernel_.top_eigenvectors(3)[0]) < 1e-6


def test_kernel_top_eigenvectors_match_dense_kernel():
    X, _ = make_blobs(120, centers=2, random_state=3)
    K = gc.spectral_kernel(gc.affinity(gc.knn_graph(X, 6)), n_eigenpairs=30, random_state=0)
    Kd = K.to_dense()
    vals, vecs = np.linalg.eigh(Kd)
    V, th = K.top_eigenvectors(4)
    np.testing.assert_allclose(th, vals[::-1][:4], rtol=1e-10)
    assert sin_theta(V, vecs[:, ::-1][:, :4]) < 1e-6
    np.testing.assert_allclose(K.diagonal(), np.diag(Kd), rtol=1e-10)
    np.testing.assert_allclose(K @ np.ones(120), Kd @ np.ones(120), rtol=1e-10)


def test_kernel_weights_table():
    lam = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(gc.kernel_weights(lam, "ahk", gamma=0.5), 1 / (0.5 + lam))
    np.testing.assert_allclose(gc.kernel_weights(lam, "heat", t=2.0), np.exp(-2 * lam))
    np.testing.assert_allclose(gc.kernel_weights(lam, "mdm"), ((1 - lam) / lam) ** 2)
    np.testing.assert_allclose(gc.kernel_weights(lam, "commute", gamma=0, volume=3), 3 / lam)
    with pytest.raises(ValueError, match="gamma = 0 with an eigenvalue lambda = 0"):
        gc.kernel_weights([0.0, 1.0], "ahk", gamma=0.0)
    with pytest.raises(ValueError, match="kernel must be one of 'ahk', 'commute', 'heat', 'mdm'"):
        gc.kernel_weights(lam, "diffusion")
    with pytest.raises(ValueError, match="to_dense forms an n x n array"):
        gc.SpectralKernel(np.zeros((6000, 2)), np.ones(2)).to_dense()


def test_fit_on_array_graph_and_precomputed_agree():
    X, y = make_blobs(300, centers=3, cluster_std=0.8, random_state=4)
    a = gc.AHKClustering(3, n_neighbors=10, sigma=1.0, random_state=0).fit(X)
    g = gc.knn_graph(X, 10)
    b = gc.AHKClustering(3, sigma=1.0, random_state=0).fit(g)
    c = gc.AHKClustering(3, affinity="precomputed", random_state=0).fit(gc.affinity(g, 1.0))
    assert_is_partition(a.labels_, 300, 3)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.labels_, c.labels_)
    assert nmi(y, a.labels_) > 0.95
    assert a.sigma_ == 1.0 and a.n_eigenpairs_ == 298  # the full kernel: every pair (2 components)
    assert a.kernel_ is None and a.eigenvalues_.shape == (0,)
    assert set(a.timings_) == {"graph", "eigenpairs", "embedding", "kmeans"}
    assert np.allclose(np.linalg.norm(a.embedding_, axis=1), 1.0)


def test_seeded_fit_is_deterministic():
    X, _ = make_blobs(2000, centers=4, cluster_std=1.5, random_state=5)
    a = gc.AHKClustering(4, n_eigenpairs=30, random_state=11).fit(X)
    b = gc.AHKClustering(4, n_eigenpairs=30, random_state=11).fit(X)
    assert a.eigen_method_ == "eigsh"
    np.testing.assert_array_equal(a.labels_, b.labels_)
    np.testing.assert_array_equal(a.embedding_, b.embedding_)


@pytest.mark.parametrize("kind", ["local", "cosine"])
def test_local_and_cosine_affinities(kind):
    rng = np.random.default_rng(0)
    if kind == "cosine":  # two "topics" sharing a common vocabulary: a connected cosine graph
        counts = rng.poisson(0.3, (120, 60)).astype(float)
        counts[:60, :25] += rng.poisson(1.5, (60, 25))
        counts[60:, 35:] += rng.poisson(1.5, (60, 25))
        X, y = sp.csr_matrix(counts), np.repeat([0, 1], 60)
    else:
        X = np.vstack([rng.normal(0, 0.2, (50, 2)), rng.normal(3, 1.5, (50, 2))])
        y = np.repeat([0, 1], 50)
    model = gc.AHKClustering(2, affinity=kind, n_neighbors=8, random_state=0).fit(X)
    assert model.sigma_ is None
    assert nmi(y, model.labels_) > 0.9


def test_binary_network_precomputed():
    G = nx.planted_partition_graph(2, 30, 0.5, 0.02, seed=1)
    A = nx.to_scipy_sparse_array(G, format="csr")
    labels = gc.AHKClustering(2, affinity="precomputed", random_state=0).fit_predict(A)
    assert nmi(np.repeat([0, 1], 30), labels) > 0.8
    dense = gc.AHKClustering(2, affinity="precomputed", random_state=0).fit_predict(A.toarray())
    np.testing.assert_array_equal(labels, dense)


def test_disconnected_graph_drops_each_component_vector():
    X = np.vstack([np.random.default_rng(0).normal(c, 0.3, (40, 2)) for c in (0, 20, 40)])
    model = gc.AHKClustering(
        3, n_neighbors=5, n_eigenpairs=20, component_vectors="drop", random_state=0
    ).fit(X)
    assert model.n_components_ == 3
    assert model.eigenvalues_[0] > 1e-6  # no trivial eigenvalue kept
    assert_is_partition(model.labels_, 120, 3)


# ---------------------------------------------------------------- bad input
def test_bad_parameters_are_named():
    X, _ = make_blobs(50, random_state=0)
    with pytest.raises(ValueError, match=r"n_clusters must satisfy 1 <= n_clusters <= n_samples = 50; got 51"):
        gc.AHKClustering(51).fit(X)
    with pytest.raises(ValueError, match="'n_clusters' parameter of AHKClustering must be an int in the range"):
        gc.AHKClustering(0).fit(X)
    with pytest.raises(ValueError, match=r"'gamma' parameter of AHKClustering must be a float in the range \[0"):
        gc.AHKClustering(2, gamma=-0.1).fit(X)
    with pytest.raises(ValueError, match=r"n_eigenpairs must satisfy n_eigenpairs < n_samples = 50 .*; got 50"):
        gc.AHKClustering(2, n_eigenpairs=50).fit(X)
    with pytest.raises(ValueError, match="'normalization' parameter of AHKClustering must be a str among"):
        gc.AHKClustering(2, normalization="laplace").fit(X)
    with pytest.raises(ValueError, match="n_eigenpairs = 2 must be >= n_clusters = 3"):
        gc.AHKClustering(3, n_eigenpairs=2).fit(X)
    with pytest.raises(ValueError, match="sigma applies to affinity='gaussian' only"):
        gc.AHKClustering(2, sigma=1.0, affinity="local").fit(X)
    with pytest.raises(ValueError, match=r"n_eigenpairs='all' needs a kernel .*got kernel='heat'"):
        gc.AHKClustering(2, kernel="heat", n_eigenpairs="all").fit(X)
    with pytest.raises(ValueError, match="n_clusters = 50 must be < n_samples = 50: the full"):
        gc.AHKClustering(50).fit(X)
    with pytest.raises(ValueError, match="'n_eigenpairs' parameter of AHKClustering must be"):
        gc.AHKClustering(2, n_eigenpairs="full").fit(X)


def test_unknown_normalization_message_lists_valid_names():
    X, _ = make_blobs(30, random_state=0)
    with pytest.raises(ValueError) as err:
        gc.AHKClustering(2, normalization="lapl").fit(X)
    for name in ("nn", "sym", "rw", "fp", "lbn"):
        assert repr(name) in str(err.value)


def test_nan_input_refused():
    X, _ = make_blobs(30, random_state=0)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN or infinite"):
        gc.AHKClustering(2).fit(X)


def test_isolated_vertices_refused():
    A = np.zeros((6, 6))
    for i, j in [(0, 1), (1, 2), (3, 4)]:
        A[i, j] = A[j, i] = 1
    with pytest.raises(ValueError, match=r"1 isolated vertex\(es\) .*node\(s\) 5"):
        gc.AHKClustering(2, affinity="precomputed", n_eigenpairs=2).fit(A)


def test_component_count_limits_m():
    X = np.vstack([np.random.default_rng(0).normal(c, 0.1, (6, 2)) for c in (0, 50)])
    with pytest.raises(ValueError, match="only n - n_components = 10 non-trivial eigenpairs exist"):
        gc.AHKClustering(2, n_neighbors=3, n_eigenpairs=11).fit(X)


def test_complete_graph_refused_above_limit():
    X = np.zeros((5001, 2))
    with pytest.raises(ValueError, match="n_neighbors='all' builds the complete graph"):
        gc.AHKClustering(2, n_neighbors="all").fit(X)


def test_float32_input_gives_float64_labels_equal():
    X, _ = make_blobs(300, centers=3, cluster_std=0.8, random_state=4)
    a = gc.AHKClustering(3, random_state=0).fit_predict(X)
    b = gc.AHKClustering(3, random_state=0).fit_predict(X.astype(np.float32))
    assert nmi(a, b) == 1.0


def test_one_cluster_and_heat_kernel():
    X, _ = make_blobs(60, centers=2, random_state=0)
    assert gc.AHKClustering(1, random_state=0).fit_predict(X).tolist() == [0] * 60
    model = gc.AHKClustering(2, kernel="heat", t=5.0, random_state=0).fit(X)
    np.testing.assert_allclose(model.kernel_.weights, np.exp(-5.0 * model.kernel_.eigenvalues))


def test_many_components_fall_back_to_drop(monkeypatch):
    from graphclust.cluster import _ahk

    monkeypatch.setattr(_ahk, "MAX_COMPONENT_CONTRASTS", 1)
    X = np.vstack([np.random.default_rng(0).normal(c, 0.3, (30, 2)) for c in (0, 20, 40)])
    with pytest.warns(UserWarning, match="3 connected components; keeping their 2 contrast"):
        model = gc.AHKClustering(3, n_neighbors=5, n_eigenpairs=20, random_state=0).fit(X)
    assert model.component_vectors_ == "drop"
    with pytest.raises(ValueError, match="above the 1 limit"):
        gc.AHKClustering(3, n_neighbors=5, n_eigenpairs=20, component_vectors="contrast").fit(X)
    # the full kernel holds no contrast column (one constraint): no limit, no warning
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        full = gc.AHKClustering(3, n_neighbors=5, random_state=0).fit(X)
    assert full.component_vectors_ == "contrast"


# ---------------------------------------------------------------- predict (Nystrom extension)
def _dense_generalised_spectrum(W, normalization):
    """All Laplacian eigenpairs (ascending) of the dense generalised problem, and the degrees."""
    import scipy.linalg as sla

    d = W.sum(axis=1)
    if normalization == "nn":
        lam, Psi = sla.eigh(np.diag(d) - W)
    elif normalization == "sym":
        lam, Psi = sla.eigh(np.eye(len(d)) - W / np.sqrt(np.outer(d, d)))
    else:
        a = {"rw": 0.0, "fp": 0.5, "lbn": 1.0}[normalization]
        Wa = W / np.outer(d**a, d**a)
        mu, Psi = sla.eigh(Wa, np.diag(Wa.sum(axis=1)))
        lam, Psi = 1.0 - mu[::-1], Psi[:, ::-1]
    return lam, Psi, d


def _nystrom_ahk_dense(model, X_train, X_new, normalization, m):
    """Dense AHK Nystrom: y_l(x) = H(x, .) y_l / theta_l with the kernel row built from the
    extended Laplacian eigenvectors psi_i(x) (formulas of the AHKClustering Notes)."""
    W = model.affinity_matrix_.toarray()
    lam, Psi, d = _dense_generalised_spectrum(W, normalization)
    lam, Psi = lam[1 : m + 1], Psi[:, 1 : m + 1]  # connected graph: drop the trivial pair
    w = 1.0 / (model.gamma + lam)
    H = (Psi * w) @ Psi.T
    theta, Y = np.linalg.eigh(H)
    theta, Y = theta[::-1][: model.n_clusters], Y[:, ::-1][:, : model.n_clusters]
    D2 = ((X_new[:, None, :] - X_train[None, :, :]) ** 2).sum(axis=2)
    Wx = np.zeros_like(D2)
    for r, row in enumerate(D2):
        nearest = np.argsort(row)[: model.n_neighbors]
        Wx[r, nearest] = np.exp(-row[nearest] / (2 * model.sigma_**2))
    dx = Wx.sum(axis=1)
    if normalization == "nn":
        Psi_x = (Wx @ Psi) / (dx[:, None] - lam[None, :])
    elif normalization == "sym":
        Psi_x = (Wx / np.sqrt(np.outer(dx, d))) @ Psi / (1.0 - lam)
    else:
        a = {"rw": 0.0, "fp": 0.5, "lbn": 1.0}[normalization]
        P = Wx * d ** -a
        Psi_x = (P / P.sum(axis=1, keepdims=True)) @ Psi / (1.0 - lam)
    H_x = (Psi_x * w) @ Psi.T  # rows H(x, .) of the kernel
    return Y, (H_x @ Y) / theta


@pytest.mark.parametrize(
    ("normalization", "m"),
    [("lbn", 89), ("lbn", 20), ("sym", 20), ("nn", 20), ("rw", 20), ("fp", 20)],
)
def test_ahk_nystrom_matches_dense_formula(normalization, m):
    X, _ = make_blobs(90, centers=3, cluster_std=1.2, random_state=2)
    X_new = np.random.default_rng(3).uniform(X.min(0), X.max(0), size=(25, 2))
    model = gc.AHKClustering(
        3, normalization=normalization, n_neighbors=8, n_eigenpairs=m, eigen_solver="dense",
        random_state=0,
    ).fit(X)
    assert model.n_components_ == 1
    Y, E_ref = _nystrom_ahk_dense(model, X, X_new, normalization, m)
    signs = np.sign(np.sum(Y * model.embedding_, axis=0))
    E_ref = E_ref * signs
    E_ref /= np.linalg.norm(E_ref, axis=1, keepdims=True)
    E, _, undefined = model._nystrom(X_new)
    assert not undefined.any()
    np.testing.assert_allclose(E, E_ref, atol=1e-8)
    # predict is the nearest centroid of this embedding
    C = model.cluster_centers_
    expected = np.argmin(((E[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(model.predict(X_new), expected)


def test_heat_kernel_and_contrast_vectors_predict_training_points():
    X = np.vstack([np.random.default_rng(0).normal(c, 1, (60, 2)) for c in (0, 20, 40)])
    for params in ({"kernel": "heat", "t": 5.0}, {"component_vectors": "contrast"}):
        model = gc.AHKClustering(3, n_neighbors=5, random_state=0, **params).fit(X)
        assert model.n_components_ == 3
        np.testing.assert_array_equal(model.predict(X), model.labels_)


def test_more_components_than_clusters_are_named():
    # three moons with every row given three times: the 10-NN lists hold copies, and the
    # graph falls into 11 components for c = 3 (NMI 0.28); NJW says so, and so does AHK
    import warnings

    X, _ = gc.datasets.three_moons(600, random_state=0)
    with pytest.warns(UserWarning, match="connected components, more than n_clusters = 3"):
        gc.AHKClustering(3, random_state=0).fit(np.r_[X, X, X])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.AHKClustering(3, random_state=0).fit(X)  # one component: nothing to say
