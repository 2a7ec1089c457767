"""Measure the eigensolvers behind `top_eigenpairs` on kNN graphs: which one serves AHK / NJW.

For the top-m eigenpairs of S = D^-1/2 W D^-1/2 (the smallest of the normalised Laplacian) it
times ARPACK Lanczos (``eigsh``, largest algebraic), ARPACK in shift-invert mode (sigma just above
the top of the spectrum, a sparse LU factorisation of S - sigma I) and LOBPCG (no preconditioner),
each to the same tolerance, and prints time, largest residual ||S v - mu v|| and the largest
eigenvalue error against the most accurate of them.

    python scripts/bench_eigensolvers.py            # pendigits (7 494) and MNIST-PCA (20 000)

Timings are wall clock on a shared 2-core machine: compare within one run only.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import graphclust as gc
from graphclust.datasets import load_mnist, load_pendigits


def solvers(S, m, tol, seed):
    n = S.shape[0]
    v0 = np.random.default_rng(seed).uniform(-1, 1, n)
    out = {}
    t = time.perf_counter()
    vals, vecs = spla.eigsh(S + sp.identity(n), k=m, which="LA", tol=tol, v0=v0)
    out["eigsh LA"] = (time.perf_counter() - t, vals - 1, vecs)
    t = time.perf_counter()
    try:
        vals, vecs = spla.eigsh(S, k=m, sigma=1.001, which="LM", tol=tol, v0=v0)
        out["eigsh shift-invert"] = (time.perf_counter() - t, vals, vecs)
    except Exception as err:  # noqa: BLE001 - report any failure
        out["eigsh shift-invert"] = (time.perf_counter() - t, None, repr(err)[:60])
    t = time.perf_counter()
    X = np.random.default_rng(seed).standard_normal((n, m))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals, vecs = spla.lobpcg(S, X, largest=True, tol=tol, maxiter=500)
    out["lobpcg"] = (time.perf_counter() - t, vals, vecs)
    return out


def report(name, W, ms, tol=1e-6):
    S, _ = gc.normalized_adjacency(W)
    print(f"\n{name}: n = {S.shape[0]}, nnz = {S.nnz}")
    print(f"{'m':>5} {'solver':<20} {'time s':>8} {'max resid':>10} {'max |dmu|':>10}")
    for m in ms:
        res = solvers(S, m, tol, 0)
        ref = np.sort(res["eigsh LA"][1])[::-1]
        for key, (sec, vals, vecs) in res.items():
            if vals is None:
                print(f"{m:>5} {key:<20} {sec:8.2f}  failed: {vecs}")
                continue
            order = np.argsort(vals)[::-1]
            vals, vecs = vals[order], vecs[:, order]
            r = np.linalg.norm(S @ vecs - vecs * vals, axis=0).max()
            print(f"{m:>5} {key:<20} {sec:8.2f} {r:10.1e} {np.abs(vals - ref).max():10.1e}")


def main():
    X, _ = load_pendigits("train")
    g = gc.knn_graph(X, 10)
    report("pendigits train, 10-NN, gaussian (median sigma)", gc.affinity(g), [20, 100, 300])
    Xm, _ = load_mnist("all")
    rng = np.random.default_rng(0)
    Xm = Xm[rng.choice(len(Xm), 20_000, replace=False)]
    from sklearn.decomposition import PCA

    Xp = PCA(50, random_state=0).fit_transform(Xm)
    g = gc.knn_graph(Xp, 10, method="exact")
    report("MNIST 20 000 (50 PCA dims), 10-NN, gaussian", gc.affinity(g), [20, 100])


if __name__ == "__main__":
    main()
