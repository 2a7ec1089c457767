"""Joining the components of a kNN graph: exact Boruvka scan vs the neighbour-index join.

Data: n / 16 MNIST images (seeded choice) reduced to 50 dimensions by PCA, each repeated 16 times with
seeded Gaussian jitter (sd 0.6 per coordinate; --copies, --sd), so
near-duplicates form their own cliques and the 10-NN graph falls into many components. Or
(``--data blobs``) 8 Gaussian blobs in 10 dimensions (scikit-learn's ``make_blobs``, seed 0):
a few large components far apart, whose points' nearest neighbours are all in their own blob
(the case of a gap test of separated clusters, docs/reliability.md):

    python scripts/bench_join.py --data blobs --n 5000 20000 50000 --methods index

    GRAPHCLUST_DATA=/work/shared/datasets OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        nice -n 10 python scripts/bench_join.py --n 125000 250000 500000 --methods index exact

Prints per n and method: time of the join, peak memory (resident set size sampled every 5 ms
during the join, minus the size before it: what the join adds), components before, edges
added, total added length, the search used. The kNN graph (graphclust.knn_graph, k = 10, seed 0) is built once per n and not timed here.
"""

from __future__ import annotations

import argparse
import threading
import time

import numpy as np
from sklearn.decomposition import PCA

import graphclust as gc


def jittered_mnist(n, copies=16, sd=0.6, seed=0):
    """n points: n / copies MNIST images (seeded choice), PCA-50, each repeated with jitter."""
    X, _ = gc.datasets.load_mnist()
    Z = PCA(50, random_state=0).fit_transform(X)
    rng = np.random.default_rng(seed)
    base = rng.choice(Z.shape[0], size=-(-n // copies), replace=n // copies > Z.shape[0])
    return Z[np.repeat(base, copies)[:n]] + rng.normal(scale=sd, size=(n, Z.shape[1]))


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def timed_with_peak(fn):
    """(result, seconds, peak RSS above the start in MB), RSS sampled every 5 ms."""
    start, peak, done = rss_mb(), [0.0], threading.Event()

    def watch():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(0.005)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    done.set()
    th.join()
    return out, dt, max(peak[0], rss_mb()) - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[125_000, 250_000, 500_000])
    ap.add_argument("--methods", nargs="+", default=["index", "exact"])
    ap.add_argument("--exact-max", type=int, default=250_000, help="skip exact above this n")
    ap.add_argument("--data", choices=["mnist", "blobs"], default="mnist")
    ap.add_argument("--copies", type=int, default=16)
    ap.add_argument("--sd", type=float, default=0.6)
    ap.add_argument("--brute-max-work", type=float, default=None,
                    help="override graphclust.graphs._join.BRUTE_QUERY_MAX_WORK (0: NN-descent always)")
    args = ap.parse_args()
    if args.brute_max_work is not None:
        import graphclust.graphs._join as join_module

        join_module.BRUTE_QUERY_MAX_WORK = args.brute_max_work
    print(f"{'n':>9} {'method':>6} {'search':>11} {'time s':>8} {'+RSS MB':>8} {'comps':>6} "
          f"{'added':>6} {'total added length':>19}", flush=True)
    for n in args.n:
        if args.data == "blobs":
            from sklearn.datasets import make_blobs

            X = make_blobs(n, centers=8, n_features=10, random_state=0)[0]
        else:
            X = jittered_mnist(n, args.copies, args.sd)
        t = time.perf_counter()
        g = gc.knn_graph(X, 10, random_state=0)
        t_graph = time.perf_counter() - t
        base = g.edges()[2].sum()
        if g.n_components == 1:
            print(f"{n:>9} the kNN graph is connected: nothing to join", flush=True)
            continue
        for method in args.methods:
            if method == "exact" and n > args.exact_max:
                print(f"{n:>9} {method:>6} {'(skipped)':>11}", flush=True)
                continue
            j, dt, peak = timed_with_peak(lambda: gc.join_components(g, X, method=method))
            added = j.edges()[2].sum() - base
            print(f"{n:>9} {method:>6} {j.provenance['join_search']:>11} {dt:>8.1f} {peak:>8.0f} "
                  f"{g.n_components:>6} {j.provenance['joined_edges']:>6} {added:>19.6f}"
                  f"   (kNN graph {t_graph:.0f} s, joined: {j.n_components} component)", flush=True)


if __name__ == "__main__":
    main()
