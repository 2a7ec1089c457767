"""An order of the rows that does not depend on the order they came in.

The key of a row is a 64-bit hash of its non-zero entries (column, bit pattern of the value in
single precision after an exact power-of-two scaling, so that X and X.astype(np.float32), or X
and 1e300 X, get one order; splitmix64 mixing), so equal rows get equal keys wherever they
stand, and the order it gives is pseudo-random with respect to the geometry. Rows with equal
keys are, but for a 2^-64 coincidence, rows equal in single precision: their relative order is
the input's. Its users: the exact kNN search (`nearest_neighbors`), whose tied distances are
broken in this order, and `graphclust.cluster.StabilityClustering`, which fits in it
(`cluster/_row_order.py` says why).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from .._hashing import GOLDEN, splitmix64
from ._scale import largest_magnitude

__all__ = ["canonical_order", "row_keys"]


@njit(cache=True, parallel=True)
def _row_keys(indptr, indices, bits, values):
    n = indptr.size - 1
    out = np.empty(n, dtype=np.uint64)
    for i in prange(n):
        h = GOLDEN
        for p in range(indptr[i], indptr[i + 1]):
            if values[p] != 0.0:  # -0.0 and 0.0 alike: explicit zeros are not entries
                h = splitmix64(h ^ splitmix64(np.uint64(indices[p]) * GOLDEN
                                              ^ np.uint64(bits[p])))
        out[i] = h
    return out


@njit(cache=True, parallel=True)
def _dense_row_keys(bits, values):
    # `_row_keys` of the same rows as CSR: the non-zeros in column order, without building it
    n, d = values.shape
    out = np.empty(n, dtype=np.uint64)
    for i in prange(n):
        h = GOLDEN
        for j in range(d):
            if values[i, j] != 0.0:
                h = splitmix64(h ^ splitmix64(np.uint64(j) * GOLDEN ^ np.uint64(bits[i, j])))
        out[i] = h
    return out


def canonical_order(X):
    """A permutation of the rows of X, the same for any order of the same rows.

    Parameters
    ----------
    X : array (n, d) or sparse matrix

    Returns
    -------
    order : int64 array (n,), ``X[order]`` is in the canonical order

    Examples
    --------
    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(6, 3))
    >>> p = np.array([3, 0, 5, 1, 4, 2])
    >>> bool((X[canonical_order(X)] == X[p][canonical_order(X[p])]).all())
    True
    """
    return np.argsort(row_keys(X), kind="stable").astype(np.int64)


def row_keys(X):
    """The key of each row of X (uint64, `canonical_order` sorts by it): equal rows, equal keys.

    Rows equal in single precision after one exact power-of-two scaling of X have equal keys;
    other rows have equal keys only by a 2^-64 coincidence.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]])
    >>> k = row_keys(X)
    >>> bool(k[0] == k[2]), bool(k[0] == k[1])
    (True, False)
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:  # sorted, summed indices: one order of each row's terms
            X = X.copy()
            X.sum_duplicates()
        values = _single(X.data, _scale(X.data))
        keys = _row_keys(X.indptr, X.indices, values.view(np.uint32), values)
    else:
        # dense rows a block at a time, their non-zeros hashed as `_row_keys` hashes CSR rows:
        # the same keys for X and sp.csr_matrix(X)
        X = np.asarray(X)
        scale = _scale(X)
        keys = np.empty(X.shape[0], dtype=np.uint64)
        for a in range(0, X.shape[0], _CHUNK):
            block = _single(X[a:a + _CHUNK], scale)
            keys[a:a + _CHUNK] = _dense_row_keys(block.view(np.uint32), block)
    return keys


#: Rows per block of the dense keys (and of `rows_as_float64`'s gathers).
_CHUNK = 65536


def _scale(values):
    """2^-e with 2^e <= max |x| < 2^(e+1): exact; the largest value lands in [1, 2), so nothing
    overflows float32 (values under 2^-149 of the largest round to 0 there, as equal rows)."""
    big = largest_magnitude(values)
    if not big > 0 or not np.isfinite(big):
        return 1.0
    # a subnormal maximum would ask for more than 2^1023: the largest power is enough there
    return float(np.ldexp(1.0, min(-int(np.floor(np.log2(big))), 1023)))


def _single(values, scale):
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64) * scale, dtype=np.float32)
