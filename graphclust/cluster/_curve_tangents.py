"""The kNN graph of points on curves, without the edges that cross from one curve to the next.

Where two curves run side by side closer than a kNN list reaches at a sparse spot of one of
them, its points' lists cross to the other: three spirals of 900 points, arms 0.19 apart and
lists about 0.09 long, have 44 such edges of 5 060 (docs/model_selection.md, *Built: spiral
arms read by their tangents where their kNN lists cross*), and the union graph is one
component. An edge
along a curve leaves both its points along the curve's local direction; one that crosses to
the next curve leaves them across it. Multi-manifold clustering keeps an edge only where it
lies in the tangent spaces of both its points (Gong, Zhao & Medioni 2012, *Robust multiple
manifolds structure learning*; Arias-Castro, Lerman & Zhang 2017, *Spectral clustering based
on local PCA*, with the local covariances of both ends); on a curve the tangent space is a
line, the top principal direction of a point's nearest neighbours (`curve_tangents`).
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree


__all__ = ["TANGENT_NEIGHBOURS", "TANGENT_MIN_COSINE", "along_tangents", "apart_along_tangents",
           "curve_tangents", "spread_null", "spread_ratios", "tangent_components",
           "tangent_edges"]

#: A point's tangent line is the top principal direction of itself and its nearest neighbours
#: up to this many points in all (its kNN list's first 9 at the default 10 neighbours).
TANGENT_NEIGHBOURS = 10
#: An edge is along both its points' tangents when its angle to each is at most 45 degrees.
#: Chosen on the demo's spirals (`python /work/scratch/s114/tang.py`, docs/model_selection.md):
#: an edge between neighbours along an arm is within about 20 degrees of the tangent (chords
#: of a curve of radius at least 1.5 list lengths, and the scatter across it); one across to
#: the next arm, at least 60.
TANGENT_MIN_COSINE = 0.7
#: `spread_null`'s draws of uniform scatter, and the most points each holds.
SPREAD_DRAWS = 19
SPREAD_NULL_MAX_SAMPLES = 2_000
_ROWS = 8192  # points per block: m x D numbers each, so that 10^6 points x 50 features fit


def curve_tangents(X, idx, n_tangent=TANGENT_NEIGHBOURS):
    """Unit tangent of each point: the top principal direction of it and its first
    ``n_tangent - 1`` neighbours in `idx`.

    Parameters
    ----------
    X : array (n, D), float
    idx : int array (n, k)
        Each point's nearest neighbours, nearest first (the point itself not among them).
    n_tangent : int >= 2

    Returns
    -------
    array (n, D) of unit vectors (a point whose neighbours all coincide with it: zeros)

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1, 20)
    >>> X = np.c_[t, 2 * t]
    >>> idx = np.argsort(np.abs(t[:, None] - t[None, :]), axis=1)[:, 1:5]
    >>> T = curve_tangents(X, idx, 5)
    >>> bool(np.allclose(np.abs(T @ [1, 2]) / np.sqrt(5), 1))
    True
    """
    X = np.asarray(X, dtype=np.float64)
    idx = np.asarray(idx)
    n, D = X.shape
    m = min(int(n_tangent), idx.shape[1] + 1)
    T = np.zeros((n, D))
    for s, e, P in _neighbourhoods(X, idx, m):
        if D <= m:  # the covariance's top eigenvector
            t = np.linalg.eigh(np.einsum("rki,rkj->rij", P, P))[1][:, :, -1]
        else:  # the Gram matrix's, carried to the features: the same direction
            u = np.linalg.eigh(np.einsum("rid,rjd->rij", P, P))[1][:, :, -1]
            t = np.einsum("rkd,rk->rd", P, u)
        norm = np.linalg.norm(t, axis=1, keepdims=True)
        T[s:e] = np.divide(t, norm, out=np.zeros_like(t), where=norm > 0)
    return T


def _neighbourhoods(X, idx, m):
    """``(s, e, P)`` for blocks of rows s..e-1: each point and its first ``m - 1`` neighbours
    in `idx`, centred on their mean (P: (e - s, m, D))."""
    for s in range(0, X.shape[0], _ROWS):
        e = min(X.shape[0], s + _ROWS)
        P = X[np.c_[np.arange(s, e), idx[s:e, :m - 1]]]
        yield s, e, P - P.mean(axis=1, keepdims=True)


def spread_ratios(X, idx):
    """Each point's second over first principal variance of itself and its neighbours in
    `idx`: near 0 where they lie along a line, about 0.6 inside a uniform square (the local
    PCA of `curve_tangents`, which reads the first direction).

    Parameters
    ----------
    X : array (n, D), float, D >= 2
    idx : int array (n, k)
        Each point's nearest neighbours (the point itself not among them).

    Returns
    -------
    array (n,) in [0, 1] (a point whose neighbours all coincide with it: 1, no direction)

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 1, 30)
    >>> X = np.c_[t, 0.01 * np.sin(40 * t)]                 # a line, slightly wavy
    >>> idx = np.argsort(np.abs(t[:, None] - t[None, :]), axis=1)[:, 1:9]
    >>> bool(spread_ratios(X, idx).max() < 0.01)
    True
    """
    X = np.asarray(X, dtype=np.float64)
    idx = np.asarray(idx)
    n, D = X.shape
    m = idx.shape[1] + 1
    out = np.ones(n)
    for s, e, P in _neighbourhoods(X, idx, m):
        # the covariance's eigenvalues, or the Gram matrix's (the same nonzero ones)
        G = (np.einsum("rki,rkj->rij", P, P) if D <= m else np.einsum("rid,rjd->rij", P, P))
        ev = np.linalg.eigvalsh(G)
        top = ev[:, -1]
        np.divide(ev[:, -2], top, out=out[s:e], where=top > 0)
    return np.clip(out, 0.0, 1.0)


def spread_null(n, n_features, n_neighbors, random_state=0):
    """The lowest median `spread_ratios` of `SPREAD_DRAWS` uniform samples of min(n,
    `SPREAD_NULL_MAX_SAMPLES`) points in the unit cube of `n_features` dimensions, each point
    read from its `n_neighbors` nearest: a cluster whose median lies below it is flatter than
    any of the draws of scatter with no direction (a Monte Carlo test at level 1 /
    (SPREAD_DRAWS + 1)). A larger sample's median lies higher (its points lie further from
    the cube's faces, where neighbourhoods are half-balls), so capping the sample only lowers
    the bar. (Rounding sizes down to a quarter octave, so that clusters of many sizes share
    draws, lowered it enough to leave a noisy spiral arm of 2 000 points cut in two, silently;
    the draws are cheap instead: a k-d tree's exact lists of uniform points.)

    Examples
    --------
    >>> g = spread_null(200, 2, 20)
    >>> bool(0.3 < g < 0.6)
    True
    """
    m = int(min(n, SPREAD_NULL_MAX_SAMPLES))
    return _spread_null(m, int(n_features), int(n_neighbors), int(random_state))


@functools.lru_cache(maxsize=256)
def _spread_null(m, n_features, n_neighbors, random_state):
    """`spread_null` of samples of m points."""
    lowest = np.inf
    for r in range(SPREAD_DRAWS):
        U = np.random.default_rng((random_state, r)).random((m, n_features))
        # the exact lists (`nearest_neighbors`' own, ties aside, which uniform draws do not
        # have) without its per-call set-up, which the many small draws would pay each time
        idx = cKDTree(U).query(U, n_neighbors + 1)[1][:, 1:]
        lowest = min(lowest, float(np.median(spread_ratios(U, idx))))
    return lowest


def tangent_edges(X, idx, n_tangent=TANGENT_NEIGHBOURS, min_cosine=TANGENT_MIN_COSINE, *,
                  tangents=None):
    """Which entries of the kNN lists lie along both their points' tangents.

    An edge i -> j of the lists is kept when ``|cos|`` of its angle to the tangents of both i
    and j (`curve_tangents`) is at least `min_cosine`, or when it has length 0 (copies of one
    point); the verdict is the same for j -> i.

    Parameters
    ----------
    X : array (n, D), float
    idx : int array (n, k)
        Each point's nearest neighbours (the point itself not among them).
    n_tangent : int >= 2
    min_cosine : float in [0, 1]
    tangents : array (n, D) or None
        `curve_tangents` of `X` and `idx`, when the caller has them already.

    Returns
    -------
    bool array (n, k), True where the entry ``idx[i, r]`` is kept (`along_tangents`)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.c_[np.arange(6.0), np.zeros(6)]      # a line, and a point 1 above its middle
    >>> X = np.r_[X, [[2.5, 1.0]]]
    >>> idx = np.argsort(np.linalg.norm(X[:, None] - X[None], axis=2), axis=1)[:, 1:3]
    >>> keep = tangent_edges(X, idx, 3)
    >>> bool(keep[:6].all()), bool(keep[6].any())  # the line's edges; not the point's
    (True, False)
    """
    X = np.asarray(X, dtype=np.float64)
    idx = np.asarray(idx)
    n, k = idx.shape
    T = curve_tangents(X, idx, n_tangent) if tangents is None else tangents
    rows = np.repeat(np.arange(n), k)
    cols = idx.ravel()
    keep = np.empty(rows.size, dtype=bool)
    for s in range(0, rows.size, _ROWS * k):
        i, j = rows[s:s + _ROWS * k], cols[s:s + _ROWS * k]
        keep[s:s + i.size] = along_tangents(X, T, i, j, min_cosine)
    return keep.reshape(n, k)


def along_tangents(X, T, u, v, min_cosine=TANGENT_MIN_COSINE):
    """Whether each segment from ``X[u]`` to ``X[v]`` lies along the tangents `T` of both its
    ends: ``|cos|`` of its angle to each at least `min_cosine`, or length 0.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    >>> T = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])  # all along the first axis
    >>> along_tangents(X, T, np.array([0, 0]), np.array([1, 2])).tolist()
    [True, False]
    """
    e = X[v] - X[u]
    length = np.linalg.norm(e, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cu = np.abs(np.einsum("rd,rd->r", e, T[u])) / length
        cv = np.abs(np.einsum("rd,rd->r", e, T[v])) / length
    return (length == 0) | ((cu >= min_cosine) & (cv >= min_cosine))


def tangent_components(X, idx, n_tangent=TANGENT_NEIGHBOURS, min_cosine=TANGENT_MIN_COSINE, *,
                       keep=None):
    """Connected components of the kNN graph kept to the edges along both points' tangents.

    The components of the entries `tangent_edges` keeps, in either direction (the union
    graph's); `keep`, that mask when the caller has it already.

    Parameters
    ----------
    X, idx, n_tangent, min_cosine : as `tangent_edges` (X unread when `keep` is given)
    keep : bool array (n, k) or None

    Returns
    -------
    int array (n,): component labels 0..c-1

    Examples
    --------
    >>> import numpy as np
    >>> a = np.linspace(0, 2 * np.pi, 200, endpoint=False)  # two circles; the outer one
    >>> X = np.r_[np.c_[np.cos(a), np.sin(a)],              # has a gap, whose ends' lists
    ...           1.15 * np.c_[np.cos(a[6:]), np.sin(a[6:])]]  # reach the inner circle
    >>> d = np.linalg.norm(X[:, None] - X[None], axis=2)
    >>> idx = np.argsort(d, axis=1, kind="stable")[:, 1:7]
    >>> int(tangent_components(X, idx, 5).max() + 1)  # the union 6-NN graph: one component
    2
    """
    idx = np.asarray(idx)
    n, k = idx.shape
    if keep is None:
        keep = tangent_edges(X, idx, n_tangent, min_cosine)
    keep = np.asarray(keep, dtype=bool).ravel()
    rows = np.repeat(np.arange(n), k)[keep]
    A = sp.csr_matrix((np.ones(rows.size), (rows, idx.ravel()[keep])), shape=(n, n))
    return connected_components(A, directed=False)[1].astype(np.int64)


def apart_along_tangents(labels, idx, keep):
    """Whether no kept entry of the kNN lists (`keep`, from `tangent_edges`) joins two
    clusters of `labels`: each cluster is a union of `tangent_components`, the walk along the
    curves never leaves it, and only edges across the curves' direction reach the others.

    Examples
    --------
    >>> import numpy as np
    >>> idx = np.array([[1], [0], [3], [2]])
    >>> keep = np.array([[True], [True], [True], [False]])
    >>> apart_along_tangents(np.array([0, 0, 1, 1]), idx, keep)
    True
    >>> apart_along_tangents(np.array([0, 1, 1, 1]), idx, keep)
    False
    """
    labels, idx = np.asarray(labels), np.asarray(idx)
    kept = np.asarray(keep, dtype=bool).ravel()
    return bool(np.array_equal(np.repeat(labels, idx.shape[1])[kept], labels[idx.ravel()[kept]]))
