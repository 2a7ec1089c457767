"""The scale scan of Markov stability and the three-tier choice of a partition.

`markov_stability_scan`: `n_seeds` fine Leiden partitions (modularity at resolution 1, the Markov
stability of the one-step walk), their consensus (`consensus_pieces`: the points every run puts
together), merged by the exact Markov-stability gains of the resolvent walk at mean walk
lengths tau = 2^0 .. 2^13 (alpha = tau / (1 + tau)); the flows of every tau come from one
multi-shift solve on the pieces (`resolvent_flows`), and every run's own partition, a union of
pieces, is merged from the same flows. Per tau the partition kept is the one of largest
stability among the polished candidates (`_best_groupings`). This gives a hierarchy of
candidate partitions, coarser as tau grows, that no single Leiden run decides.

`select_partition` chooses among them in three tiers:

1. **metastable**: among the candidates whose *every* cluster that splits a connected
   component has t_esc > t_mix (the bicriterion of Kannan, Vempala & Vetta 2004 in log-time
   form; t_esc(C) = vol(C) / cut(C) is the expected escape time of the walk started in C at
   stationarity, t_mix(C) = 1 / (1 - lambda_2(S_C)) the relaxation time of the walk restricted
   to C), the one that persists over the longest window of log tau (Delvenne, Yaliraki &
   Barahona 2010: a relevant partition is optimal over a long range of Markov times), ties
   going to the largest metastability ``Q = sum_C pi(C) log(t_esc(C) / t_mix(C)) / sum_C pi(C)``
   (over the split clusters; +inf for a partition made only of whole components). A window is
   counted only up to the walk's relaxation time t_rel = 1 / (1 - lambda) (lambda: the largest
   eigenvalue of S below the components' 1s): at tau >= t_rel even the slowest mode is damped
   by half, the optimum is the asymptotic partition of the slowest modes (the Fiedler split
   when the graph is connected; Lambiotte, Delvenne & Barahona 2014), present for any graph and
   persisting to tau = infinity, so its persistence there is no evidence. A partition of whole
   components is exact at every tau and is counted to the end of the scan, unless one of its
   components is two metastable sets split at its bottleneck (`_bottleneck_components`): then
   it is whole past t_rel only as every partition is, and is compared with the candidates that
   split those components and nothing else.
   The gaps come from `internal_gap` (module `_internal_gap`): a few Lanczos steps bound a
   failing cluster's gap under 1 / t_esc. A candidate fails with any of its clusters, so its
   clusters are bounded smallest first until one fails, and only the candidates with no
   failing cluster have every gap solved to tolerance (`_metastability._decisive_gaps`).
2. **plateau**: when no candidate is metastable (real classes such as digits, whose walk leaves
   a class before it mixes within it), the finest tau whose partitions merged the fine ones for
   every seed, agree across seeds and persist over an octave: its score (mean normalised VI of
   the runs' merges to the consensus + VI of the consensus to the next octave's) is at most
   `plateau_vi` and a local minimum along the scan, to within `DIP_TOLERANCE` (the scores'
   seed noise). A robust scale is a dip of the variation of information across optimisations
   and across scales (Schindler, Clarke & Barahona 2023, PyGenStability's optimal scales),
   not only a low value: a tau on the way down to a clearly deeper dip is part of a
   transition, and the ends of the scan, whose one side is unseen, are no dips (with fewer
   than three scored walk lengths the threshold alone decides). And the partition must hold
   the walk for that long: the mass-weighted mean of log t_esc(C) over its clusters is at least
   log tau (the walk's horizon). Clusters that a walk of mean length tau leaves before it ends
   are not an optimum *at* that time scale, however robust their merge history; on letters
   and 20 newsgroups every plateau fails this test, the tier passes to the fine partition.
3. **fine**: otherwise the modularity partition itself (the caller warns; when its seeds
   disagree, the caller returns one cluster).

Before the tiers, a connected component that the scan cannot judge is made whole in every
candidate (`whole_unrelaxed_components`, module `_markov_components`): when the graph has two
or more components, a component C whose own relaxation time T_C exceeds the scan's last walk
length, and which even the scan's finest split (the consensus pieces) divides into parts that
relax more than twice as fast as C (so no candidate splits C at a bottleneck), becomes one
cluster of every candidate. A candidate made only of whole components is metastable with
Q = +inf (first tier).
"""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from .._validation import check_random_state
from ..kernels import symmetric_permutation
from ..threads import get_num_threads
from ._consensus import consensus_pieces
from ._leiden import optimise_steps
from ._markov_components import (BOTTLENECK_RATIO, _piece_index, _relaxation_of,
                                 _whole_unrelaxed_scan, component_bottleneck, relaxation_time,
                                 whole_unrelaxed_components)
from ._metastability import (_decisive_gaps, _gap_requests, _metastability_terms, _worst,
                             metastability)
from ._null_model import log_escape_time
from ._partition_quality import adjacency_arrays, canonical_labels
from ._stability import (coarse_stability, indicator, lanczos_flows, make_kernel,
                         merge_by_stability, resolvent_flows, variation_of_information)

__all__ = ["BOTTLENECK_RATIO", "DEFAULT_TAUS", "DIP_TOLERANCE", "chosen_labels",
           "markov_stability_scan",
           "metastability", "plateau_scores", "relaxation_time", "select_partition",
           "whole_unrelaxed_components"]

#: Graphs with at least this many nodes run the fine Leiden partitions in reverse Cuthill-McKee
#: order with blocked visits, and the flows in that order (`markov_stability_scan`).
LOCAL_ORDER_MIN_NODES = 100_000

#: Graphs of at most this many nodes take the flows from a dense eigenbasis (exact) by default;
#: larger ones from block Gauss quadrature (`markov_stability_scan`'s `eigenbasis_nodes`). 0:
#: quadrature at every size. The eigenbasis, O(n^3), was the default up to 1 500 nodes; a
#: cluster's own scan there spent most of a fit in it (chameleon t5: 11.4 of 24 s, 70 dense
#: eigendecompositions) for the same partitions on every development and battery set
#: (docs/battery.md, *Built: every scan's flows by quadrature*). It stays the reference.
EIGENBASIS_MAX_NODES = 0

#: The scan's quadrature tolerance (`lanczos_flows`' rtol: flows to rtol^2 of their largest
#: entry): 1e-3, chosen on the development sets for large graphs, and 1e-4 on graphs of at
#: most `FINE_QUADRATURE_MAX_NODES` nodes, whose flows came from an exact eigenbasis before:
#: at 1e-3 a structureless swiss roll's support test met a near-tie the eigenbasis had not
#: (c = 3 warned -> 2 silent), at 1e-4 the same partitions as the eigenbasis.
QUADRATURE_RTOL, FINE_QUADRATURE_RTOL, FINE_QUADRATURE_MAX_NODES = 1e-3, 1e-4, 1500

#: Mean walk lengths scanned: 2^0 .. 2^13, one per octave.
DEFAULT_TAUS = 2.0 ** np.arange(0, 14)


def _fine_partitions(indptr, indices, data, seeds, resolution, n_iterations=2, visit="random"):
    """One Leiden partition per seed, `n_iterations` iterations each, the runs over the threads.

    Two iterations: a run to stability (about 6x the time on MNIST) differs by a few boundary
    points, which the consensus absorbs anyway. The runs advance level by level
    (`optimise_steps`), and a free thread takes the waiting run that has had the least time so
    far: three runs then fill two cores to within a level's time. In whole iterations (the
    first about 70 % of a run) the third run's two iterations were left to one core at the end
    (docs/scaling.md). Each run keeps its own random stream, so its labels are those of one
    ``optimise_partition(..., n_iterations=2, random_state=seed, visit=visit)`` call whatever
    the schedule.
    """
    runs = [optimise_steps(indptr, indices, data, resolution=resolution,
                           n_iterations=n_iterations, random_state=check_random_state(int(s)),
                           visit=visit) for s in seeds]
    labels = [None] * len(runs)
    spent = [0.0] * len(runs)

    def advance(i):
        t = time.perf_counter()
        try:
            next(runs[i])
            out = None
        except StopIteration as done:
            out = done.value
        return i, time.perf_counter() - t, out

    threads = max(1, min(len(runs), get_num_threads()))
    waiting, pending = set(range(len(runs))), set()
    with ThreadPoolExecutor(threads) as pool:
        while waiting or pending:
            while waiting and len(pending) < threads:
                i = min(waiting, key=lambda r: (spent[r], r))
                waiting.remove(i)
                pending.add(pool.submit(advance, i))
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                i, dt, out = f.result()
                spent[i] += dt
                if out is None:
                    waiting.add(i)
                else:
                    labels[i] = out
    return labels


def markov_stability_scan(W, *, taus=None, n_seeds=3, resolution=1.0, random_state=0,
                          kernel=None, progress=None, min_piece=None, fine=None, quadrature=None,
                          keep_quadrature=False, eigenbasis_nodes=None):
    """Candidate partitions: the consensus of `n_seeds` fine Leiden partitions merged per tau.

    The fine partitions are intersected (`consensus_pieces`: the points every run puts
    together; pieces under `min_piece` points are absorbed), the flows of the resolvent walk
    between those pieces are computed once for every tau (one multi-shift solve), and at each
    tau the pieces are merged by the exact Markov-stability gains: the *consensus* hierarchy,
    which no single Leiden run decides. Each run's own fine partition is a union of pieces, so
    its merge at every tau comes from the same flows at no extra solve: their disagreement
    (``vi``) is what the plateau tier measures.

    On graphs of at least `LOCAL_ORDER_MIN_NODES` nodes the runs work in reverse Cuthill-McKee
    numbering and visit the nodes by shuffled blocks of consecutive numbers (``visit="blocks"``
    of `optimise_partition`): the same algorithm with a cache-friendly random order, a third
    faster per run at 10^6 nodes (docs/scaling.md). Smaller graphs keep Leiden's uniform order.

    Parameters
    ----------
    W : sparse symmetric non-negative matrix (n, n)
    taus : sequence of float > 0, default `DEFAULT_TAUS` (sorted, duplicates dropped)
    n_seeds : int
    resolution : float
        Of the fine Leiden partitions.
    random_state : int or None
        Seeds of the Leiden runs (drawn from ``default_rng(random_state)``) and of the kernel's
        eigensolver.
    kernel : ConsistencyKernel, optional
        Of W (any alpha): the flows from its eigenbasis. Built here only for a graph of at
        most `eigenbasis_nodes` nodes or when the quadrature breaks down.
    min_piece : int, optional
        Pieces of the consensus smaller than this are absorbed; default ``max(2, n // 500)``.
    fine : list of int arrays (n,), optional
        The fine partitions of an earlier scan of W (its ``fine``): a scan of other walk lengths
        reuses them instead of running Leiden again (`n_seeds` and `resolution` are then
        theirs).
    quadrature : KrylovFlows, optional
        An earlier scan's ``quadrature`` of the same W, with its `fine`: when its pieces are
        this scan's, the flows come from its block Lanczos recurrence if that has converged
        at these walk lengths (`KrylovFlows.flows`: the Krylov space does not depend on them)
        or can be taken that far, else from a run of their own.
    keep_quadrature : bool
        Return the flows' block Lanczos run as ``quadrature`` (with its last two n x b blocks,
        for a later scan of longer walks); None otherwise, and after a moments run.
    eigenbasis_nodes : int, optional
        Without `kernel`, a graph of at most this many nodes takes the flows from a dense
        eigenbasis (exact: the reference); a larger one from block Gauss quadrature
        (`lanczos_flows`, to `QUADRATURE_RTOL`, or `FINE_QUADRATURE_RTOL` on graphs of at
        most `FINE_QUADRATURE_MAX_NODES` nodes), which falls back on the eigenbasis if it
        breaks down. Default `EIGENBASIS_MAX_NODES` (0: quadrature at every size).

    Returns
    -------
    dict with ``taus``, ``alphas``, ``fine`` (fine labels per seed), ``pieces`` (consensus fine
    labels), ``groups`` and ``labels`` (per tau, per seed: fine cluster -> merged cluster, point
    -> merged cluster), ``c`` and ``r`` (arrays (n_taus, n_seeds): clusters and Markov
    stability), ``vi`` (mean pairwise normalised VI across seeds per tau), ``consensus`` (per
    tau: point -> merged cluster), ``consensus_groups`` (piece -> merged cluster),
    ``consensus_c``, ``consensus_r``, ``kernel``, ``flows`` (per tau: the pieces' flow matrix G,
    normalised by the volume) and ``piece_mass`` (the pieces' stationary masses),
    ``quadrature`` (the flows' `KrylovFlows`, or None), ``timings``.
    """
    # ascending and distinct: the plateau tier reads "the next octave" and the first tier the
    # window in log tau from the order of the walk lengths
    taus = DEFAULT_TAUS if taus is None else np.unique(np.asarray(taus, float).ravel())
    alphas = taus / (1 + taus)
    say = progress or (lambda msg: None)
    n = W.shape[0]
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    seeds = rng.integers(2**31 - 1, size=n_seeds)
    # on a large graph the fine runs and the flows work on W in reverse Cuthill-McKee order, where
    # a node's neighbours have close numbers: the runs visit nodes by shuffled blocks of
    # consecutive numbers (`optimise_partition`'s visit="blocks") and the block products of the
    # flows read neighbouring rows. Below LOCAL_ORDER_MIN_NODES the graph stays in cache and the
    # runs keep Leiden's uniform order (the development sets' choices were made with it; on
    # 20 newsgroups the blocked order gave the fine partition for 4 of 10 seeds, against 8 of 10:
    # docs/scaling.md)
    local = n >= LOCAL_ORDER_MIN_NODES
    Wc = sp.csr_matrix(W)
    if local:
        order = reverse_cuthill_mckee(Wc, symmetric_mode=True)
        Wc = symmetric_permutation(Wc, order)
    if fine is None:
        # the permuted Wc is this function's own matrix: checked and used in place (no second
        # copy of the edges); otherwise Wc shares W's arrays, which are the caller's
        indptr, indices, data, _ = adjacency_arrays(Wc, name="W", copy=not local)
        fine = _fine_partitions(indptr, indices, data, seeds, resolution,
                                visit="blocks" if local else "random")
        del indptr, indices, data
        if local:
            back = np.empty_like(order)
            back[order] = np.arange(n)
            fine = [canonical_labels(f[back]) for f in fine]
    else:
        fine = [canonical_labels(np.asarray(f, dtype=np.int64)) for f in fine]
        n_seeds = len(fine)
    min_piece = max(2, n // 500) if min_piece is None else int(min_piece)
    pieces = consensus_pieces(W, fine, min_piece)
    t_fine = time.perf_counter() - t0
    say(f"{n_seeds} fine Leiden partitions: {[int(f.max()) + 1 for f in fine]} clusters, "
        f"{int(pieces.max()) + 1} consensus pieces")
    t0 = time.perf_counter()
    d = np.asarray(W.sum(axis=1)).ravel()
    vol = d.sum()
    b = int(pieces.max()) + 1
    flows, kept, K0, t_basis = None, None, kernel, 0.0
    if eigenbasis_nodes is None:
        eigenbasis_nodes = EIGENBASIS_MAX_NODES
    if kernel is None and n > eigenbasis_nodes:  # no eigenbasis: block Lanczos quadrature
        # the pieces' indicators scaled by sqrt(d), sparse: the flows make them dense once, in
        # their own order (no n x b indicator block)
        B = sp.csr_matrix((np.sqrt(d), pieces, np.arange(n + 1)), shape=(n, b))
        # an isolated node's row of B is 0, so it carries no flow: the linked nodes' flows are
        # exact (with it, `lanczos_flows` would give up for an eigenbasis: 200 s at 94 000)
        linked = d > 0
        Wf, Bf = (W, B) if linked.all() else (sp.csr_matrix(W)[linked][:, linked], B[linked])

        def run_flows(**kw):  # (flows, the kept run or None)
            got = lanczos_flows(Wf, Bf, alphas, keep=keep_quadrature, rtol=(
                FINE_QUADRATURE_RTOL if n <= FINE_QUADRATURE_MAX_NODES else QUADRATURE_RTOL), **kw)
            return got if keep_quadrature else (got, None)

        if (quadrature is not None and quadrature.pieces is not None
                and np.array_equal(quadrature.pieces, pieces)):
            flows, kept = quadrature.flows(alphas), quadrature
        if flows is None and local:
            # on a large graph the flows run piece by piece (RCM order within a piece): most
            # edges join nodes of one piece, so the block product reads neighbouring rows
            # within the piece's rows, where RCM alone leaves a kNN graph's neighbours far
            # apart (docs/scaling.md)
            del Wc
            by_piece = order[np.argsort(pieces[order], kind="stable")]
            flows, kept = run_flows(order=(np.cumsum(linked) - 1)[by_piece[linked[by_piece]]])
        elif flows is None:
            flows, kept = run_flows()
        kept = kept if keep_quadrature else None  # a reused run's blocks stay its caller's
        if kept is not None and kept.pieces is None:
            kept.pieces = pieces
    if flows is None:
        t1 = time.perf_counter()
        K0 = make_kernel(W, int(seeds[0])) if kernel is None else kernel
        t_basis = time.perf_counter() - t1
        d = K0.degrees
        vol = d.sum()
        flows = resolvent_flows(K0, np.sqrt(d)[:, None] * indicator(pieces, b, dense=True),
                                alphas)
    t_flow = time.perf_counter() - t0 - t_basis
    say(f"flows of {b} pieces at {len(alphas)} walk lengths")
    t0 = time.perf_counter()
    p_piece = np.bincount(pieces, weights=d, minlength=b) / vol
    # each run's fine partition as a union of pieces (majority of each piece)
    maps = []
    for f in fine:
        nf = int(f.max()) + 1
        M = np.bincount(pieces * nf + f, minlength=b * nf).reshape(b, nf)
        _, m = np.unique(np.argmax(M, axis=1), return_inverse=True)
        maps.append(m)
    Gs = []
    for Gall in flows:
        G = Gall / vol
        Gs.append(0.5 * (G + G.T))
    groups, labels, cs, rs, vis = [], [], [], [], []
    sizes = np.bincount(pieces)
    for G in Gs:
        grow, row, crow, rrow = [], [], [], []
        for m in maps:
            A = indicator(m, dense=True)
            Gi, pi = A.T @ G @ A, A.T @ p_piece
            gi = merge_by_stability(Gi, pi)
            grow.append(gi)
            row.append(gi[m][pieces])
            crow.append(int(gi.max()) + 1)
            rrow.append(coarse_stability(Gi, pi, gi))
        groups.append(grow)
        labels.append(row)
        cs.append(crow)
        rs.append(rrow)
        # the runs' VI from their groupings of the pieces (the same number as on the points)
        pair = [variation_of_information(grow[i][maps[i]], grow[j][maps[j]], weights=sizes)
                for i in range(n_seeds) for j in range(i + 1, n_seeds)]
        vis.append(float(np.mean(pair)) if pair else 0.0)
    cons_g, found = _best_groupings(Gs, p_piece, [[gi[m] for gi, m in zip(grow, maps)]
                                                  for grow in groups])
    cons_r = [coarse_stability(G, p_piece, g) for G, g in zip(Gs, cons_g)]
    return {"taus": taus, "alphas": alphas, "fine": fine, "pieces": pieces, "groups": groups,
            "labels": labels, "c": np.array(cs), "r": np.array(rs), "vi": np.array(vis),
            "consensus": [g[pieces] for g in cons_g], "consensus_groups": cons_g,
            "consensus_c": np.array([int(g.max()) + 1 for g in cons_g]),
            "consensus_r": np.array(cons_r), "candidates": found, "kernel": K0,
            "flows": Gs, "piece_mass": p_piece, "quadrature": kept,
            "timings": {"fine": t_fine, "basis": t_basis, "flows": t_flow,
                        "merge": time.perf_counter() - t0}}


def _best_groupings(Gs, p, run_groups):
    """Per tau, the grouping of the pieces of largest Markov stability among the candidates.

    Candidates at tau_j: the greedy merge of the pieces, each run's merge (as a grouping of
    pieces), and the chosen groupings of the neighbouring walk lengths; each is polished at
    tau_j (`merge_by_stability` from it: positive merges, then single-piece moves) and the one of
    largest stability kept; two sweeps (finer to coarser, back). The greedy merge alone leaves
    near-ties to the order of its merges; the best of these local optima does not depend on
    which fine partition a run started from.
    """
    T = len(Gs)
    best, best_r = [None] * T, [-np.inf] * T
    found = [{} for _ in range(T)]

    def offer(j, g):
        g = merge_by_stability(Gs[j], p, initial=g)
        r = coarse_stability(Gs[j], p, g)
        found[j][tuple(g)] = r
        if r > best_r[j] + 1e-13:
            best[j], best_r[j] = g, r

    for j in range(T):
        offer(j, None)
        for g in run_groups[j]:
            offer(j, g)
    for order in (range(1, T), range(T - 2, -1, -1)):
        for j in order:
            nb = j - 1 if order.step > 0 else j + 1
            offer(j, best[nb])
    return best, [[(r, np.array(g)) for g, r in f.items()] for f in found]


#: Partitions whose Markov stability is within this fraction of the best are a near-tie.
NEAR_TIE = 1e-3


def _coarsest_near_tie(scan, j):
    """Point labels of the coarsest candidate at tau_j within `NEAR_TIE` of the best stability.

    A choice between partitions whose stabilities differ by less than the optimiser's own
    variation is decided by which pieces the runs happened to produce; among such near-ties
    the one of fewest clusters (then largest stability) is taken, the one-standard-error rule
    of model selection (Breiman et al. 1984) with the simplest model preferred.
    """
    cands = scan["candidates"][j]
    top = max(r for r, _ in cands)
    tol = NEAR_TIE * abs(top)
    close = [(int(g.max()) + 1, -r, i) for i, (r, g) in enumerate(cands) if r >= top - tol]
    _, _, i = min(close)
    return cands[i][1][scan["pieces"]]


def _longest_window(scan, W, groups, table):
    """Index of the KVV-qualified candidate persisting over the longest window of log tau.

    Each walk length stands for the interval between the geometric midpoints to its
    neighbours (the ends mirror their one neighbour's spacing); a run of equal groupings covers
    the union of its points' intervals, cut at the relaxation time (`relaxation_time`) unless
    every cluster is a whole component. Ties (to 1e-9) go to the larger metastability Q. When
    such a partition of whole components wins and some of its components are two metastable
    sets (`_bottleneck_components`), it is compared again, its window cut like any other's,
    with the candidates that split nothing but those components (`_splits_only`).
    """
    taus = np.log(np.asarray(scan["taus"], dtype=np.float64))
    m = taus.size
    if m == 1:
        edges = np.array([taus[0] - 0.5 * np.log(2), taus[0] + 0.5 * np.log(2)])
    else:
        mid = 0.5 * (taus[1:] + taus[:-1])
        edges = np.concatenate([[2 * taus[0] - mid[0]], mid, [2 * taus[-1] - mid[-1]]])
    t_rel = scan.get("relaxation_time")
    if t_rel is None:
        # windows end at the last edge (`outlasts_whole`'s, with the grid's mean step, at or
        # before it): a time proved past that edge cuts nothing, whatever its value
        reach = taus[-1] + (0.5 * np.max(np.diff(taus)) if m > 1 else 0.5 * np.log(2))
        t_rel = scan["relaxation_time"] = _relaxation_of(scan, W, at_least=np.exp(reach))
    top = np.log(t_rel) if np.isfinite(t_rel) else np.inf
    runs, j = [], 0  # (first, last) index of each run of equal groupings, qualified ones
    while j < m:
        k = j
        while k + 1 < m and np.array_equal(groups[k + 1], groups[j]):
            k += 1
        if table[j][1] >= 2 and table[j][2] > -1e2:
            runs.append((j, k))
        j = k + 1

    def longest(runs, whole=True):
        best, best_key = None, None
        for j, k in runs:
            q = table[j][2]
            hi = edges[k + 1] if q == np.inf and whole else min(edges[k + 1], top)
            key = (round(float(hi - edges[j]), 9), q)
            if hi > edges[j] and (best_key is None or key > best_key):
                best, best_key = j, key
        return best, best_key

    best, best_key = longest(runs)
    if best is not None and table[best][2] == np.inf:
        inside = _bottleneck_components(scan, W, groups, table, best)
        rivals = [(j, k) for j, k in runs
                  if j != best and _splits_only(groups[j], groups[best], inside)] if inside else []
        if rivals:  # the components, their window cut, against splits of their own
            cut = longest([r for r in runs if r[0] == best], whole=False)
            rival = longest(rivals, whole=False)
            if rival[0] is not None and (cut[0] is None or rival[1] > cut[1]):
                best, best_key = rival
    if best is None:  # every qualified run lies beyond the relaxation time
        best = max((r for r in table if r[2] > -1e2 and r[1] >= 2), key=lambda r: r[2])[0]
    scan["window"] = None if best_key is None else float(best_key[0])
    return best


def _splits_only(g, whole, inside):
    """Whether grouping `g` of the pieces is `whole` (a grouping into whole components) with
    only the components in `inside` split: every cluster of g lies in one component, and every
    other component is one cluster of g."""
    pairs = np.unique(np.stack([g, whole]), axis=1)
    if pairs.shape[1] != np.unique(g).size:
        return False
    outside = ~np.isin(whole, inside)
    return np.unique(np.stack([g[outside], whole[outside]]), axis=1).shape[1] == np.unique(
        whole[outside]).size


def _bottleneck_components(scan, W, groups, table, j):
    """The clusters of candidate j, every one a whole component, that are two metastable sets:
    split at its bottleneck (`component_bottleneck`: the slowest mode of its walk is the
    exchange between the parts) into parts that each mix before the walk leaves them (KVV, as
    the first tier asks of every candidate's clusters). Only components that another qualified
    candidate splits are read: none else could be chosen apart. Such a component is whole past
    the walk's relaxation time only as every partition's slowest modes are (`_longest_window`):
    three moons of 150 points, one alone and two touching, chose the two components (c = 2)
    over the three moons, whose window the relaxation time had cut; and it is compared only
    with splits of its own (a mixture of curves and blobs went to a candidate that also cut a
    curve: docs/model_selection.md, *Built: a component that is two metastable sets* and
    *Built: whole components give way only to splits of their own bottlenecks*)."""
    pieces = scan["pieces"]
    labels = groups[j][pieces]
    others = [groups[i][pieces] for i, c, q in table
              if c >= 2 and q > -1e2 and not np.array_equal(groups[i], groups[j])]
    inside = []
    for C in range(int(labels.max()) + 1):
        nodes = np.flatnonzero(labels == C)
        if nodes.size < 4 or not any(np.unique(o[nodes]).size > 1 for o in others):
            continue
        Wc = W[nodes][:, nodes]
        split = component_bottleneck(Wc)
        if split is not None and _worst(metastability(Wc, split)[1]) > 0:
            inside.append(C)
    return inside


#: Plateau scores closer than this are not told apart by `_is_dip`: the seed-to-seed standard
#: deviation of a score at MNIST's and pendigits' plateaus (median over their walk lengths 0.0019
#: and 0.0013, five random states; docs/model_selection.md).
DIP_TOLERANCE = 0.002


def _is_dip(score, j, tol=DIP_TOLERANCE):
    """Whether ``score[j]`` is a local minimum of the plateau scores, to within `tol`.

    The scores' ends have one neighbour only, so they are never dips; a scan of fewer than three
    scored walk lengths has no interior and every index passes (the threshold alone decides).
    On pendigits the threshold alone stopped at tau = 8 or at tau = 1 on the way down to the dip
    at tau = 32 for four random states of five (c = 17 or 28; at the dip c = 12-13 for all five).
    Without the tolerance the 10^6-point benchmark went from tau = 8 (score 0.0108, c = 11,
    NMI 0.923) down a slope of scores 0.0098 and 0.0096 to tau = 64 (c = 8, NMI 0.883):
    docs/model_selection.md.
    """
    m = len(score)
    if m < 3:
        return True
    return 0 < j < m - 1 and score[j] <= min(score[j - 1], score[j + 1]) + tol


def select_partition(scan, W, *, seed=None, plateau_vi=0.02, coarsen=True):
    """Choose a partition of the consensus hierarchy: metastable, else persistent, else fine.

    With the consensus (``seed=None``), the candidates are first coarsened by
    `whole_unrelaxed_components` (when the graph has several components): a component that has
    not relaxed by the scan's last walk length, and that not even the consensus pieces split
    at a bottleneck, is made whole in every candidate; a candidate of whole components is then
    metastable with Q = +inf and competes by its window like any other.

    Parameters
    ----------
    scan : dict from `markov_stability_scan` (its candidates coarsened in place; gains the keys
        ``q_table``, ``vi_next``, ``score``, ``chosen_seed``, ``fine_vi``, ``components``)
    W : sparse matrix, the affinity of the scan
    seed : int, optional
        Read this seed's hierarchy instead of the consensus (the research's rule; no
        coarsening).
    plateau_vi : float
        Threshold of the plateau tier: the largest score a dip (a local minimum of the scores
        along the scan) may have.
    coarsen : bool, default True
        Make unrelaxed components whole in every candidate first (with ``seed=None``); False
        reads the scan's hierarchy as it is.

    Returns
    -------
    j : int or None
        Index of the chosen tau (None: no candidate with 2 or more clusters).
    rule : {"metastable", "plateau", "fine", "none"}
    """
    scan.pop("chosen", None)
    if coarsen and seed is None and "components" not in scan:
        scan["components"] = _whole_unrelaxed_scan(scan, W)
    return _select_tier(scan, W, seed, plateau_vi)


def chosen_labels(scan, j, rule, fine_vi_max):
    """Point labels of the choice ``(j, rule)`` that `select_partition` made of `scan` (the
    plateau tier's own labels, else the consensus at tau_j); None when the caller returns one
    cluster: nothing was chosen, or the fine tier's seeds disagree beyond `fine_vi_max`."""
    if j is None or (rule == "fine" and scan["fine_vi"] > fine_vi_max):
        return None
    return np.asarray(scan["chosen"] if rule == "plateau" and "chosen" in scan
                      else scan["consensus"][j])


def plateau_scores(scan, points=None):
    """The plateau tier's score of each walk length but the last: the mean VI of the seeds'
    partitions to the candidate (`points`, per walk length; default the consensus) plus the
    VI of the candidate to the next octave's, both normalised and weighted by the pieces'
    sizes. Stored in the scan as "spread", "vi_next" and "score"."""
    points = scan["consensus"] if points is None else points
    n_taus = len(scan["taus"])
    # every candidate is a grouping of the pieces: their VI from the pieces, weighted by size
    # (the same numbers as on the points, in time proportional to the pieces)
    first, sizes = _piece_index(scan["pieces"])
    points = [p[first] for p in points]
    runs = [[scan["labels"][j][i][first] for i in range(len(scan["fine"]))]
            for j in range(n_taus)]
    nxt = np.array([variation_of_information(points[j], points[j + 1], weights=sizes)
                    for j in range(n_taus - 1)])
    spread = np.array([np.mean([variation_of_information(points[j], r, weights=sizes)
                                for r in runs[j]]) for j in range(n_taus)])
    scan["vi_next"] = nxt.tolist()
    scan["spread"] = spread.tolist()
    score = spread[:-1] + nxt
    scan["score"] = score.tolist()
    return score


def _select_tier(scan, W, seed, plateau_vi):
    """The three tiers of `select_partition` (index of the tau, rule)."""
    n_taus = len(scan["taus"])
    if seed is None:
        groups = list(scan["consensus_groups"])
        points = list(scan["consensus"])
    else:
        groups = [scan["groups"][j][seed] for j in range(n_taus)]
        points = [scan["labels"][j][seed] for j in range(n_taus)]
    # the clusters of every candidate (a cluster is its set of pieces), their gaps in one batch
    W = sp.csr_matrix(W)
    parts = {}
    for j, g in enumerate(groups):
        keyp = tuple(g)
        if keyp not in parts and int(g.max()) >= 1:
            members = [tuple(np.flatnonzero(g == k)) for k in range(int(g.max()) + 1)]
            parts[keyp] = _gap_requests(W, points[j], key=lambda k, m=members: m[k])
    # a candidate with a cluster shown to fail fails whatever its other gaps are (its Q, below
    # -1e2, is then an upper bound): its clusters are bounded smallest first until one fails,
    # and only the other candidates' gaps are solved to tolerance (`_decisive_gaps`)
    cache, seen, table = {}, {}, []
    _decisive_gaps(W, list(parts.values()), cache)
    best_q, best_j = -np.inf, None
    for j, g in enumerate(groups):
        keyp = tuple(g)
        c = int(g.max()) + 1
        if keyp not in seen:
            if c < 2:
                seen[keyp] = -np.inf
            else:
                q, terms = _metastability_terms(*parts[keyp], cache)
                # KVV: every split cluster must mix before the walk leaves it; partitions with
                # a cluster that does not rank below all those that have none
                seen[keyp] = q if _worst(terms) > 0 else min(q, 0.0) - 1e3
        q = seen[keyp]
        table.append((j, c, q))
        if q > best_q + 1e-9 or (q == np.inf and best_q == np.inf and c > table[best_j][1]):
            best_q, best_j = q, j
    scan["q_table"] = table
    scan["chosen_seed"] = seed
    if best_j is None or best_q == -np.inf:
        return None, "none"
    if best_q > -1e2:
        return _longest_window(scan, W, groups, table), "metastable"
    score = plateau_scores(scan, points)
    c_fine = np.array([int(f.max()) + 1 for f in scan["fine"]])
    for j in range(n_taus - 1):
        # every run has merged its modularity partition, and so has the chosen hierarchy
        c_j = int(groups[j].max()) + 1
        if c_j < 2 or c_j >= c_fine.min() or (np.asarray(scan["c"][j]) >= c_fine).any():
            continue
        if score[j] <= plateau_vi and _is_dip(score, j):
            labels = _coarsest_near_tie(scan, j) if seed is None else scan["labels"][j][seed]
            # the walk's horizon: a partition persists at walk length tau only if its clusters
            # hold the walk that long (mass-weighted mean log escape time >= log tau); letters'
            # tau = 512 (e^5.5 = 240 steps) and news20's tau = 64-2048 (e^1.9 = 7) do not
            esc = log_escape_time(W, labels)
            if esc is not None and esc < np.log(scan["taus"][j]):
                continue
            if seed is None:
                scan["chosen"] = labels
            return j, "plateau"
    scan["fine_vi"] = float(scan["vi"][0])
    return 0, "fine"
