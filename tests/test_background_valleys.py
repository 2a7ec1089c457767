"""Clusters found without a background of noise, joined where no density valley lies between
them (`NullModelTests._background_valleys`, `_stability_null._joined_through`)."""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score as ARI

import graphclust as gc
from graphclust.cluster._stability_null import _joined_through
from graphclust.graphs import fuzzy_affinity_from_lists, nearest_neighbors


def _reference_joined_through(labels, keep, joined):
    """Point by point: each cluster takes the group of its kept points (all one group); a
    cluster with none is a group of its own; then numbered by first appearance."""
    group = {}
    for lab, j in zip(labels[keep], joined):
        group.setdefault(int(lab), ("kept", int(j)))
    names, out = {}, []
    for lab in labels:
        g = group.get(int(lab), ("alone", int(lab)))
        out.append(names.setdefault(g, len(names)))
    return np.array(out)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_joined_through_matches_a_dense_reference(data):
    n = data.draw(st.integers(1, 40))
    c = data.draw(st.integers(1, 6))
    labels = np.array(data.draw(st.lists(st.integers(0, c - 1), min_size=n, max_size=n)))
    labels = np.unique(labels, return_inverse=True)[1]  # 0..c'-1, every one used
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    if not keep.any():
        keep[data.draw(st.integers(0, n - 1))] = True
    kept = np.unique(labels[keep])
    # the kept clusters' groups, 0..g-1 by first appearance among the kept points
    groups = np.array(data.draw(st.lists(st.integers(0, kept.size - 1), min_size=kept.size,
                                         max_size=kept.size)))
    joined = np.unique(groups[np.searchsorted(kept, labels[keep])], return_inverse=True)[1]
    got = _joined_through(labels, keep, joined)
    np.testing.assert_array_equal(got, _reference_joined_through(labels, keep, joined))
    # the kept points are grouped as `joined` says; every cluster stays in one group
    assert ARI(got[keep], joined) == 1.0 or np.unique(joined).size == 1
    for lab in np.unique(labels):
        assert np.unique(got[labels == lab]).size == 1


def _ring_in_arcs_beside_a_blob(seed=0, arcs=3):
    """A thick ring uniform over its annulus cut into `arcs` equal arcs, a Gaussian blob apart
    and 300 background points uniform over the box, each given its nearest cluster's label."""
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(0.8**2, 1.2**2, 1500))  # uniform over the annulus' area
    a = rng.uniform(0, 2 * np.pi, 1500)
    ring = np.c_[r * np.cos(a), r * np.sin(a)]
    blob = rng.normal([3.5, 0.0], 0.3, (500, 2))
    box = rng.uniform([-2.5, -2.5], [5.0, 2.5], (300, 2))
    X = np.r_[ring, blob, box]
    arc = np.floor(a / (2 * np.pi / arcs)).astype(int)
    labels = np.r_[arc, np.full(500, arcs), np.zeros(300, int)]
    d = np.linalg.norm(box[:, None, :] - X[None, :2000, :], axis=2)
    labels[2000:] = labels[:2000][np.argmin(d, axis=1)]
    noise = np.r_[np.zeros(2000, bool), np.ones(300, bool)]
    return X, labels, noise


def _graph(X, k=10):
    idx, dist = nearest_neighbors(X, k, method="exact")
    return fuzzy_affinity_from_lists(idx, dist)


def test_arcs_of_a_ring_are_joined_and_a_blob_beside_them_is_not():
    X, labels, noise = _ring_in_arcs_beside_a_blob()
    model = gc.StabilityClustering()
    notes = []
    got = model._background_valleys(X, _graph(X), labels, noise, notes.append)
    # the ring whole, the blob apart; the background's points follow their clusters
    assert got.max() == 1
    assert np.unique(got[:1500]).size == 1 and np.unique(got[1500:2000]).size == 1
    assert got[0] != got[1500]
    np.testing.assert_array_equal(got, _joined_through(labels, ~noise, got[~noise]))
    assert notes and "4 clusters found without the background" in notes[0]
    assert model.escape_time_ is not None


def test_arcs_that_all_join_leave_one_cluster_and_no_walk_length():
    X, labels, noise = _ring_in_arcs_beside_a_blob()
    ring = np.r_[np.arange(1500), np.flatnonzero(noise & (labels < 3))]  # no blob
    X, labels, noise = X[ring], labels[ring], noise[ring]
    model = gc.StabilityClustering()
    got = model._background_valleys(X, _graph(X), labels, noise)
    assert (got == 0).all()
    assert (model.selection_rule_, model.tau_, model.escape_time_) == ("none", None, None)


def test_two_blobs_with_a_valley_between_them_stay_apart():
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal([0, 0], 0.5, (600, 2)), rng.normal([2.5, 0], 0.5, (600, 2)),
              rng.uniform([-2, -2], [4.5, 2], (200, 2))]
    labels = np.r_[np.zeros(600, int), np.ones(600, int), (X[1200:, 0] > 1.25).astype(int)]
    noise = np.r_[np.zeros(1200, bool), np.ones(200, bool)]
    W = _graph(X)
    assert (W[:600][:, 600:1200]).nnz > 0  # adjacent: the dip test reads the pair
    model = gc.StabilityClustering()
    got = model._background_valleys(X, W, labels, noise)
    np.testing.assert_array_equal(got, labels)


def test_nothing_to_join_without_two_clusters_outside_the_background():
    X, _, noise = _ring_in_arcs_beside_a_blob()
    labels = noise.astype(int)  # one cluster of kept points, the background's own apart
    got = gc.StabilityClustering()._background_valleys(X, _graph(X), labels, noise)
    np.testing.assert_array_equal(got, labels)


def _ring_in_clutter(seed):
    """A thick ring and two blobs in a background of uniform clutter (15 % of the points)."""
    rng = np.random.default_rng(seed)
    a, r = rng.uniform(0, 2 * np.pi, 1000), rng.uniform(0.8, 1.2, 1000)
    P = np.r_[np.c_[r * np.cos(a), r * np.sin(a)], rng.normal([3.5, 0], 0.35, (500, 2)),
              rng.normal([-3.5, 0], 0.35, (500, 2))]
    y = np.repeat([0, 1, 2], [1000, 500, 500])
    return np.r_[P, rng.uniform([-5, -2.5], [5, 2.5], (300, 2))], y


def test_a_fit_keeps_a_ring_in_clutter_whole():
    # a draw where the scan without the background cut the ring in two arcs (4 clusters, no
    # warning, before the valleys were read between a background's clusters)
    X, y = _ring_in_clutter(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gc.StabilityWarning)
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.noise_.any() and model.n_clusters_ == 3
    assert ARI(y, model.labels_[:2000]) > 0.99
