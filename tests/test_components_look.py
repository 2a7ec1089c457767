"""The fine tier's last look: the graph's connected components when its tiles are chance,
or those of its mutual kNN graph.

A planar Gaussian blob of 2 800 points relaxes beyond the scan's last walk length, and its
consensus pieces keep its slow mode, so no candidate of the scan makes it whole; beside two
small blobs far away, every candidate keeps it in pieces and the tiers end in the fine tier,
whose tiles the null model does not pass. The three components are what the walk has found
(`FineTierLooks._components_choice`; docs/model_selection.md, *A large blob beside small
ones*). Before the look the fit returned 34-41 tiles (adjusted Rand index 0.005). The look
for clusters at scales of their own (`_local_choice`), which comes first, finds them too.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

import graphclust as gc


def _large_and_small(seed):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=(2800, 2)), rng.normal(size=(70, 2)) + [9.0, 0.0],
                        rng.normal(size=(40, 2)) + [0.0, 9.0]])
    return X, np.repeat([0, 1, 2], [2800, 70, 40])


@pytest.fixture(scope="module")
def fitted():
    """The fit with the look before it (`_local_choice`, which finds the same clusters here:
    a component is a metastable set at every walk length) turned off."""
    X, y = _large_and_small(0)
    with warnings.catch_warnings(record=True) as caught, pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("always")
        mp.setattr(gc.StabilityClustering, "_local_choice", lambda *args: None)
        model = gc.StabilityClustering(random_state=0).fit(X)
    return X, y, model, caught


def test_the_multiscale_look_finds_the_components_first():
    X, y = _large_and_small(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ == "multiscale"
    assert adjusted_rand_score(y, model.labels_) == 1.0


def test_large_blob_beside_small_ones_is_three_components(fitted):
    X, y, model, caught = fitted
    assert model.n_clusters_ == 3
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert model.selection_rule_ == "components"
    assert model.tau_ is None and model.alpha_ is None
    # the components' gaps passed their null, and nothing is called weak or chance
    assert not [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
    assert model.gap_ratio_ > model.null_gap_ratio_


def test_components_choice_reads_like_any_other(fitted, tmp_path):
    X, y, model, _ = fitted
    assert "the graph's connected components" in model.summary().splitlines()[0]
    assert np.array_equal(model.labels_at(n_clusters=3), model.labels_)
    assert np.array_equal(model.predict(X[:50]), model.labels_[:50])
    model.save(tmp_path / "m.npz")
    back = gc.StabilityClustering.load(tmp_path / "m.npz")
    assert back.selection_rule_ == "components" and back.tau_ is None
    assert np.array_equal(back.predict(X[-50:]), model.labels_[-50:])


def _two_components(n=40):
    block = sp.csr_matrix(np.ones((n, n)) - np.eye(n))
    return sp.block_diag([block, block], format="csr")


@pytest.mark.parametrize("passes, chosen, expect", [
    (True, "tiles", None),          # tiles the null model passes: kept (letters' fine tier)
    (False, "tiles", "components"),  # chance tiles: the components
    (True, None, "components"),      # the seeds disagree (no partition): the components
])
def test_components_choice_gate(monkeypatch, passes, chosen, expect):
    W = _two_components()
    model = gc.StabilityClustering(random_state=0)
    model.intrinsic_dimension_ = 2.0
    asked = []

    def fake_null(self, Wn, labels, k, d_hat):
        asked.append(labels.max() + 1)
        return passes

    monkeypatch.setattr(gc.StabilityClustering, "_passes_null", fake_null)
    tiles = np.arange(80) // 10 if chosen == "tiles" else None
    got = model._components_choice(W, tiles, np.ones((80, 10)))
    if expect is None:
        assert got is None
    else:
        assert got[1] == "components" and np.array_equal(got[0], np.repeat([0, 1], 40))
    assert asked == ([8] if chosen == "tiles" else [])  # the null only judges tiles


def test_connected_graph_has_no_components_choice(monkeypatch):
    monkeypatch.setattr(gc.StabilityClustering, "_passes_null",
                        lambda *a: pytest.fail("a connected graph needs no null"))
    W = sp.csr_matrix(np.ones((30, 30)) - np.eye(30))
    model = gc.StabilityClustering(random_state=0)
    assert model._components_choice(W, np.arange(30) // 10, np.ones((30, 10))) is None


# ---------------------------------------------------------------- the mutual kNN graph's


def _spiral_arms(n_per=140, seed=0):
    """Three arms of the spiral r = 1.8 theta, a third of a turn apart, points at equal steps
    of arc length plus noise of sd 0.1: shaped like sipu's spiral set, denser."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(0.6, 2.9, 4000) * np.pi
    arc = np.concatenate([[0], np.cumsum(np.hypot(np.diff(1.8 * theta * np.cos(theta)),
                                                  np.diff(1.8 * theta * np.sin(theta))))])
    t = np.interp(np.linspace(0, arc[-1], n_per), arc, theta)
    X = np.vstack([np.c_[1.8 * t * np.cos(t + 2 * np.pi * a / 3),
                         1.8 * t * np.sin(t + 2 * np.pi * a / 3)] for a in range(3)])
    return X + rng.normal(0, 0.1, X.shape), np.repeat([0, 1, 2], n_per)


def test_spiral_arms_the_graph_joins_are_the_mutual_graphs_components():
    """The union 10-NN graph is one component (edges between the arms where they come
    closest), so the walk finds no metastable set and the fine tier's 17-20 tiles are chance;
    the mutual graph keeps no edge between the arms (sipu/spiral: 13 tiles, NMI 0.602 ->
    1.000; docs/battery.md)."""
    X, y = _spiral_arms()
    assert gc.knn_graph(X, n_neighbors=10).n_components == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ == "mutual" and model.tau_ is None
    assert model.n_clusters_ == 3
    assert adjusted_rand_score(y, model.labels_) == 1.0
    assert "mutual kNN graph's large components" in model.summary().splitlines()[0]


def _ring_lists(groups, k=10):
    """Lists of k neighbours: each group a ring, k / 2 on either side (mutual edges only)."""
    lists, start = [], 0
    for m in groups:
        i = np.arange(m)[:, None]
        steps = np.r_[-(np.arange(k // 2) + 1), np.arange(k // 2) + 1]
        lists.append(start + (i + steps) % m)
        start += m
    return np.vstack(lists)


def _union(idx):
    n, k = idx.shape
    A = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    return ((A + A.T) > 0).astype(float).tocsr()


def _mutual_choice(idx):
    model = gc.StabilityClustering(random_state=0)
    model._knn_lists = idx.astype(np.int32)
    return model._large_components(_union(idx), np.ones(idx.shape))


def test_mutual_components_are_the_clusters_the_rest_placed_by_the_walk():
    idx = _ring_lists([50, 50, 50])
    # five points whose lists point into the first ring and are in no one's list: no mutual
    # edge, so no component of their own; the walk on the union graph places them
    idx = np.vstack([idx, np.tile(np.arange(10), (5, 1))])
    got = _mutual_choice(idx)
    assert np.array_equal(got, np.r_[np.repeat([0, 1, 2], 50), np.zeros(5, dtype=int)])


def test_one_component_holding_half_is_no_mutual_choice():
    """One cluster and two tight groups beside it (UCI vowel's mutual graph: 888 of 990)."""
    assert _mutual_choice(_ring_lists([100, 25, 25])) is None
    assert _mutual_choice(_ring_lists([74, 38, 38])) is not None
    # "most" is more than half: two equal halves (the papers' two spiral arms) are clusters
    assert _mutual_choice(_ring_lists([76, 49, 25])) is None
    assert _mutual_choice(_ring_lists([75, 50, 25])) is not None
    assert _mutual_choice(_ring_lists([60, 60])) is not None


def test_two_equal_spiral_arms_joined_at_the_centre_are_two_clusters():
    # the union graph joins the arms (one component); each arm is one mutual component of
    # exactly half the points, which "none half or more" refused: 21 tiles, warned, before
    X, y = gc.datasets.two_spirals(400, random_state=3)
    assert gc.knn_graph(X, n_neighbors=10).n_components == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=3).fit(X)
    assert model.selection_rule_ == "mutual" and model.n_clusters_ == 2
    assert adjusted_rand_score(y, model.labels_) == 1.0


def test_components_of_a_few_points_in_all_are_no_mutual_choice():
    """Two rings of 25 beside 100 points without one mutual edge: the large components hold a
    third of the points (euclidean 20 newsgroups' mutual graph: 225 of 11 202)."""
    loose = 50 + (np.arange(100)[:, None] + np.arange(1, 11)) % 100  # lists forward only
    assert _mutual_choice(np.vstack([_ring_lists([25, 25]), loose])) is None
    assert _mutual_choice(np.vstack([_ring_lists([40, 40]), loose[:70] - 10])) is not None


def test_mutual_components_need_two_large_ones():
    # rings of 19 points: under the floor of 2 n_neighbors = 20
    assert _mutual_choice(_ring_lists([19] * 8)) is None
    assert _mutual_choice(_ring_lists([20] * 8)) is not None
