"""The density look's valley choice: persistent levels kept where density valleys part them.

`join_unimodal_one_by_one` (dip-means' agglomeration) against its contract, and the fit on a
sample large enough that the density walk's metastability no longer holds two overlapping
Gaussians apart (`FineTierLooks._valley_choice`).
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
import graphclust.cluster._stability_looks as looks
from graphclust.cluster._valley_joins import (DIP_VIEWERS, edge_length_matrix, _grouped,
                                              _viewed_pvalue, join_unimodal_one_by_one,
                                              join_unimodal_pairs)
from graphclust.cluster._partition_quality import adjacent_pairs
from graphclust.graphs import rescale
from graphclust.cluster._dip_test import DIP_LEVEL, _null_dips, dip_test


def _chain(n):
    return sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1]).tocsr()


def _modes(sizes, gap, seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(gap * i, 1.0, s) for i, s in enumerate(sizes)])
    return np.sort(x)[:, None]


@settings(max_examples=15, deadline=None)
@given(st.integers(1, 3), st.lists(st.integers(40, 200), min_size=2, max_size=6),
       st.integers(0, 10**6))
def test_one_by_one_ends_with_every_adjacent_pair_bimodal(n_modes, cuts, seed):
    # 1-3 modes on a line (a chain graph), cut into 2-6 consecutive parts anywhere (a part
    # across a valley is bimodal itself: no join mends it, so c may exceed the modes)
    X = _modes([300] * n_modes, 6.0, seed)
    n = X.shape[0]
    bounds = np.unique(np.clip(np.cumsum(cuts) * n // (sum(cuts) + 100), 1, n - 1))
    sub = np.searchsorted(bounds, np.arange(n), side="right")
    W = _chain(n)
    joined = join_unimodal_one_by_one(X, sub, W)
    # a coarsening of sub: each part lies in one joined part
    assert all(np.unique(joined[sub == i]).size == 1 for i in np.unique(sub))
    # the stopping rule: every adjacent pair left has a valley at the level over their number,
    # as the pairs are seen there (`_viewed_pvalue`: from DIP_VIEWERS of their points; one
    # view, `join_unimodal_pairs`'s, may not see it: three modes cut at 40 / 93 / 40 / 138 / 40,
    # seed 0, p = 0.035 from the far end against 0.05 / 3)
    if joined.max() > 0:
        Xs = rescale(X)[0]
        lengths, groups = edge_length_matrix(Xs, W), _grouped(joined, int(joined.max()) + 1)
        pairs = adjacent_pairs(W, joined).tolist()
        level = DIP_LEVEL / len(pairs)
        for a, b in pairs:
            a, b = (a, b) if groups[a][0] < groups[b][0] else (b, a)
            assert _viewed_pvalue(Xs, lengths, groups[a], groups[b], level, DIP_VIEWERS,
                                  0) < level
    # the numbers of sub's parts do not matter
    relabel = np.random.default_rng(seed).permutation(int(sub.max()) + 1)
    again = join_unimodal_one_by_one(X, relabel[sub], W)
    np.testing.assert_array_equal(again, joined)


def test_one_by_one_keeps_a_valley_that_joining_all_pairs_at_once_loses():
    # two modes and a part across the valley: both of its pairs are unimodal on their own
    rng = np.random.default_rng(0)
    X = np.sort(np.concatenate([rng.normal(0, 1, 300), rng.normal(5, 1, 300)]))[:, None]
    sub = np.repeat([0, 1, 2], [280, 40, 280])
    W = _chain(600)
    assert join_unimodal_pairs(X, sub, W)[0].max() == 0
    joined = join_unimodal_one_by_one(X, sub, W)
    assert sorted(np.bincount(joined).tolist()) == [280, 320]


def test_one_by_one_of_one_part_and_of_parts_without_edges():
    X = _modes([200], 6.0, 1)
    assert join_unimodal_one_by_one(X, np.zeros(200, int), _chain(200)).max() == 0
    two = np.repeat([0, 1], 100)
    W = sp.block_diag([_chain(100), _chain(100)]).tocsr()  # no edge between the parts
    np.testing.assert_array_equal(join_unimodal_one_by_one(X, two, W), two)


def test_cached_null_draws_are_the_draws_of_the_seed():
    x = np.random.default_rng(3).normal(size=700)
    cached = dip_test(x, n_draws=300, random_state=11)
    fresh = dip_test(x, n_draws=300, random_state=np.random.default_rng(11))
    assert cached == fresh
    assert not _null_dips(700, 300, 11).flags.writeable


def _fit(X):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    return model, [x for x in w if issubclass(x.category, gc.StabilityWarning)]


@pytest.fixture(scope="module")
def large_blobs():
    # two unit Gaussians 3 deviations apart, 10 000 points: their density walk's clusters are
    # no longer metastable (docs/battery.md, *Built: density valleys beyond the walk's reach*)
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(5000, 2)), rng.normal(size=(5000, 2)) + [3.0, 0]])
    return X, np.repeat([0, 1], 5000)


def test_the_valley_choice_finds_two_overlapping_gaussians(large_blobs):
    from sklearn.metrics import normalized_mutual_info_score as nmi

    X, y = large_blobs
    model, warned = _fit(X)
    assert model.n_clusters_ == 2 and not warned
    assert model.density_exponent_ is not None and model.selection_rule_ == "plateau"
    assert nmi(y, model.labels_) > 0.6  # the Bayes rule errs on 6.7 %: NMI 0.645
    # the stored hierarchy is the scan the clusters came from, past the default walk lengths
    assert model.scan_["taus"].max() > 2.0 ** 13 and model.tau_ in model.scan_["taus"]
    np.testing.assert_array_equal(model.labels_at(tau=model.tau_), model.labels_)


def test_without_the_valley_choice_the_fit_tiles_them(large_blobs, monkeypatch):
    # the premise: the tiers' own choice on the density walk is refused (joined as transient);
    # the density's cluster tree, the fine tier's last look, would find them too
    monkeypatch.setattr(looks.FineTierLooks, "_valley_choice", lambda *a, **k: None)
    monkeypatch.setattr(looks.FineTierLooks, "_tree_choice", lambda *a, **k: None)
    model, warned = _fit(large_blobs[0])
    assert model.selection_rule_ == "fine" and warned


def test_one_large_gaussian_is_not_split_by_the_valley_choice():
    X = np.random.default_rng(1).normal(size=(10000, 2))
    model, warned = _fit(X)
    assert model.n_clusters_ == 1 or warned


@pytest.mark.parametrize("seed", range(3))
def test_unimodal_parts_reads_a_valley_inside_a_part_not_between_parts(seed):
    from graphclust.cluster._valley_joins import unimodal_parts

    X = _modes([300, 300], 6.0, seed)  # two modes on a line
    W = _chain(600)
    assert unimodal_parts(X, np.repeat([0, 1], 300), W)  # cut at the valley
    assert not unimodal_parts(X, np.zeros(600, int), W)  # one part across it
    # a cut inside the first mode leaves the valley inside the second part
    assert not unimodal_parts(X, np.repeat([0, 1], [150, 450]), W)
    # and the numbers of the parts do not matter
    assert unimodal_parts(X, np.repeat([1, 0], 300), W)


def test_unimodal_parts_views_a_part_from_its_points_in_the_plane():
    from graphclust.cluster._valley_joins import unimodal_parts
    from graphclust.graphs import nearest_neighbors

    rng = np.random.default_rng(4)
    centres = np.array([[0.0, 0.0], [5.0, 0.0], [2.5, 4.3]])  # touching: one component
    X = np.vstack([rng.normal(size=(300, 2)) + c for c in centres])
    idx, _ = nearest_neighbors(X, 10, method="exact")
    W = sp.csr_matrix((np.ones(idx.size), (np.repeat(np.arange(900), 10), idx.ravel())),
                      shape=(900, 900))
    W = W + W.T
    assert sp.csgraph.connected_components(W)[0] == 1
    blobs = np.repeat([0, 1, 2], 300)
    assert unimodal_parts(X, blobs, W)
    # two blobs in one part: a valley inside it, whichever viewer sees it
    assert not unimodal_parts(X, np.minimum(blobs, 1), W)
    assert not unimodal_parts(X, np.minimum(blobs, 1), W, viewers=0)
    # seeded: the same answer again, and for the parts numbered otherwise
    assert unimodal_parts(X, 2 - blobs, W) and unimodal_parts(X, blobs, W, random_state=9)


def test_a_scan_given_the_fine_partitions_is_the_scan_that_ran_them():
    from graphclust.cluster._markov_selection import markov_stability_scan
    from graphclust.graphs import nearest_neighbors

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(1500, 2)), rng.normal(size=(1500, 2)) + 4])
    idx, _ = nearest_neighbors(X, 10, method="exact")
    W = sp.csr_matrix((np.ones(idx.size), (np.repeat(np.arange(3000), 10), idx.ravel())),
                      shape=(3000, 3000))
    W = W + W.T
    ran = markov_stability_scan(W, random_state=3, taus=[1, 8, 64])
    given = markov_stability_scan(W, random_state=3, taus=[1, 8, 64], fine=ran["fine"])
    np.testing.assert_array_equal(given["pieces"], ran["pieces"])
    for a, b in zip(given["consensus"], ran["consensus"]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(given["flows"], ran["flows"], rtol=1e-12, atol=1e-15)
