"""Deflated conjugate gradients for several right-hand sides at once.

One solver: `deflated_cg` solves ``A X = B`` for a symmetric positive definite operator ``A`` given
as a function on ``(n, b)`` blocks, column by column but with every matrix product done on the
whole block (one sparse product per iteration for all active columns). An optional deflation basis
``Phi`` (approximate eigenvectors of A for its smallest eigenvalues) is handled exactly by the
Def-CG recurrence of Saad, Yeung, Erhel & Guyomarc'h (2000): the iterate starts from the Galerkin
solution on span(Phi) and every search direction is made A-orthogonal to Phi, so CG only sees the
rest of the spectrum. Def-CG converges to the solution of the full system for any basis; the
better Phi approximates an invariant subspace, the fewer iterations it needs.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_option
from ._spmm import cg_direction, cg_update

__all__ = ["CGConvergenceWarning", "CGInfo", "deflated_cg", "shifted_cg"]


class CGConvergenceWarning(ConvergenceWarning):
    """Conjugate gradients stopped (iteration limit) before the requested tolerance."""


@dataclass
class CGInfo:
    """What a `deflated_cg` call achieved.

    Attributes
    ----------
    n_iter : int
        Largest number of CG iterations any column needed (over all restarts).
    residuals : array (b,)
        Achieved relative residuals ``||b_j - A x_j|| / ||b_j||``, recomputed from the returned
        solution (not the recursively updated residual).
    converged : array of bool (b,)
        Whether column j met the stopping rule.
    rtol, atol : float
        The requested tolerances.
    """

    n_iter: int
    residuals: np.ndarray
    converged: np.ndarray
    rtol: float
    atol: float

    @property
    def max_residual(self):
        return float(self.residuals.max()) if self.residuals.size else 0.0


def _col_dot(a, b):
    return np.einsum("ij,ij->j", a, b)


def _warn_not_converged(where, converged, budget, rel, rtol, atol):
    warnings.warn(
        f"{where}{int((~converged).sum())} of {converged.size} right-hand side(s) did not "
        f"converge in {budget}; achieved relative residual {float(rel.max()):.2e}, requested "
        f"rtol = {rtol:.1e}" + (f", atol = {atol:.1e}" if atol else "")
        + ". Raise maxiter, loosen the tolerance, or add eigenpairs to the deflation basis.",
        CGConvergenceWarning,
        stacklevel=3,
    )


def _cols(A, index):
    # numpy returns column selections in Fortran order; the fused kernels want row-major blocks
    return np.ascontiguousarray(A[:, index])


def deflated_cg(
    matvec,
    B,
    *,
    basis=None,
    A_basis=None,
    rtol=1e-10,
    atol=0.0,
    maxiter=None,
    max_restarts=2,
    deflation="full",
    x0=None,
    warn=True,
    name="deflated_cg",
):
    """Solve ``A X = B`` for SPD ``A`` by (deflated) CG on all columns of `B` at once.

    Parameters
    ----------
    matvec : callable
        ``matvec(P)`` returns ``A @ P`` for an ``(n, b)`` float64 array.
    B : array (n,) or (n, b)
    basis : array (n, K), optional
        Deflation basis Phi with orthonormal columns (e.g. top eigenvectors of S for
        A = I - alpha S). None: plain CG.
    A_basis : array (n, K), optional
        ``A @ basis``, when the caller has it already (it is reused across calls).
    rtol, atol : float
        Stopping rule, per column: ``||b_j - A x_j|| <= max(rtol * ||b_j||, atol)``.
    maxiter : int, optional
        Iteration limit per CG run; default ``max(200, 10 n)`` capped at 20 000.
    max_restarts : int
        The residual tested during iterations is updated recursively; at the end the true
        residual is recomputed and columns that fail the rule are restarted from their current
        solution (iterative refinement), at most this many times.
    deflation : {"full", "init"}
        ``full``: Def-CG, every search direction is made A-orthogonal to the basis (two thin
        products with the basis per iteration). ``init``: only the starting residual is
        (Galerkin start, "init-CG"); the CG recurrence then runs undeflated. The two coincide
        in exact arithmetic when the basis spans an invariant subspace of A (eigenvectors), and
        ``init`` halves the cost per iteration; with a poor basis use ``full``. Either way the
        stopping rule is checked on the true residual at the end, and failing columns restart
        from a projected residual.
    x0 : array, the shape of `B`, optional
        Starting guess (e.g. a solution to refine); with a basis, the Galerkin correction on
        span(Phi) is added to it. Default: the Galerkin solution on span(Phi), or 0.
    warn : bool
        Emit a `CGConvergenceWarning` with achieved and requested tolerance if a column fails.

    Returns
    -------
    X : array, the shape of `B`
    info : CGInfo
        Achieved (true) relative residuals per column, iterations, convergence flags.

    Notes
    -----
    Def-CG (Saad et al. 2000), per column, with ``E = Phi^T A Phi`` (K x K, Cholesky):
    ``x_0 = Phi E^-1 Phi^T b``, ``r_0 = b - A x_0``, ``p_0 = r_0 - Phi E^-1 (A Phi)^T r_0``;
    then the CG steps with ``p_(j+1) = beta_j p_j + r_(j+1) - Phi E^-1 (A Phi)^T r_(j+1)``.
    Without a basis this is textbook CG from ``x_0 = 0``. Columns with ``b_j = 0`` return 0.
    """
    B = np.asarray(B, dtype=np.float64)
    one_d = B.ndim == 1
    if one_d:
        B = B[:, None]
    n, b = B.shape
    if maxiter is None:
        maxiter = int(min(max(200, 10 * n), 20_000))
    X = np.zeros_like(B)
    if x0 is not None:
        X = np.array(x0, dtype=np.float64).reshape(n, b)
    if b == 0:
        info = CGInfo(0, np.zeros(0), np.zeros(0, bool), rtol, atol)
        return (X[:, 0] if one_d else X), info

    bnorm = np.linalg.norm(B, axis=0)
    thresh = np.maximum(rtol * bnorm, atol)
    E_factor = None
    if basis is not None and basis.shape[1] > 0:
        Phi = np.asarray(basis, dtype=np.float64)
        APhi = matvec(Phi) if A_basis is None else np.asarray(A_basis, dtype=np.float64)
        E = Phi.T @ APhi
        E = 0.5 * (E + E.T)
        E_factor = sla.cho_factor(E, lower=True)
        if x0 is None:
            X = Phi @ sla.cho_solve(E_factor, Phi.T @ B)
        else:
            X = X + Phi @ sla.cho_solve(E_factor, Phi.T @ (B - matvec(X)))
    else:
        Phi = APhi = None

    check_option(deflation, "deflation", {"full", "init"})
    full_deflation = deflation == "full"

    def project(R):
        if E_factor is None:
            return R
        return R - Phi @ sla.cho_solve(E_factor, APhi.T @ R)

    total_iter = 0
    R = B - matvec(X)
    for _restart in range(max_restarts + 1):
        rnorm = np.linalg.norm(R, axis=0)
        active = np.flatnonzero(rnorm > thresh)
        if active.size == 0:
            break
        Xa = _cols(X, active)
        Ra = _cols(R, active)
        Pa = project(Ra)
        if Pa is Ra:  # no basis: the direction must not alias the residual updated in place
            Pa = Ra.copy()
        rr = _col_dot(Ra, Ra)
        th = thresh[active]
        frozen = np.zeros(active.size, dtype=bool)  # converged, waiting to be dropped
        it = 0
        while active.size and it < maxiter:
            AP = matvec(Pa)
            pAp = _col_dot(Pa, AP)
            # pAp <= 0 only for a zero direction (exact solution reached) or a non-SPD operator
            safe = (pAp > 0) & ~frozen
            step = np.where(safe, rr / np.where(safe, pAp, 1.0), 0.0)
            rr_new = cg_update(Xa, Ra, Pa, AP, step)
            it += 1
            done = ((np.sqrt(rr_new) <= th) | ~safe) & ~frozen
            if done.any():
                X[:, active[done]] = Xa[:, done]
                frozen |= done
                # dropping columns copies the block: do it once a quarter of them are done
                if frozen.sum() * 4 >= frozen.size or frozen.all():
                    keep = ~frozen
                    active = active[keep]
                    if active.size == 0:
                        break
                    Xa, Ra, Pa = _cols(Xa, keep), _cols(Ra, keep), _cols(Pa, keep)
                    rr, rr_new, th = rr[keep], rr_new[keep], th[keep]
                    frozen = frozen[keep]
            beta = np.where(frozen, 0.0, rr_new / np.where(rr > 0, rr, 1.0))
            if full_deflation:
                Pa = Pa * beta + project(Ra)
            else:
                Pa = cg_direction(Pa, Ra, beta)
            rr = rr_new
        if active.size:
            X[:, active] = Xa
        total_iter = max(total_iter, it)
        R = B - matvec(X)
    rnorm = np.linalg.norm(R, axis=0)
    converged = rnorm <= thresh
    rel = rnorm / np.where(bnorm > 0, bnorm, 1.0)
    info = CGInfo(total_iter, rel, converged, float(rtol), float(atol))
    if warn and not converged.all():
        _warn_not_converged(f"{name}: ", converged, f"{maxiter} iterations (x{max_restarts + 1} "
                            "runs)", rel, rtol, atol)
    return (X[:, 0] if one_d else X), info


def shifted_cg(matvec, B, shifts, *, rtol=1e-10, atol=0.0, maxiter=None, warn=True,
               name="shifted_cg"):
    """Solve ``(A + s_i I) X_i = B`` for several shifts s_i at the cost of one CG run.

    Multi-shift CG (Frommer & Maass 1999; Jegerlehner 1996): the Krylov spaces of A + s I do not
    depend on s, and from the zero start the residuals of the shifted systems stay collinear with
    those of the base system (the smallest shift): r^s_k = zeta^s_k r_k. One sequence of block
    products with the base operator therefore serves every shift; each shift costs two block
    updates per iteration and no product. The base system is the worst conditioned, so
    |zeta^s_k| <= 1 and every shifted column has met the rule when its base column has.

    Parameters
    ----------
    matvec : callable
        ``matvec(P)`` returns ``A @ P`` for an (n, b) float64 array; ``A + min(shifts) I`` must be
        symmetric positive definite.
    B : array (n, b)
    shifts : sequence of float
    rtol, atol, maxiter, warn, name
        As in `deflated_cg`: column j of X_i meets ``||b_j - (A + s_i I) x_j|| <=
        max(rtol ||b_j||, atol)``. The true residuals are recomputed at the end, and columns
        that fail (rounding makes the recursive residual drift) are refined by `deflated_cg`
        from their current solution.

    Returns
    -------
    X : list of arrays (n, b), one per shift, in the order given
    infos : list of CGInfo, one per shift

    Notes
    -----
    With CG's step lengths a_k, b_k of the base system (x_(k+1) = x_k + a_k p_k,
    p_(k+1) = r_(k+1) + b_k p_k) and the relative shift s >= 0, zeta_0 = zeta_(-1) = 1, a_(-1) = 1,
    b_(-1) = 0, c_k = a_k b_(k-1) / a_(k-1):
    ``zeta_(k+1) = zeta_k zeta_(k-1) / ((1 + c_k + a_k s) zeta_(k-1) - c_k zeta_k)``,
    ``a^s_k = a_k zeta_(k+1) / zeta_k``, ``b^s_k = b_k (zeta_(k+1) / zeta_k)^2``,
    ``x^s += a^s_k p^s``, ``p^s <- zeta_(k+1) r_(k+1) + b^s_k p^s`` (p^s_0 = b). A shifted
    column stops updating once its residual |zeta| ||r_k|| meets the rule.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import shifted_cg
    >>> rng = np.random.default_rng(0)
    >>> M = rng.normal(size=(30, 30))
    >>> A = M @ M.T + 0.1 * np.eye(30)
    >>> B = rng.normal(size=(30, 2))
    >>> Xs, infos = shifted_cg(lambda P: A @ P, B, [0.0, 1.0], rtol=1e-12)
    >>> bool(np.allclose(Xs[1], np.linalg.solve(A + np.eye(30), B)))
    True
    """
    B = np.asarray(B, dtype=np.float64)
    if B.ndim != 2:
        raise ValueError(f"B must be an (n, b) array; got shape {B.shape}.")
    shifts = np.asarray(shifts, dtype=np.float64).ravel()
    if shifts.size == 0:
        raise ValueError("shifts is empty; give at least one shift.")
    n, b = B.shape
    if maxiter is None:
        maxiter = int(min(max(200, 10 * n), 20_000))
    s0 = float(shifts.min())
    rel = shifts - s0
    base = int(np.argmin(shifts))
    m = shifts.size

    def base_matvec(P):
        out = matvec(P)
        if s0:
            out = out + s0 * P
        return out

    bnorm = np.linalg.norm(B, axis=0)
    thresh = np.maximum(rtol * bnorm, atol)
    X = np.zeros((m, n, b))
    P = np.repeat(B[None], m, axis=0)
    R = B.copy()
    rr = _col_dot(R, R)
    live = np.sqrt(rr) > thresh
    zeta = np.ones((m, b))
    zeta_prev = np.ones((m, b))
    moving = np.repeat(live[None], m, axis=0)  # shifted columns still updating
    a_prev = np.ones(b)
    b_prev = np.zeros(b)
    it = 0
    while live.any() and it < maxiter:
        Pb = P[base]
        AP = base_matvec(Pb)
        pAp = _col_dot(Pb, AP)
        ok = live & (pAp > 0)
        a = np.where(ok, rr / np.where(ok, pAp, 1.0), 0.0)
        R -= AP * a
        rr_new = _col_dot(R, R)
        bk = np.where(ok, rr_new / np.where(rr > 0, rr, 1.0), 0.0)
        c = a * b_prev / a_prev
        rnorm = np.sqrt(rr_new)
        for i in range(m):
            if i == base:
                continue
            upd = moving[i] & ok
            if not upd.any():
                continue
            denom = (1.0 + c + a * rel[i]) * zeta_prev[i] - c * zeta[i]
            z_new = np.where(upd, zeta[i] * zeta_prev[i] / np.where(upd, denom, 1.0), zeta[i])
            ratio = np.where(upd, z_new / np.where(upd, zeta[i], 1.0), 0.0)
            X[i] += P[i] * (a * ratio)
            if upd.all():
                P[i] *= bk * ratio**2
                P[i] += z_new * R
            else:
                P[i] = np.where(upd, z_new * R + (bk * ratio**2) * P[i], P[i])
            zeta_prev[i] = np.where(upd, zeta[i], zeta_prev[i])
            zeta[i] = z_new
            moving[i] &= ~(np.abs(z_new) * rnorm <= thresh)
        X[base] += Pb * a
        P[base] *= bk
        P[base] += R
        a_prev = np.where(ok, a, a_prev)
        b_prev = bk
        rr = rr_new
        live = ok & (rnorm > thresh)
        moving[base] = live
        it += 1

    outs, infos = [], []
    for i in range(m):
        def op(Q, s=shifts[i]):
            return matvec(Q) + s * Q

        Ri = B - op(X[i])
        rel_res = np.linalg.norm(Ri, axis=0) / np.where(bnorm > 0, bnorm, 1.0)
        bad = np.flatnonzero(np.linalg.norm(Ri, axis=0) > thresh)
        Xi = X[i]
        if bad.size:  # recursive residual drifted: refine those columns from where they are
            Xb, _ = deflated_cg(op, B[:, bad], rtol=rtol, atol=atol, maxiter=maxiter, x0=Xi[:, bad],
                                warn=False, name=name)
            Xi[:, bad] = Xb
            Ri = B[:, bad] - op(Xb)
            rel_res[bad] = np.linalg.norm(Ri, axis=0) / np.where(bnorm[bad] > 0, bnorm[bad], 1.0)
        converged = rel_res * np.where(bnorm > 0, bnorm, 1.0) <= thresh
        infos.append(CGInfo(it, rel_res, converged, float(rtol), float(atol)))
        outs.append(Xi)
        if warn and not converged.all():
            _warn_not_converged(f"{name}: shift {shifts[i]:.3g}: ", converged,
                                f"{maxiter} iterations", rel_res, rtol, atol)
    return outs, infos
