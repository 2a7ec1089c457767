"""Invariant helpers and fixtures shared by the spectrum / Laplacian / AHK / NJW tests."""

import numpy as np


def assert_orthonormal(V, M=None, atol=1e-8):
    """Columns of V are orthonormal in the inner product diag(M) (identity when None)."""
    G = V.T @ (V if M is None else V * M[:, None])
    np.testing.assert_allclose(G, np.eye(V.shape[1]), atol=atol)


def sin_theta(U, V):
    """Largest principal-angle sine between the column spaces of U and V (orthonormal columns)."""
    Qu, _ = np.linalg.qr(U)
    Qv, _ = np.linalg.qr(V)
    s = np.linalg.svd(Qu.T @ Qv, compute_uv=False)
    return float(np.sqrt(max(0.0, 1.0 - s.min() ** 2)))


def assert_is_partition(labels, n, k):
    """labels is an (n,) int array using exactly the values 0..k-1 (no NaN, no gaps)."""
    labels = np.asarray(labels)
    assert labels.shape == (n,)
    assert np.issubdtype(labels.dtype, np.integer)
    assert set(np.unique(labels).tolist()) == set(range(k))
