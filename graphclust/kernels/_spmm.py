"""Sparse matrix times dense block, fused with the shift: ``P - alpha * (S @ P)``.

The block solves of the consistency kernel spend most of their time in this product. A
row-major numba loop (rows in chunks over the threads) reads each nonzero of S once for the
whole block, where scipy's ``csr_matvecs`` streams the block column-wise; for a single column
scipy's ``csr_matvec`` is as good, so `shifted_product` picks by block width (measurements:
``docs/consistency.md``). Fusing the shift also saves one temporary of the block's size.
Blocks of up to eight columns keep a row's sums in registers, and blocks that fit in the
last-level cache are read without prefetches (``docs/scaling.md``, *Narrow products*).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._prefetch import prefetch_row

__all__ = ["shifted_product", "csr_block_update", "chebyshev_step", "cg_update", "cg_direction",
           "ritz_residual", "symmetric_permutation", "dense_rows", "NUMBA_MIN_COLUMNS"]

#: `shifted_product`'s blocks narrower than this go through scipy (faster for one column; from
#: two on the numba product sums in registers, docs/scaling.md, *Narrow products*).
NUMBA_MIN_COLUMNS = 2
#: `cg_update` and `cg_direction` fuse their passes from this many columns (numpy below).
FUSED_MIN_COLUMNS = 4
#: Rows ahead whose neighbours' block rows the product prefetches: at 10^6 x 40 in RCM order,
#: 0.41 -> 0.30 s per product at 2, 0.59 -> 0.45 s at 1 (`/work/scratch/s34/spmm.py`).
AHEAD = 2
#: Blocks of at most this many bytes are read without prefetches: they stay in the last-level
#: cache, where a prefetch costs as much as the read it hides (docs/scaling.md, *Narrow products*).
PREFETCH_MIN_BYTES = 32 * 2**20


@njit(cache=True, inline="always")
def _row_product(indptr, indices, data, X, i, hi, acc, fetch):
    # acc = row i of M @ X; first, with `fetch`, the block rows that row i + AHEAD reads are
    # prefetched (`graphclust._prefetch`), when that row is still in this thread's range [.., hi)
    b = acc.size
    if fetch and i + AHEAD < hi:
        for t in range(indptr[i + AHEAD], indptr[i + AHEAD + 1]):
            prefetch_row(X, indices[t])
    if 0 < b <= 4:
        _narrow_row4(indptr, indices, data, X, i, acc)
    elif 4 < b <= 8:
        _narrow_row8(indptr, indices, data, X, i, acc)
    else:
        for j in range(b):
            acc[j] = 0.0
        for t in range(indptr[i], indptr[i + 1]):
            k = indices[t]
            v = data[t]
            for j in range(b):
                acc[j] += v * X[k, j]


# Narrow blocks: the sums in scalars (registers) instead of `acc` (memory, whose every update
# waits on the last one's store), four or eight of them whatever the width, the missing
# columns repeating the last one (read from the same cache line, never written). Each sum
# adds the same products in the same order as the loop over `acc`: the same numbers, bit for
# bit. With the prefetches left out, 1.8 times as fast at 1 to 4 columns and 1.4 times at 5
# to 8 on a block in cache (docs/scaling.md, *Narrow products*); from about 12 columns on the
# scalars would spill, and the loop over `acc` is as fast.
@njit(cache=True, inline="always")
def _narrow_row4(indptr, indices, data, X, i, acc):
    b = acc.size
    j1, j2, j3 = min(1, b - 1), min(2, b - 1), min(3, b - 1)
    s0 = s1 = s2 = s3 = 0.0
    for t in range(indptr[i], indptr[i + 1]):
        k = indices[t]
        v = data[t]
        s0 += v * X[k, 0]
        s1 += v * X[k, j1]
        s2 += v * X[k, j2]
        s3 += v * X[k, j3]
    sums = (s0, s1, s2, s3)
    for j in range(b):
        acc[j] = sums[j]


@njit(cache=True, inline="always")
def _narrow_row8(indptr, indices, data, X, i, acc):
    b = acc.size  # 5 to 8
    j5, j6, j7 = min(5, b - 1), min(6, b - 1), min(7, b - 1)
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for t in range(indptr[i], indptr[i + 1]):
        k = indices[t]
        v = data[t]
        s0 += v * X[k, 0]
        s1 += v * X[k, 1]
        s2 += v * X[k, 2]
        s3 += v * X[k, 3]
        s4 += v * X[k, 4]
        s5 += v * X[k, j5]
        s6 += v * X[k, j6]
        s7 += v * X[k, j7]
    sums = (s0, s1, s2, s3, s4, s5, s6, s7)
    for j in range(b):
        acc[j] = sums[j]


@njit(cache=True, parallel=True)
def csr_block_update(indptr, indices, data, X, B, alpha, out):
    """out = B + alpha * (M @ X) for a CSR matrix M and row-major blocks; `B` may be `out`."""
    # rows in chunks over the threads; each row is summed in the same order whatever the
    # thread count, so the result is bitwise the same on 1 or many threads
    n = indptr.size - 1
    b = X.shape[1]
    fetch = X.nbytes > PREFETCH_MIN_BYTES
    chunk = 2048
    for c in prange((n + chunk - 1) // chunk):
        acc = np.empty(b)
        hi = min(n, (c + 1) * chunk)
        for i in range(c * chunk, hi):
            _row_product(indptr, indices, data, X, i, hi, acc, fetch)
            for j in range(b):
                out[i, j] = B[i, j] + alpha * acc[j]
    return out


#: Row ranges of `chebyshev_step`, each with its own segment sums: a fixed count, so the sums
#: are added in the same order (bitwise the same result) on any number of threads.
STEP_PARTS = 64


@njit(cache=True, parallel=True)
def chebyshev_step(indptr, indices, data, X, Y, a, c, seg, w, n_seg):
    """Y <- a (M @ X) + c Y in place, and the sums ``S[p] = sum_{i: seg_i = p} w_i Y_new[i]``.

    One step of a three-term recurrence (Chebyshev: a = 2, c = -1) fused with the new block's
    product by a matrix with one nonzero per row (``B^T Y`` for B[i, seg_i] = w_i), so the
    moments ``B^T T_k(M) B`` cost O(n b) beside the sparse product, not O(n b^2). Returns S
    (n_seg, b). X and Y must be distinct arrays; with c = 0, Y's old entries are not read.
    """
    n = indptr.size - 1
    b = X.shape[1]
    fetch = X.nbytes > PREFETCH_MIN_BYTES
    parts = STEP_PARTS
    step = (n + parts - 1) // parts
    acc = np.zeros((parts, n_seg, b))
    for q in prange(parts):
        lo = q * step
        hi = min(n, lo + step)
        row = np.empty(b)
        for i in range(lo, hi):
            _row_product(indptr, indices, data, X, i, hi, row, fetch)
            p = seg[i]
            wi = w[i]
            for j in range(b):
                y = a * row[j]
                if c != 0.0:
                    y += c * Y[i, j]
                Y[i, j] = y
                acc[q, p, j] += wi * y
    out = np.zeros((n_seg, b))
    for q in range(parts):
        for p in range(n_seg):
            for j in range(b):
                out[p, j] += acc[q, p, j]
    return out


@njit(cache=True, parallel=True)
def _dense_rows(indptr, indices, data, out):
    for i in prange(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = 0.0
        for t in range(indptr[i], indptr[i + 1]):  # duplicates added in order, as scipy's
            out[i, indices[t]] += data[t]


def dense_rows(A):
    """``A.toarray()`` of a sparse matrix (float64, C order), its rows over the threads.

    A tall block's first touch is its cost: at 10^6 x 48 scipy's `toarray` took 0.9 s, most of
    it the page faults of 384 MB of fresh memory on one core (docs/scaling.md, *The flows'
    fresh blocks touched over the threads*). The same numbers bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> A = sp.random(40, 6, density=0.3, random_state=0, format="csr")
    >>> bool(np.array_equal(dense_rows(A), A.toarray()))
    True
    """
    import scipy.sparse as sp

    A = sp.csr_matrix(A, dtype=np.float64)
    out = np.empty(A.shape)
    _dense_rows(A.indptr, A.indices, A.data, out)
    return out


@njit(cache=True, parallel=True)
def _permuted_arrays(indptr, indices, data, order, inv):
    n = order.size
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        ptr[i + 1] = ptr[i] + indptr[order[i] + 1] - indptr[order[i]]
    idx = np.empty(ptr[n], dtype=indices.dtype)
    val = np.empty(ptr[n], dtype=data.dtype)
    for i in prange(n):
        s = indptr[order[i]]
        for t in range(ptr[i + 1] - ptr[i]):
            idx[ptr[i] + t] = inv[indices[s + t]]
            val[ptr[i] + t] = data[s + t]
    return ptr, idx, val


def symmetric_permutation(W, order):
    """``W[order][:, order]`` of a square sparse matrix as CSR, rows over the threads.

    scipy's arrays bit for bit (each row's entries keep their order), five times faster at
    10^6 nodes on this project's 2-core machine (scipy's two fancy indexings run on one core
    and build an intermediate matrix). `order` must be a permutation of the n nodes.

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> W = sp.random(30, 30, density=0.2, random_state=0, format="csr")
    >>> o = np.random.default_rng(0).permutation(30)
    >>> bool((symmetric_permutation(W, o) != W[o][:, o]).nnz == 0)
    True
    """
    import scipy.sparse as sp

    W = sp.csr_matrix(W)
    order = np.asarray(order, dtype=np.int64)
    inv = np.empty_like(order)
    inv[order] = np.arange(order.size)
    ptr, idx, val = _permuted_arrays(W.indptr, W.indices, W.data, order, inv)
    return sp.csr_matrix((val, idx, ptr), shape=W.shape)


def shifted_product(S, P, alpha, out=None):
    """Return ``P - alpha * (S @ P)`` for a CSR matrix `S` (n, n) and an (n,) or (n, b) array.

    `out`, a C-contiguous float64 array of P's shape, receives the result when the block takes
    the numba path (at least `NUMBA_MIN_COLUMNS` columns): a caller that recycles its blocks
    saves a fresh allocation per product (30-40 ms at 10^6 x 39, docs/scaling.md).

    Examples
    --------
    >>> import numpy as np
    >>> import scipy.sparse as sp
    >>> S = sp.random(50, 50, density=0.1, random_state=0, format="csr")
    >>> P = np.random.default_rng(0).normal(size=(50, 8))
    >>> bool(np.allclose(shifted_product(S, P, 0.9), P - 0.9 * (S @ P)))
    True
    """
    if P.ndim == 1 or P.shape[1] < NUMBA_MIN_COLUMNS:
        return P - alpha * (S @ P)
    P = np.ascontiguousarray(P, dtype=np.float64)
    if out is None:
        out = np.empty_like(P)
    elif out.shape != P.shape or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape {P.shape}; got "
                         f"{out.dtype} of shape {out.shape}.")
    return csr_block_update(S.indptr, S.indices, S.data, P, P, -float(alpha), out)


@njit(cache=True)
def _cg_update(X, R, P, AP, step):
    n, b = X.shape
    rr = np.zeros(b)
    for i in range(n):
        for j in range(b):
            X[i, j] += step[j] * P[i, j]
            r = R[i, j] - step[j] * AP[i, j]
            R[i, j] = r
            rr[j] += r * r
    return rr


@njit(cache=True)
def _cg_direction(P, R, beta):
    n, b = P.shape
    for i in range(n):
        for j in range(b):
            P[i, j] = beta[j] * P[i, j] + R[i, j]


def cg_update(X, R, P, AP, step):
    """In place: ``X += P * step``, ``R -= AP * step``; return the squared column norms of R.

    One pass over the four (n, b) blocks instead of four temporaries (numba for C-contiguous
    float64 blocks, numpy otherwise).
    """
    if _fusable(X, R, P, AP):
        return _cg_update(X, R, P, AP, np.ascontiguousarray(step, dtype=np.float64))
    X += P * step
    R -= AP * step
    return np.einsum("ij,ij->j", R, R)


def cg_direction(P, R, beta):
    """In place: ``P <- P * beta + R`` (per column); returns P."""
    if _fusable(P, R):
        _cg_direction(P, R, np.ascontiguousarray(beta, dtype=np.float64))
        return P
    P *= beta
    P += R
    return P


@njit(cache=True, parallel=True)
def _ritz_residual(AX, X, theta, R):
    n, b = X.shape
    chunk = 4096
    chunks = (n + chunk - 1) // chunk
    partial = np.zeros((chunks, b))
    for c in prange(chunks):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            for j in range(b):
                r = AX[i, j] - X[i, j] * theta[j]
                R[i, j] = r
                partial[c, j] += r * r
    # the chunks' sums in a fixed order: the same on any number of threads
    total = np.zeros(b)
    for c in range(chunks):
        for j in range(b):
            total[j] += partial[c, j]
    return total


def ritz_residual(AX, X, theta, R):
    """``R = AX - X * theta`` (per column) into `R`; returns the column norms of R.

    One pass over the blocks (rows may be strided, e.g. column slices of a wider block), where
    numpy needs a temporary and a second pass for the norms.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X, AX, theta = rng.normal(size=(30, 4)), rng.normal(size=(30, 4)), rng.normal(size=4)
    >>> R = np.empty((30, 4))
    >>> bool(np.allclose(ritz_residual(AX, X, theta, R), np.linalg.norm(AX - X * theta, axis=0)))
    True
    """
    theta = np.ascontiguousarray(theta, dtype=np.float64)
    if X.dtype == AX.dtype == R.dtype == np.float64 and X.ndim == 2:
        return np.sqrt(_ritz_residual(AX, X, theta, R))
    np.subtract(AX, X * theta, out=R)
    return np.linalg.norm(R, axis=0)


def _fusable(*arrays):
    return all(
        a.ndim == 2 and a.dtype == np.float64 and a.flags.c_contiguous
        and a.shape == arrays[0].shape
        for a in arrays
    ) and arrays[0].shape[1] >= FUSED_MIN_COLUMNS
