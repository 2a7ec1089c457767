"""Groups of fewer than 2 n_neighbors points are no cluster structure (issue 14, reliability).

A dozen far near-duplicates (a sensor's stuck value, rare values of a few features: UCI
yeast's 15-point component) form a connected component of the kNN graph, and a partition
into whole components is metastable at every walk length. Before this rule, such a group
beside data with no clusters of its own turned the fine tier's answer (its tiles and its
warning) into two clusters and no warning: 12 near-duplicates added to UCI ionosphere gave
c = 2, NMI 0. Now the fit answers for the rest as it would without the group, and says so
(`FineTierLooks._outlier_groups_choice`; docs/battery.md, *Built: small groups are no cluster
structure*). A group of 2 n_neighbors points or more is resolved by the graph and stays a
cluster.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc


def _blob_and_group(group, seed=1, n=600, d=6):
    """A structureless Gaussian blob in d dimensions and `group` near-duplicates far away."""
    rng = np.random.default_rng(seed)
    return np.vstack([rng.normal(size=(n, d)), 12.0 + 1e-3 * rng.normal(size=(group, d))])


def _fit(X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    return model, [str(w.message) for w in caught if issubclass(w.category, gc.StabilityWarning)]


@pytest.fixture(scope="module")
def with_group():
    return _fit(_blob_and_group(12))


def test_a_small_group_beside_a_structureless_blob_gets_the_fine_tier(with_group):
    model, messages = with_group
    assert model.selection_rule_ == "fine" and model.tau_ == 1.0
    assert model.n_clusters_ > 2
    group = model.labels_[600:]
    # the group is tiled apart from the blob: no tile holds points of both
    assert not np.isin(group, model.labels_[:600]).any()
    # the blob's own scan found nothing, which the split records show
    assert [(s["size"], s["component"], s["rule"], s["c"])
            for s in model.cluster_splits_] == [(600, True, "fine", 1)]
    named = [m for m in messages if m.startswith("the only cluster structure found")]
    assert len(named) == 1 and "1 group(s) of 12 points" in named[0]
    assert "2 n_neighbors = 20 points" in named[0] and "apart from 600 points" in named[0]
    # and the fine tier's own warning follows, as for the blob alone
    assert any(m.startswith("no cluster structure found") for m in messages)


def test_the_blob_alone_gets_the_same_tier():
    model, _ = _fit(_blob_and_group(0))
    assert model.selection_rule_ == "fine"


def test_a_group_of_2_n_neighbors_points_is_a_cluster():
    model, messages = _fit(_blob_and_group(2 * 10))
    assert model.selection_rule_ == "metastable" and model.n_clusters_ == 2
    assert sorted(np.bincount(model.labels_).tolist()) == [20, 600]
    assert not [m for m in messages if "cluster structure" in m]


# ---------------------------------------------------------------- the gate, unit by unit

def _gate_model(rule="metastable"):
    model = gc.StabilityClustering(random_state=0)
    model.selection_rule_, model.density_exponent_ = rule, None
    return model


def _components(*sizes):
    blocks = [sp.csr_matrix(np.ones((s, s)) - np.eye(s)) for s in sizes]
    return sp.block_diag(blocks, format="csr")


def _scan(n, tiles):
    return {"vi": np.array([0.05, 0.0]), "consensus": [tiles, np.zeros(n, dtype=np.int64)]}


@pytest.mark.parametrize("sizes, splits, expect", [
    ((100, 12), [(100, True, "fine", 1)], True),         # the yeast case
    ((100, 12, 15), [(100, True, "unimodal", 1)], True),  # two groups; parts with no valley
    ((100, 12), [(100, True, "weak", 1)], True),         # a split the null model would warn of
    ((100, 20), [(100, True, "fine", 1)], False),        # a group of 2 k points is resolved
    ((100, 12), [(100, True, "shorter", 1)], False),     # a real split, rejected for its window
    ((100, 12), [], False),                              # the large one never examined
])
def test_the_gate(sizes, splits, expect):
    W = _components(*sizes)
    n = W.shape[0]
    labels = np.repeat(np.arange(len(sizes)), sizes)
    tiles = np.arange(n) // 10
    model = _gate_model()
    model.cluster_splits_ = [dict(zip(("size", "component", "rule", "c"), s)) for s in splits]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = model._outlier_groups_choice(W, labels, _scan(n, tiles), 10)
    if expect:
        assert np.array_equal(got, tiles)
        assert len(caught) == 1 and issubclass(caught[0].category, gc.StabilityWarning)
    else:
        assert got is None and not caught


def test_the_gate_needs_whole_components():
    W = _components(100, 12).tolil()
    W[0, 100] = W[100, 0] = 1.0  # the group joined to the blob by one edge
    labels = np.repeat([0, 1], [100, 12])
    model = _gate_model()
    model.cluster_splits_ = [{"size": 100, "component": True, "rule": "fine", "c": 1}]
    assert model._outlier_groups_choice(W.tocsr(), labels, _scan(112, labels), 10) is None


@pytest.mark.parametrize("rule", ["plateau", "fine", "components"])
def test_the_gate_reads_only_a_metastable_choice(rule):
    W = _components(100, 12)
    model = _gate_model(rule)
    model.cluster_splits_ = [{"size": 100, "component": True, "rule": "fine", "c": 1}]
    labels = np.repeat([0, 1], [100, 12])
    assert model._outlier_groups_choice(W, labels, _scan(112, labels), 10) is None


def test_the_gate_keeps_the_answer_when_the_fine_tiers_seeds_disagree():
    W = _components(100, 12)
    model = _gate_model()
    model.cluster_splits_ = [{"size": 100, "component": True, "rule": "fine", "c": 1}]
    labels = np.repeat([0, 1], [100, 12])
    scan = _scan(112, labels)
    scan["vi"][0] = model.fine_vi_max + 0.1  # the fine tier would return one cluster
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert model._outlier_groups_choice(W, labels, scan, 10) is None


def test_components_choice_needs_two_resolved_components():
    """The fine tier's last look returns the graph's components only when two of them have
    2 n_neighbors points or more: a blob and a dozen outliers are not two clusters."""
    model = gc.StabilityClustering(random_state=0)
    model.intrinsic_dimension_ = 2.0
    dist = np.ones((112, 10))
    assert model._components_choice(_components(100, 12), None, dist) is None
    labels, rule = model._components_choice(_components(100, 20), None, np.ones((120, 10)))
    assert rule == "components" and np.array_equal(labels, np.repeat([0, 1], [100, 20]))
