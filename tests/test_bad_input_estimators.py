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
