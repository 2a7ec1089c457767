"""Community detection benchmark: graphclust's community methods beside networkx Louvain and leidenalg.

Sections (``--sections``, default all, printed as markdown tables):

- ``real``: karate (2 clubs), football (12 conferences), polbooks (3 leanings), binary adjacency
  of ``$GRAPHCLUST_DATA``; 5 seeds.
- ``lfr1k`` / ``lfr10k``: networkx LFR (tau1 = 3, tau2 = 1.5, average degree 15, max degree 50,
  communities of 20..100 nodes), mu = 0.1..0.6, seeds 0..4 (n = 1 000) and 0..2 (n = 10 000);
  mean +- standard deviation over seeds. Graphs are cached (``--cache``): networkx takes minutes
  for n = 10^5.
- ``sbm``: symmetric SBM, q = 2 equal groups, mean degree c = 5, n = 5 000, signal-to-noise
  snr = (c_in - c_out) / (q sqrt(c)) from 0.6 to 2.0 (detectability threshold snr = 1, Decelle et
  al. 2011); 3 seeds; overlap (Hungarian one-to-one matching, rescaled so chance = 0) and NMI;
  plot written to docs/communities_sbm_overlap.png.
- ``big``: LFR n = 100 000 (mu = 0.1, 0.3, 0.5; about 0.9 M edges: the "10^6 edges" timing case),
  one seed.
- ``diagnose`` (on request): LFR n = 1 000, mu = 0.5 and 0.6, seed 0: the realised mixing, the
  real eigenvalues of the non-backtracking operator above its bulk edge (dense, 2n x 2n), and
  the description length of the truth and of each method's partition under three block models.
- ``million`` (on request): SBM n = 100 000, 100 equal groups, mean degree 20 (10^6 edges),
  snr = 2; one seed.
- ``knn``: kNN graphs of points (pendigits 7 494, USPS 9 298, MNIST test 10 000; binary 15-NN
  `knn_graph`, seed 0, the `Graph` given to graphclust so "auto" sees a proximity graph, its
  adjacency to the peers); 3 seeds. ``auto (network)`` is "auto" told the graph is a network
  (``graph_kind="network"``: the block-model selection, the default before).

Note: networkx's LFR generator wires more edges outside the communities than mu asks (networkx
issues #6762, #6809): the realised mixing of these graphs is 0.15 / 0.31 / 0.45 / 0.58 / 0.70 /
0.80 for mu = 0.1 ... 0.6 (printed per row).

Methods: ``auto`` (`communities(G)`'s default: `CommunityDetection()` -- candidates Leiden-ML,
Bethe, Bethe + Leiden-ML, lowest description length wins unless it is the coarser of the best
Leiden-ML and the best spectral candidate, then edge cross-validation decides), ``auto (dl)``
(the same candidates, lowest description length always: the rule before), ``bethe`` (Bethe Hessian k-means, k =
its own count), ``leiden-ml`` (Leiden at Newman's maximum-likelihood resolution), ``leiden``
(graphclust's Leiden, resolution 1), ``louvain`` (``networkx.community.louvain_communities(G,
seed=seed)``), ``leidenalg`` (``leidenalg.find_partition(g, ModularityVertexPartition,
seed=seed)``, its default 2 iterations; ``pip install graphclust[bench]``). On request:
``consistency`` (the old default of `communities`) and ``dl-path`` (an experiment, not adopted:
"auto"'s partition and Leiden at resolutions from 1 to gamma_ML as candidates, smallest
description length kept; docs/applications.md says what it wins and loses). NMI is sklearn's
arithmetic NMI (= ``graphclust.metrics.nmi``); AMI (adjusted for chance) is printed beside it
because NMI rewards over-splitting on small graphs. Times are wall-clock; peers are timed on their own graph
objects (networkx / igraph construction excluded).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        python scripts/bench_communities.py [--sections real lfr1k lfr10k sbm big knn]
        [--methods ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import adjusted_mutual_info_score as ami
from sklearn.metrics import normalized_mutual_info_score as nmi

from graphclust import communities
from graphclust.cluster import CommunityDetection

DATA = os.environ.get("GRAPHCLUST_DATA", "/work/shared/datasets")
MUS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "graphclust-bench-lfr")
PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs",
                    "communities_sbm_overlap.png")


def lfr(n, mu, seed=0):
    """Edges and community labels of networkx's LFR graph (cached as npz); None if it fails."""
    import networkx as nx

    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"lfr_n{n}_mu{mu}_s{seed}.npz")
    if os.path.exists(path):
        z = np.load(path)
        return z["edges"], z["labels"]
    try:
        G = nx.LFR_benchmark_graph(n, 3, 1.5, mu, average_degree=15, max_degree=50,
                                   min_community=20, max_community=100, seed=seed)
    except nx.ExceededMaxIterations:
        return None, None
    G.remove_edges_from(nx.selfloop_edges(G))
    comms = {frozenset(G.nodes[v]["community"]) for v in G}
    index = {}
    for i, c in enumerate(sorted(comms, key=min)):
        for v in c:
            index[v] = i
    labels = np.array([index[v] for v in range(n)])
    edges = np.array(list(G.edges()), dtype=np.int64)
    np.savez(path, edges=edges, labels=labels)
    return edges, labels


def _pairs_to_csr(i, j, n):
    keep = i != j
    i, j = i[keep], j[keep]
    a, b = np.minimum(i, j), np.maximum(i, j)
    key = np.unique(a.astype(np.int64) * n + b)
    a, b = key // n, key % n
    A = sp.coo_matrix((np.ones(a.size), (a, b)), shape=(n, n))
    return (A + A.T).tocsr()


def sbm(n, q, c, snr, seed=0):
    """Symmetric SBM: q equal groups, mean degree c, c_in - c_out = snr * q * sqrt(c).

    The detectability (Kesten-Stigum) threshold is snr = 1 (Decelle et al. 2011):
    (c_in - c_out) = q sqrt(c). Returns (A, labels, c_in, c_out).
    """
    rng = np.random.default_rng(seed)
    delta = snr * q * np.sqrt(c)          # c_in - c_out
    c_out = c - delta / q                 # c = (c_in + (q-1) c_out) / q
    c_in = c_out + delta
    if c_out < 0:
        raise ValueError("snr too large for this mean degree")
    labels = np.repeat(np.arange(q), n // q)
    labels = np.r_[labels, np.arange(n - labels.size) % q]
    rng.shuffle(labels)
    members = [np.flatnonzero(labels == a) for a in range(q)]
    I, J = [], []
    for a in range(q):
        for b in range(a, q):
            na, nb = members[a].size, members[b].size
            p = (c_in if a == b else c_out) / n
            pairs = na * (na - 1) / 2 if a == b else na * nb
            m = rng.binomial(int(pairs), p)
            I.append(members[a][rng.integers(0, na, m)])
            J.append(members[b][rng.integers(0, nb, m)])
    return _pairs_to_csr(np.concatenate(I), np.concatenate(J), n), labels, c_in, c_out


def edges_of(A):
    coo = sp.triu(A, 1).tocoo()
    return np.c_[coo.row, coo.col]


def run(method, A, seed, n_communities=None, graph=None):
    """(labels, n_bethe or '', seconds); graphclust's methods fit `graph` when given."""
    n = A.shape[0]
    if method == "louvain":
        import networkx as nx

        G = nx.Graph()
        G.add_nodes_from(range(n))
        G.add_edges_from(edges_of(A).tolist())
        t = time.perf_counter()
        parts = nx.community.louvain_communities(G, seed=seed)
        dt = time.perf_counter() - t
        lab = np.empty(n, dtype=int)
        for i, p in enumerate(parts):
            lab[list(p)] = i
        return lab, "", dt
    if method == "leidenalg":
        import igraph as ig
        import leidenalg as la

        g = ig.Graph(n=n, edges=edges_of(A).tolist())
        t = time.perf_counter()
        p = la.find_partition(g, la.ModularityVertexPartition, seed=seed)
        return np.array(p.membership), "", time.perf_counter() - t
    if method in ("consistency", "ahk"):
        # the papers' clusterers through the application (the "before" rows of the docs)
        t = time.perf_counter()
        parts = communities(A, method, "auto" if method == "consistency" else n_communities,
                            random_state=seed)
        dt = time.perf_counter() - t
        lab = np.empty(n, dtype=int)
        for i, p in enumerate(parts):
            lab[list(p)] = i
        return lab, "", dt
    if method == "dl-path":
        t = time.perf_counter()
        lab = dl_path(A, seed)
        return lab, "", time.perf_counter() - t
    kind, selection = "auto", "cv"
    if method == "auto (network)":
        method, kind = "auto", "network"
    elif method == "auto (dl)":
        method, selection = "auto", "dl"
    t = time.perf_counter()
    r = CommunityDetection(method, "auto" if n_communities is None else n_communities,
                           selection=selection, affinity="precomputed", graph_kind=kind,
                           random_state=seed).fit(A if graph is None else graph)
    dt = time.perf_counter() - t
    nb = r.n_communities_bethe_ if r.n_communities_bethe_ is not None else ""
    if method == "auto":
        nb = f"{nb} ({r.chosen_method_}{', cv' if r.heldout_information_ else ''})"
    return r.labels_, nb, dt


def dl_path(A, seed, step=1.5):
    """Experiment (not the default): "auto"'s partition and Leiden at resolutions 1 ... gamma_ML
    (geometric, ratio <= `step`) as candidates, the smallest description length kept."""
    from graphclust.cluster import description_length, leiden, leiden_ml

    cands = [CommunityDetection(affinity="precomputed", random_state=seed).fit(A).labels_]
    _, gml = leiden_ml(A, random_state=seed)
    lo, hi = min(1.0, gml), max(1.0, gml)
    n_steps = int(np.ceil(np.log(hi / lo) / np.log(step)))
    for j in range(n_steps):
        cands.append(leiden(A, resolution=lo * (hi / lo) ** (j / n_steps), random_state=seed))
    return min(cands, key=lambda lab: description_length(A, lab))


def overlap(t, p, q):
    C = np.zeros((t.max() + 1, p.max() + 1))
    np.add.at(C, (t, p), 1)
    r, c = linear_sum_assignment(-C)
    acc = C[r, c].sum() / t.size
    return (acc - 1 / q) / (1 - 1 / q)


def fmt(v):
    v = np.asarray(v, dtype=float)
    return f"{v.mean():.3f}" if v.size == 1 else f"{v.mean():.3f} ± {v.std():.3f}"


def mixing(A, truth):
    """Fraction of the edges between two communities of `truth` (LFR's realised mu)."""
    coo = A.tocoo()
    return float(np.mean(truth[coo.row] != truth[coo.col]))


def table_rows(name, graphs, methods, graph=None):
    """graphs: list of (A, truth) over seeds. One row per method: NMI, AMI, k, time."""
    for m in methods:
        res = []
        nbs = []
        for seed, (A, truth) in enumerate(graphs):
            lab, nb, dt = run(m, A, seed, graph=graph)
            res.append((nmi(truth, lab), ami(truth, lab), lab.max() + 1, dt))
            nbs.append(str(nb))
        a = np.array(res)
        nb_txt = ", ".join(sorted(set(nbs))) if any(nbs) else ""
        ks = sorted({int(t.max()) + 1 for _, t in graphs})
        ktxt = str(ks[0]) if len(ks) == 1 else f"{ks[0]}-{ks[-1]}"
        print(f"| {name} | {ktxt} | {m} | {fmt(a[:, 0])} | {fmt(a[:, 1])} | "
              f"{a[:, 2].mean():.1f} | {nb_txt[:60]} | {a[:, 3].mean():.2f} |", flush=True)


HEADER = ("| graph | true k | method | NMI | AMI | communities found | Bethe count (auto: chosen) | time (s) |\n"
          "|---|---|---|---|---|---|---|---|")


def load_real(name):
    import networkx as nx

    path = {"karate": "karate/karate_club.gml", "football": "football/football.gml",
            "polbooks": "polbooks/polbooks.gml"}[name]
    G = nx.read_gml(os.path.join(DATA, path), label="id")
    G = nx.Graph(G)
    attr = "club" if name == "karate" else "value"
    nodes = list(G.nodes)
    truth = np.unique([str(G.nodes[v][attr]) for v in nodes], return_inverse=True)[1]
    A = nx.to_scipy_sparse_array(G, nodelist=nodes, weight=None, format="csr").astype(float)
    return sp.csr_matrix(A), truth


def lfr_adj(n, mu, seed):
    e, lab = lfr(n, mu, seed)
    if e is None:
        return None
    A = sp.coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(n, n))
    return (A + A.T).tocsr(), lab


def section_real(methods):
    print("\n### Real networks (5 seeds)\n")
    print(HEADER)
    for name in ("karate", "football", "polbooks"):
        A, truth = load_real(name)
        table_rows(name, [(A, truth)] * 5, methods)


def section_lfr(n, seeds, methods):
    print(f"\n### LFR n = {n} (seeds {seeds[0]}..{seeds[-1]})\n")
    print(HEADER)
    for mu in MUS:
        graphs = [g for g in (lfr_adj(n, mu, s) for s in seeds) if g is not None]
        if not graphs:
            print(f"| LFR n={n} mu={mu} | networkx could not generate it | | | | | | |")
            continue
        real = np.mean([mixing(A, t) for A, t in graphs])
        table_rows(f"LFR n={n} mu={mu} (realised {real:.2f})", graphs, methods)


def section_sbm(methods, n=5000, q=2, c=5.0, seeds=(0, 1, 2)):
    snrs = [0.6, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75, 2.0]
    print(f"\n### SBM q = {q}, n = {n}, mean degree {c}, threshold snr = 1 ({len(seeds)} seeds)\n")
    print("| snr | c_in / c_out | method | overlap | NMI | communities found | time (s) |")
    print("|---|---|---|---|---|---|---|")
    curves = {m: [] for m in methods}
    for snr in snrs:
        graphs = [sbm(n, q, c, snr, s) for s in seeds]
        for m in methods:
            res = []
            for seed, (A, truth, cin, cout) in enumerate(graphs):
                lab, _, dt = run(m, A, seed)
                res.append((overlap(truth, lab, q), nmi(truth, lab), lab.max() + 1, dt))
            a = np.array(res)
            curves[m].append((snr, a[:, 0].mean(), a[:, 0].std()))
            print(f"| {snr} | {cin:.2f} / {cout:.2f} | {m} | {fmt(a[:, 0])} | {fmt(a[:, 1])} | "
                  f"{a[:, 2].mean():.1f} | {a[:, 3].mean():.2f} |", flush=True)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for m, pts in curves.items():
            p = np.array(pts)
            ax.errorbar(p[:, 0], p[:, 1], yerr=p[:, 2], marker="o", capsize=2, label=m)
        ax.axvline(1.0, color="k", ls="--", lw=1, label="detectability threshold")
        ax.set_xlabel("snr = (c_in - c_out) / (q sqrt(c))")
        ax.set_ylabel("overlap (one-to-one matching)")
        ax.set_title(f"SBM q={q}, n={n}, c={c}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(PLOT, dpi=110)
        print(f"\n(plot written to {PLOT})")
    except Exception as err:  # plotting is optional
        print(f"(plot skipped: {err})")


def section_big(methods):
    print("\n### LFR n = 100 000 (seed 0; ~0.9 M edges)\n")
    print(HEADER)
    for mu in (0.1, 0.3, 0.5):
        A, truth = lfr_adj(100000, mu, 0)
        print(f"<!-- edges: {A.nnz // 2} -->", flush=True)
        table_rows(f"LFR n=100000 mu={mu}", [(A, truth)], methods)


def section_million(methods):
    """A graph of 10^6 edges: SBM n = 100 000, 100 equal groups, mean degree 20, snr = 2."""
    print("\n### SBM n = 100 000, q = 100, mean degree 20, snr = 2 (seed 0; ~10^6 edges)\n")
    print(HEADER)
    A, truth, _, _ = sbm(100000, 100, 20.0, 2.0, 0)
    print(f"<!-- edges: {A.nnz // 2} -->", flush=True)
    table_rows("SBM n=100000 q=100", [(A, truth)], methods)


def section_knn(methods, seeds=(0, 1, 2)):
    from graphclust import knn_graph
    from graphclust.datasets import load_mnist, load_pendigits, load_usps
    from graphclust.graphs import affinity

    print("\n### kNN graphs of points (binary 15-NN graph; 3 seeds)\n")
    print(HEADER)
    xt, yt, xs, ys = load_usps()
    sets = {"pendigits": load_pendigits(), "USPS": (np.vstack([xt, xs]), np.r_[yt, ys]),
            "MNIST test": load_mnist("test")}
    for name, (X, y) in sets.items():
        g = knn_graph(np.asarray(X, dtype=np.float64), 15, random_state=0)
        A = sp.csr_matrix(affinity(g, kind="binary"))
        truth = np.unique(np.asarray(y), return_inverse=True)[1]
        table_rows(f"{name} ({X.shape[0]})", [(A, truth)] * len(seeds), methods, graph=g)


def _ln_binom(a, b):
    from scipy.special import gammaln

    return float(gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1))


def block_model_dls(A, labels):
    """Description lengths (nats) of a partition under three degree-corrected block models.

    ``planted``: `graphclust.cluster.description_length` (Newman's planted partition, one
    w_in and one w_out). ``per-community``: one affinity w_rr per community and one w_out, plus
    ln C(m + K, K) for the K + 1 edge counts. ``full``: the degree-corrected SBM with every
    block pair's own affinity (Karrer & Newman's likelihood) plus Peixoto's uniform prior on the
    K (K + 1) / 2 edge counts, ln C(m + B - 1, B - 1): close to the objective of graph-tool's
    ``minimize_blockmodel_dl`` (non-nested; its degree prior is left out). All share the
    partition prior of
    `description_length`; degree terms, equal for every partition, are dropped.
    """
    from scipy.special import gammaln

    from graphclust.cluster import description_length

    labels = np.unique(labels, return_inverse=True)[1]
    n, K = A.shape[0], int(labels.max()) + 1
    d = np.asarray(A.sum(axis=1)).ravel()
    m = d.sum() / 2
    kap = np.bincount(labels, weights=d, minlength=K)
    M = sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, K))
    E = (M.T @ A @ M).toarray()
    m_rr = np.diag(E) / 2
    m_out = m - m_rr.sum()
    sizes = np.bincount(labels, minlength=K)
    prior = (_ln_binom(n - 1, K - 1) + float(gammaln(n + 1) - gammaln(sizes + 1).sum())
             + np.log(n))
    pos = m_rr > 0
    inside = float((m_rr[pos] * np.log(4 * m * m_rr[pos] / kap[pos] ** 2)).sum())
    ll = inside - m
    if m_out > 0:
        ll += m_out * np.log(4 * m * m_out / (4 * m * m - float(kap @ kap)))
    iu = np.triu_indices(K, 1)
    m_rs, kk = E[iu], kap[iu[0]] * kap[iu[1]]
    pos2 = m_rs > 0
    ll_full = inside + float((m_rs[pos2] * np.log(2 * m * m_rs[pos2] / kk[pos2])).sum()) - m
    B = K * (K + 1) / 2
    return {"planted": description_length(A, labels),
            "per-community": -ll + prior + _ln_binom(m + K, K),
            "full": -ll_full + prior + _ln_binom(m + B - 1, B - 1)}


def section_diagnose(mus=(0.5, 0.6), seed=0):
    """Why LFR n = 1 000 at high mixing is hard: B's informative eigenvalues, the DL of truth."""
    import networkx as nx

    from graphclust.cluster import leiden, leiden_ml

    print("\n### Diagnosis: LFR n = 1 000, seed 0\n")
    for mu in mus:
        A, truth = lfr_adj(1000, mu, seed)
        n = A.shape[0]
        d = np.asarray(A.sum(axis=1)).ravel()
        eye = np.eye(n)
        ihara = np.block([[A.toarray(), eye - np.diag(d)], [eye, np.zeros((n, n))]])
        ev = np.linalg.eigvals(ihara)
        rho = float(ev.real.max())
        real = np.sort(ev.real[np.abs(ev.imag) < 1e-8])[::-1]
        above = real[(real > np.sqrt(rho)) & (real < rho - 1e-9)]
        print(f"mu = {mu}: realised mixing {mixing(A, truth):.3f}; rho(B) = {rho:.2f}, bulk edge "
              f"sqrt(rho) = {np.sqrt(rho):.2f}; real eigenvalues of B between them: "
              f"{np.round(above, 2).tolist()}\n")
        G = nx.from_scipy_sparse_array(A)
        lv = np.empty(n, dtype=np.int64)
        for i, part in enumerate(nx.community.louvain_communities(G, seed=seed)):
            lv[list(part)] = i
        auto = CommunityDetection(affinity="precomputed", random_state=seed).fit(A)
        cands = {"truth": truth, f"auto ({auto.chosen_method_})": auto.labels_,
                 "leiden-ml": leiden_ml(A, random_state=seed)[0],
                 "leiden gamma=1": leiden(A, random_state=seed), "louvain": lv}
        print("| partition | groups | NMI | DL planted | DL per-community | DL full DC-SBM |")
        print("|---|---|---|---|---|---|")
        for name, lab in cands.items():
            dl = block_model_dls(A, lab)
            print(f"| {name} | {int(np.max(lab)) + 1} | {nmi(truth, lab):.3f} | "
                  f"{dl['planted']:.0f} | {dl['per-community']:.0f} | {dl['full']:.0f} |",
                  flush=True)
        print()


def main():
    global CACHE
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", nargs="*",
                    default=["real", "lfr1k", "sbm", "lfr10k", "big", "knn"],
                    choices=["real", "lfr1k", "lfr10k", "sbm", "big", "knn", "diagnose",
                             "million"])
    ap.add_argument("--methods", nargs="*", default=None,
                    help="subset of auto bethe leiden-ml leiden louvain leidenalg (also: "
                    "'auto (dl)', auto by description length only; consistency, the old "
                    "default; dl-path, the resolution-path experiment)")
    ap.add_argument("--lfr1k-seeds", type=int, default=5, help="LFR n = 1 000 seeds (default 5)")
    ap.add_argument("--cache", default=CACHE, help=f"LFR graph cache folder (default {CACHE})")
    args = ap.parse_args()
    CACHE = args.cache
    all_methods = ["auto", "bethe", "leiden-ml", "leiden", "louvain", "leidenalg"]
    methods = args.methods or all_methods
    for s in args.sections:
        if s == "real":
            section_real(methods)
        elif s == "lfr1k":
            section_lfr(1000, list(range(args.lfr1k_seeds)), methods)
        elif s == "lfr10k":
            section_lfr(10000, [0, 1, 2], [m for m in methods if m != "bethe"])
        elif s == "sbm":
            section_sbm([m for m in methods if m != "leiden"])
        elif s == "big":
            section_big([m for m in methods if m not in ("bethe", "leiden")])
        elif s == "diagnose":
            section_diagnose()
        elif s == "million":
            section_million([m for m in methods if m not in ("bethe", "leiden")])
        elif s == "knn":
            section_knn(["auto", "auto (network)"]
                        + [m for m in methods if m not in ("auto", "bethe")])


if __name__ == "__main__":
    main()
