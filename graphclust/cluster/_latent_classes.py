"""Latent class clustering of a table of codes: a mixture of independent categorical features.

Why a model of its own. A table of binary answers (or a few categories per feature) is a
lattice: Hamming distances take a handful of values, ties decide every kNN list and rows
repeat, so a proximity graph sees little of it. On 20 newsgroups' binary 100-word table (16 242
documents, 4 groups) the kNN-graph methods all land at NMI 0.20-0.24 with 39-71 clusters
(docs/model_selection.md, *Built: a latent class model for tables of binary codes*). The
question such a table asks is the latent class model's (Lazarsfeld & Henry 1968; Goodman 1974):
c classes, each with its own probability of every value of every feature, the features
independent within a class (local independence, `_feature_independence`). It is fitted by
expectation-maximisation (Dempster, Laird & Rubin 1977), from several starts, each cell of a
class's profile given a Dirichlet pseudo-count of 1 / (the feature's values) so that no
probability is 0 (the MAP estimate; the EM iterates never lower the log posterior). The number
of classes is the one of smallest BIC, -2 log L + (free parameters) log n (Schwarz 1978; the
usual choice for latent class models, Nylund, Asparouhov & Muthen 2007), tried from 1 up until
it has not fallen for `BIC_PATIENCE` classes in a row. Independent features give c = 1.

A sparse matrix is a table of presence / absence (its stored values one number v, absence 0;
a bag of words), read without making it dense. The values of each feature are categories:
unordered, any numbers. Recoding a feature's values (0 / 1 as -3 / 5) changes nothing. A NaN
in a dense table is a missing value: it is left out of its row's likelihood (the model's
full-information likelihood, missing at random), so a row with unanswered questions is
classed by the ones it answered, and predict reads it the same way. Ordered values with many
levels are measurements more than codes, and a categorical model spends c (levels - 1)
parameters per feature on them (letters' 16 levels: NMI 0.34 here against 0.63 for
`StabilityClustering`).

The fit reads each distinct row once, weighted by its copies (the same likelihood: binary
answers to 6 questions are at most 64 rows, 20 newsgroups' 16 242 documents 10 267), in the
order of their codes, and its starts draw class profiles around each feature's marginal
frequencies, not responsibilities per row: the fit does not depend on the order of the rows.
The EM itself (the indicator matrix, compiled passes, starts in a batch) is
`_latent_class_em`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from .._persistence import file_array, file_value, jsonable
from .._validation import check_int, check_points, check_random_state
from ..threads import one_blas_thread
from ._feature_independence import FEW_VALUES
from ._latent_class_em import BIC_PATIENCE, SHORT_RUN, Table, best_start, encode, presence_table
from ._mixture_base import MixtureClustering

__all__ = ["BIC_PATIENCE", "SHORT_RUN", "LatentClassClustering", "LatentClassWarning",
           "latent_class_from_arrays", "latent_class_log_likelihood", "latent_class_payload"]

MODEL_FORMAT = "graphclust.LatentClassClustering"
MODEL_FORMAT_VERSION = 1

# predict makes a sparse table's rows dense in blocks of at most this many cells
_DENSE_CELLS = 20_000_000


class LatentClassWarning(UserWarning):
    """An EM run of the latent class model stopped before it converged."""


class LatentClassClustering(MixtureClustering):
    """Latent class model of a table of codes, fitted by EM, its number of classes by BIC.

    Each feature's distinct values are categories; within a class the features are
    independent, each with the class's own probabilities of its values (module docstring).

    Parameters
    ----------
    n_clusters : "auto" or int >= 1, default "auto"
        Classes; "auto" takes the number of smallest BIC, trying 1, 2, ... up to
        `max_clusters` or until it has not fallen for `BIC_PATIENCE` numbers in a row.
    max_clusters : int >= 1, default 30
        The largest number of classes tried by "auto"; a BIC still falling there is
        reported with a `LatentClassWarning`.
    max_values : int >= 2, default 16
        The most distinct values a feature may take (a feature with more is a measurement:
        use `StabilityClustering`).
    n_init : int >= 1, default 8
        EM starts per number of classes; the one of largest log posterior is kept.
    max_iter : int >= 1, default 1000
        EM iterations per start.
    tol : float > 0, default 1e-8
        A start has converged when one iteration raises its log posterior by less than
        ``tol`` times its magnitude.
    random_state : None, int or numpy Generator
        Seeds the starts.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,)
        The class of largest posterior probability of each row, classes numbered by first
        appearance among the distinct rows in sorted order (the same for any row order).
    n_clusters_ : int
        The model's classes. A class that is no row's most probable class (the table cannot
        tell that many apart) holds no label, and the fit says so with a
        `LatentClassWarning`; labels_ then hold fewer clusters.
    bic_ : dict
        BIC of every number of classes tried.
    log_likelihood_ : float
        Log-likelihood of the data under the chosen model.
    weights_ : ndarray of shape (n_clusters_,)
        The classes' shares.
    categories_ : list of ndarray
        Each feature's values, in sorted order.
    profiles_ : list of ndarray
        Per feature, the (n_clusters_, values) probabilities of its values in each class.
    representatives_ : ndarray of shape (n_clusters_,)
        Each class's row of largest posterior probability (the first of equal rows).
    n_iter_ : int
        EM iterations of the chosen start.
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.metrics import nmi
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, 400)  # two classes answering 8 questions yes with 0.9 or 0.1
    >>> X = (rng.random((400, 8)) < np.where(y[:, None] == 1, 0.9, 0.1)).astype(int)
    >>> model = LatentClassClustering(random_state=0).fit(X)
    >>> model.n_clusters_, round(nmi(y, model.labels_), 2)
    (2, 0.98)
    >>> model.predict(np.array([[1] * 8, [0] * 8])).tolist() == [
    ...     model.predict(X[y == 1][:1])[0], model.predict(X[y == 0][:1])[0]]
    True
    """

    def __init__(self, n_clusters="auto", *, max_clusters=30, max_values=FEW_VALUES, n_init=8,
                 max_iter=1000, tol=1e-8, random_state=None):
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters
        self.max_values = max_values
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    MODEL_FORMAT, MODEL_FORMAT_VERSION = MODEL_FORMAT, MODEL_FORMAT_VERSION
    _model, _data, _row = "latent class model", "the table", "row"
    _warning = LatentClassWarning

    def _check_params(self):
        self._check_mixture_params()
        check_int(self.max_values, "max_values", low=2)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # a missing value (graphclust.dask.predict reads it)
        tags.input_tags.sparse = True
        return tags

    def fit(self, X, y=None):
        """Fit the model to the table X (n_samples, n_features) of codes, NaN a missing
        value (a sparse X: presence / absence)."""
        self._check_params()
        # NaN marks a missing value of a dense table (a sparse one is presence / absence)
        X = check_points(X, min_samples=1, accept_sparse=True, allow_nan=not sp.issparse(X))
        n = X.shape[0]
        self._classes_to_try(n)  # a given n_clusters above n refused before any work
        # one row of the fit per distinct row, weighted by its copies (the same likelihood),
        # in the order of the codes: the fit does not depend on the order the rows came in
        if sp.issparse(X):  # presence / absence, as text's words
            table, inverse, self.categories_ = presence_table(X)
        else:
            codes, self.categories_ = encode(X, self.max_values)
            distinct, inverse, counts = np.unique(codes, axis=0, return_inverse=True,
                                                  return_counts=True)
            table = Table.from_codes(distinct, np.array([len(c) for c in self.categories_]),
                                     counts.astype(np.float64))
            inverse = inverse.ravel()
        self.n_features_in_ = X.shape[1]
        sizes = table.sizes
        rng = check_random_state(self.random_state)
        # EM's compiled passes over the threads alternate with small BLAS calls: a second
        # BLAS thread still spinning after each made the passes 40 times slower (threads)
        with one_blas_thread():
            self.bic_, best = self._choose_by_bic(
                lambda c: best_start(table, c, self.n_init if c > 1 else 1, self.max_iter,
                                     self.tol, rng),
                lambda c: (c - 1) + c * int((sizes - 1).sum()), n)
        self.n_clusters_, self.weights_ = best["c"], best["weights"]
        self.log_likelihood_, self.n_iter_ = best["log_likelihood"], best["n_iter"]
        self._log_profiles = best["log_profiles"]
        offsets = np.r_[0, np.cumsum(sizes)]
        self.profiles_ = [np.exp(self._log_profiles[:, a:b])
                          for a, b in zip(offsets[:-1], offsets[1:])]
        self._train_ll = np.sort(best["row_log_likelihoods"][inverse])  # of the final E step
        labels, self._relabel = self._numbering(best["posterior"].argmax(axis=1),
                                                self.n_clusters_)  # in the codes' order
        self.labels_ = labels[inverse]
        # each class's row of largest posterior probability (the first such row)
        first = np.full(inverse.max() + 1, n)
        np.minimum.at(first, inverse, np.arange(n))
        posterior = best["posterior"]
        self.representatives_ = np.empty(self.n_clusters_, np.int64)
        for r in range(self.n_clusters_):
            top = posterior[:, r] == posterior[:, r].max()
            self.representatives_[self._relabel[r]] = first[top].min()
        return self

    def _file_payload(self):
        return latent_class_payload(self)

    @classmethod
    def _from_file(cls, model, data, meta, path):
        return latent_class_from_arrays(model, data, meta, path)

    def predict_proba(self, X):
        """(n, n_clusters_) posterior probabilities of the classes for the rows of X. A value
        a feature never took in the fitted table, or a NaN, is read as missing: that feature
        is left out of the row's likelihood."""
        log_joint = self._log_joint(X)[0]
        proba = np.exp(log_joint - logsumexp(log_joint, axis=1, keepdims=True))
        out = np.empty_like(proba)
        out[:, self._relabel] = proba  # columns in the numbering of labels_
        return out

    def predict(self, X, return_outlier_score=False):
        """The class of largest posterior probability of each row of X, in the numbering of
        `labels_`.

        With ``return_outlier_score``, also each row's outlier score: the empirical p-value of
        its likelihood under the model among the fitted rows' own, ``P(L(fitted row) <=
        L(x))``, as `StabilityClustering.predict` scores its inlierness. Below 0.01 a row is
        one the model rarely draws; a row holding a value that its feature never took in the
        fit scores 0.
        """
        log_joint, unseen = self._log_joint(X)
        labels = self._relabel[log_joint.argmax(axis=1)]
        if not return_outlier_score:
            return labels
        ll = logsumexp(log_joint, axis=1)
        score = np.searchsorted(self._train_ll, ll, side="right") / self._train_ll.size
        score[unseen] = 0.0
        return labels, score

    def _log_joint(self, X):
        """(log of each class's weight times its probability of each row (n, c), the rows
        holding a value not seen in the fit)."""
        if not hasattr(self, "_log_profiles"):
            raise AttributeError("this LatentClassClustering is not fitted; call fit first.")
        X = check_points(X, min_samples=1, accept_sparse=True, allow_nan=not sp.issparse(X))
        if X.shape[1] != len(self.categories_):
            raise ValueError(f"X has {X.shape[1]} features; the model was fitted on "
                             f"{len(self.categories_)}.")
        if sp.issparse(X):  # by blocks of rows, each made dense
            step = max(1, _DENSE_CELLS // X.shape[1])
            parts = [self._log_joint(X[i:i + step].toarray()) for i in range(0, X.shape[0], step)]
            return np.vstack([a for a, _ in parts]), np.concatenate([b for _, b in parts])
        sizes = np.array([len(c) for c in self.categories_])
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        rows, cols = [], []
        unseen = np.zeros(X.shape[0], bool)
        for j, cats in enumerate(self.categories_):
            pos = np.clip(np.searchsorted(cats, X[:, j]), 0, len(cats) - 1)
            seen = cats[pos] == X[:, j]
            unseen |= ~seen & ~np.isnan(X[:, j])  # a missing value is left out, not unseen
            rows.append(np.flatnonzero(seen))
            cols.append(offsets[j] + pos[seen])
        rows, cols = np.concatenate(rows), np.concatenate(cols)
        Z = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(X.shape[0], sizes.sum()))
        return np.asarray(Z @ self._log_profiles.T) + np.log(self.weights_), unseen


def latent_class_payload(model, prefix=""):
    """``(arrays, meta)`` of a fitted model's file; `prefix` names its fields inside another
    model's file (`StabilityClustering` of a binary table)."""
    if not hasattr(model, "_log_profiles"):
        raise AttributeError("this LatentClassClustering is not fitted; call fit first.")
    arrays = {"labels": model.labels_, "weights": model.weights_,
              "log_profiles": model._log_profiles,
              "categories": np.concatenate(model.categories_),
              "category_sizes": np.array([len(c) for c in model.categories_]),
              "training_log_likelihoods": model._train_ll, "relabel": model._relabel,
              "representatives": model.representatives_,
              "bic_n_clusters": np.array(list(model.bic_), dtype=np.int64),
              "bic": np.array(list(model.bic_.values()))}
    meta = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
            "params": jsonable(model.get_params()), "n_clusters": int(model.n_clusters_),
            "log_likelihood": float(model.log_likelihood_), "n_iter": int(model.n_iter_)}
    return {prefix + k: v for k, v in arrays.items()}, meta


def latent_class_from_arrays(model, data, meta, path, prefix=""):
    """`model` (unfitted, its parameters set) with the fitted state of
    `latent_class_payload`'s ``(arrays, meta)``; `path` names the file in errors."""
    def get(name, **kw):
        return file_array(data, prefix + name, path, **kw)

    c = file_value(meta, "n_clusters", path, kind="int", low=1)
    sizes = get("category_sizes", kind="int", ndim=1)
    cats = get("categories", ndim=1, shape=(int(sizes.sum()),))
    model.labels_ = get("labels", kind="int", ndim=1)
    model.weights_ = get("weights", shape=(c,))
    model._log_profiles = get("log_profiles", shape=(c, int(sizes.sum())), finite=False)
    model._train_ll = get("training_log_likelihoods", ndim=1, shape=(model.labels_.size,))
    model._relabel = get("relabel", kind="int", shape=(c,))
    model.representatives_ = get("representatives", kind="int", shape=(c,))
    if (sizes < 1).any() or sorted(model._relabel) != list(range(c)) or (
            model.labels_.size and not 0 <= model.labels_.min() <= model.labels_.max() < c) or (
            not 0 <= model.representatives_.min() <= model.representatives_.max()
            < model.labels_.size):
        raise ValueError(f"{path} is damaged: its categories, labels, class numbers or "
                         f"representatives do not fit {c} classes of {model.labels_.size} rows.")
    model.categories_ = np.split(cats, np.cumsum(sizes)[:-1])
    model.n_features_in_ = len(model.categories_)
    offsets = np.r_[0, np.cumsum(sizes)]
    model.profiles_ = [np.exp(model._log_profiles[:, a:b])
                       for a, b in zip(offsets[:-1], offsets[1:])]
    model.bic_ = dict(zip(get("bic_n_clusters", kind="int", ndim=1).tolist(),
                          get("bic", ndim=1).tolist()))
    model.n_clusters_ = c
    model.log_likelihood_ = file_value(meta, "log_likelihood", path)
    model.n_iter_ = file_value(meta, "n_iter", path, kind="int", low=0)
    return model


def latent_class_log_likelihood(X, weights, profiles, categories):
    """Log-likelihood of the rows of X under a latent class model (a reference by loops: the
    mixture's probability of each row, the product over features of its class's probability
    of the row's value). For tests; `LatentClassClustering.log_likelihood_` is its fast
    form."""
    total = 0.0
    for row in np.asarray(X, dtype=np.float64):
        p = 0.0
        for k, w in enumerate(weights):
            q = w
            for j, cats in enumerate(categories):
                if not np.isnan(row[j]):  # a missing value is left out
                    q *= profiles[j][k, int(np.searchsorted(cats, row[j]))]
            p += q
        total += np.log(p)
    return total
