"""Markov stability of partitions under the consistency (resolvent) walk, and its agglomeration.

The random walk P = D^-1 W has stationary law pi = d / vol. Its resolvent walk
R_alpha = (1 - alpha)(I - alpha P)^-1 = sum_t (1 - alpha) alpha^t P^t is a walk of geometric
length, mean tau = alpha / (1 - alpha). Since D - alpha W = D^1/2 (I - alpha S) D^1/2,

    Pi R_alpha = D^1/2 U_alpha D^1/2 / vol,    U_alpha = (1 - alpha)(I - alpha S)^-1,

the consistency kernel of the papers (`graphclust.ConsistencyKernel`). For a partition with
indicator matrix H (n x c) the *flow matrix* ``G = H^T Pi R_alpha H`` (c x c, entries sum to 1;
G_CD = P(start in C, end in D) for the walk started at stationarity) costs one block solve of
c columns, and the Markov stability (Delvenne, Yaliraki & Barahona 2010; Lambiotte, Delvenne &
Barahona 2014) is

    r_alpha(H) = trace(G) - sum_C pi(C)^2.

Merging clusters a and b changes r by exactly ``2 (G_ab - pi_a pi_b)``: `merge_by_stability` is
Newman's greedy agglomeration on those exact gains, followed by single-unit moves.

`resolvent_flows` gives ``B^T U_alpha B`` for many alphas at the cost of one multi-shift CG run
(`graphclust.kernels.shifted_cg`): the part in the span of the kernel's top eigenvectors in closed
form, the rest by CG on the complement with shifts ``a0 / alpha - 1`` relative to the largest
alpha a0 (``(I - alpha S) = (alpha / a0) ((a0 / alpha - 1) I + (I - a0 S))``).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..kernels import (ConsistencyKernel, dense_rows, diagonal_scaling, shifted_cg,
                       shifted_product, symmetric_permutation)
from ._lanczos_quadrature import KrylovFlows, _lanczos_quadrature
from ._leiden import _components
from ._moment_quadrature import TYPICAL_BLOCKS, affordable, moment_quadrature, one_per_row
from ._stability_merge import coarse_stability, indicator, merge_by_stability

__all__ = ["coarse_stability", "flow_matrix", "indicator", "lanczos_flows", "merge_by_stability",
           "resolvent_flows", "stability_gain_reference", "variation_of_information"]


def resolvent_flows(kernel, B, alphas, *, rtol=1e-6, method="lanczos"):
    """``B^T U_alpha B`` for every alpha of `alphas`, with one multi-shift CG run.

    Parameters
    ----------
    kernel : ConsistencyKernel
        Of any alpha: its spectrum (all of it for ``method="dense"``, the top K otherwise) and
        its S are used.
    B : array (n, b)
    alphas : sequence of float in (0, 1)
    rtol : float
        Stopping rule of the complement's solves.
    method : {"lanczos", "cg"}
        The complement by block Lanczos quadrature (one Krylov run whose cost does not grow
        with the number of alphas) or by multi-shift CG (`shifted_cg`).

    Returns
    -------
    list of arrays (b, b), one per alpha.

    Notes
    -----
    With the top eigenpairs (lambda_k, phi_k) of S and C = Phi^T B, the basis' share is
    ``C^T diag((1 - alpha) / (1 - alpha lambda_k)) C`` exactly. The remainder R = B - Phi C is
    solved once for all alphas (`shifted_cg`); when the basis is not accurate (a residual above
    1e-6) the kernel's own solves are used per alpha instead. Cost: one CG run on b columns with
    condition number about (1 + a0) / (1 - a0 lambda_(K+1)), plus two block updates per shift
    and iteration.
    """
    B = np.asarray(B, dtype=np.float64)
    Phi = kernel.spectrum.vectors
    lam = kernel.spectrum.values
    C = Phi.T @ B
    out = []
    for a in alphas:
        f = (1 - a) / (1 - a * lam)
        out.append(C.T @ (f[:, None] * C))
    if kernel.method == "dense":
        return out
    res = kernel.spectrum.residuals
    if res.size and float(res.max()) > 1e-6:
        return [B.T @ kernel.with_alpha(float(a)).apply(B) for a in alphas]
    R = B - Phi @ C
    a0 = float(max(alphas))
    S = sp.csr_matrix(kernel.S)
    shifts = [a0 / a - 1.0 for a in alphas]
    if method == "lanczos":
        def project(X):
            X -= Phi @ (Phi.T @ X)
            return X

        parts = _lanczos_quadrature(lambda P, out=None: shifted_product(S, P, a0, out=out),
                                    R, shifts, project,
                                    rtol=rtol)
        if parts is None:
            return resolvent_flows(kernel, B, alphas, rtol=rtol, method="cg")
        for i, a in enumerate(alphas):
            out[i] = out[i] + (1 - a) * (a0 / a) * parts[i]
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Xs, _ = shifted_cg(lambda P: shifted_product(S, P, a0), R, shifts, rtol=rtol)
    for i, (a, X) in enumerate(zip(alphas, Xs)):
        Y = (1 - a) * (a0 / a) * X
        Y -= Phi @ (Phi.T @ Y)  # keep the remainder in the complement (rounding drift)
        out[i] = out[i] + R.T @ Y
    return out


def lanczos_flows(W, B, alphas, *, rtol=1e-3, order=None, method="auto", keep=False):
    """``B^T U_alpha B`` for every alpha without an eigenbasis: block Gauss quadrature.

    The stationary vectors of the walk on each connected component (eigenvalue 1 of S, known
    exactly: sqrt(d) restricted to the component) are taken out in closed form; the rest is one
    block Gauss quadrature of ``I - a0 S`` on the Krylov space of the remainder R, whose cost
    does not grow with the number of alphas. `method`:

    - ``"moments"``: from the Chebyshev moments ``R^T T_k(S) R``
      (`_moment_quadrature.moment_quadrature`): two sparse products per block of the Krylov
      space and no O(n b^2) work; for B with one nonzero per row (the pieces' scaled
      indicators) the moments are segment sums fused with the products. Its small dense
      solves cost O((K b)^3) for K blocks. 25-35 % less time than Lanczos on the flows of
      125 000-500 000 points (docs/scaling.md).
    - ``"lanczos"``: one block Lanczos run (`_lanczos_quadrature`), O(n b^2) per step for
      the orthogonalisation; columns that deflate (pieces that are whole components,
      components whose Krylov space is exhausted) are dropped from the block as they appear.
    - ``"auto"`` (default): moments when B is sparse with one nonzero per row and 30 blocks
      would be `_moment_quadrature.affordable` (n >= about 420 b), given up for Lanczos as
      soon as the blocks are not; else Lanczos. Moments that give up (or do not converge
      within their size cap) fall back to Lanczos.

    Returns None only when the recurrence breaks down (non-finite numbers, or no convergence
    in 1 000 steps); the caller then uses `resolvent_flows` on an eigenbasis. `B` (n, b) is
    dense or sparse.

    `order` is a permutation of the nodes in which to run (default: reverse Cuthill-McKee of
    W; the identity when W and B are already in that order); the flows do not depend on it
    beyond rounding. `rtol` plays the part of the relative residual of a block CG solve at the
    slowest shift: Gauss quadrature's error is about the square of that residual, so the run
    stops when the estimate's extrapolated error is below ``max(rtol^2, 1e-11)`` of its
    largest entry (`_quadrature_converged`). The
    default 1e-3 was chosen on the development sets (docs/scaling.md): the merges and the chosen
    partition are the same as with 1e-6 on every set measured, in about two thirds of the steps.

    With `keep`, returns ``(flows, KrylovFlows or None)``: the Lanczos run, kept with its last
    two n x b blocks, gives the flows at longer walks by taking it further (None after a
    moments run).
    """
    if method not in ("auto", "moments", "lanczos"):
        raise ValueError(f"method must be 'auto', 'moments' or 'lanczos'; got {method!r}.")
    W = sp.csr_matrix(W)
    d = np.asarray(W.sum(axis=1)).ravel()
    if (d <= 0).any():
        return None
    # a sparse B (the pieces' scaled indicators) becomes dense only once, already permuted:
    # at 10^6 nodes a dense indicator, its scaled copy and its permuted copy were three fresh
    # n x b blocks, 2.4 s of page faults and scattered reads (docs/scaling.md)
    B = sp.csr_matrix(B, dtype=np.float64) if sp.issparse(B) else np.asarray(B, dtype=np.float64)
    # B^T f(S) B does not change when the nodes are permuted (rows of B with them): in reverse
    # Cuthill-McKee order a row's neighbours are closer in memory and the block product reads
    # them faster (docs/scaling.md); a caller that has the order already passes it
    if order is None:
        order = reverse_cuthill_mckee(W, symmetric_mode=True)
    else:
        order = np.asarray(order)
        n = W.shape[0]
        if (order.shape != (n,) or not np.issubdtype(order.dtype, np.integer)
                or (n and (order.min() < 0 or order.max() >= n
                           or np.bincount(order, minlength=n).max() > 1))):
            raise ValueError(f"order must be a permutation of the {n} nodes (an int array of "
                             f"shape ({n},) holding each of 0..{n - 1} once); got "
                             f"{order.dtype} of shape {order.shape}.")
    permuted = not np.array_equal(order, np.arange(W.shape[0]))
    if permuted:
        W = symmetric_permutation(W, order)
        d, B = d[order], B[order]
    segments = one_per_row(B) if method != "lanczos" else None
    if method == "auto":  # moments only as segment sums: inner products would cost n b^2
        n, b = W.shape[0], B.shape[1]
        method = ("auto" if segments is not None
                  and affordable(TYPICAL_BLOCKS, b, n, len(alphas)) else "lanczos")
    # this function's own copy, written over below
    B_sparse = B if sp.issparse(B) else None
    B = dense_rows(B) if sp.issparse(B) else (B if permuted else B.copy())
    # one union-find pass (`_leiden._components`), scipy's labels in a fifth of its time
    comp, k = _components(W.indptr, W.indices)
    comp = comp.astype(np.int64)
    sq = np.sqrt(d)
    # the components' unit vectors have one nonzero per row (phi on its component): projecting
    # them out costs one pass over the block whatever k is (`_ComponentProjector`)
    cnorm = np.sqrt(np.bincount(comp, weights=d, minlength=k))
    Phi = _ComponentProjector(comp, sq / cnorm[comp], k)
    isq = 1.0 / sq
    S = diagonal_scaling(W, isq, overwrite=permuted)  # a permuted W is this function's own
    C = Phi.coefficients(B)
    R = Phi.remove(B, C)  # B is this function's own permuted copy
    a0 = float(max(alphas))
    shifts = [a0 / a - 1.0 for a in alphas]
    parts = None
    if method != "lanczos":
        # R^T T_k(S) R = B^T T_k(S) R: T_k(S) R stays off the components' vectors (S's
        # eigenvectors of eigenvalue 1), which are all that separates B from R
        # the run writes over R when it can be rebuilt from the sparse indicators (one n x b
        # block less at the peak); a run that gives up leaves the rebuilt R to Lanczos
        mine = B_sparse is not None and segments is not None
        parts = moment_quadrature(S, R, shifts, a0, segments=segments, rtol=rtol,
                                  guard=method == "auto", overwrite=mine)
        if parts is None and mine:
            R = Phi.remove(dense_rows(B_sparse), C)
    kept = None
    if parts is None:
        parts = _lanczos_quadrature(lambda P, out=None: shifted_product(S, P, a0, out=out), R,
                                    shifts, lambda X: Phi.remove(X, Phi.coefficients(X)),
                                    rtol=rtol, keep=keep)
        if keep and parts is not None:
            parts, run = parts
            if run is not None:
                run.compact()
                kept = KrylovFlows(run, a0, C, max(rtol**2, 1e-11))
    if parts is None:
        return (None, None) if keep else None
    flows = [C.T @ C + (1 - a) * (a0 / a) * F for a, F in zip(alphas, parts)]
    return (flows, kept) if keep else flows


class _ComponentProjector:
    """The orthogonal projection off ``Phi`` (n x k) with one nonzero per row, phi_i at (i, comp_i).

    `lanczos_flows`' deflated eigenvectors: the stationary vector of each connected component.
    As a sparse matrix, ``Phi @ (Phi.T @ X)`` went through scipy's single-threaded
    ``csr_matvecs`` and a new n x b block (500 000 nodes, 50 columns: 0.19 s of a 1.0 s block
    Lanczos step); `remove` subtracts in place, rows over the threads.
    """

    def __init__(self, comp, phi, k):
        self.comp, self.phi = comp, np.ascontiguousarray(phi, dtype=np.float64)
        self.matrix = sp.csc_matrix((self.phi, (np.arange(comp.size), comp)), shape=(comp.size, k))

    def coefficients(self, X):
        """Phi^T X, (k, b)."""
        return np.asarray(self.matrix.T @ X)

    def remove(self, X, C):
        """X - Phi C, written over `X` ((n, b) float64)."""
        _subtract_rows(X, self.comp, self.phi, np.ascontiguousarray(C, dtype=np.float64))
        return X


@njit(cache=True, parallel=True)
def _subtract_rows(X, comp, phi, C):
    # X[i, :] -= phi[i] * C[comp[i], :]; rows in chunks over the threads
    n, b = X.shape
    chunk = 4096
    for c in prange((n + chunk - 1) // chunk):
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            f = phi[i]
            row = comp[i]
            for j in range(b):
                X[i, j] -= f * C[row, j]


def flow_matrix(kernel, labels):
    """G = H^T Pi R_alpha H (c x c) and pi(C) (c,) of a partition, with one block solve.

    Parameters
    ----------
    kernel : ConsistencyKernel
    labels : int array (n,), values 0..c-1

    Returns
    -------
    G : array (c, c), symmetric, entries summing to 1
    p : array (c,), stationary mass of each cluster

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X, y = gc.datasets.two_moons(200, random_state=0)
    >>> W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    >>> G, p = flow_matrix(gc.ConsistencyKernel(W, 0.9), y)
    >>> round(float(G.sum()), 10), bool(np.allclose(G.sum(axis=1), p))
    (1.0, True)
    """
    d = kernel.degrees
    vol = d.sum()
    H = indicator(labels, dense=True)
    B = np.sqrt(d)[:, None] * H
    G = (B.T @ kernel.apply(B)) / vol
    return 0.5 * (G + G.T), H.T @ d / vol


def stability_gain_reference(W, labels, alpha, a, b):
    """Dense reference: change of Markov stability when clusters a and b merge (small n only).

    Forms ``Pi R_alpha = Pi (1 - alpha)(I - alpha D^-1 W)^-1`` and the stabilities before and
    after the merge; the exact gain is ``2 (G_ab - pi_a pi_b)``.
    """
    W = np.asarray(W.toarray() if sp.issparse(W) else W, dtype=np.float64)
    d = W.sum(axis=1)
    pi = d / d.sum()
    P = W / d[:, None]
    n = W.shape[0]
    M = np.diag(pi) @ ((1 - alpha) * np.linalg.inv(np.eye(n) - alpha * P))

    def r(lab):
        H = indicator(lab, dense=True)
        return float(np.trace(H.T @ (M - np.outer(pi, pi)) @ H))

    labels = np.asarray(labels)
    merged = np.where(labels == b, a, labels)
    _, merged = np.unique(merged, return_inverse=True)
    return r(merged) - r(labels)


def variation_of_information(a, b, normalized=True, weights=None):
    """VI(a, b) = H(a | b) + H(b | a) (Meila 2007), divided by log n when `normalized`.

    `weights`, non-negative integers, are the multiplicities of the entries: the VI is that of
    the arrays with entry i repeated ``weights[i]`` times, the same number bit for bit. Two
    groupings of one partition's pieces (a[first], b[first] with the pieces' sizes) give the
    VI of the points' labels in time proportional to the pieces.

    Examples
    --------
    >>> variation_of_information([0, 0, 1, 1], [1, 1, 0, 0])
    0.0
    >>> variation_of_information([0, 1], [0, 0], weights=[3, 1]) == variation_of_information(
    ...     [0, 0, 0, 1], [0, 0, 0, 0])
    True
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if weights is None:
        w, n = None, a.size
    else:
        # integer counts in float64 are exact: every count and sum below is the unweighted one
        w = np.asarray(weights, dtype=np.float64)
        if (w.shape != a.shape or not np.isfinite(w).all() or (w < 0).any()
                or (w != np.round(w)).any()):
            raise ValueError(f"weights must be non-negative integers of shape {a.shape}; got "
                             f"{w.dtype} of shape {w.shape}.")
        n = int(w.sum())
        keep = w > 0  # a label with no weight is not in the repeated arrays
        if not keep.all():
            a, b, w = a[keep], b[keep], w[keep]
    if n < 2:
        return 0.0
    ai, na = _dense_labels(a)
    bi, nb = _dense_labels(b)
    if na * nb <= 4 * n:  # the joint counts by bincount: no sort of n pairs
        joint = np.bincount(ai * nb + bi, weights=w, minlength=na * nb)
        cells = np.flatnonzero(joint)
        pij, rows, cols = joint[cells] / n, cells // nb, cells % nb
    else:
        C = sp.coo_matrix((np.ones(ai.size) if w is None else w, (ai, bi)),
                          shape=(na, nb)).tocsr()
        C.sum_duplicates()
        pij, cols = C.data / n, C.indices
        rows = np.repeat(np.arange(na), np.diff(C.indptr))
    pa = np.bincount(ai, weights=w, minlength=na) / n
    pb = np.bincount(bi, weights=w, minlength=nb) / n
    vi = -np.sum(pij * (np.log(pij / pa[rows]) + np.log(pij / pb[cols])))
    vi = float(vi) if vi > 0 else 0.0  # rounding can give -0.0 or -1e-17
    return float(vi / np.log(n)) if normalized else vi


def _dense_labels(labels):
    """(labels renumbered 0..k-1 in the order of their values, k): ``np.unique``'s inverse,
    by a lookup table when the labels are non-negative integers below 4 n (no sort of n)."""
    kind, size = labels.dtype.kind, labels.dtype.itemsize
    if labels.size and (kind == "i" or (kind == "u" and size < 8)):
        lo, hi = int(labels.min()), int(labels.max())
        if lo >= 0 and hi < 4 * labels.size:
            present = np.bincount(labels, minlength=hi + 1) > 0
            lut = np.cumsum(present) - 1
            return lut[labels].astype(np.int64), int(present.sum())
    _, inv = np.unique(labels, return_inverse=True)
    return inv.astype(np.int64).ravel(), int(inv.max()) + 1 if inv.size else 0


def make_kernel(W, random_state=None, n_eigenpairs=32):
    """The consistency kernel whose eigenbasis gives a scan its flows where it takes one (the
    reference, or when the quadrature breaks down): dense up to 1 500 nodes, deflated CG above."""
    n = W.shape[0]
    method = "dense" if n <= 1500 else "cg"
    return ConsistencyKernel(W, 0.5, method=method,
                             n_eigenpairs=min(n_eigenpairs, n - 2) if method == "cg" else "auto",
                             rtol=1e-6, random_state=random_state)
