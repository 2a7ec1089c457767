"""Bad parameters of the clusterers are found before any work, with the parameter named."""

import networkx as nx
import numpy as np
import pytest

import graphclust as gc
from graphclust.graphs import GRAPH_TYPES


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(0, 0.3, (n_per, 2)), rng.normal(4, 0.3, (n_per, 2))])


@pytest.mark.parametrize("params,error,match", [
    (dict(n_clusters=0), ValueError, "n_clusters must satisfy 1 <= n_clusters"),
    (dict(n_clusters=61), ValueError, "n_clusters must satisfy 1 <= n_clusters <= n_samples"),
    (dict(max_clusters=1), ValueError, "max_clusters must satisfy 2 <= max_clusters"),
    (dict(random_state=-1), ValueError, "random_state must be a non-negative int"),
    (dict(random_state="abc"), TypeError, "random_state must be None, an int seed"),
    (dict(alpha=1.5), ValueError, "alpha must satisfy"),
    (dict(sigma=0.0), ValueError, "sigma must satisfy"),
    (dict(criterion="omega", kernel_params={"gamma": -5}), ValueError,
     "kernel_params set the kernels 'ahk', 'heat' and 'commute'"),
    (dict(criterion="omega", n_eigenpairs="x"), TypeError, "n_eigenpairs must be an integer"),
    (dict(criterion="omega", n_eigenpairs=0), ValueError, "n_eigenpairs must satisfy 1 <="),
    (dict(criterion="omega", join_components="x"), TypeError,
     "join_components must be True or False"),
    (dict(criterion="omega", sigma_grid="abc"), TypeError,
     "sigma_grid must be a sequence of numbers"),
    (dict(criterion="omega", alpha_grid="abc"), TypeError,
     "alpha_grid must be a sequence of numbers"),
    (dict(criterion="omega", verbose="x"), TypeError, "verbose must be True, False or an int"),
])
def test_consistency_parameters_are_checked_before_the_graph(params, error, match,
                                                              monkeypatch):
    built = []

    def counting(X, *a, **k):
        built.append(1)
        return gc.knn_graph(X, *a, **k)

    import dataclasses

    monkeypatch.setitem(GRAPH_TYPES, "knn", dataclasses.replace(GRAPH_TYPES["knn"],
                                                               build=counting))
    with pytest.raises(error, match=match):
        gc.ConsistencyClustering(**params).fit(blobs())
    assert not built, "the graph was built before the parameter was checked"


@pytest.mark.parametrize("n,error", [(-1, ValueError), (2.7, TypeError), ("3", TypeError)])
def test_outliers_needs_a_count(n, error):
    model = gc.ConsistencyClustering(2, alpha=0.99, sigma=1.0, n_neighbors=6,
                                     random_state=0).fit(blobs())
    with pytest.raises(error, match="n must"):
        model.outliers(n)
    assert model.outliers(100).shape == (60,)


def test_communities_refuses_more_communities_than_nodes():
    with pytest.raises(ValueError, match="n_clusters must satisfy 1 <= n_clusters <= the number "
                                         "of nodes = 34; got 100"):
        gc.communities(nx.karate_club_graph(), n_clusters=100)


@pytest.mark.parametrize("params,error,match", [
    (dict(taus="abc"), TypeError, "taus must be a sequence of numbers"),
    (dict(verbose="x"), TypeError, "verbose must be True, False or an integer >= 0"),
])
def test_stability_parameters_name_themselves(params, error, match):
    with pytest.raises(error, match=match):
        gc.StabilityClustering(**params).fit(blobs())


@pytest.mark.parametrize("cls", [gc.SpectralClustering, gc.AHKClustering])
def test_a_bool_is_no_count_for_the_spectral_estimators(cls):
    # bool is an Integral to sklearn's constraints: n_clusters=True reached k-means
    with pytest.raises(TypeError, match="n_clusters must be an integer; got the bool True"):
        cls(True, random_state=0).fit(blobs())
    with pytest.raises(TypeError, match="n_neighbors must be an integer; got the bool True"):
        cls(2, n_neighbors=True, random_state=0).fit(blobs())


@pytest.mark.parametrize("cls", [gc.SpectralClustering, gc.AHKClustering])
def test_spectral_estimators_take_a_generator_as_every_estimator_does(cls):
    labels = cls(2, random_state=np.random.default_rng(0)).fit(blobs()).labels_
    assert np.bincount(labels).tolist() == [30, 30]


def test_omega_on_identical_points_says_its_clusters_are_arbitrary():
    # Omega grows with c: on one repeated point it chose 4 clusters with no word
    with pytest.warns(gc.ConsistencyWarning, match="all 120 points are identical"):
        gc.ConsistencyClustering(criterion="omega", max_clusters=4,
                                 random_state=0).fit(np.ones((120, 2)))


def test_predict_takes_sparse_rows_after_a_dense_fit_and_names_its_class():
    import scipy.sparse as sp

    X = blobs()
    for model in (gc.StabilityClustering(random_state=0).fit(X),
                  gc.ConsistencyClustering(random_state=0).fit(X)):
        assert np.array_equal(model.predict(sp.csr_matrix(X[:7])), model.predict(X[:7]))
        with pytest.raises(ValueError, match=f"but {type(model).__name__} is expecting 2"):
            model.predict(np.ones((2, 3)))


def test_communities_too_small_to_split_say_so():
    with pytest.warns(UserWarning, match="too few to split, so 1 community is returned where "
                                         "n_clusters=2 was asked"):
        assert gc.communities(nx.path_graph(2), method="consistency", n_clusters=2) == [{0, 1}]


@pytest.mark.parametrize("kw,error,match", [
    (dict(symmetrize="x"), TypeError, "symmetrize must be True or False"),
    (dict(return_info="yes"), TypeError, "return_info must be True or False"),
    (dict(weight=5), TypeError, "weight must be the name of an edge attribute"),
])
def test_communities_flags_are_checked(kw, error, match):
    with pytest.raises(error, match=match):
        gc.communities(nx.karate_club_graph(), **kw)


def test_communities_say_when_no_edge_has_the_weight_named():
    with pytest.warns(UserWarning, match="no edge of G has the attribute weight='nope'"):
        gc.communities(nx.karate_club_graph(), weight="nope", random_state=0)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_communities_of_extreme_weights_are_the_weights_rescaled(scale):
    # the degrees' squares overflowed at 1e300; a power-of-two rescale changes no partition
    G = nx.karate_club_graph()
    ref = gc.communities(G, random_state=0)
    for u, v in G.edges:
        G[u][v]["weight"] *= scale
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert gc.communities(G, random_state=0) == ref


def test_a_tiny_sigma_has_zero_weights_without_overflow_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        W = gc.affinity(gc.knn_graph(blobs(), 5), 1e-300)
    assert W.nnz == 0 or not W.data.any()
