"""Adjacent clusters joined until the walk mixes inside each of every adjacent pair before it
crosses between them.

Why the walk that sees density needs it. Weighted by density (`_density_walk`), the walk's
metastable sets are the basins of the density: its escape time from a basin grows like
(rho_mode / rho_saddle)^2 while its mixing time inside stays that of the basin's shape (Nadler,
Lafon, Coifman & Kevrekidis 2006). A region of even density has no basins, and a long one (a
sparse ring around a dense disk: the outside collection's disk-4000n) is still cut by the
scan's plateau tier into sectors, which Markov stability at a walk length shorter than the
ring's mixing time prefers to the whole ring (its field of view: Schaub, Delvenne, Yaliraki &
Barahona 2012). What tells the sectors from basins is the definition of metastability that the
metastable tier already reads (Kannan, Vempala & Vetta): inside the union of two adjacent
sectors the walk mixes no faster than it crosses between them, while inside the union of two
basins it mixes in each long before it crosses. Measured on the density walk's clusters
(docs/battery.md, *Built: the density walk's clusters must be basins*): disk-4000n's disk
against each sector Q = 1.8 to 3.3 (the mass-weighted mean of log(t_esc / t_mix) of the pair's
split), its sectors' adjacent pairs -1.07 to 0.01; two unit Gaussians 3 deviations apart 0.89;
battery engytime 0.47, flame 1.08, s4's pairs 4.8 to 11.2. Joining the least metastable pair
while one has Q <= 0, with its neighbours' pairs measured again (the union of two sectors is a
longer arc: it mixes more slowly still, so the ring joins whole), leaves disk-4000n's disk and
ring (NMI 0.44 -> 1.00) and every other pair above untouched.

Time scales alone join long basins too: two worms that touch along a sparse seam mix along
themselves more slowly than the walk crosses the seam (battery worms_2: Q <= 0 for 17 of the
62 adjacent pairs of its 25 worms' clusters, which joined into 6, NMI 0.655 -> 0.436). What a
basin has and a sector of an even ring has not is a valley: the density falls from the lesser
of the pair's peaks to the highest pass between them, the persistence that ToMATo reads
(Chazal, Guibas, Oudot & Skraba 2013). A pair whose valley is `BASIN_MIN_DEPTH` deep (an
e-fold) stays apart whatever its Q (`valley_depths`).

A short stretch of even density mixes before it is left (a 10-node path: Q = 0.14; quarters of
a 400-point strip: -0.76 to 0.36 by draw), so the test judges clusters of the scan's chosen
partitions, not the fine tier's small tiles (joining those was tried: docs/battery.md).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._metastability import metastability
from ._partition_quality import adjacent_pairs, canonical_labels

__all__ = ["BASIN_MIN_DEPTH", "join_transient_pairs", "valley_depths"]

#: A pair whose density falls between them by at least this much in log (an e-fold below the
#: lesser of their two peaks) is two basins, and stays apart whatever its shape. On the walk
#: that sees density, escape from a basin is slowed by (rho_mode / rho_saddle)^2 (Nadler et
#: al. 2006), here e^2 at least; a long basin still mixes slower than that (battery worms_2:
#: touching worms at depths 1.13-2.08 with Q <= 0), while the pairs that it joins on the
#: development data are 0.93 deep at most (scikit-learn's moons and circles 0.75, the other
#: battery sets 0.93, the sectors of the outside disk-4000n's ring 0.78):
#: docs/model_selection.md, *Long basins of the density*.
BASIN_MIN_DEPTH = 1.0


def valley_depths(W, labels, log_density):
    """Each adjacent pair's valley: how far the density falls from the lesser of the two
    clusters' peaks to the highest pass between them, in log.

    Parameters
    ----------
    W : sparse matrix (n, n)
        Symmetric non-negative weights.
    labels : int array (n,)
        Clusters 0 .. c - 1.
    log_density : array (n,)
        A density estimate's log (`log_density`).

    Returns
    -------
    peaks : array (c,)
        Each cluster's highest smoothed log density.
    passes : dict
        ``(i, j) -> h`` for every pair i < j that shares an edge: the highest of
        ``min(f_u, f_v)`` over its edges (u in i, v in j). The depth of the pair's valley is
        ``min(peaks[i], peaks[j]) - h``, as in the persistence of a density's modes (Chazal,
        Guibas, Oudot & Skraba 2013, ToMATo). f is the estimate averaged over each point and
        its neighbours in W, so that a point's own noise (about 1 / sqrt(k) in log for a k-NN
        estimate) makes neither a peak nor a pass.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(4), np.ones(4)], [-1, 1], shape=(5, 5)).tocsr()  # a path
    >>> peaks, passes = valley_depths(W, np.array([0, 0, 0, 1, 1]), np.array([3.0, 3, 0, 3, 3]))
    >>> peaks.tolist(), passes
    ([3.0, 3.0], {(0, 1): 2.0})
    """
    W = sp.csr_matrix(W)
    labels = np.asarray(labels)
    A = W.copy()
    A.data = np.ones_like(A.data)
    count = np.asarray(A.sum(axis=1)).ravel()
    lp = np.asarray(log_density, dtype=np.float64)
    f = (A @ lp + lp) / (count + 1.0)
    peaks = np.full(int(labels.max()) + 1, -np.inf)
    np.maximum.at(peaks, labels, f)
    C = W.tocoo()  # every stored entry an edge, as `adjacent_pairs` counts them
    a, b = labels[C.row], labels[C.col]
    cross = a < b
    c = peaks.size
    key = a[cross].astype(np.int64) * c + b[cross]
    h = np.minimum(f[C.row[cross]], f[C.col[cross]])
    order = np.argsort(key, kind="stable")
    key, h = key[order], h[order]
    if not key.size:
        return peaks, {}
    start = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    top = np.maximum.reduceat(h, start)
    return peaks, {(int(k // c), int(k % c)): float(v) for k, v in zip(key[start], top)}


def join_transient_pairs(W, labels, log_density=None):
    """Join adjacent clusters, the least metastable pair first, until every adjacent pair's
    split is metastable or a valley of the density.

    Parameters
    ----------
    W : sparse matrix (n, n)
        Symmetric non-negative weights with no isolated node.
    labels : int array (n,)
        Clusters 0 .. c - 1.
    log_density : array (n,) or None
        The density estimate's log (`log_density`). When given, a pair whose valley
        (`valley_depths`) is at least `BASIN_MIN_DEPTH` deep stays apart: two basins.

    Returns
    -------
    labels : int array (n,)
        Clusters renumbered 0 .. c' - 1 in order of their smallest node, c' <= c. Two clusters
        that share an edge stay apart when the split of their union into the two, as a
        partition of the union's own subgraph, is metastable: Q > 0, Q the mass-weighted mean
        of log(t_esc / t_mix) over the two (`metastability`, every gap to tolerance), or when
        the density falls between them by `BASIN_MIN_DEPTH` or more. While a pair has Q <= 0
        and a shallower valley, the pair of smallest Q joins (ties: the pair of smallest
        numbers), and the pairs of the joined cluster are measured again (its peak is the
        higher of the two, its pass to a third cluster the higher of theirs). A pair whose Q
        is -inf (a cluster in parts that share no edge inside the union) says nothing about
        their boundary and is not joined. Cost: one gap per cluster of every pair measured.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(400, 2)) * [8.0, 1.0]   # a strip of even density, in quarters
    >>> quarters = np.minimum(X[:, 0] // 2, 3).astype(int)
    >>> W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    >>> np.bincount(join_transient_pairs(W, quarters)).tolist()
    [400]
    """
    W = sp.csr_matrix(W)
    labels = canonical_labels(labels)  # j joins i < j: a cluster keeps its smallest number
    adjacent = {tuple(p) for p in adjacent_pairs(W, labels).tolist()}
    if log_density is None:
        peaks, passes = None, {}
    else:
        peaks, passes = valley_depths(W, labels, log_density)
    q = {}

    def basins(p):
        return peaks is not None and min(peaks[p[0]], peaks[p[1]]) - passes[p] >= BASIN_MIN_DEPTH

    while True:
        for i, j in adjacent - q.keys():
            nodes = np.flatnonzero((labels == i) | (labels == j))
            q[i, j] = float(metastability(W[nodes][:, nodes], (labels[nodes] == j) * 1,
                                          exact=True)[0])
        open_pairs = [(q[p], p) for p in adjacent
                      if np.isfinite(q[p]) and q[p] <= 0 and not basins(p)]
        if not open_pairs:
            return canonical_labels(labels)
        i, j = min(open_pairs)[1]
        labels[labels == j] = i
        # the pairs of i and j become pairs of i, measured again
        moved = {p for p in adjacent if i in p or j in p}
        others = {a if b in (i, j) else b for a, b in moved} - {i, j}
        adjacent = (adjacent - moved) | {(min(i, o), max(i, o)) for o in others}
        q = {p: v for p, v in q.items() if p not in moved}
        if peaks is not None:
            peaks[i] = max(peaks[i], peaks[j])
            for o in others:  # the joined cluster's pass to o: the higher of the two
                key = (min(i, o), max(i, o))
                passes[key] = max(passes.get(key, -np.inf),
                                  passes.get((min(j, o), max(j, o)), -np.inf))
