"""LatentClassClustering: the EM against a reference by loops, the choice of c by BIC, the
invariances of a categorical model, predict, and bad input."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from graphclust import LatentClassClustering, LatentClassWarning
from graphclust.cluster._latent_class_em import Table, em, encode, normalised_log
from graphclust.cluster._latent_classes import latent_class_log_likelihood
from graphclust.metrics import nmi


def classes_table(n=600, features=8, profiles=((0.9,) * 4 + (0.1,) * 4,
                                               (0.1,) * 4 + (0.9,) * 4,
                                               (0.9, 0.1) * 4), seed=0):
    """Rows of binary answers drawn from latent classes with the given profiles (P(yes))."""
    rng = np.random.default_rng(seed)
    P = np.asarray(profiles)
    y = rng.integers(0, len(P), n)
    return (rng.random((n, features)) < P[y]).astype(int), y


def test_recovers_three_latent_classes_and_chooses_their_number():
    X, y = classes_table()
    m = LatentClassClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 3
    assert nmi(y, m.labels_) > 0.8
    assert min(m.bic_, key=m.bic_.get) == 3 and set(m.bic_) >= {1, 2, 3, 4}
    assert m.weights_.sum() == pytest.approx(1.0)
    assert all(p.shape == (3, 2) and np.allclose(p.sum(axis=1), 1.0) for p in m.profiles_)


def test_independent_features_are_one_class():
    rng = np.random.default_rng(1)
    for X in ((rng.random((500, 6)) < 0.5).astype(int), rng.integers(0, 4, (400, 5))):
        assert LatentClassClustering(random_state=0).fit(X).n_clusters_ == 1


def test_copies_of_rows_weigh_as_the_rows_themselves():
    # the fit reads each distinct row once, weighted by its copies: the likelihood is the
    # reference's over every row, and equal rows share a class
    X, _ = classes_table(n=150, seed=11)
    X2 = np.r_[X, X[:40]]
    b = LatentClassClustering(n_clusters=3, random_state=0).fit(X2)
    ref = latent_class_log_likelihood(X2, b.weights_, b.profiles_, b.categories_)
    assert b.log_likelihood_ == pytest.approx(ref, rel=1e-10)
    assert np.array_equal(b.labels_[:40], b.labels_[150:])


def test_log_likelihood_matches_the_reference_by_loops():
    X, _ = classes_table(n=120, seed=2)
    X[:, 0] = np.random.default_rng(3).integers(0, 3, 120)  # a feature of three values
    m = LatentClassClustering(n_clusters=3, random_state=0).fit(X)
    ref = latent_class_log_likelihood(X, m.weights_, m.profiles_, m.categories_)
    assert m.log_likelihood_ == pytest.approx(ref, rel=1e-10)


def _random_table(seed, values, rows=60, features=5, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, values, (rows, features)).astype(float)
    X[: rows // 3, 0] = 0  # a skewed feature: its baseline is not its first value by chance
    if missing:  # NaN: missing values (the first row keeps every feature observed)
        lost = rng.random(X.shape) < missing
        lost[0] = False
        X[lost] = np.nan
    codes, cats = encode(X, 16)
    sizes = np.array([len(v) for v in cats])
    counts = rng.integers(1, 4, rows).astype(float)  # rows standing for their copies
    return rng, codes, sizes, counts


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.integers(1, 4), values=st.integers(2, 5),
       missing=st.sampled_from([0.0, 0.25]))
def test_em_never_lowers_the_log_posterior(seed, c, values, missing):
    rng, codes, sizes, counts = _random_table(seed, values, missing=missing)
    start = normalised_log(rng.random((c, sizes.sum())) + 0.1, sizes)
    table = Table.from_codes(codes, sizes, counts)
    history = np.array(em(table, np.full((1, c), 1.0 / c), start[None], 200,
                             1e-12)[0]["history"])
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.integers(1, 4), values=st.integers(2, 5),
       missing=st.sampled_from([0.0, 0.25]))
def test_an_em_step_matches_the_dense_reference(seed, c, values, missing):
    # the compiled pass over the baseline-dropped indicators against the full one-hot matrix
    # (a missing value: no cell of its feature): posteriors and row log-likelihoods to 1e-12,
    # one EM step's profiles to 1e-10
    rng, codes, sizes, counts = _random_table(seed, values, missing=missing)
    weights = rng.dirichlet(np.ones(c))
    lp = normalised_log(rng.random((c, sizes.sum())) + 0.1, sizes)
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    Z = np.zeros((codes.shape[0], sizes.sum()))
    rows, feats = np.nonzero(codes >= 0)
    Z[rows, (codes + offsets)[rows, feats]] = 1.0
    joint = Z @ lp.T + np.log(weights)
    row_ll = logsumexp(joint, axis=1)
    post = np.exp(joint - row_ll[:, None])
    prior = 1.0 / np.repeat(sizes, sizes)
    ref = normalised_log((Z.T @ (post * counts[:, None])).T + prior, sizes)
    table = Table.from_codes(codes, sizes, counts)
    posterior, lls, cells, totals = table.step(weights[None], lp[None])
    np.testing.assert_allclose(posterior, post, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lls[0], row_ll, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(totals[0], (post * counts[:, None]).sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(cells[0], table.class_counts(post * counts[:, None]),
                               rtol=1e-10, atol=1e-10)
    step = em(table, weights[None], lp[None], 2, 0.0)[0]
    np.testing.assert_allclose(step["log_profiles"], ref, rtol=1e-10, atol=1e-10)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.integers(1, 4), values=st.integers(2, 5))
def test_runs_in_a_batch_are_the_runs_alone(seed, c, values):
    # the starts' short runs share the passes over the table, not their numbers: each run of
    # a batch (stopping at its own iteration) equals the same run alone, bit for bit
    rng, codes, sizes, counts = _random_table(seed, values)
    table = Table.from_codes(codes, sizes, counts)
    starts = np.stack([normalised_log(rng.random((c, sizes.sum())) + 0.1, sizes)
                       for _ in range(3)])
    weights = rng.dirichlet(np.ones(c), size=3)
    batch = em(table, weights, starts, 30, 1e-9)
    for s, run in enumerate(batch):
        alone = em(table, weights[s:s + 1], starts[s:s + 1], 30, 1e-9)[0]
        assert run["n_iter"] == alone["n_iter"] and run["history"] == alone["history"]
        for key in ("posterior", "row_log_likelihoods", "weights", "log_profiles"):
            assert np.array_equal(run[key], alone[key])


def test_the_em_pass_is_the_same_on_any_thread_count(monkeypatch):
    # fixed chunks summed in their order: bit for bit on all threads, on one, and serial
    import numba

    from graphclust.cluster import _latent_class_em

    rng, codes, sizes, counts = _random_table(3, 3, rows=20_000, features=8)
    table = Table.from_codes(codes, sizes, counts)
    lp = normalised_log(rng.random((8, sizes.sum())) + 0.1, sizes)
    weights = rng.dirichlet(np.ones(8))
    assert (table.indptr[-1] + 20_000) * 8 >= _latent_class_em._THREADED_WORK  # threaded
    full = table.step(weights[None], lp[None])
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = table.step(weights[None], lp[None])
    finally:
        numba.set_num_threads(before)
    monkeypatch.setattr(_latent_class_em, "_THREADED_WORK", np.inf)
    serial = table.step(weights[None], lp[None])
    for a, b, s in zip(full, one, serial):
        assert np.array_equal(a, b) and np.array_equal(a, s)


def test_rows_permuted_and_values_recoded_give_the_same_partition():
    X, _ = classes_table(seed=4)
    m = LatentClassClustering(random_state=0).fit(X)
    perm = np.random.default_rng(5).permutation(len(X))
    mp = LatentClassClustering(random_state=0).fit(X[perm])
    assert mp.n_clusters_ == m.n_clusters_
    assert np.array_equal(m.labels_[perm], mp.labels_)  # the same numbers too
    recoded = np.where(X == 1, -3.0, 5.0)  # categories: their numbers do not matter
    mr = LatentClassClustering(random_state=0).fit(recoded)
    assert nmi(m.labels_, mr.labels_) == pytest.approx(1.0)


def test_predict_places_the_fitted_rows_and_scores_unseen_ones():
    X, y = classes_table(seed=6)
    m = LatentClassClustering(random_state=0).fit(X)
    assert np.array_equal(m.predict(X), m.labels_)
    proba = m.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(proba.argmax(axis=1), m.labels_)
    rows = np.array([X[0], [7] + list(X[0, 1:])])  # the second holds a value never seen
    labels, score = m.predict(rows, return_outlier_score=True)
    assert labels[0] == m.labels_[0] and score[1] == 0.0 and score[0] > 0.01
    _, train_scores = m.predict(X, return_outlier_score=True)
    assert np.mean(train_scores < 0.01) <= 0.011


def test_classes_that_hold_no_row_are_warned_about():
    # 4 distinct rows of 2 independent answers: 3 classes fit their law, but the table cannot
    # tell them apart, and every row's most probable class is one of them
    X = np.random.default_rng(0).integers(0, 2, (40, 2)).astype(float)
    with pytest.warns(LatentClassWarning, match=r"2 of the latent class model's 3 classes are "
                      r"no row's most probable class: labels_ hold 1 cluster \(n_clusters=3"):
        m = LatentClassClustering(n_clusters=3, random_state=0).fit(X)
    assert m.n_clusters_ == 3 and np.unique(m.labels_).size == 1


def test_a_search_stopped_by_max_clusters_says_so():
    X, _ = classes_table(seed=6)  # three classes
    with pytest.warns(LatentClassWarning, match=r"still falling at max_clusters=2 classes"):
        m = LatentClassClustering(max_clusters=2, random_state=0).fit(X)
    assert m.n_clusters_ == 2


def test_missing_values_are_left_out_of_a_row_s_likelihood():
    X, y = classes_table(seed=2)
    X = X.astype(float)
    full = LatentClassClustering(random_state=0).fit(X)
    rng = np.random.default_rng(3)
    X[rng.random(X.shape) < 0.2] = np.nan  # a fifth of the answers missing
    m = LatentClassClustering(random_state=0).fit(X)
    assert m.n_clusters_ == full.n_clusters_ == 3
    assert nmi(y, m.labels_) > 0.7 and nmi(y, full.labels_) > 0.8
    ref = latent_class_log_likelihood(X, m.weights_, m.profiles_, m.categories_)
    assert m.log_likelihood_ == pytest.approx(ref, rel=1e-10)
    labels, score = m.predict(X, return_outlier_score=True)
    assert np.array_equal(labels, m.labels_) and (score > 0).all()  # missing is not unseen
    # a row with every answer missing is placed by the classes' weights alone
    assert m.predict(np.full((1, X.shape[1]), np.nan))[0] == m._relabel[np.argmax(m.weights_)]


def test_stability_clustering_reads_a_binary_table_with_missing_answers():
    import graphclust as gc

    X, y = classes_table(seed=2)
    X = X.astype(float)
    X[np.random.default_rng(3).random(X.shape) < 0.2] = np.nan
    m = gc.StabilityClustering(random_state=0).fit(X)
    lca = LatentClassClustering(random_state=0).fit(X)
    assert m.selection_rule_ == "latent classes" and np.array_equal(m.labels_, lca.labels_)
    assert np.array_equal(m.predict(X), m.labels_)
    # NaN stays refused where it is not a missing answer of a binary table
    three = X.copy()
    three[np.flatnonzero(~np.isnan(X[:, 0]))[:5], 0] = 2.0  # a feature of three values
    for bad, kw in [(three, {}), (X, {"binary_tables": "graph"})]:
        with pytest.raises(ValueError, match="NaN or infinite"):
            gc.StabilityClustering(**kw).fit(bad)
    graph = gc.StabilityClustering(random_state=0, binary_tables="graph").fit(np.nan_to_num(X))
    with pytest.raises(ValueError, match="NaN or infinite"):
        graph.predict(X)


def test_bad_input_is_named():
    X, _ = classes_table(n=50)
    with pytest.raises(ValueError, match="feature 2 takes 50 distinct values"):
        LatentClassClustering().fit(np.c_[X[:, :2], np.arange(50.0)])
    with pytest.raises(ValueError, match="n_clusters"):
        LatentClassClustering(n_clusters=0).fit(X)
    lost = X.astype(float)
    lost[:, 3] = np.nan
    with pytest.raises(ValueError, match="feature 3 is missing \\(NaN\\) in every row"):
        LatentClassClustering().fit(lost)
    lost[0, 3] = np.inf
    with pytest.raises(ValueError, match="X contains 1 infinite value"):
        LatentClassClustering().fit(lost)
    with pytest.raises(ValueError, match="n_clusters must be at most the 50 rows"):
        LatentClassClustering(n_clusters=51).fit(X)
    with pytest.raises(ValueError, match="max_clusters"):
        LatentClassClustering(max_clusters=0).fit(X)
    with pytest.raises(ValueError, match="tol"):
        LatentClassClustering(tol=0.0).fit(X)
    with warnings.catch_warnings():  # one value per feature: one class, converged at once
        warnings.simplefilter("error")
        assert LatentClassClustering().fit(np.where(X == 1, np.nan, 0.0)).n_clusters_ == 1
    m = LatentClassClustering(random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features; the model was fitted on 8"):
        m.predict(X[:, :3])
    with pytest.raises(AttributeError, match="not fitted"):
        LatentClassClustering().predict(X)


def test_an_em_that_stops_early_says_so_with_numbers():
    X, _ = classes_table(n=300, seed=7)
    with pytest.warns(UserWarning, match=r"did not converge in max_iter=2 iterations"):
        LatentClassClustering(n_clusters=3, max_iter=2, random_state=0).fit(X)


# ---------------------------------------------------------------- StabilityClustering's route
def test_binary_table_says_which_tables_are_binary():
    from graphclust.cluster._stability_tables import binary_table

    assert binary_table(np.array([[0, 1], [1, 1], [1, 0]]))
    assert binary_table(np.array([[-3.0, 7.0, 2.0], [5.0, 7.0, 2.0]]))  # a constant column
    assert not binary_table(np.array([[0, 1], [2, 1], [1, 0]]))  # three values
    assert not binary_table(np.ones((5, 3)))  # nothing varies
    assert not binary_table(np.array([[0], [1]]))  # one feature
    assert binary_table(sp.csr_matrix(np.array([[0, 1], [1, 0], [0, 0]])))  # presence
    assert not binary_table(sp.csr_matrix(np.array([[0, 2], [1, 0]])))  # two stored values


def test_stability_clustering_fits_a_binary_table_by_latent_classes(tmp_path):
    import graphclust as gc

    X, y = classes_table(seed=8)
    m = gc.StabilityClustering(random_state=0).fit(X.astype(float))
    assert m.selection_rule_ == "latent classes" and m.n_clusters_ == 3
    assert nmi(y, m.labels_) > 0.8 and m.tau_ is None
    assert m.latent_classes_.n_clusters_ == 3 and np.array_equal(m.latent_classes_.labels_,
                                                                 m.labels_)
    assert np.array_equal(m.labels_[m.representatives_], np.arange(3))
    assert np.array_equal(m.predict(X), m.labels_)
    assert "latent class model of this binary table" in m.summary()
    with pytest.raises(ValueError, match="latent class model"):
        m.labels_at(n_clusters=2)
    with pytest.raises(ValueError, match="latent class model"):
        m.predict(X, tau=4)
    m.save(tmp_path / "m.npz")
    back = gc.StabilityClustering.load(tmp_path / "m.npz")
    assert back.selection_rule_ == "latent classes"
    assert np.array_equal(back.predict(X, return_outlier_score=True)[1],
                          m.predict(X, return_outlier_score=True)[1])
    graph = gc.StabilityClustering(binary_tables="graph", random_state=0).fit(X)
    assert graph.latent_classes_ is None and graph.selection_rule_ != "latent classes"
    with pytest.raises(ValueError, match="binary_tables"):
        gc.StabilityClustering(binary_tables="lca").fit(X)


def test_independent_binary_answers_are_one_cluster_with_a_warning():
    import graphclust as gc

    X = (np.random.default_rng(9).random((300, 6)) < 0.5).astype(float)
    with pytest.warns(gc.StabilityWarning, match="smallest BIC at one class"):
        m = gc.StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 1


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_a_binary_tables_fit_is_the_same_for_any_row_order(seed):
    import graphclust as gc

    X, _ = classes_table(n=200, seed=seed)
    perm = np.random.default_rng(seed).permutation(len(X))
    a = gc.StabilityClustering(random_state=0).fit(X)
    b = gc.StabilityClustering(random_state=0).fit(X[perm])
    assert np.array_equal(a.labels_[perm], b.labels_)


def test_a_latent_class_model_file_round_trips_and_refuses_damage(tmp_path):
    X, _ = classes_table(seed=10)
    m = LatentClassClustering(random_state=0).fit(X)
    m.save(tmp_path / "lca.npz")
    back = LatentClassClustering.load(tmp_path / "lca.npz")
    assert np.array_equal(back.predict(X), m.predict(X)) and back.bic_ == m.bic_
    data = dict(np.load(tmp_path / "lca.npz"))
    data["relabel"] = np.zeros_like(data["relabel"])
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match="damaged"):
        LatentClassClustering.load(tmp_path / "bad.npz")


def test_dask_predict_reads_a_latent_class_model_file(tmp_path):
    da = pytest.importorskip("dask.array")
    from graphclust.dask import predict

    X, _ = classes_table(seed=12)
    m = LatentClassClustering(random_state=0).fit(X)
    m.save(tmp_path / "lca.npz")
    labels = predict(str(tmp_path / "lca.npz"), da.from_array(X.astype(float), chunks=100))
    assert np.array_equal(labels.compute(), m.predict(X))
    # NaN is a missing value for this model (its scikit-learn tags), inf is refused by chunk
    lost = X.astype(float)
    lost[::7, 2] = np.nan
    labels = predict(str(tmp_path / "lca.npz"), da.from_array(lost, chunks=100))
    assert np.array_equal(labels.compute(), m.predict(lost))
    lost[250, 1] = np.inf
    with pytest.raises(ValueError, match=r"X chunk 2 .*row 250.* 1 infinite value"):
        predict(str(tmp_path / "lca.npz"), da.from_array(lost, chunks=100)).compute()


def test_a_sparse_presence_table_gives_the_dense_tables_fit():
    import graphclust as gc

    X, y = classes_table(seed=13)
    X[:, 5] = 1  # a feature present in every row: one value
    dense = LatentClassClustering(random_state=0).fit(X)
    sparse = LatentClassClustering(random_state=0).fit(sp.csr_matrix(X))
    assert sparse.n_clusters_ == dense.n_clusters_ == 3
    assert nmi(dense.labels_, sparse.labels_) == pytest.approx(1.0)
    assert sparse.log_likelihood_ == pytest.approx(dense.log_likelihood_, rel=1e-8)
    assert [c.tolist() for c in sparse.categories_] == [c.tolist() for c in dense.categories_]
    assert np.array_equal(sparse.predict(sp.csr_matrix(X)), sparse.labels_)
    routed = gc.StabilityClustering(random_state=0).fit(sp.csr_matrix(X))
    assert routed.selection_rule_ == "latent classes" and routed.n_clusters_ == 3
    two = np.where(X == 1, 2.0, 0.0)
    two[0, 0] = 1.0
    with pytest.raises(ValueError, match=r"stored values must be one number; got 2 \(1, 2\)"):
        LatentClassClustering().fit(sp.csr_matrix(two))
