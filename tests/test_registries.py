"""The layout's shared pieces: registries, the kernel protocol, the one NJW, the seed search on
any kernel, and the names that moved (deprecated, still working)."""

import dataclasses
import warnings

import numpy as np
import pytest

import graphclust as gc
from graphclust import pipeline as gp
from graphclust.graphs import GRAPH_TYPES, GraphType, PrebuiltGraph, graph_builder


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(0, 0.3, (n_per, 2)), rng.normal(4, 0.3, (n_per, 2))])
    return X, np.repeat([0, 1], n_per)


# ------------------------------------------------------------------------ graph registry
@pytest.mark.parametrize("name", ["knn", "mst", "pmst", "dmst"])
def test_graph_builder_by_name_matches_the_builder(name):
    X, _ = blobs()
    g = graph_builder(name, n_neighbors=5, random_state=0)(X)
    spec = GRAPH_TYPES[name]
    kwargs = {"n_neighbors": 5} if spec.degree_parameter else {}
    if spec.accepts("random_state"):
        kwargs["random_state"] = 0
    ref = spec.build(X, **kwargs)
    assert (g.distances != ref.distances).nnz == 0


def test_graph_builder_refuses_unknown_and_parameterised_types():
    with pytest.raises(ValueError, match="graph must be one of"):
        graph_builder("bogus")
    with pytest.raises(ValueError, match="'knn'"):
        graph_builder("epsilon")  # needs a radius: not choosable by name alone


def test_a_registered_graph_type_reaches_estimators_pipeline_and_cli(monkeypatch):
    def ring_graph(X, n_neighbors=4, *, random_state=None):
        """A kNN graph under another name (stands in for a new module)."""
        return gc.knn_graph(X, n_neighbors, random_state=random_state)

    monkeypatch.setitem(GRAPH_TYPES, "ring", GraphType("ring", ring_graph, degree_parameter=True))
    X, y = blobs()
    model = gc.ConsistencyClustering(2, alpha=0.99, sigma=1.0, graph="ring", n_neighbors=5,
                                     random_state=0).fit(X)
    assert gc.metrics.clustering_error(y, model.labels_) == 0.0
    stage = gp.graph_stage("ring", n_neighbors=5)
    assert stage.get_params() == {"n_neighbors": 5}
    pipe = gc.Pipeline(stage, gc.NJWStage(), gc.SpectralKMeans(2), random_state=0).fit(X)
    assert gc.metrics.clustering_error(y, pipe.labels_) == 0.0
    monkeypatch.delitem(gp.GRAPH_STAGES, "ring", raising=False)


def test_prebuilt_graph_checks_the_points():
    X, _ = blobs()
    g = gc.knn_graph(X, 5)
    assert PrebuiltGraph(g)(X) is g
    with pytest.raises(ValueError, match="60 nodes"):
        PrebuiltGraph(g)(X[:10])
    with pytest.raises(TypeError, match="takes a Graph"):
        PrebuiltGraph(X)


def test_estimators_take_a_graph_by_name_or_builder():
    X, y = blobs()
    a = gc.SpectralClustering(2, graph="mst", random_state=0).fit(X)
    b = gc.SpectralClustering(2, graph=PrebuiltGraph(gc.mst_graph(X)), random_state=0).fit(X)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert gc.metrics.clustering_error(y, a.labels_) == 0.0
    assert (a.predict(X + 0.01) == a.labels_).all()


# ------------------------------------------------------------------------ kernel protocol
def test_both_kernels_implement_the_protocol():
    X, _ = blobs()
    W = gc.affinity(gc.knn_graph(X, 6), 1.0)
    K1 = gc.ConsistencyKernel(W, 0.99, method="dense")
    K2 = gc.spectral_kernel(W, n_eigenpairs=20, random_state=0)
    for K in (K1, K2):
        assert gc.kernels.is_kernel_operator(K)
        assert K.n == 60
        nu = K.column_norms().nu
        dense = K.apply(np.eye(60))
        np.testing.assert_allclose(nu, np.linalg.norm(dense, axis=0), rtol=1e-9)
    assert not gc.kernels.is_kernel_operator(W)


def test_constant_part_makes_ahk_sym_an_inverse_m_matrix():
    # with its lambda = 0 vectors back, untruncated AHK on L_sym is (gamma I + L_sym)^-1
    X, _ = blobs(10)
    W = gc.affinity(gc.knn_graph(X, 5), 1.0)
    n_comp = gc.knn_graph(X, 5).n_components  # every non-trivial pair: the whole kernel
    K = gc.spectral_kernel(W, "ahk", normalization="sym", n_eigenpairs=20 - n_comp, gamma=0.1,
                           random_state=0).with_constant_part()
    L = gc.laplacian(W, "sym").toarray()
    ref = np.linalg.inv(0.1 * np.eye(20) + L)
    np.testing.assert_allclose(K.apply(np.eye(20)), ref, atol=1e-8)
    assert (ref > -1e-12).all()


# ------------------------------------------------------------------------ one NJW
def test_njw_labels_is_what_spectral_clustering_and_segment_image_run():
    X, y = blobs()
    W = gc.affinity(gc.knn_graph(X, 6), 1.0)
    labels = gc.cluster.njw_labels(W, 2, random_state=0)
    assert gc.metrics.clustering_error(y, labels) == 0.0
    est = gc.SpectralClustering(2, affinity="precomputed", random_state=0).fit(W)
    assert gc.metrics.nmi(est.labels_, labels) == 1.0


# ------------------------------------------------------------------------ seeds on any kernel
def test_consistency_clustering_reads_a_spectral_kernel_as_the_pipeline_does():
    X, y = blobs()
    model = gc.ConsistencyClustering(kernel="ahk", criterion="omega", sigma_grid=(0.5, 1.0),
                                     max_clusters=4, n_neighbors=6, random_state=0).fit(X)
    assert model.n_clusters_ == 2 and model.alpha_ is None
    assert gc.metrics.clustering_error(y, model.labels_) == 0.0
    assert model.omega_.shape == (2, 1, 3)
    with pytest.raises(ValueError, match="kernel='consistency' to predict"):
        model.predict(X)


@pytest.mark.parametrize("params,match", [
    (dict(kernel="bogus"), "kernel must be one of"),
    (dict(kernel="ahk", kernel_params={"gama": 1}), "unknown key"),
    (dict(kernel="ahk", kernel_params={"gamma": 0}), "gamma > 0"),
    (dict(kernel="heat", kernel_params={"t": -1}), "t"),
])
def test_seed_kernel_parameters_are_checked(params, match):
    X, _ = blobs()
    with pytest.raises(ValueError, match=match):
        gc.ConsistencyClustering(2, **params).fit(X)


def test_spectral_seed_model_round_trips(tmp_path):
    X, _ = blobs()
    model = gc.ConsistencyClustering(2, kernel="heat", sigma=1.0, random_state=0).fit(X)
    back = gc.ConsistencyClustering.load(model.save(tmp_path / "m.npz"))
    np.testing.assert_array_equal(back.labels_, model.labels_)
    assert back.kernel == "heat"


# ------------------------------------------------------------------------ moved names
def test_kernels_name_moved_with_a_warning():
    with pytest.warns(DeprecationWarning, match="SPECTRAL_KERNELS"):
        old = gc.kernels.KERNELS
    with pytest.warns(DeprecationWarning, match="SPECTRAL_KERNELS"):
        top = gc.KERNELS
    assert old == top == gc.kernels.SPECTRAL_KERNELS
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from graphclust.kernels import SPECTRAL_KERNELS  # noqa: F401  (no warning)
    with pytest.raises(AttributeError):
        gc.kernels.NOT_A_NAME


def test_registry_entry_is_a_frozen_record():
    spec = GRAPH_TYPES["knn"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.name = "other"
