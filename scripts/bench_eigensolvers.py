"""Measure the eigensolvers behind `top_eigenpairs` on kNN graphs: which one serves AHK / NJW.

For the top-m eigenpairs of S = D^-1/2 W D^-1/2 (the smallest of the normalised Laplacian) it
times ARPACK Lanczos (``eigsh``, largest algebraic), ARPACK in shift-invert mode (sigma just above
the top of the spectrum, a sparse LU factorisation of S - sigma I) and LOBPCG (no preconditioner),
each to the same tolerance (1e-6), beside `top_eigenpairs` (eigsh with the connected components'
eigenvectors deflated exactly), and prints time, largest residual ||S v - mu v|| and the largest
eigenvalue difference against `top_eigenpairs`. LOBPCG is skipped for large m (minutes).

    OPENBLAS_NUM_THREADS=1 python scripts/bench_eigensolvers.py   # pendigits (7 494), MNIST-PCA (20 000)

Timings are wall clock on a shared 2-core machine: compare within one run only.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import graphclust as gc
from graphclust.datasets import load_mnist, load_pendigits


def solvers(S, m, tol, seed, Z, lobpcg_max):
    n = S.shape[0]
    v0 = np.random.default_rng(seed).uniform(-1, 1, n)
    out = {}
    t = time.perf_counter()
    spec = gc.top_eigenpairs(S, m, tol=tol, method="eigsh", random_state=seed, deflate=Z)
    # put the deflated component vectors (mu = 1) back in front, as the other solvers see them
    vals = np.concatenate([np.ones(Z.shape[1]), spec.values])[:m]
    vecs = np.hstack([Z.toarray(), spec.vectors])[:, :m]
    out["top_eigenpairs (deflated eigsh)"] = (time.perf_counter() - t, vals, vecs)
    t = time.perf_counter()
    vals, vecs = spla.eigsh(S + sp.identity(n), k=m, which="LA", tol=tol, v0=v0)
    out["eigsh LA"] = (time.perf_counter() - t, vals - 1, vecs)
    t = time.perf_counter()
    try:
        vals, vecs = spla.eigsh(S, k=m, sigma=1.001, which="LM", tol=tol, v0=v0)
        out["eigsh shift-invert"] = (time.perf_counter() - t, vals, vecs)
    except Exception as err:  # noqa: BLE001 - report any failure
        out["eigsh shift-invert"] = (time.perf_counter() - t, None, repr(err)[:60])
    if m > lobpcg_max:
        return out
    t = time.perf_counter()
    X = np.random.default_rng(seed).standard_normal((n, m))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vals, vecs = spla.lobpcg(S, X, largest=True, tol=tol, maxiter=500)
    out["lobpcg"] = (time.perf_counter() - t, vals, vecs)
    return out


def report(name, W, ms, tol=1e-6, lobpcg_max=100):
    form = gc.symmetric_form(W, "sym")
    S = form.operator
    print(f"\n{name}: n = {S.shape[0]}, nnz = {S.nnz}, components = {form.n_components}")
    print(f"{'m':>5} {'solver':<32} {'time s':>8} {'max resid':>10} {'max |dmu|':>10}")
    for m in ms:
        res = solvers(S, m, tol, 0, form.trivial, lobpcg_max)
        ref = np.sort(res["top_eigenpairs (deflated eigsh)"][1])[::-1]
        for key, (sec, vals, vecs) in res.items():
            if vals is None:
                print(f"{m:>5} {key:<32} {sec:8.2f}  failed: {vecs}")
                continue
            order = np.argsort(vals)[::-1]
            vals, vecs = vals[order], vecs[:, order]
            r = np.linalg.norm(S @ vecs - vecs * vals, axis=0).max()
            print(f"{m:>5} {key:<32} {sec:8.2f} {r:10.1e} {np.abs(vals - ref).max():10.1e}")


def main():
    X, _ = load_pendigits("train")
    g = gc.knn_graph(X, 10)
    report("pendigits train, 10-NN, gaussian (median sigma)", gc.affinity(g), [20, 100, 300], lobpcg_max=20)
    Xm, _ = load_mnist("all")
    rng = np.random.default_rng(0)
    Xm = Xm[rng.choice(len(Xm), 20_000, replace=False)]
    from sklearn.decomposition import PCA

    Xp = PCA(50, random_state=0).fit_transform(Xm)
    g = gc.knn_graph(Xp, 10, method="exact")
    report("MNIST 20 000 (50 PCA dims), 10-NN, gaussian", gc.affinity(g), [20, 100], lobpcg_max=20)


if __name__ == "__main__":
    main()
