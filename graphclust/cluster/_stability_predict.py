"""Placing unseen points in a fitted `StabilityClustering`: the fuzzy-weighted vote of their
training neighbours, and the outlier score of their inlierness (`StabilityPredict.predict`).

A mixin of the estimator: it reads the fit's per-point scales (`rho_`, `sigma_`), its kNN lists
and the training points' own inlierness (`training_scores_`), which `_fit_predict_state` keeps.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_points
from ..graphs import LazyNeighbourIndex, euclidean_to_metric, prepare_metric

__all__ = ["StabilityPredict"]


class StabilityPredict:
    """`predict` and the state it reads, for `StabilityClustering`."""

    def _fit_predict_state(self, idx, dist):
        self.training_scores_ = np.sort(self._degree(idx, dist))
        self._knn_lists = np.asarray(idx, dtype=np.int32)

    def _degree(self, idx, dist):
        with np.errstate(invalid="ignore", over="ignore"):
            return np.exp(-np.clip(dist - self.rho_[idx], 0, None) / self.sigma_[idx]).sum(axis=1)

    def _index(self):
        # exact up to EXACT_INDEX_MAX_SAMPLES points, else the fit's kNN lists' (old files: exact)
        self._nn = LazyNeighbourIndex(self._X_fit, getattr(self, "_knn_lists", None))

    def _neighbours(self, X):
        Xm = prepare_metric(X, self.metric) / self._scale
        k = min(int(self.n_neighbors), self._X_fit.shape[0])
        dist, idx = self._nn.get().kneighbors(Xm, k)
        if getattr(self, "_fit_order", None) is not None:  # rows of X as fitted
            idx = self._fit_order[idx]
        return idx, euclidean_to_metric(dist * self._scale, self.metric)

    def predict(self, X, return_outlier_score=False, *, tau=None, n_clusters=None):
        """Label new points by the fuzzy-weighted vote of their training neighbours.

        Each new point x sees its k nearest training points j with the weights they give their
        own neighbours, ``w_xj = exp(-(d(x, x_j) - rho_j)_+ / sigma_j)``; its label is the
        cluster of largest total weight (the nearest neighbour's when every weight is 0).
        The clusters are `labels_`, or with `tau` or `n_clusters` that level of the scan
        (`labels_at`, the same rule): new points placed in a coarser or finer view without
        refitting. On training points the vote can differ from the walk's `labels_` where
        most neighbours lie in another cluster (1 of scikit-learn's 1 797 digits).

        Its outlier score is the empirical p-value of its inlierness ``deg(x) = sum_j w_xj``
        (the stationary mass the walk would give it) among the training points' own
        (`training_scores_`): ``P(deg(training point) <= deg(x))``. Below `outlier_threshold`
        (default 0.01) x lies outside what the model knows; a point far from all training data
        has deg(x) = 0 and score 0.

        Returns
        -------
        labels : int array (m,)
        scores : array (m,) in [0, 1], only with ``return_outlier_score=True``
        """
        from sklearn.exceptions import NotFittedError

        if not hasattr(self, "labels_"):
            raise NotFittedError("This StabilityClustering instance is not fitted yet; call "
                                 "fit(X) first.")
        X = check_points(X, accept_sparse=True, min_samples=1, allow_nan=self._latent_fitted())
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        if self._latent_fitted():
            return self._predict_latent_classes(X, return_outlier_score, tau, n_clusters)
        if sp.issparse(X) and not sp.issparse(self._X_fit):  # a dense index takes dense rows
            X = X.toarray()
        train = (self.labels_ if tau is None and n_clusters is None
                 else self._scan_labels(tau=tau, n_clusters=n_clusters))
        idx, dist = self._neighbours(X)
        with np.errstate(invalid="ignore", over="ignore"):
            w = np.exp(-np.clip(dist - self.rho_[idx], 0, None) / self.sigma_[idx])
        lab = train[idx]
        votes = np.zeros((X.shape[0], int(train.max()) + 1))
        np.add.at(votes, (np.repeat(np.arange(X.shape[0]), idx.shape[1]), lab.ravel()), w.ravel())
        labels = np.where(votes.max(axis=1) > 0, votes.argmax(axis=1), lab[:, 0])
        if not return_outlier_score:
            return labels
        t = self.training_scores_
        return labels, np.searchsorted(t, w.sum(axis=1), side="right") / t.size
