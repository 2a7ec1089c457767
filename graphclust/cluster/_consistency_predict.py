"""Placing unseen points in a fitted `ConsistencyClustering` (the papers' out-of-sample rule).

For a new point x: w_j = exp(-||x - x_j||^2 / (2 sigma^2)) on its nearest training points,
S_x = w / sqrt(d_x d), S_x and the rows of S normalised to unit length, theta = S_rows S_x,
F_j = V[:, l_j] . theta, label = argmax_j F_j. The fit keeps ``H = S_rows^T V[:, seeds]`` so that
F = S_x H costs O(k c) per point.

Outlier score (``predict(X, return_outlier_score=True)``): the papers' inlierness
o = N^-1 U^2 N^-1 1 / n of a point x added to the graph. With s = S_x (not normalised: its size
is how strongly x couples to the training data, sqrt(d_x / d) in order), the Schur complement of
the augmented I - alpha S gives, to first order in s (x couples weakly: the regime of an outlier),

    (n + 1) o_x = 1 + (alpha / beta) s^T (g + beta h),  h = U N^-1 1,  g = U h = n N o,

so ``t(x) = alpha s^T (g / beta + h) / (n + 1)`` is x's inlierness above that of an isolated
point. The training points get the same statistic leave-one-out (each from its own `n_neighbors`
strongest affinities to the others, as a new point gets them), and the score is the empirical
p-value ``P(t(training point) <= t(x))``, a calibrated quantile in [0, 1]: a new point drawn like
the training data scores below `outlier_threshold` at about that rate, a point far from all of
it scores 0 (s vanishes with its affinity mass).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.metaestimators import available_if

from .._validation import check_points
from ..graphs import NeighbourIndex

__all__ = ["SeedPredictMixin", "neighbour_index", "outlier_statistic", "set_predict_state"]


def neighbour_index(X):
    """Exact nearest-neighbour index of the training points, for `predict` (None without X).

    Built in `fit` (and `load`) so that `predict` leaves the estimator unchanged.
    """
    if X is None:
        return None
    # exact (no graph), and searched less the points' far offset (`graphs.NeighbourIndex`)
    return NeighbourIndex(X)


def outlier_statistic(Wx, d, r):
    """t(x) = s_x^T r for the rows of affinities Wx (m, n), s_x = w_x / sqrt(d_x d) (module notes)."""
    Wx = sp.csr_matrix(Wx)
    dx = np.asarray(Wx.sum(axis=1)).ravel()
    inv_sqrt_d = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
    inv_sqrt_dx = np.divide(1.0, np.sqrt(dx), out=np.zeros_like(dx), where=dx > 0)
    return inv_sqrt_dx * (Wx @ (inv_sqrt_d * r))


def _strongest(W, k):
    """W with only the `k` largest entries of each row kept (ties by column)."""
    W = sp.csr_matrix(W)
    rows = np.repeat(np.arange(W.shape[0]), np.diff(W.indptr))
    order = np.lexsort((W.indices, -W.data, rows))
    rank = np.arange(rows.size) - W.indptr[rows[order]]
    keep = order[rank < k]
    return sp.csr_matrix((W.data[keep], (rows[keep], W.indices[keep])), shape=W.shape)


def set_predict_state(model, K, path, c, nu, X_arr):
    """What `predict` needs, on `model`: ``_predict_H``, ``_degrees``, ``_nn`` and the outlier
    reference (``_outlier_r``, r of the module notes, and ``_outlier_ref``, the sorted training
    statistics), from the final kernel `K`, its consistency path and column norms `nu`."""
    S = K.S
    V_seeds = path["V_seeds"][:, :c]
    row_norm = np.sqrt(np.asarray(S.multiply(S).sum(axis=1)).ravel())
    inv_r = np.divide(1.0, row_norm, out=np.zeros_like(row_norm), where=row_norm > 0)
    model._predict_H = np.asarray(S @ (V_seeds * inv_r[:, None]))
    model._degrees = d = K.degrees.copy()
    model._nn = neighbour_index(X_arr)
    n = S.shape[0]
    g = n * path["inlierness"] * nu  # U h
    model._outlier_r = r = K.alpha * (g / K.beta + path["U_inv_nu"]) / (n + 1)
    sq = np.sqrt(d)
    W = sp.diags(sq) @ S @ sp.diags(sq)  # the affinities of the fit
    if X_arr is not None:  # a new point sees its n_neighbors nearest training points
        W = _strongest(W, min(int(model.n_neighbors), n - 1))
    model._outlier_ref = np.sort(outlier_statistic(W, d, r))


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
        F, _, _ = self._scores(X)
        return F

    def _stability_fitted(self):
        self._check_fitted()
        return getattr(self, "criterion_", "omega") == "stability"

    def _scores(self, X, outlier=False):
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
            dist, idx = self._nn.kneighbors(X, min(int(self.n_neighbors), n_train))
            m, k = idx.shape
            w = np.exp(-0.5 * (dist / self.sigma_) ** 2)  # (d / sigma)^2: no under/overflow
            Wx = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n_train))
            nearest = idx[:, 0]
        d = self._degrees
        t = outlier_statistic(Wx, d, self._outlier_r) if outlier else None
        dx = np.asarray(Wx.sum(axis=1)).ravel()
        inv_sqrt_d = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
        inv_sqrt_dx = np.divide(1.0, np.sqrt(dx), out=np.zeros_like(dx), where=dx > 0)
        Sx = sp.diags(inv_sqrt_dx) @ Wx @ sp.diags(inv_sqrt_d)
        Sx = sp.csr_matrix(Sx)
        sn = np.sqrt(np.asarray(Sx.multiply(Sx).sum(axis=1)).ravel())
        Sx = sp.diags(np.divide(1.0, sn, out=np.zeros_like(sn), where=sn > 0)) @ Sx
        F = np.asarray(Sx @ self._predict_H)
        return F, nearest, t

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
            of it can get confidence near 1 (use the outlier score for that).
        return_outlier_score : bool
            Also return the outlier score in [0, 1]: an empirical p-value, below
            `outlier_threshold` (0.01) x lies outside what the model knows. ``"omega"``: of
            x's out-of-sample inlierness (the papers' o of x added to the graph, to first
            order in its coupling; module notes of ``_consistency_predict``) among the training
            points' own, each computed leave-one-out from its `n_neighbors` strongest
            affinities; a point far from all training data scores 0, and a new point drawn like
            the training data scores below the threshold at about the threshold's rate.
            ``"stability"``: `StabilityClustering.predict`'s (inlierness = degree in the fuzzy
            kNN graph).

        Returns
        -------
        labels : int array (m,), values in 0..n_clusters_-1 only
        confidence or outlier score : array (m,), when asked

        Examples
        --------
        >>> import numpy as np
        >>> import graphclust as gc
        >>> X, _ = gc.datasets.three_moons(300, random_state=0)
        >>> model = gc.ConsistencyClustering(3, criterion="omega", random_state=0).fit(X)
        >>> new = np.vstack([X[:3] + 0.01, [[20.0, 20.0]]])    # three inliers, one far point
        >>> labels, score = model.predict(new, return_outlier_score=True)
        >>> (score < model.outlier_threshold).tolist()
        [False, False, False, True]

        Notes
        -----
        Fallback: a point whose scores are all 0 (its affinities underflow, or its neighbours
        lie where no seed reaches) takes the label of its nearest training point when that is
        labelled, else cluster 0, with confidence 0.
        """
        if return_confidence and return_outlier_score:
            raise ValueError("ask for one of return_confidence and return_outlier_score, not "
                             "both.")
        if self._stability_fitted():
            if return_confidence:
                raise ValueError(
                    "return_confidence is the margin of the papers' seed scores "
                    "(criterion='omega'); this model was fitted with criterion='stability': "
                    "use return_outlier_score=True (whether x lies where the model has data).")
            shape = np.shape(X)  # named here (the delegate is another class); the delegate
            if len(shape) == 2 and shape[1] != self.n_features_in_:  # checks X itself
                raise ValueError(f"X has {shape[1]} features, but ConsistencyClustering is "
                                 f"expecting {self.n_features_in_} features as input.")
            return self.stability_.predict(X, return_outlier_score=return_outlier_score)
        if (return_outlier_score and self._predict_H is not None
                and getattr(self, "_outlier_r", None) is None):
            raise ValueError(
                "this model file predates outlier scores under criterion='omega' (it lacks "
                "the training points' inlierness reference): refit it to use "
                "return_outlier_score=True.")
        F, nearest, t = self._scores(X, outlier=return_outlier_score)
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
        if return_outlier_score:
            ref = self._outlier_ref
            return labels, np.searchsorted(ref, t, side="right") / ref.size
        return labels
