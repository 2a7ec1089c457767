"""The bicriterion of the selection's first tier: each cluster's escape and relaxation times.

A partition is metastable (Kannan, Vempala & Vetta 2004, in log-time form) when every cluster
C that splits a connected component has t_esc(C) > t_mix(C): t_esc(C) = vol(C) / cut(C), the
expected escape time of the walk started in C at stationarity, and t_mix(C) =
1 / (1 - lambda_2(S_C)), the relaxation time of the walk restricted to C (`internal_gap`).
`metastability` gives a partition's Q = sum_C pi(C) log(t_esc(C) / t_mix(C)) / sum_C pi(C) and
its terms; `_decisive_gaps` gives the selection only the gaps that decide its candidates.

A candidate fails with any of its clusters, so the selection bounds each candidate's clusters
smallest first, one per candidate per round, until one is shown to fail (`_decisive_gaps`): on
infinite MNIST at 10^6 points the 9 candidates' 54 clusters (5 000-302 000 points, all but one
failing) took 4.1 s of bounds, their four smallest failing clusters 0.3 s
(docs/scaling.md, *The candidates decided by their smallest failing clusters*).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..threads import run_parallel
from ._internal_gap import internal_gap
from ._partition_quality import cut_and_volume

__all__ = ["metastability"]

#: The gap that a failing candidate's unbounded clusters count with in its Q: 1 - lambda_2 is
#: at most 2 (lambda_2 >= -1), so Q stays an upper bound.
UNBOUNDED_GAP = 2.0


def metastability(W, labels, *, cache=None, key=None, exact=False):
    """Metastability Q of a partition and its per-cluster terms (module docstring, tier 1).

    Parameters
    ----------
    W : sparse symmetric matrix (n, n)
    labels : int array (n,), values 0..c-1
    cache, key : dict and callable, optional
        Reuse the spectral gaps of clusters shared by several candidates (``key(c)`` -> key).
    exact : bool, default False
        Every cluster's gap to tolerance. By default a cluster whose gap a Lanczos bound
        already shows to be at most 1 / t_esc (it fails t_esc > t_mix for certain) keeps
        that upper bound (`internal_gap`): the partition's verdict is the same, its Q (then
        below -1e2 in the selection anyway) an upper bound.

    Returns
    -------
    Q : float
        Mass-weighted mean of log(t_esc / t_mix) over the clusters that split a component;
        +inf when every cluster is a whole component, -inf when a cluster's gap is 0 (a node
        with no edge inside it; a cluster in two disconnected parts, up to rounding).
    terms : list of (pi(C), t_esc(C), 1 - lambda_2(S_C) or None for a whole component)

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X, y = gc.datasets.two_moons(300, random_state=0)
    >>> W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    >>> bool(metastability(W, y)[0] > 0), bool(metastability(W, (X[:, 0] > 0.5) * 1)[0] < 0)
    (True, True)
    """
    W = sp.csr_matrix(W)
    if cache is None or key is None:
        cache = {}  # keys are then the cluster numbers, which mean nothing to another call
    cuts, vols, requests = _gap_requests(W, labels, key)
    _solve_gaps(W, requests.values(), cache, exact)
    return _metastability_terms(cuts, vols, requests, cache)


def _gap_requests(W, labels, key=None):
    """Cuts, volumes, and for each cluster that splits a component: (cache key, its nodes,
    its threshold 1 / t_esc), keyed by cluster. One pass over the edges."""
    labels = np.asarray(labels)
    n_clusters = int(labels.max()) + 1
    # every cluster's volume and cut in one pass over the edges (the cut summed directly, not as
    # volume minus the inside, which cancels for clusters that are nearly whole components)
    cuts, vols = cut_and_volume(W.indptr, W.indices, W.data, labels.astype(np.int64),
                                n_clusters)
    # int16 keys sort by radix, in linear time (the same stable order)
    keys = labels.astype(np.int16) if n_clusters < 2**15 else labels
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_clusters + 1))
    return cuts, vols, {c: (c if key is None else key(c), order[bounds[c]:bounds[c + 1]],
                            cuts[c] / vols[c])
                        for c in range(n_clusters) if cuts[c] > 1e-12 * vols[c]}


def _solve_gaps(W, requests, cache, exact=False, undecided=None):
    """Put in `cache` the gap of every requested cluster (key, nodes, threshold) not in it.

    The gaps are independent solves whose time is in scipy's sparse products and BLAS, outside
    the GIL: one batch over the threads, the largest clusters first. The selection asks for the
    clusters of all its candidates at once, so that one large cluster's solve overlaps the
    others' rather than ending each candidate's batch alone. With a set `undecided`, a cluster
    that the bound does not show to fail is not solved to tolerance: its last bound (above its
    threshold) goes in `cache` and its key in `undecided`.
    """
    todo = {}
    for k, nodes, below in requests:
        if k not in cache and k not in todo:
            todo[k] = (nodes, None if exact else below)
    items = sorted(todo.items(), key=lambda kv: -kv[1][0].size)
    converge = undecided is None
    solved = run_parallel([lambda r=r: internal_gap(W, r[0], below=r[1], converge=converge)
                           for _, r in items])
    for (k, (_, below)), (gap, is_exact) in zip(items, solved):
        cache[k] = gap
        if not converge and not is_exact and gap > below:
            undecided.add(k)


def _metastability_terms(cuts, vols, requests, cache):
    """Q and the per-cluster terms of `metastability` from the cuts, volumes and cached gaps."""
    vol = vols.sum()
    num = den = 0.0
    terms = []
    for c in range(cuts.size):
        volc, cut = vols[c], cuts[c]
        if c not in requests:
            terms.append((volc / vol, np.inf, None))
            continue
        gap = cache[requests[c][0]]
        t_esc = volc / cut
        terms.append((volc / vol, t_esc, gap))
        num += volc / vol * _log_ratio(t_esc, gap)
        den += volc / vol
    return (num / den if den > 0 else np.inf), terms


def _worst(terms):
    """min over split clusters of log(t_esc / t_mix) (+inf when every cluster is a component)."""
    vals = [_log_ratio(t, g) for (_, t, g) in terms if np.isfinite(t)]
    return min(vals) if vals else np.inf


def _log_ratio(t_esc, gap):
    """log(t_esc / t_mix) of a cluster: -inf when its gap is 0 (it fails)."""
    return np.log(t_esc * gap) if gap and gap > 0 else -np.inf


def _decisive_gaps(W, candidates, cache):
    """Put in `cache` the gaps that decide each candidate's verdict, and a bound for the rest.

    `candidates`: (cuts, vols, requests) of each candidate, as `_gap_requests` gives them. A
    candidate fails as soon as one of its clusters fails (log(t_esc / t_mix) <= 0), so its
    clusters are bounded smallest first (`internal_gap` with its threshold, not to
    tolerance), one per undecided candidate per round, a cluster shared by candidates once,
    each round over the threads, until one fails or none is left. A candidate with no failing
    cluster then has the gaps of all its clusters; those its bounds left undecided are solved
    to tolerance. The clusters of failing candidates that were not needed get
    `UNBOUNDED_GAP`: their candidates' Q is an upper bound, its verdict exact.
    """
    queues = [sorted(((vols[c] / cuts[c], r) for c, r in requests.items()),
                     key=lambda item: item[1][1].size) for cuts, vols, requests in candidates]
    undecided, failed = set(), [False] * len(queues)
    while True:
        batch = {}
        for i, queue in enumerate(queues):
            while queue and queue[0][1][0] in cache:
                if _log_ratio(queue[0][0], cache[queue[0][1][0]]) <= 0:
                    failed[i] = True
                    queue.clear()
                else:
                    queue.pop(0)
            if queue:
                batch.setdefault(queue[0][1][0], queue[0][1])
        if not batch:
            break
        _solve_gaps(W, batch.values(), cache, undecided=undecided)
    # every cluster of a candidate with none failing was bounded
    need = {r[0]: r for (_, _, requests), fails in zip(candidates, failed) if not fails
            for r in requests.values() if r[0] in undecided}
    for k in need:
        del cache[k]
    _solve_gaps(W, need.values(), cache, exact=True)
    for _, _, requests in candidates:
        for r in requests.values():
            cache.setdefault(r[0], UNBOUNDED_GAP)
