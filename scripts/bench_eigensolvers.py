"""Measure the eigensolvers behind `top_eigenpairs` on kNN graphs: which one serves AHK / NJW.

For the top-m eigenpairs of S = D^-1/2 W D^-1/2 (the smallest of the normalised Laplacian) it
times ARPACK Lanczos (``eigsh``, largest algebraic), ARPACK in shift-invert mode (sigma just above
the top of the spectrum, a sparse LU factorisation of S - sigma I) and LOBPCG (no preconditioner),
each to the same tolerance (1e-6), beside `top_eigenpairs` (eigsh with the connected components'
eigenvectors deflated exactly), and prints time, largest residual ||S v - mu v|| and the largest
eigenvalue difference against `top_eigenpairs`. LOBPCG is skipped for large m (minutes).

    OPENBLAS_NUM_THREADS=1 python scripts/bench_eigensolvers.py   # pendigits (7 494), MNIST-PCA (20 000)

Large graphs (issue 15), ``--large N [N ...]``: the top m (``--m``, default 10) eigenpairs of S
with the component vector deflated, on two 10-NN graphs per N: "connected", the infinite-MNIST
set (`load_infinite_mnist`, its 10-NN graph is connected), and "nearly disconnected", the
jittered near-duplicates of ``scripts/bench_join.py`` (sd 0.5) joined by `join_components`.
Solvers: ``eigsh`` (ARPACK, default ncv = 2m + 1, capped at ``--eigsh-restarts`` restarts),
``eigsh ncv=100``, ``lobpcg-amg`` (pyamg), ``auto`` (what `top_eigenpairs` does by default) and
``shift-invert`` (sparse LU; only up to ``--lu-max`` nodes, its fill-in is the risk). Each row:
time, matvec count where known, largest residual, largest eigenvalue difference to the best
converged solver. Graphs are cached in ``--graph-cache`` (building them is not timed).

    GRAPHCLUST_DATA=/work/shared/datasets OPENBLAS_NUM_THREADS=1 nice -n 10 \
        python scripts/bench_eigensolvers.py --large 250000

``--large N --estimators``: `AHKClustering` and `SpectralClustering` with c = ``--m`` given and
every other default, fitted on the same cached graphs (``--kinds``), with their stage timings
and the process's peak memory (default threads, as a user runs them):

    python scripts/bench_eigensolvers.py --large 1000000 --estimators \
        --kinds "nearly disconnected"

Timings are wall clock on a shared 2-core machine: compare within one run only.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

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


def large_graph(kind, n, cache):
    """Affinity W of the 10-NN graph of `kind` ("connected" or "nearly disconnected"), cached."""
    path = Path(cache) / f"W_{kind.replace(' ', '_')}_{n}.npz"
    if path.exists():
        return sp.load_npz(path)
    if kind == "connected":
        from graphclust.datasets import load_infinite_mnist

        X, _ = load_infinite_mnist(n)
    else:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_join import jittered_mnist

        X = jittered_mnist(n, 16, 0.5)
    g = gc.knn_graph(X, 10, random_state=0)
    if g.n_components > 1:
        g = gc.join_components(g, X)
    W = sp.csr_matrix(gc.affinity(g))
    path.parent.mkdir(parents=True, exist_ok=True)
    sp.save_npz(path, W)
    return W


LARGE_SOLVERS = ("eigsh", "eigsh ncv=100", "lobpcg-amg", "auto", "shift-invert")


def large_solvers(S, Z, m, tol, restarts, lu_max, which=LARGE_SOLVERS):
    """{name: (seconds, values or None, vectors or message, matvecs)} on the deflated S."""
    n = S.shape[0]
    z = np.asarray(Z.toarray()).ravel()
    out = {}
    for name, ncv in (("eigsh", None), ("eigsh ncv=100", 100)):
        if name not in which:
            continue
        count = [0]

        def mv(x):
            count[0] += 1
            return S @ x - 2.0 * z * (z @ x)

        op = spla.LinearOperator((n, n), matvec=mv, dtype=np.float64)
        v0 = np.random.default_rng(0).uniform(-1, 1, n)
        v0 -= z * (z @ v0)
        t = time.perf_counter()
        try:
            vals, vecs = spla.eigsh(op, k=m, which="LA", tol=tol, v0=v0, ncv=ncv, maxiter=restarts)
            out[name] = (time.perf_counter() - t, vals, vecs, count[0])
        except spla.ArpackNoConvergence as err:
            out[name] = (time.perf_counter() - t, None,
                         f"not converged in {restarts} restarts ({len(err.eigenvalues)} of {m})",
                         count[0])
    for name, method in (("lobpcg-amg", "lobpcg-amg"), ("auto", "auto")):
        if name not in which:
            continue
        t = time.perf_counter()
        spec = gc.top_eigenpairs(S, m, tol=tol, method=method, random_state=0, deflate=Z,
                                 upper=1.0)
        out[f"{name} ({spec.method})"] = (time.perf_counter() - t, spec.values, spec.vectors, None)
    if n <= lu_max and "shift-invert" in which:
        t = time.perf_counter()
        try:
            spec = gc.top_eigenpairs(S, m, tol=tol, method="shift-invert", random_state=0,
                                     deflate=Z, upper=1.0)
            out["shift-invert"] = (time.perf_counter() - t, spec.values, spec.vectors, None)
        except Exception as err:  # noqa: BLE001 - report any failure (memory, singular LU)
            out["shift-invert"] = (time.perf_counter() - t, None, repr(err)[:60], None)
    return out


def report_large(ns, m, tol, restarts, lu_max, cache, which=LARGE_SOLVERS):
    print(f"{'n':>8} {'graph':<20} {'solver':<28} {'time s':>8} {'matvecs':>8} {'max resid':>10} "
          f"{'max |dmu|':>10}", flush=True)
    for n in ns:
        for kind in ("connected", "nearly disconnected"):
            form = gc.symmetric_form(large_graph(kind, n, cache), "sym")
            S, Z = form.operator, form.trivial
            res = large_solvers(S, Z, m, tol, restarts, lu_max, which)
            done = [r for r in res.values() if r[1] is not None]
            ref = np.sort(done[0][1])[::-1] if done else None
            for key, (sec, vals, vecs, mv) in res.items():
                if vals is None:
                    print(f"{n:>8} {kind:<20} {key:<28} {sec:8.1f} {mv or '':>8}  {vecs}", flush=True)
                    continue
                order = np.argsort(vals)[::-1]
                vals, vecs = vals[order], vecs[:, order]
                r = np.linalg.norm(S @ vecs - vecs * vals, axis=0).max()
                print(f"{n:>8} {kind:<20} {key:<28} {sec:8.1f} {mv or '':>8} {r:10.1e} "
                      f"{np.abs(vals - ref).max():10.1e}", flush=True)


def report_estimators(ns, m, cache, kinds):
    """AHK and NJW with c = m given, every default, on the cached graphs: fit time per stage."""
    import resource

    print(f"{'n':>8} {'graph':<20} {'estimator':<10} {'fit s':>7}  stages (s)", flush=True)
    for n in ns:
        for kind in kinds:
            W = large_graph(kind, n, cache)
            for name, cls in (("AHK", gc.AHKClustering), ("NJW", gc.SpectralClustering)):
                t = time.perf_counter()
                model = cls(n_clusters=m, affinity="precomputed", random_state=0).fit(W)
                sec = time.perf_counter() - t
                stages = ", ".join(f"{k} {v:.1f}" for k, v in model.timings_.items())
                print(f"{n:>8} {kind:<20} {name:<10} {sec:7.1f}  {stages}; peak RSS "
                      f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.1f} GB",
                      flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--large", type=int, nargs="*", help="issue-15 graphs of these sizes")
    ap.add_argument("--m", type=int, default=10)
    ap.add_argument("--tol", type=float, default=1e-6)
    ap.add_argument("--eigsh-restarts", type=int, default=300)
    ap.add_argument("--lu-max", type=int, default=100_000)
    ap.add_argument("--solvers", nargs="+", default=list(LARGE_SOLVERS), choices=LARGE_SOLVERS)
    ap.add_argument("--graph-cache", default=str(Path(tempfile.gettempdir()) / "graphclust_bench"))
    ap.add_argument("--estimators", action="store_true",
                    help="with --large: time AHK and NJW fits (c = --m) instead of the solvers")
    ap.add_argument("--kinds", nargs="+", default=["connected", "nearly disconnected"],
                    choices=["connected", "nearly disconnected"])
    args = ap.parse_args()
    if args.large and args.estimators:
        report_estimators(args.large, args.m, args.graph_cache, args.kinds)
        return
    if args.large:
        report_large(args.large, args.m, args.tol, args.eigsh_restarts, args.lu_max,
                     args.graph_cache, args.solvers)
        return
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
