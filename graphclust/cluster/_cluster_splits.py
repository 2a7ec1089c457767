"""Each chosen cluster examined by its own scan: a local choice of scale, cluster by cluster.

The scan's tiers choose one walk length for the whole graph, and a chosen cluster can hide
clusters of its own that persist at a shorter walk length. Two kinds do so most plainly:

- A partition into whole connected components is metastable at every walk length (the walk
  never leaves a component), so it outlasts every split inside a component. In Gagolewski's
  battery (sipu/d31: 31 Gaussian blobs in the plane) one blob of 100 points is a component of
  its own, and the fit chose those 2 components (NMI 0.08), where the other 3 000 points
  alone give 30 metastable clusters.
- A cluster that the walk does not leave within the scan's longest walk length is a
  component as far as the scan can tell, with the same effect: in sipu/a2 (35 blobs in the
  plane) the longest window holds 4 groups of touching blobs, escaped after e^11-e^12 steps
  where the scan ends at e^9.4.

So each such cluster C (and every cluster of a metastable choice: below) is scanned on its
own subgraph, as if it were the data, and split when its own metastable partition persists
longer than C whole does (the excess of mass of
HDBSCAN's cluster selection, Campello, Moulavi & Sander 2013, with persistence measured in
log walk length as Markov stability does; Delvenne, Yaliraki & Barahona 2010). C whole
persists from its own relaxation time T_C (the walk has mixed inside it) until the walk
leaves it, log t_esc(C) = log(vol(C) / cut(C)) (to the scan's end for a whole component); a
split of C persists only below T_C, and must outlast C by one step of the scan's grid. For
a whole component (or a cluster the walk leaves only beyond the scan) C's window ends at the
scan's last walk length, an end of the grid and not of C: there the windows tell nothing,
and a split goes on to the density valleys' test below (sipu/a1's three touching blobs, a
component, are left by the walk about as soon as it mixes inside them, as a blob's tiles
are; only their valleys tell them apart). When
C's own scan has no metastable choice but a plateau (touching blobs, which the walk leaves
before it mixes inside them: sipu/a2's component of 17 blobs), the plateau splits C with no
window to compare: its parts have none. Either split's adjacent parts are then joined where
no density valley lies between them along the graph (`_valley_joins`): a walk cuts a
curve at sparse spots that are no valleys, and a moon alone has arcs that outlast it. Each
pair is seen from both its far ends and from the cut between its parts, where a valley that
winds between interlocking shapes shows. The
parts of a split are clusters in turn and are examined the same way.

Which clusters are examined: every cluster of the chosen partition (of two or more consensus
pieces), and the parts of its splits in turn. Inside the scan's horizon the scan has already
compared C whole with its splits at every walk length, but with one walk length for the whole
graph: a group of six touching blobs (900 points) that the walk leaves at e^8.0, within the
scan's e^9.4, holds in its own scan six blobs that outlast it (sipu/a1: 8 -> 13 clusters, NMI
0.731 -> 0.851). A plateau's clusters too: sipu/a3's plateau at tau = 8 holds 38 clusters for
50 blobs, touching blobs joined, that their own scans split (c 38 -> 49, NMI 0.943 -> 0.974;
the fit gives a plateau's cluster that the walk leaves the scan's own fine runs restricted to
it, `StabilityClustering`). There a local choice also splits curves and bands at chance gaps
(a moon of 67 points in three moons of 200, at a sparse spot, into halves that the null model
passes and whose dip has p = 0.02). Each cluster examined is one hypothesis, so the dip
test's level is `DIP_LEVEL` over the number of clusters examined together (Bonferroni), which
keeps that moon whole, and each adjacent pair of a split is tested at that level over the
number of pairs. The fine tier's fallback (the modularity partition, with a warning) is not
examined: nothing there persists.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._dip_test import DIP_LEVEL
from ._leiden import _components
from ._partition_quality import canonical_labels, cut_and_volume
from ._valley_joins import _grouped

__all__ = ["SPLIT_RULES", "outlasts_whole", "scan_horizon", "split_outlasted_clusters"]

#: The tiers whose partition of a cluster's own subgraph splits it (`split_outlasted_clusters`).
SPLIT_RULES = ("metastable", "plateau", "multiscale", "density tree")


def scan_horizon(taus):
    """Log of the scan's last walk-length edge: its last walk length plus half a step of its
    grid (the edge `_longest_window` counts windows to)."""
    taus = np.log(np.asarray(taus, dtype=np.float64))
    step = float(np.mean(np.diff(taus))) if taus.size > 1 else np.log(2)
    return float(taus[-1] + 0.5 * step), step


def outlasts_whole(scan, log_escape=np.inf):
    """Whether a cluster's own metastable choice persists longer than the cluster whole.

    Beyond its relaxation time T_C the walk has mixed inside the cluster, and the cluster
    whole is the optimum (docs/model_selection.md, *Components whose walk has not relaxed*)
    until the walk leaves it: in the scan's currency its window runs from log T_C to
    `log_escape` (log t_esc(C); +inf for a whole component), cut at the scan's last edge.
    The split's window is the metastable tier's (`scan["window"]`, cut at T_C). The scan
    measures windows on its grid of walk lengths (an octave apart by default), so the split
    must outlast the whole by one step of that grid: a smaller difference is not resolved, and
    the cluster stays whole (a moon of two moons alone has a 3-way split that outlasts it by
    0.46, less than log 2; 31 blobs' component by 2.01).
    """
    end, step = scan_horizon(scan["taus"])
    end = min(end, float(log_escape))
    t_rel = scan.get("relaxation_time", np.inf)
    whole = max(0.0, end - np.log(t_rel)) if np.isfinite(t_rel) and t_rel > 0 else 0.0
    window = scan.get("window")
    return window is not None and window >= whole + step


def split_outlasted_clusters(W, labels, pieces, choose):
    """`labels` with each examined cluster split by its own choice, and what was chosen.

    Parameters
    ----------
    W : CSR matrix (n, n), symmetric non-negative (the scan's affinity)
    labels : int array (n,)
        The chosen partition, 0..c-1.
    pieces : int array (n,)
        The scan's consensus pieces: a cluster of a single piece has nothing to split.
    choose : callable
        ``choose(W_sub, members, log_escape, level) -> (sub_labels or None, rule, tau)``: the
        fit's own scan and tiers on a cluster's subgraph, and whether the choice splits it
        (rule in `SPLIT_RULES`); `members` are the cluster's rows of W, in the order of
        W_sub's rows, `log_escape` its log escape time in W (+inf for a whole component) and
        `level` the dip test's level for its split: `DIP_LEVEL` over the number of clusters
        examined in the same round (Bonferroni). Every cluster of two or more pieces is
        examined (a cluster of several components joined by nothing is not), and the parts of
        a split in turn.

    Returns
    -------
    labels : int array (n,)
        `labels` itself when nothing was split, else 0..c'-1 in order of first appearance.
    splits : list of dict
        One per cluster scanned, in the order scanned: ``size``, ``component`` (whether it is
        a whole connected component), ``rule``, ``tau`` and ``c`` (1 when kept whole).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.block_diag([np.ones((3, 3)), np.ones((4, 4))], format="csr")
    >>> def choose(Ws, members, log_escape, level):  # a stand-in: split the 4-node component
    ...     n = members.size
    ...     return (np.arange(n) // 2, "metastable", 8.0) if n == 4 else (None, "none", None)
    >>> labels, splits = split_outlasted_clusters(W, np.repeat([0, 1], [3, 4]),
    ...                                           np.arange(7), choose)
    >>> labels.tolist(), [s["c"] for s in splits]  # the halves examined in turn
    ([0, 0, 0, 1, 1, 2, 2], [1, 2, 1, 1])
    """
    labels = np.asarray(labels, dtype=np.int64)
    pieces = np.asarray(pieces)
    W = sp.csr_matrix(W)
    c = int(labels.max()) + 1
    # one pass over the edges: a cluster with no edge out may hold whole components, and the
    # components are found only when one does (at 10^6 points a components pass took 1.1 s)
    cut, vol = cut_and_volume(W.indptr, W.indices, W.data, labels, c)
    whole = cut <= 1e-12 * vol
    queue = []  # (members, log escape time, whether a whole component)
    if whole.any():
        comp, k = _components(W.indptr, W.indices)
        if k >= 2:
            sizes = np.bincount(labels, minlength=c)
            for members in _grouped(comp, k):
                # a cluster of several components (joined by nothing) is not split here
                if (labels[members].min() == labels[members].max()
                        and sizes[labels[members[0]]] == members.size):
                    queue.append((members, np.inf, True))
    for i, members in enumerate(_grouped(labels, c)):
        if not whole[i]:
            queue.append((members, float(np.log(vol[i] / cut[i])), False))
    out, top, splits = labels.copy(), c, []
    while queue:
        parts = []
        # clusters of a single piece have nothing to split
        queue = [q for q in queue if np.unique(pieces[q[0]]).size >= 2]
        # each cluster examined is one hypothesis (it is one mode): Bonferroni over the
        # clusters examined together keeps the chance that a chance dip splits any of them
        # near `DIP_LEVEL` (three moons of 200 points: a moon of 67 split at p = 0.02)
        level = DIP_LEVEL / max(len(queue), 1)
        for members, log_escape, component in queue:
            sub, rule, tau = choose(W[members][:, members], members, log_escape, level)
            split = sub is not None and rule in SPLIT_RULES and int(np.max(sub)) >= 1
            splits.append({"size": int(members.size), "component": component, "rule": rule,
                           "tau": tau, "c": int(np.max(sub)) + 1 if split else 1})
            if split:
                sub = np.asarray(sub, dtype=np.int64)
                out[members] = top + sub
                parts += [top + j for j in range(int(sub.max()) + 1)]
                top += int(sub.max()) + 1
        # the parts of a split are clusters: examined in turn (one pass over the edges per
        # round)
        queue = []
        if parts:
            cut, vol = cut_and_volume(W.indptr, W.indices, W.data, out, top)
            groups = _grouped(out, top)
            for p in parts:
                esc = np.inf if cut[p] <= 1e-12 * vol[p] else float(np.log(vol[p] / cut[p]))
                queue.append((groups[p], esc, not np.isfinite(esc)))
    split_any = any(s["c"] > 1 for s in splits)
    return (canonical_labels(out) if split_any else labels), splits
