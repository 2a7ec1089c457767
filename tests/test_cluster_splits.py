"""Each chosen cluster split by its own scan: `split_outlasted_clusters`, `outlasts_whole`,
and the fit that uses them."""

import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.cluster._cluster_splits import (SPLIT_RULES, outlasts_whole,
                                                split_outlasted_clusters)
from graphclust.cluster._null_model import intrinsic_dimension
from graphclust.metrics import nmi


def _blocks(*sizes):
    return sp.block_diag([np.ones((m, m)) - np.eye(m) for m in sizes], format="csr")


def _halves(rule="metastable", smallest=0):
    """A stand-in for the fit's choice: every cluster of more than `smallest` points in two
    halves, under `rule`; the calls it received are recorded (members, log escape time), and
    the dip levels it was given in `choose.levels`."""
    calls = []

    def choose(Wc, members, log_escape, level):
        calls.append((members.copy(), log_escape))
        choose.levels.append(level)
        if members.size <= smallest:
            return None, "none", None
        assert Wc.shape == (members.size, members.size)
        return np.arange(members.size) * 2 // members.size, rule, 4.0

    choose.levels = []
    return choose, calls


def test_every_cluster_is_scanned_but_one_of_several_components():
    W = _blocks(4, 6, 2, 4)  # components 0-3, 4-9, 10-11, 12-15
    # component 0 a cluster; 1 split in two clusters; 2 and 3 share a cluster, joined by nothing
    labels = np.array([0] * 4 + [1] * 3 + [2] * 3 + [3] * 2 + [3] * 4)
    esc = np.log(15 / 9)  # a third of the 6-clique: volume 3 * 5, cut 3 * 3
    choose, calls = _halves(smallest=3)
    new, splits = split_outlasted_clusters(W, labels, np.arange(16), choose)
    assert [(c.tolist(), e) for c, e in calls[:3]] == [([0, 1, 2, 3], np.inf),
                                                       ([4, 5, 6], esc), ([7, 8, 9], esc)]
    assert [c.tolist() for c, _ in calls[3:]] == [[0, 1], [2, 3]]  # the parts in turn
    assert new.tolist() == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 4, 4]
    assert splits[0] == {"size": 4, "component": True, "rule": "metastable", "tau": 4.0, "c": 2}
    assert [(s["component"], s["c"]) for s in splits[1:]] == [(False, 1)] * 4


def test_every_cluster_and_every_part_in_turn_are_scanned():
    W = _blocks(6, 4)  # components 0-5, 6-9
    W = W + sp.csr_matrix(([0.5, 0.5], ([0, 6], [6, 0])), shape=(10, 10))  # connected
    labels = np.repeat([0, 1], [6, 4])
    esc0, esc1 = np.log(30.5 / 0.5), np.log(12.5 / 0.5)  # volumes 6 * 5 + 0.5, 4 * 3 + 0.5
    choose, calls = _halves(smallest=3)
    new, splits = split_outlasted_clusters(W, labels, np.arange(10), choose)
    assert [(c.tolist(), e) for c, e in calls[:2]] == [(list(range(6)), esc0),
                                                       (list(range(6, 10)), esc1)]
    assert [c.tolist() for c, _ in calls[2:]] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert [s["c"] for s in splits] == [2, 2, 1, 1, 1, 1]
    assert new.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]


def test_the_dip_level_is_bonferroni_over_the_clusters_examined_together():
    from graphclust.cluster._dip_test import DIP_LEVEL
    W = _blocks(8, 8, 8, 4)
    labels = np.repeat([0, 1, 2, 3], [8, 8, 8, 4])
    pieces = np.arange(28)
    pieces[24:] = 24  # the last cluster is one piece: not examined, not counted
    choose, calls = _halves(smallest=2)
    split_outlasted_clusters(W, labels, pieces, choose)
    # three clusters, then their six halves, then twelve quarters (pairs: kept whole)
    assert [c.size for c, _ in calls] == [8] * 3 + [4] * 6 + [2] * 12
    assert choose.levels == pytest.approx([DIP_LEVEL / 3] * 3 + [DIP_LEVEL / 6] * 6
                                          + [DIP_LEVEL / 12] * 12, rel=1e-15)


def test_parts_are_split_in_turn_down_to_single_pieces():
    W = _blocks(8, 3)
    labels = np.repeat([0, 1], [8, 3])
    pieces = np.repeat(np.arange(5), [2, 2, 2, 2, 3])  # halves of halves are single pieces
    choose, calls = _halves()
    new, splits = split_outlasted_clusters(W, labels, pieces, choose)
    assert [c.size for c, _ in calls] == [8, 4, 4]
    assert new.tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 4]
    assert [s["component"] for s in splits] == [True, False, False]


def test_a_metastable_plateau_or_multiscale_choice_splits():
    assert SPLIT_RULES == ("metastable", "plateau", "multiscale", "density tree")
    for rule in SPLIT_RULES:
        W = _blocks(4, 4)
        choose, _ = _halves(rule, smallest=2)
        new, splits = split_outlasted_clusters(W, np.repeat([1, 0], 4), np.arange(8), choose)
        assert [s["c"] for s in splits] == [2, 2, 1, 1, 1, 1] and np.unique(new).size == 4


@pytest.mark.parametrize("rule", ["fine", "shorter", "small", "weak", "none"])
def test_a_choice_outside_the_split_rules_keeps_the_cluster_whole(rule):
    assert rule not in SPLIT_RULES
    W = _blocks(4, 4)
    labels = np.repeat([1, 0], 4)
    choose, calls = _halves(rule)
    new, splits = split_outlasted_clusters(W, labels, np.arange(8), choose)
    assert new is labels or np.array_equal(new, labels)  # nothing split: labels unchanged
    assert len(calls) == 2 and [s["c"] for s in splits] == [1, 1]


def test_a_cluster_of_one_piece_is_not_scanned():
    W = _blocks(5)
    W = W + sp.csr_matrix(([1.0, 1.0], ([0, 4], [4, 0])), shape=(5, 5))
    choose, calls = _halves()
    labels = np.zeros(5, dtype=np.int64)
    new, splits = split_outlasted_clusters(sp.csr_matrix(W), labels, np.zeros(5, int), choose)
    assert calls == [] and splits == [] and np.array_equal(new, labels)


def test_split_labels_are_a_canonical_partition_that_refines_the_input():
    rng = np.random.default_rng(0)
    sizes = rng.integers(3, 9, size=6)
    W = _blocks(*sizes)
    comp = np.repeat(np.arange(sizes.size), sizes)
    labels = sizes.size - 1 - comp  # numbered backwards: the output renumbers
    within = np.arange(comp.size) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    pieces = 2 * comp + within * 2 // np.repeat(sizes, sizes)  # each component's two halves
    new, splits = split_outlasted_clusters(W, labels, pieces, _halves()[0])
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


def test_a_cluster_that_the_walk_leaves_sooner_has_a_shorter_window_to_outlast():
    step = np.log(2.0)
    log_t = np.log(100.0)
    # the cluster whole from its relaxation time (100) until the walk leaves it (e^7)
    assert outlasts_whole(_scan(7.0 - log_t + step + 1e-9, 100.0), log_escape=7.0)
    assert not outlasts_whole(_scan(7.0 - log_t + step - 1e-3, 100.0), log_escape=7.0)
    # left before it relaxes (a plateau's cluster): no window of its own, one step suffices
    assert outlasts_whole(_scan(step, 100.0), log_escape=4.0)
    # an escape time beyond the scan's end counts to the end, as for a whole component
    assert (outlasts_whole(_scan(3.0, 1000.0), log_escape=50.0)
            == outlasts_whole(_scan(3.0, 1000.0)))


class _Scripted(gc.StabilityClustering):
    """`_own_split_choice` on a scripted scan: parts of the given sizes, a long window."""

    def __init__(self, sizes, **kw):
        super().__init__(**kw)
        self.sizes = sizes

    def _scan_choice(self, W0, seed, fine=None):
        sub = np.repeat(np.arange(len(self.sizes)), self.sizes)
        scan = {"taus": 2.0 ** np.arange(14), "window": 5.0, "relaxation_time": 100.0}
        return sub, "metastable", 4.0, scan


@pytest.mark.parametrize("sizes, rule", [((20, 25), "metastable"), ((19, 26), "small")])
def test_a_split_needs_parts_of_two_neighbour_lists(sizes, rule):
    model = _Scripted(sizes, n_neighbors=10, null_model=False)
    m = sum(sizes)
    X = np.repeat([0.0, 10.0], sizes)[:, None] + np.linspace(0, 1, m)[:, None]  # two modes
    dist = np.ones((m, 10))  # only its width, k, is read here
    W = _blocks(m)
    assert model._own_split_choice(W, np.arange(m), X, dist, 0, 6.0)[1] == rule


def test_a_split_through_one_mode_is_joined():
    # the scripted split cuts an even spread of points (a band) in two: no valley between
    model = _Scripted((40, 40), n_neighbors=10, null_model=False)
    X = np.linspace(0, 1, 80)[:, None]
    sub, rule, _ = model._own_split_choice(_blocks(80), np.arange(80), X, np.ones((80, 10)), 0,
                                           6.0)
    assert rule == "unimodal" and sub.max() == 0


def _knn(X, k=10):
    from sklearn.neighbors import kneighbors_graph
    A = kneighbors_graph(X, k)
    return (A + A.T).tocsr()


def test_adjacent_parts_are_joined_only_across_unimodal_paths():
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    rng = np.random.default_rng(1)
    # two blobs in the plane, the second cut in half; and a third blob adjacent to neither
    X = np.vstack([rng.normal((0, 0), 1, (150, 2)), rng.normal((8, 0), 1, (300, 2)),
                   rng.normal((30, 30), 1, (100, 2))])
    sub = np.repeat([0, 1, 2, 3], [150, 150, 150, 100])
    sub[150:450] = 1 + (X[150:450, 1] > 0)  # the second blob's halves, above and below
    W = _knn(X).tolil()
    for i, j in [(0, 150), (150, 300), (300, 0)]:  # blob 1 touches both halves of blob 2
        W[i, j] = W[j, i] = 1.0
    joined, p = join_unimodal_pairs(X, sub, W.tocsr())
    assert set(p) == {(0, 1), (0, 2), (1, 2)}  # the far blob is adjacent to no part
    # three pairs: each is held at 0.05 / 3
    assert p[(1, 2)] >= 0.05 / 3 and p[(0, 1)] < 0.05 / 3 and p[(0, 2)] < 0.05 / 3
    assert np.unique(joined[150:450]).size == 1 and joined[0] != joined[150]
    assert np.unique(joined).size == 3
    # any scale, any shift: the same test
    for scale, shift in ((1e300, 5e300), (1e-310, 0.0)):  # huge, and subnormal
        again, q = join_unimodal_pairs(X * scale + shift, sub, W.tocsr())
        assert np.array_equal(again, joined) and q == pytest.approx(p)
    again, q = join_unimodal_pairs(sp.csr_matrix(X), sub, W.tocsr())  # sparse points
    assert np.array_equal(again, joined) and q == pytest.approx(p)


def _semicircle(n, seed, width=0.05):
    """A noisy semicircle, its angles stratified (one in each of n equal arcs): no chance
    bumps of the angles' own sample, only the geometry is tested."""
    rng = np.random.default_rng(seed)
    t = (np.arange(n) + rng.uniform(size=n)) * np.pi / n
    return (np.c_[np.cos(t), np.sin(t)] + rng.normal(0, width, (n, 2))), t


@pytest.mark.parametrize("seed", range(5))
def test_an_arc_cut_in_halves_is_one_mode_along_the_graph_not_along_its_chord(seed):
    # a semicircle projected on its chord (the line between its halves' means) has the
    # arcsine density, bimodal; along the kNN graph its points lie evenly: one mode
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    from graphclust.cluster._dip_test import dip_test
    X, t = _semicircle(600, seed)
    sub = (t > np.pi / 2).astype(np.int64)
    u = X[sub == 1].mean(axis=0) - X[sub == 0].mean(axis=0)
    assert dip_test(X @ u, random_state=0)[1] < 0.05  # the chord's projection: two modes
    joined, p = join_unimodal_pairs(X, sub, _knn(X))
    assert p[(0, 1)] >= 0.05 and joined.max() == 0


@pytest.mark.parametrize("dim", [2, 20, 60])
def test_a_gaussian_cut_in_two_is_one_mode_in_any_dimension(dim):
    # in many dimensions a kNN edge is nearly as long as the blob is wide: the paths from the
    # far end are 1-4 edges and their lengths lump by hop count, which the dip test read as
    # modes (20-60 dimensions: p = 0.005-0.01 for every draw); there the pair is read along the
    # line through the parts' means. Two Gaussians 6 apart stay two modes.
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    for seed in range(3):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(200, dim))
        halves = (X[:, 0] > 0).astype(np.int64)
        joined, p = join_unimodal_pairs(X, halves, _knn(X), ends=2)
        assert p[(0, 1)] >= 0.05 and joined.max() == 0
        X[:, 0] += 6.0 * halves
        W = _knn(X).tolil()  # the two modes' nearest points linked: adjacent in any dimension
        a = np.argmax(np.where(halves == 0, X[:, 0], -np.inf))
        b = np.argmin(np.where(halves == 1, X[:, 0], np.inf))
        W[a, b] = W[b, a] = 1.0
        joined, p = join_unimodal_pairs(X, halves, W.tocsr(), ends=2)
        assert p[(0, 1)] < 0.05 and joined.max() == 1


def test_pair_positions_follow_the_graph_where_its_paths_are_long():
    import graphclust.cluster._valley_joins as cs
    X, t = _semicircle(600, 0)
    first, second = np.flatnonzero(t <= np.pi / 2), np.flatnonzero(t > np.pi / 2)
    lengths = cs.edge_length_matrix(X, _knn(X))
    edge = float(np.median(lengths.data))
    along = cs._geodesic_positions(X, lengths, first, second)
    assert np.ptp(along) > 5 * cs.PATH_EDGES * edge  # 70 median edges along the arc
    assert np.array_equal(cs._pair_positions(X, lengths, first, second, edge), along)
    # a path of fewer edges than PATH_EDGES: the line through the parts' means
    u = X[second].mean(axis=0) - X[first].mean(axis=0)
    np.testing.assert_allclose(cs._pair_positions(X, lengths, first, second, np.ptp(along)),
                               X[np.r_[first, second]] @ u, rtol=1e-12)


def test_an_arc_cut_into_many_parts_is_joined_whole():
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    X, t = _semicircle(1000, 3)
    sub = np.minimum((t / np.pi * 5).astype(np.int64), 4)  # five arcs: four adjacent pairs
    joined, p = join_unimodal_pairs(X, sub, _knn(X))
    assert set(p) == {(0, 1), (1, 2), (2, 3), (3, 4)} and joined.max() == 0


def test_each_adjacent_pair_is_held_at_the_level_over_their_number(monkeypatch):
    import graphclust.cluster._valley_joins as cs
    def dip(x, n_draws, random_state, enough=None):  # every pair at p = 0.03
        return 0.1, 0.03

    monkeypatch.setattr(cs, "dip_test", dip)
    X, t = _semicircle(1000, 3)
    two = (t > np.pi / 2).astype(np.int64)
    assert cs.join_unimodal_pairs(X, two, _knn(X))[0].max() == 1  # 0.03 < 0.05: split
    five = np.minimum((t / np.pi * 5).astype(np.int64), 4)
    assert cs.join_unimodal_pairs(X, five, _knn(X))[0].max() == 0  # 0.03 >= 0.05 / 4: joined


def _two_modes_on_a_chain(middle):
    """Two unit Gaussians 8 apart on a line, joined by a chain in sorted order, cut in three:
    the first mode, `middle` points at the valley's near side, and the rest."""
    rng = np.random.default_rng(0)
    X = np.sort(np.r_[rng.normal(0, 1, 300), rng.normal(8, 1, 300)])[:, None]
    W = sp.diags([np.ones(599), np.ones(599)], [-1, 1]).tocsr()
    return X, np.repeat([0, 1, 2], [300 - middle, middle, 300]), W


def test_a_part_too_small_for_the_dip_test_does_not_join_two_modes_through_it():
    from graphclust.cluster._valley_joins import join_unimodal_pairs, unresolved_parts
    # 10 points beside 290: their mass 0.033 gives a dip of at most 0.017, which 300 uniform
    # points exceed by chance more often than the pairs' level 0.025 (two adjacent pairs)
    X, sub, W = _two_modes_on_a_chain(10)
    assert np.bincount(unresolved_parts(W, sub, 0.05 / 2)).tolist() == [300, 0, 300]
    joined, p = join_unimodal_pairs(X, sub, W)
    assert list(p) == [(0, 2)] and p[(0, 2)] < 0.05  # one test, at the whole level
    assert np.bincount(joined).tolist() == [300, 300]
    # 40 points can be seen (their largest dip has p < 0.025): both pairs are tested
    X, sub, W = _two_modes_on_a_chain(40)
    assert np.array_equal(unresolved_parts(W, sub, 0.05 / 2), sub)
    assert list(join_unimodal_pairs(X, sub, W)[1]) == [(0, 1), (1, 2)]


@pytest.mark.parametrize("w", [0.02, 0.1, 0.3, 0.5])
def test_the_largest_dip_of_a_minor_mode_is_half_its_mass(w):
    from graphclust.cluster._dip_test import dip_statistic
    m = 1000
    s = int(w * m)
    # two point masses: the bound, exactly; a far minor mode of any shape: at most about it
    assert dip_statistic(np.r_[np.zeros(m - s), np.ones(s)]) == pytest.approx(w / 2)
    rng = np.random.default_rng(1)
    x = np.r_[rng.uniform(0, 1, m - s), rng.uniform(5, 5.1, s)]
    assert dip_statistic(x) <= w / 2 + 2 / np.sqrt(m)


def test_a_plateau_split_skips_the_window_and_meets_the_valleys():
    class Plateau(_Scripted):
        def _scan_choice(self, W0, seed, fine=None):
            sub = np.repeat(np.arange(len(self.sizes)), self.sizes)
            return sub, "plateau", 4.0, {"taus": 2.0 ** np.arange(14), "window": None}

    X = np.r_[np.linspace(0, 1, 40), np.linspace(10, 11, 40)][:, None]  # two modes
    model = Plateau((40, 40), n_neighbors=10, null_model=False)
    sub, rule, _ = model._own_split_choice(_knn(X), np.arange(80), X, np.ones((80, 10)), 0, 6.0)
    assert rule == "plateau" and sub.max() == 1  # no window, yet split: two modes
    band = np.linspace(0, 1, 80)[:, None]  # one mode: joined
    sub, rule, _ = model._own_split_choice(_knn(band), np.arange(80), band, np.ones((80, 10)),
                                           0, 6.0)
    assert rule == "unimodal" and sub.max() == 0


@pytest.mark.parametrize("tier, vi, split", [("plateau", 0.015, False), ("plateau", 0.0, True),
                                             ("metastable", 0.015, True)])
def test_a_plateaus_cluster_is_split_by_its_own_plateau_only_where_the_runs_agree(tier, vi,
                                                                                 split):
    # the check of a plateau's cluster merges the fit's runs restricted to it (`fine`): within
    # its few pieces a near-agreement of the runs (VI 0.011-0.020 on MNIST) is one run placing
    # a whole piece apart, and its plateau keeps the cluster whole; exact agreement splits it
    taus = 2.0 ** np.arange(14)

    class Checked(_Scripted):
        def _scan_choice(self, W0, seed, fine=None):
            assert fine is not None and len(fine) == 3
            sub = np.repeat(np.arange(len(self.sizes)), self.sizes)
            return sub, tier, 4.0, {"taus": taus, "vi": np.where(taus == 4.0, vi, 0.5),
                                    "window": 5.0, "relaxation_time": 100.0}

    X = np.r_[np.linspace(0, 1, 40), np.linspace(10, 11, 40)][:, None]  # two modes
    model = Checked((40, 40), n_neighbors=10, null_model=False)
    runs = [np.repeat([0, 1], 40)] * 3
    sub, rule, _ = model._own_split_choice(_knn(X), np.arange(80), X, np.ones((80, 10)), 0,
                                           6.0, fine=runs)
    assert rule == (tier if split else "agreement")
    assert (rule in SPLIT_RULES) == split and sub.max() == 1  # the scan's split, reported


class _Fine(_Scripted):
    """A cluster (the graph `own`) whose own scan ends in the fine tier, and whose looks find
    `sizes`; other graphs (the support test's samples) are scanned for real."""

    def _scan_choice(self, W0, seed, fine=None):
        if W0 is not getattr(self, "own", W0):
            return gc.StabilityClustering._scan_choice(self, W0, seed)
        return np.zeros(W0.shape[0], dtype=np.int64), "fine", 1.0, {"taus": 2.0 ** np.arange(14)}

    def _fine_looks(self, W, dist, seed, d_hat, scan=None, chosen=None, points=None,
                    background=None):
        self.looked = d_hat
        return (np.repeat(np.arange(len(self.sizes)), self.sizes), "metastable", 64.0, W, None,
                getattr(self, "joined", False))


def test_a_clusters_fine_tier_takes_the_looks_and_their_split_meets_the_gates():
    rng = np.random.default_rng(0)
    dist = np.sort(rng.random((80, 10)), axis=1)  # the look is given the cluster's own lists
    X = np.r_[np.linspace(0, 1, 40), np.linspace(10, 11, 40)][:, None]  # two modes: a split
    model = _Fine((40, 40), n_neighbors=10, null_model=False)
    sub, rule, tau = model._own_split_choice(_knn(X), np.arange(80), X, dist, 0, np.inf)
    assert rule == "metastable" and tau == 64.0 and sub.max() == 1
    assert model.looked == pytest.approx(intrinsic_dimension(dist))  # its own dimension
    band = np.linspace(0, 1, 80)[:, None]  # one mode: the look's split is joined
    assert model._own_split_choice(_knn(band), np.arange(80), band, dist, 0, np.inf)[1] \
        == "unimodal"
    # unless the look's own dip-means joins made its pairs bimodal (a valley look's parts):
    # they are not joined again all at once
    model.joined = True
    sub, rule, _ = model._own_split_choice(_knn(band), np.arange(80), band, dist, 0, np.inf)
    assert rule == "metastable" and sub.max() == 1
    model.joined = False
    # the fine tier's own partition never splits; nor does a look that finds nothing
    model._fine_looks = lambda W, dist, seed, d_hat, scan=None, chosen=None, points=None, \
        background=None: None
    assert model._own_split_choice(_knn(X), np.arange(80), X, dist, 0, np.inf)[1] == "fine"


def test_the_looks_take_the_density_walk_once(monkeypatch):
    model = gc.StabilityClustering()
    calls = []
    monkeypatch.setattr(model, "_background_choice", lambda *a: calls.append("bg"))
    Wd, walk = _blocks(4) * 2.0, (2.0, 2.0)
    monkeypatch.setattr(model, "_density_choice", lambda *a, points=None: calls.append(
        "density") or setattr(model, "valley_points", points) or (
        np.arange(4) % 2, "plateau", 8.0, Wd, walk, {"taus": 1}))
    import graphclust.cluster._stability_looks as looks

    X = np.arange(8.0).reshape(4, 2)
    model._fine_looks(_blocks(4), np.ones((4, 2)), 0, 2.0, points=X)
    assert model.valley_points is None  # four points: no valley seen, no valley look
    monkeypatch.setattr(looks, "unimodal_parts", lambda *a, **k: False)  # a valley seen
    found = model._fine_looks(_blocks(4), np.ones((4, 2)), 0, 2.0, points=X)
    assert model.valley_points is X  # the cluster's points: the valley look is taken too
    # the graph whose walk found the split, and its weighting, for the tests that judge it
    assert found[1] == "plateau" and found[3] is Wd and found[4] == walk
    assert not found[5]  # the density walk's tiers found it, not its valley look
    assert calls == ["bg", "density"] * 2
    with model._density_walk((2.0, 2.0)):  # the data's clusters came from the density's walk
        assert model._fine_looks(_blocks(4), np.ones((4, 2)), 0, 2.0) is None
    assert calls == ["bg", "density"] * 2 + ["bg"]


def test_on_the_density_walk_a_cluster_takes_the_valley_look_of_its_own_scan(monkeypatch):
    import graphclust.cluster._stability_looks as looks

    model = gc.StabilityClustering()
    calls = []
    monkeypatch.setattr(model, "_background_choice", lambda *a: None)
    monkeypatch.setattr(model, "_density_choice", lambda *a, **k: calls.append("density"))
    monkeypatch.setattr(model, "_local_choice", lambda *a: calls.append("local"))
    monkeypatch.setattr(model, "_valley_choice", lambda W, scan, points, k, seed, whole=True: (
        calls.append(("valley", whole)) or (np.arange(4) % 2, 16.0, scan)))
    monkeypatch.setattr(model, "_passes_null", lambda *a: calls.append("null") or True)
    W, X, scan = _blocks(4), np.arange(8.0).reshape(4, 2), {"taus": 1}
    walk = (2.0, 2.0)
    with model._density_walk(walk):
        # no valley inside, as the cluster's viewers see it: no valley look, nor a density one
        assert model._fine_looks(W, np.ones((4, 2)), 0, 2.0, scan, "tiles", points=X) is None
        assert calls == ["local"]
        monkeypatch.setattr(looks, "unimodal_parts", lambda *a, **k: False)  # a valley seen
        sub, rule, tau, Wl, w, joined = model._fine_looks(W, np.ones((4, 2)), 0, 2.0, scan,
                                                          "tiles", points=X)
        # its parts are scanned in turn, so one may hold a valley still (whole=False)
        assert calls[1:] == [("valley", False), "null"]
        assert rule == "plateau" and tau == 16.0 and Wl is W and w == walk
        assert joined  # its pairs were joined one by one: not joined again
        monkeypatch.setattr(model, "_passes_null", lambda *a: False)  # chance: no split
        assert model._fine_looks(W, np.ones((4, 2)), 0, 2.0, scan, "tiles", points=X) is None
    assert "density" not in calls  # W already sees the density: never weighted twice


def test_the_density_looks_answer_is_joined_again_by_the_splits_pair_test(monkeypatch):
    import graphclust.cluster._stability_looks as looks

    model = gc.StabilityClustering()
    monkeypatch.setattr(model, "_background_choice", lambda *a: None)
    monkeypatch.setattr(looks, "unimodal_parts", lambda *a, **k: False)  # a valley seen
    Wd, walk = _blocks(4) * 2.0, (2.0, 2.0)
    for valleys in (True, False):  # found by its valley look, or by its tiers
        monkeypatch.setattr(model, "_density_choice", lambda *a, points=None, v=valleys: (
            np.arange(4) % 2, "plateau", 8.0, Wd, walk, {"taus": 1, "valleys": v}))
        found = model._fine_looks(_blocks(4), np.ones((4, 2)), 0, 2.0, points=np.ones((4, 2)))
        # its parts hold one mode each (`unimodal_parts`): the split's pair test reads them
        assert found[5] is False


def test_the_valley_choice_of_a_cluster_keeps_parts_that_hold_a_valley(monkeypatch):
    import graphclust.cluster._stability_looks as looks

    model = gc.StabilityClustering(n_neighbors=3)
    n = 40
    scan = {"taus": 2.0 ** np.arange(3), "fine": [np.arange(n) % 4] * 3,
            "consensus_groups": [np.arange(4) % 2] * 3,
            "consensus": [np.arange(n) % 2] * 3}
    monkeypatch.setattr(looks, "plateau_scores", lambda scan: np.zeros(2))
    monkeypatch.setattr(looks, "join_unimodal_one_by_one", lambda X, sub, W, **k: sub)
    monkeypatch.setattr(looks, "unimodal_parts", lambda *a, **k: False)  # a part holds one
    model.taus = scan["taus"]  # given walk lengths: no second scan
    X = np.random.default_rng(0).random((n, 2))
    W = _blocks(n)  # one component: the two halves are the clusters kept
    assert model._valley_choice(W, scan, X, 3, 0) is None  # the fit's level: refused
    labels, tau, _ = model._valley_choice(W, scan, X, 3, 0, whole=False)
    assert tau == 1.0 and np.unique(labels).size == 2


def test_the_multiscale_look_comes_third_and_needs_the_clusters_own_scan(monkeypatch):
    model = gc.StabilityClustering()
    calls = []
    monkeypatch.setattr(model, "_background_choice", lambda *a: calls.append("bg"))
    monkeypatch.setattr(model, "_density_choice", lambda *a, **k: calls.append("density"))
    monkeypatch.setattr(model, "_local_choice",
                        lambda W, scan, chosen, dist, d_hat: calls.append(
                            (scan["taus"], chosen, d_hat)) or np.arange(4) % 2)
    assert model._fine_looks(_blocks(4), np.ones((4, 2)), 0, 2.0) is None  # no scan given
    assert calls == ["bg", "density"]
    W = _blocks(4)
    sub, rule, tau, Wl, walk, joined = model._fine_looks(W, np.ones((4, 2)), 0, 2.0,
                                                         {"taus": 1}, "tiles")
    assert rule == "multiscale" and tau is None and sub.tolist() == [0, 1, 0, 1]
    assert not joined  # its parts' valleys are for the split's joins to read
    assert Wl is W and walk is None  # found on the cluster's own walk
    assert calls[2:] == ["bg", "density", (1, "tiles", 2.0)]


def test_a_looks_split_of_a_bands_points_is_refused_as_chance_cuts_of_its_shape():
    from graphclust.graphs import nearest_neighbors

    def split(X, sizes):
        model = _Fine(sizes, n_neighbors=10, null_model=False)
        idx, dist = nearest_neighbors(X, 10, method="exact")
        model.own = W = model._affinity_weights(idx, dist, 10, None)
        return model._own_split_choice(W, np.arange(len(X)), X, dist, 0, np.inf)

    # a thin band whose density dips at a quarter of its length (a valley to the dip test),
    # cut there by a look: a uniform sample of the band's support is cut elsewhere, as slowly
    rng = np.random.default_rng(0)
    t = np.r_[rng.uniform(0, 4, 150), rng.uniform(4, 6, 6), rng.uniform(6, 20, 450)]
    assert split(np.c_[t, 0.3 * rng.random(606)], (153, 453))[1] == "shape"
    # the same split of two blobs stands: escaped more slowly than the support's cuts
    Y = np.r_[rng.normal(0, 1, (300, 2)), rng.normal(0, 1, (300, 2)) + [8.0, 0.0]]
    sub, rule, _ = split(Y, (300, 300))
    assert rule == "metastable" and (sub[:300] == sub[0]).all() and (sub[300:] != sub[0]).all()


def test_a_density_looks_split_is_judged_against_its_shape_on_the_density_walk():
    # two unit Gaussians 4 deviations apart in the plane, split at their valley by the
    # density's look: on the plain kNN walk the split is escaped no more slowly than the
    # support's chance cuts (the walk is nearly blind to density there) and is refused as a
    # cut of the shape; on the walk that found it, the support samples weighted alike, the
    # valley is seen and the split stands (make_blobs, 20 000 points: c = 2 -> 3, NMI 0.73 ->
    # 0.88). A band's chance cut is refused on both walks (the test above, and the battery's
    # stripes)
    from graphclust.cluster import density_weighted
    from graphclust.cluster._density_walk import density_exponent
    from graphclust.graphs import nearest_neighbors

    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(0, 1, (1000, 2)), rng.normal(0, 1, (1000, 2)) + [4.0, 0.0]]
    labels = (X[:, 0] > 2.0).astype(np.int64)
    model = gc.StabilityClustering(n_neighbors=10)
    model.intrinsic_dimension_ = 2.0
    idx, dist = nearest_neighbors(X, 10, method="exact")
    W = model._affinity_weights(idx, dist, 10, None)
    walk = (2.0, density_exponent(2.0))
    assert model._shape_cuts(X, dist, labels, W, 2.0)
    assert not model._shape_cuts(X, dist, labels, density_weighted(W, dist[:, -1], *walk), 2.0,
                                 walk)
    assert getattr(model, "_walk_density", None) is None  # the weighting ends with the test


def test_a_pairs_valley_is_seen_from_both_ends_whichever_part_comes_first():
    # three touching blobs in the plane, two of them one part: from the far side of the
    # two-blob part the distances across it smear the valley to the third (p = 0.16), from
    # the third's far side it is plain; seen from both ends the order does not matter
    from sklearn.datasets import make_blobs

    from graphclust.cluster._valley_joins import (_pair_pvalue, edge_length_matrix,
                                                  join_unimodal_pairs)
    from graphclust.graphs import nearest_neighbors

    X, y = make_blobs(2500, centers=5, n_features=2, random_state=0)
    X, y = X[np.isin(y, [0, 2, 3])], y[np.isin(y, [0, 2, 3])]
    a, b = np.flatnonzero(y != 3), np.flatnonzero(y == 3)
    idx, dist = nearest_neighbors(X, 10, method="exact")
    lengths = edge_length_matrix(X, gc.StabilityClustering()._affinity_weights(idx, dist, 10, None))
    edge, level = float(np.median(lengths.data)), 0.01
    assert _pair_pvalue(X, lengths, edge, a, b, level, 0) > 0.1  # from the two-blob part's far
    assert _pair_pvalue(X, lengths, edge, b, a, level, 0) < level  # side; from the third's
    both = [_pair_pvalue(X, lengths, edge, *ab, level, 0, ends=2) for ab in ((a, b), (b, a))]
    assert both[0] == both[1] < level
    # a split's join reads both ends: the two parts stay apart in either order
    W = gc.StabilityClustering()._affinity_weights(idx, dist, 10, None)
    for first in (0, 1):
        sub = np.where(y == 3, 1 - first, first)
        assert join_unimodal_pairs(X, sub, W, ends=2)[0].max() == 1
    with pytest.raises(ValueError, match="ends must be 1"):
        join_unimodal_pairs(X, sub, W, ends=3)


def _interlocked(seed, n=1500, gap=0.06, w=0.08, noise=150):
    """A C of bars (width w) and a tongue reaching into it from the right, `gap` apart, with
    uniform noise over both; each noise point goes to the nearer shape."""
    rng = np.random.default_rng(seed)

    def rect(x0, x1, y0, y1, m):
        return np.c_[rng.uniform(x0, x1, m), rng.uniform(y0, y1, m)]

    C = np.vstack([rect(0, w, 0, 1, n // 3), rect(w, 1, 1 - w, 1, n // 3),
                   rect(w, 1, 0, w, n // 3)])
    T = rect(w + gap, 1.3, w + gap, 1 - w - gap, n // 2)
    X = np.vstack([C, T, rect(0, 1.3, 0, 1, noise)])
    shape = np.r_[np.zeros(len(C)), np.ones(len(T))].astype(np.int64)
    from sklearn.neighbors import KNeighborsClassifier
    nearer = KNeighborsClassifier(1).fit(X[:len(shape)], shape).predict(X[len(shape):])
    return X, np.r_[shape, nearer]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_valley_between_interlocking_parts_is_seen_from_the_cut(seed):
    # from either far end the distances to the C's bars and to the tongue overlap, and the
    # band of noise between them does not show; the distances to the cut show it
    from graphclust.cluster._valley_joins import (_cut_positions, _dip_pvalue, edge_length_matrix,
                                                  _pair_pvalue, join_unimodal_pairs)
    X, sub = _interlocked(seed)
    W = _knn(X)
    lengths = edge_length_matrix(X, W)
    edge, level = float(np.median(lengths.data)), 0.05
    a, b = np.flatnonzero(sub == 0), np.flatnonzero(sub == 1)
    assert _pair_pvalue(X, lengths, edge, a, b, level, 0) >= level
    assert _pair_pvalue(X, lengths, edge, b, a, level, 0) >= level
    assert _dip_pvalue(_cut_positions(lengths, a, b), level / 3, 0) < level / 3
    both = [_pair_pvalue(X, lengths, edge, *ab, level, 0, ends=2) for ab in ((a, b), (b, a))]
    assert both[0] == both[1] < level
    assert join_unimodal_pairs(X, sub, W, ends=2)[0].max() == 1  # kept apart
    assert join_unimodal_pairs(X, sub, W, ends=1)[0].max() == 0  # one end: joined


def test_cut_positions_are_the_signed_distance_to_a_straight_cut():
    # dense reference: a jittered grid of the unit square cut at x = 0.3; the distances
    # along the graph exceed the straight ones by the paths' stretch (a few per cent)
    from graphclust.cluster._valley_joins import _cut_positions, edge_length_matrix
    rng = np.random.default_rng(0)
    g = (np.arange(40) + 0.5) / 40
    X = np.array([(x, y) for x in g for y in g]) + rng.uniform(-0.005, 0.005, (1600, 2))
    lengths = edge_length_matrix(X, _knn(X))
    a, b = np.flatnonzero(X[:, 0] <= 0.3), np.flatnonzero(X[:, 0] > 0.3)
    x = _cut_positions(lengths, a, b)
    exact = X[np.r_[a, b], 0] - 0.3
    assert x.shape == exact.shape and np.all(np.sign(x) * np.sign(exact) >= 0)
    assert np.max(np.abs(x - exact)) <= 0.05 * np.max(np.abs(exact)) + 1 / 40
    assert np.corrcoef(x, exact)[0, 1] > 0.999


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 60), st.integers(2, 60), st.integers(0, 2**31 - 1))
def test_cut_positions_negate_when_the_parts_swap_and_follow_the_rows(m1, m2, seed):
    from graphclust.cluster._valley_joins import _cut_positions, edge_length_matrix
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m1 + m2, 2))
    lengths = edge_length_matrix(X, _knn(X, k=min(5, m1 + m2 - 1)))
    a, b = np.arange(m1), np.arange(m1, m1 + m2)
    x = _cut_positions(lengths, a, b)
    neg, pos = np.flatnonzero(x < 0), np.flatnonzero(x > 0)  # the first part's, then the
    assert not (neg.size and pos.size) or neg.max() < pos.min()  # second's
    np.testing.assert_allclose(np.sort(x), np.sort(-_cut_positions(lengths, b, a)),
                               rtol=1e-12, atol=0)
    perm = rng.permutation(m1 + m2)  # the same points in another row order
    inv = np.argsort(perm)
    again = _cut_positions(lengths[perm][:, perm], inv[a], inv[b])
    np.testing.assert_allclose(np.sort(again), np.sort(x), rtol=1e-12, atol=0)


@pytest.mark.parametrize("ps, combined", [((0.01, 0.5, 0.02), 0.03), ((0.01, 0.5, 0.9), 0.03),
                                          ((0.02, 0.03, 0.04), 0.04), ((0.5, 0.6, 0.7), 0.7)])
def test_a_pairs_views_are_combined_by_simes(monkeypatch, ps, combined):
    # min over i of v p_(i) / i: Bonferroni's v p_(1) when one view sees the valley, less
    # when several do
    import graphclust.cluster._valley_joins as cs
    X, sub = _interlocked(0)
    lengths = cs.edge_length_matrix(X, _knn(X))
    a, b = np.flatnonzero(sub == 0), np.flatnonzero(sub == 1)
    seen = iter(ps)
    monkeypatch.setattr(cs, "_dip_pvalue", lambda x, level, random_state, enough=None: next(seen))
    edge = float(np.median(lengths.data))
    assert cs._pair_pvalue(X, lengths, edge, a, b, 0.05, 0, ends=2) == pytest.approx(combined)


@pytest.mark.parametrize("seed", range(5))
def test_a_sparse_shell_cut_in_halves_shows_no_valley_at_its_cut(seed):
    # 400 points on a sphere (fcps/atom's shell): the midpoints' distances start half a
    # spacing from the cut on each side, a hole that alone read as a valley (p < 0.05 in 3
    # of 10 draws); less half the spacing at the cut, the shell is one mode
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(400, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    joined, p = join_unimodal_pairs(X, (X[:, 0] > 0).astype(np.int64), _knn(X), ends=2)
    assert p[(0, 1)] >= 0.05 and joined.max() == 0


def test_a_cluster_takes_the_valley_look_inside_as_the_data_does():
    # make_blobs in the plane: one Gaussian far off, two 3.35 deviations apart (6 667
    # points), a component of their own whose own scan ends in the fine tier: at this size
    # the walk inside each relaxes later than it crosses their valley, so the density walk's
    # tiers keep nothing and only its persistent level judged by the dip test finds them
    # (the valley look, taken at the fit's level and now inside a cluster too; before c = 2)
    from sklearn.datasets import make_blobs

    X, y = make_blobs(10_000, centers=3, n_features=2, random_state=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    split = [s for s in model.cluster_splits_ if s["c"] > 1]
    assert [(s["size"], s["component"], s["rule"], s["c"]) for s in split] == [
        (6667, True, "plateau", 2)]
    assert model.n_clusters_ == 3 and nmi(y, model.labels_) > 0.85


def _groups_of_blobs(seed, n=150, d=5.5, D=8.8):
    """Three groups of four touching blobs (sd 1, centres d apart in a square), the groups'
    centres on a circle of radius D: the groups touch through a few far neighbours of
    near-zero weight, which the walk takes after more steps than the scan's longest walk."""
    rng = np.random.default_rng(seed)
    X = []
    for g in range(3):
        centre = D * np.array([np.cos(2 * np.pi * g / 3), np.sin(2 * np.pi * g / 3)])
        for b in range(4):
            t = np.pi * b / 2 + 0.3
            X.append(rng.normal(centre + d / np.sqrt(2) * np.array([np.cos(t), np.sin(t)]),
                                1.0, (n, 2)))
    return np.vstack(X), np.repeat(np.arange(12), n)


def test_blobs_inside_a_group_that_the_walk_does_not_leave_within_the_scan_are_found():
    # the longest window holds the three groups (NMI 0.61); one group is a component, and
    # two are joined by weights the walk crosses only after e^9.4 steps, the scan's horizon:
    # each alone has four metastable blobs that outlast it (before: c = 6)
    X, y = _groups_of_blobs(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ == "metastable"
    assert np.unique(model.labels_at(tau=model.tau_)).size == 3
    # the three groups are examined first (one is a component), then their blobs of two or
    # more consensus pieces, which are kept whole
    first = model.cluster_splits_[:3]
    assert [(s["size"], s["c"]) for s in first] == [(600, 4)] * 3
    assert sum(s["component"] for s in first) == 1
    inside = [s for s in model.cluster_splits_ if not s["component"]]
    assert 3 < len(model.cluster_splits_) <= 15 and all(s["c"] == 1 for s in inside[2:])
    assert model.n_clusters_ == 12 and nmi(y, model.labels_) > 0.95
    # the summary says where the chosen row's 3 clusters became 12
    table = model.summary().split("clusters scanned on their own (cluster_splits_):\n")[1]
    rows = [line.split() for line in table.splitlines()[1:]]
    assert len(rows) == len(model.cluster_splits_)
    assert sorted((int(r[0]), r[1], int(r[-1])) for r in rows if r[1] == "cluster") == \
        sorted((s["size"], "cluster", s["c"]) for s in inside)


def _grid_of_blobs(seed, g=4, n=100, spacing=4.5, far=3):
    """A g x g grid of touching blobs (sd 1, centres `spacing` apart), one connected
    component, and `far` separate blobs: the layout of sipu/a2's groups."""
    rng = np.random.default_rng(seed)
    centres = ([(i * spacing, j * spacing) for i in range(g) for j in range(g)]
               + [(-20.0 - 10 * f, -20.0) for f in range(far)])
    X = np.vstack([rng.normal(c, 1.0, (n, 2)) for c in centres])
    return X, np.repeat(np.arange(len(centres)), n)


def test_touching_blobs_of_a_component_are_found_by_its_own_plateau():
    # the grid's own scan has no metastable window (the walk leaves each blob before it
    # mixes inside) but a plateau of 12 parts with valleys between them: split (before the
    # plateau counted: c = 4, NMI 0.34)
    X, y = _grid_of_blobs(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    grid = [s for s in model.cluster_splits_ if s["size"] == 1600]
    assert [(s["rule"], s["component"]) for s in grid] == [("plateau", True)] and grid[0]["c"] > 8
    assert model.n_clusters_ >= 17 and nmi(y, model.labels_) > 0.9


def test_a_moon_is_not_split_at_a_chance_gap():
    # a moon of 67 points (three moons of 200, seed 0: graphclust demo --n-samples 200): its
    # own scan splits it at a sparse spot into halves that the null model passes, with a dip
    # of p = 0.02 between them; three moons are examined, so the level is 0.05 / 3
    X, y = gc.datasets.three_moons(200, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3 and nmi(y, model.labels_) == pytest.approx(1.0)
    assert not any(s["c"] > 1 for s in model.cluster_splits_)
    assert [s["rule"] for s in model.cluster_splits_].count("unimodal") >= 1


def test_a_moons_arcs_are_joined_where_no_valley_lies_between_them():
    # three moons of 600, seed 11: one moon is a component whose own scan cuts it into three
    # arcs at sparse spots; neither boundary has a valley at the level 0.05 / 3 (dip p = 0.10
    # and 0.035), so the moon stays whole (at the level 0.05 it was cut once: c = 4, NMI 0.91;
    # before the dip test twice: c = 5, 0.86)
    X, y = gc.datasets.three_moons(600, random_state=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=11).fit(X)
    assert [s["rule"] for s in model.cluster_splits_ if s["size"] == 200][0] == "unimodal"
    assert model.n_clusters_ == 3 and nmi(y, model.labels_) == pytest.approx(1.0)


def _ring_and_outliers(seed, sd=0.3, n=40):
    """Eight touching blobs (one at the centre, seven on a ring of radius 2) and seven far
    blobs on a ring of radius 6.3, n points each: the layout of Veenman et al.'s R15."""
    rng = np.random.default_rng(seed)
    inner = [(0.0, 0.0)] + [(2 * np.cos(a), 2 * np.sin(a)) for a in np.arange(7) * 2 * np.pi / 7]
    outer = [(6.3 * np.cos(a), 6.3 * np.sin(a)) for a in np.arange(7) * 2 * np.pi / 7 + 0.2]
    X = np.vstack([rng.normal(c, sd, (n, 2)) for c in inner + outer])
    return X, np.repeat(np.arange(15), n)


def test_blobs_of_a_component_are_found_beside_far_components():
    # draw 2 of this layout: the scan's choice holds the ring's blobs in two clusters beside
    # the far blobs (9 in all), and their own scans split them (3 and 5)
    X, y = _ring_and_outliers(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert any(s["c"] > 1 for s in model.cluster_splits_)
    assert model.n_clusters_ >= 13 and nmi(y, model.labels_) > 0.95
    # draw 4: the ring's eight blobs are one component, and without its own scan the ring
    # stayed one cluster (c = 9, NMI 0.82); since its bottleneck split is two metastable sets,
    # the partition that keeps it whole gives way to a candidate that splits only the ring
    # (240 + 80 points, tau 512), whose own scans split its parts (6 and 2)
    # (docs/model_selection.md, *Built: whole components give way only to splits of their own
    # bottlenecks*)
    X, y = _ring_and_outliers(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
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
    assert [s["c"] for s in model.cluster_splits_] == [1, 1]
    assert nmi(model.labels_[perm], again.labels_) == pytest.approx(1.0)


def test_the_scan_is_read_as_it_is_after_a_split_and_the_split_survives_a_file(tmp_path):
    X, _ = _ring_and_outliers(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    at_tau = model.labels_at(tau=model.tau_)  # the scan's row: the ring's blobs in two
    assert np.unique(at_tau).size < model.n_clusters_
    for k in np.unique(model.labels_):  # labels_ refines it
        assert np.unique(at_tau[model.labels_ == k]).size == 1
    np.testing.assert_array_equal(model.labels_at(n_clusters=model.n_clusters_), model.labels_)
    path = tmp_path / "model.npz"
    model.save(path)
    again = gc.StabilityClustering.load(path)
    assert again.cluster_splits_ == model.cluster_splits_
    np.testing.assert_array_equal(again.labels_at(tau=model.tau_), at_tau)
    np.testing.assert_array_equal(again.predict(X[:50]), model.predict(X[:50]))
    # a file of the last format's first release recorded whole components only, by that name
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(bytes(arrays["meta_json"]).decode())
    old = [{k: v for k, v in r.items() if k != "component"} for r in meta.pop("cluster_splits")]
    for key, records, expect in (("component_splits", old, "read"),
                                 ("component_splits", [{"size": 3}], "component_splits is"),
                                 ("cluster_splits", old, "cluster_splits is")):
        arrays["meta_json"] = np.frombuffer(json.dumps(dict(meta, **{key: records})).encode(),
                                            dtype=np.uint8)
        np.savez(tmp_path / "old.npz", **arrays)
        if expect == "read":
            loaded = gc.StabilityClustering.load(tmp_path / "old.npz").cluster_splits_
            assert loaded == [dict(r, component=True) for r in old]
        else:
            with pytest.raises(ValueError, match=f"damaged: {expect} not a list of records"):
                gc.StabilityClustering.load(tmp_path / "old.npz")


def test_edge_lengths_in_blocks_match_the_direct_lengths(monkeypatch):
    import graphclust.cluster._valley_joins as cs
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    W = _knn(X)
    whole = cs.edge_length_matrix(X, W)
    monkeypatch.setattr(cs, "_EDGE_BLOCK", 7)  # many blocks, the last one short
    for points in (X, sp.csr_matrix(X)):
        blocked = cs.edge_length_matrix(points, W)
        assert np.array_equal(blocked.indices, whole.indices)
        np.testing.assert_allclose(blocked.data, whole.data, rtol=1e-9)
    coo = whole.tocoo()  # each edge's length is its end points' distance
    assert whole.nnz == W.nnz
    np.testing.assert_allclose(coo.data, np.linalg.norm(X[coo.row] - X[coo.col], axis=1),
                               rtol=1e-12)


class _ShortWindow(_Scripted):
    """A scripted metastable split into halves whose window does not outlast the whole."""

    def _scan_choice(self, W0, seed, fine=None):
        sub, rule, tau, scan = super()._scan_choice(W0, seed)
        return sub, rule, tau, dict(scan, window=1.0)


def test_a_components_split_shorter_than_it_is_judged_by_its_valleys():
    # a whole component's window runs to the scan's end, an end of the grid and not of the
    # component: a split that does not outlast it is judged by the density valleys between its
    # parts; a cluster that the walk leaves within the scan keeps the window's verdict
    model = _ShortWindow((40, 40), n_neighbors=10, null_model=False)
    modes = np.repeat([0.0, 10.0], 40)[:, None] + np.linspace(0, 1, 80)[:, None]
    line = np.linspace(0, 1, 80)[:, None]  # one mode along the chain
    dist = np.ones((80, 10))
    bridged = _blocks(40, 40).tolil()
    bridged[0, 40] = bridged[40, 0] = 1.0
    chain = sp.diags([np.ones(79), np.ones(79)], [-1, 1], format="csr")
    for W, X, log_escape, rule in [(bridged.tocsr(), modes, np.inf, "metastable"),
                                   (chain, modes, np.inf, "metastable"),
                                   (chain, line, np.inf, "unimodal"),
                                   (bridged.tocsr(), modes, 6.0, "shorter")]:
        assert model._own_split_choice(W, np.arange(80), X, dist, 0, log_escape)[1] == rule


def test_three_touching_blobs_of_a_component_are_split_at_their_valleys():
    # three blobs in a bent row, 3.7-4 deviations apart (sipu/a1's component of three, its
    # coordinates over 1 500), one component of the 10-NN graph beside three single blobs:
    # the walk leaves each blob about as soon as it mixes inside it, so the windows cannot
    # tell the three from a blob's tiles, and the component stayed whole (c = 4, NMI 0.82)
    rng = np.random.default_rng(1)
    row = np.array([[24.25, 39.20], [20.44, 40.56], [17.79, 37.92]])
    centres = np.vstack([row, row[0] + [[0, 12], [8, 12], [16, 12]]])
    X = rng.normal(size=(900, 2)) + np.repeat(centres, 150, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 6 and nmi(np.repeat(np.arange(6), 150), model.labels_) > 0.95


def test_touching_blobs_of_a_component_beside_another_are_split():
    # blobs at (4, 0) and (4, 4) (sd 0.7) are one component of the 10-NN graph, the third
    # blob another; the pair's own split is metastable from tau = 16 to 128 only, less than
    # the pair whole up to the scan's end, and the pair was one cluster (c = 2)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(180, 2)) * 0.7 + np.repeat([[4, 0], [0, 4], [4, 4]], 60, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3 and nmi(np.repeat([0, 1, 2], 60), model.labels_) == 1.0
