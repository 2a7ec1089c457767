"""Clusters metastable at walk lengths of their own: a partition across the scan's scales.

Markov stability chooses one walk length for every cluster. When the clusters live at very
different scales, no single walk length has them all: a planar blob of thousands of points
mixes only beyond the scan's last walk length, while the small blobs that touch it are left
by the walk long before. Every candidate then cuts the large blob into pieces that the walk
leaves before they mix, no candidate is metastable, and the tiers end in the fine tier, although
the small blobs are metastable sets at every walk length of the scan (the field-of-view limit
of a single time scale; Schaub, Delvenne, Yaliraki & Barahona 2012).

`metastable_clusters` collects every cluster of the scan's consensus partitions, at any walk
length, that is a metastable set of its own (Kannan, Vempala & Vetta 2004: the walk mixes
inside it, t_mix = 1 / (1 - lambda_2(S_C)), at least `margin` in log-time before it leaves,
t_esc = vol(C) / cut(C)), holds at least `min_size` points and is a cluster of the scan at two
or more walk lengths (an octave, the plateau tier's unit of persistence). The most persistent
(then the most metastable) are kept while disjoint, as HDBSCAN keeps the most stable clusters of
its hierarchy. What they leave is the rest of the partition (`StabilityClustering`'s fine-tier
look, `FineTierLooks._local_choice`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._metastability import _solve_gaps
from ._partition_quality import cut_and_volume
from ._stability import indicator

__all__ = ["LOCAL_MARGIN", "metastable_clusters"]

#: A cluster's walk must mix this much (log-time: one step of the scan, a factor 2) before it
#: leaves it: inside its own walk lengths, it is a metastable set (Bovier, Eckhoff, Gayrard &
#: Klein 2002).
LOCAL_MARGIN = float(np.log(2.0))


def metastable_clusters(W, pieces, groupings, *, min_size, margin=LOCAL_MARGIN, min_taus=2):
    """Disjoint clusters of the scan, each metastable at walk lengths of its own.

    Parameters
    ----------
    W : sparse symmetric non-negative matrix (n, n)
    pieces : int array (n,)
        The scan's consensus pieces, 0..P-1.
    groupings : sequence of int arrays (P,)
        Per walk length, the consensus partition as a grouping of the pieces.
    min_size : int
        Fewest points of a cluster kept.
    margin : float
        Least log(t_esc / t_mix) of a cluster kept (a whole component: +inf).
    min_taus : int
        Fewest walk lengths at which the cluster is one of the scan's.

    Returns
    -------
    labels : int array (n,)
        0..s-1 for the s clusters kept, -1 for every other point.
    kept : list of (size, number of walk lengths, log(t_esc / t_mix)) per cluster kept.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> A = sp.random(60, 60, density=0.5, random_state=0)
    >>> W = sp.block_diag([A + A.T, A + A.T]).tolil()
    >>> W[0, 60] = W[60, 0] = 0.01                             # two dense halves, one weak edge
    >>> pieces = np.repeat(np.arange(6), 20)
    >>> groupings = [np.arange(6), np.repeat([0, 1], 3), np.repeat([0, 1], 3)]
    >>> labels, kept = metastable_clusters(W.tocsr(), pieces, groupings, min_size=30)
    >>> np.bincount(labels).tolist(), [k[:2] for k in kept]
    ([60, 60], [(60, 2), (60, 2)])
    """
    W = sp.csr_matrix(W)
    pieces = np.asarray(pieces, dtype=np.int64)
    P = int(pieces.max()) + 1
    size_p = np.bincount(pieces, minlength=P)
    Hp = indicator(pieces, P)
    Ap = sp.csr_matrix(Hp.T @ W @ Hp)  # the flows between pieces; their cut is W's
    seen = {}  # cluster (its pieces) -> number of walk lengths
    for g in groupings:
        g = np.asarray(g, dtype=np.int64)
        order = np.argsort(g, kind="stable")
        bounds = np.searchsorted(g[order], np.arange(int(g.max()) + 2))
        for c in range(bounds.size - 1):
            members = tuple(order[bounds[c]:bounds[c + 1]].tolist())
            if size_p[list(members)].sum() >= min_size:
                seen[members] = seen.get(members, 0) + 1
    cands = [m for m, t in seen.items() if t >= min_taus]
    if not cands:
        return np.full(pieces.size, -1, dtype=np.int64), []
    scores = _log_kvv(W, Ap, pieces, cands, margin)
    ranked = sorted((m for m, s in zip(cands, scores) if s >= margin),
                    key=lambda m: (-seen[m], -scores[cands.index(m)], m))
    taken = np.zeros(P, dtype=bool)
    piece_label = np.full(P, -1, dtype=np.int64)
    kept = []
    for m in ranked:
        idx = np.asarray(m)
        if taken[idx].any():
            continue
        taken[idx] = True
        piece_label[idx] = len(kept)
        kept.append((int(size_p[idx].sum()), int(seen[m]), float(scores[cands.index(m)])))
    return piece_label[pieces], kept


def _log_kvv(W, Ap, pieces, cands, margin):
    """log(t_esc * gap) per candidate cluster (a tuple of pieces): +inf for a whole component,
    a value below `margin` (an upper bound) as soon as its gap is shown too small."""
    P = Ap.shape[0]
    g = np.full(P, -1, dtype=np.int64)
    out = np.empty(len(cands))
    jobs = []
    order = np.argsort(pieces, kind="stable")  # each piece's points, without a pass over n
    bounds = np.searchsorted(pieces[order], np.arange(P + 1))
    for i, m in enumerate(cands):
        g[:] = 0
        g[list(m)] = 1
        cut, vol = cut_and_volume(Ap.indptr, Ap.indices, Ap.data, g, 2)
        if cut[1] <= 1e-12 * vol[1]:
            out[i] = np.inf
            continue
        t_esc = vol[1] / cut[1]
        nodes = np.sort(np.concatenate([order[bounds[p]:bounds[p + 1]] for p in m]))
        jobs.append((i, nodes, t_esc))
    # the metastable tier's batch of gap solves, each only as far as the margin needs: below
    # exp(margin) / t_esc the cluster fails for certain
    gaps = {}
    _solve_gaps(W, [(i, nodes, np.exp(margin) / t_esc) for i, nodes, t_esc in jobs], gaps)
    for i, _, t_esc in jobs:
        out[i] = np.log(t_esc * gaps[i]) if gaps[i] > 0 else -np.inf
    return out
