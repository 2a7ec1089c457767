"""Each connected component of the graph clustered by its own scan: component independence.

A partition into whole components is metastable at every walk length (the walk never leaves a
component), so in the scan's tiers it outlasts every split inside a component. One far-off
group of points then hides every cluster of the rest. In Gagolewski's battery (sipu/d31: 31
Gaussian blobs in the plane) one blob of 100 points is a component of its own, and the fit chose
those 2 components (NMI 0.08), where the other 3 000 points alone give 30 metastable clusters
(docs/model_selection.md, *An untuned check on a public battery*). The walk inside a
component does not depend on the other components, and neither should its clusters: each
component that the chosen partition keeps whole is scanned on its own subgraph, and split when
its own tiers find a metastable or persistent partition. The fine tier's fallback (the
modularity partition, with a warning) does not split a component: a component is one cluster
until its own walk shows structure.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._leiden import _components
from ._partition_quality import canonical_labels, cut_and_volume

__all__ = ["SPLIT_RULES", "outlasts_whole", "split_whole_components"]

#: The tiers whose partition of a component splits it (`split_whole_components`).
SPLIT_RULES = ("metastable",)


def outlasts_whole(scan):
    """Whether a component's own metastable choice persists longer than the component whole.

    Beyond its relaxation time T_C the walk has mixed inside the component, and the component
    whole is the optimum (docs/model_selection.md, *Components whose walk has not relaxed*):
    in the scan's currency its window runs from log T_C to the scan's last edge. The split's
    window is the metastable tier's (`scan["window"]`, cut at T_C). The scan measures windows
    on its grid of walk lengths (an octave apart by default), so the split must outlast the
    whole by one step of that grid: a smaller difference is not resolved, and the component
    stays whole (a moon of two moons alone has a 3-way split that outlasts it by 0.46, less
    than log 2; 31 blobs' component by 2.01).
    """
    taus = np.log(np.asarray(scan["taus"], dtype=np.float64))
    step = float(np.mean(np.diff(taus))) if taus.size > 1 else np.log(2)
    end = taus[-1] + 0.5 * step
    t_rel = scan.get("relaxation_time", np.inf)
    whole = max(0.0, end - np.log(t_rel)) if np.isfinite(t_rel) and t_rel > 0 else 0.0
    window = scan.get("window")
    return window is not None and window >= whole + step


def split_whole_components(W, labels, pieces, choose):
    """`labels` with each whole component of W split by its own choice, and what was chosen.

    Parameters
    ----------
    W : CSR matrix (n, n), symmetric non-negative (the scan's affinity)
    labels : int array (n,)
        The chosen partition, 0..c-1.
    pieces : int array (n,)
        The scan's consensus pieces: a component of a single piece has nothing to split.
    choose : callable
        ``choose(W_sub, members) -> (sub_labels or None, rule, tau)``: the fit's own scan and
        tiers on a component's subgraph; `members` are the component's rows of W, in the
        order of W_sub's rows.

    Returns
    -------
    labels : int array (n,)
        `labels` itself when nothing was split, else 0..c'-1 in order of first appearance.
    splits : list of dict
        One per component scanned: ``size``, ``rule``, ``tau`` and ``c`` (1 when kept whole).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.block_diag([np.ones((3, 3)), np.ones((4, 4))], format="csr")
    >>> def choose(Ws, members):  # a stand-in: split the 4-node component in two
    ...     n = members.size
    ...     return (np.arange(n) // 2, "metastable", 8.0) if n == 4 else (None, "none", None)
    >>> labels, splits = split_whole_components(W, np.repeat([0, 1], [3, 4]),
    ...                                         np.arange(7), choose)
    >>> labels.tolist(), [s["c"] for s in splits]
    ([0, 0, 0, 1, 1, 2, 2], [1, 2])
    """
    labels = np.asarray(labels, dtype=np.int64)
    W = sp.csr_matrix(W)
    c = int(labels.max()) + 1
    # only a cluster with no edge out holds whole components: one pass over the edges first,
    # and the components only when one does (at 10^6 points a components pass took 1.1 s
    # with scipy, where the chosen clusters all have edges out)
    cut, vol = cut_and_volume(W.indptr, W.indices, W.data, labels, c)
    if not (cut <= 1e-12 * vol).any():
        return labels, []
    comp, k = _components(W.indptr, W.indices)
    if k < 2:
        return labels, []
    out = labels.copy()
    top = int(labels.max()) + 1
    order = np.argsort(comp, kind="stable")
    bounds = np.searchsorted(comp[order], np.arange(k + 1))
    sizes = np.bincount(labels, minlength=c)
    splits = []
    for ci in range(k):
        members = order[bounds[ci]:bounds[ci + 1]]
        whole = labels[members].min() == labels[members].max()
        # a cluster of several components (joined by nothing) is not split here either
        alone = whole and sizes[labels[members[0]]] == members.size
        if not alone or np.unique(pieces[members]).size < 2:
            continue
        sub, rule, tau = choose(W[members][:, members], members)
        split = sub is not None and rule in SPLIT_RULES and int(np.max(sub)) >= 1
        splits.append({"size": int(members.size), "rule": rule, "tau": tau,
                       "c": int(np.max(sub)) + 1 if split else 1})
        if split:
            out[members] = top + np.asarray(sub, dtype=np.int64)
            top += int(np.max(sub)) + 1
    split_any = any(s["c"] > 1 for s in splits)
    return (canonical_labels(out) if split_any else labels), splits
