"""Each whole component split by its own scan: `split_whole_components`, `outlasts_whole`,
and the fit that uses them."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc
from graphclust.cluster._component_splits import (SPLIT_RULES, outlasts_whole,
                                                  split_whole_components)
from graphclust.metrics import nmi


def _blocks(*sizes):
    return sp.block_diag([np.ones((m, m)) - np.eye(m) for m in sizes], format="csr")


def _halves(rule="metastable"):
    """A stand-in for the fit's choice: every component in two halves, under `rule`; the
    calls it received are recorded."""
    calls = []

    def choose(Wc, members):
        calls.append(members.copy())
        assert Wc.shape == (members.size, members.size)
        return np.arange(members.size) * 2 // members.size, rule, 4.0

    return choose, calls


def test_only_whole_components_of_several_pieces_are_scanned_and_split():
    W = _blocks(4, 6, 2, 4)  # components 0-3, 4-9, 10-11, 12-15
    # component 0 whole; 1 already split; 2 whole but one piece; 3 shares a cluster with 2
    labels = np.array([0] * 4 + [1] * 3 + [2] * 3 + [3] * 2 + [3] * 4)
    pieces = np.arange(16)
    pieces[10:12] = 10  # component 2 is one piece
    choose, calls = _halves()
    new, splits = split_whole_components(W, labels, pieces, choose)
    assert [c.tolist() for c in calls] == [[0, 1, 2, 3]]
    assert new.tolist() == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4]
    assert splits == [{"size": 4, "rule": "metastable", "tau": 4.0, "c": 2}]


@pytest.mark.parametrize("rule", ["plateau", "fine", "shorter", "weak", "none"])
def test_a_choice_outside_the_split_rules_keeps_the_component_whole(rule):
    assert rule not in SPLIT_RULES
    W = _blocks(4, 4)
    labels = np.repeat([1, 0], 4)
    choose, calls = _halves(rule)
    new, splits = split_whole_components(W, labels, np.arange(8), choose)
    assert new is labels or np.array_equal(new, labels)  # nothing split: labels unchanged
    assert len(calls) == 2 and [s["c"] for s in splits] == [1, 1]


def test_a_connected_graph_is_not_scanned():
    W = _blocks(5)
    W = W + sp.csr_matrix(([1.0, 1.0], ([0, 4], [4, 0])), shape=(5, 5))
    choose, calls = _halves()
    labels = np.zeros(5, dtype=np.int64)
    new, splits = split_whole_components(sp.csr_matrix(W), labels, np.arange(5), choose)
    assert calls == [] and splits == [] and np.array_equal(new, labels)


def test_split_labels_are_a_canonical_partition_that_refines_the_input():
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 9, size=6)
    W = _blocks(*sizes)
    comp = np.repeat(np.arange(sizes.size), sizes)
    labels = sizes.size - 1 - comp  # numbered backwards: the output renumbers
    new, splits = split_whole_components(W, labels, np.arange(comp.size), _halves()[0])
    assert len(splits) == sizes.size and all(s["c"] == 2 for s in splits)
    first = np.unique(new, return_index=True)[1]
    assert np.array_equal(np.sort(first), first)  # labels in order of first appearance
    for k in np.unique(new):  # each new cluster lies inside one old cluster
        assert np.unique(labels[new == k]).size == 1
    assert int(new.max()) + 1 == 2 * sizes.size


def _scan(window, t_rel, taus=None):
    taus = 2.0 ** np.arange(14) if taus is None else np.asarray(taus, float)
    return {"taus": taus, "window": window, "relaxation_time": t_rel}


def test_a_split_must_outlast_the_component_whole_by_one_step_of_the_scan():
    step = np.log(2.0)
    end = np.log(8192.0) + 0.5 * step
    whole = end - np.log(1000.0)  # the component whole from its relaxation time on
    assert outlasts_whole(_scan(whole + step + 1e-9, 1000.0))
    assert not outlasts_whole(_scan(whole + step - 1e-3, 1000.0))
    # a component that relaxes beyond the scan has no whole window: one step is enough
    assert outlasts_whole(_scan(step, 1e5)) and not outlasts_whole(_scan(0.5 * step, 1e5))
    # no metastable window (another tier chose), or no relaxation found
    assert not outlasts_whole(_scan(None, 1000.0))
    assert outlasts_whole(_scan(step, np.inf))
    # the step is the scan's own: walk lengths a factor 4 apart
    four = _scan(np.log(4.0) - 1e-3, 1e6, taus=4.0 ** np.arange(7))
    assert not outlasts_whole(four)


def _ring_and_outliers(seed, sd=0.3, n=40):
    """Eight touching blobs (one at the centre, seven on a ring of radius 2) and seven far
    blobs on a ring of radius 6.3, n points each: the layout of Veenman et al.'s R15."""
    rng = np.random.default_rng(seed)
    inner = [(0.0, 0.0)] + [(2 * np.cos(a), 2 * np.sin(a)) for a in np.arange(7) * 2 * np.pi / 7]
    outer = [(6.3 * np.cos(a), 6.3 * np.sin(a)) for a in np.arange(7) * 2 * np.pi / 7 + 0.2]
    X = np.vstack([rng.normal(c, sd, (n, 2)) for c in inner + outer])
    return X, np.repeat(np.arange(15), n)


def test_blobs_of_a_component_are_found_beside_far_components():
    # draw 4 of this layout: the ring's eight blobs are one component, and without its own
    # scan the ring stayed one cluster beside the far blobs (c = 9, NMI 0.82)
    X, y = _ring_and_outliers(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert any(s["c"] > 1 for s in model.component_splits_)
    assert model.n_clusters_ >= 13 and nmi(y, model.labels_) > 0.95


def test_moons_stay_whole_and_the_fit_is_unchanged_by_row_order():
    X, y = gc.datasets.two_moons(400, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=1).fit(X)
        perm = np.random.default_rng(0).permutation(len(y))
        again = gc.StabilityClustering(random_state=1).fit(X[perm])
    # each moon is a component that its own scan splits, but for less than one step longer
    # than the moon whole (docs/battery.md)
    assert model.n_clusters_ == 2 and nmi(y, model.labels_) == pytest.approx(1.0)
    assert [s["c"] for s in model.component_splits_] == [1, 1]
    assert nmi(model.labels_[perm], again.labels_) == pytest.approx(1.0)


def test_the_scan_is_read_as_it_is_after_a_split_and_the_split_survives_a_file(tmp_path):
    X, _ = _ring_and_outliers(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    at_tau = model.labels_at(tau=model.tau_)  # the scan's row: the ring still whole
    assert np.unique(at_tau).size < model.n_clusters_
    for k in np.unique(model.labels_):  # labels_ refines it
        assert np.unique(at_tau[model.labels_ == k]).size == 1
    np.testing.assert_array_equal(model.labels_at(n_clusters=model.n_clusters_), model.labels_)
    path = tmp_path / "model.npz"
    model.save(path)
    again = gc.StabilityClustering.load(path)
    assert again.component_splits_ == model.component_splits_
    np.testing.assert_array_equal(again.labels_at(tau=model.tau_), at_tau)
    np.testing.assert_array_equal(again.predict(X[:50]), model.predict(X[:50]))
