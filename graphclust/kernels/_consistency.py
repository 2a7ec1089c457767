"""The local-and-global-consistency kernel U = beta (I - alpha S)^-1, applied without forming it.

Zhou et al. (2004) label propagation converges to F* = beta (I - alpha S)^-1 Y with
S = D^-1/2 W D^-1/2, alpha in (0, 1), beta = 1 - alpha; Breitenbach & Grudic cluster with the
columns of U = beta (I - alpha S)^-1. U is dense even when W is sparse, so this module never forms
it: `ConsistencyKernel.apply` multiplies U into an ``(n, b)`` block by deflated conjugate gradients
on ``A = I - alpha S`` (`deflated_cg`), deflated by the top eigenpairs of S, which are computed once
per W and shared by every alpha (`ConsistencyKernel.with_alpha`).

Column norms nu_j = ||U e_j|| (the one quantity that is not a few solves) come exact (closed form
from a full eigendecomposition for small n, or one solve per column) or estimated for large n:
with the top-K eigenpairs (lambda_k, phi_k) of S,

    nu_i^2 = beta^2 sum_k phi_ik^2 / (1 - alpha lambda_k)^2  +  [diag(U_perp^2)]_i,

the first term computed exactly (in closed form for accurate eigenpairs, by K solves,
``||Phi^T U e_i||^2``, for an approximate basis), the remainder ``[U P U]_ii`` (P projects off
the top-K space) estimated from s random sign probes z: with Y = U P Z,
``[U P U]_ii ~= mean_s Y_is^2`` (unbiased, never negative). The per-entry standard error of that
mean is reported (`ColumnNorms`). The probe block can be drawn in an order of the data
(``probe_order``) rather than of the rows, which makes the estimate permutation-equivariant.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_option, check_random_state, check_real
from ._cg import CGInfo, deflated_cg, shifted_cg
from ._protocol import DENSE_KERNEL_MAX_NODES, ColumnNorms
from ._spectrum import (Spectrum, arpack_eigsh, normalized_adjacency, symmetric_definite_lu,
                        top_eigenpairs)
from ._spmm import shifted_product

__all__ = ["ConsistencyKernel", "ColumnNorms", "DENSE_KERNEL_MAX_NODES", "component_eigenvectors",
           "deflation_basis"]

#: ``method="auto"`` is dense up to this size: the O(n^3) full eigendecomposition is exact and
#: cheaper than Lanczos plus CG below it.
AUTO_DENSE_MAX_NODES = 1500


@dataclass
class _Basis:
    """Everything about S that does not depend on alpha: shared across a search over alpha."""

    S: sp.csr_matrix
    degrees: np.ndarray
    spectrum: Spectrum
    full: bool
    S_vectors: np.ndarray = field(repr=False)  # S @ Phi
    solver: str = "cg"  # how U is applied: "dense", "cg" or "lu"
    # "lu": (alpha, factorisation of I - alpha S) of the last alpha solved, shared by every
    # kernel on this basis (the search's norms, its seed path and the final fit reuse it)
    lu: tuple | None = field(default=None, repr=False)

    @property
    def n(self):
        return self.S.shape[0]


def deflation_basis(S, n_eigenpairs, *, tol=1e-8, max_restarts=1000, lobpcg_iter=100,
                    eigen_solver="auto", known=None, random_state=None, _exclude=None):
    """Top eigenpairs of S for deflation, with a bounded budget.

    Lanczos (ARPACK, at most `max_restarts` restarts) first. When clusters are well separated
    (small sigma), many eigenvalues of S crowd near 1 and Lanczos may not converge at all; then
    LOBPCG refines the best available block for `lobpcg_iter` iterations and the result is an
    approximate invariant subspace (its residuals are in the returned `Spectrum`). The kernel
    stays exact whatever the basis: deflated CG converges to the solution of the full system,
    and the top part of the column norms is then computed by solves (`ConsistencyKernel`).
    Small inputs (n <= 1500) use the dense eigendecomposition of `top_eigenpairs`.
    ``eigen_solver="shift-invert"`` instead runs Lanczos on (S - s I)^-1 (one sparse LU, see
    `top_eigenpairs`): pixel grids, where hundreds of eigenvalues crowd below 1, need it.

    `known` (n, m), optional: orthonormal eigenvectors of S for the eigenvalue 1 (one per
    connected component, see `component_eigenvectors`). They head the basis exactly and the
    solvers look for the next `n_eigenpairs` in their orthogonal complement: Lanczos cannot
    resolve a multiple eigenvalue, so without them a graph in several components leaves some
    of its eigenvalue-1 directions out of the basis and CG pays for them with condition number
    (1 + alpha) / (1 - alpha).
    """
    import scipy.sparse.linalg as spla

    check_option(eigen_solver, "eigen_solver", {"auto", "lanczos", "shift-invert"})
    n = S.shape[0]
    if known is not None and known.shape[1] > 0:
        Z = np.asarray(known, dtype=np.float64)
        k = min(n_eigenpairs, n - Z.shape[1] - 1)
        if k < 1:  # the components alone span (nearly) everything
            return Spectrum(np.ones(Z.shape[1]), Z, np.linalg.norm(S @ Z - Z, axis=0), "components")
        rest = deflation_basis(S, k, tol=tol, max_restarts=max_restarts, lobpcg_iter=lobpcg_iter,
                               eigen_solver=eigen_solver, random_state=random_state,
                               _exclude=Z)
        vecs = np.hstack([Z, rest.vectors])
        vals = np.concatenate([np.ones(Z.shape[1]), rest.values])
        res = np.concatenate([np.linalg.norm(S @ Z - Z, axis=0), rest.residuals])
        return Spectrum(vals, vecs, res, rest.method)
    if n <= AUTO_DENSE_MAX_NODES or eigen_solver == "shift-invert":
        method = "auto" if n <= AUTO_DENSE_MAX_NODES else "shift-invert"
        return top_eigenpairs(S, n_eigenpairs, tol=tol, method=method, random_state=random_state,
                              deflate=_exclude, upper=1.0 if method == "shift-invert" else None)
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1.0, 1.0, size=n)
    op = sp.csr_matrix(S) + sp.identity(n, format="csr")  # spectrum in [0, 2], top = largest
    if _exclude is not None:  # move the known eigenvalue-1 directions (2 in op) to 0
        csr, Zx = op, _exclude
        op = spla.LinearOperator((n, n), dtype=np.float64,
                                 matvec=lambda x: csr @ x - 2.0 * (Zx @ (Zx.T @ x)),
                                 matmat=lambda X: csr @ X - 2.0 * (Zx @ (Zx.T @ X)))
        v0 = v0 - Zx @ (Zx.T @ v0)
    try:
        vals, vecs = arpack_eigsh(op, k=n_eigenpairs, which="LA", tol=tol, v0=v0,
                                  maxiter=max_restarts)
        method = "eigsh"
    except spla.ArpackNoConvergence as err:
        X = rng.standard_normal((n, n_eigenpairs))
        if err.eigenvectors is not None and err.eigenvectors.shape[1]:
            X[:, : err.eigenvectors.shape[1]] = err.eigenvectors
        import warnings as _w

        with _w.catch_warnings():
            _w.simplefilter("ignore")  # "not reaching the requested tolerance": expected here
            vals, vecs = spla.lobpcg(op, X, largest=True, tol=tol, maxiter=lobpcg_iter)
        method = "lobpcg"
    order = np.argsort(vals)[::-1]
    vals = vals[order] - 1.0
    vecs = np.ascontiguousarray(vecs[:, order])
    if _exclude is not None:
        vecs = vecs - _exclude @ (_exclude.T @ vecs)
    vecs, _ = np.linalg.qr(vecs)  # orthonormal to rounding (LOBPCG's are B-orthonormal only)
    res = np.linalg.norm(S @ vecs - vecs * vals, axis=0)
    return Spectrum(vals, vecs, res, method)


def component_eigenvectors(W, d=None):
    """Orthonormal eigenvectors of S = D^-1/2 W D^-1/2 for the eigenvalue 1, or None.

    S sqrt(d) = sqrt(d), so on each connected component with positive degree the vector
    sqrt(d) restricted to it (normalised) is an eigenvector for 1; there is one per such
    component. None when W has at most one such component.

    Examples
    --------
    >>> import numpy as np
    >>> W = np.kron(np.eye(2), np.ones((3, 3)) - np.eye(3))      # two triangles
    >>> component_eigenvectors(W).shape
    (6, 2)
    """
    from scipy.sparse.csgraph import connected_components

    W = sp.csr_matrix(W, dtype=np.float64)
    if d is None:
        d = np.asarray(W.sum(axis=1)).ravel()
    n_comp, comp = connected_components(W, directed=False)
    if n_comp < 2:
        return None
    pos = d > 0
    labels, inverse = np.unique(comp[pos], return_inverse=True)
    if labels.size < 2:
        return None
    Z = np.zeros((W.shape[0], labels.size))
    Z[np.flatnonzero(pos), inverse] = np.sqrt(d[pos])
    return Z / np.linalg.norm(Z, axis=0)


#: Above this many components the eigenvalue-1 eigenvectors are not put in the basis (n x m).
MAX_KNOWN_COMPONENTS = 256


def _build_basis(W, n_eigenpairs, method, eigen_tol, random_state, eigen_solver="auto"):
    S, d = normalized_adjacency(W)
    n = S.shape[0]
    if method == "auto":
        method = "dense" if n <= AUTO_DENSE_MAX_NODES else "cg"
    if method == "dense":
        if n > DENSE_KERNEL_MAX_NODES:
            raise ValueError(
                f"method='dense' forms n x n arrays; n = {n} is above the "
                f"{DENSE_KERNEL_MAX_NODES} limit. Use method='cg' (matrix-free)."
            )
        spec = top_eigenpairs(S, n, method="dense")
        return _Basis(S, d, spec, True, S @ spec.vectors, "dense")
    if n_eigenpairs == "auto":
        k = min(32, n - 2)
    else:
        k = check_int(n_eigenpairs, "n_eigenpairs", low=1, high=max(1, n - 2))
    if k < 1:
        raise ValueError(f"method={method!r} needs at least 3 nodes; got n = {n}. Use "
                         "method='dense'.")
    known = component_eigenvectors(W, d)
    if known is not None and known.shape[1] > MAX_KNOWN_COMPONENTS:
        known = None
    spec = deflation_basis(S, k, tol=eigen_tol, eigen_solver=eigen_solver, known=known,
                           random_state=random_state)
    return _Basis(S, d, spec, False, S @ spec.vectors, method)


class ConsistencyKernel:
    """The consistency kernel U = beta (I - alpha S)^-1 of an affinity matrix, matrix-free.

    Parameters
    ----------
    W : sparse or dense symmetric non-negative matrix (n, n)
        Affinities with w_ii = 0 (the diagonal is ignored). Isolated vertices (d_i = 0) get a zero
        row and column in S, so U e_i = beta e_i: they are their own, maximally isolated, points.
    alpha : float in (0, 1)
    method : {"auto", "dense", "cg", "lu"}, default "auto"
        ``dense``: full eigendecomposition of S (n x n; refused above
        `DENSE_KERNEL_MAX_NODES`); U is applied in closed form ``Phi f(Lambda) Phi^T``.
        ``cg``: top-`n_eigenpairs` of S by Lanczos, U applied by deflated CG. ``lu``: the same
        eigenpairs (for the column-norm estimate), U applied by one sparse LU factorisation of
        I - alpha S per alpha (residual checked, one refinement step when above `rtol`): fast
        on graphs with small separators such as pixel grids (a 481 x 321 image factorises in
        about a second), hopeless on kNN graphs of high-dimensional data, whose LU fills in.
        ``auto``: dense for n <= 1500, cg above.
    n_eigenpairs : int or "auto", default "auto"
        Size K of the deflation basis for ``cg`` (auto: min(32, n - 2)).
    rtol : float, default 1e-10
        CG stopping rule per column b_j: ``||b_j - (I - alpha S) x_j|| <= rtol ||b_j||``.
    maxiter : int, optional
        CG iteration limit (see `deflated_cg`).
    eigen_tol : float, default 1e-8
        Lanczos tolerance for the deflation basis. The basis only speeds CG up: the solution
        meets `rtol` whatever its accuracy.
    eigen_solver : {"auto", "lanczos", "shift-invert"}, default "auto"
        How the deflation basis is computed for ``cg`` (`deflation_basis`): ``auto`` and
        ``lanczos`` run ARPACK on S (LOBPCG refines it when ARPACK stalls); ``shift-invert``
        factorises S - s I once (pixel grids).
    random_state : int, Generator or None
        Seeds the Lanczos start vector and, unless given there, the probes of `column_norms`.

    Attributes
    ----------
    spectrum : Spectrum
        The top eigenpairs of S in use (all n of them for ``dense``).
    method : str
        ``"dense"`` or ``"cg"`` after resolving ``auto``.
    n_solves_, n_matvec_columns_ : int
        Work counters: CG right-hand sides solved and sparse column products done.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> W = gc.affinity(gc.knn_graph(X, 8), sigma=0.5)
    >>> K = gc.ConsistencyKernel(W, 0.99, method="cg", random_state=0)
    >>> Ue = K.apply(np.eye(300)[:, :2])            # two columns of U, by deflated CG
    >>> dense = gc.ConsistencyKernel(W, 0.99, method="dense")
    >>> bool(np.allclose(Ue, dense.apply(np.eye(300)[:, :2]), atol=1e-8))
    True
    >>> K2 = K.with_alpha(0.999)                      # another alpha, same spectrum
    >>> K2.spectrum is K.spectrum
    True
    """

    def __init__(
        self,
        W,
        alpha,
        *,
        method="auto",
        n_eigenpairs="auto",
        rtol=1e-10,
        maxiter=None,
        eigen_tol=1e-8,
        eigen_solver="auto",
        random_state=None,
        _basis=None,
    ):
        self.alpha = check_real(alpha, "alpha", low=0, high=1, low_inclusive=False, high_inclusive=False)
        self.beta = 1.0 - self.alpha
        self.rtol = check_real(rtol, "rtol", low=0, low_inclusive=False)
        self.maxiter = maxiter
        self.random_state = random_state
        if _basis is None:
            check_option(method, "method", {"auto", "dense", "cg", "lu"})
            _basis = _build_basis(W, n_eigenpairs, method, eigen_tol, random_state, eigen_solver)
        self._basis = _basis
        lam = self._basis.spectrum.values
        self._f = self.beta / (1.0 - self.alpha * lam)  # U's eigenvalues on the basis
        self._A_basis = self._basis.spectrum.vectors - self.alpha * self._basis.S_vectors
        # eigenvectors accurate enough to span an invariant subspace: deflate at (re)starts
        # only ("init"); otherwise full Def-CG (see deflated_cg)
        res = self._basis.spectrum.residuals
        self._deflation = "init" if (res.size == 0 or float(res.max()) <= 1e-6) else "full"
        self.n_solves_ = 0
        self.n_matvec_columns_ = 0
        self.last_cg_ = None

    # ------------------------------------------------------------------ properties
    @property
    def n(self):
        return self._basis.n

    @property
    def method(self):
        return self._basis.solver

    @property
    def spectrum(self):
        return self._basis.spectrum

    @property
    def S(self):
        return self._basis.S

    @property
    def degrees(self):
        return self._basis.degrees

    def with_alpha(self, alpha):
        """A kernel for another alpha sharing S and its spectrum (no new eigensolve)."""
        return ConsistencyKernel(
            None,
            alpha,
            rtol=self.rtol,
            maxiter=self.maxiter,
            random_state=self.random_state,
            _basis=self._basis,
        )

    # ------------------------------------------------------------------ operator
    def _matvec(self, P):
        self.n_matvec_columns_ += 1 if P.ndim == 1 else P.shape[1]
        return shifted_product(self._basis.S, P, self.alpha)

    def apply(self, B, *, rtol=None):
        """Return ``U @ B`` for an (n,) or (n, b) array.

        ``dense``: exact to rounding. ``cg``: deflated CG (Galerkin start on the eigenvector
        basis; deflation at (re)starts only when the eigenpairs' residuals are <= 1e-6, full
        Def-CG otherwise); each column x_j of ``(I - alpha S)^-1 B`` meets
        ``||b_j - (I - alpha S) x_j|| <= rtol ||b_j||`` (a `CGConvergenceWarning` reports the
        achieved residual otherwise); the result is beta X.
        """
        B = np.asarray(B, dtype=np.float64)
        if B.shape[0] != self.n:
            raise ValueError(f"B must have {self.n} rows (one per node); got shape {B.shape}.")
        Phi = self._basis.spectrum.vectors
        if self._basis.full:
            coef = Phi.T @ B
            coef = coef * (self._f if B.ndim == 1 else self._f[:, None])
            return Phi @ coef
        if self._basis.solver == "lu":
            return self.beta * self._lu_solve(B, self.rtol if rtol is None else rtol)
        X, info = deflated_cg(
            self._matvec,
            B,
            basis=Phi,
            A_basis=self._A_basis,
            rtol=self.rtol if rtol is None else rtol,
            maxiter=self.maxiter,
            deflation=self._deflation,
            name="ConsistencyKernel.apply",
        )
        self.n_solves_ += 1 if B.ndim == 1 else B.shape[1]
        self.last_cg_ = info
        return self.beta * X

    def _lu_solve(self, B, rtol):
        """(I - alpha S)^-1 B by one sparse LU (one per alpha, on the basis), refined once if needed."""
        if self._basis.lu is None or self._basis.lu[0] != self.alpha:
            n = self.n
            A = (sp.identity(n, format="csc") - self.alpha * sp.csc_matrix(self._basis.S)).tocsc()
            # I - alpha S is positive definite; one factorisation kept (the last alpha)
            self._basis.lu = (self.alpha, symmetric_definite_lu(A))
        lu = self._basis.lu[1]
        one_d = B.ndim == 1
        B2 = B[:, None] if one_d else B
        X = lu.solve(np.asfortranarray(B2))
        R = B2 - self._matvec(X)
        bnorm = np.linalg.norm(B2, axis=0)
        scale = np.where(bnorm > 0, bnorm, 1.0)
        if np.any(np.linalg.norm(R, axis=0) > rtol * scale):  # one step of iterative refinement
            X += lu.solve(np.asfortranarray(R))
            R = B2 - self._matvec(X)
        rel = np.linalg.norm(R, axis=0) / scale
        self.last_cg_ = CGInfo(0, rel, rel <= rtol, float(rtol), 0.0)
        self.n_solves_ += B2.shape[1]
        return X[:, 0] if one_d else X

    # ------------------------------------------------------------------ column norms
    def column_norms(self, method="auto", *, n_probes=32, block_size=128, random_state=None,
                     probe_order=None):
        """Column norms nu_j = ||U e_j||, exact or estimated.

        Parameters
        ----------
        method : {"auto", "exact", "estimate"}
            ``exact``: closed form from the full spectrum (``dense`` kernels) or one CG solve
            per column in blocks of `block_size` (``cg`` kernels; cost n solves).
            ``estimate`` (``cg`` only): top-K part exact plus the stochastic remainder with
            `n_probes` Rademacher probes (module notes). ``auto``: exact for dense kernels,
            estimate otherwise.
        random_state : int, Generator or None
            Probe seed (default: the kernel's). The same seed gives the same probes for every
            alpha, so a search compares alphas with common random numbers.
        probe_order : int array (n,), optional
            A permutation of the rows: the k-th row of the drawn probe block goes to row
            ``probe_order[k]``. Give an order that depends on the data, not on how its rows are
            listed (e.g. a lexicographic sort of the points), and each point gets the same probe entries in any row
            order: the estimate, and what is decided from it, is then permutation-equivariant.
            Default: row order.

        Returns
        -------
        ColumnNorms
        """
        return self.column_norms_for([self.alpha], method, n_probes=n_probes,
                                     block_size=block_size, random_state=random_state,
                                     probe_order=probe_order)[0]

    def column_norms_for(self, alphas, method="auto", *, n_probes=32, block_size=128,
                         random_state=None, probe_order=None):
        """`column_norms` for several alphas at once, sharing S, its spectrum and the probes.

        With accurate eigenpairs (the usual case) the probe solves of every alpha come from one
        multi-shift CG run (`shifted_cg`): I - alpha_i S = (alpha_i / alpha_0)(A_0 + s_i I)
        with A_0 = I - alpha_0 S for the largest alpha_0 and s_i = alpha_0 / alpha_i - 1, so the
        hardest system's Krylov sequence serves them all. Otherwise each alpha is solved on its
        own. Results are those of `column_norms` on ``with_alpha(alpha_i)``, to the CG tolerance.

        Returns
        -------
        list of ColumnNorms, in the order of `alphas`
        """
        check_option(method, "method", {"auto", "exact", "estimate"})
        alphas = [check_real(a, "alphas entries", low=0, high=1, low_inclusive=False,
                             high_inclusive=False) for a in np.atleast_1d(alphas)]
        kernels = [self if a == self.alpha else self.with_alpha(a) for a in alphas]
        if method == "auto":
            method = "exact" if self._basis.full else "estimate"
        Phi = self._basis.spectrum.vectors
        if self._basis.full:
            if method == "estimate":
                raise ValueError("method='estimate' needs a cg kernel; this one is dense (exact).")
            return [ColumnNorms(np.sqrt((Phi * Phi) @ (k._f**2)), "dense", np.zeros(self.n))
                    for k in kernels]
        if method == "exact":
            return [k._exact_norms(check_int(block_size, "block_size", low=1)) for k in kernels]
        s = check_int(n_probes, "n_probes", low=2)
        rng = check_random_state(self.random_state if random_state is None else random_state)
        Z = rng.integers(0, 2, size=(self.n, s)).astype(np.float64) * 2.0 - 1.0
        if probe_order is not None:
            order = np.asarray(probe_order)
            if order.shape != (self.n,) or not np.array_equal(np.sort(order), np.arange(self.n)):
                raise ValueError(f"probe_order must be a permutation of 0..{self.n - 1}.")
            Zc, Z = Z, np.empty_like(Z)
            Z[order] = Zc
        Z -= Phi @ (Phi.T @ Z)
        if self._deflation == "init" and len(kernels) > 1 and self._basis.solver == "cg":
            # Z is orthogonal to the (invariant) basis: plain multi-shift CG from zero
            a0 = max(alphas)
            S = self._basis.S
            shifts = [a0 / a - 1.0 for a in alphas]
            Xs, infos = shifted_cg(lambda P: shifted_product(S, P, a0), Z, shifts, rtol=self.rtol,
                                   maxiter=self.maxiter, name="ConsistencyKernel.column_norms_for")
            self.n_matvec_columns_ += infos[0].n_iter * s
            Ys = [k.beta * (a0 / k.alpha) * X for k, X in zip(kernels, Xs)]
        else:
            Ys, infos = [], []
            for k in kernels:
                Ys.append(k.apply(Z))
                infos.append(k.last_cg_)
        return [k._estimated_norms(Y, info) for k, Y, info in zip(kernels, Ys, infos)]

    def _exact_norms(self, block_size):
        n = self.n
        nu2 = np.empty(n)
        worst = None
        for j0 in range(0, n, block_size):
            j1 = min(n, j0 + block_size)
            E = np.zeros((n, j1 - j0))
            E[np.arange(j0, j1), np.arange(j1 - j0)] = 1.0
            Y = self.apply(E)
            nu2[j0:j1] = np.einsum("ij,ij->j", Y, Y)
            if worst is None or self.last_cg_.max_residual > worst.max_residual:
                worst = self.last_cg_
        return ColumnNorms(np.sqrt(nu2), "solve", np.zeros(n), cg=worst)

    def _estimated_norms(self, Y, cg_info):
        """nu from Y = U P Z (probes projected off the basis): top-K part exact + mean of Y^2."""
        Phi = self._basis.spectrum.vectors
        s = Y.shape[1]
        # nu_i^2 = ||Phi^T U e_i||^2 + [U P U]_ii, U P U = (U P)(U P)^T: the second term is the
        # mean of (U P z)_i^2 over the probes, for any orthonormal Phi.
        Y2 = Y * Y
        rem = Y2.mean(axis=1)
        se = Y2.std(axis=1, ddof=1) / np.sqrt(s)
        if self._deflation == "init":  # accurate eigenpairs: U Phi = Phi f(Lambda)
            top = (Phi * Phi) @ (self._f**2)
        else:  # approximate basis: the top part by K solves, exactly
            UPhi = self.apply(Phi)
            top = np.einsum("ij,ij->i", UPhi, UPhi)
        nu2 = top + rem
        lam_K = float(self._basis.spectrum.values[-1])
        bound = self.beta**2 / (1.0 - self.alpha * lam_K) ** 2
        return ColumnNorms(
            np.sqrt(nu2),
            "estimate",
            0.5 * se / nu2,
            top_fraction=top / nu2,
            remainder_bound=float(bound),
            cg=cg_info,
        )
