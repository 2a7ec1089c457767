"""Block Gauss quadrature of ``R^T (A + s I)^-1 R``, A = I - a0 S, from Chebyshev moments.

The block Lanczos quadrature (`_lanczos_quadrature._lanczos_quadrature`) spends O(n b^2) per
step on keeping its b-column blocks orthonormal, and at scale that dense work is most of the flows'
time (b, the consensus pieces, grows with n: docs/scaling.md). The same Gauss estimate
follows from the moments ``mu_k = R^T T_k(S) R`` alone (T_k the Chebyshev polynomials; S's
spectrum lies in [-1, 1]). The blocks ``U_k = T_k(S) R`` obey the three-term recurrence
``U_(k+1) = 2 S U_k - U_(k-1)``, one sparse product per step and no inner products; when R
is a matrix with one nonzero per row (up to a part in an invariant subspace of S that it
is orthogonal to: the pieces' indicators off the components' stationary vectors) its
moments are segment sums fused with the product (`kernels.chebyshev_step`), O(n b).

From 2K moments the Galerkin matrices of the basis U_0 .. U_(K-1) are, by
``T_i T_j = (T_(i+j) + T_|i-j|) / 2`` and ``x T_j = (T_(j+1) + T_|j-1|) / 2``,

    G_ij = (mu_(i+j) + mu_|i-j|) / 2,   H_ij = int T_i x T_j dmu,   E = (mu_0, .., mu_(K-1)),

and the estimate ``E^T ((1 + s) G - a0 H)^-1 E`` is the Galerkin (block Gauss) value on the
Krylov space of K blocks: the block Lanczos estimate after K steps, in exact arithmetic
(Golub & Meurant 2010, ch. 5). It costs 2K products instead of K, but no O(n b^2) work.
The Chebyshev basis is far from orthogonal (G's condition reaches 1e13 on the 250 000-point
flows), so G is regularised by 1e-13 of its largest diagonal entry (raised tenfold until the
Cholesky factor exists), which drops the directions the moments cannot resolve: measured
against a converged block Lanczos run the estimate converges as fast per block as Lanczos
does, to 4e-10 relative at K = 40 (docs/scaling.md, *The flows from Chebyshev moments*).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dpotrf
from threadpoolctl import threadpool_limits

from ..kernels import block_inner, chebyshev_step
from ._lanczos_quadrature import _quadrature_converged

__all__ = ["affordable", "moment_quadrature", "one_per_row"]

#: Largest Galerkin size K b (its two matrices take 2 (K b)^2 doubles): beyond it the run
#: gives up (None) and the caller falls back to block Lanczos.
MAX_GALERKIN = 3000
#: Most blocks of a run (block Lanczos allows 1 000 steps, but the small dense solves here
#: grow as K^3): beyond it the run gives up (None).
MAX_BLOCKS = 200
#: Blocks of a typical run (26-30 on the development sets and at 125 000-500 000 points), for
#: `affordable`'s decision before a run.
TYPICAL_BLOCKS = 30


def affordable(K, b, n, n_shifts):
    """Whether K blocks' small dense solves cost less than Lanczos' orthogonalisation.

    The final solves are one Cholesky factorisation of a K b x K b matrix per shift,
    n_shifts (K b)^3 / 3 flops; block Lanczos spends about 10 n b^2 flops per step on
    keeping its blocks orthonormal, 10 n b^2 K in all. Measured (docs/scaling.md): letters
    (n = 20 000, b = 118, 41 blocks) is three times slower by moments, where this says no;
    MNIST (70 000, b = 30) and 20 newsgroups (11 256, b = 55) are faster, where it says yes
    and no.
    """
    return n_shifts * (K * b) ** 3 / 3.0 <= 10.0 * n * b * b * K


def moment_quadrature(S, R, shifts, a0, *, segments=None, rtol=1e-3, guard=False,
                      overwrite=False):
    """``R^T ((1 + s) I - a0 S)^-1 R`` for every shift s >= 0, from Chebyshev moments of S.

    Parameters
    ----------
    S : scipy CSR matrix (n, n), symmetric, spectrum in [-1, 1]
    R : array (n, b), float64; not changed unless `overwrite`
    shifts : sequence of float >= 0
    a0 : float in (0, 1)
    segments : (seg, w, n_seg), optional
        When ``R^T U = B^T U`` for every block U of the Krylov space, with B[i, seg_i] = w_i
        (one nonzero per row), the moments are taken as those segment sums, O(n b) per step;
        otherwise as ``R^T U`` (O(n b^2)).
    rtol : float
        As `lanczos_flows`' rtol: the run stops when the estimate for the smallest shift is
        within ``max(rtol^2, 1e-11)`` of its limit, relative to its largest entry (the same
        rule, `_lanczos_quadrature._quadrature_converged`).
    guard : bool
        Give up (None) as soon as the blocks are no longer `affordable`: the caller's block
        Lanczos would then be cheaper.
    overwrite : bool
        With `segments`, the run may write its blocks over a C-contiguous float64 `R` (R is
        then needed only as the first block): one n x b block less at the flows' peak (at
        10^6 points, 340 MB of fresh memory, docs/scaling.md).

    Returns
    -------
    list of (b, b) arrays, one per shift, or None when the run does not converge within
    `MAX_BLOCKS` blocks and `MAX_GALERKIN` columns, or the guard stops it (the caller then
    uses block Lanczos).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> from graphclust.cluster._moment_quadrature import moment_quadrature
    >>> rng = np.random.default_rng(0)
    >>> W = sp.random(60, 60, density=0.2, random_state=0); W = sp.csr_matrix(W + W.T)
    >>> d = np.asarray(W.sum(axis=1)).ravel(); S = sp.diags(d ** -0.5) @ W @ sp.diags(d ** -0.5)
    >>> R = rng.normal(size=(60, 4))
    >>> F = moment_quadrature(sp.csr_matrix(S), R, [0.5], 0.9, rtol=1e-6)[0]
    >>> A = 1.5 * np.eye(60) - 0.9 * S.toarray()
    >>> bool(np.allclose(F, R.T @ np.linalg.solve(A, R), rtol=1e-8, atol=1e-10))
    True
    """
    # the small dense solves on one BLAS thread: a BLAS pool left spinning after a call slowed
    # the next sparse products (numba's threads) by half on two cores (docs/scaling.md)
    with threadpool_limits(limits=1):
        return _moment_quadrature(S, R, shifts, a0, segments, rtol, guard, overwrite)


def _moment_quadrature(S, R, shifts, a0, segments, rtol, guard, overwrite):
    n, b = R.shape
    if b == 0 or not np.any(R):
        return [np.zeros((b, b)) for _ in shifts]
    S_ptr, S_idx, S_val = S.indptr, S.indices, S.data
    if segments is None:
        seg, w, n_seg = np.zeros(n, dtype=np.int64), np.zeros(n), 1
    else:
        seg, w, n_seg = segments
        seg = np.ascontiguousarray(seg, dtype=np.int64)
        w = np.ascontiguousarray(w, dtype=np.float64)

    def moment(U, sums):
        m = sums if segments is not None else block_inner(R, U)
        return 0.5 * (m + m.T)

    mu0 = block_inner(R) if segments is not None else None
    if (overwrite and segments is not None and R.dtype == np.float64
            and R.flags.c_contiguous):
        U_prev = R  # U_0; the moments need R no further
    else:
        U_prev = np.array(R, dtype=np.float64, order="C")
    mu = [moment(U_prev, mu0)]
    # not read by the first step (c = 0): its pages are first touched there, over the threads
    U = np.empty_like(U_prev)
    mu.append(moment(U, chebyshev_step(S_ptr, S_idx, S_val, U_prev, U, 1.0, 0.0,
                                       seg, w, n_seg)))  # U_1 = S U_0
    s_min = float(min(shifts))
    tol = max(rtol**2, 1e-11)
    history = []
    K = 1
    while True:
        for _ in range(2):  # two more moments: one more block of the Galerkin space
            # U_(k+1) = 2 S U_k - U_(k-1), written over U_(k-1)
            sums = chebyshev_step(S_ptr, S_idx, S_val, U, U_prev, 2.0, -1.0, seg, w, n_seg)
            mu.append(moment(U_prev, sums))
            U, U_prev = U_prev, U
        K += 1
        if (K > MAX_BLOCKS or K * b > MAX_GALERKIN
                or (guard and not affordable(K, b, n, len(shifts)))):
            return None
        whole = K * b >= n  # the blocks span the whole space: the Galerkin value is exact
        if whole or (K >= 4 and (K < 8 or K % 2 == 0)):  # every other block from the 8th:
            # the check's dense solve is O((K b)^3), near a product's cost at a run's end
            G, H = _galerkin(mu, K, b)
            work = np.empty_like(G, order="F")
            F = _estimate(G, H, a0, s_min, b, work)
            if F is None:
                return None
            history.append(F)
            if whole or _quadrature_converged(history, tol):
                break
    out = []
    for s in shifts:
        F = _estimate(G, H, a0, float(s), b, work)
        if F is None:
            return None
        out.append(0.5 * (F + F.T))
    return out


def _galerkin(mu, K, b):
    """G and H (K b x K b) of the Chebyshev blocks U_0 .. U_(K-1) from the moments mu_0 ..
    mu_(2K-1)."""
    G = np.empty((K * b, K * b))
    H = np.empty_like(G)
    for i in range(K):
        for j in range(K):
            G[i * b:(i + 1) * b, j * b:(j + 1) * b] = 0.5 * (mu[i + j] + mu[abs(i - j)])
            if j == 0:  # x T_0 = T_1
                h = 0.5 * (mu[i + 1] + mu[abs(i - 1)])
            else:
                h = 0.25 * (mu[i + j + 1] + mu[abs(i - j - 1)] + mu[i + j - 1]
                            + mu[abs(i - j + 1)])
            H[i * b:(i + 1) * b, j * b:(j + 1) * b] = h
    return G, H


@njit(cache=True)
def _pencil(G, H, c1, c2, M):
    """M = ((c1 G - c2 H) + (c1 G - c2 H)^T) / 2 without temporaries (the same numbers as
    numpy's expression: each entry is the same sum of the same products)."""
    N = G.shape[0]
    for j in range(N):
        for i in range(j, N):
            v = 0.5 * ((c1 * G[i, j] - c2 * H[i, j]) + (c1 * G[j, i] - c2 * H[j, i]))
            M[i, j] = v
            M[j, i] = v


def _estimate(G, H, a0, s, b, work):
    """``E^T M^-1 E`` with ``M = (1 + s) G - a0 H`` regularised by delta max(diag M), delta
    from 1e-13 raised tenfold until M's Cholesky factor exists (at most 1e-8); None if it
    never does.

    `work`, a Fortran-ordered array of G's shape, receives M and its factor: LAPACK factors
    it in place, so a run's final shifts share one matrix of (K b)^2 doubles instead of
    three fresh ones each (at 10^6 points, 16 MB each, page-faulted: docs/scaling.md)."""
    N = G.shape[0]
    diag = np.arange(N)
    E = np.array(G[:, :b], order="F")
    for delta in (1e-13, 1e-12, 1e-11, 1e-10, 1e-9, 1e-8):
        _pencil(G, H, 1.0 + s, a0, work)  # again after a failed factorisation overwrote it
        top = float(np.max(work[diag, diag]))
        if not np.isfinite(top) or top <= 0.0:
            return None
        work[diag, diag] += delta * top
        L, info = dpotrf(work, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            continue
        Y = solve_triangular(L, E, lower=True, check_finite=False)
        F = Y.T @ Y
        return F if np.all(np.isfinite(F)) else None
    return None


def one_per_row(B):
    """`moment_quadrature`'s `segments`, (seg, w, b) with B[i, seg_i] = w_i, when the sparse B
    has at most one nonzero per row; else None."""
    if not sp.issparse(B):
        return None
    B = sp.csr_matrix(B)
    B.sum_duplicates()
    counts = np.diff(B.indptr)
    if counts.size and counts.max() > 1:
        return None
    seg = np.zeros(B.shape[0], dtype=np.int64)
    w = np.zeros(B.shape[0])
    rows = np.flatnonzero(counts)
    seg[rows] = B.indices[B.indptr[rows]]
    w[rows] = B.data[B.indptr[rows]]
    return seg, w, B.shape[1]
