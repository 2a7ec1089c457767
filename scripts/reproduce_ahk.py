"""Reproduce Huang, Yoo, Qin & Yu (ICDM 2011), "Aggregated Heat Kernel" clustering, with graphclust.

Parts (run all, or pick with flags):

    --table     Table II / III: NMI with cosine similarity (binary links for PolBooks) on Iris,
                PenDigits01, PenDigits17, PolBooks and the 20 Newsgroups subsets; methods NJW,
                CD (commute time, nn), MDM (multiscale diffusion map, rw), AHK with the five
                normalisations. The complete graph, every non-trivial eigenpair (m = n - c), as
                the paper. Sampled sets: mean and std over `--draws` seeded draws.
    --figure4   Figure 4 (e, g): NMI against the global Gaussian sigma in [0.1, 8] for AHK-lbn and
                NJW on Iris with 0 % and 40 % uniform noise points (complete graph, NMI on the 150
                Iris points, noise averaged over `--noise-draws` seeded draws). Plot to docs/.
    --figure4-local   Figure 4 (f, h): the same against the local-scaling neighbour rank q in
                5..50 (self-tuning affinity sigma_i sigma_j).
    --m-curve   NMI against the number of eigenpairs m for AHK-lbn on the Table III sets.
    --m-dev     The same on development sets that are *not* reported against the paper (USPS,
                letters, synthetic control), with the estimator's defaults (10-NN graph, median
                sigma): what `DEFAULT_N_EIGENPAIRS` is chosen from; m = all is the full kernel.
    --full-dev  The full kernel (the default) against m = 100 on USPS, pendigits, letters and
                MNIST (PCA 50): NMI, agreement, eigenpair time (not part of "everything").

20 Newsgroups mapping (PMTK ``20news_w1000``, training split: 1 000 stemmed word groups, stop
words removed, word counts; the paper used 61 188 raw words):

    20ngA = misc.forsale 100 + soc.religion.christian 100
    20ngB = misc.forsale 200 + soc.religion.christian 200
    20ngC = 20ngB + talk.politics.guns 200
    20ngD = misc.forsale, soc.religion.christian, comp.graphics, sci.space, 100 each (the paper
            does not name 20ngD's two further groups: this is our choice)
    20ngD x % noise = 20ngD + x % of 400 documents, half talk.politics.guns, half
            rec.sport.baseball (the paper's noise groups); NMI on the 400 non-noise documents.

UBMCBlog and AGBlog (political blog networks) are not in the shared data and are skipped.

    python scripts/reproduce_ahk.py                       # everything (~10 min on 2 busy cores)
    python scripts/reproduce_ahk.py --table --draws 5
    python scripts/reproduce_ahk.py --figure4 --noise-draws 20
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

import graphclust as gc
from graphclust.datasets import (
    load_iris_noisy,
    load_letters,
    load_network,
    load_newsgroups,
    load_pendigits,
    load_synthetic_control,
    load_usps,
)
from graphclust.metrics import nmi

PAPER_TABLE3 = {  # NR, CD, NJW, ST, MDM, AHK (percent NMI)
    "Iris": (8.8, 48.4, 63.5, 70.4, 72.3, 93.1),
    "PenDigits01": (100, 95.9, 100, 100, 100, 100),
    "PenDigits17": (2.4, 12.9, 20.4, 20.4, 16.1, 20.7),
    "PolBooks": (57.5, 52.0, 54.2, 58.3, 56.3, 58.7),
    "20ngA": (2.4, 0.7, 75.9, 80.8, 75.9, 78.2),
    "20ngB": (1.6, 0.3, 10.0, 71.8, 5.0, 2.4),
    "20ngC": (2.2, 1.7, 34.9, 67.2, 34.4, 38.2),
    "20ngD 0%": (2.4, 0.0, 56.8, 61.7, 55.4, 53.5),
    "20ngD 50%": (2.8, 2.0, 38.5, 49.0, 41.5, 42.1),
    "20ngD 100%": (2.6, 0.2, 39.5, 43.7, 39.5, 38.8),
}
PAPER_TABLE2 = {  # NN, RW, FP, SYM, LBN
    "Iris": (8.8, 40.6, 40.6, 70.4, 60.8),
    "PenDigits01": (100, 95.9, 100, 100, 100),
    "PenDigits17": (2.3, 0.9, 13.8, 16.1, 16.1),
    "PolBooks": (56.9, 56.9, 54.0, 58.3, 56.7),
    "20ngA": (6.2, 8.0, 78.2, 80.8, 73.6),
    "20ngB": (1.9, 0.0, 37.2, 71.8, 67.8),
    "20ngC": (15.7, 2.6, 12.4, 67.2, 38.5),
    "20ngD 0%": (3.0, 0.0, 10.2, 61.7, 56.4),
    "20ngD 50%": (4.7, 0.7, 4.0, 49.0, 31.1),
    "20ngD 100%": (5.1, 0.1, 5.6, 43.7, 33.7),
}
# The extracted text of the paper interleaves Tables II and III column-wise; where the AHK column
# of Table III (93.1, ..., 56.0 average) disagrees with the LBN column of Table II (60.8, ...) we
# report both as printed.


# ---------------------------------------------------------------- data sets
def cosine_W(X):
    """Complete cosine-similarity graph (the paper's setting for small sets)."""
    n = X.shape[0]
    return gc.affinity(gc.knn_graph(X, n - 1, metric="cosine"), kind="cosine")


def pendigits_pair(a, b, seed, per_class=100):
    X, y = load_pendigits("train")
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in (a, b)]
    )
    return X[idx], (y[idx] == b).astype(int)


_NG = {}


def newsgroups(groups, per_group, seed, noise=()):
    """Documents of `groups` (per_group each) + noise documents; labels -1 for noise."""
    if not _NG:
        X, y, names = load_newsgroups("w1000", "train")
        _NG.update(X=X, y=y, names=names)
    X, y, names = _NG["X"], _NG["y"], _NG["names"]
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for j, (g, count) in enumerate(list(zip(groups, per_group)) + list(noise)):
        c = names.index(g)
        rows.append(rng.choice(np.flatnonzero(y == c), count, replace=False))
        labels.append(np.full(count, j if j < len(groups) else -1))
    idx = np.concatenate(rows)
    return sp.csr_matrix(X[idx]), np.concatenate(labels)


NG_A = ["misc.forsale", "soc.religion.christian"]
NG_D = ["misc.forsale", "soc.religion.christian", "comp.graphics", "sci.space"]
NG_NOISE = ["talk.politics.guns", "rec.sport.baseball"]


def table_sets(seed):
    """name -> (W, y, k); y = -1 marks noise points excluded from the NMI."""
    from sklearn.datasets import load_iris

    out = {}
    X, y = load_iris(return_X_y=True)
    out["Iris"] = (cosine_W(X), y, 3)
    for name, (a, b) in (("PenDigits01", (0, 1)), ("PenDigits17", (1, 7))):
        X, y = pendigits_pair(a, b, seed)
        out[name] = (cosine_W(X), y, 2)
    G = load_network("polbooks")
    y = np.array([{"l": 0, "n": 1, "c": 2}[G.nodes[v]["value"]] for v in G.nodes])
    import networkx as nx

    A = nx.to_scipy_sparse_array(G, nodelist=list(G.nodes), format="csr", weight=None)
    out["PolBooks"] = (sp.csr_matrix(A, dtype=float), y, 3)
    sets = {
        "20ngA": (NG_A, [100, 100], ()),
        "20ngB": (NG_A, [200, 200], ()),
        "20ngC": (NG_A + ["talk.politics.guns"], [200, 200, 200], ()),
        "20ngD 0%": (NG_D, [100] * 4, ()),
        "20ngD 50%": (NG_D, [100] * 4, tuple((g, 100) for g in NG_NOISE)),
        "20ngD 100%": (NG_D, [100] * 4, tuple((g, 200) for g in NG_NOISE)),
    }
    for name, (groups, counts, noise) in sets.items():
        X, y = newsgroups(groups, counts, seed, noise)
        out[name] = (cosine_W(X), y, len(groups))
    return out


SAMPLED = {"PenDigits01", "PenDigits17"} | {k for k in PAPER_TABLE3 if k.startswith("20ng")}


def full_m(W):
    c = connected_components(W, directed=False)[0]
    return W.shape[0] - c


def methods(m, n_init, seed):
    kw = dict(affinity="precomputed", n_eigenpairs=m, n_init=n_init, random_state=seed)
    return {
        "NJW": gc.SpectralClustering(affinity="precomputed", n_init=n_init, random_state=seed),
        "CD": gc.AHKClustering(kernel="commute", normalization="nn", **kw),
        "MDM": gc.AHKClustering(kernel="mdm", normalization="rw", **kw),
        "AHK-nn": gc.AHKClustering(normalization="nn", **kw),
        "AHK-rw": gc.AHKClustering(normalization="rw", **kw),
        "AHK-fp": gc.AHKClustering(normalization="fp", **kw),
        "AHK-sym": gc.AHKClustering(normalization="sym", **kw),
        "AHK-lbn": gc.AHKClustering(normalization="lbn", **kw),
    }


def score(model, W, y, k):
    model.set_params(n_clusters=k)
    labels = model.fit_predict(W)
    keep = y >= 0
    return 100 * nmi(y[keep], labels[keep])


def run_table(draws, n_init):
    names = list(PAPER_TABLE3)
    results = {name: {} for name in names}
    t0 = time.perf_counter()
    for seed in range(draws):
        for name, (W, y, k) in table_sets(seed).items():
            if seed > 0 and name not in SAMPLED:
                continue
            for meth, model in methods(full_m(W), n_init, seed).items():
                results[name].setdefault(meth, []).append(score(model, W, y, k))
    cols = list(methods(2, 1, 0))
    print(f"\n### NMI (%) with cosine similarity, m = n - c, k-means best of {n_init}")
    print(f"(sampled sets: mean +- std over {draws} seeded draws; {time.perf_counter() - t0:.0f} s)\n")
    print("| data | " + " | ".join(cols) + " | paper NJW | paper CD | paper MDM | paper AHK |")
    print("|---" * (len(cols) + 5) + "|")
    means = {c: [] for c in cols}
    for name in names:
        cells = []
        for c in cols:
            v = np.array(results[name][c])
            means[c].append(v.mean())
            cells.append(f"{v.mean():.1f}" + (f" +- {v.std():.1f}" if v.size > 1 else ""))
        p = PAPER_TABLE3[name]
        print(f"| {name} | " + " | ".join(cells) + f" | {p[2]} | {p[1]} | {p[4]} | {p[5]} |")
    print("| average | " + " | ".join(f"{np.mean(means[c]):.1f}" for c in cols) + " | | | | |")
    print("\nPaper Table II (AHK normalisations NN, RW, FP, SYM, LBN):")
    for name in names:
        print(f"  {name:<11} " + "  ".join(f"{v:5.1f}" for v in PAPER_TABLE2[name]))
    return results


# ---------------------------------------------------------------- Figure 4
SIGMAS = np.r_[np.round(np.arange(0.1, 1.01, 0.1), 1), np.arange(1.5, 8.01, 0.5)]


def _figure4_curves(noise_draws, n_init, params, make_W):
    """NMI (%) of AHK-lbn and NJW on Iris (0% and 40% noise) for each parameter value.

    ``make_W(graph, value)`` builds the affinity on the complete graph; returns
    {(noise, method): array (draws, len(params))}.
    """
    from sklearn.datasets import load_iris

    _, y150 = load_iris(return_X_y=True)
    curves = {}
    for noise in (0.0, 0.4):
        draws = 1 if noise == 0 else noise_draws
        for meth in ("AHK-lbn", "NJW"):
            curves[(noise, meth)] = np.zeros((draws, len(params)))
        for d in range(draws):
            X, _ = load_iris_noisy(noise, random_state=d)
            graph = gc.knn_graph(X, X.shape[0] - 1)
            for j, value in enumerate(params):
                W = make_W(graph, value)
                ahk = gc.AHKClustering(
                    3, affinity="precomputed", n_eigenpairs=full_m(W), n_init=n_init, random_state=d
                )
                njw = gc.SpectralClustering(3, affinity="precomputed", n_init=n_init, random_state=d)
                for meth, model in (("AHK-lbn", ahk), ("NJW", njw)):
                    labels = model.fit_predict(W)
                    curves[(noise, meth)][d, j] = 100 * nmi(y150, labels[:150])
    return curves


def run_figure4(noise_draws, n_init, plot=True):
    t0 = time.perf_counter()
    curves = _figure4_curves(noise_draws, n_init, SIGMAS, lambda g, s: gc.affinity(g, float(s)))
    print(f"\n### Figure 4: NMI (%) on Iris against global sigma ({time.perf_counter() - t0:.0f} s)")
    print(f"(complete graph, m = n - c, k-means best of {n_init}; 40 % noise: mean over "
          f"{noise_draws} draws, NMI on the 150 Iris points)\n")
    print("| sigma | " + " | ".join(f"{m} {int(100 * z)}%" for z, m in curves) + " |")
    print("|---" * (len(curves) + 1) + "|")
    for j, s in enumerate(SIGMAS):
        print(f"| {s:.1f} | " + " | ".join(f"{c.mean(0)[j]:.1f}" for c in curves.values()) + " |")
    print("\nRobustness summary (over the 24 sigma values):")
    print("| curve | best | mean | min | sigmas within 5 NMI points of best |")
    print("|---|---|---|---|---|")
    for (z, m), c in curves.items():
        v = c.mean(0)
        print(f"| {m} {int(100 * z)}% | {v.max():.1f} | {v.mean():.1f} | {v.min():.1f} | "
              f"{int((v >= v.max() - 5).sum())} / {v.size} |")
    for z in (0.0, 0.4):
        a, b = curves[(z, "AHK-lbn")].mean(0), curves[(z, "NJW")].mean(0)
        print(f"{int(100 * z)}% noise: AHK-lbn >= NJW at {int((a >= b).sum())} / {a.size} sigmas; "
              f"mean gap {np.mean(a - b):+.1f} NMI points")
    if plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
        for ax, z in zip(axes, (0.0, 0.4)):
            for m, style in (("AHK-lbn", "o-"), ("NJW", "s--")):
                ax.plot(SIGMAS, curves[(z, m)].mean(0), style, label=m, ms=4)
            ax.set_xscale("log")
            ax.set_xlabel("global sigma")
            ax.set_title(f"Iris, {int(100 * z)}% uniform noise")
            ax.grid(alpha=0.3)
        axes[0].set_ylabel("NMI (%)")
        axes[0].legend()
        fig.tight_layout()
        fig.savefig("docs/ahk_figure4_iris.png", dpi=110)
        print("\nplot: docs/ahk_figure4_iris.png")
    return curves


def run_figure4_local(noise_draws, n_init):
    """Figure 4 (f, h): the same with local scaling sigma_i sigma_j, sigma_i = distance to the
    q-th nearest neighbour, q in 5..50 (the paper's range)."""
    qs = np.arange(5, 51)
    t0 = time.perf_counter()
    curves = _figure4_curves(
        noise_draws, n_init, qs, lambda g, q: gc.affinity(g, kind="local", n_neighbors=int(q))
    )
    print(f"\n### Figure 4 (local scaling): NMI (%) on Iris against q ({time.perf_counter() - t0:.0f} s)")
    print(f"(complete graph, w_ij = exp(-d_ij^2 / (sigma_i sigma_j)), sigma_i = distance to the q-th "
          f"neighbour; k-means best of {n_init}; 40 % noise: mean over {noise_draws} draws)\n")
    print("| q | " + " | ".join(f"{m} {int(100 * z)}%" for z, m in curves) + " |")
    print("|---" * (len(curves) + 1) + "|")
    for j, q in enumerate(qs):
        if q % 5 == 0:
            print(f"| {q} | " + " | ".join(f"{c.mean(0)[j]:.1f}" for c in curves.values()) + " |")
    print("\n| curve (46 q values) | best | mean | worst | q within 5 points of its best |")
    print("|---|---|---|---|---|")
    for (z, m), c in curves.items():
        v = c.mean(0)
        print(f"| {m} {int(100 * z)}% | {v.max():.1f} | {v.mean():.1f} | {v.min():.1f} | "
              f"{int((v >= v.max() - 5).sum())} / {v.size} |")
    for z in (0.0, 0.4):
        a, b = curves[(z, "AHK-lbn")].mean(0), curves[(z, "NJW")].mean(0)
        print(f"{int(100 * z)}% noise: AHK-lbn >= NJW at {int((a >= b).sum())} / {a.size} q values; "
              f"mean gap {np.mean(a - b):+.1f} NMI points")
    return curves


# ---------------------------------------------------------------- effect of m
M_VALUES = [5, 10, 20, 50, 100, 200, 300]


def run_m_curve(n_init):
    sets = table_sets(0)
    print(f"\n### AHK-lbn NMI (%) against m (Table III sets, draw 0, k-means best of {n_init})\n")
    print("| data | n | " + " | ".join(f"m={m}" for m in M_VALUES) + " | m=n-c |")
    print("|---" * (len(M_VALUES) + 3) + "|")
    for name in ("Iris", "PenDigits17", "PolBooks", "20ngB", "20ngC", "20ngD 0%"):
        W, y, k = sets[name]
        mm = full_m(W)
        cells = []
        for m in M_VALUES + [mm]:
            if m > mm or m < k:
                cells.append("-")
                continue
            model = gc.AHKClustering(affinity="precomputed", n_eigenpairs=m, n_init=n_init, random_state=0)
            cells.append(f"{score(model, W, y, k):.1f}")
        print(f"| {name} | {W.shape[0]} | " + " | ".join(cells) + " |")


def dev_sets():
    rng = np.random.default_rng(0)
    Xu, yu, _, _ = load_usps()
    i = rng.choice(len(Xu), 2000, replace=False)
    Xl, yl = load_letters()
    j = rng.choice(len(Xl), 3000, replace=False)
    Xc, yc = load_synthetic_control()
    return {"USPS 2000": (Xu[i], yu[i]), "letters 3000": (Xl[j], yl[j]),
            "synthetic control": (Xc, yc)}


def run_m_dev(n_init):
    ms = [10, 20, 50, 100, 200, 300, "all"]  # "all": the full kernel (resolvent_eigenpairs)
    print("\n### Choosing the default m: AHK-lbn NMI (%) and eigenpair time against m")
    print("(development sets, estimator defaults: 10-NN graph, median sigma, gamma 0.01; "
          "mean over 3 seeds)\n")
    print("| data | k | " + " | ".join(f"m={m}" for m in ms) + " |")
    print("|---" * (len(ms) + 2) + "|")
    for name, (X, y) in dev_sets().items():
        k = len(np.unique(y))
        cells = []
        for m in ms:
            if m != "all" and m < k:
                cells.append("-")
                continue
            vals, secs = [], []
            for seed in range(3):
                model = gc.AHKClustering(k, n_eigenpairs=m, n_init=n_init, random_state=seed).fit(X)
                vals.append(100 * nmi(y, model.labels_))
                secs.append(model.timings_["eigenpairs"])
            cells.append(f"{np.mean(vals):.1f} ({np.mean(secs):.1f} s)")
        print(f"| {name} | {k} | " + " | ".join(cells) + " |")


def run_full_dev():
    """The full kernel against m = 100 on the larger development sets (default threads)."""
    from sklearn.decomposition import PCA
    from sklearn.metrics import adjusted_rand_score

    from graphclust.datasets import load_mnist

    Xu, yu = load_usps()[:2]
    Xp, yp = load_pendigits("train")
    Xm, ym = load_mnist()
    sets = {"USPS": (Xu, yu), "pendigits": (Xp, yp), "letters": load_letters()[:2],
            "MNIST, PCA 50": (PCA(50, random_state=0).fit_transform(np.asarray(Xm, float)), ym)}
    print("\n### AHK's full kernel against m = 100 (k given, estimator defaults on the 10-NN "
          "graph, seed 0)\n")
    print("| data (n) | k | NMI full kernel | NMI m = 100 | ARI between them | "
          "eigenpairs s, full | m = 100 |")
    print("|---|---|---|---|---|---|---|")
    for name, (X, y) in sets.items():
        k = len(np.unique(y))
        G = gc.knn_graph(X, 10)
        fits = [gc.AHKClustering(k, n_eigenpairs=m, random_state=0).fit(G) for m in ("auto", 100)]
        nmis = [nmi(y, f.labels_) for f in fits]
        cells = [f"{f.timings_['eigenpairs']:.1f} ({f.eigen_method_})" for f in fits]
        print(f"| {name} ({len(y)}) | {k} | {nmis[0]:.4f} | {nmis[1]:.4f} | "
              f"{adjusted_rand_score(fits[0].labels_, fits[1].labels_):.3f} | {cells[0]} | "
              f"{cells[1]} |", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--figure4", action="store_true")
    ap.add_argument("--figure4-local", action="store_true")
    ap.add_argument("--m-curve", action="store_true")
    ap.add_argument("--m-dev", action="store_true")
    ap.add_argument("--full-dev", action="store_true")
    ap.add_argument("--draws", type=int, default=5)
    ap.add_argument("--noise-draws", type=int, default=20, help="paper: 20")
    ap.add_argument("--n-init", type=int, default=100, help="k-means restarts (paper: 100)")
    args = ap.parse_args()
    if args.full_dev:  # default threads: the eigensolvers as a user runs them
        run_full_dev()
        return
    everything = not (args.table or args.figure4 or args.figure4_local or args.m_curve or args.m_dev)
    with threadpool_limits(1):  # 2 shared cores: threaded LAPACK only contends
        if everything or args.table:
            run_table(args.draws, args.n_init)
        if everything or args.figure4:
            run_figure4(args.noise_draws, args.n_init)
        if everything or args.figure4_local:
            run_figure4_local(args.noise_draws, args.n_init)
        if everything or args.m_curve:
            run_m_curve(args.n_init)
        if everything or args.m_dev:
            run_m_dev(10)


if __name__ == "__main__":
    main()
