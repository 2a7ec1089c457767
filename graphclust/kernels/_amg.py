"""LOBPCG with an algebraic multigrid preconditioner: the top eigenpairs when the spectral gap is tiny.

Lanczos (ARPACK) converges at a rate set by the relative gap between the wanted eigenvalues and
the rest; on a nearly disconnected kNN graph dozens of eigenvalues of S = D^-1/2 W D^-1/2 sit
within 1e-4 of 1 and it needs thousands of restarts (issue 15: 20 minutes without finishing at
10^6 points). A preconditioned block method does not depend on that gap the same way: LOBPCG
(Knyazev 2001) on A = g I - S (g an upper bound of the spectrum, so A is positive semi-definite
with the wanted pairs at its bottom), preconditioned by one V-cycle of smoothed-aggregation
multigrid on A + eps g I (pyamg; A is a graph Laplacian-like M-matrix when S >= 0, which is what
aggregation is built for). This is scikit-learn's ``eigen_solver="amg"`` spectral embedding and
megaman's, with four changes: known eigenvectors (connected components) are deflated through
the operator and projected out of the preconditioner and the iterates (so a sparse n x c basis
never becomes a dense block), LOBPCG runs to a residual tolerance instead of 20 iterations, with
buffer columns beyond the k wanted (`graphclust.kernels._lobpcg`: scipy's LOBPCG, which must
converge every column of its block, stalled at 10^6 nodes), and a start block can be passed
(e.g. the previous sigma's eigenvectors).
pyamg builds the hierarchy; the cycle itself runs on the whole LOBPCG block at once
(`graphclust.kernels._vcycle.BlockVCycle`, Gauss-Seidel on row blocks over the threads), so
the eigenpairs depend, within `tol`, on the number of threads numba starts with
(``NUMBA_NUM_THREADS``, the logical CPUs by default), never on the machine's load.

pyamg is an optional dependency (``pip install graphclust[amg]``).
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ._lobpcg import block_lobpcg, kept_block
from ._spmm import symmetric_permutation
from ._vcycle import BlockProduct, BlockVCycle

__all__ = ["amg_available", "lobpcg_amg", "lobpcg_buffer", "require_pyamg"]

#: Relative diagonal shift of the matrix the multigrid hierarchy is built on (scikit-learn: 1e-5).
AMG_DIAGONAL_SHIFT = 1e-5

#: pyamg options. Plain (unsmoothed) aggregation: on 10-NN graphs of 50-dimensional data the
#: smoothed prolongator fills the coarse operator (250 000 nodes: level 1 had 7 773 unknowns
#: and 6.5 M nonzeros, a V-cycle cost 26 matvecs, set-up 14.6 s); unsmoothed, level 1 has
#: 0.6 M nonzeros, set-up takes 1 s, and LOBPCG needed as many or fewer iterations
#: (connected graph 53 s vs 89 s, nearly disconnected 85 s vs 106 s; docs/scaling.md).
AMG_OPTIONS = {"smooth": None, "max_coarse": 500}

#: Deflation bases with at most this many columns are held dense (n x c floats).
DENSE_DEFLATION_MAX = 64


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


def lobpcg_amg(S, k, *, restriction=None, upper=None, tol=1e-8, rng=None, maxiter=None,
               start=None):
    """Top-`k` eigenpairs of S (restricted to span(Z)^perp) by AMG-preconditioned block LOBPCG.

    Parameters
    ----------
    S : sparse symmetric (n, n)
    k : int
    restriction : `graphclust.kernels._spectrum._Restriction` or None
        Its Z (n, c), orthonormal columns: the iterates are kept orthogonal to them, and
        when they are not eigenvectors of S (constraints) A x is projected too.
    upper : float or None
        An upper bound of the spectrum of S (1 for a normalised adjacency); None uses the
        Gershgorin bound max_i sum_j |s_ij|.
    tol : float
        LOBPCG stops when each of the k residuals ||A x - lambda x|| <= tol (absolute;
        ||A|| <= 2 g).
    maxiter : int or None
        LOBPCG iterations (default 500).
    start : array (n, j) or None
        Initial vectors, best first: the first k + buffer are used, completed with seeded
        Gaussian columns.

    Returns
    -------
    values : array (k,) eigenvalues of S, vectors : array (n, k), iterations : int

    Notes
    -----
    The block holds k + `lobpcg_buffer(k)` columns (`graphclust.kernels._lobpcg`), and the
    problem is solved in reverse Cuthill-McKee order (a permutation, undone on the result):
    neighbours close in memory make the Gauss-Seidel sweeps 1.5x faster at 10^6 nodes.
    """
    pyamg = require_pyamg()
    n = S.shape[0]
    S = sp.csr_matrix(S, dtype=np.float64)
    g = float(abs(S).sum(axis=1).max()) if upper is None else float(upper)
    order = reverse_cuthill_mckee(S, symmetric_mode=True)
    S = symmetric_permutation(S, order)
    A = (g * sp.identity(n, format="csr") - S).tocsr()
    hierarchy = pyamg.smoothed_aggregation_solver(
        (A + AMG_DIAGONAL_SHIFT * max(g, 1.0) * sp.identity(n, format="csr")).tocsr(),
        **AMG_OPTIONS,
    )
    # the smoother's row blocks over the threads (docs/scaling.md: the same iterations as
    # pyamg's sequential sweeps at 10^6 nodes, the eigensolve 1.4x faster). One block per
    # thread numba started with, not per thread in use: `graphclust.threads` lowers the latter
    # with the machine's load, and the result would move with it
    cycle = BlockVCycle(hierarchy, blocks=numba.config.NUMBA_NUM_THREADS)
    A_block = BlockProduct(A)
    # the operator's and the preconditioner's results go to blocks kept for the solve, which
    # block_lobpcg uses before the next call (a fresh block costs its page faults)
    width = k + lobpcg_buffer(k)
    image, preconditioned = np.empty(n * width), np.empty(n * width)
    if restriction is not None:
        Z = restriction.Z[order]
        if sp.issparse(Z) and Z.shape[1] <= DENSE_DEFLATION_MAX:
            Z = np.ascontiguousarray(Z.toarray())  # BLAS: 3x faster than sparse n x c products
        elif sp.issparse(Z):
            Z = sp.csc_matrix(Z)

        # dense Z: Z (Z^T x) into a reused buffer; a new n x b block per call (allocation and
        # first touch of its pages) cost as much as the product itself
        spare = None if sp.issparse(Z) else np.empty(n * width)

        def project(x):
            zx = Z.T @ x
            kept = kept_block(spare, x.shape)
            x -= Z @ zx if kept is None else np.matmul(Z, zx, out=kept)
            return x

        if restriction.R is None:
            coef = restriction.coef

            def apply_A(x):
                out = A_block(x, kept_block(image, x.shape))
                out += Z @ (coef[:, None] * (Z.T @ x))
                return out
        else:
            # Q A Q on span(Z)^perp, where the iterates live: A x projected
            def apply_A(x):
                return project(A_block(x, kept_block(image, x.shape)))
    else:
        project = None

        def apply_A(x):
            return A_block(x, kept_block(image, x.shape))

    def apply_M(r):
        return cycle(r, kept_block(preconditioned, r.shape))

    rng = np.random.default_rng(rng)
    p = min(width, n - (0 if restriction is None else Z.shape[1]))
    X = rng.standard_normal((n, p))
    if start is not None:
        start = np.asarray(start, dtype=np.float64)[order]
        j = min(start.shape[1], p)
        X[:, :j] = start[:, :j]
    vals, vecs, iterations, _ = block_lobpcg(
        apply_A, apply_M, X, k, tol=tol, maxiter=500 if maxiter is None else maxiter,
        project=project)
    out = np.empty_like(vecs)
    out[order] = vecs
    return g - vals, out, iterations


def lobpcg_buffer(k):
    """Buffer columns LOBPCG-AMG iterates beside the k wanted: max(2, k // 4).

    Without a buffer the last wanted columns stalled on the nearly disconnected 10^6-node graph
    (9 pairs, tol 1e-6: a residual of 1e-4 after 500 iterations). Beyond two, more columns
    cost more than the iterations they save (docs/scaling.md, iterations x block width, AHK
    on that graph: k = 10 with 2 / 3 / 5 buffer columns 77 / 83 / 90 iterations at 10^6,
    65 / 60 / 65 at 250 000; k = 20 with 5 / 6 / 10: 67 / 69 / 59 at 250 000)."""
    return max(2, k // 4)
