"""One multigrid V-cycle on a block of right-hand sides: the LOBPCG-AMG preconditioner's work.

pyamg applies its V-cycle to one vector at a time, on one core, and after the cycle computes one
more residual for its own stopping test, which a preconditioner never uses. LOBPCG applies the
preconditioner to a block of k columns per iteration, and on the nearly disconnected 250 000
node kNN graph the cycles were two thirds of the eigensolve (docs/scaling.md). Here pyamg's
cycle (symmetric Gauss-Seidel pre- and post-smoothing, restriction by P^T, prolongation by P, a
dense pseudo-inverse on the coarsest level) runs on the whole block, without the extra
residual: the sweeps and the products on rows of the block, one read of a nonzero serving every
column.

A Gauss-Seidel sweep is sequential along the rows. Splitting the block's columns over the
threads made each thread stream the whole matrix: at 10^6 nodes two threads sweeping 7 columns
each took as long as one thread sweeping all 13 (the sweep waits on the scattered reads of
neighbours' rows, not on arithmetic). The sweeps are therefore split by rows instead, as hypre's
"hybrid" Gauss-Seidel does: Gauss-Seidel inside each of ``blocks`` contiguous row blocks (in
reverse Cuthill-McKee order, 7.9 % of the nonzeros cross the two blocks of a 10^6-node kNN graph),
the other blocks' values from before the sweep; LOBPCG-AMG needed the same iterations with two
blocks as with pyamg's sequential sweep (docs/scaling.md). One block is pyamg's cycle, bitwise
in the measurements and to rounding in the tests, and the result never depends on the thread
count, only on ``blocks``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ._spmm import csr_block_update

__all__ = ["BlockVCycle", "BlockProduct"]


@njit(cache=True, parallel=True)
def _hybrid_gauss_seidel(indptr, indices, data, X, X_old, B, forward, blocks, from_zero):
    # One Gauss-Seidel sweep inside each of `blocks` contiguous row blocks, the blocks over the
    # threads; a row's neighbours in other blocks contribute their values from before the sweep
    # (X_old: nothing with `from_zero`), so the result does not depend on the thread count or
    # on the order the blocks run in. Per row: x_i = (b_i - sum_{j != i} a_ij x_j) / a_ii,
    # skipped where a_ii = 0, all b columns at once (one read of a row's nonzeros serves every
    # column). With one block this is pyamg's amg_core.gauss_seidel on every column, the same
    # arithmetic in the same order.
    n, b = X.shape
    size = -(-n // blocks)
    for blk in prange(blocks):
        lo = blk * size
        hi = min(n, lo + size)
        acc = np.empty(b)
        for s in range(hi - lo):
            i = lo + s if forward else hi - 1 - s
            for c in range(b):
                acc[c] = 0.0
            diag = 0.0
            for t in range(indptr[i], indptr[i + 1]):
                j = indices[t]
                if j == i:
                    diag = data[t]
                elif lo <= j < hi:
                    a = data[t]
                    for c in range(b):
                        acc[c] += a * X[j, c]
                elif not from_zero:
                    a = data[t]
                    for c in range(b):
                        acc[c] += a * X_old[j, c]
            if diag != 0.0:
                for c in range(b):
                    X[i, c] = (B[i, c] - acc[c]) / diag


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

    def __call__(self, X, out=None):
        """``M @ X``; into `out` (C-contiguous (n, b) float64) when given."""
        X = np.asarray(X, dtype=np.float64)
        one = X.ndim == 1
        X2 = np.ascontiguousarray(X.reshape(X.shape[0], -1))
        if out is None:
            out = np.zeros((self.shape[0], X2.shape[1]))
        else:
            out[...] = 0.0
        csr_block_update(*self._M, X2, out, 1.0, out)
        return out[:, 0] if one else out


class BlockVCycle:
    """A multigrid V-cycle (from a zero guess) applied to all columns of a block at once.

    Parameters
    ----------
    hierarchy : pyamg MultilevelSolver
        Built with symmetric Gauss-Seidel smoothing (pyamg's default) and R = P^T; only its
        levels' ``A`` and ``P`` are read.
    blocks : int, default 1
        Row blocks of the smoother: Gauss-Seidel inside each block, the blocks in parallel,
        each seeing the others' values from before the sweep (hypre's "hybrid" Gauss-Seidel).
        1 is pyamg's cycle exactly, on one thread.

    Notes
    -----
    Pre- and post-smoothing are a forward then a backward sweep with the same blocks, so the
    cycle is a symmetric operator (to rounding): what LOBPCG asks of a preconditioner. Its work
    blocks are kept between calls: one cycle object serves one thread at a time.

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

    def __init__(self, hierarchy, *, blocks=1):
        levels = hierarchy.levels
        self._A = [_csr(lvl.A) for lvl in levels[:-1]]
        self._P = [_csr(lvl.P) for lvl in levels[:-1]]
        self._R = [_csr(sp.csr_matrix(lvl.P).T) for lvl in levels[:-1]]
        self._sizes = [lvl.A.shape[0] for lvl in levels]
        self._blocks = int(blocks)
        coarse = levels[-1].A
        coarse = coarse.toarray() if sp.issparse(coarse) else np.asarray(coarse)
        self._coarse_inverse = np.linalg.pinv(coarse, hermitian=True)
        self._spare = {}

    def _scratch(self, name, lvl, shape):
        # reused (n, b) work blocks: a fresh block per sweep costs the allocation and the first
        # touch of its pages, about twice the copy into it (docs/scaling.md)
        size = shape[0] * shape[1]
        flat = self._spare.get((name, lvl))
        if flat is None or flat.size < size:
            flat = self._spare[(name, lvl)] = np.empty(size)
        return flat[:size].reshape(shape)

    def __call__(self, B, out=None):
        """The cycle applied to each column of `B` (n,) or (n, b); into `out` (C-contiguous,
        the shape of `B`) when given, else a new array."""
        B = np.asarray(B, dtype=np.float64)
        one = B.ndim == 1
        B2 = np.ascontiguousarray(B.reshape(B.shape[0], -1))
        X = self._cycle(0, B2, None if out is None else out.reshape(B2.shape))
        return X[:, 0] if one else X

    def _smooth(self, lvl, X, B, from_zero=False):
        # forward then backward: the symmetric sweep pair
        indptr, indices, data = self._A[lvl]
        for forward in (True, False):
            # with one block no other block's value is read: X itself stands for X_old
            if from_zero or self._blocks == 1:
                old = X
            else:
                old = self._scratch("old", lvl, X.shape)
                np.copyto(old, X)
            _hybrid_gauss_seidel(indptr, indices, data, X, old, B, forward, self._blocks,
                                 from_zero)
            from_zero = False

    def _cycle(self, lvl, B, X=None):
        # B and the result X are (n, b) row by row
        if lvl == len(self._A):
            return self._coarse_inverse @ B
        b = B.shape[1]
        if X is None:
            X = np.zeros_like(B)
        else:
            X[...] = 0.0
        self._smooth(lvl, X, B, from_zero=True)
        residual = csr_block_update(*self._A[lvl], X, B, -1.0,
                                    self._scratch("residual", lvl, B.shape))
        coarse_b = np.zeros((self._sizes[lvl + 1], b))
        csr_block_update(*self._R[lvl], residual, coarse_b, 1.0, coarse_b)
        coarse_x = np.ascontiguousarray(self._cycle(lvl + 1, coarse_b))
        csr_block_update(*self._P[lvl], coarse_x, X, 1.0, X)
        self._smooth(lvl, X, B)
        return X
