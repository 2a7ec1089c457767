"""A null model for `StabilityClustering`: is the chosen partition more than a tiling?

A kNN graph of points spread uniformly over a region (no cluster structure) still has
partitions of high Markov stability: a geometric graph of low dimension is slow to cross, so
the walk stays in any compact tile for long (a uniform square gives a confident tiling into 4).
The configuration model (degree-preserving rewiring), the null of modularity, does not see this:
it destroys the geometry, and every partition of the data beats it. The null here keeps what
matters, the number of points, the neighbourhood size and the intrinsic dimension, and removes
only the clusters: n0 points uniform in the unit cube of dimension d_hat (the Levina-Bickel
maximum-likelihood estimate from the data's own kNN distances), the same kNN weights and the
same scan *and the same choice of a partition* (the selection's tiers), so that a partition
chosen for its persistence is compared with the partition the same choice makes of
structureless data. The statistic compared is the escape time of the walk from each
cluster, ``t_esc(C) = vol(C) / cut(C)`` (mass-weighted mean of its log): a tile of a
d-dimensional continuum with m points has t_esc ~ m^(1/d) (surface over volume), so the null's
value is moved to the data's cluster sizes by ``log((n / c) / (n0 / c0)) / d_hat`` (c0: the
clusters the choice made of the null sample). Clusters separated by
density valleys are escaped far more slowly than tiles of the same size.

Two references are drawn, uniform and Gaussian (standard normal in d_hat dimensions, the
unimodal null of SigClust, Liu, Hayes, Nobel & Marron 2008), and the data must beat the
stricter: a uniform cube has no density variation, so on small or low-dimensional samples a
single Gaussian blob, whose sparse tails the walk is slow to cross, beats it by chance (a 1-D
blob of 100 points: log escape time 3.68 against the uniform null's 2.57 and the Gaussian's
3.30). Each reference's scan is a pure function of its arguments and is kept for the next
fit (`_NULL_CACHE`): refitting data of the same size and dimension does not pay for it again.

In one dimension the null's value varies between draws of the null sample by more than the
margin it is compared with: 6.26-8.41 in log escape time over three Gaussian draws of 1 000
points (moved to a sample of 3 000), against 0.09-0.11 in two dimensions and 0.01-0.08 above
five. `NULL_DRAWS` null samples per reference are therefore drawn when round(d_hat) = 1 (one
otherwise), and the data must beat every one: a Monte Carlo test (Barnard 1963) whose level,
were the data exchangeable with the null samples, would be 1 / (draws + 1) per reference
before the margin. One draw let 6 of 32 one-dimensional Gaussian samples through
(docs/model_selection.md, *One dimension: the null model's blind spots*). Nine draws let
through the same 2 of 64 as three, and warned on three moons of 200 points (d_hat 1.4), whose
moons a uniform 1-D draw matched (*Chance gaps in one dimension*). The draws are made round by
round and stop once one matches the data (sequential Monte Carlo, Besag & Clifford 1991).
"""

from __future__ import annotations

import threading

import numpy as np
import scipy.sparse as sp

from ._partition_quality import cut_and_volume

__all__ = ["cluster_escapes", "escape_at_size", "escape_of_cuts", "intrinsic_dimension",
           "log_escape_time", "null_escape_time", "null_draws", "null_sample", "NULL_DRAWS",
           "NULL_REFERENCES", "TEST_SEED"]

#: The structureless samples a partition is tested against (`null_escape_time`).
NULL_REFERENCES = ("uniform", "Gaussian")

#: Null samples per reference in one dimension (`null_draws`).
NULL_DRAWS = 3

#: Seed of every test's reference draws (the null model's samples and their scans, the gap
#: test's samples, the dip test's Monte Carlo, the support samples): their critical values
#: are a fixed table, so `random_state`, which seeds the fit's own optimisation (the Leiden
#: runs, the looks), never moves a test's decision (docs/model_selection.md, *The tests'
#: draws as a fixed table*). 0, the seed every table before it was measured with.
TEST_SEED = 0

# (reference, m, d0, n_neighbors, random_state, key) -> ((c0, log escape time) of the partition
# chosen on the null sample or None, [the same for each candidate when it is None]); a few
# entries
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


def null_draws(d_hat):
    """Null samples per reference for data of intrinsic dimension `d_hat`: `NULL_DRAWS` in one
    dimension, where the null's value varies between draws by more than the margin, else 1
    (module docstring)."""
    return NULL_DRAWS if round(float(d_hat)) <= 1 else 1


def log_escape_time(W, labels):
    """Mass-weighted mean over clusters of log(vol(C) / cut(C)) (clusters with no cut skipped);
    None when no cluster has a cut."""
    W = sp.csr_matrix(W)
    labels = np.asarray(labels, dtype=np.int64)
    # one threaded pass; the cut summed directly, not as the volume minus the inside
    return escape_of_cuts(*cut_and_volume(W.indptr, W.indices, W.data, labels,
                                          int(labels.max()) + 1))


def cluster_escapes(cut, vol):
    """Each cluster's log escape time log(vol(C) / cut(C)) from `cut_and_volume`; +inf for a
    cluster with no edge out (cut <= 1e-12 vol)."""
    ok = cut > 1e-12 * vol
    escape = np.full(cut.shape, np.inf)
    escape[ok] = np.log(vol[ok] / cut[ok])
    return escape


def escape_of_cuts(cut, vol):
    """`log_escape_time` from the clusters' cuts and volumes (`cut_and_volume`)."""
    escape = cluster_escapes(cut, vol)
    ok = np.isfinite(escape)
    if not ok.any():
        return None
    return float(vol[ok] / vol[ok].sum() @ escape[ok])


def null_sample(reference, m, d0, random_state=None):
    """`m` structureless points in `d0` dimensions: uniform in the unit cube, or standard
    normal (`NULL_REFERENCES`)."""
    if reference not in NULL_REFERENCES:
        raise ValueError(f"reference must be one of {NULL_REFERENCES}; got {reference!r}.")
    rng = np.random.default_rng(random_state)
    return rng.random((m, d0)) if reference == "uniform" else rng.standard_normal((m, d0))


def null_escape_time(n, d_hat, c, n_neighbors, weights, choose, *, n0=1000,
                     random_state=0, reference="uniform", key=None):
    """The escape statistic of the same pipeline on structureless data of the same dimension.

    Parameters
    ----------
    n : int, points of the data
    d_hat : float, intrinsic dimension (rounded, at least 1)
    c : int, clusters chosen on the data
    n_neighbors : int
    weights : callable (idx, dist) -> sparse W, the data's kNN weights
    choose : callable W -> (labels or None, list of labels)
        The pipeline's scan and choice on the null sample's W: the chosen partition (None when
        the choice makes none, as on high-dimensional noise, whose seeds disagree) and the
        scan's candidates, one per walk length. Without a chosen partition the candidate
        nearest to c is compared.
    n0 : int, size of the null sample (at most n)
    random_state : int, seed of the null sample
    reference : {"uniform", "Gaussian"}
        Points uniform in the unit cube, or standard normal, in round(d_hat) dimensions.
    key : hashable, optional
        Everything else the null's choice depends on (the weights and the scan's settings):
        with it, the chosen partition's escape time is kept for later calls with the same
        arguments.

    Returns
    -------
    (value moved to the data's size, c0 of the null partition compared), or (None, None)
    when the null sample has no partition of 2 or more clusters with a cut

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import fuzzy_affinity_from_lists
    >>> from graphclust.cluster import markov_stability_scan
    >>> w = lambda i, d: fuzzy_affinity_from_lists(i, d)
    >>> def choose(W):
    ...     cands = markov_stability_scan(W, n_seeds=2, random_state=0)["consensus"]
    ...     return cands[3], cands
    >>> v, c0 = null_escape_time(400, 2.0, 4, 10, w, choose, reference="Gaussian")
    >>> bool(c0 >= 2 and v > 0)
    True
    """
    from ..graphs import nearest_neighbors

    if reference not in NULL_REFERENCES:
        raise ValueError(f"reference must be one of {NULL_REFERENCES}; got {reference!r}.")
    d0 = int(max(1, round(d_hat)))
    m = int(min(n, n0))
    # no k-NN lists below k + 1 points; at k + 1 every list holds every other point, as the
    # data's own lists do (11 points, k = 10: a null sample of that size is drawn too)
    if m <= n_neighbors:
        return None, None
    ck = None if key is None else (reference, m, d0, int(n_neighbors), random_state, key)
    found = None if ck is None else _NULL_CACHE.get(ck)  # one read: fits may run in threads
    if found is None:
        X0 = null_sample(reference, m, d0, random_state)
        idx, dist = nearest_neighbors(X0, n_neighbors, method="exact")
        W0 = weights(idx, dist)
        chosen, candidates = choose(W0)
        chosen = _escape(W0, chosen)
        # the candidates are read only when the choice gives nothing to compare
        found = (chosen, [] if chosen is not None else
                 [cv for cv in (_escape(W0, lab) for lab in candidates) if cv is not None])
        if ck is not None:
            with _NULL_CACHE_LOCK:
                if len(_NULL_CACHE) >= _NULL_CACHE_SIZE:
                    _NULL_CACHE.pop(next(iter(_NULL_CACHE)))
                _NULL_CACHE[ck] = found
    chosen, candidates = found
    if chosen is None and not candidates:
        return None, None
    # the chosen partition; failing one, the candidate nearest to c (the first such)
    c0, v = chosen if chosen is not None else min(candidates, key=lambda cv: abs(cv[0] - c))
    return escape_at_size(v, m / c0, n / c, d0), int(c0)


def escape_at_size(log_escape, size, to_size, dimension):
    """A tile's mean log escape time moved from tiles of `size` points to tiles of `to_size`:
    in a d-dimensional continuum t_esc ~ m^(1/d) (surface over volume)."""
    return float(log_escape + np.log(to_size / size) / dimension)


def _escape(W0, labels):
    """(clusters, log escape time) of a partition with 2 or more clusters and a cut, else None."""
    if labels is None or int(np.max(labels)) < 1:
        return None
    v = log_escape_time(W0, labels)
    return None if v is None else (int(np.max(labels)) + 1, v)
