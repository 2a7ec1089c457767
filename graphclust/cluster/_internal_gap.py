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

The bound is tried first for every cluster of more than `BOUND_MIN` nodes given a threshold;
one of at most `DENSE_MAX` nodes that it does not show to fail is solved densely. A cluster
not shown to fail gets its gap to tolerance (`_converged_gap`: ARPACK for the three
largest eigenvalues of S_C + I, tol 1e-4). Two pairs at tol 1e-3, the previous solve, stopped on
a Ritz value of lambda_3 when lambda_2 and lambda_3 are close and overstated the gap by up to
56 % on that scan; three pairs at 1e-4 matched a five-pair solve at 1e-7 to four digits on
every one of its 58 clusters (docs/model_selection.md, *The internal gaps, decided by bounds*).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import eigh_tridiagonal, eigvalsh_tridiagonal

from ..kernels import arpack_eigsh, normalized_adjacency

__all__ = ["internal_gap"]

#: Clusters up to this size are solved densely.
DENSE_MAX = 600
#: Clusters above this size, given a threshold, are first tried by the bound (`_lanczos_bound`):
#: below it a dense solve costs less than the bound's steps. In a make_blobs fit (10 000
#: points, 5 centres, seed 9: 2 591 gaps, 2 334 of them dense) the bound proved most dense
#: clusters of 200-600 nodes failing and the gaps' time fell from 7.3 s to 4.4 s (profiled;
#: the same labels; docs/model_selection.md, *The internal gaps of mid-size clusters*).
BOUND_MIN = 200
#: Lanczos steps spent on proving a failure before the converged solve.
PROOF_STEPS = 48


def internal_gap(W, nodes, *, below=None, tol=1e-4, converge=True):
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
    converge : bool, default True
        False: a cluster of more than `DENSE_MAX` nodes that the bound does not show to fail
        within `PROOF_STEPS` is not solved to tolerance; the last bound is returned instead
        (``exact`` False, `gap` above `below`). The selection uses it for clusters whose
        candidate fails anyway. Clusters of `BOUND_MIN` to `DENSE_MAX` nodes that the bound
        does not decide are solved densely (exact) either way.

    Returns
    -------
    gap : float
        1.0 for clusters of fewer than 3 nodes, 0.0 when a node of the cluster has no edge
        inside it.
    exact : bool
        False when `gap` is an upper bound: at or under `below` (the cluster fails), or, with
        ``converge=False``, the last bound above it (undecided).

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
    if below is not None and m > BOUND_MIN:
        bound, proved = _lanczos_bound(S, np.sqrt(d), below)
        if proved or (not converge and m > DENSE_MAX):
            return bound, False
    if m <= DENSE_MAX:
        ev = np.linalg.eigvalsh(S.toarray())
        return float(max(1.0 - ev[-2], 0.0)), True
    return _converged_gap(S, d, tol), True


def _start(m):
    """The deterministic start vector of both solvers (no random state to thread through)."""
    return np.cos(np.arange(m, dtype=np.float64))


def _lanczos_bound(S, top, below, steps=PROOF_STEPS, give_up=False):
    """(1 - theta, True) once it is <= `below` (theta: the top Ritz value of S on top^perp),
    else (the last 1 - theta, False): an upper bound of the gap either way.

    `give_up`: stop early, unproved, once theta has converged short of the proof (its
    residual bound beta_j |s_j|, checked every `GIVE_UP_EVERY` steps, keeps it and the
    eigenvalue it approximates on the wrong side of 1 - `below`): for callers that then solve
    to tolerance anyway. Not a proof of the contrary (an eigenvalue may not have appeared yet).

    Lanczos with partial reorthogonalisation (Simon 1984): Simon's recurrence estimates how
    far each new vector has drifted from orthogonality to the kept basis (at most `steps` + 1
    vectors of the cluster's size), and the vector is orthogonalised against the basis only
    when the estimate passes sqrt(eps). A semi-orthogonal basis is enough for the bound: the
    tridiagonal matrix is then the projection of S onto an orthonormal basis of the Krylov
    space up to O(eps ||S||) (Simon 1984), so theta is a Ritz value to rounding and bounds
    lambda_2 from below (Courant-Fischer). The bound usually fires before lambda_2's Ritz
    value has converged, when no orthogonality has been lost yet: most steps then cost one
    product instead of a product and two passes over the basis (docs/scaling.md).
    """
    m = top.size
    eps = np.finfo(np.float64).eps
    u = top / np.linalg.norm(top)
    Q = np.empty((steps + 1, m))
    q = _start(m)
    q -= u * (u @ q)
    Q[0] = q / np.linalg.norm(q)
    a = np.empty(steps)
    b = np.empty(steps)
    # omega[j, k] estimates q_j . q_k (Simon's recurrence); psi is the rounding level of a
    # fresh vector's product with its predecessor
    psi = eps * np.sqrt(m)
    om_prev, om = np.zeros(steps + 2), np.zeros(steps + 2)
    om[0] = 1.0
    bound = 2.0  # lambda_2 >= -1
    for j in range(steps):
        w = S @ Q[j]
        w -= u * (u @ w)
        if j:
            w -= b[j - 1] * Q[j - 1]
        a[j] = Q[j] @ w
        w -= a[j] * Q[j]
        b[j] = np.linalg.norm(w)
        if b[j] <= 1e-12:  # an invariant subspace: theta is an eigenvalue, maybe not lambda_2
            return _verdict(a, b, j, below)
        om_next = np.zeros(steps + 2)
        if j:
            k = np.arange(j)
            t = b[k] * om[k + 1] + (a[k] - a[j]) * om[k] - b[j - 1] * om_prev[k]
            t[1:] += b[k[1:] - 1] * om[k[1:] - 1]
            # rounding taken in the direction that loses orthogonality fastest
            om_next[:j] = (t + np.copysign(eps * (b[k] + b[j]), t)) / b[j]
        if j and np.abs(om_next[:j]).max() > np.sqrt(eps):
            # classical Gram-Schmidt against the basis so far (and u), twice ("twice is
            # enough", Kahan and Parlett); the vector is then orthogonal to rounding
            for _ in range(2):
                w -= Q[:j + 1].T @ (Q[:j + 1] @ w)
                w -= u * (u @ w)
            b[j] = np.linalg.norm(w)
            om_next[:j] = psi
            if b[j] <= 1e-12:
                return _verdict(a, b, j, below)
        om_next[j], om_next[j + 1] = psi, 1.0
        bound, proved = _verdict(a, b, j, below)
        if proved:
            return bound, True
        if give_up and j % GIVE_UP_EVERY == GIVE_UP_EVERY - 1 and _settled(a, b, j, below):
            return bound, False
        Q[j + 1] = w / b[j]
        om_prev, om = om, om_next
    return bound, False


#: Lanczos steps between two checks of `_lanczos_bound`'s early stop.
GIVE_UP_EVERY = 10


def _settled(a, b, j, below):
    """Whether the top Ritz value of steps 0..j, widened by its residual bound, stays short of
    1 - `below`."""
    theta, s = eigh_tridiagonal(a[:j + 1], b[:j], select="i", select_range=(j, j))
    return bool(theta[0] + b[j] * abs(s[-1, 0]) < 1.0 - below)


def _verdict(a, b, j, below):
    """(1 - theta, whether it is <= `below`) for the tridiagonal matrix of steps 0..j."""
    theta = eigvalsh_tridiagonal(a[:j + 1], b[:j], select="i",
                                 select_range=(j, j))[0] if j else a[0]
    return float(max(1.0 - theta, 0.0)), bool(1.0 - theta <= below)


def _converged_gap(S, d, tol):
    """The gap to tolerance: the three largest eigenvalues of S + I by ARPACK.

    Three pairs, not two: with only lambda_1 = 1 and one more wanted, ARPACK can stop on a
    converged Ritz value of lambda_3 before lambda_2 has appeared in its basis.
    """
    m = d.size
    v0 = np.sqrt(d) + 0.01 * _start(m)
    ev = arpack_eigsh(S + sp.identity(m, format="csr"), k=3, which="LA", tol=tol, v0=v0)[0]
    return float(max(1.0 - (np.sort(ev)[-2] - 1.0), 0.0))
