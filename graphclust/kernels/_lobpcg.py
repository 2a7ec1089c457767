"""Block LOBPCG with buffer columns: smallest eigenpairs of a symmetric operator, preconditioned.

scipy's `lobpcg` stops when *every* column of its block has converged, so the block must be
exactly the k wanted pairs, and the k-th pair converges at a rate set by its gap to the
(k+1)-th eigenvalue, which nothing in the block resolves. On a nearly disconnected kNN graph the
wanted eigenvalues sit in a continuum (10^6 nodes: 1 - mu = 1.86e-4 ... 4.19e-4, the 8th and 9th
0.1 % apart), and scipy's LOBPCG-AMG stalled there with its last columns at a residual of 1e-4
after 500 iterations (docs/scaling.md). The remedy of the method's author (Knyazev 2001, and
BLOPEX's practice) is a larger block: the convergence of the first k columns is then governed by
the gap to the (block size + 1)-th eigenvalue, and only those k are tested. Here the block holds
k + `buffer` columns; the buffer columns are iterated but never waited for.

The basis of each Rayleigh-Ritz step is [X, P, W] with W (preconditioned residuals of the
columns not yet converged: soft locking) orthogonalised against X and P and orthonormalised by
SVQB (Stathopoulos & Wu 2002), dropping directions that have become dependent, and P the part of
the previous update outside X, orthonormalised the same way (Hetmaniuk & Lehoucq 2006): Q is
orthonormal and the Ritz problem well conditioned whatever the iteration. A X
is carried through the (orthogonal) Ritz rotation; A W and A P are computed, since
orthonormalising a nearly converged update scales up any error carried with it. When the
carried residuals say the first k columns have converged, A X is recomputed and the test
repeated on the true residuals, so the returned pairs are certified.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._cg import _col_dot

__all__ = ["block_lobpcg"]

#: Directions whose Gram eigenvalue is below this fraction of the largest are dropped (SVQB).
SVQB_DROP = 1e-10

#: A column keeping less than this fraction of its norm after Gram-Schmidt is rounding noise.
NOISE = 1e-8

#: Gram-Schmidt is repeated when a column keeps less than this fraction of its norm.
KAHAN = 1 / np.sqrt(2)


def _norms(V):
    return np.sqrt(_col_dot(V, V))


def _sym(G):
    return (G + G.T) / 2


def _orthonormal(V):
    """SVQB: V T with orthonormal columns, directions that have become dependent dropped."""
    norms = _norms(V)
    if not (norms > 0).any():
        return V[:, :0]
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    G = (V.T @ V) * np.outer(scale, scale)
    w, U = np.linalg.eigh(_sym(G))
    good = w > SVQB_DROP * w[-1]
    return V @ (scale[:, None] * (U[:, good] / np.sqrt(w[good])))


def _orthogonalise(V, bases, spare=None):
    """V made orthonormal and orthogonal to the orthonormal `bases`.

    Classical Gram-Schmidt, repeated when a column lost much of its norm, then SVQB. A column
    that keeps less than `NOISE` of its norm lay inside the bases (a converged column's residual
    or update): what is left is rounding noise, and scaling it to unit length would scale up
    the bases' own loss of orthogonality with it, so it is dropped. `spare`: a flat float64
    buffer of at least V.size that receives the products (no new block per pass)."""

    def remove(V):
        for B in bases:
            coef = B.T @ V
            if spare is None or spare.size < V.size:
                V -= B @ coef
            else:
                V -= np.matmul(B, coef, out=spare[:V.size].reshape(V.shape))

    before = _norms(V)
    remove(V)
    after = _norms(V)
    signal = after > NOISE * before
    if not signal.all():  # a boolean index copies the block even when it keeps every column
        V = V[:, signal]
    if np.any(after[signal] < KAHAN * before[signal]):
        # a column lost more than 1 - 1/sqrt(2) of its norm: one pass may not have been
        # enough (Kahan and Parlett's "twice is enough"); otherwise a second pass changes
        # nothing measurable
        remove(V)
    return _orthonormal(V)


def block_lobpcg(apply_A, apply_M, X0, k, *, tol, maxiter, project=None):
    """The `k` smallest eigenpairs of the symmetric operator `apply_A`, by block LOBPCG.

    Parameters
    ----------
    apply_A : callable (n, b) -> (n, b)
        The operator on a block.
    apply_M : callable (n, b) -> (n, b) or None
        A symmetric positive definite preconditioner (None: the identity).
    X0 : array (n, p), p >= k
        Start block; its columns beyond the k-th are the buffer.
    k : int
        Pairs wanted: the first k Ritz pairs are tested against `tol`.
    tol : float
        Convergence: ||A x - theta x|| <= tol for each of the first k (unit) columns.
    maxiter : int
    project : callable or None
        Projection onto the space the pairs are sought in (e.g. the complement of known
        eigenvectors); applied to the start, to every preconditioned residual and to every new
        X, so that rounding cannot bring those eigenvectors back.

    Returns
    -------
    values : array (k,) ascending, vectors : array (n, k), iterations : int,
    residuals : array (k,) true residual norms of the returned pairs
    """
    X = np.array(X0, dtype=np.float64)
    if project is not None:
        X = project(X)
    X = _orthonormal(_orthonormal(X))
    if X.shape[1] < k:
        raise ValueError(f"block_lobpcg: the start block spans {X.shape[1]} < k = {k} directions.")
    p = X.shape[1]
    n = X.shape[0]
    # work blocks kept for the whole solve: at 10^6 nodes a fresh n x p block per use costs the
    # allocation and page faults of its memory, about twice the pass over it (docs/scaling.md)
    spare_q, spare_aq = np.empty(3 * n * p), np.empty(3 * n * p)
    spare_w, spare_r = np.empty(n * p), np.empty((n, p))
    AX = apply_A(X)
    theta, C = np.linalg.eigh(_sym(X.T @ AX))
    X, AX = X @ C, AX @ C
    P = AP = None
    iterations = 0
    for iterations in range(1, maxiter + 1):
        R = np.subtract(AX, np.multiply(X, theta, out=spare_r), out=spare_r)
        res = _norms(R)
        if np.all(res[:k] <= tol):
            # the carried A X has drifted by rounding: test the true residuals before stopping
            AX = apply_A(X)
            R = AX - X * theta
            res = _norms(R)
            if np.all(res[:k] <= tol):
                break
        active = res > tol
        W = R if active.all() else R[:, active]
        if apply_M is not None:
            W = apply_M(np.ascontiguousarray(W))
        if project is not None:
            W = project(W)
        W = _orthogonalise(W, [X] if P is None else [X, P], spare_w)
        if W.shape[1] == 0:
            break
        AW = apply_A(W)
        blocks = [X, W] if P is None else [X, P, W]
        A_blocks = [AX, AW] if P is None else [AX, AP, AW]
        # [X, P, W] and its image into reused buffers (a fresh n x 3p block per iteration
        # costs its allocation and page faults, about twice the copy; docs/scaling.md)
        width = sum(B.shape[1] for B in blocks)
        Q = np.concatenate(blocks, axis=1, out=spare_q[:n * width].reshape(n, width))
        AQ = np.concatenate(A_blocks, axis=1, out=spare_aq[:n * width].reshape(n, width))
        # Q is orthonormal up to rounding; its Gram matrix keeps the Ritz problem exact anyway
        values, C = sla.eigh(_sym(Q.T @ AQ), _sym(Q.T @ Q), subset_by_index=(0, p - 1))
        Xn = Q @ C
        AXn = AQ @ C
        Pn = Q[:, p:] @ C[p:]  # the update's part outside span(X)
        if project is not None:
            Xn = project(Xn)
        # A P is recomputed, not carried: orthonormalising a nearly converged update scales up
        # the rounding error of a carried A P with it (x 10 per iteration, measured)
        P = _orthogonalise(Pn, [Xn], spare_w)
        AP = apply_A(P)
        X, AX, theta = Xn, AXn, values
    R = apply_A(X[:, :k]) - X[:, :k] * theta[:k]
    return theta[:k], X[:, :k], iterations, _norms(R)
