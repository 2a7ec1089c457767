"""`StabilityClustering` on a table of binary codes: the latent class model, not a graph.

Binary answers (yes / no, present / absent) put every row on a corner of the hypercube: the
kNN graph's distances are Hamming counts, most lists are decided by ties, and rows repeat.
Measured on the development data (docs/model_selection.md, *A latent class model for tables
of binary codes*): on 20 newsgroups' binary 100-word table the graph fit gave 71 fine-tier
tiles (NMI 0.238, warned), Leiden, Louvain and UMAP + HDBSCAN 0.20-0.24, and the latent class
model 0.37 (c = 13); on 84 drawn binary tables (latent classes; classes as thresholded
Gaussians with dependent features inside them; independent answers) it was ahead on 61, behind
on 13, and gave one class on every table of independent answers, where the graph fit warned.
With two values a feature's every law is a Bernoulli, so the model loses nothing a graph could
read; with more values the categorical model gives up the values' order, and on letters (16
levels) it loses (NMI 0.34 against 0.63): tables of more values stay with the graph.

A sparse matrix of one stored value is such a table too (presence / absence: a bag of words;
the cosine graph fit of the same 100-word table gave 87 clusters, NMI 0.178), and so is a
dense table whose observed answers take two values per feature, with NaN for missing answers
(the model leaves them out of each row's likelihood; a graph cannot read them).
`binary_tables="graph"` keeps the graph fit for these tables, by name.

A sparse matrix of counts (documents x words: `count_table`) is fitted by a mixture of
multinomials (`MultinomialMixtureClustering`) the same way: on 20 newsgroups' word counts NMI
0.579 with c = 18 of 20, where the cosine graph fit gave 0.398 with 38 clusters (a sparse
matrix of other values, tf-idf weights say, stays with the graph). `count_tables="graph"`
keeps the graph fit.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp

from .._validation import check_points
from ._latent_classes import LatentClassClustering
from ._multinomial_mixture import MultinomialMixtureClustering
from ._stability_hierarchy import StabilityWarning, scan_labels, scan_summary

__all__ = ["BINARY_TABLES", "COUNT_TABLES", "LATENT_RULE", "LatentClassTables",
           "adopt_latent_classes", "binary_table", "binary_table_with_missing", "count_table",
           "latent_summary", "no_scan_error"]

#: Values of `StabilityClustering`'s ``binary_tables``.
BINARY_TABLES = ("latent_classes", "graph")

#: Values of `StabilityClustering`'s ``count_tables``.
COUNT_TABLES = ("multinomial", "graph")

#: `selection_rule_` of a fit by the latent class model (or the mixture of multinomials).
LATENT_RULE = "latent classes"

_PROBE = 1000  # rows read first by `binary_table`


def binary_table(X):
    """Whether `X` is a table of two or more features, each taking at most two values and one
    of them two: dense, or sparse with one stored value (presence / absence, as text's words).
    The first rows of a dense table are read first: a table of measurements shows a third
    value there, at no cost at scale.

    Examples
    --------
    >>> import numpy as np
    >>> binary_table(np.array([[0, 1], [1, 1], [1, 0]]))
    True
    >>> binary_table(np.array([[0, 1], [2, 1], [1, 0]]))  # a feature of three values
    False
    """
    if X.ndim != 2 or X.shape[1] < 2:
        return False
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        nonzero = X.data != 0
        stored = X.data[nonzero]
        present = np.bincount(X.indices[nonzero], minlength=X.shape[1])
        return bool(stored.size and (stored == stored[0]).all()
                    and ((present > 0) & (present < X.shape[0])).any())
    if not _at_most_two_values(X[:_PROBE])[0]:
        return False
    two, varies = _at_most_two_values(X)
    return bool(two and varies)


def count_table(X):
    """Whether `X` is a sparse matrix of counts: its stored values non-negative integers, at
    least two of them distinct (one stored value is presence / absence, `binary_table`):
    documents x words, read by a mixture of multinomials.

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> count_table(sp.csr_matrix([[0, 2, 1], [3, 0, 0]]))
    True
    >>> count_table(sp.csr_matrix([[0, 1, 1], [1, 0, 0]]))  # presence / absence
    False
    """
    if not sp.issparse(X) or X.ndim != 2 or X.shape[1] < 2:
        return False
    stored = sp.csr_matrix(X).data
    stored = stored[stored != 0]
    return bool(stored.size and stored.min() > 0 and np.all(stored == np.round(stored))
                and (stored != stored[0]).any())


def binary_table_with_missing(X):
    """Whether a dense `X` holding NaN (missing answers) is a binary table: two or more
    features, each taking at most two values where it is observed, some feature two.

    Examples
    --------
    >>> import numpy as np
    >>> binary_table_with_missing(np.array([[0, 1], [np.nan, 1], [1, np.nan]]))
    True
    """
    if X.ndim != 2 or X.shape[1] < 2:
        return False
    if np.isnan(X).all(axis=0).any():  # a feature missing everywhere: the model names it
        return True
    two, varies = _at_most_two_values(X)
    return two and varies


def _at_most_two_values(A):
    """(every column of A takes at most two values where it is observed, NaN missing; some
    column takes two)."""
    seen = ~np.isnan(A)
    low = np.min(np.where(seen, A, np.inf), axis=0)
    high = np.max(np.where(seen, A, -np.inf), axis=0)
    return bool((~seen | (A == low) | (A == high)).all()), bool((low < high).any())


class LatentClassTables:
    """`StabilityClustering`'s fit, predict and report of a binary table by the latent class
    model (module docstring)."""

    def _table_kind(self, X, missing=False):
        """"binary" (a binary table: the latent class model), "counts" (sparse counts: the
        mixture of multinomials) or None (points: the graph). `missing`: X is a binary table
        with missing answers (`_checked_points`)."""
        if missing or (self.binary_tables == "latent_classes" and binary_table(X)):
            return "binary"
        if self.count_tables == "multinomial" and count_table(X):
            return "counts"
        return None

    def _checked_points(self, X):
        """(X checked as `check_points` does, whether it is a binary table with missing
        answers). NaN is refused as everywhere else, except in a dense table whose answers
        take two values: its NaN are missing answers, which the latent class model reads
        (left out of each row's likelihood). Data without NaN pay nothing for the test."""
        try:
            return check_points(X, accept_sparse=True, keep_float=True), False
        except ValueError as err:
            if self.binary_tables != "latent_classes" or sp.issparse(X):
                raise
            try:
                X = check_points(X, accept_sparse=False, allow_nan=True)
            except (TypeError, ValueError):
                raise err from None
            if not (np.isnan(X).any() and binary_table_with_missing(X)):
                raise
            return X, True

    def _fit_latent_classes(self, X, kind):
        t0 = time.perf_counter()
        counts = kind == "counts"
        model = (MultinomialMixtureClustering if counts else LatentClassClustering)(
            n_clusters=self.n_clusters, random_state=self._seed())
        model.fit(X)
        adopt_latent_classes(self, model)
        self.n_features_in_ = X.shape[1]
        self.timings_ = {"latent_classes": time.perf_counter() - t0}
        if isinstance(self.n_clusters, str) and self.n_clusters_ == 1:
            why = ("its documents draw their words from one distribution" if counts else
                   "its features are independent of one another")
            warnings.warn(
                f"no cluster structure found: the {_model_name(model)} has its smallest BIC "
                f"at one class ({model.bic_[1]:.1f}; two classes "
                f"{model.bic_.get(2, float('nan')):.1f}): {why}, so no classes explain them; "
                f"returning one cluster.", StabilityWarning, stacklevel=3)
        return self

    def _latent_fitted(self):
        return getattr(self, "latent_classes_", None) is not None

    def _scan_labels(self, tau=None, n_clusters=None):
        """`scan_labels` of the fit; a latent class fit has no scan to read."""
        if self._latent_fitted():
            raise no_scan_error("labels_at")
        return scan_labels(self, tau=tau, n_clusters=n_clusters)

    def _scan_summary(self):
        """`scan_summary` of the fit; of a latent class fit, its BICs (`latent_summary`)."""
        return latent_summary(self) if self._latent_fitted() else scan_summary(self)

    def _predict_latent_classes(self, X, return_outlier_score, tau, n_clusters):
        if tau is not None or n_clusters is not None:
            raise ValueError(_NO_SCAN.format(what="predict(tau=..., n_clusters=...)"))
        return self.latent_classes_.predict(X, return_outlier_score=return_outlier_score)


def adopt_latent_classes(model, lca):
    """`model` (a `StabilityClustering`) holding the fitted latent class model `lca` as its
    result, the graph's attributes None or trivial."""
    model.latent_classes_, model.labels_ = lca, lca.labels_
    model.representatives_ = lca.representatives_  # each class's row of largest posterior
    model.n_clusters_, model.selection_rule_ = lca.n_clusters_, LATENT_RULE
    model.tau_ = model.alpha_ = model.metastability_ = model.scan_ = None
    model.fine_labels_ = lca.labels_.copy()
    model.noise_, model.cluster_splits_ = np.zeros(lca.labels_.size, dtype=bool), []
    for name in ("intrinsic_dimension", "escape_time", "null_escape_time", "gap_ratio",
                 "null_gap_ratio", "dip", "dip_pvalue", "support_agreement", "density_exponent"):
        setattr(model, name + "_", None)


_NO_SCAN = ("{what} reads the Markov-stability scan, and this table was fitted by a latent "
            "class model (selection_rule_='latent classes': LatentClassClustering of a binary "
            "table, MultinomialMixtureClustering of counts), which keeps none: fit that model "
            "with n_clusters=c for another number of classes, or StabilityClustering("
            "binary_tables='graph', count_tables='graph') for the graph's scan.")


def no_scan_error(what):
    """The ValueError of reading the scan of a latent class fit (`labels_at`, `summary`)."""
    return ValueError(_NO_SCAN.format(what=what))


def latent_summary(model):
    """`StabilityClustering.summary` of a latent class fit: the BIC of each number of classes
    tried, the chosen one marked (str)."""
    lca = model.latent_classes_
    lines = [f"StabilityClustering: {model.n_clusters_} clusters of {model.labels_.size} points "
             f"({_model_name(lca)}, c by BIC)", f"{'c':>4} {'BIC':>14}"]
    for c, bic in lca.bic_.items():
        lines.append(f"{c:>4} {bic:>14.2f}" + ("  <- chosen" if c == model.n_clusters_ else ""))
    return "\n".join(lines)


def _model_name(model):
    return ("mixture of multinomials of these counts"
            if isinstance(model, MultinomialMixtureClustering)
            else "latent class model of this binary table")
