"""Normalised adjacency S = D^-1/2 W D^-1/2 and its truncated spectrum (top eigenpairs).

This is the one implementation of "top eigenpairs of a normalised graph operator" that both
engines use: consistency clustering deflates its CG solves with it, and AHK / NJW take their
(generalised) eigenvectors from it (Laplacian eigenvalue lambda = 1 - mu for eigenvalue mu of S,
see `graphclust.kernels.laplacian_eigenpairs`).

Solver choice (measured with ``scripts/bench_eigensolvers.py``, numbers in ``docs/spectral.md``
and ``docs/scaling.md``): ARPACK's implicitly restarted Lanczos on the largest algebraic
eigenvalues (``eigsh``) is the fastest on well-connected kNN graphs (250 000 points: 0.4 k
matvecs, 15 s for 10 pairs). On a nearly disconnected graph (components joined by a few bridges:
hundreds of eigenvalues within 1e-3 of 1) Lanczos needs thousands of matvecs, and LOBPCG with an
algebraic multigrid preconditioner (``lobpcg-amg``, pyamg, `graphclust.kernels._amg`) is
faster. ``auto`` therefore runs eigsh above `AMG_MIN_NODES` nodes and hands over to LOBPCG-AMG
(pyamg installed) when ARPACK has converged no pair after `AUTO_PROBE_RESTARTS` restarts, or
not all of them after `AUTO_EIGSH_RESTARTS` (then from the pairs it did converge); without
pyamg it continues with unbounded eigsh and a hint to install pyamg.
Shift-invert Lanczos converges in fewer iterations but needs a sparse LU factorisation of
S - sigma I, whose fill-in grows fast with the intrinsic dimension of the data (kNN graphs of
50-dimensional data); it is what pixel grids need. Unpreconditioned LOBPCG was 10-100x slower
than Lanczos for m >= 100 pairs; it is kept as the completion when ARPACK does not converge
without pyamg, and as an explicit ``method="lobpcg"``.

Degenerate top eigenvalues (a disconnected graph has eigenvalue 1 once per component) are a trap
for single-vector Lanczos: it may return only one vector of a multiple eigenvalue and silently
shift the rest of the spectrum by one. Callers that know such eigenvectors in closed form pass them
as ``deflate``; they are then moved below the spectrum exactly and never returned.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numba import njit, prange

from .._validation import check_int, check_option, check_random_state, check_real
from ..threads import limit_threads, one_blas_thread
from ._amg import amg_available, lobpcg_amg, require_pyamg

__all__ = [
    "arpack_eigsh",
    "DENSE_SPECTRUM_MAX_NODES",
    "Spectrum",
    "SpectrumConvergenceWarning",
    "SpectrumPerformanceWarning",
    "diagonal_scaling",
    "normalized_adjacency",
    "top_eigenpairs",
]


class SpectrumConvergenceWarning(UserWarning):
    """An eigensolver stopped before reaching the requested tolerance."""


def normalized_adjacency(W):
    """Return ``(S, d)`` with S = D^-1/2 W D^-1/2 (CSR) and degrees d = W 1.

    Isolated vertices (d_i = 0) get a zero row and column in S (their D^-1/2 entry is taken as 0);
    callers decide how to treat them and must say so.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import normalized_adjacency
    >>> S, d = normalized_adjacency(np.array([[0, 1.0], [1.0, 0]]))
    >>> S.toarray().tolist(), d.tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [1.0, 1.0])
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    d = np.asarray(W.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(d)
    pos = d > 0
    inv_sqrt[pos] = 1.0 / np.sqrt(d[pos])
    return diagonal_scaling(W, inv_sqrt), d


def diagonal_scaling(W, s, overwrite=False):
    """``diag(s) W diag(s)`` for a sparse W, as the entries w_ij (s_i s_j), zeros dropped (CSR).

    Exactly symmetric when W is: s_i s_j and s_j s_i are the same floating-point number,
    where scipy's two sparse products round (s_i w_ij) s_j and (s_j w_ji) s_i apart. One pass
    over the nonzeros instead of two sparse matrix products. With ``overwrite=True`` and a
    float64 CSR W, W itself is scaled and returned (a caller's own copy: no second matrix of
    the edges' size).

    Examples
    --------
    >>> import numpy as np
    >>> W = np.array([[0.0, 2.0], [2.0, 1.0]])
    >>> diagonal_scaling(W, np.array([0.5, 3.0])).toarray().tolist()
    [[0.0, 3.0], [3.0, 9.0]]
    """
    s = np.ascontiguousarray(s, dtype=np.float64)
    if overwrite and sp.isspmatrix_csr(W) and W.dtype == np.float64:
        _scaled_entries(W.indptr, W.indices, W.data, s, W.data)
        W.eliminate_zeros()
        return W
    W = sp.csr_matrix(W, dtype=np.float64)
    out = sp.csr_matrix((_scaled_entries(W.indptr, W.indices, W.data, s,
                                         np.empty(W.data.size)), W.indices.copy(),
                         W.indptr.copy()), shape=W.shape)
    out.eliminate_zeros()
    return out


@njit(cache=True, parallel=True)
def _scaled_entries(indptr, indices, data, s, out):
    # w_ij (s_i s_j) into out (which may be data), rows over the threads
    for i in prange(indptr.size - 1):
        for p in range(indptr[i], indptr[i + 1]):
            out[p] = data[p] * (s[i] * s[indices[p]])
    return out


@dataclass
class Spectrum:
    """Top eigenpairs of a symmetric operator, in descending order of eigenvalue.

    Attributes
    ----------
    values : array (k,)
        Eigenvalues mu_1 >= mu_2 >= ... >= mu_k.
    vectors : array (n, k)
        Orthonormal eigenvectors (columns).
    residuals : array (k,)
        ||S v - mu v|| for each pair, the achieved accuracy.
    method : str
        Which solver produced them ("dense", "eigsh", "lobpcg").
    """

    values: np.ndarray
    vectors: np.ndarray
    residuals: np.ndarray
    method: str

    @property
    def n_eigenpairs(self):
        return self.values.shape[0]


#: Below this size the full dense eigendecomposition is cheaper and exact.
DENSE_SPECTRUM_MAX_NODES = 1500

#: ``method="dense"`` forms an n x n array; it is refused above this size.
DENSE_HARD_LIMIT = 20_000

METHODS = ("auto", "dense", "eigsh", "lobpcg", "lobpcg-amg", "shift-invert")

#: ``auto`` bounds eigsh and falls back to LOBPCG-AMG only from this many nodes on.
AMG_MIN_NODES = 50_000

#: ARPACK restarts ``auto`` allows above `AMG_MIN_NODES` before switching to LOBPCG-AMG
#: (about 11 matvecs each for 10 pairs; a well-connected 250 000-point kNN graph needs ~40).
AUTO_EIGSH_RESTARTS = 100

#: ``auto`` hands over to LOBPCG-AMG when ARPACK has run this many restarts without converging
#: a single pair. ARPACK needed 3-4x the restarts of its first converged pair in all (9 pairs:
#: 54 after 19 on a well-connected 250 000-node kNN graph, 111 after 28 at 10^6 nodes), and
#: LOBPCG-AMG cost about as much as 75-85 restarts there; so no pair after 25 restarts
#: predicts LOBPCG-AMG faster. Nearly disconnected graphs had none after 60 (docs/scaling.md).
AUTO_PROBE_RESTARTS = 25

#: What ``tol="auto"`` asks of each solver: Lanczos reaches 1e-8 for little more than 1e-6,
#: while preconditioned LOBPCG pays for every digit (1e-8 took 1.8x the time of 1e-6 on the
#: nearly disconnected 10^6 graph, docs/scaling.md) that k-means on the embedding does not use.
AUTO_TOL = 1e-8
AUTO_TOL_LOBPCG_AMG = 1e-6


class SpectrumPerformanceWarning(UserWarning):
    """The eigensolve is slow and an optional dependency would make it faster."""


def _residuals(S, values, vectors, restriction=None):
    """||S v - mu v|| per pair; restricted to span(Z)^perp (``Q S v - mu v``) when Z is not
    invariant under S (for an invariant Z and v orthogonal to it the two are equal)."""
    SV = S @ vectors
    if restriction is not None and restriction.R is not None:
        Z = restriction.Z
        SV = SV - Z @ (Z.T @ SV)
    return np.linalg.norm(SV - vectors * values, axis=0)


@dataclass
class _Restriction:
    """S restricted to the complement of span(Z), as one symmetric operator on R^n.

    With Q = I - Z Z^T, G = Z^T S Z and R = S Z - Z G (the part of S Z outside span(Z)), the
    operator Q S Q - (g + 1) Z Z^T equals S - Z C Z^T - Z R^T - R Z^T with C = G + (g + 1) I: the
    eigenpairs of S restricted to span(Z)^perp, and span(Z) moved to -g - 1, below the spectrum
    (g the Gershgorin bound max_i sum_j |s_ij|). When Z holds eigenvectors of S (connected
    components' trivial vectors), R = 0 and C is diagonal: the classical deflation. Otherwise
    (linear constraints, e.g. `graphclust.kernels.resolvent_eigenpairs`' degree vectors) R is
    kept; sparse when Z is and G diagonal (one constraint per connected component), else dense.

    Attributes
    ----------
    Z : array or csc_matrix (n, c)
    coef : array (c,) (C diagonal) or (c, c)
    R : None, array or sparse (n, c)
    """

    Z: object
    coef: np.ndarray
    R: object = None

    def low_rank(self):
        """(U, K) with the operator = S - U K U^T, dense (for Woodbury and the dense path)."""
        Z = self.Z.toarray() if sp.issparse(self.Z) else np.asarray(self.Z)
        C = np.diag(self.coef) if self.coef.ndim == 1 else self.coef
        if self.R is None:
            return Z, C
        c = Z.shape[1]
        if c > DENSE_RESTRICTION_MAX:
            raise ValueError(
                f"{c} constraint columns are above the {DENSE_RESTRICTION_MAX} this solver can "
                "hold densely: use method='eigsh' or 'lobpcg-amg'."
            )
        R = self.R.toarray() if sp.issparse(self.R) else self.R
        K = np.block([[C, np.eye(c)], [np.eye(c), np.zeros((c, c))]])
        return np.hstack([Z, R]), K

    def correction(self, x2):
        """(Z C Z^T + Z R^T + R Z^T) x2 for a block x2 (n, b)."""
        Z, C, R = self.Z, self.coef, self.R
        Ztx = Z.T @ x2
        inner = C[:, None] * Ztx if C.ndim == 1 else C @ Ztx
        if R is None:
            # one dense column (a component's stationary vector): the same products as the
            # rank-1 GEMM, which OpenBLAS runs 17 times slower (0.085 against 0.005 ms at
            # 18 222 rows, one thread)
            return Z * inner if isinstance(Z, np.ndarray) and Z.shape[1] == 1 else Z @ inner
        return Z @ (inner + R.T @ x2) + R @ Ztx


#: Z is invariant under S when every entry of S Z - Z diag(Z^T S Z) is below this times g.
INVARIANT_RTOL = 1e-10

#: Non-invariant deflation columns (constraints) with a full Gram matrix G are held dense: at
#: most this many.
DENSE_RESTRICTION_MAX = 1000


def _deflation(S, Z):
    """The `_Restriction` of S to span(Z)^perp, for Z with orthonormal columns."""
    Z = sp.csc_matrix(Z, dtype=np.float64) if sp.issparse(Z) else np.asarray(Z, dtype=np.float64)
    SZ = S @ Z
    absS = abs(S) if sp.issparse(S) else np.abs(S)
    g = float(np.asarray(absS.sum(axis=1)).max())
    # the diagonal of Z^T S Z first: Z may have thousands of sparse columns (one per
    # component), whose full c x c Gram matrix is never needed
    if sp.issparse(SZ):
        z = np.asarray(SZ.multiply(Z).sum(axis=0)).ravel()
        R = (SZ - Z @ sp.diags(z)).tocsc()
    else:
        z = np.einsum("ij,ij->j", SZ, Z)
        R = SZ - Z * z
    scale = INVARIANT_RTOL * max(g, 1.0)
    if (float(abs(R).max()) if R.shape[1] else 0.0) <= scale:
        return _Restriction(Z, z + g + 1.0)
    if sp.issparse(Z):
        off = sp.csr_matrix(Z.T @ R)  # = G - diag(z): zero when the columns' supports do
        if off.nnz == 0 or float(abs(off).max()) <= scale:  # not interact through S
            R.eliminate_zeros()
            return _Restriction(Z, z + g + 1.0, R)
    c = Z.shape[1]
    if c > DENSE_RESTRICTION_MAX:
        raise ValueError(
            f"deflate has {c} columns that are not eigenvectors of S and interact through it; "
            f"at most {DENSE_RESTRICTION_MAX} such columns are supported (each is held as a "
            "dense n-vector)."
        )
    Z = Z.toarray() if sp.issparse(Z) else Z
    SZ = np.asarray(SZ.toarray() if sp.issparse(SZ) else SZ)
    G = Z.T @ SZ
    G = (G + G.T) / 2
    return _Restriction(Z, G + (g + 1.0) * np.eye(c), SZ - Z @ G)


def _apply_deflated(S, restriction):
    def matvec(x):
        x2 = x.reshape(x.shape[0], -1)
        out = S @ x2 - restriction.correction(x2)
        return np.asarray(out).reshape(x.shape) if x.ndim == 1 else np.asarray(out)

    n = S.shape[0]
    return spla.LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np.float64)


def arpack_eigsh(op, **kwargs):
    """`scipy.sparse.linalg.eigsh` (ARPACK) on one BLAS thread; the arguments are eigsh's.

    Between two products ARPACK does vector work (level-1 and -2 BLAS on its n x ncv basis)
    too small per call for a thread pool: a second OpenBLAS thread, woken for each call, made
    the same solves 2.5-3 times slower on two cores (20 000 nodes, one pair: 0.17 against
    0.42-0.59 s; 100 000 nodes, ten pairs: 79-87 against 258 s; docs/spectral.md), and one
    thread gives the same result in every run.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> A = sp.diags([np.arange(1.0, 51.0)], [0], format="csr")
    >>> arpack_eigsh(A, k=2, which="LA", v0=np.ones(50))[0].round(6).tolist()
    [49.0, 50.0]
    """
    with one_blas_thread():
        return spla.eigsh(op, **kwargs)




def _check_square_matrix(S):
    """`top_eigenpairs` takes a scipy sparse matrix or a 2-D numpy array, square and real."""
    if not (sp.issparse(S) or isinstance(S, np.ndarray)):
        raise TypeError(
            "S must be a symmetric matrix: a scipy.sparse matrix or a 2-D numpy array of shape "
            f"(n, n); got {type(S).__name__} (convert it with np.asarray or "
            "scipy.sparse.csr_matrix)."
        )
    if S.ndim != 2 or S.shape[0] != S.shape[1] or S.shape[0] == 0:
        raise ValueError(f"S must be a square (n, n) matrix with n >= 1; got shape {S.shape}.")
    if not (np.issubdtype(S.dtype, np.number) or S.dtype == bool) or np.iscomplexobj(S):
        kind = "complex" if np.iscomplexobj(S) else "non-numeric"
        raise TypeError(f"S must hold real numbers; got {kind} dtype {S.dtype}.")


def top_eigenpairs(
    S,
    n_eigenpairs,
    *,
    tol="auto",
    method="auto",
    random_state=None,
    maxiter=None,
    deflate=None,
    upper=None,
    start=None,
):
    """Largest `n_eigenpairs` eigenpairs of the symmetric sparse matrix `S`.

    Parameters
    ----------
    S : sparse or dense symmetric matrix (n, n)
    n_eigenpairs : int
        1 <= n_eigenpairs <= n - c, with c the number of deflated vectors (0 by default).
    tol : float or "auto", default "auto"
        Relative accuracy requested from ARPACK / LOBPCG; achieved residuals are in the result.
        ``"auto"``: `AUTO_TOL` (1e-8) for every solver but LOBPCG-AMG, which gets
        `AUTO_TOL_LOBPCG_AMG` (1e-6; also when ``method="auto"`` hands over to it), as
        scikit-learn's ``eigen_tol="auto"`` loosens its LOBPCG / AMG solvers.
    method : {"auto", "dense", "eigsh", "lobpcg", "lobpcg-amg", "shift-invert"}
        ``dense`` (numpy eigh, only for n <= 20 000 and refused above), ``eigsh`` (Lanczos, ARPACK,
        largest algebraic), ``lobpcg`` (scipy LOBPCG, unpreconditioned; slower, see the module
        notes), ``lobpcg-amg`` (LOBPCG preconditioned by a smoothed-aggregation multigrid V-cycle
        on `upper` I - S; needs the optional pyamg, ``pip install graphclust[amg]``; fastest on
        nearly disconnected graphs, whose top eigenvalues crowd below 1), ``shift-invert`` (Lanczos on (S - s I)^-1 through one sparse LU factorisation,
        s just above `upper`: the top eigenvalues become well separated, which is what pixel
        grids need, where hundreds of eigenvalues crowd below 1; the factorisation's fill-in
        makes it slower than eigsh on kNN graphs of high-dimensional data). ``auto``: dense for
        n <= `DENSE_SPECTRUM_MAX_NODES` or when n_eigenpairs >= n / 2, else eigsh; from
        `AMG_MIN_NODES` (50 000) nodes on, eigsh until it has converged no pair after
        `AUTO_PROBE_RESTARTS` restarts or not all after `AUTO_EIGSH_RESTARTS` (a tiny spectral
        gap), then LOBPCG-AMG started from the pairs ARPACK converged if pyamg is installed,
        else eigsh without the bound and a
        `SpectrumPerformanceWarning` saying to install pyamg. The result's ``method`` says which
        solver finished.
    random_state : int, Generator or None
        Seeds the Lanczos start vector so results are reproducible.
    maxiter : int or None
        ARPACK's restart limit (default 10 n).
    deflate : array or sparse matrix (n, c), optional
        Orthonormal columns Z. The result holds the top `n_eigenpairs` eigenpairs of S
        restricted to the orthogonal complement of span(Z), i.e. of Q S Q with Q = I - Z Z^T:
        every returned vector is orthogonal to Z. Usually known eigenvectors of `S` (one per
        connected component): each is then moved to -g - 1 (g = max absolute row sum of S, a
        bound on the spectrum) through the operator S - Z diag(.) Z^T, so no solver ever
        returns them, even when they form a multiple eigenvalue. Columns that are not
        eigenvectors (linear constraints, e.g. `resolvent_eigenpairs`' degree vector; at most
        1 000, held dense) are handled by the operator Q S Q - (g + 1) Z Z^T, which equals the
        former when they are.
    upper : float or None
        For ``shift-invert`` and ``lobpcg-amg``: an upper bound of the spectrum (1 for a
        normalised adjacency). Shift-invert shifts to upper + 1e-6 max(1, |upper|); LOBPCG-AMG
        works on upper I - S. None uses the Gershgorin bound, which is valid but may sit far
        above the top eigenvalues.
    start : array (n, j), optional
        Initial vectors (e.g. the previous solve's eigenvectors) for ``lobpcg`` and
        ``lobpcg-amg``; the first column is also eigsh's start vector. Ignored by ``dense``.

    Returns
    -------
    Spectrum

    Notes
    -----
    Contract: the dense path is exact to rounding. For eigsh and lobpcg, residuals
    ||S v - mu v|| are computed after the solve; if the largest exceeds max(1e3 tol, 1e-6) a
    `SpectrumConvergenceWarning` reports it against `tol`. If ARPACK does not converge within
    `maxiter`, the pairs it did converge seed a LOBPCG completion (reported as method "lobpcg")
    and the residual check above still applies. ``lobpcg-amg`` stops when every residual of
    upper I - S is below `tol` (absolute) or after `maxiter` (default 500) iterations. Results
    are never NaN.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from graphclust.kernels import top_eigenpairs
    >>> S = sp.diags([np.linspace(-1, 1, 50)], [0])
    >>> spec = top_eigenpairs(S, 3, method="eigsh", random_state=0)
    >>> np.round(spec.values, 6).tolist()
    [1.0, 0.959184, 0.918367]
    """
    _check_square_matrix(S)
    n = S.shape[0]
    check_option(method, "method", set(METHODS))
    n_defl = 0 if deflate is None else deflate.shape[1]
    if deflate is not None and deflate.shape[0] != n:
        raise ValueError(f"deflate must have {n} rows (one per node); got shape {deflate.shape}.")
    k = check_int(n_eigenpairs, "n_eigenpairs", low=1, high=n - n_defl)
    tol = check_real(tol, "tol", low=0.0, low_inclusive=False, allow=("auto",))
    if start is not None:
        start = np.asarray(start, dtype=np.float64)
        if start.ndim == 1:
            start = start[:, None]
        if start.ndim != 2 or start.shape[0] != n or not np.all(np.isfinite(start)):
            raise ValueError(
                f"start must be a finite (n, j) array with n = {n} rows; got shape {start.shape}."
            )
    bounded = False
    if method == "auto":
        method = "dense" if (n <= DENSE_SPECTRUM_MAX_NODES or k >= n // 2 or k >= n - 1) else "eigsh"
        bounded = method == "eigsh" and n >= AMG_MIN_NODES and maxiter is None
    elif method == "lobpcg-amg" and not amg_available():
        require_pyamg()  # raises the ImportError that says how to install pyamg
    requested_tol, tol = tol, _solver_tol(tol, method)
    restriction = _deflation(S, deflate) if n_defl else None
    if n_defl:
        Z = restriction.Z
    if method == "dense":
        if n > DENSE_HARD_LIMIT:
            raise ValueError(
                f"method='dense' forms an n x n matrix; n = {n} is above the {DENSE_HARD_LIMIT} "
                "limit. Use method='eigsh'."
            )
        A = S.toarray() if sp.issparse(S) else np.array(S, dtype=np.float64)
        if n_defl:
            U, K = restriction.low_rank()
            A = A - U @ K @ U.T
        # on one BLAS thread: multithreaded OpenBLAS gave eigenvalues that differed between
        # runs of the same input by 5e-16, enough to flip a near-tie of the scan's choice
        # (UCI ionosphere: c = 10 in one run, 6 in the next; docs/reliability.md)
        with limit_threads(1):
            vals, vecs = np.linalg.eigh(A)
        vals, vecs = vals[::-1][:k], np.ascontiguousarray(vecs[:, ::-1][:, :k])
        return Spectrum(vals, vecs, _residuals(S, vals, vecs, restriction), "dense")
    rng = check_random_state(random_state)
    if n_defl:
        op = _apply_deflated(sp.csr_matrix(S) if sp.issparse(S) else S, restriction)
    else:
        op = sp.csr_matrix(S) if sp.issparse(S) else np.asarray(S, dtype=np.float64)
    if method == "eigsh":
        if k >= n - 1:
            raise ValueError(
                f"eigsh needs n_eigenpairs < n - 1 = {n - 1}; got {k}. Use method='dense'."
            )
        v0 = rng.uniform(-1.0, 1.0, size=n) if start is None else start.sum(axis=1)
        if n_defl:
            v0 = v0 - Z @ (Z.T @ v0)
        method_used = "eigsh"
        stalled = None  # ARPACK's converged pairs when it stopped short
        try:
            if bounded and amg_available():
                vals, vecs = _probed_eigsh(op, k, tol, v0, AUTO_PROBE_RESTARTS,
                                           AUTO_EIGSH_RESTARTS)
            else:
                vals, vecs = arpack_eigsh(op, k=k, which="LA", tol=tol, v0=v0,
                                          maxiter=AUTO_EIGSH_RESTARTS if bounded else maxiter)
        except (spla.ArpackNoConvergence, _NoProgress) as err:
            # the next solver runs after this block: the exception's traceback would keep
            # ARPACK's frames, and its n x ncv Lanczos basis, alive through it
            stalled = (getattr(err, "eigenvalues", None), getattr(err, "eigenvectors", None))
        if stalled is not None:
            if bounded and amg_available():
                # LOBPCG-AMG converges from a random start (docs/scaling.md); ARPACK's pairs,
                # when it has some, are a better one
                tol = _solver_tol(requested_tol, "lobpcg-amg")
                vals, vecs, _ = lobpcg_amg(S, k, restriction=restriction, upper=upper,
                                           tol=tol, rng=rng, start=stalled[1])
                method_used = "eigsh+lobpcg-amg"
            elif bounded:
                warnings.warn(
                    f"top_eigenpairs: ARPACK did not converge within {AUTO_EIGSH_RESTARTS} "
                    f"restarts for {k} eigenpairs of an n = {n} operator (a tiny spectral gap, "
                    "e.g. a nearly disconnected graph); continuing without a bound, which can "
                    "take long. Install pyamg (`pip install graphclust[amg]`) for LOBPCG with a "
                    "multigrid preconditioner, several times faster there.",
                    SpectrumPerformanceWarning,
                    stacklevel=2,
                )
                vals, vecs = arpack_eigsh(op, k=k, which="LA", tol=tol, v0=v0)
            else:
                vals, vecs = _lobpcg(op, k, stalled[0], stalled[1], tol, rng, n_defl)
                method_used = "lobpcg"
    elif method == "shift-invert":
        if k >= n - 1:
            raise ValueError(
                f"shift-invert needs n_eigenpairs < n - 1 = {n - 1}; got {k}. Use method='dense'."
            )
        vals, vecs = _shift_invert(S, k, tol, rng, restriction, upper, maxiter)
        method_used = "shift-invert"
    elif method == "lobpcg-amg":
        vals, vecs, _ = lobpcg_amg(S, k, restriction=restriction, upper=upper, tol=tol,
                                   rng=rng, maxiter=maxiter, start=start)
        method_used = "lobpcg-amg"
    else:
        vals, vecs = _lobpcg(op, k, None, start, tol, rng, n_defl)
        method_used = "lobpcg"
    order = np.argsort(vals)[::-1]
    vals = vals[order]
    vecs = np.ascontiguousarray(vecs[:, order])
    res = _residuals(S, vals, vecs, restriction)
    worst = float(res.max()) if res.size else 0.0
    if not np.all(np.isfinite(vals)) or worst > max(1e3 * tol, 1e-6):
        warnings.warn(
            f"top_eigenpairs: largest residual ||S v - mu v|| = {worst:.2e} for {k} eigenpairs "
            f"of an n = {n} operator; requested tol = {tol:.1e} ({method_used}).",
            SpectrumConvergenceWarning,
            stacklevel=2,
        )
    return Spectrum(vals, vecs, res, method_used)


def symmetric_definite_lu(A):
    """Sparse LU of a symmetric definite matrix: minimum degree on A^T + A, diagonal pivots.

    A definite matrix needs no pivoting for stability, and letting SuperLU pivot off the
    diagonal destroys the symmetric ordering (fill-in then grows without bound on PMST image
    graphs); minimum degree on the symmetric pattern keeps the fill of a planar grid near
    O(n log n), well below COLAMD's (measurements: ``docs/applications.md``).
    """
    return spla.splu(sp.csc_matrix(A), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                     options={"SymmetricMode": True})


def _shift_invert(S, k, tol, rng, restriction, upper, maxiter):
    """Top-k eigenpairs of S - U K U^T (`_Restriction.low_rank`) by Lanczos on its shifted inverse.

    (A - s I)^-1 with A = S - U K U^T is applied by Woodbury on one LU factorisation of
    M = S - s I: (M - U K U^T)^-1 = M^-1 + M^-1 U (K^-1 - U^T M^-1 U)^-1 U^T M^-1. Its
    eigenvalues 1 / (mu - s) are largest in magnitude for the mu closest to s from below.
    """
    n = S.shape[0]
    if upper is None:
        upper = float(abs(sp.csr_matrix(S)).sum(axis=1).max())
    shift = float(upper) + 1e-6 * max(1.0, abs(float(upper)))
    M = (sp.csc_matrix(S, dtype=np.float64) - shift * sp.identity(n, format="csc")).tocsc()
    lu = symmetric_definite_lu(M)
    if restriction is not None:
        U, K = restriction.low_rank()
        MU = lu.solve(np.asfortranarray(U))
        inner = np.linalg.inv(K) - U.T @ MU

        def solve(x):
            y = lu.solve(np.asarray(x, dtype=np.float64))
            return y + MU @ np.linalg.solve(inner, U.T @ y)
        Zd = U[:, :restriction.Z.shape[1]]
    else:
        Zd = None

        def solve(x):
            return lu.solve(np.asarray(x, dtype=np.float64))

    op = spla.LinearOperator((n, n), matvec=solve, dtype=np.float64)
    v0 = rng.uniform(-1.0, 1.0, size=n)
    if Zd is not None:
        v0 = v0 - Zd @ (Zd.T @ v0)
    theta, vecs = arpack_eigsh(op, k=k, which="LM", tol=tol, v0=v0, maxiter=maxiter)
    return shift + 1.0 / theta, vecs


def _solver_tol(tol, solver):
    """The tolerance `solver` gets for the requested `tol` ("auto": `AUTO_TOL`, or
    `AUTO_TOL_LOBPCG_AMG` for LOBPCG-AMG)."""
    if tol != "auto":
        return tol
    return AUTO_TOL_LOBPCG_AMG if solver == "lobpcg-amg" else AUTO_TOL


class _NoProgress(Exception):
    """ARPACK converged no pair within the probe's restarts."""


def _arpack_driver(op, k, tol, v0, budget):
    """scipy's ARPACK wrapper for eigsh(op, k, which="LA"), or None without progress counts.

    scipy's ``eigsh`` hides ARPACK's progress; its C ARPACK (scipy 1.15 on) keeps the restart
    and converged counts in the private wrapper's ``arpack_dict``.
    """
    try:
        from scipy.sparse.linalg._eigen.arpack.arpack import _SymmetricArpackParams

        matvec = op.matvec if hasattr(op, "matvec") else op.dot
        params = _SymmetricArpackParams(op.shape[0], k, "d", matvec, 1, None, None, None, None,
                                        v0, budget, "LA", tol)
    except Exception:  # the private API moved
        return None
    return params if {"aup2_iter", "nconv"} <= params.arpack_dict.keys() else None


def _probed_eigsh(op, k, tol, v0, probe, budget):
    """eigsh (largest algebraic) that gives up after `probe` restarts with no converged pair.

    Raises `_NoProgress` then, and `ArpackNoConvergence` after `budget` restarts. Without
    ARPACK's progress counts (`_arpack_driver`) this is plain eigsh with `budget` restarts.
    """
    params = _arpack_driver(op, k, tol, v0, budget)
    if params is None:
        return arpack_eigsh(op, k=k, which="LA", tol=tol, v0=v0, maxiter=budget)
    state = params.arpack_dict
    with one_blas_thread():  # as `arpack_eigsh`
        while not params.converged:
            params.iterate()
            if state["aup2_iter"] >= probe and state["nconv"] == 0:
                raise _NoProgress(f"no eigenpair converged in {probe} ARPACK restarts")
        return params.extract(True)


def _lobpcg(op, k, vals0, vecs0, tol, rng, n_defl=0):
    n = op.shape[0]
    X = rng.standard_normal((n, k))
    if vecs0 is not None and vecs0.shape[1]:
        j = min(vecs0.shape[1], k)
        X[:, :j] = vecs0[:, :j]
    with warnings.catch_warnings():
        # LOBPCG's own warnings are replaced by the residual check of the caller
        warnings.simplefilter("ignore", UserWarning)
        vals, vecs = spla.lobpcg(op, X, largest=True, tol=max(tol, 1e-10), maxiter=500)
    return np.asarray(vals), np.asarray(vecs)
