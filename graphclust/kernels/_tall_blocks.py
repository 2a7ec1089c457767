"""Dense products of tall blocks (n x b, n >> b) split by rows over the threads.

Block Krylov methods spend their dense work in three shapes: inner products ``X^T Y`` (b x b,
summed over the n rows), updates ``Y += alpha X M`` with a small M, and the triangular factor of a
QR step. OpenBLAS runs the first shape on one core whatever its thread count (its threads split
the small output, not the long sum); numpy's ``Y -= X @ M`` makes a temporary block and a
separate pass; a triangular solve (trsm) ran at a third of gemm's speed. Measured on
500 000 x 50 blocks (docs/scaling.md): ``X^T Y`` 0.116 s with two BLAS threads, 0.070 s as
fixed row chunks on two Python threads with one BLAS thread each. Here every operation splits
the rows into fixed chunks, one BLAS thread per chunk, the chunks over `get_num_threads()`
threads; the inner products are summed chunk by chunk in a fixed order, so a result does not
depend on the thread count. Small blocks go straight to numpy, on one BLAS thread
(`graphclust.threads.one_blas_thread`): a second thread does not speed their products up,
and right after a numba kernel, whose threads still spin, it made them several times slower
(a whole automatic fit of 4 811 points 1.5 times slower; docs/scaling.md).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dgemm, dtrmm

from ..threads import one_blas_thread, run_parallel

__all__ = ["block_inner", "block_update", "block_update_inner", "block_triangular"]

#: Rows per chunk; blocks with fewer rows than two chunks are computed in one numpy call. Small
#: enough that the chunks of the blocks one fused operation reads stay in cache between its two
#: products (`block_update_inner`).
CHUNK_ROWS = 8192

def _chunks(n):
    return [(s, min(n, s + CHUNK_ROWS)) for s in range(0, n, CHUNK_ROWS)]


def _summed(parts, symmetric):
    """The chunks' products summed in chunk order (the same on any thread count)."""
    out = parts[0].copy()
    for p in parts[1:]:
        out += p
    return 0.5 * (out + out.T) if symmetric else out


def block_inner(X, Y=None):
    """``X^T Y`` (``X^T X`` when `Y` is None) of row-major blocks (n, a) and (n, b): (a, b).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(200_000, 5))
    >>> bool(np.allclose(block_inner(X), X.T @ X))
    True
    """
    n = X.shape[0]
    if n < 2 * CHUNK_ROWS:
        with one_blas_thread():
            return X.T @ (X if Y is None else Y)
    if Y is None:
        parts = run_parallel([lambda s=s, e=e: X[s:e].T @ X[s:e] for s, e in _chunks(n)])
    else:
        parts = run_parallel([lambda s=s, e=e: X[s:e].T @ Y[s:e] for s, e in _chunks(n)])
    return _summed(parts, symmetric=Y is None)


def _update_rows(Y, X, Mt, alpha, s, e):
    # rows s..e of Y += alpha X M, with Mt = M^T Fortran-ordered: a C-contiguous row chunk is a
    # Fortran-contiguous (b, rows) matrix, so one gemm with beta = 1 does Y^T += alpha M^T X^T
    dgemm(alpha, Mt, X[s:e].T, beta=1.0, c=Y[s:e].T, overwrite_c=True)


def block_update(Y, X, M, alpha=-1.0):
    """``Y += alpha * X @ M`` in place, for C-contiguous float64 blocks Y (n, b), X (n, r).

    One BLAS call per chunk (gemm with beta = 1): no temporary block and no separate pass.
    Returns `Y`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, M, Y = rng.normal(size=(300, 4)), rng.normal(size=(4, 3)), rng.normal(size=(300, 3))
    >>> Z = Y.copy()
    >>> bool(np.allclose(block_update(Z, X, M), Y - X @ M))
    True
    """
    if not (Y.flags.c_contiguous and X.flags.c_contiguous and Y.dtype == np.float64
            and X.dtype == np.float64):
        Y += alpha * (X @ M)
        return Y
    n = Y.shape[0]
    if X.shape[1] == 0 or n == 0:
        return Y
    Mt = np.asfortranarray(np.asarray(M, dtype=np.float64).T)

    def update(s, e):
        _update_rows(Y, X, Mt, alpha, s, e)

    if n < 2 * CHUNK_ROWS:
        with one_blas_thread():
            update(0, n)
    else:
        run_parallel([lambda s=s, e=e: update(s, e) for s, e in _chunks(n)])
    return Y


def block_update_inner(Y, X, M, Z=None, alpha=-1.0):
    """``Y += alpha * X @ M`` in place, then ``Z^T Y`` (``Y^T Y`` when `Z` is None), in one pass.

    Each row chunk is updated and multiplied while it is in cache: a block Lanczos step's
    three-term update and the inner product after it read the block once instead of twice
    (on 10^6 x 48 blocks, a step's dense work took 0.37 s fused against 0.57 s as separate
    products: docs/scaling.md). Blocks as in `block_update`; returns the (b', b) product.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, M, Y = rng.normal(size=(300, 4)), rng.normal(size=(4, 3)), rng.normal(size=(300, 3))
    >>> Z = Y.copy()
    >>> G = block_update_inner(Z, X, M)
    >>> bool(np.allclose(Z, Y - X @ M)) and bool(np.allclose(G, Z.T @ Z))
    True
    """
    n = Y.shape[0]
    fast = (Y.flags.c_contiguous and X.flags.c_contiguous and Y.dtype == np.float64
            and X.dtype == np.float64)
    if n < 2 * CHUNK_ROWS or not fast or X.shape[1] == 0:
        block_update(Y, X, M, alpha)
        return block_inner(Y) if Z is None else block_inner(Z, Y)
    Mt = np.asfortranarray(np.asarray(M, dtype=np.float64).T)

    def chunk(s, e):
        _update_rows(Y, X, Mt, alpha, s, e)
        return Y[s:e].T @ Y[s:e] if Z is None else Z[s:e].T @ Y[s:e]

    return _summed(run_parallel([lambda s=s, e=e: chunk(s, e) for s, e in _chunks(n)]),
                   symmetric=Z is None)


def block_triangular(X, U):
    """``X @ U`` written over a C-contiguous float64 block X (n, b), U (b, b) upper triangular.

    One in-place triangular multiply (trmm) per chunk: half the work of a general product and no
    new block. Returns `X`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, U = rng.normal(size=(300, 4)), np.triu(rng.normal(size=(4, 4)))
    >>> Y = X.copy()
    >>> bool(np.allclose(block_triangular(Y, U), X @ U))
    True
    """
    if not (X.flags.c_contiguous and X.dtype == np.float64):
        raise ValueError("block_triangular needs a C-contiguous float64 block.")
    n = X.shape[0]
    if X.shape[1] == 0 or n == 0:
        return X
    # X^T (Fortran-contiguous per row chunk) := U^T X^T, U^T lower triangular
    Lt = np.asfortranarray(np.triu(np.asarray(U, dtype=np.float64)).T)

    def multiply(s, e):
        dtrmm(1.0, Lt, X[s:e].T, side=0, lower=1, overwrite_b=True)

    if n < 2 * CHUNK_ROWS:
        with one_blas_thread():
            multiply(0, n)
    else:
        run_parallel([lambda s=s, e=e: multiply(s, e) for s, e in _chunks(n)])
    return X
