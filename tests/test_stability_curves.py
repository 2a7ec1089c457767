"""The curve tests of `StabilityClustering` (`cluster/_stability_curves.py`): pieces of a curve
that fell apart at a chance gap read along it across the gap (`_bridged_valleys`), on a curve
and, beside blobs, where the pieces are curves on their own."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

import graphclust as gc
from graphclust.cluster._gap_null import cluster_gaps, line_spacing_null
from graphclust.cluster._null_model import intrinsic_dimension
from graphclust.datasets import two_spirals
from graphclust.graphs import knn_graph_from_neighbors, nearest_neighbors


def _crossings(graph, X, dist, labels, c):
    """The crossings the gap test reads, as `gap_test(return_edges=True)` returns them."""
    return cluster_gaps(graph, X, dist, labels, np.arange(c), return_edges=True)[1]


def _model():
    model = gc.StabilityClustering()
    model.intrinsic_dimension_, model.selection_rule_ = 1.0, "metastable"
    return model


def _pieces(arc, noise, seed):
    """Points at arc lengths `arc` on a circle of radius 3 with Gaussian noise, their 10-NN
    lists, the union graph and the components as labels (ordered by arc length)."""
    rng = np.random.default_rng(seed)
    X = 3.0 * np.c_[np.cos(arc / 3.0), np.sin(arc / 3.0)] + rng.normal(0, noise, (arc.size, 2))
    idx, dist = nearest_neighbors(X, 10, method="exact")
    graph = knn_graph_from_neighbors(idx, dist)
    comp = graph.component_labels
    labels = np.unique(comp[np.argsort(arc)], return_index=True)[1].argsort().argsort()[comp]
    return X, idx, dist, graph, labels


def test_pieces_of_an_arm_across_a_chance_gap_are_joined():
    # two spirals of 600 points (seed 2): one arm's innermost 42 points fall apart from the
    # rest of it, at a gap of 1.72 median list radii that a uniform line's widest spacing
    # matches, and no density valley lies along the arm: the pieces are one curve, the other
    # arm stays apart (its bridge is wider than any chance spacing)
    X, y = two_spirals(600, random_state=2)
    idx, dist = nearest_neighbors(X, 10, method="exact")
    graph = knn_graph_from_neighbors(idx, dist)
    labels = graph.component_labels
    assert np.bincount(labels).tolist() == [258, 42, 300]
    gaps = cluster_gaps(graph, X, dist, labels, [1])
    assert 1.0 < gaps[0] <= line_spacing_null(600, 10)
    model = _model()
    W = graph.distances
    joined = model._bridged_valleys(X, idx, dist, W, labels,
        _crossings(graph, X, dist, labels, 3), W)
    assert adjusted_rand_score(y, joined) == 1.0
    # read by the fit's tiers only: a given c is kept (`_null_test`), so is the fine tier's
    for rule in ("n_clusters", "fine"):
        model.selection_rule_ = rule
        assert (model._null_test(X, idx, dist, W.tocsr(), labels) == labels).all()


def test_pieces_of_a_curve_across_a_gap_wider_than_chance_stay_apart():
    # a uniform arc of 400 points with a gap of 11 mean spacings: wider than a uniform line's
    # widest spacing, no piece of one curve for the dip test to read
    rng = np.random.default_rng(3)
    arc = np.sort(rng.uniform(0, 8.0, 400))
    arc[arc > 6.0] += 0.22
    X, idx, dist, graph, labels = _pieces(arc, 0.002, 3)
    assert labels.max() == 1
    assert (cluster_gaps(graph, X, dist, labels, [0, 1]) > line_spacing_null(400, 10)).all()
    W = graph.distances
    joined = _model()._bridged_valleys(X, idx, dist, W, labels,
        _crossings(graph, X, dist, labels, 2), W)
    assert (joined == labels).all()


def test_a_tip_beside_the_middle_of_another_curve_is_no_continuation():
    # the end of one segment points at the middle of another, across a gap within a uniform
    # line's widest spacing: the bridge runs across the other's direction and ends at no end
    # of it (`along_tangents`, `cut_at_ends`), no cut of one curve: kept apart
    rng = np.random.default_rng(7)
    a = np.c_[rng.uniform(-4.0, 0.0, 400), rng.normal(0, 0.002, 400)]
    b = np.c_[0.13 + rng.normal(0, 0.002, 200), rng.uniform(-2.0, 2.0, 200)]
    X = np.r_[a, b]
    idx, dist = nearest_neighbors(X, 10, method="exact")
    graph = knn_graph_from_neighbors(idx, dist)
    labels = np.repeat([0, 1], [400, 200])
    assert graph.n_components == 2 and (graph.component_labels == labels).all()
    assert (cluster_gaps(graph, X, dist, labels, [0, 1]) <= line_spacing_null(600, 10)).all()
    W = graph.distances
    joined = _model()._bridged_valleys(X, idx, dist, W, labels,
        _crossings(graph, X, dist, labels, 2), W)
    assert (joined == labels).all()


@pytest.mark.parametrize("seed", [2, 3])
def test_the_demos_spirals_broken_at_a_chance_gap_are_their_arms(seed):
    # two spirals of 600 points: an arm's innermost 40-42 points fell apart from it at a gap
    # that the gap test passed (1.72 and 1.38 median list radii) and were a third cluster;
    # seed 3's look reads the arms along their tangents (`_tangent_gaps`)
    X, y = two_spirals(600, random_state=seed)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always", gc.StabilityWarning)
        model = gc.StabilityClustering(random_state=seed).fit(X)
    assert not [w for w in said if issubclass(w.category, gc.StabilityWarning)]
    assert model.n_clusters_ == 2
    assert adjusted_rand_score(y, model.labels_) == pytest.approx(1.0)


def _arc_beside_blobs(seed, gap):
    """An arc of 300 points (angles uniform on [0, 3], those past 1.5 moved on by `gap`,
    scatter 0.005) beside two Gaussian blobs of 200: no curve as a whole (intrinsic dimension
    1.57-1.58); its 10-NN lists, graph, components as labels, and a model of that dimension."""
    rng = np.random.default_rng(seed)
    a = np.sort(rng.uniform(0, 3.0, 300))
    a[a > 1.5] += gap
    X = np.r_[np.c_[np.cos(a), np.sin(a)] + rng.normal(0, 0.005, (300, 2)),
              rng.normal([4, 0], 0.3, (200, 2)), rng.normal([4, 3], 0.3, (200, 2))]
    idx, dist = nearest_neighbors(X, 10, method="exact")
    graph = knn_graph_from_neighbors(idx, dist)
    model = _model()
    model.intrinsic_dimension_ = intrinsic_dimension(dist)
    return X, idx, dist, graph, graph.component_labels, model


def test_an_arc_beside_blobs_across_a_chance_gap_is_joined():
    # seed 2: the arc falls apart at a chance gap into 42 + 258 points (1.61 median list
    # radii, under a uniform line's widest spacing, 1.88); the pieces are curves on their own
    X, idx, dist, graph, labels, model = _arc_beside_blobs(2, 0.0)
    assert np.bincount(labels).tolist() == [42, 258, 200, 200]
    assert round(model.intrinsic_dimension_) == 2
    assert model._curve_clusters(X, labels).tolist() == [True, True, False, False]
    W = graph.distances
    joined = model._bridged_valleys(X, idx, dist, W, labels,
                                    _crossings(graph, X, dist, labels, 4), W)
    assert np.bincount(joined).tolist() == [300, 200, 200]


def test_an_arc_beside_blobs_across_a_wide_gap_stays_apart():
    # seed 3 with a gap of 0.1 radians: 139 + 161 points at 1.91 median list radii, wider
    # than a uniform line's widest spacing (1.88)
    X, idx, dist, graph, labels, model = _arc_beside_blobs(3, 0.1)
    assert np.bincount(labels).tolist() == [139, 161, 200, 200]
    W = graph.distances
    joined = model._bridged_valleys(X, idx, dist, W, labels,
                                    _crossings(graph, X, dist, labels, 4), W)
    assert (joined == labels).all()
