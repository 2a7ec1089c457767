"""Dense references of the Bethe Hessian and the non-backtracking matrix (small graphs only).

Written entry by entry from the definitions, independently of `_bethe.py`, for the tests.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["bethe_hessian_reference", "nonbacktracking_matrix_reference"]


def bethe_hessian_reference(A, r, *, weighted=False):
    """Dense H(r), entry by entry (binary: (r^2 - 1) I - r A + D; weighted: Saade et al. 2015).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import bethe_hessian_reference
    >>> bethe_hessian_reference(np.array([[0, 1.0], [1.0, 0]]), 2.0).tolist()
    [[4.0, -2.0], [-2.0, 4.0]]
    """
    A = np.asarray(sp.csr_matrix(A).toarray(), dtype=np.float64)
    n = A.shape[0]
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            w = A[i, j]
            if i == j or w == 0:
                continue
            if weighted:
                H[i, j] = -r * w / (r * r - w * w)
                H[i, i] += w * w / (r * r - w * w)
            else:
                H[i, j] = -r * w
                H[i, i] += w
        H[i, i] += 1.0 if weighted else r * r - 1.0
    return H


def nonbacktracking_matrix_reference(A):
    """The 2m x 2m non-backtracking matrix B_(u->v),(x->y) = 1[v = x] 1[u != y] of a simple graph.

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust.kernels import nonbacktracking_matrix_reference
    >>> nonbacktracking_matrix_reference(nx.to_scipy_sparse_array(nx.cycle_graph(3))).shape
    (6, 6)
    """
    A = sp.csr_matrix(A)
    coo = sp.triu(A, 1).tocoo()
    darts = [(int(u), int(v)) for u, v in zip(coo.row, coo.col)]
    darts += [(v, u) for u, v in darts]
    index = {e: i for i, e in enumerate(darts)}
    B = np.zeros((len(darts), len(darts)))
    for (u, v), i in index.items():
        for y in A.indices[A.indptr[v]:A.indptr[v + 1]]:
            if y != u:
                B[i, index[(v, int(y))]] = 1.0
    return B
