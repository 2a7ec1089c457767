"""Benchmark: fully automatic ConsistencyClustering at scale, beside scikit-learn baselines.

    OPENBLAS_NUM_THREADS=1 python scripts/bench_consistency.py letters mnist

For each data set (letters: UCI letter recognition, 20 000 x 16; mnist: 70 000 digits reduced to
50 PCA dimensions) every method runs in its own subprocess, so that each peak memory (maximum
resident set size) is its own:

- ``consistency``: `ConsistencyClustering(max_clusters=15)` with sigma, alpha and c all searched
  (defaults otherwise: kNN graph with 10 neighbours, deflated CG, estimated column norms); time
  per stage (graph, spectrum, norms, search, final fit) from ``timings_``;
- ``spectral``: scikit-learn SpectralClustering(affinity="nearest_neighbors", n_neighbors=10,
  n_clusters = number of classes given, assign_labels="cluster_qr");
- ``hdbscan``: scikit-learn HDBSCAN(min_cluster_size=50) (noise counts as its own cluster in
  NMI).

A method that exceeds ``--timeout`` seconds is reported as such. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def load(name):
    from graphclust.datasets import load_letters, load_mnist

    if name == "letters":
        return load_letters()
    if name == "mnist":
        from sklearn.decomposition import PCA

        X, y = load_mnist("all")
        X = PCA(n_components=50, random_state=0).fit_transform(X)
        return X, y
    raise ValueError(f"unknown data set {name!r}; choose letters or mnist")


GRIDS = {}


def run_one(method, dataset):
    from graphclust.metrics import nmi

    t0 = time.perf_counter()
    X, y = load(dataset)
    t_load = time.perf_counter() - t0
    out = {"method": method, "dataset": dataset, "n": int(X.shape[0]), "load_s": t_load}
    t0 = time.perf_counter()
    if method == "consistency":
        import graphclust as gc

        model = gc.ConsistencyClustering(max_clusters=15, random_state=0, **GRIDS).fit(X)
        labels = model.labels_
        out.update(
            stages={k: round(v, 1) for k, v in model.timings_.items()},
            c=model.n_clusters_,
            sigma=model.sigma_,
            alpha=model.alpha_,
            norm_error_max=model.column_norms_.max_relative_error,
            norm_error_median=float(np.median(model.column_norms_.relative_error)),
            omega_by_c={int(k): round(v, 4) for k, v in model.omega_by_n_clusters_.items()},
        )
    elif method == "spectral":
        from sklearn.cluster import SpectralClustering

        c = int(np.unique(y).size)
        labels = SpectralClustering(
            n_clusters=c, affinity="nearest_neighbors", n_neighbors=10,
            assign_labels="cluster_qr", random_state=0,
        ).fit_predict(X)
        out["c"] = c
    elif method == "hdbscan":
        from sklearn.cluster import HDBSCAN

        labels = HDBSCAN(min_cluster_size=50).fit_predict(X)
        out["c"] = int(np.unique(labels[labels >= 0]).size)
        out["noise_fraction"] = float(np.mean(labels < 0))
    else:
        raise ValueError(method)
    out["fit_s"] = time.perf_counter() - t0
    out["nmi"] = nmi(y, labels)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", help="letters, mnist (default both)")
    parser.add_argument("--methods", default="consistency,spectral,hdbscan")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per method")
    parser.add_argument("--sigma-grid", default=None,
                        help="comma-separated sigma factors (default: the estimator's)")
    parser.add_argument("--alpha-grid", default=None,
                        help="comma-separated alphas (default: the estimator's)")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "DATASET"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    extra = []
    for key in ("sigma_grid", "alpha_grid"):
        value = getattr(args, key)
        if value:
            GRIDS[key] = tuple(float(v) for v in value.split(","))
            extra += [f"--{key.replace('_', '-')}", value]
    if args.one:
        print(json.dumps(run_one(*args.one)))
        return 0
    datasets = args.datasets or ["letters", "mnist"]
    print("| data | n | method | c | sigma | alpha | NMI | fit s | stages s | peak RSS MB | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
    for ds in datasets:
        for method in args.methods.split(","):
            try:
                proc = subprocess.run(
                    [sys.executable, __file__, "--one", method, ds, *extra],
                    capture_output=True, text=True, timeout=args.timeout,
                )
            except subprocess.TimeoutExpired:
                print(f"| {ds} | | {method} | | | | | > {args.timeout:.0f} | | | timed out |",
                      flush=True)
                continue
            if proc.returncode != 0:
                err = proc.stderr.strip().splitlines()[-1:] or ["?"]
                print(f"| {ds} | | {method} | | | | | | | | failed: {err[0]} |", flush=True)
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            sig = "" if r.get("sigma") is None else f"{r['sigma']:.4g}"
            alp = "" if r.get("alpha") is None else f"{r['alpha']:.7g}"
            stages = ", ".join(f"{k} {v}" for k, v in r.get("stages", {}).items())
            notes = []
            if "norm_error_max" in r:
                notes.append(f"nu est. rel. error max {r['norm_error_max']:.1e} / median "
                             f"{r['norm_error_median']:.1e}")
                notes.append("Omega by c " + " ".join(f"{k}:{v}" for k, v in r["omega_by_c"].items()))
            if "noise_fraction" in r:
                notes.append(f"noise {r['noise_fraction']:.2f}")
            print(
                f"| {ds} | {r['n']} | {method} | {r.get('c', '')} | {sig} | {alp} | "
                f"{r['nmi']:.3f} | {r['fit_s']:.0f} | {stages} | {r['peak_rss_mb']:.0f} | "
                f"{'; '.join(notes)} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
