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
SVQB (Stathopoulos & Wu 2002), dropping directions that have become dependent, and P spanning
with the new X what the old and the new X span (Hetmaniuk & Lehoucq 2006), taken as an
orthonormal complement in the small Ritz coordinates (Duersch, Shao, Yang & Gu 2018): Q is
orthonormal and the Ritz problem well conditioned whatever the iteration. X, P and their
images A X, A P are one product of [Q, A Q] with orthonormal coefficients, so the rounding in
A Q is carried along, never scaled up; only A W is applied per iteration (the former P, the
update orthonormalised in n dimensions, needed A P applied too: carried, its error grew
tenfold per iteration near convergence). When the carried residuals say the first k columns
have converged, A X is recomputed and the test repeated on the true residuals, so the returned
pairs are certified.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from ._cg import _col_dot
from ._spmm import ritz_residual

__all__ = ["block_lobpcg", "kept_block"]

#: Directions whose Gram eigenvalue is below this fraction of the largest are dropped (SVQB).
SVQB_DROP = 1e-10

#: A column keeping less than this fraction of its norm after Gram-Schmidt is rounding noise.
NOISE = 1e-8

#: Gram-Schmidt is repeated when a column keeps less than this fraction of its norm.
KAHAN = 1 / np.sqrt(2)


def _norms(V):
    return np.sqrt(_col_dot(V, V))


def kept_block(flat, shape):
    """A C-contiguous (n, b) view over the start of the flat buffer `flat`, or None if `flat` is
    None, too small or `shape` is not 2-D: where a result goes instead of a fresh block."""
    if flat is None or len(shape) != 2 or shape[0] * shape[1] > flat.size:
        return None
    return flat[:shape[0] * shape[1]].reshape(shape)


def _sym(G):
    return (G + G.T) / 2


def _orthonormal(V, out=None):
    """SVQB: V T with orthonormal columns, directions that have become dependent dropped.

    `out`: a flat float64 buffer of at least V.size that receives the result (no new block)."""
    norms = _norms(V)
    if not (norms > 0).any():
        return V[:, :0]
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    G = (V.T @ V) * np.outer(scale, scale)
    w, U = np.linalg.eigh(_sym(G))
    good = w > SVQB_DROP * w[-1]
    T = scale[:, None] * (U[:, good] / np.sqrt(w[good]))
    dest = kept_block(out, (V.shape[0], T.shape[1]))
    return V @ T if dest is None else np.matmul(V, T, out=dest)


def _orthogonalise(V, bases, spare=None, out=None):
    """V made orthonormal and orthogonal to the orthonormal `bases`.

    Classical Gram-Schmidt, repeated when a column lost much of its norm, then SVQB. A column
    that keeps less than `NOISE` of its norm lay inside the bases (a converged column's residual
    or update): what is left is rounding noise, and scaling it to unit length would scale up
    the bases' own loss of orthogonality with it, so it is dropped. `spare`: a flat float64
    buffer of at least V.size that receives the products (no new block per pass); `out`: one
    that receives the result."""

    def remove(V):
        for B in bases:
            coef = B.T @ V
            dest = kept_block(spare, V.shape)
            V -= B @ coef if dest is None else np.matmul(B, coef, out=dest)

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
    return _orthonormal(V, out)


def _complement(C, G, p):
    """Coefficients of the new P: the old X's directions G-orthogonal to the new X, G-orthonormal.

    In the basis Q (Gram matrix G), the old X is E = [I_p; 0] and the new X is Q C with
    C^T G C = I. The part of E outside span(C), orthonormalised, spans with C what the old and
    the new X span together: LOBPCG's three-term recurrence (Hetmaniuk & Lehoucq 2006), with
    P = Q C_P orthonormal and orthogonal to the new X by construction (Duersch, Shao, Yang &
    Gu 2018). Everything here is small (width x p); directions that moved less than `NOISE`
    (converged columns) are dropped."""
    E = -C @ (C.T @ G[:, :p])
    E[:p] += np.eye(p)
    E -= C @ (C.T @ (G @ E))  # twice is enough (Kahan and Parlett)
    w, U = np.linalg.eigh(_sym(E.T @ G @ E))
    good = w > max(NOISE**2, SVQB_DROP * w[-1])
    return E @ (U[:, good] / np.sqrt(w[good]))


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
        eigenvectors), in place on its argument; applied to the start, to every preconditioned
        residual and to every new X, so that rounding cannot bring those eigenvectors back.

    Each result of `apply_A` and `apply_M` is used before the next call, so they may return
    a block of their own that the next call overwrites.

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
    # the basis [X, P, W] and its image live in column slices of two pairs of blocks, kept
    # for the whole solve and used in turn: a fresh n x 3p block per iteration costs its
    # allocation and page faults, about twice a pass over it (docs/scaling.md), and copying
    # X, P, W together would cost another pass
    bases = [np.empty((n, 3 * p)) for _ in range(2)]
    images = [np.empty((n, 3 * p)) for _ in range(2)]
    spare_w, spare_o, spare_r = np.empty(n * p), np.empty(n * p), np.empty((n, p))
    spare_a = np.empty(n * p)
    AX = apply_A(X)
    theta, C = np.linalg.eigh(_sym(X.T @ AX))
    Q, AQ = bases[0], images[0]
    np.matmul(X, C, out=Q[:, :p])
    np.matmul(AX, C, out=AQ[:, :p])
    q = 0  # columns of P
    # the Gram matrices of [X, P] and of its image, known from the last Ritz step (None: to
    # be computed)
    G_xp, H_xp = np.eye(p), np.diag(theta)
    iterations = 0
    for iterations in range(1, maxiter + 1):
        X, AX = Q[:, :p], AQ[:, :p]
        R = spare_r
        res = ritz_residual(AX, X, theta, R)
        if np.all(res[:k] <= tol):
            # the carried A X has drifted by rounding: test the true residuals before stopping
            AX[...] = apply_A(X)
            res = ritz_residual(AX, X, theta, R)
            if np.all(res[:k] <= tol):
                break
            G_xp = H_xp = None
        active = np.flatnonzero(res > tol)
        W = R
        if active.size < p:
            W = np.take(R, active, axis=1, out=kept_block(spare_a, (n, active.size)))
        if apply_M is not None:
            W = apply_M(W)
        if project is not None:
            W = project(W)
        W = _orthogonalise(W, [Q[:, :p + q]], spare_w, spare_o)
        if W.shape[1] == 0:
            break
        width = p + q + W.shape[1]
        Q[:, p + q:width] = W
        AQ[:, p + q:width] = apply_A(W)
        Qw, AQw = Q[:, :width], AQ[:, :width]
        # Q is orthonormal up to rounding; its Gram matrix keeps the Ritz problem exact anyway.
        # The [X, P] blocks are the last step's small matrices rotated by its coefficients
        # (X and P are that rotation of the last basis), so only W's rows need a pass over n
        if G_xp is None:
            G, H = Qw.T @ Qw, Qw.T @ AQw
        else:
            W, m = Q[:, p + q:width], p + q
            G, H = np.empty((width, width)), np.empty((width, width))
            G[:m, :m], H[:m, :m] = G_xp, H_xp
            G[:, m:], H[:, m:] = Qw.T @ W, AQw.T @ W
            G[m:, :m], H[m:, :m] = G[:m, m:].T, H[:m, m:].T
        G, H = _sym(G), _sym(H)
        values, C = sla.eigh(H, G, subset_by_index=(0, p - 1))
        # the new X and P, and their images, carried through the small coefficients: both
        # are orthonormal combinations of the basis, so rounding in A Q is carried, never
        # scaled up (an A P orthonormalised from a nearly converged update grew x 10 per
        # iteration; docs/scaling.md)
        coef = np.hstack([C, _complement(C, G, p)])
        G_xp, H_xp = coef.T @ G @ coef, coef.T @ H @ coef
        Q, AQ = bases[1] if Q is bases[0] else bases[0], images[1] if AQ is images[0] else images[0]
        q = coef.shape[1] - p
        np.matmul(Qw, coef, out=Q[:, :p + q])
        np.matmul(AQw, coef, out=AQ[:, :p + q])
        if project is not None:
            project(Q[:, :p])
        theta = values
    X = Q[:, :p]
    R = apply_A(X[:, :k]) - X[:, :k] * theta[:k]
    return theta[:k], np.array(X[:, :k]), iterations, _norms(R)
