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

__all__ = ["CGConvergenceWarning", "CGInfo", "deflated_cg"]


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
        X = Phi @ sla.cho_solve(E_factor, Phi.T @ B)
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
        Xa = X[:, active]
        Ra = R[:, active]
        Pa = project(Ra)
        rr = _col_dot(Ra, Ra)
        th = thresh[active]
        it = 0
        while active.size and it < maxiter:
            AP = matvec(Pa)
            pAp = _col_dot(Pa, AP)
            # pAp <= 0 only for a zero direction (exact solution reached) or a non-SPD operator
            safe = pAp > 0
            step = np.where(safe, rr / np.where(safe, pAp, 1.0), 0.0)
            Xa += Pa * step
            Ra -= AP * step
            rr_new = _col_dot(Ra, Ra)
            it += 1
            done = (np.sqrt(rr_new) <= th) | ~safe
            if done.any():
                X[:, active[done]] = Xa[:, done]
                keep = ~done
                active, Xa, Ra, Pa = active[keep], Xa[:, keep], Ra[:, keep], Pa[:, keep]
                rr, rr_new, th = rr[keep], rr_new[keep], th[keep]
                if active.size == 0:
                    break
            beta = rr_new / rr
            Pa = Pa * beta + (project(Ra) if full_deflation else Ra)
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
        warnings.warn(
            f"{name}: {int((~converged).sum())} of {b} right-hand side(s) did not converge in "
            f"{maxiter} iterations (x{max_restarts + 1} runs); achieved relative residual "
            f"{float(rel.max()):.2e}, requested rtol = {rtol:.1e}"
            + (f", atol = {atol:.1e}" if atol else "")
            + ". Raise maxiter, loosen the tolerance, or add eigenpairs to the deflation basis.",
            CGConvergenceWarning,
            stacklevel=2,
        )
    return (X[:, 0] if one_d else X), info
