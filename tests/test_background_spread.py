"""How widely a background's points spread over the data's window (`background_spread`), and
the look that takes such a background on a choice of clusters
(`FineTierLooks._background_beside`)."""

import warnings

import numpy as np
from conftest import load_script
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score as ARI

import graphclust as gc
from graphclust.cluster._background_noise import BACKGROUND_MIN_SPREAD, background_spread


def _reference_spread(P, noise, random_state=0, n_draws=10):
    """The same statistic by dense distances, drawing the same uniform points in the same
    order: the region's membership by each draw's nearest point of all, the mean gaps by
    the full matrices of pairwise distances."""
    P, noise = np.asarray(P, float), np.asarray(noise, bool)
    m, D = int(noise.sum()), P.shape[1]
    if m < 2:
        return 0.0
    rng = np.random.default_rng(random_state)
    lo, hi = P.min(axis=0), P.max(axis=0)

    def gap(Q):
        G = np.linalg.norm(Q[:, None, :] - Q[None, :, :], axis=2)
        np.fill_diagonal(G, np.inf)
        return G.min(axis=1).mean()

    gaps = []
    for _ in range(n_draws):
        kept = []
        while sum(map(len, kept)) < m and len(kept) < 64:
            U = rng.uniform(lo, hi, (4 * m, D))
            near = np.argmin(np.linalg.norm(U[:, None, :] - P[None, :, :], axis=2), axis=1)
            kept.append(U[noise[near]])
        if sum(map(len, kept)) < m:
            return 0.0
        gaps.append(gap(np.concatenate(kept)[:m]))
    return (gap(P[noise]) / np.mean(gaps)) ** D


def _blobs_in(seed, n_noise, fringe=False):
    """Two Gaussian blobs and either `n_noise` points uniform over their box or, with
    `fringe`, the blobs' own points beyond 2 deviations marked instead."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(0, 0.3, (300, 2)), rng.normal([4, 1], 0.3, (300, 2))]
    if fringe:
        centre = np.r_[np.zeros((300, 2)), np.tile([4.0, 1.0], (300, 1))]
        return X, np.linalg.norm(X - centre, axis=1) > 0.6
    Y = np.r_[X, rng.uniform(X.min(0), X.max(0), (n_noise, 2))]
    return Y, np.arange(len(Y)) >= 600


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(3, 60), st.integers(1, 3), st.integers(0, 99))
def test_background_spread_matches_a_dense_reference(seed, n, D, draws_seed):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, D)) * rng.uniform(0.1, 10, D)
    noise = rng.random(n) < rng.uniform(0.05, 0.9)
    got = background_spread(P, noise, random_state=draws_seed, n_draws=3)
    want = _reference_spread(P, noise, random_state=draws_seed, n_draws=3)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=0)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-3, 1e3), st.floats(-1e3, 1e3))
def test_background_spread_ignores_row_order_scale_and_shift(seed, scale, shift):
    rng = np.random.default_rng(seed)
    P = rng.uniform(0, 1, (80, 2))
    noise = rng.random(80) < 0.4
    base = background_spread(P, noise)
    order = rng.permutation(80)
    np.testing.assert_allclose(background_spread(P[order], noise[order]), base, rtol=1e-9)
    # uniform draws over a scaled, shifted box are the same draws scaled and shifted
    np.testing.assert_allclose(background_spread(P * scale + shift, noise), base, rtol=1e-6)


def test_a_uniform_background_spreads_and_a_fringe_does_not():
    for seed in range(3):  # above 1 too: the points a cluster hides stand apart in its cells
        assert background_spread(*_blobs_in(seed, 150)) > 0.8
        assert background_spread(*_blobs_in(seed, 0, fringe=True)) < BACKGROUND_MIN_SPREAD
    # points gathered on a short segment among blobs: no background
    X, _ = _blobs_in(0, 0)
    line = np.c_[np.linspace(1, 3, 80), np.full(80, 2.0)]
    assert background_spread(np.r_[X, line], np.arange(680) >= 600) < BACKGROUND_MIN_SPREAD


def test_background_spread_is_zero_without_two_noise_points():
    X, _ = _blobs_in(0, 0)
    assert background_spread(X, np.zeros(600, bool)) == 0.0
    assert background_spread(X, np.arange(600) == 5) == 0.0


def _fit(X):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    return model, [str(w.message) for w in said]


def test_shapes_in_clutter_found_beside_the_background():
    # scene 14 of the clutter check: two shapes in 10-30 % uniform clutter. The tiers chose
    # 4 clusters (the clutter's chance cuts; ARI 0.82 on the shapes' points) on the code
    # before the look; the background, spread over the box, is left out and both shapes kept.
    X, y = load_script("check_shapes_in_clutter").scene(14)
    model, said = _fit(X)
    shapes = y >= 0
    assert model.n_clusters_ == 2 and ARI(y[shapes], model.labels_[shapes]) > 0.99, said
    assert model.noise_.sum() > 0.8 * (~shapes).sum()
    assert model.noise_[shapes].mean() < 0.05


def test_a_curve_sparse_stretch_is_no_background():
    # curve mixture 139: a sine, an arc and a blob; the clutter model tells apart a sparser
    # population (the sine's sparse stretch and the blob's fringe) that gathers instead of
    # spreading, and taking it for a background cut the sine in three (5 clusters, silently)
    X, y = load_script("check_curve_mixtures").mixture(139)
    model, said = _fit(X)
    assert model.n_clusters_ == 3 and ARI(y, model.labels_) > 0.99, said
    assert not model.noise_.any()


def test_clusters_beside_a_background_judged_without_its_bridges():
    # scene 22 of the clutter check: four shapes, which the points left when the background is
    # out hold as four whole components of their graph. Judged on the whole graph, through the
    # background's bridges, they escaped as fast as a null's tiles, and the fit answered 6
    # clusters (ARI 0.77 on the shapes' points); judged on their own points' graph they stand
    # (the null model of the whole fit still calls them chance through the background, and the
    # density look that this opens finds the same four).
    X, y = load_script("check_shapes_in_clutter").scene(22)
    model, said = _fit(X)
    shapes = y >= 0
    assert model.n_clusters_ == 4 and ARI(y[shapes], model.labels_[shapes]) > 0.99, said
