"""Quality against ground truth: clusterings (error rate under the best label matching, NMI) and
image segmentations (PRI, VoI, covering against human segmentations; the occluder error).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

__all__ = [
    "clustering_error",
    "nmi",
    "contingency",
    "probabilistic_rand_index",
    "variation_of_information",
    "segmentation_covering",
    "occluder_error",
]


def _sparse_contingency(a, b):
    """Contingency table of two flat label arrays (CSR, float counts) and their values."""
    a_vals, ia = np.unique(a, return_inverse=True)
    b_vals, ib = np.unique(b, return_inverse=True)
    table = sp.coo_matrix((np.ones(a.size), (ia, ib)), shape=(a_vals.size, b_vals.size)).tocsr()
    table.sum_duplicates()
    return table, a_vals, b_vals


def contingency(labels_true, labels_pred):
    """Contingency table (n_true_classes, n_pred_clusters) and the class / cluster values."""
    labels_true = np.asarray(labels_true).ravel()
    labels_pred = np.asarray(labels_pred).ravel()
    if labels_true.shape != labels_pred.shape:
        raise ValueError(
            f"labels_true and labels_pred must have one entry per sample; got "
            f"{labels_true.shape[0]} and {labels_pred.shape[0]}."
        )
    table, t_vals, p_vals = _sparse_contingency(labels_true, labels_pred)
    return table.toarray().astype(np.int64), t_vals, p_vals


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


# ------------------------------------------------------------------------- segmentations
def _pair_table(a, b):
    """Sparse contingency table of two segmentations (any shapes with as many pixels)."""
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"segmentations must have the same number of pixels; got {a.size} and {b.size}.")
    if a.size == 0:
        raise ValueError("segmentations are empty.")
    return _sparse_contingency(a, b)[0]


def _as_list(truths):
    if isinstance(truths, np.ndarray) and truths.ndim == 2:
        return [truths]
    truths = list(truths)
    if not truths:
        raise ValueError("give at least one ground-truth segmentation.")
    return truths


def _rand_index(a, b):
    t = _pair_table(a, b)
    n = float(t.sum())
    nij = t.data
    ai = np.asarray(t.sum(axis=1)).ravel()
    bj = np.asarray(t.sum(axis=0)).ravel()
    pairs = n * (n - 1) / 2
    if pairs == 0:
        return 1.0
    same_both = (nij * (nij - 1) / 2).sum()
    same_a = (ai * (ai - 1) / 2).sum()
    same_b = (bj * (bj - 1) / 2).sum()
    disagree = same_a + same_b - 2 * same_both
    return float(1.0 - disagree / pairs)


def probabilistic_rand_index(segmentation, truths):
    """Probabilistic Rand Index: the mean over ground truths of the Rand index.

    RI(S, G) = fraction of pixel pairs on which S and G agree (both same segment, or both
    different); PRI = mean_k RI(S, G_k) (Unnikrishnan et al. 2007), which is the same as the mean
    over pairs of p_ij c_ij + (1 - p_ij)(1 - c_ij) with p_ij the fraction of humans joining i, j.

    Examples
    --------
    >>> from graphclust.metrics import probabilistic_rand_index
    >>> probabilistic_rand_index([[0, 0, 1]], [[[0, 0, 1]], [[0, 1, 1]]])  # pairs: 3/3 and 1/3
    0.6666666666666667
    """
    return float(np.mean([_rand_index(segmentation, g) for g in _as_list(truths)]))


def _voi(a, b):
    t = _pair_table(a, b)
    n = float(t.sum())
    p = t.data / n
    pa = np.asarray(t.sum(axis=1)).ravel() / n
    pb = np.asarray(t.sum(axis=0)).ravel() / n
    ha = -(pa * np.log(pa)).sum()
    hb = -(pb * np.log(pb)).sum()
    coo = t.tocoo()
    mi = (p * np.log(p / (pa[coo.row] * pb[coo.col]))).sum()
    return float(max(ha + hb - 2 * mi, 0.0))


def variation_of_information(segmentation, truths):
    """Variation of Information H(S) + H(G) - 2 I(S; G) (natural log), mean over ground truths.

    Lower is better; 0 for identical partitions.

    Examples
    --------
    >>> from graphclust.metrics import variation_of_information
    >>> round(variation_of_information([[0, 0, 1, 1]], [[0, 0, 0, 0]]), 6)  # H(S) = log 2
    0.693147
    """
    return float(np.mean([_voi(segmentation, g) for g in _as_list(truths)]))


def _covering(seg, truth):
    t = _pair_table(truth, seg).tocoo()  # rows: regions of the ground truth
    n = float(t.data.sum())
    size_t = np.bincount(t.row, weights=t.data)
    size_s = np.bincount(t.col, weights=t.data)
    iou = t.data / (size_t[t.row] + size_s[t.col] - t.data)
    best = np.zeros(size_t.size)
    np.maximum.at(best, t.row, iou)
    return float((size_t * best).sum() / n)


def segmentation_covering(segmentation, truths):
    """Segmentation covering of the ground truth by `segmentation`, mean over ground truths.

    C(S -> G) = (1/N) sum_{R in G} |R| max_{R' in S} |R & R'| / |R | R'| (Arbelaez et al. 2011):
    each human region is matched with its best-overlapping segment. Higher is better, 1 at
    equality.

    Examples
    --------
    >>> from graphclust.metrics import segmentation_covering
    >>> segmentation_covering([[0, 0, 1, 1]], [[0, 0, 0, 1]])  # (3 * 2/3 + 1 * 1/2) / 4
    0.625
    """
    return float(np.mean([_covering(segmentation, g) for g in _as_list(truths)]))


def occluder_error(labels, mask):
    """Mismatched occluder area of a segmentation, as a fraction of the occluder's area.

    The segments with more than half of their pixels on the occluder form the estimated occluder
    O'; the error is |O' xor O| / |O| (0: the occluder is exactly a union of segments; 1: e.g.
    no segment is mostly occluder). This is our reading of the paper's "clustering error
    (mismatched occluder area)" for K = 5 clusters, where the background may take several.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.metrics import occluder_error
    >>> mask = np.array([[0, 1, 1, 0]], bool)
    >>> occluder_error(np.array([[0, 1, 1, 2]]), mask), occluder_error(np.array([[0, 0, 1, 1]]), mask)
    (0.0, 1.0)
    """
    labels = np.asarray(labels)
    mask = np.asarray(mask, dtype=bool)
    if labels.shape != mask.shape:
        raise ValueError(f"labels and mask must have the same shape; got {labels.shape} and {mask.shape}.")
    if not mask.any():
        raise ValueError("mask has no occluder pixel.")
    _, inv = np.unique(labels.ravel(), return_inverse=True)
    inside = np.bincount(inv, weights=mask.ravel().astype(float))
    total = np.bincount(inv)
    chosen = inside > total / 2
    est = chosen[inv].reshape(mask.shape)
    return float((est ^ mask).sum() / mask.sum())
