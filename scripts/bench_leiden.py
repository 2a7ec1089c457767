"""Benchmark graphclust.cluster.leiden / louvain against leidenalg, igraph and networkx.

Prints a markdown table: graph, method, communities found, modularity (resolution 1, computed by
graphclust.cluster.modularity for every method), NMI against the planted / true labels, wall time.
Times are warm calls (numba already compiled); the compile cost is measured separately in fresh
processes (--compile). Peers get their native graph object built outside the timer.

Usage (each section stays under 10 minutes on the 2-core machine):
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        nice -n 10 python scripts/bench_leiden.py --sections compile,lfr1k,lfr10k
    ... --sections pp100k
    ... --sections mnist-binary --mnist-seeds 3   (and mnist-umap; "mnist" = both)
Options: --seeds N (graph seeds for the LFR rows, default 3 for 1k, 2 for 10k),
         --networkx-large (also run networkx Louvain on the 100k / MNIST graphs: minutes).
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import normalized_mutual_info_score

CACHE = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "graphclust")
HERE = os.path.dirname(os.path.abspath(__file__))

from graphclust import cluster as po  # leiden, louvain, modularity
from graphclust.datasets import lfr_graph


# ---------------------------------------------------------------- benchmark graphs
def lfr(n, mu, seed):
    return lfr_graph(n, mu, random_state=seed)


def planted_partition(n, mu, avg_degree, seed, min_size=20, max_size=1000, tau=1.5):
    """LFR-like planted partition built with numpy: power-law community sizes (exponent tau)
    in [min_size, max_size], each node with ~avg_degree (1 - mu) edges inside its community and
    ~avg_degree mu to uniformly random nodes. Poisson degrees (LFR's are power law)."""
    rng = np.random.default_rng(seed)
    sizes = []
    total = 0
    while total < n:
        u = rng.random()
        a, b = min_size ** (1 - tau), max_size ** (1 - tau)
        s = int((a + u * (b - a)) ** (1 / (1 - tau)))
        s = min(s, n - total) if n - total >= min_size else n - total
        sizes.append(s)
        total += s
    sizes = np.array(sizes)
    truth = np.repeat(np.arange(sizes.size), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    m_in = int(round(n * avg_degree * (1 - mu) / 2))
    m_out = int(round(n * avg_degree * mu / 2))
    # internal edges: pick an endpoint uniformly, the other uniformly in its community
    u = rng.integers(0, n, m_in)
    c = truth[u]
    v = starts[c] + (rng.random(m_in) * sizes[c]).astype(np.int64)
    u2 = rng.integers(0, n, m_out)
    v2 = rng.integers(0, n, m_out)
    rows = np.concatenate([u, u2])
    cols = np.concatenate([v, v2])
    keep = rows != cols
    rows, cols = rows[keep], cols[keep]
    A = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    A = A + A.T
    A.data[:] = 1.0
    A.sum_duplicates()
    return sp.csr_matrix(A), truth


def mnist_knn(k=15, weights="binary", cache=True):
    """Symmetrised 15-NN graph of MNIST-70k on PCA-50 (graphclust.knn_graph), binary weights;
    or UMAP's fuzzy-union weights on the same neighbour lists ("umap")."""
    path = os.path.join(CACHE, f"mnist_knn{k}.npz")
    if cache and os.path.exists(path):
        z = np.load(path)
        D = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        y = z["y"]
        build = float(z["seconds"])
    else:
        import graphclust as gc
        from graphclust.datasets import load_mnist
        from sklearn.decomposition import PCA

        X, y = load_mnist()
        t = time.perf_counter()
        Z = PCA(50, random_state=0).fit_transform(X)
        g = gc.graphs.knn_graph(Z, k, random_state=0)
        build = time.perf_counter() - t
        D = sp.csr_matrix(g.distances)
        os.makedirs(CACHE, exist_ok=True)
        np.savez(path, data=D.data, indices=D.indices, indptr=D.indptr, shape=D.shape, y=y,
                 seconds=build)
    if weights == "binary":
        A = D.copy()
        A.data[:] = 1.0
    elif weights == "umap":
        A = _umap_weights(D, k)
    else:
        raise ValueError(weights)
    return sp.csr_matrix(A), y, build


def _umap_weights(D, k):
    """UMAP's smooth-kNN membership strengths on the (symmetrised) neighbour distances,
    then the fuzzy union w + w^T - w * w^T (McInnes et al. 2018)."""
    n = D.shape[0]
    D = sp.csr_matrix(D)
    rows = np.repeat(np.arange(n), np.diff(D.indptr))
    d = D.data
    rho = np.array([D.data[D.indptr[i]:D.indptr[i + 1]].min() if D.indptr[i + 1] > D.indptr[i]
                    else 0.0 for i in range(n)])
    target = np.log2(k)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    sigma = np.ones(n)
    for _ in range(64):
        val = np.bincount(rows, weights=np.exp(-np.maximum(d - rho[rows], 0) / sigma[rows]),
                          minlength=n)
        big = val > target
        hi = np.where(big, sigma, hi)
        lo = np.where(big, lo, sigma)
        sigma = np.where(np.isinf(hi), sigma * 2, (lo + hi) / 2)
    w = np.exp(-np.maximum(d - rho[rows], 0) / sigma[rows])
    W = sp.csr_matrix((w, D.indices, D.indptr), shape=(n, n))
    P = W.multiply(W.T)
    return sp.csr_matrix(W + W.T - P)


# ---------------------------------------------------------------- sections
def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def to_igraph(A):
    import igraph as ig

    U = sp.triu(A, k=0).tocoo()
    g = ig.Graph(n=A.shape[0], edges=np.column_stack([U.row, U.col]).tolist())
    weighted = not np.all(U.data == 1.0)
    if weighted:
        g.es["weight"] = U.data.tolist()
    return g, ("weight" if weighted else None)


def to_networkx(A):
    import networkx as nx

    return nx.from_scipy_sparse_array(A)


def methods(A, seed, *, small, with_networkx):
    """(name, thunk returning labels) for every method; peers' graphs built here, untimed."""
    out = [
        ("leiden (ours, until stable)", lambda: po.leiden(A, random_state=seed)),
        ("leiden (ours, 2 iterations)", lambda: po.leiden(A, random_state=seed, n_iterations=2)),
        ("louvain (ours)", lambda: po.louvain(A, random_state=seed)),
    ]
    import leidenalg as la

    g, wname = to_igraph(A)

    def run_la(n_it):
        p = la.find_partition(
            g, la.ModularityVertexPartition, weights=wname, n_iterations=n_it, seed=seed
        )
        return np.asarray(p.membership)

    out.append(("leidenalg (2 iterations, default)", lambda: run_la(2)))
    if small:
        out.append(("leidenalg (until stable)", lambda: run_la(-1)))

    def run_ig(n_it):
        import igraph as ig

        ig.set_random_number_generator(__import__("random").Random(seed))
        c = g.community_leiden(objective_function="modularity", weights=wname, n_iterations=n_it)
        return np.asarray(c.membership)

    out.append(("igraph community_leiden (until stable)", lambda: run_ig(-1)))
    out.append(("igraph multilevel (Louvain, C)", lambda: np.asarray(
        g.community_multilevel(weights=wname).membership)))
    if with_networkx:
        import networkx as nx

        G = to_networkx(A)
        wkey = "weight"

        def run_nx():
            comms = nx.community.louvain_communities(G, weight=wkey, seed=seed)
            lab = np.empty(A.shape[0], dtype=np.int64)
            for i, c in enumerate(comms):
                lab[list(c)] = i
            return lab

        out.append(("networkx louvain_communities", run_nx))
    return out


def bench_graph(name, A, truth, seeds, rows, *, small, with_networkx):
    n = A.shape[0]
    m = A.nnz // 2
    results = {}
    for seed in seeds:
        for meth, fn in methods(A, seed, small=small, with_networkx=with_networkx):
            labels, secs = timed(fn)
            q = po.modularity(A, labels)
            nmi = normalized_mutual_info_score(truth, labels) if truth is not None else np.nan
            results.setdefault(meth, []).append((labels.max() + 1, q, nmi, secs))
    for meth, vals in results.items():
        v = np.array(vals, dtype=float)
        rows.append((name, n, m, meth, v[:, 0].mean(), v[:, 1].mean(), v[:, 1].std(),
                     v[:, 2].mean(), v[:, 3].mean(), len(vals)))
    print_rows(rows[-len(results):])


HEADER = ("| graph | n | edges | method | k (mean) | modularity (mean +- sd) | NMI | time s |\n"
          "|---|---|---|---|---|---|---|---|")


def print_rows(rows):
    print(HEADER)
    for name, n, m, meth, k, q, qsd, nmi, secs, runs in rows:
        nmi_s = "-" if np.isnan(nmi) else f"{nmi:.3f}"
        print(f"| {name} | {n} | {m} | {meth} | {k:.0f} | {q:.4f} +- {qsd:.4f} | {nmi_s} | "
              f"{secs:.3f} |")
    sys.stdout.flush()


def bench_compile():
    """First call in a fresh process: numba cache empty (compile) and filled (load)."""
    code = (
        "import time, sys; t0 = time.perf_counter();"
        "import graphclust.cluster as po, scipy.sparse as sp, numpy as np;"
        "t1 = time.perf_counter(); A = sp.random(50, 50, 0.2, random_state=0); A = A + A.T;"
        "po.leiden(A, random_state=0); po.louvain(A, random_state=0); po.modularity(A, np.zeros(50, int));"
        "t2 = time.perf_counter(); po.leiden(A, random_state=0); t3 = time.perf_counter();"
        "print(f'{t1 - t0:.2f} {t2 - t1:.2f} {t3 - t2:.4f}')"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        lines = []
        for label in ("empty numba cache (compile)", "numba cache filled (load)"):
            out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                 text=True, check=True).stdout.split()
            lines.append((label, *map(float, out)))
    print("| fresh process | import s | first call (tiny graph) s | second call s |")
    print("|---|---|---|---|")
    for label, a, b, c in lines:
        print(f"| {label} | {a:.2f} | {b:.2f} | {c:.4f} |")
    print()
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sections", default="compile,lfr1k,lfr10k")
    ap.add_argument("--seeds", type=int, default=None)
    ap.add_argument("--networkx-large", action="store_true")
    ap.add_argument("--mnist-seeds", type=int, default=1)
    args = ap.parse_args()
    sections = args.sections.split(",")
    po.leiden(sp.random(30, 30, 0.2, random_state=0) + sp.random(30, 30, 0.2, random_state=0).T)
    rows = []
    if "compile" in sections:
        bench_compile()
    if "lfr1k" in sections:
        for mu in (0.3, 0.5, 0.6):
            for gs in range(args.seeds or 3):
                A, truth = lfr(1000, mu, seed=gs + 1)
                bench_graph(f"LFR n=1000 mu={mu} (graph seed {gs + 1})", A, truth, [0, 1],
                            rows, small=True, with_networkx=True)
    if "lfr10k" in sections:
        for mu in (0.3, 0.5):
            for gs in range(args.seeds or 2):
                A, truth = lfr(10000, mu, seed=gs + 1)
                bench_graph(f"LFR n=10000 mu={mu} (graph seed {gs + 1})", A, truth, [0],
                            rows, small=True, with_networkx=True)
    if "pp100k" in sections:
        for mu in (0.3, 0.5):
            A, truth = planted_partition(100_000, mu, 20, seed=0)
            bench_graph(f"planted partition n=100000 deg 20 mu={mu}", A, truth, [0], rows,
                        small=False, with_networkx=args.networkx_large)
    for weights in ("binary", "umap"):
        if "mnist" in sections or f"mnist-{weights}" in sections:
            A, y, build = mnist_knn(15, weights)
            print(f"MNIST 15-NN graph (PCA-50, graphclust.knn_graph) built in {build:.1f} s "
                  f"(cached after the first run); weights {weights}")
            bench_graph(f"MNIST-70k 15-NN {weights}", A, y, list(range(args.mnist_seeds)), rows,
                        small=False,
                        with_networkx=args.networkx_large)
    if rows:
        print("\nAll rows:")
        print_rows(rows)
        summary(rows)


def summary(rows):
    """Mean over graph seeds of each (graph family, method)."""
    groups = {}
    for name, n, m, meth, k, q, qsd, nmi, secs, runs in rows:
        fam = name.split(" (graph seed")[0]
        groups.setdefault((fam, meth), []).append((n, m, k, q, nmi, secs, runs))
    print("\nSummary (mean over graph seeds x run seeds):")
    print("| graph | method | graphs x runs | k | modularity | NMI | time s |")
    print("|---|---|---|---|---|---|---|")
    for (fam, meth), v in groups.items():
        a = np.array(v, dtype=float)
        nmi_s = "-" if np.isnan(a[:, 4]).all() else f"{np.nanmean(a[:, 4]):.3f}"
        print(f"| {fam} | {meth} | {len(v)} x {int(a[0, 6])} | {a[:, 2].mean():.0f} | "
              f"{a[:, 3].mean():.4f} | {nmi_s} | {a[:, 5].mean():.3f} |")


if __name__ == "__main__":
    main()
