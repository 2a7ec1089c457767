"""An order of the rows that does not depend on the order they came in.

`StabilityClustering` fits on its points in this order and maps every result back, so a
permutation of the rows permutes the labels and changes nothing else. Without it the row order
entered the fit twice: NN-descent's candidate lists and the Leiden runs' node visits both follow
the node numbering, so a row permutation moved 0.8-1.2 % of MNIST's labels
(docs/model_selection.md, *Row order*).

The key of a row is two fixed random projections of it, computed row by row in one fixed
order of the columns (a row's key is the same floating-point number wherever the row stands;
a BLAS product does not promise that), the data scaled by a power of two first so that no
projection overflows. Rows with equal keys are, but for a probability-zero coincidence, equal
rows: their relative order is the input's, and swapping equal points changes no graph.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

__all__ = ["canonical_order"]

_N_KEYS = 2


@njit(cache=True, parallel=True)
def _dense_keys(X, R, scale):
    n, d = X.shape
    out = np.empty((n, R.shape[1]))
    for i in prange(n):
        for j in range(R.shape[1]):
            s = 0.0
            for t in range(d):
                s += (X[i, t] * scale) * R[t, j]
            out[i, j] = s
    return out


@njit(cache=True, parallel=True)
def _csr_keys(indptr, indices, data, R, scale):
    n = indptr.size - 1
    out = np.empty((n, R.shape[1]))
    for i in prange(n):
        for j in range(R.shape[1]):
            s = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                s += (data[p] * scale) * R[indices[p], j]
            out[i, j] = s
    return out


def canonical_order(X):
    """A permutation of the rows of X, the same for any order of the same rows.

    Parameters
    ----------
    X : array (n, d) or sparse matrix, finite

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
    d = X.shape[1]
    R = np.random.default_rng(20261124).normal(size=(d, _N_KEYS))
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if not X.has_canonical_format:  # sorted, summed indices: one order of each row's terms
            X = X.copy()
            X.sum_duplicates()
        big = float(np.abs(X.data).max()) if X.nnz else 0.0
        keys = _csr_keys(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64), R,
                         _power_of_two_below(big))
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        big = float(np.abs(X).max()) if X.size else 0.0
        keys = _dense_keys(X, R, _power_of_two_below(big))
    return np.lexsort(keys.T[::-1]).astype(np.int64)


def _power_of_two_below(big):
    """2^-e with 2^e <= big < 2^(e+1): scaling by it is exact and brings the data to [1, 2)."""
    if not big > 0 or not np.isfinite(big):
        return 1.0
    return float(2.0 ** -np.floor(np.log2(big)))
