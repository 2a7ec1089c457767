"""Dense reference of consistency clustering (Breitenbach & Grudic), for small n and for tests.

Every quantity is computed from the explicit inverse U = beta (I - alpha S)^-1, exactly as the
papers' formulas read (the module notes of ``_seeds.py``), with no shortcut shared with the
scalable path (`consistency_path`, `seed_search`). Tests compare the two.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._validation import check_int, check_real, check_symmetric_adjacency

__all__ = ["consistency_reference", "REFERENCE_MAX_NODES"]

#: The reference forms several n x n arrays; it refuses larger inputs.
REFERENCE_MAX_NODES = 5000


def consistency_reference(W, alpha, n_clusters):
    """Consistency clustering of affinity matrix `W` with the explicit inverse (n <= 5000).

    Parameters
    ----------
    W : array or sparse (n, n), symmetric, non-negative
    alpha : float in (0, 1)
    n_clusters : int, 1 <= n_clusters <= n

    Returns
    -------
    dict with
        ``U`` (n, n), ``nu`` column norms, ``C`` = V^T V (cosine of columns), ``inlierness``
        o = C 1 / n, ``seeds`` (selection order), ``labels`` (-1 for points in a connected
        component of W without a seed), ``cluster_inlierness`` (mean of C[i, p] over the
        cluster p of i, i included), ``omega`` (the criterion), ``between`` (c x c matrix of
        mean D_M over cluster pairs, NaN for empty clusters).

    Notes
    -----
    Omega = mean over ordered pairs j != k of nonempty clusters of mean D_M[p_j, p_k] minus the
    mean over nonempty clusters j of mean D_M[p_j, p_j]; every mean over a block includes all its
    entries (the diagonal D_M[i, i] = 0 too). NaN when fewer than two clusters are nonempty.
    """
    W = check_symmetric_adjacency(W, name="W")
    n = W.shape[0]
    if n > REFERENCE_MAX_NODES:
        raise ValueError(
            f"consistency_reference forms n x n matrices; n = {n} exceeds {REFERENCE_MAX_NODES}."
        )
    alpha = check_real(alpha, "alpha", low=0, high=1, low_inclusive=False, high_inclusive=False)
    c = check_int(n_clusters, "n_clusters", low=1, high=n)
    Wd = W.toarray()
    d = Wd.sum(axis=1)
    inv = np.zeros(n)
    inv[d > 0] = 1.0 / np.sqrt(d[d > 0])
    S = inv[:, None] * Wd * inv[None, :]
    U = (1.0 - alpha) * np.linalg.inv(np.eye(n) - alpha * S)
    U = 0.5 * (U + U.T)
    nu = np.linalg.norm(U, axis=0)
    V = U / nu[None, :]
    C = V.T @ V
    DM = 1.0 - C
    o = C.sum(axis=1) / n
    seeds = [int(np.argmax(o))]
    O = o.copy()
    for _ in range(1, c):
        O = O * DM[:, seeds[-1]]
        seeds.append(int(np.argmax(O)))
    seeds = np.array(seeds, dtype=np.int64)
    labels = np.argmax(V[:, seeds], axis=1).astype(np.int64)
    _, comp = connected_components(sp.csr_matrix(Wd > 0), directed=False)
    labels[~np.isin(comp, comp[seeds])] = -1
    between = np.full((c, c), np.nan)
    members = [np.flatnonzero(labels == j) for j in range(c)]
    for j in range(c):
        for k in range(c):
            if members[j].size and members[k].size:
                between[j, k] = DM[np.ix_(members[j], members[k])].mean()
    nonempty = [j for j in range(c) if members[j].size]
    if len(nonempty) >= 2:
        off = [between[j, k] for j in nonempty for k in nonempty if j != k]
        omega = float(np.mean(off) - np.mean([between[j, j] for j in nonempty]))
    else:
        omega = float("nan")
    cin = np.full(n, np.nan)
    for j in range(c):
        p = members[j]
        if p.size:
            cin[p] = C[np.ix_(p, p)].mean(axis=1)
    return {
        "U": U,
        "nu": nu,
        "C": C,
        "inlierness": o,
        "seeds": seeds,
        "labels": labels,
        "cluster_inlierness": cin,
        "omega": omega,
        "between": between,
    }
