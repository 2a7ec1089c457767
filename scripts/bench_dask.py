"""graphclust.dask on a LocalCluster: predict throughput, blocked exact kNN, sample-then-extend.

Data: `graphclust.datasets.load_infinite_mnist` (MNIST extended to 10^6 images by seeded shifts
and rotations, PCA-50 fitted on the 70 000 originals; rows 0..69 999 are MNIST itself). Beyond
10^6 rows (predict only) row i is row i mod 10^6 plus seeded Gaussian jitter (sd 0.3), generated
lazily chunk by chunk on the workers, so 10^7 points never exist in the client's memory.

    GRAPHCLUST_DATA=/work/shared/datasets OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        NUMBA_NUM_THREADS=1 nice -n 10 python scripts/bench_dask.py predict --n 1000000 \\
        --workers 1 2
    ... python scripts/bench_dask.py knn --n 20000 40000 --workers 1 2
    ... python scripts/bench_dask.py cells --n 1000000 --workers 1 2 --probes 1 2 3 --in-memory
    ... python scripts/bench_dask.py sample --sizes 5000 10000 20000
    ... python scripts/bench_dask.py spmm --n 1000000

Workers are processes with one thread each (``LocalCluster(processes=True)``). Prints a
Markdown table per part.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import graphclust as gc
from graphclust.datasets import load_infinite_mnist

BASE_N = 1_000_000


def base_data(n=BASE_N):
    X, y = load_infinite_mnist(min(n, BASE_N), 50, random_state=0)
    return np.asarray(X, dtype=np.float64), y


def _chunk(c, rows, n, base):
    """Rows [c * rows, min(n, (c + 1) * rows)) of the synthetic set (module notes)."""
    lo, hi = c * rows, min(n, (c + 1) * rows)
    i = np.arange(lo, hi)
    out = base[i % base.shape[0]]
    far = i >= base.shape[0]
    if far.any():
        rng = np.random.default_rng([12345, c])
        out[far] += rng.normal(scale=0.3, size=(int(far.sum()), base.shape[1]))
    return out


def _chunk_as(dtype, c, rows, n, base):
    return _chunk(c, rows, n, base).astype(dtype, copy=False)


def lazy_points(n, rows, base, dtype=np.float64):
    """A dask array (n, 50) whose chunks are generated on the workers from `base` (a future of
    the array already on every worker, or the array), in `dtype`."""
    import dask
    import dask.array as da

    node = base if not isinstance(base, np.ndarray) else dask.delayed(base, pure=True,
                                                                       traverse=False)
    blocks = [da.from_delayed(dask.delayed(_chunk_as, pure=True)(dtype, c, rows, n, node),
                              shape=(min(n, (c + 1) * rows) - c * rows, 50),
                              dtype=dtype) for c in range(-(-n // rows))]
    return da.concatenate(blocks, axis=0)


def _worker_cpu(client):
    """Total CPU seconds used so far by the worker processes (contention-free cost measure)."""
    return sum(client.run(time.process_time).values())


def cluster(workers):
    from dask.distributed import Client, LocalCluster

    lc = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=None, memory_limit="5GiB")
    return lc, Client(lc)


def part_predict(args):
    import dask.array as da

    from graphclust.dask import predict

    base, y = base_data()
    rng = np.random.default_rng(0)
    train = np.sort(rng.choice(70_000, size=args.train, replace=False))
    t = time.perf_counter()
    model = gc.SpectralClustering(10, random_state=0).fit(base[train])
    print(f"model: SpectralClustering(10) on {args.train} MNIST PCA-50 points, fit "
          f"{time.perf_counter() - t:.1f} s")
    m = min(200_000, BASE_N)
    t = time.process_time()
    for s in range(0, m, 100_000):
        model.predict(base[s:s + 100_000])
    print(f"in memory, one process, no Dask: {(time.process_time() - t) / m * 1e6:.1f} CPU us "
          f"per point (rows 0..{m - 1})")
    print("\n| n | workers | chunk rows | predict s | points/s | worker CPU s | points per CPU s "
          "| load avg | NMI vs digits |")
    print("|---|---|---|---|---|---|---|---|---|")
    for w in args.workers:
        lc, client = cluster(w)
        try:
            client.run(lambda: __import__("graphclust"))  # imports are not part of throughput
            t = time.perf_counter()
            on_workers = client.scatter(base, broadcast=True)  # once per cluster, not timed below
            print(f"(base data {base.nbytes / 2**20:.0f} MB broadcast to {w} worker(s) in "
                  f"{time.perf_counter() - t:.1f} s)", flush=True)
            for n in args.n:
                X = lazy_points(n, args.chunk, on_workers)
                labels = predict(model, X)
                cpu = _worker_cpu(client)
                t = time.perf_counter()
                if n <= BASE_N:
                    lab = labels.compute()
                    score = f"{gc.metrics.nmi(y[:n], lab):.3f}"
                else:
                    da.bincount(labels, minlength=10).compute()
                    score = "-"
                dt = time.perf_counter() - t
                cpu = _worker_cpu(client) - cpu
                print(f"| {n:,} | {w} | {args.chunk:,} | {dt:.1f} | {n / dt:,.0f} | {cpu:.1f} | "
                      f"{n / cpu:,.0f} | {os.getloadavg()[0]:.1f} | {score} |", flush=True)
        finally:
            client.close()
            lc.close()


def part_knn(args):
    import dask.array as da

    from graphclust.dask import kneighbors_graph

    base, _ = base_data()
    print("\n| n | engine | workers | chunks | time s | points/s | pairs/s | worker CPU s | "
          "load avg | same graph as in-memory exact |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    refs = {}
    for n in args.n:
        t = time.perf_counter()
        refs[n] = gc.knn_graph(base[:n], 10, method="exact")
        dt = time.perf_counter() - t
        print(f"| {n:,} | gc.knn_graph exact (in memory, 1 process) | - | - | {dt:.1f} | "
              f"{n / dt:,.0f} | {n * n / dt:.2e} | - | {os.getloadavg()[0]:.1f} | - |",
              flush=True)
    for w in args.workers:
        lc, client = cluster(w)
        try:
            client.run(lambda: __import__("graphclust.dask"))
            kneighbors_graph(da.from_array(base[:2000], chunks=1000), 10)  # numba compile
            for n in args.n:
                X = da.from_array(base[:n], chunks=(-(-n // args.blocks), 50))
                cpu = _worker_cpu(client)
                t = time.perf_counter()
                g = kneighbors_graph(X, 10)
                dt = time.perf_counter() - t
                cpu = _worker_cpu(client) - cpu
                same = (g.distances != refs[n].distances).nnz == 0
                print(f"| {n:,} | graphclust.dask.kneighbors_graph | {w} | {args.blocks} | "
                      f"{dt:.1f} | {n / dt:,.0f} | {n * n / dt:.2e} | {cpu:.1f} | "
                      f"{os.getloadavg()[0]:.1f} | {same} |", flush=True)
        finally:
            client.close()
            lc.close()


def _n_clusters(labels):
    return int(np.unique(labels[labels >= 0]).size)


def _exact_query_lists(queries, n, rows, base, k=10, dtype=np.float64):
    """Exact k nearest other rows (of the n-row set) of the given query rows, chunk by chunk
    (the chunks of `lazy_points(n, rows, base, dtype)`)."""
    Q = _chunk_rows(queries, n, rows, base).astype(dtype).astype(np.float64)
    qq = np.einsum("ij,ij->i", Q, Q)
    best_i = np.empty((len(queries), 0), dtype=np.int64)
    best_d = np.empty((len(queries), 0))
    for c in range(-(-n // rows)):
        Cc = _chunk(c, rows, n, base).astype(dtype).astype(np.float64)
        for s in range(0, Cc.shape[0], 100_000):  # 1 000 x 100 000 distances at a time
            C = Cc[s:s + 100_000]
            D = qq[:, None] + np.einsum("ij,ij->i", C, C)[None, :] - 2.0 * (Q @ C.T)
            gi = np.arange(c * rows + s, c * rows + s + C.shape[0])
            D[gi[None, :] == queries[:, None]] = np.inf
            part = np.argpartition(D, k, axis=1)[:, :k]
            best_i = np.hstack([best_i, gi[part]])
            best_d = np.hstack([best_d, np.take_along_axis(D, part, axis=1)])
            o = np.argsort(best_d, axis=1)[:, :k]
            best_i, best_d = np.take_along_axis(best_i, o, 1), np.take_along_axis(best_d, o, 1)
    return best_i


def _chunk_rows(rows_wanted, n, rows, base):
    """The given global rows of `lazy_points(n, rows, base)`, in order."""
    out = np.empty((len(rows_wanted), base.shape[1]))
    for c in np.unique(rows_wanted // rows):
        sel = np.flatnonzero(rows_wanted // rows == c)
        out[sel] = _chunk(int(c), rows, n, base)[rows_wanted[sel] - c * rows]
    return out


def _recall(found, exact):
    """The share of the exact neighbours found, over the rows of two (m, k) lists."""
    return float(np.mean([len(set(a) & set(b)) / len(b) for a, b in zip(found, exact)]))


def part_cells(args):
    """kneighbors_graph(method="cells"): time, worker CPU and recall against exact lists."""
    from graphclust.dask import kneighbors_lists_by_cells

    base, _ = base_data()
    k = 10
    print(f"\n(recall: the share of the exact {k} nearest rows found, over {args.queries} seeded "
          "query rows, exact lists by brute force)")
    print("\n| n | engine | workers | cell size | probes | time s | points/s | worker CPU s | "
          "recall | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    exact = {}
    for n in args.n:
        q = np.sort(np.random.default_rng(0).choice(n, size=args.queries, replace=False))
        t = time.perf_counter()
        exact[n] = (q, _exact_query_lists(q, n, args.chunk, base, k,
                                          np.float32 if args.float32 else np.float64))
        print(f"(exact lists of {args.queries} queries at n = {n:,}: "
              f"{time.perf_counter() - t:.0f} s)", flush=True)
        if n <= BASE_N and args.in_memory:
            t = time.perf_counter()
            idx, _ = gc.nearest_neighbors(base[:n], k, random_state=0)
            dt = time.perf_counter() - t
            rec = _recall(idx[q], exact[n][1])
            print(f"| {n:,} | gc.nearest_neighbors (NN-descent, in memory, "
                  f"{__import__('numba').get_num_threads()} thread(s)) | - | - | - "
                  f"| {dt:.1f} | {n / dt:,.0f} | - | {rec:.4f} | {os.getloadavg()[0]:.1f} |",
                  flush=True)
    for w in args.workers:
        lc, client = cluster(w)
        try:
            client.run(lambda: __import__("graphclust.dask"))
            on_workers = client.scatter(base, broadcast=True)
            kneighbors_lists_by_cells(lazy_points(30_000, 10_000, on_workers), k,
                                      cell_size=10_000, random_state=0)  # numba compile
            for n in args.n:
                for probes in args.probes:
                    X = lazy_points(n, args.chunk, on_workers,
                                    np.float32 if args.float32 else np.float64)
                    cpu = _worker_cpu(client)
                    t = time.perf_counter()
                    idx, _ = kneighbors_lists_by_cells(X, k, cell_size=args.cell_size,
                                                       probes=probes, random_state=0)
                    dt = time.perf_counter() - t
                    cpu = _worker_cpu(client) - cpu
                    q, ref = exact[n]
                    rec = _recall(idx[q], ref)
                    print(f"| {n:,} | graphclust.dask kNN by cells | {w} | {args.cell_size:,} | "
                          f"{probes} | {dt:.1f} | {n / dt:,.0f} | {cpu:.1f} | {rec:.4f} | "
                          f"{os.getloadavg()[0]:.1f} |", flush=True)
                    del idx
        finally:
            client.close()
            lc.close()


def part_sample(args):
    import dask.array as da

    from graphclust.dask import fit_sample_extend

    make = {"spectral": lambda: gc.SpectralClustering(10, random_state=0),
            "consistency": lambda: gc.ConsistencyClustering(random_state=0)}[args.estimator]
    base, y = base_data(args.n_total)
    n = args.n_total
    X = base[:n]
    print(f"\n{args.estimator} on {n:,} points (infinite MNIST PCA-50; 70 000 = MNIST itself)")
    print("| fit on | fit s | extend s | NMI vs digits | NMI vs full fit | clusters |")
    print("|---|---|---|---|---|---|")
    full = None
    if args.full:
        t = time.perf_counter()
        est = make().fit(X)
        dt = time.perf_counter() - t
        full = est.labels_
        print(f"| all {n:,} | {dt:.1f} | - | {gc.metrics.nmi(y[:n], full):.3f} | 1 | "
              f"{_n_clusters(full)} |", flush=True)
        if args.save_full:
            np.save(args.save_full, full)
    elif args.load_full:
        full = np.load(args.load_full)
    lc, client = cluster(args.workers[0])
    try:
        Xd = da.from_array(X, chunks=(args.chunk, 50))
        for s in args.sizes:
            for seed in range(args.repeats):
                t = time.perf_counter()
                est, labels, _ = fit_sample_extend(make(), Xd, s, random_state=seed)
                t_fit = time.perf_counter() - t
                t = time.perf_counter()
                lab = labels.compute()
                t_ext = time.perf_counter() - t
                vs_full = "-" if full is None else f"{gc.metrics.nmi(full, lab):.3f}"
                print(f"| sample {s:,} (seed {seed}) | {t_fit:.1f} | {t_ext:.1f} | "
                      f"{gc.metrics.nmi(y[:n], lab):.3f} | {vs_full} | {_n_clusters(lab)} |",
                      flush=True)
    finally:
        client.close()
        lc.close()


def part_spmm(args):
    """Sparse block product S @ X on one core: the unit of the distributed eigensolver's cost."""
    import scipy.sparse as sp

    print("\n| n | nnz per row | block b | s per product | ns per nnz x column |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for n in args.n:
        per_row = 15  # the symmetrised 10-NN graph has ~1.5 k entries per row
        cols = rng.integers(0, n, size=n * per_row)  # random columns: the worst locality
        S = sp.csr_matrix((rng.random(n * per_row), cols, np.arange(0, n * per_row + 1,
                                                                      per_row)), shape=(n, n))
        for b in (1, 16):
            X = rng.random((n, b))
            S @ X
            reps = 5
            t = time.perf_counter()
            for _ in range(reps):
                S @ X
            dt = (time.perf_counter() - t) / reps
            print(f"| {n:,} | {per_row} | {b} | {dt:.3f} | {dt / (S.nnz * b) * 1e9:.2f} |",
                  flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("part", choices=["predict", "knn", "cells", "sample", "spmm"])
    p.add_argument("--n", type=int, nargs="+", default=[1_000_000])
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--chunk", type=int, default=100_000, help="rows per chunk")
    p.add_argument("--train", type=int, default=10_000, help="training points of the model")
    p.add_argument("--blocks", type=int, default=8, help="row chunks of the kNN input")
    p.add_argument("--sizes", type=int, nargs="+", default=[5_000, 10_000, 20_000])
    p.add_argument("--n-total", type=int, default=70_000, help="points of the sample part")
    p.add_argument("--estimator", choices=["spectral", "consistency"], default="spectral")
    p.add_argument("--full", action="store_true", help="also fit on all points (reference)")
    p.add_argument("--save-full", help="write the full fit's labels to this .npy file")
    p.add_argument("--load-full", help="read the full fit's labels (from --save-full)")
    p.add_argument("--repeats", type=int, default=1, help="seeds per sample size")
    p.add_argument("--cell-size", type=int, default=50_000, help="rows per cell (cells part)")
    p.add_argument("--probes", type=int, nargs="+", default=[2], help="cells per row (cells)")
    p.add_argument("--queries", type=int, default=1000, help="rows whose recall is measured")
    p.add_argument("--float32", action="store_true",
                   help="cells part: the points as float32 (half the memory of the cells' input)")
    p.add_argument("--in-memory", action="store_true",
                   help="also time in-memory NN-descent (cells part, n <= 10^6)")
    args = p.parse_args()
    {"predict": part_predict, "knn": part_knn, "cells": part_cells, "sample": part_sample,
     "spmm": part_spmm}[args.part](args)


if __name__ == "__main__":
    main()
