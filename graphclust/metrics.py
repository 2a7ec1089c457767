"""Clustering quality against ground truth: error rate under the best label matching, NMI."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["clustering_error", "nmi", "contingency"]


def contingency(labels_true, labels_pred):
    """Contingency table (n_true_classes, n_pred_clusters) and the class / cluster values."""
    labels_true = np.asarray(labels_true).ravel()
    labels_pred = np.asarray(labels_pred).ravel()
    if labels_true.shape != labels_pred.shape:
        raise ValueError(
            f"labels_true and labels_pred must have one entry per sample; got "
            f"{labels_true.shape[0]} and {labels_pred.shape[0]}."
        )
    t_vals, t = np.unique(labels_true, return_inverse=True)
    p_vals, p = np.unique(labels_pred, return_inverse=True)
    table = np.zeros((t_vals.size, p_vals.size), dtype=np.int64)
    np.add.at(table, (t, p), 1)
    return table, t_vals, p_vals


def clustering_error(labels_true, labels_pred):
    """Fraction of samples misassigned under the best one-to-one matching of labels (Hungarian).

    With different numbers of classes and clusters, unmatched clusters count entirely as errors.

    Examples
    --------
    >>> clustering_error([0, 0, 1, 1], [1, 1, 0, 0])
    0.0
    >>> clustering_error([0, 0, 1, 1], [0, 0, 0, 1])
    0.25
    """
    table, _, _ = contingency(labels_true, labels_pred)
    rows, cols = linear_sum_assignment(-table)
    return float(1.0 - table[rows, cols].sum() / table.sum())


def nmi(labels_true, labels_pred):
    """Normalised mutual information (arithmetic normalisation, as scikit-learn's default)."""
    from sklearn.metrics import normalized_mutual_info_score

    return float(normalized_mutual_info_score(labels_true, labels_pred))
