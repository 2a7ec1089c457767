"""Clustering of count data (bag of words) by a mixture of multinomials, c by BIC.

Why a model of its own. A document is a vector of word counts; a kNN graph of them (cosine)
reads only which documents share words, and on 20 newsgroups' 1 000-word counts the graph
fits, ours and the peers', land at NMI 0.36-0.39 with 21-41 clusters (docs/model_selection.md,
*Built: a mixture of multinomials for word counts*). The question such counts ask is the
mixture of multinomials' (Nigam, McCallum, Thrun & Mitchell 2000; the "mixture of unigrams"):
c classes (topics), each with its own probability of every word, a document's words drawn
independently from its class. It is fitted by EM (Dempster, Laird & Rubin 1977) from several
starts, each class's word probabilities given a Dirichlet pseudo-count of 1 / (words) so that
none is 0 (the MAP estimate; the iterates never lower the log posterior), the short runs of
Biernacki, Celeux & Govaert (2003) as in `LatentClassClustering`, and the number of classes of
smallest BIC, -2 log L + ((c - 1) + c (words - 1)) log n, tried from 1 up until it has not fallen
for `BIC_PATIENCE` classes in a row.

The counts may be a sparse or a dense matrix of non-negative numbers (fractional counts are
read as weights); words that no document uses are left out of the model. The E step is one
sparse product (``X @ log_theta.T``) and the M step another (``X.T @ posterior``): each
iteration costs O(nnz(X) c).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from .._persistence import file_array, file_value, jsonable
from .._validation import check_points, check_random_state
from ._latent_class_em import SHORT_RUN
from ._mixture_base import MixtureClustering

__all__ = ["MODEL_FORMAT", "MultinomialMixtureClustering", "MultinomialMixtureWarning",
           "multinomial_from_arrays", "multinomial_mixture_log_likelihood",
           "multinomial_payload"]

MODEL_FORMAT = "graphclust.MultinomialMixtureClustering"
MODEL_FORMAT_VERSION = 1


class MultinomialMixtureWarning(UserWarning):
    """A fit of the mixture of multinomials that stopped short: EM before `tol`, the BIC search
    at `max_clusters`, or classes that are no document's most probable class."""


class MultinomialMixtureClustering(MixtureClustering):
    """Mixture of multinomials of count data (documents x words), fitted by EM, c by BIC.

    Parameters
    ----------
    n_clusters : "auto" or int >= 1, default "auto"
        Classes; "auto" takes the number of smallest BIC, trying 1, 2, ... up to
        `max_clusters` or until it has not fallen for `BIC_PATIENCE` numbers in a row.
    max_clusters : int >= 1, default 30
        The largest number of classes tried by "auto"; a BIC still falling there is reported
        with a `MultinomialMixtureWarning`.
    n_init : int >= 1, default 8
        EM starts per number of classes; the one of largest log posterior after `SHORT_RUN`
        iterations runs to convergence.
    max_iter : int >= 1, default 1000
        EM iterations of that run at most.
    tol : float > 0, default 1e-8
        EM stops when the log posterior rises by less than tol of its size.
    random_state : None, int or numpy Generator
        Seeds the starts.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        Each document's class of largest posterior probability, classes numbered by first
        appearance.
    n_clusters_ : int
        The model's classes.
    bic_ : dict
        BIC of every number of classes tried.
    log_likelihood_ : float
        Log-likelihood of the counts under the chosen model (without the multinomial
        coefficients, which no parameter changes).
    weights_ : ndarray of shape (n_clusters_,)
        The classes' shares, in the numbering of labels_.
    word_probabilities_ : ndarray of shape (n_clusters_, n_features_in_)
        Each class's probability of each word (0 for words no document uses).
    representatives_ : ndarray of shape (n_clusters_,)
        Each class's document of largest posterior probability (the first of equal ones).
    n_iter_ : int
        EM iterations of the chosen start.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.metrics import nmi
    >>> rng = np.random.default_rng(0)
    >>> topics = rng.dirichlet(np.full(50, 0.1), size=3)   # 3 topics over 50 words
    >>> y = rng.integers(0, 3, 300)
    >>> X = np.array([rng.multinomial(40, topics[k]) for k in y])
    >>> model = MultinomialMixtureClustering(random_state=0).fit(X)
    >>> model.n_clusters_, round(nmi(y, model.labels_), 2)
    (3, 1.0)
    """

    def __init__(self, n_clusters="auto", *, max_clusters=30, n_init=8, max_iter=1000, tol=1e-8,
                 random_state=None):
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    MODEL_FORMAT, MODEL_FORMAT_VERSION = MODEL_FORMAT, MODEL_FORMAT_VERSION
    _model, _data, _row = "mixture of multinomials", "the counts", "document"
    _warning = MultinomialMixtureWarning

    def fit(self, X, y=None):
        """Fit the model to the counts X (n_samples, n_features), sparse or dense."""
        self._check_mixture_params()
        X = _check_counts(X)
        n = X.shape[0]
        self._classes_to_try(n)  # a given n_clusters above n refused before any work
        self.n_features_in_ = X.shape[1]
        used = np.asarray(X.sum(axis=0)).ravel() > 0
        if not used.any():
            raise ValueError("X holds no count above 0: there are no words to model.")
        self._used = used
        Xu = X[:, used]
        rng = check_random_state(self.random_state)
        V = int(used.sum())
        self.bic_, best = self._choose_by_bic(
            lambda c: _best_start(Xu, c, self.n_init if c > 1 else 1, self.max_iter, self.tol,
                                  rng),
            lambda c: (c - 1) + c * (V - 1), n)
        posterior = best["posterior"]
        labels, relabel = self._numbering(posterior.argmax(axis=1), best["c"])
        order = np.argsort(relabel)  # model classes in the numbering of labels_
        self.labels_, self.n_clusters_ = labels, best["c"]
        self.weights_ = best["weights"][order]
        self._log_theta = best["log_theta"][order]
        self.word_probabilities_ = np.zeros((self.n_clusters_, self.n_features_in_))
        self.word_probabilities_[:, used] = np.exp(self._log_theta)
        self.log_likelihood_, self.n_iter_ = best["log_likelihood"], best["n_iter"]
        self.representatives_ = posterior[:, order].argmax(axis=0)
        self._train_rates = np.sort(_per_word(best["row_log_likelihoods"], Xu))
        return self

    def _file_payload(self):
        return multinomial_payload(self)

    @classmethod
    def _from_file(cls, model, data, meta, path):
        return multinomial_from_arrays(model, data, meta, path)

    def predict_proba(self, X):
        """(n, n_clusters_) posterior probabilities of the classes for the documents of X
        (words no training document used are left out)."""
        log_joint = self._log_joint(X)[0]
        return np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))

    def predict(self, X, return_outlier_score=False):
        """The class of largest posterior probability of each document of X.

        With ``return_outlier_score``, also each document's outlier score: the empirical
        p-value of its log-likelihood per word among the training documents' own (a long and
        a short document of the same topic score alike). Below 0.01 a document is one the
        model rarely draws; a document holding a word no training document used scores 0.
        """
        log_joint, unseen, Xu = self._log_joint(X)
        labels = log_joint.argmax(axis=1)
        if not return_outlier_score:
            return labels
        rate = _per_word(logsumexp(log_joint, axis=1), Xu)
        score = np.searchsorted(self._train_rates, rate, side="right") / self._train_rates.size
        score[unseen] = 0.0
        return labels, score

    def _log_joint(self, X):
        if not hasattr(self, "_log_theta"):
            raise AttributeError("this MultinomialMixtureClustering is not fitted; call fit "
                                 "first.")
        X = _check_counts(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features; the model was fitted on "
                             f"{self.n_features_in_}.")
        unseen = np.asarray(X[:, ~self._used].sum(axis=1)).ravel() > 0
        Xu = X[:, self._used]
        return np.asarray(Xu @ self._log_theta.T) + np.log(self.weights_), unseen, Xu


def multinomial_payload(model, prefix=""):
    """``(arrays, meta)`` of a fitted model's file; `prefix` names its fields inside another
    model's file (`StabilityClustering` of word counts)."""
    if not hasattr(model, "_log_theta"):
        raise AttributeError("this MultinomialMixtureClustering is not fitted; call fit first.")
    arrays = {"labels": model.labels_, "weights": model.weights_, "log_theta": model._log_theta,
              "used_words": model._used, "training_rates": model._train_rates,
              "representatives": model.representatives_,
              "bic_n_clusters": np.array(list(model.bic_), dtype=np.int64),
              "bic": np.array(list(model.bic_.values()))}
    meta = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
            "params": jsonable(model.get_params()), "n_clusters": int(model.n_clusters_),
            "log_likelihood": float(model.log_likelihood_), "n_iter": int(model.n_iter_)}
    return {prefix + k: v for k, v in arrays.items()}, meta


def multinomial_from_arrays(model, data, meta, path, prefix=""):
    """`model` (unfitted, its parameters set) with the fitted state of `multinomial_payload`'s
    ``(arrays, meta)``; `path` names the file in errors."""
    def get(name, **kw):
        return file_array(data, prefix + name, path, **kw)

    c = file_value(meta, "n_clusters", path, kind="int", low=1)
    model._used = get("used_words", kind="bool", ndim=1)
    V = int(model._used.sum())
    model.labels_ = get("labels", kind="int", ndim=1)
    model.weights_ = get("weights", shape=(c,))
    model._log_theta = get("log_theta", shape=(c, V))
    model._train_rates = get("training_rates", shape=(model.labels_.size,))
    model.representatives_ = get("representatives", kind="int", shape=(c,))
    if V < 1 or (model.labels_.size and not 0 <= model.labels_.min()
                 <= model.labels_.max() < c) or not (
            0 <= model.representatives_.min() <= model.representatives_.max()
            < model.labels_.size):
        raise ValueError(f"{path} is damaged: its words, labels or representatives do not "
                         f"fit {c} classes of {model.labels_.size} documents.")
    model.n_clusters_, model.n_features_in_ = c, model._used.size
    model.word_probabilities_ = np.zeros((c, model._used.size))
    model.word_probabilities_[:, model._used] = np.exp(model._log_theta)
    model.bic_ = dict(zip(get("bic_n_clusters", kind="int", ndim=1).tolist(),
                          get("bic", ndim=1).tolist()))
    model.log_likelihood_ = file_value(meta, "log_likelihood", path)
    model.n_iter_ = file_value(meta, "n_iter", path, kind="int", low=0)
    return model


def multinomial_mixture_log_likelihood(X, weights, word_probabilities):
    """Log-likelihood of the counts X (dense) under a mixture of multinomials, without the
    multinomial coefficients (a reference by loops over documents and classes, for tests)."""
    total = 0.0
    for row in np.asarray(X, dtype=np.float64):
        terms = []
        for w, theta in zip(weights, word_probabilities):
            present = row > 0
            terms.append(np.log(w) + float(row[present] @ np.log(theta[present])))
        total += logsumexp(terms)
    return total


def _check_counts(X):
    X = check_points(X, min_samples=1, accept_sparse=True)
    values = X.data if sp.issparse(X) else X
    if values.size and values.min() < 0:
        raise ValueError(f"X holds counts: they must be >= 0; got {int((values < 0).sum())} "
                         f"negative value(s) (smallest {values.min():g}).")
    return sp.csr_matrix(X) if sp.issparse(X) else X


def _per_word(row_ll, X):
    length = np.asarray(X.sum(axis=1)).ravel()
    return row_ll / np.maximum(length, 1e-300) * (length > 0)


def _best_start(X, c, n_init, max_iter, tol, rng):
    """The EM run of c classes from the best of `n_init` starts (word probabilities drawn
    around the words' overall frequencies), each `SHORT_RUN` iterations, the best then run to
    convergence."""
    V = X.shape[1]
    shares = np.asarray(X.sum(axis=0)).ravel() + 1.0 / V
    shares /= shares.sum()
    XT = sp.csr_matrix(X.T) if sp.issparse(X) else np.ascontiguousarray(X.T)
    best = None
    for _ in range(n_init):
        start = rng.gamma(2.0 * V * shares, size=(c, V)) + 1e-12
        run = _em(X, XT, np.full(c, 1.0 / c), np.log(start / start.sum(axis=1, keepdims=True)),
                  min(SHORT_RUN, max_iter), tol)
        if best is None or run["log_posterior"] > best["log_posterior"]:
            best = run
    if not best["converged"] and max_iter > SHORT_RUN:
        n_short = best["n_iter"]
        best = _em(X, XT, best["weights"], best["log_theta"], max_iter - SHORT_RUN, tol)
        best["n_iter"] += n_short
    return best


def _em(X, XT, weights, log_theta, max_iter, tol):
    """EM from the given weights and log word probabilities: MAP estimates with a Dirichlet
    pseudo-count of 1 / (words) per word and class."""
    n, V = X.shape
    prior = 1.0 / V
    last, change, converged = None, np.inf, False
    for it in range(1, max_iter + 1):
        joint = np.asarray(X @ log_theta.T)
        joint += np.log(weights)
        # the posteriors and each row's log-likelihood from one exp of the shifted joint (in
        # place: scipy's logsumexp and a second exp took three quarters of an iteration)
        top = joint.max(axis=1)
        joint -= top[:, None]
        posterior = np.exp(joint, out=joint)
        total = posterior.sum(axis=1)
        row_ll = top + np.log(total)
        posterior /= total[:, None]
        log_post = row_ll.sum() + prior * log_theta.sum()
        if last is not None:
            change = (log_post - last) / max(abs(log_post), np.finfo(float).tiny)
        last = log_post
        if change < tol or it == max_iter:
            converged = change < tol
            break
        counts = np.asarray(XT @ posterior).T + prior
        log_theta = np.log(counts) - np.log(counts.sum(axis=1, keepdims=True))
        weights = np.maximum(posterior.sum(axis=0) / n, 1e-300)
    return {"log_likelihood": float(row_ll.sum()), "log_posterior": float(log_post),
            "row_log_likelihoods": row_ll, "posterior": posterior, "weights": weights,
            "log_theta": log_theta, "n_iter": it, "converged": converged, "change": change}
