"""Benchmark AHK-lbn and NJW at MNIST scale, beside scikit-learn's SpectralClustering.

MNIST (70 000 digits, train + test) reduced to 50 PCA dimensions, a 10-NN graph (NN-descent),
Gaussian affinity with the median edge length as sigma; then

- graphclust AHKClustering (lbn, gamma = 0.01, k = 10): its default (the full kernel) and the
  truncation to m = `--m` eigenpairs,
- graphclust SpectralClustering (NJW, k = 10),
- scikit-learn SpectralClustering(affinity="precomputed") on the *same* W (ARPACK), in a
  subprocess killed after `--sklearn-timeout` seconds, and its eigen_solver="amg" when pyamg is
  installed,

with the time of each stage (graph, eigenpairs, embedding, k-means) and the NMI against the digit
labels. Nothing n x n is allocated. Timings are wall clock on whatever machine runs it (the
numbers in docs/spectral.md come from a 2-core machine shared with two other developers).

    python scripts/bench_spectral.py                 # full MNIST, m = 100
    python scripts/bench_spectral.py --n 20000 --m 50
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp


def sklearn_child(path, k, solver, seed):
    """Run in a subprocess: scikit-learn on the saved W; prints one JSON line."""
    from sklearn.cluster import SpectralClustering as SkSC

    W = sp.load_npz(path)
    t0 = time.perf_counter()
    labels = SkSC(
        n_clusters=k, affinity="precomputed", eigen_solver=solver, random_state=seed, n_init=10
    ).fit_predict(W)
    print(json.dumps({"seconds": time.perf_counter() - t0, "labels": labels.tolist()}))


def run_sklearn(W, k, solver, seed, timeout):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "W.npz")
        sp.save_npz(path, sp.csr_matrix(W))
        cmd = [sys.executable, __file__, "--sklearn-child", path, str(k), solver, str(seed)]
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return None, f"did not finish within {timeout} s (killed)"
        if out.returncode != 0:
            return None, "failed: " + out.stderr.strip().splitlines()[-1][:120]
        res = json.loads(out.stdout.strip().splitlines()[-1])
        return res, None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=70_000, help="points (a seeded subsample below 70 000)")
    ap.add_argument("--m", type=int, default=100, help="AHK eigenpairs")
    ap.add_argument("--n-neighbors", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sklearn-timeout", type=float, default=240.0)
    ap.add_argument("--sklearn-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.sklearn_child:
        path, k, solver, seed = args.sklearn_child
        sklearn_child(path, int(k), solver, int(seed))
        return

    import graphclust as gc
    from graphclust.datasets import load_mnist
    from graphclust.metrics import nmi
    from sklearn.decomposition import PCA

    k = 10
    rows = []
    t_all = time.perf_counter()
    X, y = load_mnist("all")
    if args.n < len(X):
        idx = np.random.default_rng(args.seed).choice(len(X), args.n, replace=False)
        X, y = X[idx], y[idx]
    t0 = time.perf_counter()
    Xp = PCA(50, random_state=args.seed).fit_transform(X)
    t_pca = time.perf_counter() - t0
    t0 = time.perf_counter()
    graph = gc.knn_graph(Xp, args.n_neighbors, random_state=args.seed)
    W = gc.affinity(graph)
    t_graph = time.perf_counter() - t0
    print(f"MNIST n = {len(X)}, PCA 50 dims: {t_pca:.1f} s; {args.n_neighbors}-NN graph + "
          f"affinity: {t_graph:.1f} s ({graph.n_edges} edges, {graph.n_components} components)")

    for m in ("auto", args.m):  # the default (the full kernel), then the paper's truncation
        ahk = gc.AHKClustering(k, affinity="precomputed", n_eigenpairs=m, random_state=args.seed)
        ahk.fit(W)
        name = "full kernel, the default" if m == "auto" else f"m = {m}"
        rows.append((f"graphclust AHK-lbn ({name})", ahk.timings_, nmi(y, ahk.labels_)))
        print(f"  AHK ({name}): eigen residual {ahk.eigen_residual_:.1e} ({ahk.eigen_method_}), "
              f"components handled: {ahk.component_vectors_}")
    njw = gc.SpectralClustering(k, affinity="precomputed", random_state=args.seed).fit(W)
    rows.append(("graphclust NJW", njw.timings_, nmi(y, njw.labels_)))

    sk_rows = []
    solvers = ["arpack"]
    try:
        import pyamg  # noqa: F401

        solvers.append("amg")
    except ImportError:
        sk_rows.append(("scikit-learn amg", None, "pyamg is not installed here"))
    for solver in solvers:
        res, err = run_sklearn(W, k, solver, args.seed, args.sklearn_timeout)
        name = f"scikit-learn SpectralClustering ({solver}, same W)"
        if res is None:
            sk_rows.append((name, None, err))
        else:
            sk_rows.append((name, res["seconds"], nmi(y, np.array(res["labels"]))))

    print("\n| method | graph s | eigenpairs s | embedding s | k-means s | total s | NMI |")
    print("|---|---|---|---|---|---|---|")
    for name, t, score in rows:
        total = t_graph + t["eigenpairs"] + t["embedding"] + t["kmeans"]
        print(f"| {name} | {t_graph:.1f} | {t['eigenpairs']:.1f} | {t['embedding']:.1f} | "
              f"{t['kmeans']:.1f} | {total:.1f} | {score:.3f} |")
    for name, secs, score in sk_rows:
        if secs is None:
            print(f"| {name} | {t_graph:.1f} | - | - | - | - | {score} |")
        else:
            print(f"| {name} | {t_graph:.1f} | (all stages: {secs:.1f}) | | | "
                  f"{t_graph + secs:.1f} | {score:.3f} |")
    print(f"\n(PCA {t_pca:.1f} s not included; whole run {time.perf_counter() - t_all:.0f} s)")


if __name__ == "__main__":
    main()
