"""A choice that the null model calls chance cuts takes the looks it has not taken.

Two parallel bands 0.4 apart: the kNN walk cuts each across at every walk length (the bands
separate only about 1.6 times more slowly than a band's halves mix), and the null model calls
those cuts chance (`StabilityWarning`, "weak cluster structure"). The density walk's valleys
part the bands (`FineTierLooks._past_chance_cuts`; docs/battery.md, *Built: a choice of chance
cuts takes the next look*). Structureless shapes stay warned about: the look's answer is kept
only with no warning of its own and a density valley between every two adjacent clusters.
"""

import warnings

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score

import graphclust as gc
from _stability_helpers import fit_warned


def _bands(seed):
    """800 points in a band along x (sd 1 by 0.1) and 200 in a parallel one 1 above it."""
    rng = np.random.default_rng(seed)
    X = np.r_[np.c_[rng.normal(0, 1, 800), rng.normal(0, 0.1, 800)],
              np.c_[rng.normal(0, 1, 200), rng.normal(1, 0.1, 200)]]
    return X, np.repeat([0, 1], [800, 200])


_fit = fit_warned


@pytest.fixture(scope="module")
def bands_fit():
    X, y = _bands(0)
    model, said = _fit(X)
    return X, y, model, said


def test_the_kNN_walk_alone_calls_its_cuts_of_the_bands_chance(monkeypatch):
    # without the looks past chance cuts: tiles of the bands, and a warning
    import graphclust.cluster._stability_looks as looks

    monkeypatch.setattr(looks.FineTierLooks, "_past_chance_cuts",
                        lambda self, fit, said, *args: (fit, said))
    X, y = _bands(0)
    model, said = _fit(X)
    assert model.n_clusters_ >= 4
    assert normalized_mutual_info_score(y, model.labels_) < 0.6
    assert any("weak cluster structure" in str(w.message) for w in said)


def test_the_look_past_chance_cuts_finds_the_two_bands(bands_fit):
    X, y, model, said = bands_fit
    assert model.n_clusters_ == 2
    assert normalized_mutual_info_score(y, model.labels_) > 0.97
    assert not said
    assert model.density_exponent_ is not None  # the density walk found them
    assert model.selection_rule_ == "plateau"
    assert not model.noise_.any()


def test_the_bands_are_found_for_any_row_order(bands_fit):
    X, y, model, _ = bands_fit
    perm = np.random.default_rng(1).permutation(len(X))
    again, said = _fit(X[perm])
    assert not said
    assert adjusted_rand_score(model.labels_[perm], again.labels_) == 1.0


def test_predict_and_the_model_file_follow_the_looks_answer(bands_fit, tmp_path):
    X, y, model, _ = bands_fit
    np.testing.assert_array_equal(model.predict(X), model.labels_)
    path = model.save(tmp_path / "bands")
    loaded = gc.StabilityClustering.load(path)
    np.testing.assert_array_equal(loaded.predict(X[::7]), model.labels_[::7])
    assert loaded.density_exponent_ == model.density_exponent_


@pytest.mark.parametrize("half_width, n", [(0.05, 1200), (0.1, 600)])
def test_a_structureless_ring_stays_warned_about(half_width, n):
    # the density walk's chance basins on a ring pass their own null model; the dip test
    # finds no valley between them, and the fit keeps its first answer and its warning
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 2 * np.pi, n)
    r = 1 + half_width * rng.uniform(-1, 1, n)
    model, said = _fit(np.c_[r * np.cos(t), r * np.sin(t)])
    assert model.n_clusters_ == 1 or said


def test_the_warnings_are_told_at_the_callers_line():
    # caught while the choice could change, then told again: at the line that called fit
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(300, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.StabilityClustering(random_state=0).fit(X)
    told = [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
    assert told
    assert all(w.filename == __file__ for w in told)


def test_the_looks_not_taken_follow_what_the_fine_tier_took():
    from graphclust.cluster._stability_looks import LOOKS_PAST_CHANCE, looks_not_taken

    tiers_scan, valley_scan = {}, {"valleys": True}
    choice = np.zeros(5, dtype=np.int64)
    every = ("density", "valleys", "whole components", "mutual")
    assert looks_not_taken(None) == LOOKS_PAST_CHANCE == every
    assert looks_not_taken(((choice,), None)) == every
    assert looks_not_taken((None, (choice, "plateau", 8.0, None, None, tiers_scan))) == every[1:]
    assert looks_not_taken((None, (choice, "plateau", 8.0, None, None, valley_scan))) == (
        every[2:])
    assert looks_not_taken((None, None)) == ()


def test_the_density_walk_is_scanned_once_for_its_tiers_and_its_valleys(monkeypatch):
    # a structureless square: both looks are taken and neither is kept; the valley look
    # reads the scan the tiers' look took (the scans the valley look can take on: one)
    from graphclust.cluster._stability_clustering import StabilityClustering

    taken = []
    scan_choice = StabilityClustering._scan_choice

    def counted(self, W0, seed, keep_quadrature=False, fine=None):
        taken.append(keep_quadrature)
        return scan_choice(self, W0, seed, keep_quadrature, fine)

    monkeypatch.setattr(StabilityClustering, "_scan_choice", counted)
    X = np.random.default_rng(0).uniform(size=(300, 2))
    model, said = _fit(X)
    assert said  # called chance, so the looks past it ran
    assert model.density_exponent_ is None  # neither look's answer kept
    assert sum(taken) == 1


def _random_walks(m=500, seed=1):
    """Four random-walk trajectories of m steps (sd 0.05), as wut/trajectories draws them."""
    rng = np.random.default_rng(seed)
    centres = np.array([[-3, 1], [3, 2.5], [-1, -2.5], [3.5, -1.5]])
    X = np.vstack([c + np.cumsum(rng.normal(0, 0.05, (m, 2)), axis=0) for c in centres])
    return X, np.repeat(np.arange(4), m)


def test_chance_cuts_of_trajectories_take_the_graphs_whole_components():
    """The walk cuts the trajectories into arcs (10 clusters, called chance cuts: "weak");
    the graph's five components (one trajectory in two) are taken whole, with no warning
    (wut/trajectories: 14 clusters, NMI 0.783 -> its four components, 1.000; docs/battery.md).
    """
    X, y = _random_walks()
    assert gc.knn_graph(X, n_neighbors=10).n_components == 5
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ == "whole components" and model.tau_ is None
    assert model.n_clusters_ == 5 and model.cluster_splits_ == []
    assert not [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
    # every found cluster lies within one trajectory
    assert all(np.unique(y[model.labels_ == c]).size == 1 for c in range(5))
    assert "large connected components, each whole" in model.summary().splitlines()[0]
