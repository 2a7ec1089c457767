"""The consensus of several partitions: the finest common refinement, in connected pieces.

`consensus_pieces` intersects the fine Leiden runs of the scale scan (`_markov_selection`) and
absorbs the small pieces where the runs disagree; its parts come from one union-find pass
(`_connected_parts`) and the weights between them from one pass over the edges
(`_lumped_weights`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from ._leiden import _components_within, _members
from ._partition_quality import canonical_labels, label_dtype

__all__ = ["absorbed_parts", "consensus_pieces", "lumped_weights"]


def consensus_pieces(W, partitions, min_size=1):
    """The finest common refinement of several partitions, its small pieces absorbed.

    Points that every partition puts together form a piece (the intersection of the
    partitions; the co-association matrix restricted to 1), split into its connected parts in
    W: the intersection of connected clusters need not be connected, and a point whose
    neighbours all went elsewhere would stay, stranded, in a large piece (every cluster merged
    from it would then be internally disconnected, its mixing time infinite). Pieces of fewer
    than `min_size` points are the points the runs disagree on; each, smallest first, joins the
    piece it has the largest edge weight to (a deterministic rule, so the result depends on the
    runs only through where they disagree), so every piece stays connected. Every piece ends up
    a subset (up to absorbed points) of one cluster of every partition, so the flows of the
    pieces give the flows of every partition.

    Parameters
    ----------
    W : sparse symmetric matrix (n, n)
    partitions : sequence of int arrays (n,)
    min_size : int

    Returns
    -------
    pieces : int array (n,), labels 0..m-1

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.ones((6, 6)) - np.eye(6))
    >>> consensus_pieces(W, [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]]).tolist()
    [0, 0, 1, 2, 2, 2]
    >>> consensus_pieces(W, [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]], min_size=2).tolist()
    [0, 0, 1, 1, 1, 1]
    """
    # the intersection's connected parts in one pass: an edge joins when every run agrees
    key = _connected_parts(sp.csr_matrix(W), np.column_stack([np.asarray(f, dtype=np.int64)
                                                              for f in partitions]))
    size = np.bincount(key).astype(np.float64)
    m = size.size
    if m == 1 or size.min() >= min_size:
        return canonical_labels(key)
    A = lumped_weights(sp.csr_matrix(W), key, m)
    # smallest first: the first piece as large as min_size ends the joins
    root = absorbed_parts(A, size, until=lambda q: size[q] >= min_size)
    return canonical_labels(root[key])


def lumped_weights(W, labels, m):
    """Dense ``H^T W H`` (m x m) of a symmetric CSR W and labels 0..m-1 (H their indicator),
    its diagonal 0: the weight between every two parts (`_lumped_weights`)."""
    # the parts are read at random once per edge: small keys (int32 instead of int64: 1.2 s
    # -> 0.7 s at 10^6 nodes in a random order), the same sums in the same order
    A = _lumped_weights(W.indptr, W.indices, W.data, np.asarray(labels).astype(label_dtype(m)),
                        m)
    np.fill_diagonal(A, 0.0)
    return A


def absorbed_parts(A, size, absorbable=None, *, until=None):
    """Each part's part after parts, smallest first, joined their heaviest neighbours: part
    q joins t, the live part it shares the most weight with in `A` (dense, symmetric, m x m),
    when it has an edge to one and ``absorbable(q, t)`` (default: always); the joins end at
    the first q (in order of the sizes given) with ``until(q)``. `A` and `size` (the parts'
    sizes) are updated in place as parts join, so both callables read the current sizes.
    Returns ``root`` (m,): the part each part ended in.

    Examples
    --------
    >>> import numpy as np
    >>> A = np.array([[0, 1, 0], [1, 0, 3], [0, 3, 0]], dtype=float)  # a chain 0 - 1 - 2
    >>> size = np.array([5, 1, 4])
    >>> absorbed_parts(A, size, until=lambda q: size[q] >= 2).tolist(), size.tolist()
    ([0, 2, 2], [5, 0, 5])
    """
    m = size.size
    root = np.arange(m)
    alive = np.ones(m, dtype=bool)
    for q in np.argsort(size, kind="stable"):
        if until is not None and until(q):
            break
        row = np.where(alive, A[q], 0.0)
        row[q] = 0.0
        t = int(np.argmax(row))
        if row[t] <= 0 or (absorbable is not None and not absorbable(q, t)):
            continue  # no edge to another part, or kept: it stays on its own
        A[t] += A[q]
        A[:, t] += A[:, q]
        A[t, t] = 0.0
        A[q] = 0.0
        A[:, q] = 0.0
        size[t] += size[q]
        size[q] = 0
        alive[q] = False
        root[q] = t
    while True:
        nxt = root[root]
        if np.array_equal(nxt, root):
            return root
        root = nxt


@njit(cache=True, parallel=True)
def _lumped_weights(indptr, indices, data, key, m):
    """Dense ``H^T W H`` (m x m) of a symmetric CSR W and labels `key` (H their indicator).

    scipy's numbers bit for bit when W's rows are sorted and W is exactly symmetric: A[r, q]
    sums, over the nodes j of q in ascending order, the weight from j to the nodes of r (in
    the row's order), as scipy's two sparse products do. Columns of A over the threads, with
    no n x m intermediate (scipy's took 0.8 s at 10^6 nodes).
    """
    start, members = _members(key, m)
    A = np.zeros((m, m))
    for q in prange(m):
        part = np.zeros(m)
        seen = np.zeros(m, dtype=np.bool_)
        touched = np.empty(m, dtype=np.int64)
        for t in range(start[q], start[q + 1]):
            j = members[t]
            nt = 0
            for p in range(indptr[j], indptr[j + 1]):
                r = key[indices[p]]
                if not seen[r]:
                    seen[r] = True
                    touched[nt] = r
                    nt += 1
                part[r] += data[p]
            for u in range(nt):
                r = touched[u]
                A[r, q] += part[r]
                part[r] = 0.0
                seen[r] = False
    return A


def _connected_parts(W, labels):
    """Labels refined so that each is connected in W (edges between equal labels only).

    `labels` (n,), or (n, k) for the connected parts of the common refinement of k labellings.

    Numbered by each part's smallest node, as scipy's ``connected_components`` numbers them; one
    union-find pass over W's rows (`_leiden._components_within`), where building the within-label
    subgraph for scipy took 2 s at 10^6 nodes.
    """
    W = sp.csr_matrix(W)
    if W.nnz and W.data.min() <= 0:  # only positive weights join
        W = W.copy()
        W.data[W.data < 0] = 0.0
        W.eliminate_zeros()
    labels = np.asarray(labels)
    # read at random once per edge: in the smallest type that holds them (cache, not bandwidth)
    small = label_dtype(labels.max() + 1 if labels.size else 1)
    parts, _ = _components_within(W.indptr, W.indices, np.ascontiguousarray(labels, dtype=small))
    return parts
