"""One multigrid V-cycle on a block of right-hand sides: the LOBPCG-AMG preconditioner's work.

pyamg applies its V-cycle to one vector at a time, on one core, and after the cycle computes one
more residual for its own stopping test, which a preconditioner never uses. LOBPCG applies the
preconditioner to a block of k columns per iteration, and on the nearly disconnected 250 000
node kNN graph the cycles were two thirds of the eigensolve (docs/scaling.md). Here the same
cycle (symmetric Gauss-Seidel pre- and post-smoothing, restriction by P^T, prolongation by P, a
dense pseudo-inverse on the coarsest level: the cycle pyamg runs for the hierarchy it built) runs
on the whole block: the sweeps and the products on rows of the block (one read of a nonzero
serves every column), the sweeps' columns split into one group per thread (a sweep is
sequential along the rows, independent per column; each group is its own array, so threads
share no cache line), without the extra residual. Each column gets pyamg's arithmetic in
pyamg's order, so the result equals pyamg's cycle (bitwise in the measurements, to rounding in
the tests) on any number of threads.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ._spmm import csr_block_update

__all__ = ["BlockVCycle", "BlockProduct"]


@njit(cache=True)
def _gauss_seidel_rows(indptr, indices, data, X, B, forward):
    # pyamg's amg_core.gauss_seidel on every column of X (n, b) at once, same arithmetic in the
    # same order per column: x_i = (b_i - sum_{j != i} a_ij x_j) / a_ii, skipped where
    # a_ii = 0. One read of a row's nonzeros serves all b columns (a column-by-column sweep
    # streams the whole matrix once per column: 4x slower per column at 10^6 nodes)
    n, b = X.shape
    acc = np.empty(b)
    for s in range(n):
        i = s if forward else n - 1 - s
        for c in range(b):
            acc[c] = 0.0
        diag = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            j = indices[t]
            if j == i:
                diag = data[t]
            else:
                a = data[t]
                for c in range(b):
                    acc[c] += a * X[j, c]
        if diag != 0.0:
            for c in range(b):
                X[i, c] = (B[i, c] - acc[c]) / diag


@njit(cache=True, parallel=True)
def _gauss_seidel(indptr, indices, data, X, B, forward):
    # one sweep on each group of columns X[g] (n, w): the groups over the threads. A sweep is
    # sequential along the rows; each group is its own array, so threads share no cache line
    for g in prange(X.shape[0]):
        _gauss_seidel_rows(indptr, indices, data, X[g], B[g], forward)


def _column_groups(B, groups):
    # (n, b) -> (groups, n, w), w = ceil(b / groups), zero columns padding the last group
    n, b = B.shape
    w = -(-b // groups)
    padded = np.zeros((n, groups * w))
    padded[:, :b] = B
    return np.ascontiguousarray(padded.reshape(n, groups, w).transpose(1, 0, 2))


def _from_groups(G, b):
    return np.ascontiguousarray(G.transpose(1, 0, 2).reshape(G.shape[1], -1)[:, :b])


def _csr(M):
    M = sp.csr_matrix(M, dtype=np.float64)
    M.sum_duplicates()
    return (np.ascontiguousarray(M.indptr, dtype=np.int64),
            np.ascontiguousarray(M.indices, dtype=np.int64), np.ascontiguousarray(M.data))


class BlockProduct:
    """``M @ X`` for a fixed sparse `M` and blocks X (n, b), rows in chunks over the threads."""

    def __init__(self, M):
        self._M = _csr(M)
        self.shape = M.shape

    def __call__(self, X):
        X = np.asarray(X, dtype=np.float64)
        one = X.ndim == 1
        X2 = np.ascontiguousarray(X.reshape(X.shape[0], -1))
        out = np.zeros((self.shape[0], X2.shape[1]))
        csr_block_update(*self._M, X2, out, 1.0, out)
        return out[:, 0] if one else out


class BlockVCycle:
    """pyamg's V-cycle (from a zero guess) applied to all columns of a block at once.

    Parameters
    ----------
    hierarchy : pyamg MultilevelSolver
        Built with symmetric Gauss-Seidel smoothing (pyamg's default) and R = P^T; only its
        levels' ``A`` and ``P`` are read.

    Examples
    --------
    >>> import numpy as np
    >>> import pyamg  # doctest: +SKIP
    >>> A = pyamg.gallery.poisson((30, 30), format="csr")  # doctest: +SKIP
    >>> ml = pyamg.smoothed_aggregation_solver(A, max_coarse=50)  # doctest: +SKIP
    >>> B = np.random.default_rng(0).normal(size=(900, 3))  # doctest: +SKIP
    >>> M = ml.aspreconditioner()  # doctest: +SKIP
    >>> ref = np.column_stack([M @ col for col in B.T])  # doctest: +SKIP
    >>> bool(np.allclose(BlockVCycle(ml)(B), ref))  # doctest: +SKIP
    True
    """

    def __init__(self, hierarchy):
        levels = hierarchy.levels
        self._A = [_csr(lvl.A) for lvl in levels[:-1]]
        self._P = [_csr(lvl.P) for lvl in levels[:-1]]
        self._R = [_csr(sp.csr_matrix(lvl.P).T) for lvl in levels[:-1]]
        self._sizes = [lvl.A.shape[0] for lvl in levels]
        coarse = levels[-1].A
        coarse = coarse.toarray() if sp.issparse(coarse) else np.asarray(coarse)
        self._coarse_inverse = np.linalg.pinv(coarse, hermitian=True)

    def __call__(self, B):
        """The cycle applied to each column of `B` (n,) or (n, b); returns a new array."""
        B = np.asarray(B, dtype=np.float64)
        one = B.ndim == 1
        out = self._cycle(0, np.ascontiguousarray(B.reshape(B.shape[0], -1)))
        return out[:, 0] if one else out

    def _cycle(self, lvl, B):
        # B and the result are (n, b) row by row (for the products); the sweeps work on groups
        # of columns, one per thread, each group rows of w columns
        if lvl == len(self._A):
            return self._coarse_inverse @ B
        indptr, indices, data = self._A[lvl]
        b = B.shape[1]
        groups = max(1, min(b, numba.get_num_threads()))
        Bg = _column_groups(B, groups)
        Xg = np.zeros_like(Bg)
        _gauss_seidel(indptr, indices, data, Xg, Bg, True)
        _gauss_seidel(indptr, indices, data, Xg, Bg, False)
        X = _from_groups(Xg, b)
        residual = csr_block_update(indptr, indices, data, X, B, -1.0, np.empty_like(B))
        coarse_b = np.zeros((self._sizes[lvl + 1], b))
        csr_block_update(*self._R[lvl], residual, coarse_b, 1.0, coarse_b)
        coarse_x = np.ascontiguousarray(self._cycle(lvl + 1, coarse_b))
        csr_block_update(*self._P[lvl], coarse_x, X, 1.0, X)
        Xg = _column_groups(X, groups)
        _gauss_seidel(indptr, indices, data, Xg, Bg, True)
        _gauss_seidel(indptr, indices, data, Xg, Bg, False)
        return _from_groups(Xg, b)
