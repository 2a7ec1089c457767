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

Two references are drawn, uniform and Gaussian (standard normal in d_hat dimensions, the
unimodal null of SigClust, Liu, Hayes, Nobel & Marron 2008), and the data must beat the
stricter: a uniform cube has no density variation, so on small or low-dimensional samples a
single Gaussian blob, whose sparse tails the walk is slow to cross, beats it by chance (a 1-D
blob of 100 points: log escape time 3.68 against the uniform null's 2.57 and the Gaussian's
3.30). Each reference's scan is a pure function of its arguments and is kept for the next
fit (`_NULL_CACHE`): refitting data of the same size and dimension does not pay for it again.
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from ._partition_quality import cut_and_volume

__all__ = ["intrinsic_dimension", "log_escape_time", "null_escape_time", "NULL_REFERENCES"]

#: The structureless samples a partition is tested against (`null_escape_time`).
NULL_REFERENCES = ("uniform", "Gaussian")

# (reference, m, d0, n_neighbors, random_state, key) -> [(c, log escape time)] of the null's
# candidates; a few entries (each is a handful of numbers)
_NULL_CACHE = {}
_NULL_CACHE_SIZE = 64
_NULL_CACHE_LOCK = threading.Lock()  # fits may run in threads


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
                     random_state=0, reference="uniform", key=None):
    """The escape statistic of the same pipeline on structureless data of the same dimension.

    Parameters
    ----------
    n : int, points of the data
    d_hat : float, intrinsic dimension (rounded, at least 1)
    c : int, clusters chosen on the data
    n_neighbors : int
    weights : callable (idx, dist) -> sparse W, the data's kNN weights
    scan_and_choose : callable W -> list of candidate labels (one per walk length)
    n0 : int, size of the null sample (at most n)
    random_state : int, seed of the null sample
    reference : {"uniform", "Gaussian"}
        Points uniform in the unit cube, or standard normal, in round(d_hat) dimensions.
    key : hashable, optional
        Everything else the null's candidates depend on (the weights and the scan's settings):
        with it, the candidates' escape times are kept for later calls with the same arguments.

    Returns
    -------
    (value moved to the data's size, c of the null candidate compared) or (None, None)

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import fuzzy_affinity_from_lists
    >>> from graphclust.cluster import markov_stability_scan
    >>> w = lambda i, d: fuzzy_affinity_from_lists(i, d)
    >>> scan = lambda W: markov_stability_scan(W, n_seeds=2, random_state=0)["consensus"]
    >>> v, c0 = null_escape_time(400, 2.0, 4, 10, w, scan, reference="Gaussian")
    >>> bool(c0 >= 2 and v > 0)
    True
    """
    from ..graphs import nearest_neighbors

    if reference not in NULL_REFERENCES:
        raise ValueError(f"reference must be one of {NULL_REFERENCES}; got {reference!r}.")
    d0 = int(max(1, round(d_hat)))
    m = int(min(n, n0))
    if m <= n_neighbors + 1:
        return None, None
    ck = None if key is None else (reference, m, d0, int(n_neighbors), random_state, key)
    found = _NULL_CACHE.get(ck) if ck is not None else None
    if found is None:
        rng = np.random.default_rng(random_state)
        X0 = rng.random((m, d0)) if reference == "uniform" else rng.standard_normal((m, d0))
        idx, dist = nearest_neighbors(X0, n_neighbors, method="exact")
        W0 = weights(idx, dist)
        found = []
        for lab in scan_and_choose(W0):
            c0 = int(lab.max()) + 1
            v = log_escape_time(W0, lab) if c0 >= 2 else None
            if v is not None:
                found.append((c0, v))
        if ck is not None:
            with _NULL_CACHE_LOCK:
                if len(_NULL_CACHE) >= _NULL_CACHE_SIZE:
                    _NULL_CACHE.pop(next(iter(_NULL_CACHE)))
                _NULL_CACHE[ck] = found
    if not found:
        return None, None
    # the candidate nearest to c (the first such walk length)
    c0, v = min(found, key=lambda cv: abs(cv[0] - c))
    # a tile of m points of a d-dimensional continuum: t_esc ~ m^(1/d)
    return float(v + np.log((n / c) / (m / c0)) / d0), int(c0)
