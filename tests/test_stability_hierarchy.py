"""StabilityClustering's scanned hierarchy: `labels_at` and `summary` read every walk length's
partition without refitting, the same partitions the scan merged, in the rows' own order."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import graphclust.cluster._stability_clustering as mod
from graphclust.cluster import StabilityClustering, StabilityWarning
from graphclust.datasets import three_moons

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _blobs(n_per=120, seed=0):
    """Four Gaussian blobs in two pairs: a metastable fit whose scan has several levels. The
    blobs of a pair are 2.8 deviations apart, so each pair's own split is not kept (at 3.3
    deviations, since a pair's valley is read from both ends, each pair is split; at 5 its
    parts are metastable sets: test_cluster_splits)."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0], [1.7, 0], [20, 0], [21.7, 0]], dtype=float)
    X = np.vstack([c + rng.normal(scale=0.6, size=(n_per, 2)) for c in centres])
    return X[rng.permutation(X.shape[0])]


@pytest.fixture(scope="module")
def captured():
    """A fit of noisy blobs with the scan it chose from (captured inside the fit)."""
    # (a draw whose two pairs stay whole: `labels_` is then the scan's row at tau_; the
    # clusters' own splits are tests/test_cluster_splits.py's. Seed 1 did, until the fit ran
    # in its kNN lists' own order (`lists_order`): one pair, 3.3 deviations apart, now splits)
    X = _blobs(seed=2)
    seen = {}
    real = mod.select_partition

    def spy(scan, *a, **k):
        out = real(scan, *a, **k)
        # the fit's own scan is the first; the components' own scans and the null samples'
        # come later
        seen.setdefault("scan", scan)
        return out

    mod.select_partition = spy
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", StabilityWarning)
            model = StabilityClustering(random_state=0).fit(X)
    finally:
        mod.select_partition = real
    return X, model, seen["scan"]


def _same_partition(a, b):
    # equal up to the names of the clusters: a one-to-one map between the labels
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_every_walk_length_gives_the_scans_own_partition(captured):
    X, model, scan = captured
    order = model._fit_order  # the rows' canonical order, then the kNN lists' own
    for j, tau in enumerate(model.scan_["taus"]):
        labels = model.labels_at(tau=tau)
        # the scan ran on X[order]: its point i is row order[i]
        expected = np.empty_like(labels)
        expected[order] = np.asarray(scan["consensus"][j])
        if tau == model.tau_:
            np.testing.assert_array_equal(labels, model.labels_)
        else:
            assert _same_partition(labels, expected), tau
        # 0..c-1, every label used, c as the scan reports it
        c = int(labels.max()) + 1
        assert labels.min() == 0 and np.unique(labels).size == c
        if tau != model.tau_:
            assert c == model.scan_["consensus_n_clusters"][j]


def test_every_partition_is_a_grouping_of_the_fine_pieces(captured):
    _, model, _ = captured
    pieces = model.fine_labels_
    for tau in model.scan_["taus"]:
        labels = model.labels_at(tau=tau)
        per_piece = [np.unique(labels[pieces == p]).size for p in np.unique(pieces)]
        assert max(per_piece) == 1


def test_the_chosen_walk_length_returns_labels_(captured):
    _, model, _ = captured
    assert model.selection_rule_ in ("metastable", "plateau")
    out = model.labels_at(tau=model.tau_)
    np.testing.assert_array_equal(out, model.labels_)
    out[:] = -1  # a copy: the model's own labels are untouched
    assert model.labels_.min() == 0
    np.testing.assert_array_equal(model.labels_at(n_clusters=model.n_clusters_), model.labels_)


def _dense_stability(X_graph, labels, alpha):
    """Markov stability trace(H^T (Pi R_alpha - pi pi^T) H) from the dense resolvent."""
    W = X_graph.toarray()
    d = W.sum(axis=1)
    pi = d / d.sum()
    n = len(d)
    M = np.diag(pi) @ ((1 - alpha) * np.linalg.inv(np.eye(n) - alpha * W / d[:, None]))
    H = np.eye(int(labels.max()) + 1)[labels]
    return float(np.trace(H.T @ (M - np.outer(pi, pi)) @ H))


def test_n_clusters_gives_exactly_that_many_up_to_the_pieces(captured):
    _, model, _ = captured
    s = model.scan_
    cs, taus, pieces = s["consensus_n_clusters"], s["taus"], model.fine_labels_
    n_pieces = int(pieces.max()) + 1
    assert n_pieces > cs.max() > cs.min() + 1  # levels between and beyond the scan's
    for c in range(1, n_pieces + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            labels = model.labels_at(n_clusters=c)
        assert np.unique(labels).size == c and labels.max() == c - 1
        assert max(np.unique(labels[pieces == p]).size for p in range(n_pieces)) == 1
        if c == model.n_clusters_:
            np.testing.assert_array_equal(labels, model.labels_)
        elif c in cs:  # the scan's own partition, at the shortest walk length giving c
            np.testing.assert_array_equal(
                labels, model.labels_at(tau=taus[int(np.flatnonzero(cs == c)[0])]))


def gc_lists(X):
    """The fit's 10-NN lists (exact search below 20 000 points)."""
    from graphclust import nearest_neighbors

    return nearest_neighbors(X, 10, random_state=0)


def test_a_cut_between_levels_is_the_stored_flows_stability(captured):
    from graphclust.cluster._stability import coarse_stability

    X, model, _ = captured
    s = model.scan_
    cs = s["consensus_n_clusters"]
    order = model._fit_order
    W = mod.StabilityClustering(random_state=0)._weights(
        *gc_lists(X[order]), 10)  # the fit's graph, in the fit's row order
    between = [c for c in range(int(cs.min()) + 1, int(cs.max())) if c not in cs]
    assert between
    for c in between:
        labels = model.labels_at(n_clusters=c)
        finer = np.flatnonzero(cs > c)
        j = int(finer[np.argmin(cs[finer])])
        g = np.array([labels[model.fine_labels_ == p][0]
                      for p in range(int(model.fine_labels_.max()) + 1)])
        stored = coarse_stability(s["flows"][j], s["piece_mass"], g)
        dense = _dense_stability(W, labels[order], s["alphas"][j])
        assert stored == pytest.approx(dense, rel=1e-6, abs=1e-9)


def test_more_than_the_pieces_warns_and_returns_the_pieces(captured):
    _, model, _ = captured
    n_pieces = int(model.fine_labels_.max()) + 1
    with pytest.warns(StabilityWarning, match=f"the finest level, are {n_pieces}"):
        labels = model.labels_at(n_clusters=n_pieces + 3)
    assert _same_partition(labels, model.fine_labels_)


def test_a_fit_with_n_clusters_between_levels_returns_exactly_c(captured):
    X, model, _ = captured
    cs = model.scan_["consensus_n_clusters"]
    c = next(c for c in range(int(cs.min()) + 1, int(cs.max())) if c not in cs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        given = StabilityClustering(n_clusters=c, random_state=0).fit(X)
    assert given.n_clusters_ == c and given.selection_rule_ == "n_clusters"
    np.testing.assert_array_equal(given.labels_at(tau=given.tau_), given.labels_)
    assert f"{c:>6d}" in [r for r in given.summary().splitlines() if r.endswith("<- chosen")][0]


def test_the_hierarchy_does_not_depend_on_the_row_order(captured):
    X, model, _ = captured
    perm = np.random.default_rng(1).permutation(X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        other = StabilityClustering(random_state=0).fit(X[perm])
    for tau in model.scan_["taus"]:
        np.testing.assert_array_equal(other.labels_at(tau=tau), model.labels_at(tau=tau)[perm])
    assert other.summary() == model.summary()


def test_summary_has_one_row_per_walk_length_and_marks_the_choice(captured):
    _, model, _ = captured
    lines = model.summary().splitlines()
    assert lines[0].startswith(f"StabilityClustering: {model.n_clusters_} clusters of "
                               f"{model.labels_.size} points ({model.selection_rule_} tier")
    m, splits = model.scan_["taus"].size, model.cluster_splits_
    rows = lines[2:2 + m]  # then, if any, the clusters scanned on their own
    assert len(lines) == 2 + m + (2 + len(splits) if splits else 0)
    assert not splits or lines[2 + m] == "clusters scanned on their own (cluster_splits_):"
    marked = [r for r in rows if r.endswith("<- chosen")]
    assert len(marked) == 1
    tau, c = marked[0].split()[:2]
    assert float(tau) == model.tau_ and int(c) == model.n_clusters_
    for row, cs in zip(rows, model.scan_["consensus_n_clusters"]):
        if not row.endswith("<- chosen"):
            assert int(row.split()[1]) == cs


def test_one_cluster_has_no_chosen_row():
    X = np.zeros((60, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 1 and model.tau_ is None
    text = model.summary()
    assert "no cluster structure found" in text and "<- chosen" not in text


def test_the_hierarchy_survives_save_and_load(tmp_path, captured):
    _, model, _ = captured
    loaded = StabilityClustering.load(model.save(tmp_path / "m.npz"))
    assert loaded.summary() == model.summary()
    for tau in model.scan_["taus"]:
        np.testing.assert_array_equal(loaded.labels_at(tau=tau), model.labels_at(tau=tau))


def test_a_file_without_the_partitions_says_to_refit(tmp_path, captured):
    _, model, _ = captured
    path = model.save(tmp_path / "m.npz")
    with np.load(path) as z:
        data = {k: z[k] for k in z.files if k != "scan_groups"}
    np.savez(tmp_path / "old.npz", **data)
    old = StabilityClustering.load(tmp_path / "old.npz")
    np.testing.assert_array_equal(old.labels_, model.labels_)  # the rest still works
    with pytest.raises(ValueError, match="fit it again"):
        old.labels_at(tau=1)


@pytest.mark.parametrize("kwargs,match", [
    ({}, "exactly one of tau and n_clusters"),
    ({"tau": 1, "n_clusters": 2}, "exactly one of tau and n_clusters"),
    ({"tau": 3.0}, r"tau must be one of the scanned walk lengths \[1.0, 2.0"),
    ({"tau": -1.0}, "tau"),
    ({"tau": "long"}, "tau"),
    ({"n_clusters": 0}, "n_clusters"),
    ({"n_clusters": 10**6}, "n_clusters"),
    ({"n_clusters": 2.5}, "n_clusters"),
])
def test_bad_requests_are_refused(captured, kwargs, match):
    _, model, _ = captured
    with pytest.raises((ValueError, TypeError), match=match):
        model.labels_at(**kwargs)


def test_not_fitted():
    with pytest.raises(NotFittedError):
        StabilityClustering().labels_at(tau=1)
    with pytest.raises(NotFittedError):
        StabilityClustering().summary()


def test_three_moons_example():
    X, _ = three_moons(600, random_state=0)
    model = StabilityClustering(random_state=0).fit(X)
    assert model.summary().splitlines()[0] == (
        "StabilityClustering: 3 clusters of 600 points (metastable tier, tau = 512)")
    assert int(model.labels_at(tau=1).max()) + 1 > 3


def test_consistency_clustering_reads_the_same_hierarchy(tmp_path):
    from graphclust import ConsistencyClustering

    X = _blobs(60, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StabilityWarning)
        model = ConsistencyClustering(random_state=0).fit(X)
        alone = StabilityClustering(random_state=0).fit(X)
    assert model.criterion_ == "stability" and model.summary() == alone.summary()
    for tau in alone.scan_["taus"]:
        np.testing.assert_array_equal(model.labels_at(tau=tau), alone.labels_at(tau=tau))
    loaded = ConsistencyClustering.load(model.save(tmp_path / "c.npz"))
    np.testing.assert_array_equal(loaded.labels_at(tau=1), alone.labels_at(tau=1))


def test_an_omega_fit_summarises_its_search_and_refuses_labels_at():
    from graphclust import ConsistencyClustering

    X = _blobs(40, seed=4)
    model = ConsistencyClustering(criterion="omega", max_clusters=4, random_state=0).fit(X)
    lines = model.summary().splitlines()
    assert lines[0].startswith(f"ConsistencyClustering: {model.n_clusters_} clusters")
    rows = lines[2:]
    assert [int(r.split()[0]) for r in rows] == list(model.omega_by_n_clusters_)
    marked = [r for r in rows if r.endswith("<- chosen")]
    assert len(marked) == 1 and int(marked[0].split()[0]) == model.n_clusters_
    best = max(v for v in model.omega_by_n_clusters_.values() if np.isfinite(v))
    assert float(marked[0].split()[1]) == pytest.approx(best, abs=1e-4)
    with pytest.raises(ValueError, match="criterion='omega'"):
        model.labels_at(n_clusters=2)


def test_predict_at_a_level_is_predict_with_that_levels_labels(captured):
    import copy

    X, model, _ = captured
    Z = X[:50] + np.random.default_rng(2).normal(scale=0.2, size=(50, 2))
    np.testing.assert_array_equal(model.predict(Z, tau=model.tau_), model.predict(Z))
    for tau in model.scan_["taus"][:6]:
        ref = copy.deepcopy(model)
        ref.labels_ = model.labels_at(tau=tau)
        ref.n_clusters_ = int(ref.labels_.max()) + 1
        got, score = model.predict(Z, return_outlier_score=True, tau=tau)
        want, want_score = ref.predict(Z, return_outlier_score=True)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(score, want_score)  # the score does not depend on the level
    cs = model.scan_["consensus_n_clusters"]
    c = int(cs[0])
    np.testing.assert_array_equal(model.predict(Z, n_clusters=c), model.predict(Z, tau=1))


def test_a_bad_level_is_refused_before_the_neighbour_search(captured, monkeypatch):
    X, model, _ = captured

    def boom(*a, **k):
        raise AssertionError("the neighbour search ran before the level was checked")

    monkeypatch.setattr(model, "_neighbours", boom)
    with pytest.raises(ValueError, match="tau must be one of the scanned walk lengths"):
        model.predict(X[:3], tau=3.0)
    with pytest.raises(ValueError, match="exactly one of tau and n_clusters"):
        model.predict(X[:3], tau=1, n_clusters=2)


def test_an_unreachable_c_warns_at_the_callers_line(captured):
    X, model, _ = captured
    far = int(model.fine_labels_.max()) + 6
    with pytest.warns(StabilityWarning) as record:
        model.labels_at(n_clusters=far)
    assert record[0].filename == __file__
    with pytest.warns(StabilityWarning) as record:
        model.predict(X[:3], n_clusters=far)
    assert record[0].filename == __file__


def test_a_fine_tier_warning_points_to_the_coarser_partitions():
    # structureless points: the fine tier's warning names labels_at, and labels_at gives the
    # coarser partition it promises, from the same scan
    X = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.warns(StabilityWarning) as record:
        model = StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ == "fine" and model.n_clusters_ > 3
    assert any("labels_at(n_clusters=k)" in str(w.message) for w in record)
    coarse = model.labels_at(n_clusters=3)
    assert coarse.shape == model.labels_.shape and np.unique(coarse).tolist() == [0, 1, 2]
