"""LOBPCG with an algebraic multigrid preconditioner: the top eigenpairs when the spectral gap is tiny.

Lanczos (ARPACK) converges at a rate set by the relative gap between the wanted eigenvalues and
the rest; on a nearly disconnected kNN graph dozens of eigenvalues of S = D^-1/2 W D^-1/2 sit
within 1e-4 of 1 and it needs thousands of restarts (issue 15: 20 minutes without finishing at
10^6 points). A preconditioned block method does not depend on that gap the same way: LOBPCG
(Knyazev 2001) on A = g I - S (g an upper bound of the spectrum, so A is positive semi-definite
with the wanted pairs at its bottom), preconditioned by one V-cycle of smoothed-aggregation
multigrid on A + eps g I (pyamg; A is a graph Laplacian-like M-matrix when S >= 0, which is what
aggregation is built for). This is scikit-learn's ``eigen_solver="amg"`` spectral embedding and
megaman's, with three changes: known eigenvectors (connected components) are deflated through
the operator and projected out of the preconditioner (so a sparse n x c basis never becomes a
dense block), LOBPCG runs to a residual tolerance instead of 20 iterations, and a start block
can be passed (e.g. the previous sigma's eigenvectors, or component indicators' Ritz vectors).
pyamg builds the hierarchy; the cycle itself runs on the whole LOBPCG block at once
(`graphclust.kernels._vcycle.BlockVCycle`: pyamg's arithmetic per column, columns over threads).

pyamg is an optional dependency (``pip install graphclust[amg]``).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ._vcycle import BlockProduct, BlockVCycle

__all__ = ["amg_available", "lobpcg_amg", "require_pyamg"]

#: Relative diagonal shift of the matrix the multigrid hierarchy is built on (scikit-learn: 1e-5).
AMG_DIAGONAL_SHIFT = 1e-5

#: pyamg options. Plain (unsmoothed) aggregation: on 10-NN graphs of 50-dimensional data the
#: smoothed prolongator fills the coarse operator (250 000 nodes: level 1 had 7 773 unknowns
#: and 6.5 M nonzeros, a V-cycle cost 26 matvecs, set-up 14.6 s); unsmoothed, level 1 has
#: 0.6 M nonzeros, set-up takes 1 s, and LOBPCG needed as many or fewer iterations
#: (connected graph 53 s vs 89 s, nearly disconnected 85 s vs 106 s; docs/scaling.md).
AMG_OPTIONS = {"smooth": None, "max_coarse": 500}


def amg_available():
    """Whether pyamg can be imported (the ``amg`` extra)."""
    try:
        import pyamg  # noqa: F401
    except ImportError:
        return False
    return True


def require_pyamg():
    """Import pyamg, or raise an ImportError that says how to install it."""
    try:
        import pyamg
    except ImportError as err:
        raise ImportError(
            "method='lobpcg-amg' needs pyamg, an optional dependency: install it with "
            "`pip install graphclust[amg]` (or `pip install pyamg`), or use method='eigsh'."
        ) from err
    return pyamg


def lobpcg_amg(S, k, *, Z=None, coef=None, upper=None, tol=1e-8, rng=None, maxiter=None,
               start=None):
    """Top-`k` eigenpairs of S (deflated by Z) by AMG-preconditioned LOBPCG.

    Parameters
    ----------
    S : sparse symmetric (n, n)
    k : int
    Z, coef : deflation basis (n, c) with orthonormal columns and the coefficients of
        `graphclust.kernels._spectrum._deflation`, or None.
    upper : float or None
        An upper bound of the spectrum of S (1 for a normalised adjacency); None uses the
        Gershgorin bound max_i sum_j |s_ij|.
    tol : float
        LOBPCG stops when every residual ||A x - lambda x|| <= tol (absolute; ||A|| <= 2 g).
    maxiter : int or None
        LOBPCG iterations (default 500).
    start : array (n, <= k) or None
        Initial vectors; completed with seeded Gaussian columns.

    Returns
    -------
    values : array (k,) eigenvalues of S, vectors : array (n, k), iterations : int
    """
    pyamg = require_pyamg()
    n = S.shape[0]
    S = sp.csr_matrix(S, dtype=np.float64)
    g = float(abs(S).sum(axis=1).max()) if upper is None else float(upper)
    A = (g * sp.identity(n, format="csr") - S).tocsr()
    hierarchy = pyamg.smoothed_aggregation_solver(
        (A + AMG_DIAGONAL_SHIFT * max(g, 1.0) * sp.identity(n, format="csr")).tocsr(),
        **AMG_OPTIONS,
    )
    cycle = BlockVCycle(hierarchy)
    A_block = BlockProduct(A)
    if Z is not None:
        Zs = Z

        def project(x):
            return x - Zs @ (Zs.T @ x)

        def apply_A(x):
            x2 = x.reshape(n, -1)
            out = A_block(x2) + Zs @ (coef[:, None] * (Zs.T @ x2))
            return np.asarray(out).reshape(x.shape)

        def apply_M(x):
            x2 = np.asarray(x).reshape(n, -1)
            return np.asarray(project(cycle(project(x2)))).reshape(x.shape)

        op = spla.LinearOperator((n, n), matvec=apply_A, matmat=apply_A, dtype=np.float64)
        M = spla.LinearOperator((n, n), matvec=apply_M, matmat=apply_M, dtype=np.float64)
    else:
        project = None

        def apply_A(x):
            return A_block(np.asarray(x).reshape(n, -1)).reshape(x.shape)

        op = spla.LinearOperator((n, n), matvec=apply_A, matmat=apply_A, dtype=np.float64)

        def apply_M(x):
            return cycle(np.asarray(x).reshape(n, -1)).reshape(x.shape)

        M = spla.LinearOperator((n, n), matvec=apply_M, matmat=apply_M, dtype=np.float64)
    rng = np.random.default_rng(rng)
    X = rng.standard_normal((n, k))
    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        j = min(start.shape[1], k)
        X[:, :j] = start[:, :j]
    if project is not None:
        X = np.asarray(project(X))
    with warnings.catch_warnings():
        # LOBPCG's own warnings are replaced by the caller's residual check
        warnings.simplefilter("ignore", UserWarning)
        vals, vecs, history = spla.lobpcg(op, X, M=M, largest=False, tol=tol,
                                          maxiter=500 if maxiter is None else maxiter,
                                          retLambdaHistory=True)
    return g - np.asarray(vals), np.asarray(vecs), len(history)
