"""BLAS threads: 1 thread vs the machine's cores on two workloads representative of graphclust.

- dense eigensolve: ``numpy.linalg.eigh`` of a 2 000 x 2 000 symmetric matrix (the dense
  reference path and small-n eigensolves);
- CG-like block product: 30 iterations of Y = W B (sparse kNN affinity, 50 000 nodes, block of
  32 columns), G = B^T Y, B = Y - B G / ||G|| (the dense parts are BLAS gemm), as in the block
  Krylov solvers of graphclust.kernels.

- small blocks after a numba kernel: 200 times a numba parallel pass over a 4 811 x 60 block
  followed by its ``X^T X`` (the shape of a block Lanczos step on a few thousand nodes), the
  product by numpy (``X.T @ X``, the BLAS pools as limited) and by the library
  (`graphclust.kernels.block_inner`, one BLAS thread for blocks this small): numba's threads
  still spin when BLAS wakes its own.

Each is timed (best of 3) inside ``graphclust.threads.limit_threads(t)`` for t = 1 .. cores.
Run it WITHOUT OPENBLAS_NUM_THREADS / OMP_NUM_THREADS in the environment (they cap the pools at
start-up; threadpoolctl can lower a limit, never raise it):

    env -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS python scripts/bench_threads.py

The `load` column is the 1-minute load average when the row was measured: on a shared machine
the multi-threaded rows are what a user gets while other processes compete for the cores.
"""

from __future__ import annotations

import os
import time

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

import graphclust as gc
from graphclust.kernels import block_inner
from graphclust.threads import get_num_threads, limit_threads


@njit(parallel=True, cache=True)
def _numba_pass(a):
    total = 0.0
    for i in prange(a.size):
        total += a[i]
    return total


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times))


def main():
    rng = np.random.default_rng(0)
    M = rng.normal(size=(2000, 2000))
    S = (M + M.T) / 2
    X = rng.normal(size=(50_000, 10))
    W = sp.csr_matrix(gc.affinity(gc.knn_graph(X, 10)))
    B0 = rng.normal(size=(W.shape[0], 32))

    def eig():
        np.linalg.eigh(S)

    def block():
        B = B0.copy()
        for _ in range(30):
            Y = W @ B
            G = B.T @ Y
            B = Y - B @ (G / np.linalg.norm(G))

    T = np.ascontiguousarray(rng.normal(size=(4811, 60)))

    def small(product):
        def run():
            for _ in range(200):
                _numba_pass(T.ravel())
                product(T)
        return run

    cores = os.cpu_count() or 1
    print(f"# default thread count of graphclust here: {get_num_threads()} (logical CPUs {cores})")
    print(f"{'workload':>16} {'threads':>7} {'best s':>8} {'median s':>9} {'load':>5}")
    for name, fn in (("eigh 2000", eig), ("block product", block),
                     ("small, numpy", small(lambda X: X.T @ X)),
                     ("small, library", small(block_inner))):
        for t in range(1, cores + 1):
            with limit_threads(t):
                fn()  # warm-up
                best, med = best_of(fn)
            print(f"{name:>16} {t:>7} {best:>8.2f} {med:>9.2f} {os.getloadavg()[0]:>5.1f}", flush=True)


if __name__ == "__main__":
    main()
