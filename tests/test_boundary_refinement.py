"""`refine_boundaries`: node-level Markov-stability moves against a dense reference, its fixed
point, permutation equivariance, components, bad input, and where `StabilityClustering` uses it."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import graphclust as gc
import graphclust.cluster._boundary_refinement as br
import graphclust.cluster._stability_clustering as scm
from graphclust.cluster._boundary_refinement import refine_boundaries
from graphclust.datasets import three_moons

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _dense_refine(W, labels, alpha, max_sweeps=20):
    """The same sweeps with R_alpha = (1 - alpha)(I - alpha D^-1 W)^-1 inverted densely."""
    W = W.toarray()
    d = W.sum(axis=1)
    R = (1 - alpha) * np.linalg.inv(np.eye(len(d)) - alpha * W / d[:, None])
    labels = np.asarray(labels)
    for _ in range(max_sweeps):
        c = labels.max() + 1
        pi = np.bincount(labels, weights=d, minlength=c) / d.sum()
        gain = R @ np.eye(c)[labels] - pi
        gain[:, pi == 0] = -np.inf
        moved = gain.argmax(axis=1)
        if np.array_equal(moved, labels):
            break
        labels = moved
    return np.unique(labels, return_inverse=True)[1], gain


def _planted(n_blocks, size, p_in, p_out, seed):
    rng = np.random.default_rng(seed)
    n = n_blocks * size
    truth = np.repeat(np.arange(n_blocks), size)
    p = np.where(truth[:, None] == truth[None, :], p_in, p_out)
    A = np.triu(rng.random((n, n)) < p, 1).astype(float)
    A = A + A.T + np.eye(n) * 1e-3  # a tiny self-loop: every degree positive
    return sp.csr_matrix(A), truth, rng


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n_blocks=st.integers(2, 4), alpha=st.sampled_from(
    [0.5, 0.8, 8 / 9, 0.97]), flip=st.floats(0.0, 0.4))
def test_sweeps_match_the_dense_reference(seed, n_blocks, alpha, flip):
    W, truth, rng = _planted(n_blocks, 25, 0.4, 0.05, seed)
    start = np.where(rng.random(truth.size) < flip, rng.integers(n_blocks, size=truth.size),
                     truth)
    start = np.unique(start, return_inverse=True)[1]
    want, gain = _dense_refine(W, start, alpha)
    top = np.sort(gain, axis=1)
    assume(np.min(top[:, -1] - top[:, -2]) >= 1e-6)  # a near-tie may break either way in CG
    got, sweeps = refine_boundaries(W, start, alpha, rtol=1e-10, push_tol=1e-12)
    assert np.array_equal(got, want)
    assert 1 <= sweeps <= 20


def test_later_sweeps_by_pushes_match_the_dense_reference(monkeypatch):
    """Pushes without a work limit (every later sweep by pushes) reach the reference's labels."""
    calls = []
    push = br.push_resolvent

    def unlimited(*args, max_work=None, **kwargs):
        out = push(*args, **kwargs)
        calls.append(out[0])
        return out

    monkeypatch.setattr(br, "push_resolvent", unlimited)
    for seed, alpha in [(8, 0.97), (12, 0.97), (10, 8 / 9), (7, 8 / 9)]:  # 2-14 sweeps
        W, truth, rng = _planted(3, 60, 0.3, 0.05, seed)
        start = np.where(rng.random(truth.size) < 0.3, (truth + 1) % 3, truth)
        want, gain = _dense_refine(W, start, alpha, max_sweeps=50)
        top = np.sort(gain, axis=1)
        assert np.min(top[:, -1] - top[:, -2]) >= 1e-6  # no near-tie in these draws
        got, sweeps = refine_boundaries(W, start, alpha, rtol=1e-10, push_tol=1e-10)
        assert np.array_equal(got, want) and sweeps >= 2
    assert calls and all(calls)


def test_the_result_is_a_fixed_point():
    W, truth, rng = _planted(3, 40, 0.3, 0.04, 1)
    start = np.where(rng.random(truth.size) < 0.2, (truth + 1) % 3, truth)
    labels, sweeps = refine_boundaries(W, start, 0.9)
    assert sweeps >= 2  # points moved
    again, sweeps2 = refine_boundaries(W, labels, 0.9)
    assert sweeps2 == 1 and np.array_equal(again, labels)


def test_planted_blocks_are_recovered_from_a_noisy_start():
    W, truth, rng = _planted(3, 60, 0.3, 0.02, 2)
    start = np.where(rng.random(truth.size) < 0.15, (truth + 1) % 3, truth)
    labels, _ = refine_boundaries(W, start, 0.8)
    assert np.array_equal(labels, truth)


def test_a_node_permutation_permutes_the_labels():
    W, truth, rng = _planted(3, 30, 0.35, 0.06, 3)
    start = np.where(rng.random(truth.size) < 0.25, rng.integers(3, size=truth.size), truth)
    perm = rng.permutation(truth.size)
    labels, _ = refine_boundaries(W, start, 0.8)
    permuted, _ = refine_boundaries(W[perm][:, perm], start[perm], 0.8)
    assert np.array_equal(permuted, labels[perm])


def test_no_point_moves_to_a_cluster_in_another_component():
    W1, t1, _ = _planted(2, 20, 0.5, 0.05, 4)
    W = sp.block_diag([W1, W1]).tocsr()
    start = np.r_[t1, t1 + 2]
    start[:5] = 1  # wrong, but within the component
    labels, _ = refine_boundaries(W, start, 0.9)
    comp = np.repeat([0, 1], 40)
    for c in np.unique(labels):
        assert np.unique(comp[labels == c]).size == 1


def test_an_unused_cluster_number_is_dropped_and_the_rest_renumbered():
    W, truth, _ = _planted(2, 30, 0.5, 0.02, 5)
    labels, _ = refine_boundaries(W, truth * 2, 0.8)  # clusters 0 and 2, none numbered 1
    assert np.array_equal(labels, truth)


@pytest.mark.parametrize("kwargs, match", [
    ({"alpha": 1.0}, "alpha"),
    ({"alpha": 0.0}, "alpha"),
    ({"labels": np.zeros(3, dtype=int)}, "labels"),
    ({"labels": -np.ones(10, dtype=int)}, "labels"),
])
def test_bad_input_is_refused(kwargs, match):
    W = sp.csr_matrix(np.ones((10, 10)))
    args = {"labels": np.zeros(10, dtype=int), "alpha": 0.5} | kwargs
    with pytest.raises(ValueError, match=match):
        refine_boundaries(W, args["labels"], args["alpha"])


def test_a_node_without_edges_is_refused():
    W = sp.csr_matrix(np.ones((4, 4)))
    W = sp.block_diag([W, sp.csr_matrix((1, 1))]).tocsr()
    with pytest.raises(ValueError, match="positive degree"):
        refine_boundaries(W, np.zeros(5, dtype=int), 0.5)


def _spy(monkeypatch):
    calls = []

    def spy(W, labels, alpha, **kw):
        out = refine_boundaries(W, labels, alpha, **kw)
        calls.append((alpha, np.asarray(labels).copy(), out[0].copy()))
        return out

    monkeypatch.setattr(scm, "refine_boundaries", spy)
    return calls


def test_a_metastable_fit_keeps_its_boundaries(monkeypatch):
    calls = _spy(monkeypatch)
    X, _ = three_moons(600, random_state=0)
    m = gc.StabilityClustering(random_state=0, settle_boundaries=True).fit(X)
    assert m.selection_rule_ == "metastable" and calls == []


def test_settle_boundaries_must_be_a_bool():
    with pytest.raises(TypeError, match="settle_boundaries"):
        gc.StabilityClustering(settle_boundaries="yes").fit(np.random.default_rng(0).normal(
            size=(50, 2)))


def test_a_plateau_fit_settles_its_boundaries_at_twice_its_walk_length(monkeypatch, shared_data):
    from graphclust.datasets import load_pendigits

    calls = _spy(monkeypatch)
    X = np.vstack([load_pendigits("train")[0], load_pendigits("test")[0]])
    m = gc.StabilityClustering(random_state=0).fit(X)  # the default leaves them
    assert m.selection_rule_ == "plateau" and calls == []
    settled = gc.StabilityClustering(random_state=0, settle_boundaries=True).fit(X)
    assert len(calls) == 1 and settled.tau_ == m.tau_
    alpha, before, after = calls[0]
    assert alpha == pytest.approx(2 * m.tau_ / (1 + 2 * m.tau_))
    # in the fit's row order; the clusters' own scans may split what was settled, never join
    for model, settled_or_not in ((settled, after), (m, before)):
        pairs = np.unique(np.c_[model.labels_[model._fit_order], settled_or_not], axis=0)
        assert np.unique(pairs[:, 0]).size == len(pairs)  # each cluster inside one of them
        # and the clusters beyond those are the parts the own splits added
        added = sum(s["c"] - 1 for s in model.cluster_splits_)
        assert len(pairs) == np.unique(settled_or_not).size + added
    assert 0 < np.mean(before != after) < 0.01  # a few boundary points (0.08 % measured)


def test_an_empty_graph_has_nothing_to_move():
    labels, sweeps = refine_boundaries(sp.csr_matrix((0, 0)), np.array([], dtype=int), 0.5)
    assert labels.shape == (0,) and sweeps == 0


def test_the_sweep_limit_warns_and_returns_that_sweeps_moves():
    W, truth, rng = _planted(3, 40, 0.3, 0.04, 1)
    start = np.where(rng.random(truth.size) < 0.2, (truth + 1) % 3, truth)
    want, _ = _dense_refine(W, start, 0.9, max_sweeps=1)
    with pytest.warns(UserWarning, match=r"points still moved in sweep 1 at alpha = 0.9"):
        labels, sweeps = refine_boundaries(W, start, 0.9, max_sweeps=1)
    assert sweeps == 1 and np.array_equal(labels, want)
    assert not np.array_equal(labels, np.unique(start, return_inverse=True)[1])
