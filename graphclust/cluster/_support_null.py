"""A null drawn on the data's own support: are the clusters more than chance cuts of its shape?

Why the structureless references of `_null_model` miss a thin band. They draw tiles in
round(d) dimensions, d the intrinsic dimension of the kNN lists. A thin noisy ring is 2-D at the
kNN scale (d 1.5-1.97) and 1-D at the scale of its arcs, and an arc's escape time grows like
its length where a 2-D tile's grows like the square root of its size: the ring's arcs, cut at
chance gaps, pass a 2-D null by a wide margin (25 of 36 rings silent, docs/battery.md).

This null keeps the shape and removes everything else: `support_sample` draws points uniformly
on the union of the balls B(x_i, D_r(i)) around the data (D_r the distance to the r-th
neighbour), by rejection: a ball is picked with probability proportional to its volume, a point
uniformly in it, and the point kept with probability 1 / (the balls that cover it), so that the
accepted points have constant density on the union. A band stays a band, a gap wider than the
balls stays a gap, and a density valley is filled.

Matching the escape time alone is not enough: a bottleneck of the shape (two diamonds touching
at a tip) or a gap is reproduced by the support, so the null's partition escapes as slowly as
the data's there, and those clusters are real. What tells the two apart is where the null's
partition cuts. Chance cuts of a band land elsewhere on each new sample (the null's arcs are
the data's rotated: adjusted Rand index 0.05-0.77 per draw, medians at most 0.67, over 36
rings), while the shape's own cuts are found again (0.85-1.0 per draw on two diamonds and
battery sipu/unbalance). This is the
stability of a partition under resampling (Ben-Hur, Elisseeff & Guyon 2002; Lange, Roth, Braun
& Buhmann 2004), with the resample drawn from the support rather than the sample. The clusters
are reported when the null's partition is escaped as slowly and does not reproduce them
(`SUPPORT_AGREEMENT`). Clusters escaped more slowly may owe it to the data's own sparsest
spot, where the scan puts a chance cut: carried to the support samples (`carried_labels`),
which lose the density, their escape time then falls no more than a sample's own partition's
falls when carried to a sample of that sample, while at a gap or a valley it falls by far
more (`NullModelTests._support_test`).

The balls live in the ambient space, so the sample is faithful only where the data fill it.
A sheet in three features (intrinsic dimension rounding to 2: a swiss roll) does not: balls as
wide as the neighbours' distances thicken it into a slab whose layers nearly touch across the
roll's turns, and the sample's kNN graph takes shortcuts the data do not have. There each ball
is flattened to a slab about the point's tangent plane (local PCA of its neighbours), as thin
as the data's own scatter off that plane (`SHEET`; docs/battery.md, *Built: a sheet's support
in its tangent planes*). Curves in the plane keep their balls: flattened to segments, the
papers' spirals were reported as chance cuts in 3 of 100 fits. The test runs on two- and
three-feature euclidean data (`SUPPORT_MAX_FEATURES`) of intrinsic dimension below 2.5
(`SUPPORT_MAX_DIMENSION`), and up to 3.5 when no density valley lies between the clusters
(`SUPPORT_DIP_DIMENSION`: tubes in 3-D); one feature has Hartigan's dip test (`_dip_test`).
Points whose affine hull has fewer dimensions than their features, and at most three
(planar data turned or padded into more features) are read in coordinates of that hull
(`hull_coordinates`), an isometry: the verdicts do not depend on how many features hold the
same shape.
Each draw's agreement varies by about 0.1, so the median of `NULL_DRAWS` draws is compared,
and the escape time with the strictest draw's, as `_null_model` does in one
dimension.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .._validation import check_random_state
from ..graphs import power_of_two_scale

__all__ = ["SHEET", "SUPPORT_AGREEMENT", "SUPPORT_DIP_DIMENSION", "SUPPORT_MAX_DIMENSION",
           "SUPPORT_MAX_FEATURES", "SUPPORT_RADIUS_RANK", "SUPPORT_SAMPLE", "carried_labels",
           "hull_coordinates", "support_sample"]

#: The balls' radius is the distance to this neighbour (or the last of shorter lists): small
#: enough that a band stays nearly as thin (on the escape time alone, one draw, 19 of the 36
#: rings passed with the 10th neighbour, 12 with the 5th), large enough that neighbours' balls
#: overlap, so the support is connected where the kNN graph is (with the 3rd, the right fits of
#: battery flame and other/hdbscan were warned about: docs/battery.md).
SUPPORT_RADIUS_RANK = 5

#: The test runs on euclidean data of two or three features (module docstring) ...
SUPPORT_MAX_FEATURES = 3

#: ... whose intrinsic dimension rounds to 2 at most: where the structureless references draw
#: planar tiles, which a band's 1-D arcs outlast. Measured on bands in the plane; in three
#: dimensions three Gaussian clusters (wut/mk3, d = 3.04) agree with the support's partitions
#: at a median of 0.72, too close to the bands' 0.4-0.7 to tell apart (above it, see
#: `SUPPORT_DIP_DIMENSION`).
SUPPORT_MAX_DIMENSION = 2.5

#: From `SUPPORT_MAX_DIMENSION` up to this, on three features, the test runs with a third
#: condition: no two adjacent clusters are separated by a density valley (the geodesic dip
#: test of `_valley_joins.join_unimodal_pairs` joins them all into one). A noisy circle in
#: 3-D is 2.6-3.0-dimensional at the kNN scale, and its arcs outlast 3-D tiles; Gaussian
#: clusters there have valleys between them (wut/mk3's three clusters are joined into two,
#: not one: docs/battery.md, *Built: tubes in three dimensions*).
SUPPORT_DIP_DIMENSION = 3.5

#: Points drawn per null sample (at most the data's).
SUPPORT_SAMPLE = 2000

#: Below this adjusted Rand index between the data's labels carried to the null sample and the
#: null's own partition (the median of the draws), the null's cuts are not the data's: between
#: a band's rotated arcs (single draws 0.05-0.77, medians at most about 0.7, on 36 rings) and
#: a shape's reproduced cuts (two diamonds 0.95, battery sipu/unbalance 0.90).
SUPPORT_AGREEMENT = 0.75

#: (features, rounded intrinsic dimension) of data whose support is drawn in tangent slabs,
#: not balls: a sheet in three features (module docstring).
SHEET = (3, 2)

# coverage is counted among this many nearest balls' centres; a point covered by more is
# counted as covered this many times (kept a little too often), which needs a pile of
# duplicates far larger than the radius rank
_COVER = 64


def hull_coordinates(X, max_dim=SUPPORT_MAX_FEATURES, rtol=1e-9, random_state=0):
    """X in orthonormal coordinates of its affine hull, when that has at most `max_dim`
    dimensions and fewer than X's features; else X itself (also for sparse X).

    An isometry: every distance is kept up to rounding, so the tests that read one to three
    features (`_dip_test` on a line, the support test) read planar data turned by a rotation
    into ten features, or padded with constant columns (into three as into ten), as they
    read the plane; with columns that combine others, in the plane of that hull.
    The rank is read from a Gaussian sketch of the centred points (max_dim + 5 columns: its
    rank is X's with probability 1), a singular value counting when it exceeds `rtol` times
    the largest or the uncentred sketch's norm, whichever is larger; the hull's directions
    then come from the points projected on the sketch's basis. O(n d max_dim) time and
    n (max_dim + 5) extra numbers.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> P = rng.normal(size=(100, 2))
    >>> Q = np.linalg.qr(rng.normal(size=(10, 10)))[0][:, :2]   # the plane, turned in 10-D
    >>> H = hull_coordinates(P @ Q.T)
    >>> H.shape, bool(np.allclose(np.linalg.norm(H[0] - H[1]), np.linalg.norm(P[0] - P[1])))
    ((100, 2), True)
    >>> hull_coordinates(rng.normal(size=(100, 10))).shape   # a hull of 10 dimensions: as is
    (100, 10)
    """
    import scipy.sparse as sp

    if sp.issparse(X) or X.ndim != 2 or X.shape[1] < 2 or X.shape[0] <= max_dim + 1:
        return X
    X = np.asarray(X, dtype=np.float64)
    # the sketch and the coordinates in units of a power of two of X (exact, with no scaled
    # copy of X): at 1e300 the sketch's norm overflowed and the hull of planar points padded
    # into more features went unseen
    scale = power_of_two_scale(X)
    mean = X.mean(axis=0) / scale
    R = check_random_state(random_state).normal(size=(X.shape[1], max_dim + 5))
    # the centred points' sketch without a centred copy of X (n x d: 400 MB at 10^6 x 50),
    # and its singular values alone (no n x 8 basis) until the rank says there is a hull
    XR = X @ (R / scale)
    Y = XR - mean @ R
    sv = np.linalg.svd(Y, compute_uv=False)
    # against the points' own magnitude too: identical points leave only rounding in Y
    r = int(np.sum(sv > rtol * max(sv[0], np.linalg.norm(XR))))
    if r == 0 or r > max_dim or r == X.shape[1]:  # (r = 0: every point the same)
        return X
    U = np.linalg.svd(Y, full_matrices=False)[0][:, :r]
    Xc = X / scale
    Xc -= mean
    # the hull's directions in feature space, from the points projected on the sketch's basis
    _, _, Vt = np.linalg.svd(U.T @ Xc, full_matrices=False)
    return (Xc @ Vt[:r].T) * scale


def support_sample(X, dist, m, random_state=None, radius_rank=SUPPORT_RADIUS_RANK, *,
                   tree=None, dimension=None):
    """`m` points uniform on the union of balls around the data, radius the distance to the
    `radius_rank`-th neighbour (module docstring); for a sheet (`SHEET`), of slabs as wide as
    those balls in the points' tangent planes and as thin as the data's scatter off them.

    Parameters
    ----------
    X : array (n, D)
        The data, euclidean.
    dist : array (n, k)
        Each point's distances to its k nearest neighbours (itself excluded), in any order.
    m : int >= 1
    random_state : None, int or numpy Generator
    radius_rank : int >= 1
        Clipped to k.
    tree : scipy.spatial.cKDTree of X, optional
        Built here when not given (a caller drawing several samples builds it once).
    dimension : float, optional
        The data's intrinsic dimension (`intrinsic_dimension`): with three features and
        a dimension rounding to 2, the balls are tangent slabs. None: balls.

    Returns
    -------
    array (m, D)

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import nearest_neighbors
    >>> t = np.random.default_rng(0).uniform(0, 2 * np.pi, 500)
    >>> X = np.c_[np.cos(t), np.sin(t)]                       # a circle of radius 1
    >>> Y = support_sample(X, nearest_neighbors(X, 10)[1], 300, random_state=0)
    >>> r = np.hypot(Y[:, 0], Y[:, 1])
    >>> bool(np.all(np.abs(r - 1) < 0.1))                     # a band, not a disc
    True
    """
    X = np.asarray(X, dtype=np.float64)
    n, D = X.shape
    rank = int(min(max(int(radius_rank), 1), dist.shape[1]))
    r = np.sort(np.asarray(dist, dtype=np.float64), axis=1)[:, rank - 1]
    positive = r[r > 0]
    # duplicates (radius 0) get the smallest positive radius: a ball, not a point
    r = np.maximum(r, positive.min() if positive.size else 1.0)
    tree = cKDTree(X) if tree is None else tree
    sheet = dimension is not None and (D, int(round(float(dimension)))) == SHEET
    if sheet:  # regions picked in proportion to their volumes, scaled against overflow
        d0 = SHEET[1]
        frame, h = _tangent_slabs(X, r, dist.shape[1], d0, tree)
        p = (r / r.max()) ** d0 * (h / h.max()) ** (D - d0)
    else:
        d0, p = D, (r / r.max()) ** D
    p /= p.sum()
    rng = check_random_state(random_state)
    cover = min(_COVER, n)
    out, found = [], 0
    while found < m:
        b = 4 * m
        i = rng.choice(n, size=b, p=p)
        u = rng.standard_normal((b, d0))
        u /= np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-300)
        t = (r[i] * rng.random(b) ** (1.0 / d0))[:, None] * u  # uniform in the ball or disc
        if sheet:  # the disc in the tangent plane, uniform across the slab's width
            w = (2.0 * rng.random((b, D - d0)) - 1.0) * h[i][:, None]
            Y = X[i] + np.einsum("bj,bjd->bd", t, frame[i, :d0]) + np.einsum(
                "bj,bjd->bd", w, frame[i, d0:])
        else:
            Y = X[i] + t
        dd, jj = tree.query(Y, k=cover)
        dd, jj = dd.reshape(b, -1), jj.reshape(b, -1)
        if sheet:
            off = np.einsum("bcd,bcjd->bcj", Y[:, None, :] - X[jj], frame[jj])  # frame coords
            tan = np.linalg.norm(off[:, :, :d0], axis=2)
            nor = np.abs(off[:, :, d0:])
            covered = ((tan <= r[jj]) & (nor <= h[jj][:, :, None]).all(axis=2)).sum(axis=1)
        else:
            covered = (dd <= r[jj]).sum(axis=1)
        keep = Y[rng.random(b) * np.maximum(covered, 1) < 1.0]
        out.append(keep)
        found += keep.shape[0]
    return np.concatenate(out)[:m]


def _tangent_slabs(X, r, k, d0, tree):
    """(frames, half-widths) of each point's tangent slab: the frame's rows are the
    principal directions of the point and its k nearest neighbours (the d0 tangent ones
    first), and the half-width is sqrt(3) times the root mean square of the neighbours'
    offsets from the point along the normals (a uniform slab's half-width of that scatter),
    at least 1e-3 of the slab's radius `r` (a flat neighbourhood gets a slab, not a disc)."""
    P = X[tree.query(X, k=min(k + 1, X.shape[0]))[1]]  # n x (k + 1) x D, the point first
    frame = np.linalg.svd(P - P.mean(axis=1, keepdims=True), full_matrices=True)[2]
    off = np.einsum("nkd,njd->nkj", P - X[:, None, :], frame[:, d0:])
    return frame, np.maximum(np.sqrt(3.0 * np.mean(off ** 2, axis=(1, 2))), 1e-3 * r)


def carried_labels(X, labels, Y, *, tree=None):
    """The label of each point of `Y`'s nearest point of `X` (euclidean); `tree`, a cKDTree of
    X, is built when not given."""
    tree = cKDTree(np.asarray(X, dtype=np.float64)) if tree is None else tree
    return np.asarray(labels)[tree.query(Y, k=1)[1]]
