"""Invariant checks shared by the tests (in the spirit of pyamg's assert_is_mis)."""

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components


def assert_symmetric(A, atol=0.0):
    """A is square with a symmetric pattern and symmetric values."""
    A = sp.csr_matrix(A)
    assert A.shape[0] == A.shape[1]
    pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    assert (pattern != pattern.T).nnz == 0, "pattern is not symmetric"
    diff = abs(A - A.T)
    assert diff.nnz == 0 or diff.max() <= atol, f"values not symmetric: {diff.max()}"


def assert_spanning_tree(n, u, v):
    """The edges (u, v) form a spanning tree on n nodes: n - 1 edges, connected, no repeats."""
    u, v = np.asarray(u), np.asarray(v)
    assert u.size == n - 1, f"{u.size} edges, a spanning tree on {n} nodes has {n - 1}"
    keys = np.minimum(u, v) * n + np.maximum(u, v)
    assert np.unique(keys).size == keys.size, "repeated edge"
    A = sp.coo_matrix((np.ones(u.size), (u, v)), shape=(n, n))
    assert connected_components(A, directed=False)[0] == 1, "not connected"


def assert_is_partition(labels, n):
    """labels assigns each of n items one integer cluster; clusters are 0..k-1, none empty."""
    labels = np.asarray(labels)
    assert labels.shape == (n,)
    assert np.issubdtype(labels.dtype, np.integer)
    k = labels.max() + 1
    assert labels.min() == 0 and np.all(np.bincount(labels, minlength=k) > 0)


def edge_set(graph):
    u, v, _, _ = graph.edges()
    return set(zip(u.tolist(), v.tolist()))
