"""SpectralClustering (NJW): dense reference, components, affinities, determinism, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_moons

import graphclust as gc
from graphclust.cluster._spectral_reference import njw_reference
from graphclust.metrics import nmi
from _spectral_helpers import assert_is_partition, sin_theta


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def test_njw_matches_dense_reference():
    X, y = make_blobs(600, centers=[[0, 0], [4, 0], [2, 3.5]], cluster_std=1.0, random_state=0)
    W = gc.affinity(gc.knn_graph(X, 10))
    labels, U, vals = njw_reference(W, 3, random_state=0)
    for solver in ("dense", "eigsh"):
        model = gc.SpectralClustering(
            3, affinity="precomputed", eigen_solver=solver, random_state=0
        ).fit(W)
        np.testing.assert_allclose(model.eigenvalues_, vals, atol=1e-8)
        assert sin_theta(U, _unnormalised(model)) < 1e-6
        assert nmi(labels, model.labels_) == 1.0


def _unnormalised(model):
    from graphclust.cluster._spectral import njw_embedding

    return njw_embedding(model.affinity_matrix_, model.n_clusters, method="dense")[0]


def test_two_moons_complete_graph():
    X, y = make_moons(200, noise=0.05, random_state=0)
    model = gc.SpectralClustering(2, sigma=0.1, n_neighbors="all", random_state=0).fit(X)
    assert_is_partition(model.labels_, 200, 2)
    assert nmi(y, model.labels_) == 1.0


def test_disconnected_components_give_exact_indicator_embedding():
    X = np.vstack([np.random.default_rng(0).normal(c, 0.3, (40, 2)) for c in (0, 20, 40)])
    model = gc.SpectralClustering(3, n_neighbors=5, random_state=0).fit(X)
    assert model.n_components_ == 3
    np.testing.assert_allclose(model.eigenvalues_, 0, atol=1e-12)
    assert nmi(np.repeat([0, 1, 2], 40), model.labels_) == 1.0
    # more components than clusters: all component vectors are kept, k-means merges them
    with pytest.warns(UserWarning, match="3 connected components, more than n_clusters = 2"):
        model2 = gc.SpectralClustering(2, n_neighbors=5, random_state=0).fit(X)
    assert model2.embedding_.shape == (120, 3)
    assert_is_partition(model2.labels_, 120, 2)


def test_local_scaling_and_graph_input():
    X, y = make_blobs(300, centers=3, cluster_std=[0.3, 1.0, 2.0], random_state=3)
    g = gc.knn_graph(X, 10)
    a = gc.SpectralClustering(3, affinity="local", random_state=0).fit(X)
    b = gc.SpectralClustering(3, affinity="local", random_state=0).fit(g)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert nmi(y, a.labels_) > 0.8


def test_seeded_determinism():
    X, _ = make_blobs(2000, centers=5, cluster_std=2.0, random_state=1)
    a = gc.SpectralClustering(5, random_state=4).fit_predict(X)
    b = gc.SpectralClustering(5, random_state=4).fit_predict(X)
    np.testing.assert_array_equal(a, b)


def test_bad_input():
    X, _ = make_blobs(40, random_state=0)
    with pytest.raises(ValueError, match="n_clusters must satisfy 1 <= n_clusters <= n_samples = 40"):
        gc.SpectralClustering(41).fit(X)
    with pytest.raises(ValueError, match="'sigma' parameter of SpectralClustering must be"):
        gc.SpectralClustering(2, sigma=-1.0).fit(X)
    with pytest.raises(ValueError, match="'affinity' parameter of SpectralClustering must be"):
        gc.SpectralClustering(2, affinity="rbf").fit(X)
    with pytest.raises(ValueError, match="n_neighbors must be < n_samples = 40"):
        gc.SpectralClustering(2, n_neighbors=40).fit(X)
    with pytest.raises(ValueError, match="sigma has no effect with affinity='precomputed'"):
        gc.SpectralClustering(2, sigma=1.0, affinity="precomputed").fit(np.eye(3))
    with pytest.raises(TypeError, match="scipy sparse X is read as data points only with affinity='cosine'"):
        gc.SpectralClustering(2).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="must be symmetric"):
        gc.SpectralClustering(2, affinity="precomputed").fit(np.triu(np.ones((5, 5)), 1))
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        gc.SpectralClustering(2).fit(Xn)
    with pytest.raises(ValueError, match="at least 2 samples"):
        gc.SpectralClustering(1).fit(np.zeros((1, 2)))
