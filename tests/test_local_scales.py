"""Clusters metastable at walk lengths of their own (`cluster._local_scales`, the fine tier's
look `FineTierLooks._local_choice`; docs/model_selection.md, *Small blobs touching a large
one*).

A planar Gaussian blob of 4 000 points mixes only beyond the scan's last walk length, and two
small, denser blobs touch it: no walk length has all three, the fit ended in the fine tier
with 43-45 tiles (adjusted Rand index 0.012). The small blobs are metastable sets at every
walk length; kept at their own scales, with the large blob as what they leave, the partition
is the truth.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score

import graphclust as gc
import graphclust.cluster._stability_looks as looks
from graphclust.cluster._local_scales import LOCAL_MARGIN, metastable_clusters


def _large_with_small_touching(seed):
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(size=(4000, 2)),
                        0.5 * rng.normal(size=(250, 2)) + [5.5, 0.0],
                        0.5 * rng.normal(size=(200, 2)) + [-2.5, 5.0]])
    return X, np.repeat([0, 1, 2], [4000, 250, 200])


def _without_the_valley_look(monkeypatch):
    # the density look's valley choice comes first and finds these blobs too (below): the
    # multiscale look is tested on its own
    monkeypatch.setattr(looks.FineTierLooks, "_valley_choice", lambda *a, **k: None)


def test_small_blobs_touching_a_large_one_are_found(monkeypatch):
    X, y = _large_with_small_touching(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        valley = gc.StabilityClustering(random_state=0).fit(X)
    # by default the density walk's persistent level, valleys between its parts
    assert valley.n_clusters_ == 3 and valley.selection_rule_ == "plateau"
    assert adjusted_rand_score(y, valley.labels_) > 0.99
    assert not [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
    _without_the_valley_look(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3 and model.selection_rule_ == "multiscale"
    assert adjusted_rand_score(y, model.labels_) > 0.99
    assert model.tau_ is None
    assert not [w for w in caught if issubclass(w.category, gc.StabilityWarning)]
    assert "multiscale tier" in model.summary().splitlines()[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_structureless_blob_gets_no_local_clusters(seed):
    X = np.random.default_rng(seed).normal(size=(3000, 2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ != "multiscale"
    assert model.n_clusters_ == 1 or [w for w in caught
                                      if issubclass(w.category, gc.StabilityWarning)]


def _dense_log_kvv(W, nodes):
    """log(t_esc * (1 - lambda_2(S_C))) by dense algebra (the reference)."""
    W = W.toarray()
    inside = W[np.ix_(nodes, nodes)]
    vol = W[nodes].sum()
    cut = vol - inside.sum()
    d = inside.sum(axis=1)
    S = inside / np.sqrt(np.outer(d, d))
    lam = np.sort(np.linalg.eigvalsh(S))[::-1]
    return np.inf if cut <= 0 else np.log(vol / cut * (1 - lam[1]))


@pytest.mark.parametrize("seed", range(6))
def test_metastable_clusters_against_a_dense_reference(seed):
    """Random block graphs and groupings: the clusters kept are those the dense reference
    finds metastable by the margin, seen at two or more walk lengths, the most persistent
    (then the most metastable) first while disjoint."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(8, 20, size=6)
    blocks = [rng.uniform(0.5, 1.0, (m, m)) for m in sizes]
    A = sp.block_diag([(b + b.T) / 2 for b in blocks]).toarray()
    n = A.shape[0]
    A += rng.uniform(0, 1, (n, n)) * (rng.uniform(size=(n, n)) < rng.uniform(0.002, 0.05))
    A = np.triu(A, 1)
    W = sp.csr_matrix(A + A.T)
    pieces = np.repeat(np.arange(12), np.ravel([[m // 2, m - m // 2] for m in sizes]))
    groupings = [np.arange(12), np.arange(12) // 2, np.arange(12) // 2,
                 np.r_[np.arange(6) // 2, 3 + np.arange(6) // 2], np.arange(12) // 4]
    labels, kept = metastable_clusters(W, pieces, groupings, min_size=10)
    # the reference: every cluster at two or more walk lengths, scored densely
    seen = {}
    for g in groupings:
        for c in np.unique(g):
            members = tuple(np.flatnonzero(g == c))
            if np.isin(pieces, members).sum() >= 10:
                seen[members] = seen.get(members, 0) + 1
    scores = {m: _dense_log_kvv(W, np.flatnonzero(np.isin(pieces, m)))
              for m, t in seen.items() if t >= 2}
    ranked = sorted((m for m, s in scores.items() if s >= LOCAL_MARGIN),
                    key=lambda m: (-seen[m], -scores[m], m))
    taken, expect = set(), []
    for m in ranked:
        if not taken & set(m):
            taken |= set(m)
            expect.append(m)
    assert len(kept) == len(expect)
    for i, m in enumerate(expect):
        nodes = np.flatnonzero(np.isin(pieces, m))
        assert (labels[nodes] == i).all()
        assert kept[i][:2] == (nodes.size, seen[m])
        if np.isfinite(scores[m]):
            assert kept[i][2] == pytest.approx(scores[m], abs=1e-3)
    assert (labels[~np.isin(pieces, list(taken))] == -1).all()


def test_what_the_clusters_leave_must_be_structureless(monkeypatch):
    """The look is refused when the fine tier's tiles of a cluster left over pass the null
    model on their own (letters: many classes left in one cluster)."""
    X, _ = _large_with_small_touching(0)
    calls = []

    def tiles_pass(self, W, labels, k, d_hat):
        calls.append(W.shape[0])
        return True

    monkeypatch.setattr(gc.StabilityClustering, "_passes_null", tiles_pass)
    _without_the_valley_look(monkeypatch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.selection_rule_ != "multiscale"
    assert 4000 in calls  # the large blob, the cluster left over, was judged on its own


def test_a_clusters_own_fine_tier_takes_the_multiscale_look():
    """Two large planar blobs far apart, one with a small dense blob touching it: the scan
    keeps the small blob with its neighbour (c = 2, ARI 0.946 before), whose own scan ends in
    the fine tier; the look inside that cluster finds the small blob."""
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(size=(3500, 2)), 0.5 * rng.normal(size=(200, 2)) + [5.5, 0.0],
                        rng.normal(size=(3500, 2)) + [0.0, 12.0]])
    y = np.repeat([0, 1, 2], [3500, 200, 3500])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3 and adjusted_rand_score(y, model.labels_) > 0.99
    split = [s for s in model.cluster_splits_ if s["c"] > 1]
    assert [(s["rule"], s["c"]) for s in split] == [("multiscale", 2)]
    assert "multiscale" in model.summary()
