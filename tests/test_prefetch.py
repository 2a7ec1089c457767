"""The software prefetch of the numba kernels: a hint that changes no value."""

import numpy as np
import pytest
from numba import njit
from numba.core.errors import TypingError

from graphclust._prefetch import prefetch, prefetch_row


@njit
def _sum_ahead(a, ahead):
    s = 0.0
    for i in range(a.size):
        if i + ahead < a.size:
            prefetch(a, i + ahead)
        s += a[i]
    return s


@njit
def _gather_rows(X, rows, ahead):
    out = np.zeros(X.shape[1])
    for r in range(rows.size):
        if r + ahead < rows.size:
            prefetch_row(X, rows[r + ahead])
        for t in range(X.shape[1]):
            out[t] += X[rows[r], t]
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.uint8])
def test_prefetch_changes_no_value(dtype):
    a = (np.arange(1000) % 97).astype(dtype)
    assert _sum_ahead(a, 8) == _sum_ahead(a, 10**6) == float(a.astype(np.float64).sum())


@pytest.mark.parametrize("dim", [1, 3, 16, 50, 65])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_prefetch_row_changes_no_value(dim, index_dtype):
    rng = np.random.default_rng(dim)
    X = rng.random((300, dim)).astype(np.float32)
    rows = rng.integers(0, 300, size=500).astype(index_dtype)
    np.testing.assert_array_equal(_gather_rows(X, rows, 4), _gather_rows(X, rows, 10**6))
    np.testing.assert_allclose(_gather_rows(X, rows, 4), X[rows].astype(np.float64).sum(axis=0))


def test_prefetch_refuses_what_it_cannot_address():
    @njit
    def bad(X):
        prefetch(X, 0)  # a 2-d array with one index

    with pytest.raises(TypingError):
        bad(np.zeros((3, 3)))
