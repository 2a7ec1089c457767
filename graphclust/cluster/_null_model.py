"""A null model for `StabilityClustering`: is the chosen partition more than a tiling?

A kNN graph of points spread uniformly over a region (no cluster structure) still has
partitions of high Markov stability: a geometric graph of low dimension is slow to cross, so
the walk stays in any compact tile for long (a uniform square gives a confident tiling into 4).
The configuration model (degree-preserving rewiring), the null of modularity, does not see this:
it destroys the geometry, and every partition of the data beats it. The null here keeps what
matters, the number of points, the neighbourhood size and the intrinsic dimension, and removes
only the clusters: n0 points uniform in the unit cube of dimension d_hat (the Levina-Bickel
maximum-likelihood estimate from the data's own kNN distances), the same kNN weights and the
same scan and choice. The statistic compared is the escape time of the walk from each
cluster, ``t_esc(C) = vol(C) / cut(C)`` (mass-weighted mean of its log): a tile of a
d-dimensional continuum with m points has t_esc ~ m^(1/d) (surface over volume), so the null's
value is moved to the data's cluster sizes by ``log((n / c) / (n0 / c0)) / d_hat`` (c0: the
clusters of the null's candidate nearest to c). Clusters separated by
density valleys are escaped far more slowly than tiles of the same size.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._partition_quality import cut_and_volume

__all__ = ["intrinsic_dimension", "log_escape_time", "null_escape_time"]


def intrinsic_dimension(dist):
    """Levina-Bickel maximum-likelihood intrinsic dimension from kNN distance lists.

    ``m_i = ((k - 1) / sum_{j<k} log(T_k / T_j))`` per point, averaged as MacKay & Ghahramani
    advise (the mean of 1 / m_i, inverted). Zero distances (duplicates) are skipped.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import nearest_neighbors
    >>> X = np.random.default_rng(0).random((2000, 3))
    >>> round(intrinsic_dimension(nearest_neighbors(X, 10)[1]))
    3
    """
    D = np.sort(np.asarray(dist, dtype=np.float64), axis=1)
    far = D[:, -1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(far / D[:, :-1])
    ok = (D[:, :-1] > 0) & np.isfinite(logs)
    cnt = ok.sum(axis=1)
    rows = cnt >= 2
    if not rows.any():
        return 1.0
    inv = np.where(ok, logs, 0.0).sum(axis=1)[rows] / cnt[rows]
    inv = inv[inv > 0]
    if inv.size == 0:
        return 1.0
    return float(1.0 / inv.mean())


def log_escape_time(W, labels):
    """Mass-weighted mean over clusters of log(vol(C) / cut(C)) (clusters with no cut skipped);
    None when no cluster has a cut."""
    W = sp.csr_matrix(W)
    labels = np.asarray(labels, dtype=np.int64)
    # one threaded pass; the cut summed directly, not as the volume minus the inside
    cut, vol = cut_and_volume(W.indptr, W.indices, W.data, labels, int(labels.max()) + 1)
    ok = cut > 1e-12 * vol
    if not ok.any():
        return None
    w = vol[ok] / vol[ok].sum()
    return float(w @ np.log(vol[ok] / cut[ok]))


def null_escape_time(n, d_hat, c, n_neighbors, weights, scan_and_choose, *, n0=1000,
                     random_state=0):
    """The escape statistic of the same pipeline on uniform data with the same dimension.

    Parameters
    ----------
    n : int, points of the data
    d_hat : float, intrinsic dimension (rounded, at least 1)
    c : int, clusters chosen on the data
    n_neighbors : int
    weights : callable (idx, dist) -> sparse W, the data's kNN weights
    scan_and_choose : callable W -> list of candidate labels (one per walk length)
    n0 : int, size of the null sample (at most n)

    Returns
    -------
    (value moved to the data's size, c of the null candidate compared) or (None, None)
    """
    from ..graphs import nearest_neighbors

    d0 = int(max(1, round(d_hat)))
    m = int(min(n, n0))
    if m <= n_neighbors + 1:
        return None, None
    X0 = np.random.default_rng(random_state).random((m, d0))
    idx, dist = nearest_neighbors(X0, n_neighbors, method="exact")
    W0 = weights(idx, dist)
    cands = scan_and_choose(W0)
    cs = np.array([int(lab.max()) + 1 for lab in cands])
    ok = np.flatnonzero(cs >= 2)
    if ok.size == 0:
        return None, None
    j = ok[np.argmin(np.abs(cs[ok] - c))]
    v = log_escape_time(W0, cands[j])
    if v is None:
        return None, None
    # a tile of m points of a d-dimensional continuum: t_esc ~ m^(1/d)
    return v + np.log((n / c) / (m / cs[j])) / d0, int(cs[j])
