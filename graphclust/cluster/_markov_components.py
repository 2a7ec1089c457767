"""Connected components in the Markov-stability choice: relaxation times and whole components.

`relaxation_time`: 1 / (1 - lambda) of the walk on a graph, the slowest relaxation inside any
connected component; with several components, one small solve per component
(`_components_relaxation`, cached on the scan). Where a decision only compares the time with a
threshold, a short Lanczos run that proves it past the threshold stands in for the solve
(`_proved_relaxation`: a Ritz value bounds lambda from below).

`whole_unrelaxed_components`: a connected component C whose own walk has not relaxed by the
scan's last walk length (T_C > tau_max) and whose split is not its bottleneck (T_C >
`BOTTLENECK_RATIO` * T_split, T_split the relaxation time of the walk lumped onto the split) is
made one cluster: the scan cannot judge its split by persistence, and a split that relaxes much
faster than C is the field-of-view cut of a long chain (Schaub, Delvenne, Yaliraki & Barahona
2012), not a metastable set. In the scan (`_whole_unrelaxed_scan`) the test is made once per
component on the consensus pieces, the finest partition the scan has, and applied to every
candidate (section *Components whose walk has not relaxed* of docs/model_selection.md).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels import (DENSE_SPECTRUM_MAX_NODES, arpack_eigsh, normalized_adjacency,
                       top_eigenpairs)
from ._internal_gap import _lanczos_bound
from ._leiden import _components
from ._stability import indicator, variation_of_information

__all__ = ["BOTTLENECK_RATIO", "bottleneck_split", "component_bottleneck", "relaxation_time",
           "whole_unrelaxed_components"]


def relaxation_time(W, *, tol=1e-10, at_least=None):
    """1 / (1 - lambda) for the largest eigenvalue lambda of S = D^-1/2 W D^-1/2 below the
    eigenvalue 1 of each connected component: the walk's slowest relaxation inside a component
    (+inf when every node is its own component).

    `tol` is the eigensolver's: 1 - lambda can be 1e-5, hence the tight default. A caller that
    needs the time to within an octave may pass 1e-4 (on two Gaussians of 50 000 points: 59 370
    steps against 61 827, in a third of the time; the Ritz value is below lambda, so the time
    is under, never over).

    `at_least`: for a caller that only compares the time with this value. When W is connected,
    above the dense solve's size (`DENSE_SPECTRUM_MAX_NODES`), and a short Lanczos run proves
    the time above it (`_proved_relaxation`), that run's lower bound is returned, itself above
    `at_least`; otherwise the time to `tol`.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.ones((4, 4)) - np.eye(4))
    >>> round(relaxation_time(W), 6)   # K4: eigenvalues of S are 1 and -1/3 (x3)
    0.75
    """
    from scipy.sparse.csgraph import connected_components

    S, d = normalized_adjacency(W)
    n = d.size
    k, comp = connected_components(S, directed=False)
    if k >= n or (d <= 0).any():
        return np.inf
    if k == 1 and n > DENSE_SPECTRUM_MAX_NODES:
        proved = _proved_relaxation(S, np.sqrt(d), at_least)
        if proved is not None:
            return proved
    # the components' eigenvectors sqrt(d) (eigenvalue 1) are known: deflate them exactly and
    # ask for one eigenvalue
    Phi = np.zeros((n, k))
    Phi[np.arange(n), comp] = np.sqrt(d)
    Phi /= np.linalg.norm(Phi, axis=0)
    lam = _slowest_eigenvalue(S, Phi, tol, dense_below=DENSE_SPECTRUM_MAX_NODES)
    return 1.0 / (1.0 - lam) if lam < 1.0 - 1e-12 else np.inf


#: ARPACK's Lanczos basis for the one eigenvalue of a relaxation time. The walk's slowest mode
#: lies within 1 / T of the deflated eigenvalue 1 (T up to 10^5 on planar data), and a basis of
#: 40 reaches it in about half the products of scipy's default 20 (a planar component of
#: 88 058 nodes, T = 63 917: 1 861 products against 3 491; docs/battery.md).
RELAXATION_NCV = 40

#: ARPACK restarts for that eigenvalue before `top_eigenpairs`' own choice takes over (from
#: 50 000 nodes on, LOBPCG-AMG, which is the faster one when many eigenvalues crowd below 1).
#: No budget suits every graph: a planar component of 94 036 nodes needs 122 restarts, and at
#: 300 battery sipu/birch1 spends 70 s more on solves that do not converge (docs/battery.md).
RELAXATION_RESTARTS = 100


def _slowest_eigenvalue(S, Phi, tol, *, dense_below=0):
    """The largest eigenvalue of S = D^-1/2 W D^-1/2 off span(Phi): orthonormal columns, each an
    eigenvector of eigenvalue 1 (a component's sqrt(d)), which S - 2 Phi Phi^T sends to -1.

    ARPACK with a basis of `RELAXATION_NCV` vectors for at most `RELAXATION_RESTARTS` restarts,
    then `top_eigenpairs`' automatic choice (also for graphs too small for that basis, and up
    to `dense_below` nodes, where it is the dense spectrum, exact to rounding).
    `top_eigenpairs`' probe gives up on ARPACK when no pair has converged after 25 restarts,
    which suits ten pairs (about 11 products a restart) and not one: on a planar component of
    88 058 nodes it handed over to LOBPCG-AMG, 35-52 s against 14 s here for the same
    eigenvalue to 1e-10 (docs/battery.md).
    """
    import scipy.sparse.linalg as spla

    n, k = Phi.shape
    ncv = RELAXATION_NCV

    def automatic():
        return float(top_eigenpairs(S, 1, tol=tol, deflate=Phi, random_state=0).values[0])

    if n <= dense_below or n - k <= ncv:
        return automatic()
    S = sp.csr_matrix(S)
    Z = sp.csr_matrix(Phi)  # one nonzero per row: O(n) per projection whatever k is
    Zt = Z.T.tocsr()
    op = spla.LinearOperator((n, n), dtype=np.float64,
                             matvec=lambda x: S @ x - 2.0 * (Z @ (Zt @ x)))
    v0 = np.random.default_rng(0).uniform(-1.0, 1.0, size=n)
    v0 -= Z @ (Zt @ v0)
    try:
        return float(arpack_eigsh(op, k=1, which="LA", tol=tol, v0=v0, ncv=ncv,
                                  maxiter=RELAXATION_RESTARTS)[0][0])
    except spla.ArpackNoConvergence:
        return automatic()


#: Lanczos steps spent proving a relaxation time above a caller's threshold before the solve to
#: tolerance (`_proved_relaxation`), and the most memory their kept basis may take: on 10^6
#: nodes 64 steps (ARPACK's basis of `RELAXATION_NCV` vectors there: 320 MB).
RELAXATION_PROOF_STEPS = 300
RELAXATION_PROOF_BYTES = 512 * 2**20


def _proved_relaxation(S, sqrt_d, at_least):
    """A lower bound of 1 / (1 - lambda_2(S)) above `at_least`, or None when none is proved.

    S = D^-1/2 W D^-1/2 of one connected component, `sqrt_d` its eigenvector of eigenvalue 1.
    Every Ritz value theta of a Lanczos run on sqrt_d^perp is a Rayleigh quotient there, so
    theta <= lambda_2 (Courant-Fischer) and 1 / (1 - theta) <= T: once it passes `at_least`,
    the time is proved above it (`_lanczos_bound`, semi-orthogonal, at most
    `RELAXATION_PROOF_STEPS` steps and a basis of `RELAXATION_PROOF_BYTES`). The solve to
    tolerance of a slow walk is the costly one (a planar component of 94 036 nodes, T = 85 489:
    42 s of ARPACK and LOBPCG-AMG), and its slowness is what makes the proof short.
    """
    if at_least is None or not np.isfinite(at_least) or at_least <= 0:
        return None
    below = np.nextafter(1.0 / at_least, 0.0)  # strictly above at_least
    steps = min(RELAXATION_PROOF_STEPS, RELAXATION_PROOF_BYTES // (8 * sqrt_d.size))
    gap, proved = _lanczos_bound(S, sqrt_d, below, steps=steps, give_up=True)
    return 1.0 / max(gap, np.finfo(np.float64).tiny) if proved else None


#: A split of a component is its bottleneck when it relaxes at most this many times faster
#: than the component itself (`whole_unrelaxed_components`).
BOTTLENECK_RATIO = 2.0


def bottleneck_split(Wc):
    """The sweep cut of a connected graph along its walk's slowest mode: 0 / 1 labels, the 1s
    the nodes past the cut of least conductance cut(P) / min(vol(P), vol(rest)) among the
    prefixes of the nodes ordered by D^-1/2 v_2 (v_2 the second eigenvector of
    S = D^-1/2 W D^-1/2). Cheeger's sweep: its conductance is at most sqrt(2 (1 - lambda_2))
    (Chung 1997).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> K = np.ones((5, 5)) - np.eye(5)
    >>> W = sp.block_diag([K, K]).tolil(); W[4, 5] = W[5, 4] = 1  # two cliques, one bridge
    >>> bottleneck_split(W.tocsr()).tolist() in ([0] * 5 + [1] * 5, [1] * 5 + [0] * 5)
    True
    """
    S, d = normalized_adjacency(Wc)
    m = d.size
    sqrt_d = np.sqrt(d)
    phi = (sqrt_d / np.linalg.norm(sqrt_d))[:, None]
    # the top eigenvector (sqrt(d), eigenvalue 1) deflated: the solver's first pair is lambda_2
    v = top_eigenpairs(S, 1, deflate=phi, random_state=0).vectors[:, 0] / sqrt_d
    order = np.argsort(v, kind="stable")
    A = sp.csr_matrix(Wc)[order][:, order]
    vol = np.cumsum(np.asarray(A.sum(axis=1)).ravel())
    upper = sp.triu(A, 1).tocoo()
    # an edge between positions r < c crosses the cuts after r, ..., c - 1
    step = np.zeros(m)
    np.add.at(step, upper.row, upper.data)
    np.add.at(step, upper.col, -upper.data)
    cut = np.cumsum(step)[:-1]
    conductance = cut / np.minimum(vol[:-1], vol[-1] - vol[:-1])
    split = np.zeros(m, dtype=np.int64)
    split[order[int(np.argmin(conductance)) + 1:]] = 1
    return split


def component_bottleneck(Wc):
    """The bottleneck split of a connected component (`bottleneck_split`) when it is one by
    `whole_unrelaxed_components`' reading, the walk lumped onto the two parts relaxing at
    most `BOTTLENECK_RATIO` times faster than the component's own (T_C <= 2 T_split: the
    component's slowest mode is the exchange between the parts, not the field-of-view
    mode of a long chain), else None."""
    split = bottleneck_split(Wc)
    t_c = _component_relaxation(Wc)[0]
    return split if t_c <= BOTTLENECK_RATIO * _lumped_relaxation(Wc, split) else None


def _lumped_relaxation(Wc, labels):
    """1 / (1 - mu): mu the second eigenvalue of the walk lumped onto the clusters `labels`.

    mu is the largest Rayleigh quotient of S_C over the vectors D^1/2 h with h constant on each
    cluster and orthogonal to sqrt(d) (the generalised problem H^T W H x = mu H^T D H x), so
    mu <= lambda_2(S_C) by Courant-Fischer: the split's relaxation time is a lower bound of the
    component's, and equal to it when the component's slowest mode is constant on the clusters.
    """
    _, lab = np.unique(labels, return_inverse=True)
    H = indicator(lab)
    Wl = (H.T @ Wc @ H).toarray()
    isq = 1.0 / np.sqrt(Wl.sum(axis=1))
    ev = np.linalg.eigvalsh(isq[:, None] * Wl * isq[None, :])
    return 1.0 / (1.0 - ev[-2]) if ev[-2] < 1.0 - 1e-12 else np.inf


def _component_relaxation(Wc, at_least=None):
    """(`relaxation_time` of one connected component, whether it is the time to tolerance
    rather than a lower bound above `at_least`, `_proved_relaxation`). Lanczos above 300 nodes
    (a dense eigendecomposition of 1 500 nodes takes 0.8 s, ARPACK 0.1-0.2 s;
    `_slowest_eigenvalue`)."""
    S, d = normalized_adjacency(Wc)
    m = d.size
    if m <= 300:
        return (relaxation_time(Wc) if m > 1 else 0.0), True  # one node: stationary at once
    proved = _proved_relaxation(S, np.sqrt(d), at_least)
    if proved is not None:
        return proved, False
    phi = (np.sqrt(d) / np.linalg.norm(np.sqrt(d)))[:, None]
    lam = _slowest_eigenvalue(S, phi, 1e-10)
    return (1.0 / (1.0 - lam) if lam < 1.0 - 1e-12 else np.inf), True


def _relaxation_of(scan, W, at_least=None):
    """`relaxation_time` of W; with several components, the largest of theirs, from the cache
    that the coarsening of the candidates filled (one small solve per component instead of one
    deflated solve whose top eigenvalues, one per component, crowd below 1: 30 s for 60 blobs
    of 1 000 points, most of it in the LOBPCG-AMG fallback). With `at_least`, a value above it
    may be a lower bound (`relaxation_time`)."""
    found = scan.get("component_relaxation")
    if found is None:
        found = scan["component_relaxation"] = _components_relaxation(W)
    if found is None or (np.asarray(sp.csr_matrix(W).sum(axis=1)) <= 0).any():
        return relaxation_time(W, at_least=at_least)
    comp, t_comp = found
    return max(t_comp(C, at_least) for C in range(int(comp.max()) + 1))


def _make_whole(A, comp, labels, tau_max, t_comp):
    """`labels` of the units of A (points or pieces) with each component that has not relaxed
    by `tau_max` and whose split is not its bottleneck made one cluster; the record per split
    component (C, T_C, T_split or None when C has relaxed, made whole)."""
    _, labels = np.unique(labels, return_inverse=True)
    c = int(labels.max()) + 1
    k = int(comp.max()) + 1
    pairs = np.unique(comp.astype(np.int64) * c + labels)
    new, record = labels.copy(), []
    members = _members(comp, k)
    for C in np.flatnonzero(np.bincount(pairs // c, minlength=k) >= 2):
        units = members(C)
        t_split = _lumped_relaxation(A[units][:, units], labels[units])
        # only a T_C above both tau_max and the bottleneck's bound merges: a proof that it is
        # above both decides as the time itself would
        t_c = t_comp(C, max(tau_max, BOTTLENECK_RATIO * t_split))
        if t_c <= tau_max:  # relaxed inside the scan: its splits are the scan's to judge
            record.append((int(C), float(t_c), None, False))
            continue
        merge = bool(t_c > BOTTLENECK_RATIO * t_split)
        record.append((int(C), float(t_c), float(t_split), merge))
        if merge:
            new[units] = c + C
    return np.unique(new, return_inverse=True)[1], record


def _components_relaxation(W):
    """Connected components of W and t_comp(C, at_least=None), T_C per component solved on
    demand and cached (None when the graph is connected): the time to tolerance, or a lower
    bound above `at_least` (`_component_relaxation`), solved again only for a caller whose
    threshold the cached bound does not pass."""
    W = sp.csr_matrix(W)
    # one union-find pass, scipy's labels (numbered by smallest node) without its transpose
    # of W (1.1 s against 0.1 s at 10^6 nodes)
    comp, k = _components(W.indptr, W.indices)
    if k < 2:
        return None
    cache, members = {}, _members(comp, k)

    def t_comp(C, at_least=None):
        t, exact = cache.get(C, (None, False))
        if t is None or not (exact or (at_least is not None and t > at_least)):
            nodes = members(C)
            t, exact = cache[C] = _component_relaxation(W[nodes][:, nodes], at_least)
        return t

    return comp, t_comp


def _piece_index(pieces):
    """(the first point of each piece, the pieces' sizes) of labels 0..k-1."""
    pieces = np.asarray(pieces)
    return np.unique(pieces, return_index=True)[1], np.bincount(pieces)


def _members(comp, k):
    """members(C): the indices with ``comp == C``, O(|C|) each after one sort."""
    order = np.argsort(comp, kind="stable")
    starts = np.searchsorted(comp[order], np.arange(k + 1))
    return lambda C: order[starts[C]:starts[C + 1]]


def whole_unrelaxed_components(W, labels, tau_max, *, relaxation=None):
    """Make whole every component whose split the scan up to `tau_max` cannot judge.

    Markov stability judges a split of a connected component C only at walk lengths below C's
    own relaxation time T_C = 1 / (1 - lambda_2(S_C)) (`relaxation_time` of C's subgraph): beyond
    it the walk has mixed inside C and the only optimum is C whole (the components partition is
    the scan's limit at tau = infinity, exact at every tau). When T_C > `tau_max` the scan ends
    before C relaxes and the persistence of a split of C is not observed up to where it could
    end. Two cases, told apart by the split's own relaxation time T_split (the walk lumped onto
    the clusters inside C, `_lumped_relaxation`; T_split <= T_C):

    - the split is C's bottleneck (T_C <= `BOTTLENECK_RATIO` * T_split): C's slowest relaxation is
      the walk crossing the split's boundaries, the clusters are metastable sets beyond the
      scan (two blobs joined by a thin bridge): kept;
    - otherwise C's slowest mode varies inside the clusters: the walk leaves them (near their
      boundaries) long before it relaxes in C, as for the pieces of a long homogeneous chain,
      whose optimal pieces at walk length tau have the size the walk covers in tau steps and
      grow until tau ~ T_C (the field-of-view limit of Markov stability; Schaub et al. 2012):
      C is returned whole.

    A connected graph is returned unchanged. `select_partition` makes the same test once per
    component on the scan's consensus pieces (its finest partition: no candidate's split relaxes
    more slowly) and applies it to every candidate before choosing.

    Parameters
    ----------
    W : sparse symmetric non-negative matrix (n, n)
    labels : int array (n,)
    tau_max : float
        The last walk length of the scan.
    relaxation : float, optional
        The walk's relaxation time on W (the largest T_C), when already known: at most
        `tau_max` means no component is unrelaxed and nothing is solved.

    Returns
    -------
    labels : int array (n,), values 0..c'-1 (the input relabelled when nothing changed)
    record : list of (component, T_C, T_split or None, made whole) per component split by
        `labels` (T_split None: the component has relaxed by `tau_max`; T_C a lower bound
        above max(`tau_max`, `BOTTLENECK_RATIO` T_split) where a proof decided)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> path = sp.diags([np.ones(199), np.ones(199)], [-1, 1])   # a chain of 200 nodes
    >>> W = sp.block_diag([path, path]).tocsr()                    # two of them
    >>> labels = np.repeat([0, 1, 2, 3], 100)                      # each chain halved
    >>> new, record = whole_unrelaxed_components(W, labels, tau_max=1000.0)
    >>> np.bincount(new).tolist(), round(record[0][1]), round(record[0][2], 1)
    ([200, 200], 8025, 99.5)
    """
    _, labels = np.unique(np.asarray(labels), return_inverse=True)
    if relaxation is not None and relaxation <= tau_max:
        return labels, []
    found = _components_relaxation(W)
    if found is None:
        return labels, []
    comp, t_comp = found
    return _make_whole(sp.csr_matrix(W), comp, labels, tau_max, t_comp)


def _whole_unrelaxed_scan(scan, W):
    """Apply `whole_unrelaxed_components` to every candidate of the scan, in place, deciding
    once per component on the consensus pieces.

    Every candidate (the consensus per tau, each seed's merge, the polished local optima) is a
    grouping of the consensus pieces. Lumping the walk onto a coarser grouping can only lower
    mu (fewer test vectors in Courant-Fischer), so the split relaxation time of any candidate
    inside a component C is at most T_pieces, that of C's pieces. C is made whole in every
    candidate when T_C > tau_max and T_C > `BOTTLENECK_RATIO` * T_pieces: even the scan's
    finest split of C relaxes more than twice as fast as C, so no candidate splits C at a
    bottleneck and C's slow relaxation is its length (the arm of a spiral). Otherwise C is left
    to the tiers in every candidate. Tested per candidate instead, a coarse candidate that has
    merged away a small, weakly attached group of C fails the test while the pieces pass it:
    letters with its fuzzy weights below 1e-12 removed (its main component: 18 268 points,
    T_C = 17 007, T_pieces / T_C = 0.99) had that component made whole from tau = 1 024 on, and
    the components partition won (c = 25, NMI 0.14 instead of 0.63).

    One eigensolve or proof per component (T_C, cached), one lumped problem per component on
    the pieces. The tiers then choose among the coarsened candidates; the stabilities ``r`` and
    ``consensus_r`` stay those of the scan's merges. Returns the record (component, T_C,
    T_pieces or None when C has relaxed, made whole) of the components the pieces split.
    """
    tau_max = float(np.max(scan["taus"]))
    pieces = np.asarray(scan["pieces"])
    if scan.get("relaxation_time", np.inf) <= tau_max:
        return []
    found = scan.get("component_relaxation")
    if found is None:
        found = scan["component_relaxation"] = _components_relaxation(W)
    if found is None:
        return []
    comp, t_comp = found
    first, sizes = _piece_index(pieces)
    comp_p = comp[first]
    if not np.array_equal(comp_p[pieces], comp):  # a piece across components: leave it all
        return []
    Hp = indicator(pieces)
    Ap = sp.csr_matrix(Hp.T @ sp.csr_matrix(W) @ Hp)
    _, record = _make_whole(Ap, comp_p, np.arange(comp_p.size), tau_max, t_comp)
    whole_comps = [C for C, _, _, merge in record if merge]
    if not whole_comps:
        return record
    members = _members(comp_p, int(comp_p.max()) + 1)

    def whole(g):  # grouping of the pieces -> the same with every whole_comps component one
        g = np.unique(np.asarray(g), return_inverse=True)[1]
        c = int(g.max()) + 1
        for C in whole_comps:
            g[members(C)] = c + C
        return np.unique(g, return_inverse=True)[1]

    for j in range(len(scan["taus"])):
        g = whole(scan["consensus_groups"][j])
        scan["consensus_groups"][j] = g
        scan["consensus"][j] = g[pieces]
        scan["consensus_c"][j] = int(g.max()) + 1
        runs = scan["labels"][j]
        grouped = [whole(r[first]) for r in runs]
        for i, g in enumerate(grouped):
            runs[i] = g[pieces]
            scan["c"][j][i] = int(g.max()) + 1
        # from the groupings of the pieces, weighted by size: the points' VI, bit for bit
        pair = [variation_of_information(grouped[a], grouped[b], weights=sizes)
                for a in range(len(runs)) for b in range(a + 1, len(runs))]
        scan["vi"][j] = float(np.mean(pair)) if pair else 0.0
        scan["candidates"][j] = [(r, whole(g)) for r, g in scan["candidates"][j]]
    return record
