"""The fine tier's last look: the graph's connected components when its tiles are chance.

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
        assert np.array_equal(got, np.repeat([0, 1], 40))
    assert asked == ([8] if chosen == "tiles" else [])  # the null only judges tiles


def test_connected_graph_has_no_components_choice(monkeypatch):
    monkeypatch.setattr(gc.StabilityClustering, "_passes_null",
                        lambda *a: pytest.fail("a connected graph needs no null"))
    W = sp.csr_matrix(np.ones((30, 30)) - np.eye(30))
    model = gc.StabilityClustering(random_state=0)
    assert model._components_choice(W, np.arange(30) // 10, np.ones((30, 10))) is None
