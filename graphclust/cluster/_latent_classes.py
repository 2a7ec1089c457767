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
unordered, any numbers. Recoding a feature's values (0 / 1 as -3 / 5) changes nothing.
Ordered values with many levels are measurements
more than codes, and a categorical model spends c (levels - 1) parameters per feature on them
(letters' 16 levels: NMI 0.34 here against 0.63 for `StabilityClustering`).

The fit reads each distinct row once, weighted by its copies (the same likelihood: binary
answers to 6 questions are at most 64 rows, 20 newsgroups' 16 242 documents 10 267), in the
order of their codes, and its starts draw class profiles around each feature's marginal
frequencies, not responsibilities per row: the fit does not depend on the order of the rows.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClusterMixin

from .._persistence import (file_array, file_value, jsonable, make_from_params,
                            read_model_file, write_model_file)
from .._validation import check_int, check_points, check_random_state, check_real
from ..threads import one_blas_thread
from ._feature_independence import FEW_VALUES

__all__ = ["BIC_PATIENCE", "SHORT_RUN", "LatentClassClustering", "LatentClassWarning",
           "latent_class_from_arrays", "latent_class_log_likelihood", "latent_class_payload"]

MODEL_FORMAT = "graphclust.LatentClassClustering"
MODEL_FORMAT_VERSION = 1

#: The search for c stops once the BIC has not fallen for this many classes in a row.
BIC_PATIENCE = 3

#: EM iterations of each start before the best one is run to convergence (`_best_start`).
SHORT_RUN = 20

# EM's passes run over the threads from this many (stored entries + rows) x classes (of the
# runs in the batch): below, starting the threads costs more than they save (the 84 drawn
# tables of docs/model_selection.md 4.7 s on one thread, 6.4 s from 2^17 on threads)
_THREADED_WORK = 2**19

# predict makes a sparse table's rows dense in blocks of at most this many cells
_DENSE_CELLS = 20_000_000


class LatentClassWarning(UserWarning):
    """An EM run of the latent class model stopped before it converged."""


class LatentClassClustering(ClusterMixin, BaseEstimator):
    """Latent class model of a table of codes, fitted by EM, its number of classes by BIC.

    Each feature's distinct values are categories; within a class the features are
    independent, each with the class's own probabilities of its values (module docstring).

    Parameters
    ----------
    n_clusters : "auto" or int >= 1, default "auto"
        Classes; "auto" takes the number of smallest BIC, trying 1, 2, ... up to
        `max_clusters` or until it has not fallen for `BIC_PATIENCE` numbers in a row.
    max_clusters : int >= 1, default 30
        The largest number of classes tried by "auto".
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

    def _check_params(self):
        check_int(self.max_clusters, "max_clusters", low=1)
        check_int(self.max_values, "max_values", low=2)
        check_int(self.n_init, "n_init", low=1)
        check_int(self.max_iter, "max_iter", low=1)
        check_real(self.tol, "tol", low=0.0, low_inclusive=False)
        if self.n_clusters != "auto":
            check_int(self.n_clusters, "n_clusters", low=1)

    def fit(self, X, y=None):
        """Fit the model to the table X (n_samples, n_features) of codes (a sparse X: presence
        / absence)."""
        self._check_params()
        X = check_points(X, min_samples=1, accept_sparse=True)
        n = X.shape[0]
        if self.n_clusters != "auto" and self.n_clusters > n:
            raise ValueError(f"n_clusters must be at most the {n} rows of X; got "
                             f"{self.n_clusters}.")
        # one row of the fit per distinct row, weighted by its copies (the same likelihood),
        # in the order of the codes: the fit does not depend on the order the rows came in
        if sp.issparse(X):  # presence / absence, as text's words
            table, inverse, self.categories_ = _presence_table(X)
        else:
            codes, self.categories_ = _encode(X, self.max_values)
            distinct, inverse, counts = np.unique(codes, axis=0, return_inverse=True,
                                                  return_counts=True)
            table = _Table.from_codes(distinct, np.array([len(c) for c in self.categories_]),
                                      counts.astype(np.float64))
            inverse = inverse.ravel()
        self.n_features_in_ = X.shape[1]
        sizes = table.sizes
        rng = check_random_state(self.random_state)
        tries = ([self.n_clusters] if self.n_clusters != "auto"
                 else range(1, min(self.max_clusters, n) + 1))
        self.bic_, best = {}, None
        # EM's compiled passes over the threads alternate with small BLAS calls: a second
        # BLAS thread still spinning after each made the passes 40 times slower (threads)
        with one_blas_thread():
            for c in tries:
                fit = _best_start(table, c, self.n_init if c > 1 else 1, self.max_iter,
                                  self.tol, rng)
                free = (c - 1) + c * int((sizes - 1).sum())
                self.bic_[c] = -2.0 * fit["log_likelihood"] + free * np.log(n)
                if best is None or self.bic_[c] < self.bic_[best["c"]]:
                    best = dict(fit, c=c)
                elif c >= best["c"] + BIC_PATIENCE:
                    break
        if not best["converged"]:
            warnings.warn(
                f"the EM runs of the latent class model with {best['c']} classes did not "
                f"converge in max_iter={self.max_iter} iterations (last relative change "
                f"{best['change']:.1e} > tol={self.tol:g}); raise max_iter.", LatentClassWarning,
                stacklevel=2)
        self.n_clusters_, self.weights_ = best["c"], best["weights"]
        self.log_likelihood_, self.n_iter_ = best["log_likelihood"], best["n_iter"]
        self._log_profiles = best["log_profiles"]
        offsets = np.r_[0, np.cumsum(sizes)]
        self.profiles_ = [np.exp(self._log_profiles[:, a:b])
                          for a, b in zip(offsets[:-1], offsets[1:])]
        self._train_ll = np.sort(best["row_log_likelihoods"][inverse])  # of the final E step
        raw = best["posterior"].argmax(axis=1)
        labels = _canonical(raw)  # numbered by first appearance in the codes' order
        self.labels_ = labels[inverse]
        # each class's number in labels_ (classes that win no row come last)
        self._relabel = np.full(self.n_clusters_, -1, np.int64)
        self._relabel[raw] = labels
        missing = self._relabel < 0
        self._relabel[missing] = int(labels.max()) + 1 + np.arange(int(missing.sum()))
        # each class's row of largest posterior probability (the first such row)
        first = np.full(inverse.max() + 1, n)
        np.minimum.at(first, inverse, np.arange(n))
        posterior = best["posterior"]
        self.representatives_ = np.empty(self.n_clusters_, np.int64)
        for r in range(self.n_clusters_):
            top = posterior[:, r] == posterior[:, r].max()
            self.representatives_[self._relabel[r]] = first[top].min()
        return self

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def save(self, path):
        """Write the fitted model to `path` (.npz of arrays + JSON metadata, no pickle)."""
        return write_model_file(path, *latent_class_payload(self))

    @classmethod
    def load(cls, path):
        """Read a model written by `save`; a damaged file is a ValueError naming the field."""
        data, meta = read_model_file(path, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION,
                                     kind="model")
        return latent_class_from_arrays(make_from_params(cls, meta.get("params"), path), data,
                                        meta, path)

    def predict_proba(self, X):
        """(n, n_clusters_) posterior probabilities of the classes for the rows of X. A value
        a feature never took in the fitted table is read as missing: that feature is left out
        of the row's likelihood."""
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
        ll = _logsumexp_rows(log_joint)
        score = np.searchsorted(self._train_ll, ll, side="right") / self._train_ll.size
        score[unseen] = 0.0
        return labels, score

    def _log_joint(self, X):
        """(log of each class's weight times its probability of each row (n, c), the rows
        holding a value not seen in the fit)."""
        if not hasattr(self, "_log_profiles"):
            raise AttributeError("this LatentClassClustering is not fitted; call fit first.")
        X = check_points(X, min_samples=1, accept_sparse=True)
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
            unseen |= ~seen
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
                q *= profiles[j][k, int(np.searchsorted(cats, row[j]))]
            p += q
        total += np.log(p)
    return total


def _encode(X, max_values):
    """(codes (n, p) int, categories per feature) of the table X; a ValueError names the first
    feature with more than `max_values` values."""
    codes, cats = np.empty(X.shape, np.int64), []
    for j in range(X.shape[1]):
        values, codes[:, j] = np.unique(X[:, j], return_inverse=True)
        if values.size > max_values:
            raise ValueError(
                f"X's feature {j} takes {values.size} distinct values; a latent class model "
                f"reads each feature's values as categories, at most max_values={max_values}: "
                f"a feature of many values is a measurement (use StabilityClustering), or raise "
                f"max_values.")
        cats.append(values)
    return codes, cats


class _Table:
    """The distinct rows of a table of codes, each standing for `counts` copies, as the EM
    reads them: an indicator matrix `Z` of each row's values *other than* its feature's
    baseline value (columns `keep` of the one-hot cells), whose log-probability enters
    through a constant per class (columns `base`). Binary answers need one column per
    feature instead of two, and a sparse table (text: most words absent) keeps its sparsity:
    20 newsgroups' binary table, 10 267 distinct rows of 100 words, is 5 % filled. An EM
    iteration is one compiled pass over its stored entries (`_em_pass`): 0.5 ms on that
    table with 13 classes, against 2.5 ms for sparse products and numpy's exp."""

    def __init__(self, Z, base, keep, sizes, counts):
        self.sizes, self.counts, self.cells = sizes, counts, int(sizes.sum())
        self.base, self.keep = base, keep
        self.feature = np.repeat(np.arange(sizes.size), sizes)  # each cell's feature
        Z = sp.csr_matrix(Z)
        Z.sort_indices()
        self.Z = Z  # every stored value 1: EM reads its indices only (`_em_pass`)
        self.indptr, self.indices = Z.indptr.astype(np.int64), Z.indices.astype(np.int64)

    @classmethod
    def from_codes(cls, codes, sizes, counts):
        """From the codes (n, p) of the distinct rows: each feature's most frequent value is
        its baseline."""
        n, p = codes.shape
        offsets = np.r_[0, np.cumsum(sizes)[:-1]]
        full = np.zeros(int(sizes.sum()))
        np.add.at(full, (codes + offsets).ravel(), np.repeat(counts, p))
        base = np.array([np.argmax(full[a:a + m]) for a, m in zip(offsets, sizes)])
        keep = np.setdiff1d(np.arange(full.size), offsets + base)
        rows, feats = np.nonzero(codes != base)
        column = np.searchsorted(keep, (codes + offsets)[rows, feats])
        Z = sp.csr_matrix((np.ones(rows.size), (rows, column)), shape=(n, keep.size))
        return cls(Z, offsets + base, keep, sizes, counts)

    def step(self, weights, log_profiles):
        """One E step and the M step's sums for S runs at once (their weights (S, c) and log
        profiles (S, c, cells)): (each distinct row's class posteriors (n, S c), run s's in
        columns s c .. s c + c - 1; each row's log-likelihood under each run (S, n); each
        class's count of every value (S, c, cells) and of rows (S, c), both from the
        posteriors times the copies). A run's numbers do not depend on the others in the
        batch: the batch shares the passes over the table, not their sums."""
        S, c, _ = log_profiles.shape
        differences = log_profiles[:, :, self.keep] - log_profiles[:, :, self.base[
            self.feature[self.keep]]]
        constant = log_profiles[:, :, self.base].sum(axis=2) + np.log(weights)
        n, m = self.counts.size, differences.shape[2]
        # fixed chunks (of the table's and the model's sizes only, never the thread count or
        # the batch), their sums added in chunk order: the same numbers on any number of
        # threads and in any batch
        chunks = max(1, min(64, 2**22 // max(1, m * c), -(-n // 256)))
        posterior, row_ll, kept, totals = _em_pass(
            self.indptr, self.indices, self.counts,
            np.ascontiguousarray(differences.transpose(2, 0, 1).reshape(m, S * c)),
            constant.ravel(), c, -(-n // chunks))
        cells = np.stack([self.cell_counts(kept[:, s * c:(s + 1) * c].T, totals[s * c:
                                                                              (s + 1) * c])
                          for s in range(S)])
        return posterior, row_ll, cells, totals.reshape(S, c)

    def class_counts(self, weighted):
        """(c, cells): each class's count of every value, from the rows' class weights
        (n, c) already multiplied by their copies."""
        return self.cell_counts(np.asarray(self.Z.T @ weighted).T, weighted.sum(axis=0))

    def cell_counts(self, kept, totals):
        """(c, cells) from each class's counts of the kept cells (c, m) and its total (c,):
        a baseline's count is the total less the counts of its feature's other values."""
        c = kept.shape[0]
        out = np.zeros((c, self.cells))
        out[:, self.keep] = kept
        others = np.zeros((c, self.sizes.size))
        np.add.at(others.T, self.feature[self.keep], kept.T)
        out[:, self.base] = totals[:, None] - others
        return out


def _em_pass(indptr, indices, counts, differences, constant, group, chunk):
    """The E step over the distinct rows of an indicator matrix (CSR `indptr`, `indices`; the
    values 1), with the M step's sums: row i's joint log-probability of column r is
    ``constant[r] + sum of differences[j, r]`` over its columns j, and each run's `group`
    consecutive columns are its classes. Returns (posteriors (n, k), each run's row
    log-likelihoods (k / group, n), posteriors times copies summed per column of the table
    (m, k) and per class (k,)). Two compiled passes over the rows in fixed chunks, each
    chunk's sums added in chunk order (the same numbers on any number of threads), and
    numpy's exp between them: its vector exp is several times faster than a compiled loop's
    scalar one."""
    n = counts.size
    n_chunks = (n + chunk - 1) // chunk
    # threads only for a pass of some size (`_THREADED_WORK`): beside other busy processes
    # each start of the threads can wait a scheduler's slice (the 84 drawn tables fitted two
    # at a time: 450 s with every pass on threads, against 9 s)
    driver = (_em_chunks_threaded if (indptr[-1] + n) * constant.size >= _THREADED_WORK
              else _em_chunks)
    runs = constant.size // group
    posterior, top = np.empty((n, constant.size)), np.empty((runs, n))
    kept = np.zeros((n_chunks, differences.shape[0], constant.size))
    totals = np.zeros((n_chunks, constant.size))
    row_ll = np.empty((runs, n))
    for stage in (0, 1):
        if stage:
            np.exp(posterior, out=posterior)
        driver(stage, indptr, indices, counts, differences, constant, group, chunk, posterior,
               top, row_ll, kept, totals)
    return posterior, row_ll, _in_order(kept), _in_order(totals)


def _in_order(parts):
    out = parts[0].copy()
    for part in parts[1:]:
        out += part
    return out


@numba.njit(cache=True)
def _em_chunk(stage, lo, hi, indptr, indices, counts, differences, constant, group, out, top,
              row_ll, kept, totals):
    """Rows lo..hi of `_em_pass`. Stage 0: each row's joint log-probabilities less each run's
    largest (`out`), and those largest (`top`). Stage 1, `out` holding their exp: each run's
    rows normalised in place, their log-likelihoods, and the posteriors times copies added to
    this chunk's sums per column (`kept`, (m, k)) and per class (`totals`)."""
    k = constant.size
    for i in range(lo, hi):
        if stage == 0:
            for r in range(k):
                out[i, r] = constant[r]
            for q in range(indptr[i], indptr[i + 1]):
                j = indices[q]
                for r in range(k):
                    out[i, r] += differences[j, r]
            for s in range(k // group):
                a = s * group
                t = out[i, a]
                for r in range(a + 1, a + group):
                    t = max(t, out[i, r])
                for r in range(a, a + group):
                    out[i, r] -= t
                top[s, i] = t
            continue
        for s in range(k // group):
            a = s * group
            total = 0.0
            for r in range(a, a + group):
                # posteriors below 1e-300 are 0: subnormal numbers (exp of -708 and below,
                # and quotients of tiny ones) cost a hundred times more per operation
                if out[i, r] < 1e-300:
                    out[i, r] = 0.0
                total += out[i, r]
            row_ll[s, i] = top[s, i] + np.log(total)
            for r in range(a, a + group):
                out[i, r] /= total
                totals[r] += out[i, r] * counts[i]
        for q in range(indptr[i], indptr[i + 1]):
            j = indices[q]
            for r in range(k):
                kept[j, r] += out[i, r] * counts[i]


@numba.njit(cache=True)
def _em_chunks(stage, indptr, indices, counts, differences, constant, group, chunk, out, top,
               row_ll, kept, totals):
    n = counts.size
    for k in range(kept.shape[0]):
        _em_chunk(stage, k * chunk, min(n, (k + 1) * chunk), indptr, indices, counts,
                  differences, constant, group, out, top, row_ll, kept[k], totals[k])


@numba.njit(cache=True, parallel=True)
def _em_chunks_threaded(stage, indptr, indices, counts, differences, constant, group, chunk,
                        out, top, row_ll, kept, totals):
    n = counts.size
    for k in numba.prange(kept.shape[0]):
        _em_chunk(stage, k * chunk, min(n, (k + 1) * chunk), indptr, indices, counts,
                  differences, constant, group, out, top, row_ll, kept[k], totals[k])


def _presence_table(X):
    """(`_Table`, each row's distinct row, categories) of a sparse table of presence /
    absence: its stored values one number v (absence is 0), the baseline of every feature 0."""
    X = sp.csr_matrix(X, copy=True)
    X.eliminate_zeros()
    X.sort_indices()
    values = np.unique(X.data)
    if values.size > 1:
        raise ValueError(
            f"a sparse X is read as presence / absence: its stored values must be one number; "
            f"got {values.size} ({', '.join(f'{v:g}' for v in values[:4])}"
            f"{', ...' if values.size > 4 else ''}). Pass X.toarray() for a table of categories.")
    v = float(values[0]) if values.size else 1.0
    n, p = X.shape
    present = np.bincount(X.indices, minlength=p)
    cats = [np.array([0.0]) if k == 0 else np.array([v]) if k == n else np.sort([0.0, v])
            for k in present]
    sizes = np.array([len(c) for c in cats])
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    two = np.flatnonzero(sizes == 2)
    # the v-cell of a two-valued feature is kept, the 0-cell is its baseline; a one-valued
    # feature's only cell is its baseline
    keep = offsets[two] + (v > 0)
    base = offsets.copy()
    base[two] += v < 0
    keys = np.empty(n, dtype=object)  # a row's present features, as bytes: its identity
    for i in range(n):
        keys[i] = X.indices[X.indptr[i]:X.indptr[i + 1]].tobytes()
    _, first, inverse, counts = np.unique(keys, return_index=True, return_inverse=True,
                                          return_counts=True)
    P = X[first][:, two]
    P.data[:] = 1.0
    return _Table(P, base, keep, sizes, counts.astype(np.float64)), inverse.ravel(), cats


def _logsumexp_rows(A):
    top = A.max(axis=1)
    return top + np.log(np.exp(A - top[:, None]).sum(axis=1))


def _normalised_log(counts, sizes):
    """Log of the counts (c, sum(sizes)) divided by their sum within each feature's block."""
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    totals = np.add.reduceat(counts, offsets, axis=1)
    return np.log(counts) - np.log(np.repeat(totals, sizes, axis=1))


def _best_start(table, c, n_init, max_iter, tol, rng):
    """The EM run of c classes from the best of `n_init` starts: each start runs
    `SHORT_RUN` iterations, and the one of largest log posterior then runs to convergence
    (the short-runs strategy of Biernacki, Celeux & Govaert 2003: most of the starts' cost
    saved, the same optimum on the development tables). The starts' short runs share each
    pass over the table (`_em`)."""
    sizes = table.sizes
    offsets = np.r_[0, np.cumsum(sizes)[:-1]]
    marginal = table.class_counts(table.counts[:, None])[0] + 1.0 / np.repeat(sizes, sizes)
    shares = marginal / np.repeat(np.add.reduceat(marginal, offsets), sizes)
    # class profiles drawn around the marginal frequencies (a Dirichlet of total mass 2 per
    # value: spread enough that starts differ)
    starts = np.stack([
        _normalised_log(rng.gamma(2.0 * np.repeat(sizes, sizes) * shares,
                                  size=(c, shares.size)) + 1e-12, sizes)
        for _ in range(n_init)])
    best = None
    for run in _em(table, np.full((n_init, c), 1.0 / c), starts, min(SHORT_RUN, max_iter), tol):
        if best is None or run["log_posterior"] > best["log_posterior"]:
            best = run
    if not best["converged"] and max_iter > SHORT_RUN:
        history = best["history"]
        best = _em(table, best["weights"][None], best["log_profiles"][None],
                   max_iter - SHORT_RUN, tol)[0]
        best["history"] = history + best["history"]
        best["n_iter"] += SHORT_RUN
    return best


def _em(table, weights, log_profiles, max_iter, tol):
    """EM on the distinct rows of `table` (`_Table`) for S runs at once from their class
    weights (S, c) and log profiles (S, c, cells): MAP estimates with a Dirichlet pseudo-count
    of 1 / (values) per cell. Each run stops on its own; a run's numbers are those it would
    have alone. Returns each run's final fit and `history`, its log posterior after each
    iteration (never lower than the one before)."""
    sizes, counts = table.sizes, table.counts
    n = counts.sum()
    prior = 1.0 / np.repeat(sizes, sizes)
    c = weights.shape[1]
    runs = [{"weights": w, "log_profiles": lp, "history": [], "change": np.inf,
             "converged": False} for w, lp in zip(weights, log_profiles)]
    active = list(range(len(runs)))
    for it in range(1, max_iter + 1):
        posterior, row_ll, cells, totals = table.step(
            np.stack([runs[s]["weights"] for s in active]),
            np.stack([runs[s]["log_profiles"] for s in active]))
        still = []
        for b, s in enumerate(active):
            run = runs[s]
            log_post = counts @ row_ll[b] + (prior * run["log_profiles"]).sum()
            if run["history"]:
                run["change"] = (log_post - run["history"][-1]) / abs(log_post)
            run["history"].append(log_post)
            run["converged"] = bool(run["change"] < tol)
            if run["converged"] or it == max_iter:
                run.update(log_likelihood=float(counts @ row_ll[b]),
                           log_posterior=float(log_post), row_log_likelihoods=row_ll[b],
                           posterior=posterior[:, b * c:(b + 1) * c].copy(), n_iter=it)
                continue
            run["weights"] = np.maximum(totals[b] / n, 1e-300)
            run["log_profiles"] = _normalised_log(cells[b] + prior, sizes)
            still.append(s)
        active = still
        if not active:
            break
    return runs


def _canonical(labels):
    """Labels renumbered by first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(first.size, np.int64)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inverse]
