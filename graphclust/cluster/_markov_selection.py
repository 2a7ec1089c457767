"""The scale scan of Markov stability and the three-tier choice of a partition.

`markov_stability_scan`: `n_seeds` fine Leiden partitions (modularity at resolution 1, the Markov
stability of the one-step walk), each merged by the exact Markov-stability gains of the
resolvent walk at mean walk lengths tau = 2^0 .. 2^13 (alpha = tau / (1 + tau)); the flows of
every tau and every seed come from one multi-shift solve (`resolvent_flows`). This gives a
hierarchy of candidate partitions, coarser as tau grows.

`select_partition` chooses among them in three tiers:

1. **metastable**: the candidate of largest metastability
   ``Q = sum_C pi(C) log(t_esc(C) / t_mix(C)) / sum_C pi(C)`` (over the clusters that split a
   connected component), among those whose *every* such cluster has t_esc > t_mix; t_esc(C) =
   vol(C) / cut(C) is the expected escape time of the walk started in C at stationarity and
   t_mix(C) = 1 / (1 - lambda_2(S_C)) the relaxation time of the walk restricted to C. This is
   the bicriterion of Kannan, Vempala & Vetta (2004) in log-time form. A partition made only of
   whole components has Q = +inf.
2. **plateau**: when no candidate is metastable (real classes such as digits, whose walk leaves
   a class before it mixes within it), the finest tau whose partitions merged the fine ones for
   every seed, agree across seeds and persist over an octave (cross-seed normalised VI + mean
   VI to the next octave's partition <= `plateau_vi`).
3. **fine**: otherwise the modularity partition itself (the caller warns; when its seeds
   disagree, the caller returns one cluster).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._leiden import leiden
from ._stability import (coarse_stability, indicator, make_kernel, merge_by_stability,
                         resolvent_flows, variation_of_information)

__all__ = ["DEFAULT_TAUS", "markov_stability_scan", "metastability", "select_partition"]

#: Mean walk lengths scanned: 2^0 .. 2^13, one per octave.
DEFAULT_TAUS = 2.0 ** np.arange(0, 14)


def markov_stability_scan(W, *, taus=None, n_seeds=3, resolution=1.0, random_state=0,
                          kernel=None, progress=None):
    """Candidate partitions: `n_seeds` fine Leiden partitions merged by Markov stability per tau.

    Parameters
    ----------
    W : sparse symmetric non-negative matrix (n, n)
    taus : sequence of float > 0, default `DEFAULT_TAUS`
    n_seeds : int
    resolution : float
        Of the fine Leiden partitions.
    random_state : int or None
        Seeds of the Leiden runs (drawn from ``default_rng(random_state)``) and of the kernel's
        eigensolver.
    kernel : ConsistencyKernel, optional
        Of W (any alpha); built here when None.

    Returns
    -------
    dict with ``taus``, ``alphas``, ``fine`` (fine labels per seed), ``groups`` and ``labels``
    (per tau, per seed: fine cluster -> merged cluster, point -> merged cluster), ``c`` and
    ``r`` (arrays (n_taus, n_seeds): clusters and Markov stability), ``vi`` (mean pairwise
    normalised VI across seeds per tau), ``kernel``, ``timings``.
    """
    taus = DEFAULT_TAUS if taus is None else np.asarray(taus, float)
    alphas = taus / (1 + taus)
    say = progress or (lambda msg: None)
    t0 = time.perf_counter()
    rng = np.random.default_rng(random_state)
    seeds = rng.integers(2**31 - 1, size=n_seeds)
    fine = [leiden(W, resolution=resolution, random_state=int(s)) for s in seeds]
    t_fine = time.perf_counter() - t0
    say(f"{n_seeds} fine Leiden partitions: {[int(f.max()) + 1 for f in fine]} clusters")
    t0 = time.perf_counter()
    K0 = make_kernel(W, int(seeds[0])) if kernel is None else kernel
    t_basis = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = K0.degrees
    vol = d.sum()
    Hs = [indicator(f).toarray() for f in fine]
    B = np.sqrt(d)[:, None] * np.hstack(Hs)
    offs = np.cumsum([0] + [H.shape[1] for H in Hs])
    flows = resolvent_flows(K0, B, alphas)
    t_flow = time.perf_counter() - t0
    say(f"flows of {B.shape[1]} fine clusters at {len(alphas)} walk lengths")
    t0 = time.perf_counter()
    groups, labels, cs, rs, vis = [], [], [], [], []
    for Gall in flows:
        grow, row, crow, rrow = [], [], [], []
        for i, f in enumerate(fine):
            G = Gall[offs[i]:offs[i + 1], offs[i]:offs[i + 1]] / vol
            G = 0.5 * (G + G.T)
            p = Hs[i].T @ d / vol
            g = merge_by_stability(G, p)
            grow.append(g)
            row.append(g[f])
            crow.append(int(g.max()) + 1)
            rrow.append(coarse_stability(G, p, g))
        groups.append(grow)
        labels.append(row)
        cs.append(crow)
        rs.append(rrow)
        pair = [variation_of_information(row[i], row[j])
                for i in range(n_seeds) for j in range(i + 1, n_seeds)]
        vis.append(float(np.mean(pair)) if pair else 0.0)
    return {"taus": taus, "alphas": alphas, "fine": fine, "groups": groups, "labels": labels,
            "c": np.array(cs), "r": np.array(rs), "vi": np.array(vis), "kernel": K0,
            "timings": {"fine": t_fine, "basis": t_basis, "flows": t_flow,
                        "merge": time.perf_counter() - t0}}


def _internal_gap(W, nodes, tol=1e-3):
    """1 - lambda_2 of the normalised adjacency of the subgraph on `nodes` (0 if disconnected)."""
    Wc = W[nodes][:, nodes]
    d = np.asarray(Wc.sum(axis=1)).ravel()
    m = nodes.size
    if m < 3:
        return 1.0
    if (d <= 0).any():
        return 0.0
    isq = 1.0 / np.sqrt(d)
    S = sp.diags(isq) @ Wc @ sp.diags(isq)
    if m <= 600:
        ev = np.linalg.eigvalsh(S.toarray())
        return float(max(1.0 - ev[-2], 0.0))
    v0 = np.sqrt(d) + 0.01 * np.cos(np.arange(m))
    ev = spla.eigsh(S + sp.identity(m), k=2, which="LA", tol=tol, v0=v0)[0] - 1.0
    return float(max(1.0 - np.sort(ev)[0], 0.0))


def metastability(W, labels, *, cache=None, key=None):
    """Metastability Q of a partition and its per-cluster terms (module docstring, tier 1).

    Parameters
    ----------
    W : sparse symmetric matrix (n, n)
    labels : int array (n,), values 0..c-1
    cache, key : dict and callable, optional
        Reuse the spectral gaps of clusters shared by several candidates (``key(c)`` -> key).

    Returns
    -------
    Q : float
        Mass-weighted mean of log(t_esc / t_mix) over the clusters that split a component;
        +inf when every cluster is a whole component, -inf when one is internally disconnected.
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
    labels = np.asarray(labels)
    d = np.asarray(W.sum(axis=1)).ravel()
    vol = d.sum()
    num = den = 0.0
    terms = []
    for c in range(int(labels.max()) + 1):
        nodes = np.flatnonzero(labels == c)
        volc = d[nodes].sum()
        cut = volc - W[nodes][:, nodes].sum()
        if cut <= 1e-12 * volc:
            terms.append((volc / vol, np.inf, None))
            continue
        k = None if key is None else key(c)
        if cache is not None and k in cache:
            gap = cache[k]
        else:
            gap = _internal_gap(W, nodes)
            if cache is not None:
                cache[k] = gap
        t_esc = volc / cut
        terms.append((volc / vol, t_esc, gap))
        num += volc / vol * (np.log(t_esc * gap) if gap > 0 else -np.inf)
        den += volc / vol
    return (num / den if den > 0 else np.inf), terms


def _worst(terms):
    """min over split clusters of log(t_esc / t_mix) (+inf when every cluster is a component)."""
    vals = [np.log(t * g) if g and g > 0 else -np.inf for (_, t, g) in terms if np.isfinite(t)]
    return min(vals) if vals else np.inf


def _medoid(partitions):
    """Index of the partition with the smallest total VI to the others (the consensus run).

    Taking the run the others agree with, rather than the one of largest stability, keeps an
    outlying optimisation (one more split cluster in one of the seeds) from deciding c.
    """
    k = len(partitions)
    if k <= 2:
        return 0
    total = [sum(variation_of_information(partitions[a], partitions[b]) for b in range(k) if b != a)
             for a in range(k)]
    return int(np.argmin(total))


def select_partition(scan, W, *, seed=0, plateau_vi=0.02):
    """Choose a partition of the scan: metastable, else persistent, else the fine one.

    Parameters
    ----------
    scan : dict from `markov_stability_scan` (gains the keys ``q_table``, ``vi_next``,
        ``chosen_seed``, ``fine_vi``)
    W : sparse matrix, the affinity of the scan
    seed : int
        Which seed's hierarchy the metastable tier reads.
    plateau_vi : float
        Threshold of the plateau tier.

    Returns
    -------
    j : int or None
        Index of the chosen tau (None: no candidate with 2 or more clusters).
    rule : {"metastable", "plateau", "fine", "none"}
    """
    n_taus = len(scan["taus"])
    groups = [scan["groups"][j][seed] for j in range(n_taus)]
    cache, seen, table = {}, {}, []
    best_q, best_j = -np.inf, None
    for j, g in enumerate(groups):
        keyp = tuple(g)
        c = int(g.max()) + 1
        if keyp not in seen:
            if c < 2:
                seen[keyp] = -np.inf
            else:
                members = [tuple(np.flatnonzero(g == k)) for k in range(c)]
                q, terms = metastability(W, scan["labels"][j][seed], cache=cache,
                                         key=lambda k, m=members: m[k])
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
        return best_j, "metastable"
    n_seeds = len(scan["fine"])
    nxt = np.array([[variation_of_information(scan["labels"][j][i], scan["labels"][j + 1][i])
                     for i in range(n_seeds)] for j in range(n_taus - 1)]).reshape(-1, n_seeds)
    scan["vi_next"] = nxt.mean(axis=1).tolist()
    c_fine_all = np.array([int(f.max()) + 1 for f in scan["fine"]])
    for j in range(n_taus - 1):
        c_j = scan["c"][j]
        if (c_j < 2).any() or (c_j >= c_fine_all).any():
            continue
        if scan["vi"][j] + nxt[j].mean() <= plateau_vi:
            scan["chosen_seed"] = _medoid(scan["labels"][j])
            return j, "plateau"
    scan["fine_vi"] = float(scan["vi"][0])
    return 0, "fine"
