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
    args = parser.parse_args()
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
