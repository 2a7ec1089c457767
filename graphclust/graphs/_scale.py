"""Distances that survive the scale of the data: exact power-of-two rescaling.

Euclidean distances are computed from squared differences (or the expansion
|a|^2 + |b|^2 - 2 a.b), which underflow to 0 for coordinates near 1e-160 and below and overflow
to inf near 1e154 and above: at 1e-300 every distance came out 0, at 1e300 scikit-learn failed
inside a reshape. The builders therefore search on ``X / s`` with ``s = 2**e`` chosen so that
the largest absolute coordinate of ``X / s`` lies in [0.5, 1), and multiply the distances by
``s`` afterwards. Dividing by a power of two only changes the exponent, so ``X / s`` is exact
(unless an entry is 2^1022 times smaller than the largest one, where it becomes subnormal) and
the neighbours, trees and edges are exactly those of the rescaled data; only the lengths carry
the scale. The same holds for cosine, whose rows are rescaled each by their own power of two
before they are normalised.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: How many of a feature's half-ranges from 0 its midrange must lie to be subtracted before a
#: search (`far_offset`): 2^8, past which float32 keeps fewer than 16 bits of the differences.
FAR = 256.0

__all__ = ["FAR", "centre_and_scale", "centred_rescale", "far_offset", "largest_magnitude",
           "power_of_two_scale", "rescale", "scale_back"]


def largest_magnitude(values):
    """max |x| over a dense array or a sparse matrix's stored values; 0.0 when there are none.

    Two reductions instead of ``np.abs(values).max()``, whose temporary is as large as the
    data (400 MB for 10^6 x 50 points). nan when an entry is nan.

    Examples
    --------
    >>> import numpy as np
    >>> largest_magnitude(np.array([[1.5, -3.0], [2.0, 0.0]]))
    3.0
    """
    values = values.data if sp.issparse(values) else np.asarray(values)
    if values.size == 0:
        return 0.0
    hi, lo = float(values.max()), float(values.min())
    if np.isnan(hi) or np.isnan(lo):
        return float("nan")
    return max(hi, -lo)


def power_of_two_scale(values):
    """s = 2**e with max|values| / s in [0.5, 1) (in [1, 2) above 2**1023); 1.0 for all zeros."""
    top = largest_magnitude(values)
    if top == 0.0 or not np.isfinite(top):
        return 1.0
    # 2**1024 overflows: the largest finite coordinates (>= 2**1023) get s = 2**1023
    return float(np.ldexp(1.0, min(int(np.frexp(top)[1]), 1023)))


def far_offset(X):
    """Each feature's midrange where the feature lies far from 0 for its width, else 0; None
    when no feature does (or X is sparse or empty).

    Distances do not change when a point is subtracted from every row, but their rounding
    does: a coordinate near an offset t carries t's rounding error, t 2^-24 in the float32 of
    NN-descent, t 2^-53 in float64, and ``|a|^2 + |b|^2 - 2 a.b`` (brute-force searches) loses
    ``|a|^2`` of it. Blobs of unit spread at 10^8 from the origin lost every neighbour to it
    (30 000 points: ARI 0.21 against the same blobs at the origin). A feature's midrange is
    subtracted where it lies more than `FAR` half-ranges from 0, where the float32 search
    would keep fewer than 16 of its 24 bits for the differences; nearer, the offset costs at
    most 8 bits, and such data (PCA scores, standardised features, pixels, measurements
    such as glass's refractive index, 1.51-1.53) are searched exactly as given. The
    subtraction itself is exact in float64 (Sterbenz: every value of such a feature lies
    within a factor 1 +- 1/256 of its midrange), so the centred points have exactly the
    given points' distances. Exact scalings commute with it: the offset of X / 2^e is the
    offset of X over 2^e.

    Examples
    --------
    >>> import numpy as np
    >>> far_offset(np.array([[1e8, 0.5], [1e8 + 2, -0.5]])).tolist()
    [100000001.0, 0.0]
    >>> far_offset(np.array([[1.51, 0.0], [1.53, 1.0]])) is None
    True
    """
    return centre_and_scale(X)[0]


def centre_and_scale(X):
    """(`far_offset`, the power of two `rescale` takes for X less it) from one pass over X:
    ``s`` puts the largest magnitude of ``X - centre`` in [0.5, 1). Sparse or empty X: no
    centre and `power_of_two_scale`'s s.

    Examples
    --------
    >>> import numpy as np
    >>> centre, s = centre_and_scale(np.array([[1e8, 0.0], [1e8 + 2, 1.0]]))
    >>> centre.tolist(), s
    ([100000001.0, 0.0], 2.0)
    """
    if sp.issparse(X) or np.ndim(X) != 2 or np.size(X) == 0:
        return None, power_of_two_scale(X)
    X = np.asarray(X)
    hi, lo = X.max(axis=0).astype(np.float64), X.min(axis=0).astype(np.float64)
    mid, half = hi / 2 + lo / 2, hi / 2 - lo / 2  # halves first: no overflow near 1e308
    far = np.abs(mid) / FAR > half
    centre = np.where(far, mid, 0.0) if far.any() else None
    c = 0.0 if centre is None else centre
    return centre, power_of_two_scale(np.maximum(np.abs(hi - c), np.abs(lo - c)))


def rescale(X):
    """(X / s, s): X divided by the power of two s that puts its largest magnitude in [0.5, 1).

    Exact (only the exponents change), for a dense array or a sparse matrix; X itself when
    s == 1. Sums, means and norms of the result neither overflow nor underflow at any scale
    of X (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> Y, s = rescale(np.array([[3e300, -1e300]]))
    >>> bool(np.all(np.abs(Y) < 1)), bool(np.array_equal(Y * s, [[3e300, -1e300]]))
    (True, True)
    """
    return _divided(X, power_of_two_scale(X))


def _divided(X, s):
    """(X / s, s), X itself when s == 1 (dense or sparse)."""
    if s == 1.0:
        return X, s
    if sp.issparse(X):
        Y = X.copy()
        Y.data = Y.data / s
        return Y, s
    return X / s, s


def centred_rescale(X):
    """`rescale` of X less its far offset (`far_offset`; X itself where there is none): the
    points whose distances the searches and bridges measure, at any scale and translation.

    Examples
    --------
    >>> import numpy as np
    >>> Y, s = centred_rescale(np.array([[1e8, 0.0], [1e8 + 2, 1.0]]))
    >>> Y.tolist(), s
    ([[-0.5, 0.0], [0.5, 0.5]], 2.0)
    """
    # centre_and_scale's s is rescale's for X less the centre: one pass over X for both
    centre, s = centre_and_scale(X)
    return _divided(X if centre is None else X - centre, s)


def row_rescale(X):
    """Each row divided by its own power of two (for cosine, which ignores row lengths)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        top = np.zeros(X.shape[0])
        nz = np.diff(X.indptr) > 0
        top[nz] = np.maximum.reduceat(np.abs(X.data), X.indptr[:-1][nz]) if X.nnz else 0.0
        e = np.frexp(top)[1]
        Y = X.copy()
        Y.data = np.ldexp(Y.data, -np.repeat(e, np.diff(X.indptr)))
        return Y
    top = np.max(np.abs(X), axis=1) if X.shape[1] else np.zeros(X.shape[0])
    e = np.frexp(top)[1]
    return np.ldexp(X, -e[:, None])


def scale_back(distances, s, name="X"):
    """distances * s, refusing lengths beyond the float64 range (points more than ~1e308 apart)."""
    if s == 1.0:
        return distances
    with np.errstate(over="ignore"):
        out = distances * s
    if out.size and not np.all(np.isfinite(out)):
        raise ValueError(
            f"{name} spans more than the float64 range: distances between some of its points "
            f"exceed {np.finfo(np.float64).max:.3g} (largest |coordinate| about {s:.3g}); "
            f"rescale {name} first, e.g. {name} / np.abs({name}).max()."
        )
    return out
