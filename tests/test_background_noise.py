"""`background_noise` and `clutter_posterior`: Byers & Raftery's clutter model (module docstring
of graphclust/cluster/_background_noise.py)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit, gammaln
from sklearn.metrics import normalized_mutual_info_score as NMI

import graphclust as gc
from graphclust.cluster import NoiseModelWarning, background_noise, clutter_posterior
from graphclust.cluster._background_noise import (BACKGROUND_MAX_ERROR, absorbed_labels,
                                                  mixture_modes, noise_to_leave_out)
from graphclust.cluster._stability_hierarchy import StabilityWarning


def _poisson_kth(rng, rates, k=10, d=2):
    """k-th neighbour distances of Poisson processes of the given intensities in d dimensions:
    lambda V_d D^d ~ Gamma(k, 1) (V_d = 1 here, a constant factor on every rate)."""
    return (rng.gamma(k, 1.0, rates.size) / rates) ** (1.0 / d)


def _background(n_blob=300, n_noise=60, seed=0):
    rng = np.random.default_rng(seed)
    blobs = np.r_[rng.normal(0, 0.3, (n_blob, 2)), rng.normal(4, 0.3, (n_blob, 2))]
    return np.r_[blobs, rng.uniform(-3, 7, (n_noise, 2))], np.r_[np.zeros(2 * n_blob, bool),
                                                                 np.ones(n_noise, bool)]


def test_em_reaches_the_maximum_likelihood_of_the_two_gamma_mixture():
    # reference: the mixture's log-likelihood maximised directly over (logit p, log rates)
    rng = np.random.default_rng(1)
    k, d = 10, 2
    D = _poisson_kth(rng, np.r_[np.full(700, 9.0), np.full(300, 1.0)], k, d)
    post, info = clutter_posterior(D, k, d)
    z = (D / np.median(D)) ** d

    def nll(t):
        p, lc, lf = expit(t[0]), np.exp(t[1]), np.exp(t[2])
        a = np.log(p) + k * np.log(lc) - lc * z
        b = np.log1p(-p) + k * np.log(lf) - lf * z
        return -np.sum(np.logaddexp(a, b) + (k - 1) * np.log(z) - gammaln(k))

    best = minimize(nll, [0.0, np.log(0.5), np.log(5.0)], method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-10, "maxiter": 20000})
    p_ref, lc, lf = expit(best.x[0]), np.exp(best.x[1]), np.exp(best.x[2])
    if lc > lf:
        p_ref, lc, lf = 1 - p_ref, lf, lc
    assert info["converged"]
    assert info["weight"] == pytest.approx(p_ref, rel=1e-4)
    assert info["rate_ratio"] == pytest.approx(lf / lc, rel=1e-4)
    assert info["rate_ratio"] == pytest.approx(9.0, rel=0.15)  # and near the truth
    assert info["log_likelihood_gain"] > 0


def test_the_posterior_is_bayes_rule_at_the_fitted_parameters():
    rng = np.random.default_rng(2)
    D = _poisson_kth(rng, np.r_[np.full(400, 20.0), np.full(100, 1.0)])
    post, info = clutter_posterior(D, 10, 2)
    assert ((post >= 0) & (post <= 1)).all()
    # the sparse points (large distance) have the larger posterior: monotone in D
    order = np.argsort(D)
    assert (np.diff(post[order]) >= -1e-12).all()
    assert (post > 0.5)[400:].mean() > 0.95 and (post > 0.5)[:400].mean() < 0.02


def test_em_that_stops_early_says_so():
    D = _poisson_kth(np.random.default_rng(3), np.r_[np.full(400, 5.0), np.full(100, 1.0)])
    assert not clutter_posterior(D, 10, 2, max_iter=1)[1]["converged"]


@pytest.mark.parametrize("args, kwargs, match", [
    (([1.0, -1.0], 10, 2), {}, "kth_distance must be a non-empty array of finite distances"),
    (([1.0, np.nan], 10, 2), {}, "kth_distance"),
    (([], 10, 2), {}, "kth_distance"),
    (([1.0, 2.0], 0, 2), {}, "k must satisfy"),
    (([1.0, 2.0], 10, 0.0), {}, "dimension"),
    (([1.0, 2.0], 10, 2), {"max_iter": 0}, "max_iter"),
    (([1.0, 2.0], 10, 2), {"tol": -1.0}, "tol"),
])
def test_clutter_posterior_names_bad_input(args, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        clutter_posterior(*args, **kwargs)


def test_no_positive_distance_means_no_clutter():
    post, info = clutter_posterior(np.zeros(50), 10, 2)
    assert (post == 0).all() and info["converged"]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), scale_exp=st.integers(-300, 300),
       share=st.floats(0.05, 0.4))
def test_posterior_is_scale_free_and_permutation_equivariant(seed, scale_exp, share):
    rng = np.random.default_rng(seed)
    n_c = int(200 * share)
    D = _poisson_kth(rng, np.r_[np.full(200 - n_c, 10.0), np.full(n_c, 1.0)])
    post = clutter_posterior(D, 10, 2)[0]
    scaled = clutter_posterior(D * 2.0 ** scale_exp, 10, 2)[0]  # exact: a power of two
    np.testing.assert_array_equal(post, scaled)
    p = rng.permutation(D.size)
    np.testing.assert_allclose(clutter_posterior(D[p], 10, 2)[0], post[p], atol=1e-9)


def test_background_noise_finds_a_uniform_background():
    X, truth = _background()
    noise, post, info = background_noise(X, return_posterior=True)
    assert noise.dtype == bool and noise.shape == (X.shape[0],)
    recall, false = noise[truth].mean(), noise[~truth].mean()
    assert recall >= 0.9 and false <= 0.08, (recall, false)
    assert info["dimension"] == pytest.approx(2, abs=0.3)
    np.testing.assert_array_equal(noise, post > 0.5)


def test_background_noise_is_the_same_at_any_scale_and_row_order():
    X, _ = _background(seed=4)
    noise = background_noise(X)
    for s in (2.0**-600, 2.0**600):
        np.testing.assert_array_equal(background_noise(X * s), noise)
    p = np.random.default_rng(0).permutation(X.shape[0])
    np.testing.assert_array_equal(background_noise(X[p]), noise[p])


def test_a_majority_is_no_background():
    rng = np.random.default_rng(5)
    X = np.r_[rng.normal(0, 0.05, (60, 2)), rng.uniform(-5, 5, (400, 2))]
    with pytest.warns(NoiseModelWarning, match="more than half"):
        noise = background_noise(X)
    assert not noise.any()


def test_no_background_to_leave_out():
    rng = np.random.default_rng(8)
    # the sparse part a majority: no background
    D = _poisson_kth(rng, np.r_[np.full(30, 50.0), np.full(300, 1.0)])
    assert noise_to_leave_out(np.c_[D / 2, D], 2.0)[0] is None
    assert noise_to_leave_out(np.zeros((20, 3)), 2.0)[0] is None  # duplicates only


def test_identical_points_have_no_background():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not background_noise(np.ones((30, 3))).any()


def test_cosine_rows_of_a_sparse_matrix():
    import scipy.sparse as sp
    X, truth = _background()
    X3 = np.c_[X + 10.0, np.ones(len(X))]  # rows whose angles carry the plane's geometry
    dense = background_noise(X3, metric="cosine")
    np.testing.assert_array_equal(background_noise(sp.csr_matrix(X3), metric="cosine"), dense)


@pytest.mark.parametrize("kwargs, match", [
    ({"metric": "manhattan"}, "metric must be 'euclidean' or 'cosine'; got 'manhattan'"),
    ({"n_neighbors": 0}, "n_neighbors"),
    ({"n_neighbors": 2.5}, "n_neighbors must be an integer"),
    ({"n_neighbors": 660}, "n_neighbors"),
])
def test_bad_parameters_are_named(kwargs, match):
    X, _ = _background()
    with pytest.raises((ValueError, TypeError), match=match):
        background_noise(X, **kwargs)


def test_bad_points_are_named():
    X, _ = _background()
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        background_noise(X)


def _hidden_blobs():
    """Three blobs in a background of 400 noise points (a quarter): the whole data's scan finds
    no structure (the fine tier, 27 tiles)."""
    rng = np.random.default_rng(6)
    centres = np.array([[0, 0], [5, 0], [2.5, 4]])
    y = np.repeat([0, 1, 2], 400)
    return np.r_[centres[y] + rng.normal(0, 0.5, (1200, 2)), rng.uniform(-3, 8, (400, 2))], y


def test_the_fit_leaves_a_background_out_when_it_finds_no_structure(monkeypatch):
    X, y = _hidden_blobs()
    with warnings.catch_warnings():
        warnings.simplefilter("error", gc.StabilityWarning)  # clusters found: no warning
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert (model.n_clusters_, model.selection_rule_) == (3, "metastable")
    assert model.noise_.dtype == bool and model.noise_.shape == (1600,)
    assert model.noise_[1200:].mean() > 0.85 and model.noise_[:1200].mean() < 0.1
    assert NMI(y, model.labels_[:1200]) > 0.95
    # each cluster is examined by its own scan, as every metastable choice's is: kept whole
    assert [s["c"] for s in model.cluster_splits_] == [1, 1, 1] and "noise" in model.timings_
    assert "were left out as a background of noise" in model.summary()
    assert "3 without the background" in model.summary()
    assert (model.labels_at(tau=model.tau_) == model.labels_).all()
    # the premise: without the fine tier's looks the scan's own choice is a tiling
    import graphclust.cluster._density_walk as density
    import graphclust.cluster._stability_looks as looks
    monkeypatch.setattr(looks, "BACKGROUND_MAX_DIMENSION", 0.0)
    monkeypatch.setattr(density, "DENSITY_MAX_DIMENSION", 0.0)  # read by `sees_density`
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = gc.StabilityClustering(random_state=0).fit(X)
    assert plain.selection_rule_ == "fine" and not plain.noise_.any()
    assert NMI(y, plain.labels_[:1200]) < 0.6


def test_the_clusters_found_without_the_background_are_each_examined_by_their_own_scan():
    # make_blobs in the plane (8 unit Gaussians, some touching): the scan finds nothing, its
    # Gaussian fringes are taken for a background, and the scan without them finds 3 groups
    # of touching blobs. Each is a metastable choice's cluster, examined by its own scan as
    # any is; before, a background's clusters were not, and the fit stopped at c = 3
    from sklearn.datasets import make_blobs

    X, y = make_blobs(8000, centers=8, n_features=2, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.noise_.any() and model.selection_rule_ == "metastable"
    assert np.unique(model.labels_at(tau=model.tau_)).size == 3
    assert max(s["c"] for s in model.cluster_splits_) >= 2
    assert model.n_clusters_ >= 4 and NMI(y, model.labels_) > 0.7


def test_the_background_follows_the_rows():
    X, _ = _hidden_blobs()
    model = gc.StabilityClustering(random_state=0).fit(X)
    p = np.random.default_rng(1).permutation(len(X))
    moved = gc.StabilityClustering(random_state=0).fit(X[p])
    np.testing.assert_array_equal(moved.noise_, model.noise_[p])
    assert NMI(moved.labels_, model.labels_[p]) == pytest.approx(1.0)


def test_the_background_is_saved_and_older_files_have_none(tmp_path):
    from graphclust._persistence import write_model_file

    X, _ = _hidden_blobs()
    model = gc.StabilityClustering(random_state=0).fit(X)
    model.save(tmp_path / "m.npz")
    back = gc.StabilityClustering.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(back.noise_, model.noise_)
    assert (back.predict(X[:50]) == model.predict(X[:50])).all()
    arrays, meta = model._file_payload()
    del arrays["noise"]  # a file written before the background was looked for
    write_model_file(tmp_path / "old.npz", arrays, meta)
    old = gc.StabilityClustering.load(tmp_path / "old.npz")
    assert old.noise_.shape == (1600,) and not old.noise_.any()


def test_no_second_look_in_more_dimensions_or_with_structure():
    # a structure found (two moons: metastable) is kept as it is; nothing is left out
    X, y = gc.datasets.two_moons(400, random_state=0)
    model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 2 and not model.noise_.any()


def test_the_command_line_report_names_the_background(tmp_path, monkeypatch):
    import json

    from graphclust.cli import main

    monkeypatch.chdir(tmp_path)
    X, _ = _hidden_blobs()
    np.savetxt(tmp_path / "bg.csv", X, delimiter=",", header="x,y", comments="")
    assert main(["cluster", "bg.csv", "--seed", "0"]) == 0
    report = json.loads((tmp_path / "bg.report.json").read_text())
    noise = np.zeros(len(X), dtype=bool)
    noise[report["chosen"]["noise"]] = True
    assert report["chosen"]["n_clusters"] == 3 and noise[1200:].mean() > 0.85


def test_absorption_matches_the_dense_harmonic_solution():
    # reference: (D_UU - W_UU) F = W_UK Y solved densely on a random connected graph
    rng = np.random.default_rng(7)
    n = 60
    A = np.triu(rng.random((n, n)) < 0.1, 1) * rng.random((n, n))
    A[np.arange(n - 1), np.arange(1, n)] += 0.5  # a path: connected
    A = A + A.T
    known = rng.random(n) < 0.3
    known[[0, n - 1]] = True
    labels = np.where(known, rng.integers(0, 3, n), -1)
    labels[0], labels[n - 1] = 0, 2
    U, K = np.flatnonzero(~known), np.flatnonzero(known)
    D = A.sum(axis=1)
    Y = np.eye(3)[labels[K]]
    F = np.linalg.solve(np.diag(D[U]) - A[np.ix_(U, U)], A[np.ix_(U, K)] @ Y)
    np.testing.assert_allclose(F.sum(axis=1), 1.0, atol=1e-10)  # absorption probabilities
    got = absorbed_labels(sp.csr_matrix(A), labels, known)
    np.testing.assert_array_equal(got[K], labels[K])
    np.testing.assert_array_equal(got[U], F.argmax(axis=1))


def test_absorption_needs_a_known_node_in_every_component():
    W = sp.block_diag([sp.csr_matrix(np.ones((3, 3)) - np.eye(3))] * 2).tocsr()
    known = np.array([True, False, False, False, False, False])
    with pytest.raises(ValueError, match="holds no known node"):
        absorbed_labels(W, np.array([0, -1, -1, -1, -1, -1]), known)


def test_the_recipe_for_other_cases():
    # background_noise on its own: fit the rest, place the noise by predict
    X, y = _hidden_blobs()
    noise = background_noise(X, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = gc.StabilityClustering(random_state=0).fit(X[~noise])
    labels = np.empty(len(X), dtype=np.int64)
    labels[~noise], labels[noise] = model.labels_, model.predict(X[noise])
    assert noise[1200:].mean() > 0.85 and model.n_clusters_ == 3
    assert NMI(y, labels[:1200]) > 0.95


def _modes_reference(p, r, k):
    """Modes of the mixture's density of u = log z by the signs of its exact derivative,
    sum_j w_j(u) (k - l_j e^u) with posterior weights w_j, on a grid 25 times as fine."""
    u = np.linspace(np.log(k / r) - 6.0, np.log(k) + 6.0, 200001)
    a = np.log(p) + k * u - np.exp(u)
    b = np.log1p(-p) + k * np.log(r) + k * u - r * np.exp(u)
    wa = expit(a - b)
    slope = wa * (k - np.exp(u)) + (1 - wa) * (k - r * np.exp(u))
    return int(np.sum((slope[:-1] > 0) & (slope[1:] <= 0)))


@settings(max_examples=60, deadline=None)
@given(p=st.floats(0.01, 0.99), r=st.floats(1.01, 200.0), k=st.integers(3, 30))
def test_mixture_modes_against_the_derivative(p, r, k):
    # the grid count agrees with the sign changes of the exact derivative, away from the
    # boundary where a mode and a saddle merge (there either count is right)
    got, ref = mixture_modes(p, r, k), _modes_reference(p, r, k)
    assert got in (1, 2)
    if got != ref:
        near = [_modes_reference(p, r * f, k) for f in (0.995, 1.005)]
        assert got in near, (p, r, k, got, ref, near)


def test_mixture_modes_grow_with_the_separation():
    # two Gamma(10) laws of log z (standard deviation 0.32): one mode while they overlap
    assert [mixture_modes(0.3, r, 10) for r in (1.2, 1.6, 1.9, 4.0, 50.0)] == [1, 1, 1, 2, 2]
    assert mixture_modes(0.5, 1.0, 10) == 1 and mixture_modes(0.0, 5.0, 10) == 1
    assert mixture_modes(0.5, np.inf, 10) == 1  # an empty clutter component (rate 0)


def _annulus(n=1200, half_width=0.1, seed=0):
    rng = np.random.default_rng(seed)
    theta, r = rng.uniform(0, 2 * np.pi, n), 1 + rng.uniform(-half_width, half_width, n)
    return np.c_[r * np.cos(theta), r * np.sin(theta)]


def test_a_band_has_no_background():
    # a uniform annulus: its edges and sparse stretches skew the k-th distances, and the EM
    # splits that tail off (16 % of the points, rate ratio 1.8) as one mode with the rest
    X = _annulus()
    with pytest.warns(NoiseModelWarning, match="one mode"):
        noise, post, info = background_noise(X, return_posterior=True)
    assert not noise.any() and (post > 0.5).mean() > 0.1 and info["modes"] == 1
    _, dist = gc.nearest_neighbors(X, 10, method="exact")
    noise, separate = noise_to_leave_out(dist, info["dimension"])  # the fit's look takes it
    np.testing.assert_array_equal(noise, post > 0.5)
    assert not separate
    # a real background has its own mode
    X, truth = _background()
    assert background_noise(X, return_posterior=True)[2]["modes"] == 2
    _, dist = gc.nearest_neighbors(X, 10, method="exact")
    assert noise_to_leave_out(dist, 2.0)[1]


def _spiral_arm(n=2000, seed=1):
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.5, 9, n)) * 2  # denser towards the centre
    return np.c_[t * np.cos(t), t * np.sin(t)] + rng.normal(0, 0.15, (n, 2))


def test_a_background_is_told_apart_from_a_shapes_sparser_part():
    # a spiral arm whose density falls along it: the fitted mixture has two modes (rate
    # ratio 3.3), but the model would misclassify 3 % of the points; a real background 0.3 %
    X = _spiral_arm()
    with pytest.warns(NoiseModelWarning, match="misclassify"):
        noise, post, info = background_noise(X, return_posterior=True)
    assert not noise.any() and info["modes"] == 2
    assert info["bayes_error"] > BACKGROUND_MAX_ERROR
    np.testing.assert_allclose(info["bayes_error"], np.mean(np.minimum(post, 1 - post)))
    _, dist = gc.nearest_neighbors(X, 10, method="exact")
    assert not noise_to_leave_out(dist, info["dimension"])[1]
    info = background_noise(_background()[0], return_posterior=True)[2]
    assert info["bayes_error"] <= BACKGROUND_MAX_ERROR


def test_a_spiral_arm_cut_after_leaving_its_sparse_part_out_is_judged_as_a_shape():
    # the fine tier's background look leaves the arm's sparse stretches out (299 points) and
    # finds 17 pieces; before the model had to tell its points apart, they passed silently
    with pytest.warns(StabilityWarning, match="weak cluster structure"):
        model = gc.StabilityClustering(random_state=0).fit(_spiral_arm())
    assert model.noise_.sum() > 100


def _arm_in_ten_features(scatter=0.0):
    """The spiral arm turned into ten features, with `scatter` of noise in all ten."""
    from scipy.stats import special_ortho_group

    Q = special_ortho_group.rvs(10, random_state=0)[:, :2]
    X = _spiral_arm() @ Q.T
    return X + scatter * np.random.default_rng(0).normal(size=X.shape)


def test_a_shape_turned_into_more_features_is_judged_as_in_the_plane():
    # the tests of a shape read the points in coordinates of their affine hull (an isometry):
    # before, the arm turned into ten features got the plane's 25 pieces with no warning
    with pytest.warns(StabilityWarning, match="weak cluster structure"):
        turned = gc.StabilityClustering(random_state=0).fit(_arm_in_ten_features())
    with pytest.warns(StabilityWarning, match="weak cluster structure"):
        plane = gc.StabilityClustering(random_state=0).fit(_spiral_arm())
    assert NMI(turned.labels_, plane.labels_) == pytest.approx(1.0)
    np.testing.assert_array_equal(turned.noise_, plane.noise_)


def test_a_fringe_is_not_left_out_where_no_test_can_judge_the_cuts():
    # with a scatter in all ten features the hull has ten dimensions, and no test of a
    # shape reads them: the fringe's look is not taken, and the fit answers with the fine
    # tier's tiles and its warning (before: 7 pieces, 307 points left out, no warning)
    with pytest.warns(StabilityWarning, match="no walk length gives"):
        model = gc.StabilityClustering(random_state=0).fit(_arm_in_ten_features(0.01))
    assert not model.noise_.any() and model.selection_rule_ == "fine"
    # the look itself: taken in the plane (the support test judges it) and inside a
    # cluster's own looks (no points: the valley join judges every split there), not where
    # the points' hull has more than three dimensions
    from graphclust.cluster._null_model import intrinsic_dimension

    X = _spiral_arm()
    _, dist = gc.nearest_neighbors(X, 10, method="exact")
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10, method="exact"))
    model.intrinsic_dimension_ = intrinsic_dimension(dist)
    assert model._background_choice(W, dist, 0, points=X)[3].sum() > 100
    assert model._background_choice(W, dist, 0)[3].sum() > 100
    assert model._background_choice(W, dist, 0, points=_arm_in_ten_features(0.01)) is None
    assert model._shape_cuts_judged(X[:, :1], 1.0)  # a line: the dip test judges


def test_a_thin_ring_left_without_its_sparse_stretches_is_judged_as_a_shape():
    # the fine tier's background look leaves this ring's sparse stretches out (205 points)
    # and finds 5 arcs; that "background" is no second mode of the density, so the arcs are
    # compared with the support's samples, and the fit warns (it did not before). (Seed 0's
    # ring took this path until the fit ran in its kNN lists' own order: it now warns from
    # the plateau tier, without a background)
    X = _annulus(seed=1)
    with pytest.warns(StabilityWarning, match="the data's own support"):
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.noise_.sum() > 100 and model.support_agreement_ < 0.75
