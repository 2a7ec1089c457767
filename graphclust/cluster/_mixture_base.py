"""What `LatentClassClustering` and `MultinomialMixtureClustering` share: two mixture models
fitted by EM whose number of classes is chosen by BIC.

Their parameters' checks, the search over c with the warnings of a search that stopped short,
the classes numbered by first appearance (classes that are no row's most probable class
last, and said so), `fit_predict` and model files. Each model keeps its own table, EM,
likelihood and predict.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin

from .._persistence import make_from_params, read_model_file, write_model_file
from .._validation import check_int, check_real
from ._common import relabel_by_first_appearance
from ._latent_class_em import search_by_bic

__all__ = ["MixtureClustering"]


class MixtureClustering(ClusterMixin, BaseEstimator):
    """Base of the mixture models fitted by EM, c by BIC. A subclass sets `MODEL_FORMAT`,
    `MODEL_FORMAT_VERSION`, the words of its messages (`_model`: the model's name, `_data`:
    what X is, `_row`: what a row is), its warning class (`_warning`), and `_file_payload` /
    `_from_file` for its model files; its parameters include n_clusters, max_clusters,
    n_init, max_iter and tol."""

    MODEL_FORMAT = None
    MODEL_FORMAT_VERSION = 1
    _model, _data, _row, _warning = "mixture", "the data", "row", UserWarning

    def _check_mixture_params(self):
        check_int(self.max_clusters, "max_clusters", low=1)
        check_int(self.n_init, "n_init", low=1)
        check_int(self.max_iter, "max_iter", low=1)
        check_real(self.tol, "tol", low=0.0, low_inclusive=False)
        if self.n_clusters != "auto":
            check_int(self.n_clusters, "n_clusters", low=1)

    def _classes_to_try(self, n):
        """The numbers of classes to fit for n rows (a given n_clusters above n refused)."""
        if self.n_clusters != "auto":
            if self.n_clusters > n:
                raise ValueError(f"n_clusters must be at most the {n} rows of X; got "
                                 f"{self.n_clusters}.")
            return [self.n_clusters]
        return range(1, min(self.max_clusters, n) + 1)

    def _choose_by_bic(self, fit, free_parameters, n):
        """`search_by_bic` over `_classes_to_try(n)`: (BIC per c, the chosen run), with a
        warning when the search stopped at max_clusters with the BIC still falling or the
        chosen run's EM stopped before tol."""
        bic, best = search_by_bic(self._classes_to_try(n), fit, free_parameters, n)
        c = best["c"]
        if self.n_clusters == "auto" and c == self.max_clusters < n:
            warnings.warn(
                f"the BIC of the {self._model} was still falling at max_clusters="
                f"{self.max_clusters} classes ({bic.get(c - 1, np.nan):.1f} -> {bic[c]:.1f}), "
                f"the largest number tried: {self._data} may hold more classes; raise "
                f"max_clusters.", self._warning, stacklevel=3)
        if not best["converged"]:
            warnings.warn(
                f"the EM runs of the {self._model} with {c} classes did not converge in "
                f"max_iter={self.max_iter} iterations (last relative change "
                f"{best['change']:.1e} > tol={self.tol:g}); raise max_iter.", self._warning,
                stacklevel=3)
        return bic, best

    def _numbering(self, raw, c):
        """(labels of the rows numbered by first appearance, each model class's number in
        them): `raw` is each row's most probable class of c. Classes that are no row's most
        probable class come last, and the fit says so: such a class can fit the data's law
        and still be told apart from no other (more classes than distinct rows, or
        unidentifiable ones), and labels_ then hold fewer clusters than n_clusters_ says."""
        labels = relabel_by_first_appearance(raw)
        relabel = np.full(c, -1, np.int64)
        relabel[raw] = labels
        empty = relabel < 0
        relabel[empty] = int(labels.max()) + 1 + np.arange(int(empty.sum()))
        if empty.any():
            held = c - int(empty.sum())
            given = (f" (n_clusters={self.n_clusters} was given)"
                     if self.n_clusters != "auto" else "")
            warnings.warn(
                f"{int(empty.sum())} of the {self._model}'s {c} classes are no {self._row}'s "
                f"most probable class: labels_ hold {held} cluster{'s' if held > 1 else ''}"
                f"{given}; the model cannot tell that many classes apart in {self._data} "
                f"(n_clusters='auto' chooses their number by BIC).", self._warning,
                stacklevel=3)
        return labels, relabel

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def save(self, path):
        """Write the fitted model to `path` (.npz of arrays + JSON metadata, no pickle)."""
        return write_model_file(path, *self._file_payload())

    @classmethod
    def load(cls, path):
        """Read a model written by `save`; a damaged file is a ValueError naming the field."""
        data, meta = read_model_file(path, fmt=cls.MODEL_FORMAT,
                                     version=cls.MODEL_FORMAT_VERSION, kind="model")
        return cls._from_file(make_from_params(cls, meta.get("params"), path), data, meta,
                              path)
