"""Placing unseen points in a fitted `ConsistencyClustering` (the papers' out-of-sample rule).

For a new point x: w_j = exp(-||x - x_j||^2 / (2 sigma^2)) on its nearest training points,
S_x = w / sqrt(d_x d), S_x and the rows of S normalised to unit length, theta = S_rows S_x,
F_j = V[:, l_j] . theta, label = argmax_j F_j. The fit keeps ``H = S_rows^T V[:, seeds]`` so that
F = S_x H costs O(k c) per point.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.metaestimators import available_if

from .._validation import check_points

__all__ = ["SeedPredictMixin", "neighbour_index"]


def neighbour_index(X, n_neighbors):
    """Exact nearest-neighbour index of the training points, for `predict` (None without X).

    Built in `fit` (and `load`) so that `predict` leaves the estimator unchanged.
    """
    if X is None:
        return None
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=min(int(n_neighbors), X.shape[0])).fit(X)



def _reads_seeds(self):
    """decision_function exists for the seeds' fit (criterion "omega"), not for "stability"."""
    return "stability" not in (getattr(self, "criterion_", None), self.criterion)


class SeedPredictMixin:
    """`predict` and `decision_function` of `ConsistencyClustering` (module notes).

    Needs the fitted ``_predict_H``, ``_degrees``, ``_nn``, ``_fit_kind``, ``sigma_``,
    ``labels_`` and ``n_features_in_``.
    """

    @available_if(_reads_seeds)
    def decision_function(self, X):
        """Scores F (m, n_clusters_) of unseen points by the papers' rule (see `predict`).

        ``criterion="omega"`` only (the seeds' scores); a ValueError otherwise.
        """
        F, _ = self._scores(X)
        return F

    def _stability_fitted(self):
        self._check_fitted()
        return getattr(self, "criterion_", "omega") == "stability"

    def _scores(self, X):
        if self._stability_fitted():
            raise ValueError(
                "decision_function gives the papers' seed scores F of criterion='omega'; this "
                "model was fitted with criterion='stability' (no seeds): use predict(X), or "
                "predict(X, return_outlier_score=True).")
        if self._predict_H is None:
            raise ValueError(
                f"predict places unseen points by the papers' rule, written for the consistency "
                f"kernel U; this model read the {self.kernel!r} kernel: refit with "
                "kernel='consistency' to predict.")
        n_train = self._degrees.shape[0]
        if self._fit_kind == "graph":
            raise ValueError(
                "this model was fitted on a Graph, so it has no coordinates to find the neighbours "
                "of new points: fit it on the data array to use predict."
            )
        if self._fit_kind == "precomputed":
            if sp.issparse(X):
                Wx = sp.csr_matrix(X, dtype=np.float64)
            else:
                arr = np.asarray(X, dtype=np.float64)
                if arr.ndim != 2:
                    raise ValueError(
                        f"with affinity='precomputed', predict takes affinities (m, {n_train}) of "
                        f"new points to the training points; got shape {arr.shape}."
                    )
                Wx = sp.csr_matrix(arr)
            if Wx.shape[1] != n_train:
                raise ValueError(
                    f"with affinity='precomputed', predict takes affinities (m, {n_train}) of new "
                    f"points to the training points; got shape {Wx.shape}."
                )
            if Wx.data.size and (not np.all(np.isfinite(Wx.data)) or Wx.data.min() < 0):
                raise ValueError("the affinities given to predict must be finite and >= 0.")
            nearest = None
        else:
            X = check_points(X, min_samples=1)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but ConsistencyClustering is expecting "
                    f"{self.n_features_in_} features as input (the number it was fitted with)."
                )
            dist, idx = self._nn.kneighbors(X)
            m, k = idx.shape
            w = np.exp(-0.5 * (dist / self.sigma_) ** 2)  # (d / sigma)^2: no under/overflow
            Wx = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n_train))
            nearest = idx[:, 0]
        dx = np.asarray(Wx.sum(axis=1)).ravel()
        d = self._degrees
        inv_sqrt_d = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
        inv_sqrt_dx = np.divide(1.0, np.sqrt(dx), out=np.zeros_like(dx), where=dx > 0)
        Sx = sp.diags(inv_sqrt_dx) @ Wx @ sp.diags(inv_sqrt_d)
        Sx = sp.csr_matrix(Sx)
        sn = np.sqrt(np.asarray(Sx.multiply(Sx).sum(axis=1)).ravel())
        Sx = sp.diags(np.divide(1.0, sn, out=np.zeros_like(sn), where=sn > 0)) @ Sx
        F = np.asarray(Sx @ self._predict_H)
        return F, nearest

    def predict(self, X, *, return_confidence=False, return_outlier_score=False):
        """Assign unseen points to the fitted clusters without refitting.

        ``criterion="omega"``, the papers' rule: for a new point x,
        w_j = exp(-||x - x_j||^2 / (2 sigma_^2)) on its `n_neighbors` nearest training points
        (0 elsewhere), S_x = w / sqrt(d_x d) with d_x = sum w, S_x and the rows of S
        normalised to unit length, theta = S_rows S_x, F_j = V[:, l_j] . theta,
        label = argmax_j F_j.

        ``criterion="stability"``: `StabilityClustering.predict`, the fuzzy-weighted vote of
        the new point's `n_neighbors` nearest training points, with an outlier score.

        Parameters
        ----------
        X : array (m, n_features_in_), or with ``affinity="precomputed"`` the affinities
            (m, n_train) of the new points to the training points.
        return_confidence : bool
            ``"omega"`` only: also return the confidence (F_(1) - F_(2)) / F_(1) in [0, 1]
            (relative margin of the best cluster over the second; 1 with a single cluster). It
            says which cluster, not whether x is like the training data: a point far from all
            of it can get confidence near 1.
        return_outlier_score : bool
            ``"stability"`` only: also return the outlier score in [0, 1], the empirical p-value
            of x's inlierness (its degree in the fuzzy kNN graph) among the training points'
            own; below ``stability_.outlier_threshold`` (0.01) x lies outside what the model
            knows (a point far from all training data scores 0).

        Returns
        -------
        labels : int array (m,), values in 0..n_clusters_-1 only
        confidence or outlier score : array (m,), when asked

        Notes
        -----
        Fallback: a point whose scores are all 0 (its affinities underflow, or its neighbours
        lie where no seed reaches) takes the label of its nearest training point when that is
        labelled, else cluster 0, with confidence 0.
        """
        if return_confidence and return_outlier_score:
            raise ValueError("ask for one of return_confidence (criterion='omega') and "
                             "return_outlier_score (criterion='stability'), not both.")
        if self._stability_fitted():
            if return_confidence:
                raise ValueError(
                    "return_confidence is the margin of the papers' seed scores "
                    "(criterion='omega'); this model was fitted with criterion='stability': "
                    "use return_outlier_score=True (whether x lies where the model has data).")
            return self.stability_.predict(X, return_outlier_score=return_outlier_score)
        if return_outlier_score:
            raise ValueError(
                "return_outlier_score is the stability fit's inlierness p-value "
                "(criterion='stability'); this model was fitted with criterion='omega': use "
                "return_confidence=True, or refit with criterion='stability'.")
        F, nearest = self._scores(X)
        labels = np.argmax(F, axis=1).astype(np.int64)
        Fs = np.sort(F, axis=1)
        top = Fs[:, -1]
        second = Fs[:, -2] if F.shape[1] > 1 else np.zeros_like(top)
        conf = np.divide(top - second, top, out=np.zeros_like(top), where=top > 0)
        dead = ~(top > 0)
        if dead.any():
            if nearest is not None:
                fallback = self.labels_[nearest[dead]]
                labels[dead] = np.where(fallback >= 0, fallback, 0)
            else:
                labels[dead] = 0
            conf[dead] = 0.0
        if return_confidence:
            return labels, conf
        return labels
