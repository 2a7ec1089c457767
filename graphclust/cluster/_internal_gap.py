"""The spectral gap 1 - lambda_2(S_C) of a cluster's own walk, or a bound that decides it.

The metastability tier of the selection (`_markov_selection`) asks of every cluster C of every
candidate whether t_esc(C) (1 - lambda_2(S_C)) > 1, S_C = D_C^-1/2 W_CC D_C^-1/2 the
normalised adjacency of the subgraph on C. Two facts make that question cheap and exact:

* sqrt(d_C) is the top eigenvector of S_C (eigenvalue 1) exactly, so lambda_2 is the largest
  eigenvalue of S_C on the orthogonal complement of sqrt(d_C): a one-eigenvalue Lanczos on the
  deflated operator.
* Every Ritz value of a symmetric operator is a lower bound of the eigenvalue of its rank
  (Courant-Fischer), so after any Lanczos step 1 - theta is an *upper* bound of the gap. Once
  it falls to the cluster's threshold 1 / t_esc, the cluster fails the bicriterion for certain,
  whatever a converged solve would add (on the 10^6 scan of docs/scaling.md: 6-33 steps, where
  a converged solve takes 100-180 products).

A cluster not shown to fail gets its gap to tolerance (`_converged_gap`: ARPACK for the three
largest eigenvalues of S_C + I, tol 1e-4). Two pairs at tol 1e-3, the previous solve, stopped on
a Ritz value of lambda_3 when lambda_2 and lambda_3 are close and overstated the gap by up to
56 % on that scan; three pairs at 1e-4 matched a five-pair solve at 1e-7 to four digits on
every one of its 58 clusters (docs/model_selection.md, *The internal gaps, decided by bounds*).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import eigvalsh_tridiagonal

from ..kernels import normalized_adjacency

__all__ = ["internal_gap"]

#: Clusters up to this size are solved densely.
DENSE_MAX = 600
#: Lanczos steps spent on proving a failure before the converged solve.
PROOF_STEPS = 48


def internal_gap(W, nodes, *, below=None, tol=1e-4):
    """1 - lambda_2 of the normalised adjacency of the subgraph of W on `nodes`.

    Parameters
    ----------
    W : sparse symmetric matrix (n, n), CSR
    nodes : int array, the cluster (sorted)
    below : float, optional
        The cluster's threshold 1 / t_esc. When an upper bound of the gap reaches it, that
        bound is returned (``exact`` False): the cluster fails t_esc * gap > 1 for certain.
    tol : float
        ARPACK tolerance of the converged solve.

    Returns
    -------
    gap : float
        1.0 for clusters of fewer than 3 nodes, 0.0 when a node of the cluster has no edge
        inside it.
    exact : bool
        False when `gap` is an upper bound at or under `below`.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.ones((4, 4)) - np.eye(4))
    >>> gap, exact = internal_gap(W, np.arange(4))   # K4: lambda_2 = -1/3
    >>> round(gap, 6), exact
    (1.333333, True)
    """
    m = nodes.size
    if m < 3:
        return 1.0, True
    S, d = normalized_adjacency(W[nodes][:, nodes])
    if (d <= 0).any():  # a node with no edge inside the cluster
        return 0.0, True
    if m <= DENSE_MAX:
        ev = np.linalg.eigvalsh(S.toarray())
        return float(max(1.0 - ev[-2], 0.0)), True
    if below is not None:
        bound = _lanczos_bound(S, np.sqrt(d), below)
        if bound is not None:
            return bound, False
    return _converged_gap(S, d, tol), True


def _start(m):
    """The deterministic start vector of both solvers (no random state to thread through)."""
    return np.cos(np.arange(m, dtype=np.float64))


def _lanczos_bound(S, top, below, steps=PROOF_STEPS):
    """1 - theta once it is <= `below` (theta: the top Ritz value of S on top^perp), else None.

    Full reorthogonalisation against the kept basis (at most `steps` + 1 vectors of the
    cluster's size): the steps are few, and the bound is only a bound if the basis stays
    orthonormal.
    """
    m = top.size
    u = top / np.linalg.norm(top)
    Q = np.empty((steps + 1, m))
    q = _start(m)
    q -= u * (u @ q)
    Q[0] = q / np.linalg.norm(q)
    a = np.empty(steps)
    b = np.empty(steps)
    for j in range(steps):
        w = S @ Q[j]
        w -= u * (u @ w)
        a[j] = Q[j] @ w
        # classical Gram-Schmidt against the basis so far (and u), a second pass only when
        # the first cancelled most of w ("twice is enough", Kahan and Parlett)
        for _ in range(2):
            before = np.linalg.norm(w)
            w -= Q[:j + 1].T @ (Q[:j + 1] @ w)
            w -= u * (u @ w)
            b[j] = np.linalg.norm(w)
            if b[j] > 0.7 * before:
                break
        theta = eigvalsh_tridiagonal(a[:j + 1], b[:j], select="i",
                                     select_range=(j, j))[0] if j else a[0]
        if 1.0 - theta <= below:
            return float(max(1.0 - theta, 0.0))
        if b[j] <= 1e-12:  # an invariant subspace: theta is an eigenvalue, maybe not lambda_2
            return None
        Q[j + 1] = w / b[j]
    return None


def _converged_gap(S, d, tol):
    """The gap to tolerance: the three largest eigenvalues of S + I by ARPACK.

    Three pairs, not two: with only lambda_1 = 1 and one more wanted, ARPACK can stop on a
    converged Ritz value of lambda_3 before lambda_2 has appeared in its basis.
    """
    m = d.size
    v0 = np.sqrt(d) + 0.01 * _start(m)
    ev = spla.eigsh(S + sp.identity(m, format="csr"), k=3, which="LA", tol=tol, v0=v0)[0]
    return float(max(1.0 - (np.sort(ev)[-2] - 1.0), 0.0))
