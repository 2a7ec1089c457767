"""MultinomialMixtureClustering: recovery and c by BIC, the EM against references by loops,
sparse = dense, predict and its outlier score, and bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from graphclust import MultinomialMixtureClustering, MultinomialMixtureWarning
from graphclust.cluster._multinomial_mixture import _em, multinomial_mixture_log_likelihood
from graphclust.metrics import nmi


def topics_table(n=400, words=60, topics=3, length=30, seed=0):
    """Documents of `length` words drawn from `topics` sparse topics (Dirichlet 0.1)."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(words, 0.1), size=topics)
    y = rng.integers(0, topics, n)
    lengths = rng.poisson(length, n) + 1
    return np.array([rng.multinomial(m, theta[k]) for m, k in zip(lengths, y)]), y


def test_recovers_the_topics_and_chooses_their_number():
    X, y = topics_table(topics=4, seed=1)
    m = MultinomialMixtureClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 4 and nmi(y, m.labels_) > 0.95
    assert min(m.bic_, key=m.bic_.get) == 4 and max(m.bic_) == 4 + 3  # patience 3
    assert np.allclose(m.word_probabilities_.sum(axis=1), 1.0)
    assert np.isclose(m.weights_.sum(), 1.0)
    # each class's representative is a document of that class
    assert np.array_equal(m.labels_[m.representatives_], np.arange(4))


def test_one_topic_gives_one_class():
    rng = np.random.default_rng(2)
    X = rng.multinomial(30, rng.dirichlet(np.ones(40)), size=300)
    assert MultinomialMixtureClustering(random_state=0).fit(X).n_clusters_ == 1


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), c=st.integers(1, 4))
def test_an_em_step_matches_a_reference_by_loops(seed, c):
    # one step from given parameters: the log-likelihood against the loops (1e-10), the new
    # word probabilities against the posteriors' weighted counts (1e-10), and the log posterior
    # never falling over 30 steps
    rng = np.random.default_rng(seed)
    X = rng.poisson(rng.random((25, 12)) * 3).astype(float)
    X[0] += 1  # no empty document needed, and every word used
    weights = rng.dirichlet(np.ones(c))
    theta = rng.dirichlet(np.ones(12), size=c)
    step = _em(X, X.T.copy(), weights, np.log(theta), 1, 0.0)
    ref = multinomial_mixture_log_likelihood(X, weights, theta)
    assert step["log_likelihood"] == pytest.approx(ref, rel=1e-10)
    joint = X @ np.log(theta).T + np.log(weights)
    post = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
    counts = (X.T @ post).T + 1.0 / 12
    two = _em(X, X.T.copy(), weights, np.log(theta), 2, 0.0)
    np.testing.assert_allclose(np.exp(two["log_theta"]), counts / counts.sum(1, keepdims=True),
                               rtol=1e-10)
    np.testing.assert_allclose(two["weights"], post.mean(axis=0), rtol=1e-10)
    history = [_em(X, X.T.copy(), weights, np.log(theta), k, 0.0)["log_posterior"]
               for k in range(1, 31, 5)]
    assert np.all(np.diff(history) >= -1e-9 * np.abs(history[1:]))


def test_sparse_and_dense_counts_give_the_same_fit():
    X, _ = topics_table(seed=3)
    X[:, 7] = 0  # a word no document uses: left out, probability 0
    dense = MultinomialMixtureClustering(random_state=0).fit(X)
    sparse = MultinomialMixtureClustering(random_state=0).fit(sp.csr_matrix(X))
    assert sparse.n_clusters_ == dense.n_clusters_
    assert np.array_equal(sparse.labels_, dense.labels_)
    assert sparse.log_likelihood_ == pytest.approx(dense.log_likelihood_, rel=1e-10)
    assert (dense.word_probabilities_[:, 7] == 0).all()


def test_predict_places_the_fitted_documents_and_scores_unseen_words():
    X, _ = topics_table(seed=4)
    X[:, 5] = 0
    m = MultinomialMixtureClustering(random_state=0).fit(X)
    assert np.array_equal(m.predict(X), m.labels_)
    proba = m.predict_proba(X)
    assert np.allclose(proba.sum(axis=1), 1.0)
    labels, score = m.predict(X, return_outlier_score=True)
    assert np.mean(score < 0.01) <= 0.011
    odd = X[:2].copy()
    odd[1, 5] = 3  # a word no training document used
    _, score = m.predict(odd, return_outlier_score=True)
    assert score[0] > 0 and score[1] == 0.0
    # a document drawn uniformly over the words fits no topic: a low score
    uniform = np.full((1, X.shape[1]), 2.0)
    uniform[0, 5] = 0
    assert m.predict(uniform, return_outlier_score=True)[1][0] < 0.01


def test_warnings_name_what_stopped_short():
    X, _ = topics_table(topics=4, seed=1)
    with pytest.warns(MultinomialMixtureWarning, match="still falling at max_clusters=2"):
        MultinomialMixtureClustering(max_clusters=2, random_state=0).fit(X)
    with pytest.warns(MultinomialMixtureWarning, match="did not converge in max_iter=3"):
        MultinomialMixtureClustering(n_clusters=4, max_iter=3, random_state=0).fit(X)


def test_bad_input_is_named():
    X, _ = topics_table(n=50)
    with pytest.raises(ValueError, match="must be >= 0; got 1 negative"):
        MultinomialMixtureClustering().fit(np.where(np.arange(X.size).reshape(X.shape) == 7,
                                                    -1, X))
    with pytest.raises(ValueError, match="NaN"):
        MultinomialMixtureClustering().fit(np.where(X > 5, np.nan, X))
    with pytest.raises(ValueError, match="no count above 0"):
        MultinomialMixtureClustering().fit(np.zeros((5, 3)))
    with pytest.raises(ValueError, match="n_clusters must be at most the 50 rows"):
        MultinomialMixtureClustering(n_clusters=51).fit(X)
    with pytest.raises(ValueError, match="max_clusters"):
        MultinomialMixtureClustering(max_clusters=0).fit(X)
    m = MultinomialMixtureClustering(random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features; the model was fitted on 60"):
        m.predict(X[:, :3])
    with pytest.raises(AttributeError, match="not fitted"):
        MultinomialMixtureClustering().predict(X)


def test_model_files_and_dask_predict(tmp_path):
    X, _ = topics_table(seed=5)
    X[:, 3] = 0
    m = MultinomialMixtureClustering(random_state=0).fit(sp.csr_matrix(X))
    m.save(tmp_path / "mm.npz")
    back = MultinomialMixtureClustering.load(tmp_path / "mm.npz")
    assert back.n_clusters_ == m.n_clusters_ and back.bic_ == m.bic_
    np.testing.assert_array_equal(back.word_probabilities_, m.word_probabilities_)
    for a, b in zip(back.predict(X, return_outlier_score=True),
                    m.predict(X, return_outlier_score=True)):
        np.testing.assert_array_equal(a, b)
    data = dict(np.load(tmp_path / "mm.npz"))
    data["labels"] = data["labels"] + 50
    np.savez(tmp_path / "bad.npz", **data)
    with pytest.raises(ValueError, match="is damaged"):
        MultinomialMixtureClustering.load(tmp_path / "bad.npz")
    da = pytest.importorskip("dask.array")
    from graphclust.dask import predict

    labels = predict(str(tmp_path / "mm.npz"), da.from_array(X.astype(float), chunks=100))
    np.testing.assert_array_equal(labels.compute(), m.predict(X))


def test_stability_clustering_fits_sparse_counts_by_the_mixture(tmp_path):
    import graphclust as gc

    X, y = topics_table(topics=3, seed=6)
    S = sp.csr_matrix(X)
    m = gc.StabilityClustering(random_state=0, metric="cosine").fit(S)
    alone = MultinomialMixtureClustering(random_state=0).fit(S)
    assert m.selection_rule_ == "latent classes" and m.n_clusters_ == 3
    assert isinstance(m.latent_classes_, MultinomialMixtureClustering)
    assert np.array_equal(m.labels_, alone.labels_) and nmi(y, m.labels_) > 0.95
    assert "mixture of multinomials" in m.summary()
    labels, score = m.predict(S[:20], return_outlier_score=True)
    assert np.array_equal(labels, m.labels_[:20])
    with pytest.raises(ValueError, match="count_tables='graph'"):
        m.labels_at(tau=8.0)
    m.save(tmp_path / "s.npz")
    back = gc.StabilityClustering.load(tmp_path / "s.npz")
    assert isinstance(back.latent_classes_, MultinomialMixtureClustering)
    np.testing.assert_array_equal(back.predict(S), m.predict(S))
    # by name, the graph; presence / absence (one stored value) goes to the latent class model
    graph = gc.StabilityClustering(random_state=0, metric="cosine", count_tables="graph").fit(S)
    assert graph.selection_rule_ != "latent classes" and graph.latent_classes_ is None
    presence = S.copy()
    presence.data[:] = 1.0
    lca = gc.StabilityClustering(random_state=0, metric="cosine").fit(presence)
    assert isinstance(lca.latent_classes_, gc.LatentClassClustering)
    with pytest.raises(ValueError, match="count_tables"):
        gc.StabilityClustering(count_tables="topics").fit(S)


def test_counts_of_one_topic_are_reported_as_no_structure():
    import graphclust as gc

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.multinomial(40, rng.dirichlet(np.full(200, 0.5)), size=800))
    with pytest.warns(gc.StabilityWarning, match="mixture of multinomials of these counts has "
                      "its smallest BIC at one class"):
        m = gc.StabilityClustering(random_state=0).fit(X)
    assert m.n_clusters_ == 1 and m.selection_rule_ == "latent classes"
