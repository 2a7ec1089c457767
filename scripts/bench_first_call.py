"""What the first `knn_graph` call costs in a fresh Python process: exact search vs NN-descent.

Each measurement runs in its own new interpreter, as a user's script or the command line does:
``import graphclust``, load the points, ``knn_graph(X, 10, method=...)`` (the first call, which
pays numba's compilation), then the same call again (warm). Data: MNIST (70 000 x 784) projected
on its first 50 principal components (PCA fitted once in this parent process and handed to the
children as a .npy file), first n rows; ``--dims 2`` adds the 2-component projection, where the
exact search is a kd-tree.

    GRAPHCLUST_DATA=/work/shared/datasets OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        NUMBA_NUM_THREADS=1 nice -n 10 python scripts/bench_first_call.py

prints one row per (dims, n, method): process wall time (interpreter start to exit), import
time, first call, second call. Run it twice: the first run also fills numba's on-disk cache
(``cache=True`` kernels), the second shows what every later fresh process pays.

``--compile`` measures instead what a new installation pays once: the package is copied
(without its ``__pycache__`` folders, so numba's disk cache is empty) into a temporary folder,
and ``StabilityClustering(random_state=0).fit`` runs in a fresh process on 600 three-moons
points (exact kNN lists) and then on the first ``--compile-n`` MNIST rows (NN-descent lists),
each twice: the first run compiles the kernels it meets, the second loads them from the cache.
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

CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import graphclust as gc
t1 = time.perf_counter()
X = np.load(sys.argv[1], mmap_mode="r")[: int(sys.argv[2])].copy()
t2 = time.perf_counter()
g = gc.knn_graph(X, 10, method=sys.argv[3])
t3 = time.perf_counter()
gc.knn_graph(X, 10, method=sys.argv[3])
t4 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": t4 - t3, "edges": g.n_edges}))
"""


FIT_CHILD = r"""
import json, sys, time
import numpy as np
import graphclust as gc
if sys.argv[1] == "moons":
    X, _ = gc.datasets.three_moons(600, random_state=0)
else:
    X = np.load(sys.argv[1], mmap_mode="r")[: int(sys.argv[2])].copy()
t0 = time.perf_counter()
m = gc.StabilityClustering(random_state=0).fit(X)
print(json.dumps({"fit": time.perf_counter() - t0, "c": int(m.n_clusters_),
                  "source": gc.__file__}))
"""


def compile_cost(Z, n):
    """First fits of a new installation against fits in a later fresh process."""
    import shutil

    import graphclust

    src = os.path.dirname(graphclust.__file__)
    print("# StabilityClustering().fit in fresh processes on a copy of the package whose numba "
          "cache starts empty")
    print(f"{'data':>22} {'compiling s':>12} {'cached s':>9} {'c':>3}")
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(src, os.path.join(tmp, "graphclust"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        path = os.path.join(tmp, "mnist.npy")
        np.save(path, np.ascontiguousarray(Z[:n]))
        env = dict(os.environ, PYTHONPATH=tmp)
        for label, argv in (("three moons, 600", ["moons"]),
                            (f"MNIST PCA-50, {n}", [path, str(n)])):
            times = []
            for _ in range(2):
                out = subprocess.run([sys.executable, "-c", FIT_CHILD, *argv], env=env, cwd=tmp,
                                     capture_output=True, text=True, check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                assert r["source"].startswith(tmp), r["source"]  # the copy, not the install
                times.append(r["fit"])
            print(f"{label:>22} {times[0]:>12.1f} {times[1]:>9.1f} {r['c']:>3}", flush=True)


def projected_mnist(dims):
    from sklearn.decomposition import PCA

    from graphclust.datasets import load_mnist

    X, _ = load_mnist("all")
    return PCA(n_components=max(dims), random_state=0).fit_transform(X)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,20000,50000,70000")
    parser.add_argument("--dims", default="50", help="comma-separated PCA dimensions")
    parser.add_argument("--methods", default="exact,approximate")
    parser.add_argument("--compile", action="store_true",
                        help="the first fits of a new installation (numba's cache empty)")
    parser.add_argument("--compile-n", type=int, default=30_000)
    args = parser.parse_args()
    if args.compile:
        return compile_cost(projected_mnist([50]), args.compile_n)
    sizes = [int(s) for s in args.sizes.split(",")]
    dims = [int(d) for d in args.dims.split(",")]
    methods = args.methods.split(",")
    Z = projected_mnist(dims)
    threads = {k: os.environ.get(k, "unset") for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS")}
    print(f"# MNIST PCA, k=10, fresh process per row; threads: {threads}")
    print(f"{'dims':>4} {'n':>7} {'method':>12} {'process s':>10} {'import s':>9} {'1st call s':>11} {'2nd call s':>11}")
    with tempfile.TemporaryDirectory() as tmp:
        for d in dims:
            path = os.path.join(tmp, f"mnist_pca{d}.npy")
            np.save(path, np.ascontiguousarray(Z[:, :d]))
            for n in sizes:
                for method in methods:
                    start = time.perf_counter()
                    out = subprocess.run(
                        [sys.executable, "-c", CHILD, path, str(n), method],
                        capture_output=True, text=True, check=True,
                    )
                    wall = time.perf_counter() - start
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    print(
                        f"{d:>4} {n:>7} {method:>12} {wall:>10.1f} {r['import']:>9.1f} "
                        f"{r['first']:>11.1f} {r['second']:>11.1f}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
