"""Time and peak memory of every graph builder, beside scikit-learn's kneighbors_graph.

Data: the letter recognition set (first 10 000, then all 20 000 points, 16 features) and MNIST
(70 000 points reduced to 50 dimensions by PCA, plus 17 500 and 35 000 point subsets to measure
how the cost grows with n). Every run prints one markdown table row; the scaling summary at the
end gives the time ratio for each doubling of n at fixed k.

    python scripts/bench_graphs.py                 # full run (about 15-25 minutes on 2 cores)
    python scripts/bench_graphs.py --quick         # letters only

Each builder runs `--repeat` times (default 3) and the fastest run is reported: the machine is
shared, and the minimum is the least disturbed measure of the code's own cost.
Peak memory is the largest increase of the process's resident set size during the call,
sampled every 5 ms (so it includes numba and pynndescent allocations, which tracemalloc misses).
The first pynndescent call of a fresh process compiles its kernels (about 45 s here); a warm-up
on a small sample is run first and its time is reported separately.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time

import numpy as np

import graphclust as gc

PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


def measure(fn):
    """Run fn(); return (result, seconds, peak RSS increase in MB)."""
    base = rss_bytes()
    peak = [base]
    done = threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], rss_bytes())
            time.sleep(0.005)

    t = threading.Thread(target=poll, daemon=True)
    t.start()
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    done.set()
    t.join()
    peak[0] = max(peak[0], rss_bytes())
    return out, dt, (peak[0] - base) / 2**20


def builders(k):
    return [
        ("sklearn kneighbors_graph", lambda X: _sklearn_knn(X, k)),
        (f"knn_graph k={k}", lambda X: gc.knn_graph(X, k, random_state=0)),
        (f"mst_graph (knn k={k})", lambda X: gc.mst_graph(X, n_neighbors=k, random_state=0)),
        ("dmst_graph t=3", lambda X: gc.dmst_graph(X, 3, random_state=0)),
        ("pmst_graph T=20 r=0.4", lambda X: gc.pmst_graph(X, 20, 0.4, random_state=0)),
    ]


def _sklearn_knn(X, k):
    from sklearn.neighbors import kneighbors_graph

    return kneighbors_graph(X, k, mode="distance", include_self=False)


def describe(out):
    if isinstance(out, gc.Graph):
        return out.n_edges, out.n_components
    return out.nnz, "-"


def run(name, X, k, rows, repeat):
    n = X.shape[0]
    for label, fn in builders(k):
        runs = [measure(lambda: fn(X)) for _ in range(repeat)]
        out = runs[0][0]
        dt = min(r[1] for r in runs)
        mem = max(r[2] for r in runs)
        edges, comps = describe(out)
        rows.append((name, n, label, dt, mem, edges, comps))
        print(
            f"| {name} | {n} | {label} | {dt:8.2f} | {mem:8.1f} | {edges} | {comps} |",
            flush=True,
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="letters only (10 000 and 20 000)")
    parser.add_argument("--k", type=int, default=10, help="neighbours (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per builder, best reported (default 3)")
    args = parser.parse_args(argv)

    print(
        f"graphclust {gc.__version__}, numpy {np.__version__}, {os.cpu_count()} cores, "
        f"load average at start {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    warm = np.random.default_rng(0).normal(size=(20_000, 8))
    _, dt, _ = measure(lambda: gc.nearest_neighbors(warm[:12_000], 5, method="approximate", random_state=0))
    print(f"pynndescent warm-up (compilation) on 12 000 points: {dt:.1f} s\n", flush=True)

    print(f"| data | n | builder | best of {args.repeat} (s) | peak RSS increase (MB) | edges | components |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    X, _ = gc.datasets.load_letters()
    run("letters", X[:10_000], args.k, rows, args.repeat)
    run("letters", X, args.k, rows, args.repeat)
    if not args.quick:
        from sklearn.decomposition import PCA

        M, _ = gc.datasets.load_mnist()
        t0 = time.perf_counter()
        Z = PCA(50, random_state=0).fit_transform(M)
        print(f"\n(MNIST PCA to 50 dimensions: {time.perf_counter() - t0:.1f} s)\n", flush=True)
        perm = np.random.default_rng(0).permutation(Z.shape[0])
        for n in (17_500, 35_000, 70_000):
            run("mnist-pca50", np.ascontiguousarray(Z[perm[:n]]), args.k, rows, args.repeat)

        print("\nScaling on MNIST-PCA50 at fixed k (time ratio per doubling of n):")
        for label, _ in builders(args.k):
            t = {r[1]: r[3] for r in rows if r[0] == "mnist-pca50" and r[2] == label}
            r1, r2 = t[35_000] / t[17_500], t[70_000] / t[35_000]
            print(f"  {label:<26} 17.5k->35k x{r1:.2f}   35k->70k x{r2:.2f}")
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
