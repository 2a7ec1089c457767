"""Block Lanczos (Gauss) quadrature of ``R^T (A + s I)^-1 R`` for many shifts, and its run kept.

`_stability.lanczos_flows` reads the Markov-stability flows between pieces from one block Lanczos
run of ``A = I - a0 S`` (Golub & Meurant 2010): `_lanczos_quadrature` runs it to the stopping
rule `_quadrature_converged`, which the Chebyshev moments (`_moment_quadrature`) share. The run
is a `_BlockLanczos` object, so that a scan of longer walks can take it further instead of
running again (`KrylovFlows`: the Krylov space does not depend on a0). `_block_qr` keeps the
blocks orthonormal as directions deflate.
"""

from __future__ import annotations

import numpy as np

from ..kernels import block_inner, block_triangular, block_update_inner

__all__ = ["KrylovFlows"]


def _block_qr(Wk, drop=0.0, overwrite=False, gram=None):
    """Q (n, r) orthonormal and Rk (r, b) with ``Wk = Q Rk`` up to columns of norm <= `drop`.

    One Cholesky QR pass when the block is well conditioned (the pivots of the Gram matrix's
    Cholesky factor within 1e-4 of each other: Q^T Q = I to about eps cond(Wk)^2). Otherwise
    the pivoted Cholesky QR (`_pivoted_cholesky_qr`: rank-revealing, then a second pass), or
    Householder QR with column pivoting when that is not accurate; the directions whose pivots
    are <= `drop` are dropped (r < b): the block Lanczos recurrence deflates them (a piece that
    is a whole component leaves a zero column; a small component's Krylov space is exhausted
    after a few steps). An unpivoted Cholesky factor does not reveal a rank: on exactly
    rank-deficient blocks its last pivot reached 7e-5 of the first (2 of 21 000 random draws
    above 3e-5, none above 1e-4), where a pivoted one gives rounding, so a block it cannot
    certify as well conditioned goes to the pivoted path. With `overwrite` the one-pass path
    writes Q over `Wk` (no new block of its size); `gram`, if given, is ``Wk^T Wk`` already
    computed (up to rounding). The Gram matrix and the triangular factor are applied by row
    chunks over the threads (`kernels.block_inner`, `kernels.block_triangular`: a multiply by
    the factor's inverse, at gemm speed, where a triangular solve ran at a third of it). Gauss
    quadrature stays accurate through a loss of orthogonality of order eps cond^2 (Golub &
    Strakos 1994), as through the recurrence's own.
    """
    from scipy.linalg import qr
    from scipy.linalg.lapack import dtrtri

    G = gram if gram is not None else block_inner(Wk)
    try:
        L = np.linalg.cholesky(G)
    except np.linalg.LinAlgError:
        L = None
    if L is not None:
        dg = np.abs(np.diag(L))
        if dg.size and np.all(np.isfinite(dg)) and dg.min() > max(1e-4 * dg.max(), drop):
            Linv, info = dtrtri(L, lower=1)
            if info == 0:
                Q = Wk
                if not overwrite or not (Q.flags.c_contiguous and Q.dtype == np.float64):
                    Q = np.array(Q, dtype=np.float64, order="C")
                return block_triangular(Q, Linv.T), L.T.copy()  # Q L^-T, written over Q
    found = _pivoted_cholesky_qr(Wk, drop, gram=G)
    if found is not None:
        return found
    Qh, Rf, piv = qr(Wk, mode="economic", pivoting=True)
    dg = np.abs(np.diag(Rf))
    r = int(np.count_nonzero(dg > max(drop, 1e-13 * (dg[0] if dg.size else 0.0))))
    Rp = np.empty_like(Rf)
    Rp[:, piv] = Rf
    return np.ascontiguousarray(Qh[:, :r]), Rp[:r]


def _pivoted_cholesky_qr(Wk, drop, gram=None):
    """Rank-revealing Cholesky QR of a rank-deficient block, or None when it is not accurate.

    The pivoted Cholesky factor of the Gram matrix (LAPACK pstrf) picks the columns in the
    order of Householder QR with column pivoting and stops when the largest remaining column
    norm is below ``max(drop, 1e-6 ||Wk||)``; the kept columns times the inverse factor, then
    one more Cholesky QR pass, give an orthonormal Q. A direction of relative size below 1e-6
    that is dropped changes a Gauss quadrature by about its square (1e-12 relative), and the
    Gram matrix cannot resolve much smaller directions (its rounding is ~1e-16 relative in the
    squares). The first block of `lanczos_flows` is rank-deficient by construction (the pieces
    of a component sum to its stationary vector, which is projected out); Householder QR of it
    took 1.4 s at 500 000 x 50, this 0.2 s (docs/scaling.md). `gram`: ``Wk^T Wk`` when the
    caller has it. None when the second pass is not well conditioned (the caller then uses
    Householder QR).
    """
    from scipy.linalg.lapack import dpstrf, dtrtri

    b = Wk.shape[1]
    G = block_inner(Wk) if gram is None else gram
    top = float(np.max(np.diag(G))) if b else 0.0
    if not np.isfinite(top) or top <= 0.0:
        return None
    C, piv, r, info = dpstrf(G, tol=max(drop**2, 1e-12 * top), lower=1)
    if info < 0 or r == 0:
        return None
    piv = piv[:b] - 1
    L = np.tril(C)[:, :r]  # G[piv][:, piv] = L L^T, L (b, r)
    Linv, info = dtrtri(np.ascontiguousarray(L[:r]), lower=1)
    if info != 0:
        return None
    Q = block_triangular(np.ascontiguousarray(Wk[:, piv[:r]]), Linv.T)
    Rk = np.empty((r, b))
    Rk[:, piv] = L.T
    try:
        L2 = np.linalg.cholesky(block_inner(Q))
    except np.linalg.LinAlgError:
        return None
    dg = np.abs(np.diag(L2))
    if not np.all(np.isfinite(dg)) or dg.min() < 0.5 or dg.max() > 2.0:
        return None
    L2inv, info = dtrtri(L2, lower=1)
    if info != 0:
        return None
    return block_triangular(Q, L2inv.T), L2.T @ Rk


def _lanczos_quadrature(matvec, R, shifts, project, *, rtol=1e-6, maxiter=1000, keep=False):
    """``R^T (A + s I)^-1 R`` for every shift s >= 0 by block Lanczos (Gauss) quadrature.

    The block Lanczos recurrence ``A Q_k = Q_(k-1) B_(k-1)^T + Q_k A_k + Q_(k+1) B_k`` from
    ``R = Q_1 B_0`` gives the block tridiagonal T_K, and ``R^T f(A) R ~ B_0^T f(T_K)_11 B_0``,
    exact for polynomials of degree < 2K (Golub & Meurant 2010); for f(x) = 1 / (x + s) the
    (1, 1) block comes from block Cholesky of T_K + s I, block by block from the top
    (`_ForwardGauss`). Each new block is kept orthogonal to the deflated eigenvectors by
    `project` (X -> X minus its part in their span, in place or not: the remainder lives in
    their complement). Stops when the estimate for the smallest shift (the slowest) is within
    ``max(rtol^2, 1e-11)`` of its limit, relative to its largest entry
    (`_quadrature_converged`). Cost per iteration: one block product and O(n b^2) for the
    projections, independent of the number of shifts. ``matvec(X, out)`` returns A X, written
    into `out` when that is given: each step's product goes into the block that the step
    before retired (no fresh n x b block per step). With `keep`, returns ``(estimates,
    recurrence)``: the `_BlockLanczos` run, which gives the estimate at any other shift and
    can be taken further (`KrylovFlows`).
    """
    n, b = R.shape
    norms = np.linalg.norm(R, axis=0)
    if not norms.any():
        zeros = [np.zeros((b, b)) for _ in shifts]
        return (zeros, None) if keep else zeros
    run = _BlockLanczos(matvec, R, project, drop=1e-10 * norms.max())
    if not run.advance(float(min(shifts)), max(rtol**2, 1e-11), maxiter):
        return None
    out = []
    for s in shifts:
        F = run.estimate(float(s))
        out.append(0.5 * (F + F.T))
    return (out, run) if keep else out


class _BlockLanczos:
    """The block Lanczos recurrence of `_lanczos_quadrature`, one block per `step`: a run that
    has stopped can be taken further (`advance` at a smaller shift) while it holds its last
    two blocks. `exact` once the Krylov space is invariant, `broken` after non-finite numbers.
    """

    def __init__(self, matvec, R, project, drop):
        n = R.shape[0]
        self.matvec, self.project = matvec, project
        # block sizes shrink when directions deflate: Q_k is n x r_k, A_k r_k x r_k, B_k
        # r_(k+1) x r_k
        self.Q, self.B0 = _block_qr(R, drop=drop)
        self.Q_prev = np.zeros((n, 0))
        self.B_prev = np.zeros((self.Q.shape[1], 0))
        self.As, self.Bs = [], []
        self.spare = None  # a retired block whose memory takes the next product
        self.W = self.gram = None  # the last step's new block, before its QR
        self.exact = self.broken = False

    def _next_block(self):
        """The QR of the last step's new block: Q_(k+1) and B_k (False when there is none)."""
        # ||A|| <= 2 and Q_k is orthonormal: a direction of W below 1e-8 is rounding of an
        # exhausted Krylov space (deflated; the quadrature is then exact in it). The Gram
        # matrix is W's before `project`, which removes only rounding (Q and S keep to the
        # complement of the deflated vectors, up to an eigenbasis' residual): it changes the
        # Gram matrix by the square of what it removes
        Q_next, Bk = _block_qr(self.W, drop=1e-8, overwrite=True, gram=self.gram)
        self.W = self.gram = None
        if not np.all(np.isfinite(Bk)):
            self.broken = True
            return False
        if Q_next.shape[1] == 0:
            self.exact = True  # the Krylov space is invariant: the quadrature is exact
            return False
        self.Bs.append(Bk)
        self.spare = self.Q_prev
        self.Q_prev, self.Q, self.B_prev = self.Q, Q_next, Bk
        return True

    def step(self):
        """One more block of T_K; False when the space is exhausted or the recurrence broke."""
        if self.exact or self.broken or self.Q is None:
            return False
        if self.W is not None and not self._next_block():
            return False
        Q, Q_prev = self.Q, self.Q_prev
        Wk = self.matvec(Q, _recycled(self.spare, Q.shape))
        # the dense work in place, rows over the threads, each update fused with the inner
        # product after it (`kernels.block_update_inner`)
        if Q_prev.shape[1]:
            Ak = block_update_inner(Wk, Q_prev, self.B_prev.T, Q)
        else:
            Ak = block_inner(Q, Wk)
        Ak = 0.5 * (Ak + Ak.T)
        self.gram = block_update_inner(Wk, Q, Ak)
        # no second projection against Q_k: finite-precision Gauss quadrature stays accurate
        # through the loss of orthogonality (Golub & Strakos 1994); measured at 250 000 and
        # 500 000 points: the same steps and flows to 1e-15, 13 % less time (docs/scaling.md)
        self.W = self.project(Wk)
        self.As.append(Ak)
        return True

    def estimate(self, s, steps=None):
        """The Gauss estimate at shift `s` after `steps` blocks (all by default)."""
        return list(_ForwardGauss(self.B0, s).extend(self.As, self.Bs, steps))[-1]

    def advance(self, s, tol, maxiter):
        """Steps until the estimate at shift `s` passes `_quadrature_converged` with `tol`:
        True then (or when the space is exhausted), False when the recurrence broke, has no
        blocks left to go on from, or reached `maxiter` blocks."""
        # checked at every step from the 8th on: the estimate's own error, extrapolated from
        # its last steps, is within tol, or a stalled estimate has stopped moving. The
        # estimates come block by block from the top (`_ForwardGauss`, O(b^3) a step; the
        # Schur complements from the bottom up cost O(k b^3) at step k: 14 s of battery
        # sipu/worms_2's 47 s of flows at b = 210)
        K = len(self.As)
        forward = _ForwardGauss(self.B0, s)
        # the estimates after blocks max(4, K - 4) .. K
        history = list(forward.extend(self.As, self.Bs))[max(3, K - 5):]
        while not (len(history) and _quadrature_converged(history, tol)):
            if len(self.As) >= maxiter or not self.step():
                return self.exact
            F = list(forward.extend(self.As, self.Bs))[-1]  # the new block's
            if len(self.As) >= 4:
                history.append(F)
        return True

    def compact(self):
        """Hold two n x b blocks (Q_k, Q_(k+1)) instead of four while the run waits to go on:
        the next block's QR now (the first part of the next `step`), the spare block dropped."""
        if self.W is not None and not (self.exact or self.broken) and self.Q is not None:
            self._next_block()
        self.spare = None

    def release(self):
        """Drop the blocks (and the product): the recurrence stays, and cannot go further."""
        self.Q = self.Q_prev = self.W = self.spare = self.matvec = self.project = None


class _ForwardGauss:
    """``B0^T ((T_k + s I)^-1)_11 B0`` after each block of T_K in turn (diagonal blocks A_k,
    blocks B_k below them), from the top: block Cholesky of T_K + s I from its first block
    down. With the pivots P_0 = A_0 + s I, P_k = A_k + s I - B_(k-1) P_(k-1)^-1 B_(k-1)^T and
    Y_k = B0^T ((T_k + s I)^-1)_(0,k), eliminating the last block gives E_k = E_(k-1) + Z P_k^-1
    Z^T and Y_k = -Z P_k^-1 with Z = Y_(k-1) B_(k-1)^T (the last diagonal block of the inverse
    is the last pivot's inverse): O(b^3) a block, where the Schur complements from the bottom
    up cost O(k b^3) after k blocks."""

    def __init__(self, B0, s):
        self.B0, self.s = B0, float(s)
        self.E = self.Y = self.P = None
        self.k = 0  # blocks added

    def extend(self, As, Bs, steps=None):
        """The estimates after each block of `As` (diagonal blocks of T_K; `Bs`, those below
        them) not yet added, up to `steps` blocks in all (every block by default)."""
        for k in range(self.k, len(As) if steps is None else steps):
            yield self.add(As[k], Bs[k - 1] if k else None)

    def add(self, Ak, Bk):
        """The estimate with the block `Ak` added below, joined to the last by `Bk` (its
        block below the diagonal; None for the first block)."""
        P = Ak + self.s * np.eye(Ak.shape[0])
        self.k += 1
        if Bk is None:
            self.Y = np.linalg.solve(P, self.B0).T  # P is symmetric
            self.E, self.P = self.Y @ self.B0, P
            return self.E
        P = P - Bk @ np.linalg.solve(self.P, Bk.T)
        Z = self.Y @ Bk.T
        ZP = np.linalg.solve(P, Z.T).T
        self.E = self.E + ZP @ Z.T
        self.Y, self.P = -ZP, P
        return self.E


class KrylovFlows:
    """The block Lanczos run of one `lanczos_flows` call, which gives the flows at longer walks
    with a few more products by S at most.

    The run's Krylov space of ``I - a0 S`` from the remainder R does not depend on a0, and
    the projection of ``(I - alpha S) = (alpha / a0) ((a0 / alpha - 1) I + (I - a0 S))`` on
    it is the run's T_K shifted by ``s = a0 / alpha - 1``: walks longer than the run's
    longest take a negative shift (s > a0 - 1 for every alpha < 1, where ``T_K + s I`` stays
    positive definite). Their estimate converges more slowly, so `flows` takes the run on
    until its own stopping rule passes at the slowest new shift, as a run at those walk
    lengths would have stopped (`_quadrature_converged`). `pieces` is what a caller keys it
    on (`markov_stability_scan`: the consensus pieces whose indicators were B).
    """

    def __init__(self, run, a0, C, tol, maxiter=1000, pieces=None):
        self.run, self.a0, self.C, self.tol = run, float(a0), C, float(tol)
        self.maxiter, self.pieces = int(maxiter), pieces

    def flows(self, alphas):
        """``B^T U_alpha B`` for every alpha in (0, 1), as `lanczos_flows` gives them, or None
        when the run cannot be taken far enough (it broke down, or reached `maxiter`)."""
        alphas = [float(a) for a in alphas]
        if not alphas or not 0.0 < min(alphas) <= max(alphas) < 1.0:
            return None
        s_min = self.a0 / max(alphas) - 1.0
        if s_min < 0.0 and not self.run.advance(s_min, self.tol, self.maxiter):
            return None
        out = []
        for a in alphas:
            F = self.run.estimate(self.a0 / a - 1.0)
            out.append(self.C.T @ self.C + (1 - a) * (self.a0 / a) * 0.5 * (F + F.T))
        return out


def _quadrature_converged(history, tol):
    """Whether the last of a run's Gauss estimates `history` is within `tol` (relative to its
    largest entry) of the limit.

    Gauss quadrature of ``1 / (x + s)`` converges monotonically, and at the end of a run
    geometrically: its steps d_k = |F_k - F_(k-1)| shrink by a ratio rho per step (0.55 on
    the 500 000-point flows, docs/scaling.md). The error of F_k is then the sum of the steps
    still to come, d_k rho / (1 - rho), with rho the largest of the last three ratios. A run
    whose steps stop shrinking (a ratio of 1 or more: a stall, or rounding) stops only when
    F_k has moved by at most tol / 100 over the last 4 steps: that bounds the error by tol
    for any ratio up to rho = 0.9975 per step. The former rule, a move of at most tol
    over 4 steps, ran 4 steps too long at a decay of 0.55 (F_k 25 times more accurate than
    tol: 30 steps where 26 reach it on the 500 000-point flows) and stopped too early at a
    decay slower than 0.84, where 4 steps move less than the error left.
    """
    if len(history) < 5:
        return False
    F = history[-1]
    scale = np.abs(F).max()
    if np.abs(F - history[-5]).max() <= 1e-2 * tol * scale:
        return True
    d = [np.abs(history[-i] - history[-i - 1]).max() for i in range(1, 5)]  # d_k, d_(k-1), ..
    if d[0] == 0.0:
        return True
    if min(d[1:]) == 0.0:
        return False
    rho = max(d[0] / d[1], d[1] / d[2], d[2] / d[3])
    return rho < 1.0 and d[0] * rho / (1.0 - rho) <= tol * scale


def _recycled(block, shape):
    """A C-contiguous float64 (n, r) view of `block`'s memory, or None when it is too small."""
    if (block is None or block.dtype != np.float64 or not block.flags.c_contiguous
            or block.size < shape[0] * shape[1] or shape[1] == 0):
        return None
    return block.reshape(-1)[:shape[0] * shape[1]].reshape(shape)
