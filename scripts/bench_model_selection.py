"""Model selection on real data (issue 14): c found, NMI, ARI and time, every method in one run.

For each development set: graphclust's `StabilityClustering` (the automatic fit that
`ConsistencyClustering()` runs by default, criterion="stability"), `ConsistencyClustering(
criterion="omega")` (the papers' Omega search, the default before issue 14), and the peers a
user would pick: Leiden (leidenalg) and Louvain (networkx) on the same symmetrised 15-NN graph,
HDBSCAN on X, UMAP (2-D) + HDBSCAN (the umap documentation's recipe). The peers are a benchmark
extra (``pip install graphclust[bench]``), imported only here.

Usage (rows are appended to a JSON-lines file; --report prints the markdown table of the last
row of every (set, method)):

    export GRAPHCLUST_DATA=/work/shared/datasets
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \
        nice -n 10 python scripts/bench_model_selection.py --sets usps,letters --methods all
    python scripts/bench_model_selection.py --report

Several seeds (mean +- sd; HDBSCAN on X is deterministic, UMAP + HDBSCAN takes
random_state 42 + seed for its embedding, the others random_state / seed = seed):

    nice -n 10 python scripts/bench_model_selection.py --sets pendigits \
        --methods stability,louvain,leiden --seeds 0,1,2,3,4
    python scripts/bench_model_selection.py --report --seeds all

Methods
-------
stability     graphclust.StabilityClustering(random_state=0): 10-NN lists (the first 10 of
              the 15 searched for every graph method), fuzzy-union weights, Leiden fine
              partitions merged by Markov stability of the consistency walk, three-tier choice
omega         graphclust.ConsistencyClustering(criterion="omega", random_state=0) (cosine
              kNN graph for sparse text)
leiden        leidenalg modularity, resolution 1, seed 0, on the symmetrised unweighted 15-NN graph
louvain       networkx louvain_communities (seed 0) on the same graph
hdbscan       hdbscan.HDBSCAN(min_cluster_size=max(10, n // 140), min_samples=10) on X
stability_at_c  the same fit read at the true c: ``labels_at(n_clusters=true c)``, the scan's
              partition of that c or the nearest finer one cut to it (c given; timed as the
              fit, which it reuses)
spectral_at_c scikit-learn SpectralClustering(n_clusters=true c, affinity="precomputed",
              eigen_solver="amg", assign_labels="cluster_qr", random_state=seed) on the
              symmetrised unweighted 15-NN graph of leiden (c given: the peer a user with a
              known c would pick)
gmm_at_c      scikit-learn GaussianMixture(n_components=true c, n_init=2, random_state=seed)
              on X (c given; dense X only)
latent_classes  graphclust.LatentClassClustering(random_state=seed): a latent class model
              fitted by EM, c by BIC; tables of codes only (dense, every feature at most 16
              values: news20_w100, letters), no row elsewhere
multinomial   graphclust.MultinomialMixtureClustering(random_state=seed): a mixture of
              multinomials fitted by EM, c by BIC; sparse counts only (news20), no row elsewhere
omega_at_c    ConsistencyClustering(n_clusters=true c, criterion="omega", random_state=seed):
              the papers' seeds with sigma and alpha searched by Omega at the given c (the
              default of ConsistencyClustering when c is given)
stability_noise  the recipe for a background of noise (opt-in, not the default):
              graphclust.background_noise(X) marks the noise, StabilityClustering(random_state
              =seed) fits the rest, and predict places the noise points
umap_hdbscan  umap.UMAP(n_neighbors=30, min_dist=0, n_components=2, random_state=42 + seed), then
              HDBSCAN(min_samples=10, min_cluster_size=max(10, n // 140)) (500 on 70 000 points)

An untuned check on data no default was chosen on: Gagolewski's benchmark battery for
clustering (github.com/gagolews/clustering-data-v1; M. Gagolewski, *A framework for
benchmarking clustering algorithms*, SoftwareX 20, 2022), read from a checkout named by
``GRAPHCLUST_BATTERY``. A set is ``battery:<folder>/<name>`` (``battery:uci/wine``,
``battery:other/chameleon_t4_8k``) or ``battery:<folder>`` for all of a folder's sets; its
labels are the battery's ``labels0`` (its reference partition). Label 0 marks noise points in
that battery: they are clustered like the rest but left out of NMI and ARI, as its framework does.

    GRAPHCLUST_BATTERY=/path/to/clustering-data-v1 python scripts/bench_model_selection.py \
        --sets battery:uci,battery:other --methods stability,leiden,louvain,hdbscan,umap_hdbscan \
        --out battery.jsonl
    python scripts/bench_model_selection.py --report --out battery.jsonl

Overlapping Gaussian blobs as a new user makes them first: ``blobs:<n>:<centers>:<seed>``
is scikit-learn's ``make_blobs(n, centers=centers, n_features=2, random_state=seed)`` (unit
deviation, centres uniform in [-10, 10]^2, so some touch). ``--sets blobs`` is the
development grid (n = 10 000, 20 000; 3, 5, 8 centres; seeds 0-4) and ``--sets blobs-check``
the same grid on seeds 5-9, kept apart for checking (``gmm_at_c``: scikit-learn's
GaussianMixture with the true c, the model that generated them, as the ceiling).

scikit-learn's two toy shapes as a new user makes them first, standardised as scikit-learn's
page *Comparing different clustering algorithms on toy datasets* does:
``toys:<kind>:<n>:<noise>:<seed>``, kind ``moons`` (``make_moons(n, noise=noise)``) or
``circles`` (``make_circles(n, factor=0.5, noise=noise)``). ``--sets toys`` is the grid of
120 fits: n = 1 000, 1 500, 3 000; moons at noise 0.05 and 0.1, circles at 0.04 and 0.08;
seeds 0-9 (docs/model_selection.md, *scikit-learn's moons and circles with more noise*).

A second untuned check, on sixteen labelled UCI tables outside the battery (standardised:
``--sets tables``; as stored: ``--sets tables-raw``) and the same collection's artificial
point sets that the battery does not hold (``--sets shapes``), read from the checkouts that
``GRAPHCLUST_TABLES`` names: see `scripts/external_tables.py`.

``--n-neighbors K`` fits the stability methods on K-NN lists instead of the default 10, and
``--n-neighbors ln`` on ceil(ln n) between 5 and 10 (docs/model_selection.md, *Measured, not
changed: fewer neighbours for fewer points*)::

    python scripts/bench_model_selection.py --sets battery:sipu,battery:wut --methods stability \
        --n-neighbors ln --out battery_ln.jsonl

Times are wall-clock seconds; graph methods (stability, leiden, louvain) include the kNN search,
measured once per set. HDBSCAN's noise label -1 counts as one label in NMI / ARI.
"""

import argparse
import functools
import json
import math
import os
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.metrics import adjusted_rand_score as ARI
from sklearn.metrics import normalized_mutual_info_score as NMI

OUT = "bench_model_selection.jsonl"  # in the working directory
METHODS = ["stability", "omega", "leiden", "louvain", "hdbscan", "umap_hdbscan",
           "stability_at_c", "spectral_at_c", "omega_at_c", "stability_noise", "gmm_at_c",
           "latent_classes", "multinomial"]
_FITTED = {}  # (id of X, seed) -> (X, the stability fit, its seconds): stability_at_c reuses it
#: n_neighbors of the stability fits (``--n-neighbors``): None for the default, an int, or "ln"
#: for ceil(ln n) between 5 and 10 (docs/model_selection.md, *Measured, not changed: fewer
#: neighbours for fewer points*)
N_NEIGHBORS = None


def stability_params(n):
    """The keyword arguments of the stability fits beyond metric and random_state."""
    if N_NEIGHBORS is None:
        return {}
    if N_NEIGHBORS == "ln":
        return {"n_neighbors": int(min(10, max(5, math.ceil(math.log(n)))))}
    return {"n_neighbors": int(N_NEIGHBORS)}


# ---------------------------------------------------------------- development sets
def _mnist():
    from sklearn.decomposition import PCA

    from graphclust.datasets import load_mnist

    X, y = load_mnist("all")
    return PCA(50, random_state=0).fit_transform(X), y


def _usps():
    from graphclust.datasets import load_usps

    a, b, c, d = load_usps()
    return np.vstack([a, c]), np.concatenate([b, d])


def _usps14():
    X, y = _usps()
    m = (y >= 1) & (y <= 4)
    return X[m], y[m]


def _pendigits():
    from graphclust.datasets import load_pendigits

    a, b = load_pendigits("train")
    c, d = load_pendigits("test")
    return np.vstack([a, c]), np.concatenate([b, d])


def _letters():
    from graphclust.datasets import load_letters

    return load_letters()


def _yaleb():
    from scipy.io import loadmat

    m = loadmat(os.path.join(os.environ["GRAPHCLUST_DATA"], "yaleb_32x32", "YaleB_32x32_ori.mat"))
    return m["fea"].astype(np.float64) / 255.0, m["gnd"].ravel().astype(np.int64)


def _news():
    from graphclust.datasets import load_newsgroups

    X, y, _ = load_newsgroups("w1000", "train")
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return sp.csr_matrix(X[keep]), y[keep]


def _news_w100():
    from graphclust.datasets import load_newsgroups

    X, y, _ = load_newsgroups("w100")  # binary: a table of codes as much as a text
    keep = np.asarray(X.sum(axis=1)).ravel() > 0
    return np.asarray(X[keep].todense()), y[keep]


def _control():
    from graphclust.datasets import load_synthetic_control

    return load_synthetic_control()


def _synth(kind, n):
    from graphclust import datasets

    return getattr(datasets, kind)(n, random_state=0)


LOADERS = {
    "mnist": (_mnist, "euclidean"),
    "usps": (_usps, "euclidean"),
    "usps1-4": (_usps14, "euclidean"),
    "letters": (_letters, "euclidean"),
    "pendigits": (_pendigits, "euclidean"),
    "yaleb": (_yaleb, "euclidean"),
    "news20": (_news, "cosine"),
    "news20_w100": (_news_w100, "euclidean"),
    "control": (_control, "euclidean"),
    "two_moons": (lambda: _synth("two_moons", 400), "euclidean"),
    "three_moons": (lambda: _synth("three_moons", 600), "euclidean"),
    "three_moons_2400": (lambda: _synth("three_moons", 2400), "euclidean"),
    "two_spirals": (lambda: _synth("two_spirals", 600), "euclidean"),
    "three_spirals": (lambda: _synth("three_spirals", 900), "euclidean"),
    "uniform_square": (lambda: (np.random.default_rng(0).random((2000, 2)), np.zeros(2000, int)),
                       "euclidean"),
}
DEV = ["mnist", "usps", "letters", "pendigits", "yaleb", "news20", "news20_w100", "control",
       "usps1-4", "two_moons", "three_moons", "two_spirals", "three_spirals"]


def _battery(name):
    """(X, y) of ``battery:<folder>/<name>``: y the battery's labels0 minus 1 (noise: -1)."""
    root = os.environ.get("GRAPHCLUST_BATTERY")
    if not root:
        raise SystemExit("battery sets need GRAPHCLUST_BATTERY: a checkout of "
                         "github.com/gagolews/clustering-data-v1")
    path = os.path.join(root, name.split(":", 1)[1])
    X = np.loadtxt(path + ".data.gz", ndmin=2)
    y = np.loadtxt(path + ".labels0.gz", dtype=int, ndmin=1) - 1
    if X.shape[0] == 0 or X.shape[0] != y.size:  # a large file a snapshot did not hold
        raise SystemExit(f"{name}: {path}.data.gz holds {X.shape[0]} points and its labels "
                         f"{y.size}; fetch the whole file (git lfs) or leave the set out.")
    return X, y


@functools.lru_cache(maxsize=1)
def _external_tables():
    """The module `scripts/external_tables.py` (beside this one; scripts are no package)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "external_tables.py")
    spec = importlib.util.spec_from_file_location("external_tables", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expand_sets(names):
    """The set names with every ``battery:<folder>`` replaced by that folder's sets."""
    out = []
    for name in names:
        if name in ("blobs", "blobs-check"):
            seeds = range(5) if name == "blobs" else range(5, 10)
            out += [f"blobs:{n}:{c}:{s}" for n in (10_000, 20_000) for c in (3, 5, 8)
                    for s in seeds]
            continue
        if name == "toys":
            out += [f"toys:{kind}:{n}:{noise}:{s}"
                    for kind, noises in (("moons", (0.05, 0.1)), ("circles", (0.04, 0.08)))
                    for n in (1000, 1500, 3000) for noise in noises for s in range(10)]
            continue
        if name in ("tables", "tables-raw", "shapes"):
            out += _external_tables().expand(name)
            continue
        folder = os.path.join(os.environ.get("GRAPHCLUST_BATTERY", ""), name[8:])
        if name.startswith("battery:") and os.path.isdir(folder):
            out += sorted(f"{name}/{f[:-len('.data.gz')]}" for f in os.listdir(folder)
                          if f.endswith(".data.gz")
                          and os.path.getsize(os.path.join(folder, f)) > 0  # not held
                          and os.path.exists(os.path.join(folder, f[:-8] + ".labels0.gz")))
        else:
            out.append(name)
    return out


def true_c(y):
    """Clusters of the reference partition; its noise points (label < 0) are not one."""
    return int(len(np.unique(y[y >= 0])))


def load(name):
    if name.startswith(("tables:", "tables-raw:", "shapes:")):
        X, y = _external_tables().load(name)
        return X, y, "euclidean"
    if name.startswith("battery:"):
        X, y = _battery(name)
        return X, y, "euclidean"
    if name.startswith("blobs:"):
        from sklearn.datasets import make_blobs

        n, centers, seed = (int(v) for v in name.split(":")[1:])
        X, y = make_blobs(n, centers=centers, n_features=2, random_state=seed)
        return X, y, "euclidean"
    if name.startswith("toys:"):
        from sklearn.datasets import make_circles, make_moons
        from sklearn.preprocessing import StandardScaler

        kind, n, noise, seed = name.split(":")[1:]
        makers = {"moons": make_moons, "circles": functools.partial(make_circles, factor=0.5)}
        if kind not in makers:
            raise SystemExit(f"unknown toy set {name!r}: the kind must be moons or circles")
        make = makers[kind]
        X, y = make(int(n), noise=float(noise), random_state=int(seed))
        return StandardScaler().fit_transform(X), y, "euclidean"
    f, metric = LOADERS[name]
    X, y = f()
    return X, np.asarray(y), metric


# ---------------------------------------------------------------- methods
def knn(X, metric, k=15, random_state=0):
    from graphclust import nearest_neighbors

    t = time.perf_counter()
    idx, dist = nearest_neighbors(X, k, metric=metric, random_state=random_state)
    return idx, dist, time.perf_counter() - t


def sym_knn(idx):
    n, k = idx.shape
    A = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    A = A.maximum(A.T)
    A.setdiag(0)
    A.eliminate_zeros()
    return A


def run(method, X, y, metric, nbrs, seed=0):
    """One method's row: c found, NMI, ARI, seconds, noise points (None: not applicable)."""
    found = fit_labels(method, X, y, metric, nbrs, seed=seed)
    if found is None:
        return None
    lab, t_total, extra = found
    c = len(np.unique(lab[lab >= 0]))
    keep = y >= 0  # reference noise points are not scored
    return {"c": int(c), "nmi": float(NMI(y[keep], lab[keep])),
            "ari": float(ARI(y[keep], lab[keep])),
            "time": float(t_total), "noise": int((lab < 0).sum()), **extra}


def fit_labels(method, X, y, metric, nbrs, seed=0):
    """(labels, seconds, extra) of one method on X; None when it does not apply to X.

    `nbrs` is ``knn(X, metric)``'s (indices, distances, seconds): the graph of leiden, louvain
    and spectral_at_c, whose search time counts in theirs. `y` gives only the true c of the
    ``*_at_c`` methods.
    """
    import graphclust as gc

    idx, dist, t_knn = nbrs
    n = len(y)
    mcs = max(10, n // 140)
    t = time.perf_counter()
    extra = {}
    if method in ("stability", "stability_at_c"):
        # its own 10-NN search (timed inside); exact search for n <= 70 000 gives the prefix of
        # the 15-NN lists the peers use
        # X is kept with its fit: an id is unique only while its object lives
        if _FITTED.get((id(X), seed), (None,))[0] is not X:
            m = gc.StabilityClustering(metric=metric, random_state=seed,
                                       **stability_params(X.shape[0])).fit(X)
            _FITTED.clear()
            _FITTED[id(X), seed] = X, m, time.perf_counter() - t
        _, m, t_total = _FITTED[id(X), seed]
        if method == "stability":
            lab = m.labels_
            extra = {"rule": m.selection_rule_, "tau": m.tau_,
                     "timings": {k: round(v, 2) for k, v in m.timings_.items()},
                     "d_hat": m.intrinsic_dimension_, "escape": m.escape_time_,
                     "null_escape": m.null_escape_time_}
        else:
            lab = m.labels_at(n_clusters=true_c(y))
    elif method == "stability_noise":
        noise = gc.background_noise(X, metric=metric, random_state=seed)
        m = gc.StabilityClustering(metric=metric, random_state=seed,
                                   **stability_params(int((~noise).sum()))).fit(X[~noise])
        lab = np.empty(n, dtype=np.int64)
        lab[~noise] = m.labels_
        if noise.any():
            lab[noise] = m.predict(X[noise])
        t_total = time.perf_counter() - t
        extra = {"rule": m.selection_rule_, "noise": round(float(noise.mean()), 4)}
    elif method == "spectral_at_c":
        from sklearn.cluster import SpectralClustering

        A = sym_knn(idx)
        # LOBPCG + AMG (pyamg, in the bench extra): scikit-learn's solver for large graphs;
        # ARPACK took 126 s on 20 newsgroups' 11 256 points
        lab = SpectralClustering(n_clusters=true_c(y), affinity="precomputed",
                                 eigen_solver="amg", assign_labels="cluster_qr",
                                 random_state=seed).fit_predict(A)
        t_total = time.perf_counter() - t + t_knn
    elif method in ("omega", "omega_at_c"):
        c_given = {"n_clusters": true_c(y)} if method == "omega_at_c" else {}
        est = gc.ConsistencyClustering(criterion="omega", random_state=seed, **c_given)
        if sp.issparse(X):
            m = est.fit(gc.knn_graph(X, 10, metric="cosine", random_state=0))
        else:
            m = est.fit(X)
        lab = m.labels_
        extra = {"sigma": m.sigma_, "alpha": m.alpha_}
        t_total = time.perf_counter() - t
    elif method in ("leiden", "louvain"):
        A = sym_knn(idx)
        if method == "leiden":
            import igraph as ig
            import leidenalg as la

            U = sp.triu(A, 1).tocoo()
            g = ig.Graph(n=n, edges=np.column_stack([U.row, U.col]).tolist())
            lab = np.array(la.find_partition(g, la.ModularityVertexPartition,
                                             seed=seed).membership)
        else:
            import networkx as nx

            comms = nx.community.louvain_communities(nx.from_scipy_sparse_array(A), seed=seed)
            lab = np.empty(n, int)
            for i, c in enumerate(comms):
                lab[list(c)] = i
        t_total = time.perf_counter() - t + t_knn
    elif method == "latent_classes":
        # tables of codes only: dense, every feature at most 16 values (few_valued's tables)
        from graphclust.cluster._feature_independence import few_valued

        if sp.issparse(X) or not few_valued(X):
            return None
        m = gc.LatentClassClustering(random_state=seed).fit(X)
        lab, t_total = m.labels_, time.perf_counter() - t
        extra = {"bic_c": sorted(m.bic_)[-1]}
    elif method == "multinomial":  # counts of words: sparse, non-negative integers only
        if not (sp.issparse(X) and X.data.min() >= 0 and np.all(X.data == np.round(X.data))):
            return None
        m = gc.MultinomialMixtureClustering(random_state=seed).fit(X)
        lab, t_total = m.labels_, time.perf_counter() - t
    elif method == "hdbscan":
        import hdbscan

        if sp.issparse(X):
            return None
        lab = hdbscan.HDBSCAN(min_cluster_size=mcs, min_samples=10).fit_predict(X)
        t_total = time.perf_counter() - t
    elif method == "gmm_at_c":
        from sklearn.mixture import GaussianMixture

        if sp.issparse(X):
            return None
        lab = GaussianMixture(true_c(y), n_init=2, random_state=seed).fit(X).predict(X)
        t_total = time.perf_counter() - t
    elif method == "umap_hdbscan":
        import hdbscan
        import umap

        # random_state 42 (the recipe's) for seed 0; under --seeds the embedding's own seed
        # moves with the seed, so the peer's variation is measured as ours is
        E = umap.UMAP(n_neighbors=30, min_dist=0.0, n_components=2, random_state=42 + seed,
                      metric=metric).fit_transform(X)
        lab = hdbscan.HDBSCAN(min_samples=10, min_cluster_size=mcs).fit_predict(E)
        t_total = time.perf_counter() - t
    else:
        raise ValueError(f"unknown method {method!r}; choose from {METHODS}")
    return np.asarray(lab), t_total, extra


def report(path, seeds=False):
    rows = [json.loads(line) for line in open(path)]
    if seeds:
        return report_seeds(rows)
    last = {(r["set"], r["method"]): r for r in rows}
    named = DEV + ["three_moons_2400", "uniform_square"]
    sets = [s for s in named if any(k[0] == s for k in last)]
    sets += sorted({k[0] for k in last} - set(named))
    print("| set (true c) | " + " | ".join(METHODS) + " |")
    print("|---|" + "---|" * len(METHODS))
    for s in sets:
        cells = []
        for m in METHODS:
            r = last.get((s, m))
            cells.append("-" if r is None or r.get("c") is None else
                         f"c={r['c']} NMI {r['nmi']:.3f} ARI {r['ari']:.3f} {r['time']:.0f}s")
        tc = next(r["true_c"] for k, r in last.items() if k[0] == s)
        print(f"| {s} ({tc}) | " + " | ".join(cells) + " |")


def report_seeds(rows):
    """Mean +- standard deviation over the seeds of the rows run with --seeds (last run of each
    (set, method, seed))."""
    last = {(r["set"], r["method"], r["seed"]): r for r in rows if "seed" in r}
    groups = {}
    for (s, m, _), r in last.items():
        if r.get("c") is not None:
            groups.setdefault((s, m), []).append(r)
    print("| set | method | seeds | NMI mean +- sd (min-max) | ARI mean +- sd | c per seed |")
    print("|---|---|---|---|---|---|")
    for (s, m), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: r["seed"])
        a = np.array([r["nmi"] for r in rs])
        b = np.array([r["ari"] for r in rs])
        sd = (lambda v: v.std(ddof=1) if v.size > 1 else 0.0)
        print(f"| {s} | {m} | {len(rs)} | {a.mean():.4f} +- {sd(a):.4f} ({a.min():.4f}-"
              f"{a.max():.4f}) | {b.mean():.4f} +- {sd(b):.4f} | "
              f"{', '.join(str(r['c']) for r in rs)} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default=",".join(DEV))
    ap.add_argument("--methods", default="all")
    ap.add_argument("--out", default=OUT, help="JSON-lines file the rows are appended to")
    ap.add_argument("--seeds", default=None,
                    help="comma-separated seeds (random_state of stability / omega, seed of "
                         "leiden / louvain): one row per seed, summarised by --report --seeds")
    ap.add_argument("--n-neighbors", default=None,
                    help="n_neighbors of the stability methods: an int, or 'ln' for ceil(ln n) "
                         "between 5 and 10 (default: the estimator's)")
    ap.add_argument("--report", action="store_true")
    a = ap.parse_args()
    global N_NEIGHBORS
    if a.n_neighbors is not None:
        if a.n_neighbors != "ln" and not a.n_neighbors.isdigit():
            ap.error(f"--n-neighbors must be an int >= 2 or 'ln'; got {a.n_neighbors!r}")
        N_NEIGHBORS = a.n_neighbors if a.n_neighbors == "ln" else int(a.n_neighbors)
    if a.report:
        return report(a.out, seeds=a.seeds is not None)
    seeds = [0] if a.seeds is None else [int(v) for v in a.seeds.split(",")]
    os.environ.setdefault("GRAPHCLUST_DATA", "/work/shared/datasets")
    methods = METHODS if a.methods == "all" else a.methods.split(",")
    # compile graphclust's numba kernels outside the timings: a default fit on more points than
    # the exact search takes compiles every kernel of the default path, NN-descent's included
    # (on a new installation about 75 s, once; docs/reliability.md, *Compilation once per
    # installation*); the rows then time fits as every later process runs them
    t0 = time.perf_counter()
    from sklearn.datasets import make_blobs

    from graphclust import StabilityClustering
    from graphclust.graphs import EXACT_SEARCH_MAX_SAMPLES

    # ten blobs in ten dimensions: the flows take the moments' path, as on the real sets
    warm, _ = make_blobs(EXACT_SEARCH_MAX_SAMPLES + 500, n_features=10, centers=10,
                         cluster_std=3.0, random_state=0)
    for points in (warm[:3000], warm):  # exact lists, then NN-descent's
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StabilityClustering(random_state=0).fit(points)
    print(f"# warm-up (compilation on a new installation) {time.perf_counter() - t0:.1f}s",
          flush=True)
    for name in expand_sets(a.sets.split(",")):
        X, y, metric = load(name)
        nbrs = knn(X, metric)
        print(f"== {name}: n={len(y)}, true c={true_c(y)}, kNN {nbrs[2]:.1f}s", flush=True)
        for m in methods:
            for seed in seeds:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        r = run(m, X, y, metric, nbrs, seed=seed)
                    except ImportError as err:
                        r = {"c": None, "error": f"peer not installed: {err}"}
                    except Exception as err:  # a peer failing is a result too
                        r = {"c": None, "error": repr(err)[:200]}
                if r is None:
                    continue
                if m in ("stability", "stability_at_c") and N_NEIGHBORS is not None:
                    r["n_neighbors"] = stability_params(len(y))["n_neighbors"]
                r.update({"set": name, "method": m, "true_c": int(true_c(y)),
                          "n": int(len(y)), "knn_time": nbrs[2],
                          "when": time.strftime("%H:%M:%S")})
                if a.seeds is not None:
                    r["seed"] = seed
                print("  ", json.dumps(r), flush=True)
                with open(a.out, "a") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
