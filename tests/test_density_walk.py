"""The walk that sees density: `density_weighted` and `StabilityClustering`'s density look."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
import graphclust.cluster._density_walk as density_walk
from graphclust.cluster._density_walk import (DENSITY_MAX_DIMENSION, LOG_DENSITY_CLIP,
                                              density_exponent, density_weighted)
from _stability_helpers import fit_warned


def _random_graph(n, seed):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.2, random_state=seed, format="csr")
    A = (A + A.T).tocsr()
    return A, rng.uniform(0.1, 3.0, n)


def _dense_reference(W, D, d, g):
    # p_i = (D_i / median D)^(-d); W_ij (p_i p_j)^(g/2), every entry by hand
    p = (D / np.median(D)) ** (-d)
    Wd = W.toarray().copy()
    for i in range(Wd.shape[0]):
        for j in range(Wd.shape[1]):
            Wd[i, j] *= (p[i] * p[j]) ** (g / 2)
    return Wd


@pytest.mark.parametrize("d, g", [(2.0, None), (1.0, 3.0), (2.7, 0.5), (3.0, 0.0)])
def test_density_weighted_matches_the_dense_reference(d, g):
    W, D = _random_graph(40, 1)
    got = density_weighted(W, D, d, exponent=g)
    want = _dense_reference(W, D, d, density_exponent(d) if g is None else g)
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-12, atol=0)
    assert (got != got.T).nnz == 0  # symmetric
    assert np.array_equal(got.indptr, W.indptr) and np.array_equal(got.indices, W.indices)


def test_the_exponent_gives_a_gaussian_kernels_conductivity():
    # the kNN walk's conductivity rho^(1 - 2/d) times rho^g is rho^2
    for d in (1.0, 1.5, 2.0, 3.0):
        assert (1 - 2 / d) + density_exponent(d) == pytest.approx(2.0)
    assert density_exponent(0.5) == 3.0  # below one dimension: read as one
    with pytest.raises(ValueError, match="dimension"):
        density_exponent(0.0)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-200, 1e200), st.permutations(list(range(12))))
def test_density_weighted_is_scale_and_permutation_invariant(scale, perm):
    W, D = _random_graph(12, 3)
    base = density_weighted(W, D, 2.0).toarray()
    np.testing.assert_allclose(density_weighted(W, D * scale, 2.0).toarray(), base,
                               rtol=1e-9)
    perm = np.asarray(perm)
    permuted = density_weighted(W[perm][:, perm], D[perm], 2.0).toarray()
    np.testing.assert_allclose(permuted, base[np.ix_(perm, perm)], rtol=1e-12)


def test_duplicates_keep_finite_weights():
    W, D = _random_graph(30, 2)
    D[:5] = 0.0  # duplicate points: D_k = 0
    got = density_weighted(W, D, 2.0)
    assert np.all(np.isfinite(got.data)) and np.all(got.data >= 0)
    # the clip bounds every factor by e^(clip g / 2) either side
    assert got.data.max() <= W.data.max() * np.exp(LOG_DENSITY_CLIP * 2.0) * (1 + 1e-12)
    # all duplicates: nothing to see, W itself
    assert (density_weighted(W, np.zeros(30), 2.0) != W).nnz == 0


@pytest.mark.parametrize("kw, match", [
    (dict(kth_distance=np.ones(5)), "one distance per row"),
    (dict(kth_distance=-np.ones(30)), "finite and >= 0"),
    (dict(kth_distance=np.full(30, np.nan)), "finite and >= 0"),
    (dict(dimension=0.0), "dimension"),
    (dict(exponent=-1.0), "exponent"),
])
def test_bad_input_is_named(kw, match):
    W, D = _random_graph(30, 0)
    args = dict(kth_distance=D, dimension=2.0, exponent=None) | kw
    with pytest.raises(ValueError, match=match):
        density_weighted(W, **args)


def _two_overlapping_blobs(n=600, sep=3.0, seed=0):
    # two unit Gaussians 3 sigma apart: one density valley, no gap
    rng = np.random.default_rng(seed)
    X = np.vstack([rng.normal(size=(n // 2, 2)), rng.normal(size=(n // 2, 2)) + [sep, 0]])
    return X, np.repeat([0, 1], n // 2)


_fit = fit_warned


@pytest.fixture(scope="module")
def blobs_fit():
    X, y = _two_overlapping_blobs()
    return X, y, _fit(X)


def test_the_kNN_walk_alone_finds_no_structure_in_two_overlapping_blobs(monkeypatch):
    # the premise: without the look, the fine tier's tiling and its warning
    monkeypatch.setattr(density_walk, "DENSITY_MAX_DIMENSION", 0.0)
    X, y = _two_overlapping_blobs()
    model, warned = _fit(X)
    assert model.selection_rule_ == "fine" and model.n_clusters_ > 10
    assert model.density_exponent_ is None and warned


def test_the_walk_that_sees_density_finds_the_two_blobs(blobs_fit):
    from sklearn.metrics import normalized_mutual_info_score as nmi

    X, y, (model, warned) = blobs_fit
    assert model.n_clusters_ == 2 and not warned
    assert model.selection_rule_ in ("metastable", "plateau")
    assert model.density_exponent_ == pytest.approx(density_exponent(model.intrinsic_dimension_))
    assert nmi(y, model.labels_) > 0.6  # 3 sigma apart: the Bayes rule errs on 6.7 %
    assert not model.noise_.any()
    # its scan is the stored one: the chosen row's partition is the labels
    assert np.array_equal(model.labels_at(tau=model.tau_), model.labels_)
    assert "weighted by density" in model.summary()
    assert "density" in model.timings_


def test_the_density_look_is_the_same_for_any_row_order(blobs_fit):
    X, y, (model, _) = blobs_fit
    perm = np.random.default_rng(5).permutation(len(X))
    other, _ = _fit(X[perm])
    assert other.density_exponent_ == model.density_exponent_
    np.testing.assert_array_equal(np.unique(model.labels_[perm], return_inverse=True)[1],
                                  np.unique(other.labels_, return_inverse=True)[1])


def test_density_look_survives_a_model_file(blobs_fit, tmp_path):
    X, y, (model, _) = blobs_fit
    path = tmp_path / "m.npz"
    model.save(path)
    loaded = gc.StabilityClustering.load(path)
    assert loaded.density_exponent_ == model.density_exponent_
    np.testing.assert_array_equal(loaded.predict(X[:20]), model.predict(X[:20]))


@pytest.mark.parametrize("kind", ["gauss", "unif"])
def test_structureless_samples_do_not_take_the_look(kind):
    # one mode (or none): the null model, weighted the same way, refuses what the look finds
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 2)) if kind == "gauss" else rng.random((400, 2))
    model, warned = _fit(X)
    assert model.density_exponent_ is None
    assert model.n_clusters_ == 1 or warned


def _hubs(n, centres, seed=0, d=4):
    # points on spheres of |N(0, 1)| radius around each centre (Gagolewski's h2mg): a density
    # spike at each centre, and in 4 dimensions a kNN walk that sees only rho^(1/2) of it
    rng = np.random.default_rng(seed)
    y = np.arange(n) % len(centres)
    u = rng.normal(size=(n, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return u * np.abs(rng.normal(size=(n, 1))) + np.outer(np.asarray(centres)[y], np.eye(d)[0]), y


def test_two_hubs_in_four_dimensions_take_the_look(monkeypatch):
    from sklearn.metrics import normalized_mutual_info_score as nmi

    X, y = _hubs(800, [0.0, 1.2])
    model, warned = _fit(X)
    assert 3.0 < model.intrinsic_dimension_ <= DENSITY_MAX_DIMENSION  # 4.26
    assert model.n_clusters_ == 2 and not warned
    assert model.density_exponent_ == pytest.approx(density_exponent(model.intrinsic_dimension_))
    assert nmi(y, model.labels_) > 0.45  # 0.52: the hubs overlap, the Bayes rule errs too
    # the premise: with the look only up to 3 dimensions (the bound before), the fine tier
    monkeypatch.setattr(density_walk, "DENSITY_MAX_DIMENSION", 3.0)
    model, warned = _fit(X)
    assert model.selection_rule_ == "fine" and model.density_exponent_ is None and warned


def test_one_hub_in_four_dimensions_is_not_split():
    X, _ = _hubs(800, [0.0])
    model, warned = _fit(X)
    assert model.density_exponent_ is None  # the null model, weighted alike, refused the look
    assert model.n_clusters_ == 1 or warned


def test_many_dimensions_are_left_alone():
    # above DENSITY_MAX_DIMENSION the kNN distance is no density: no look
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 8))
    model, _ = _fit(X)
    assert model.intrinsic_dimension_ > DENSITY_MAX_DIMENSION
    assert model.density_exponent_ is None


def test_the_null_draws_more_samples_on_the_density_walk(monkeypatch):
    # the density's null varies between draws by more than the margin: NULL_DRAWS per reference
    import graphclust.cluster._stability_null as null

    calls = []
    real = null.null_escape_time

    def spy(*a, **kw):
        calls.append(kw["random_state"])
        return real(*a, **kw)

    monkeypatch.setattr(null, "null_escape_time", spy)
    model = gc.StabilityClustering(random_state=0)
    model._walk_density = (2.0, 2.0)
    model.intrinsic_dimension_ = 2.0
    model._null_reference(300, 2, 10, 2.0, np.inf)  # nothing matches: every draw made
    assert sorted(set(calls)) == list(range(null.NULL_DRAWS))
    calls.clear()
    model._walk_density = None
    model._null_reference(300, 2, 10, 2.0, np.inf)
    assert sorted(set(calls)) == [0]


def test_one_dimension_is_left_to_its_own_tests():
    # on a line g = 3 would cube the density estimate's noise: a uniform sample took the look
    from graphclust.cluster._density_walk import DENSITY_MIN_DIMENSION

    X = np.random.default_rng(7).random((1000, 1))
    model, warned = _fit(X)
    assert model.intrinsic_dimension_ < DENSITY_MIN_DIMENSION
    assert model.density_exponent_ is None
    assert model.n_clusters_ == 1 or warned
