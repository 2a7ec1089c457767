"""A walk that sees density: kNN weights times (p_i p_j)^(g / 2), p the kNN density estimate.

Why the default walk is blind to density in few dimensions. A random walk on a kNN graph is,
in the limit of many points, a diffusion with invariant measure rho (the sample density) and
conductivity rho^(1 - 2/d) (Ting, Huang & Jordan 2010; Calder & Garcia Trillos 2022, the kNN
graph Laplacian ``-(1/rho) div(rho^(1 - 2/d) grad f)``): a walker crosses a region at a rate set
by the conductivity there. In d = 2 the exponent is 0, so a valley of low density between two
modes slows the walk no more than the modes' own interior, and two overlapping Gaussian blobs
(engytime) or two touching shapes (flame) are one cluster to the walk: the scan finds no
structure. A Gaussian kernel of fixed bandwidth gives the diffusion
``(1/rho^2) div(rho^2 grad f)`` instead, a drift up the density whose metastable sets are the
basins of the density and whose escape times grow as (rho_mode / rho_saddle)^2 (Nadler, Lafon,
Coifman & Kevrekidis 2006, *Diffusion maps, spectral clustering and reaction coordinates of
dynamical systems*). Multiplying each kNN weight by (p_i p_j)^(g/2) multiplies the conductivity
by rho^g; g = 1 + 2/d restores the Gaussian kernel's rho^2, with the kNN graph's adaptive reach
kept.

The density estimate is the kNN one, p_i proportional to D_k(i)^(-d) with d the intrinsic
dimension (Levina-Bickel) of the same lists, and divided by its median, so that the weights do
not depend on the data's scale. In many dimensions it is no density (the k-th neighbour distance
follows hubness and discreteness), and the walk needs less help there: the conductivity's
exponent 1 - 2/d is 0.6 at d = 5. Weighted at b = 2 on MNIST the scan fell from NMI 0.91
to 0.24 (docs/battery.md). `StabilityClustering` takes this walk only when its own scan of data of
`DENSITY_MIN_DIMENSION` to `DENSITY_MAX_DIMENSION` dimensions finds no structure, and keeps
what it finds only when the null model, built on the same weighting, passes it
(`FineTierLooks._density_choice`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_real

__all__ = ["DENSITY_MAX_DIMENSION", "DENSITY_MIN_DIMENSION", "density_exponent",
           "density_weighted", "log_density", "sees_density"]

#: `StabilityClustering` looks at the density in data of at most this intrinsic dimension: below
#: it the kNN walk's conductivity rho^(1 - 2/d) sees less than rho^0.6 of the density (a
#: Gaussian kernel's sees rho^2), and the kNN density estimate is one. Two hubs in 4 dimensions
#: (Gagolewski's h2mg_4_30, d = 4.17) are one medium to the kNN walk (the fine tier's tiles)
#: and two clusters to this look (NMI 0.27 -> 0.68). Above it the walk sees more by itself,
#: and the estimate less: the fine-tier development sets (letters, 20 newsgroups, YaleB) have
#: d = 5.3-6.9, and with the look up to d = 8 20 newsgroups fell from NMI 0.40 to 0.10
#: (docs/battery.md, *The walk that sees density up to five dimensions*).
DENSITY_MAX_DIMENSION = 5.0

#: ... and at least this one: on a line the look would need g = 3, which raises the kNN
#: density estimate's noise (1/sqrt(k) relative) to the third power; a uniform sample of 1 000
#: points took it (c = 3, unwarned), and one-dimensional data has its own tests of gaps and
#: modes (the gap test, Hartigan's dip test: docs/model_selection.md).
DENSITY_MIN_DIMENSION = 1.5

#: log p is clipped to this many e-folds either side of its median: a duplicate point's
#: D_k of 0 would otherwise give an infinite weight.
LOG_DENSITY_CLIP = 50.0


def sees_density(d_hat):
    """Whether `StabilityClustering` looks at the density in data of intrinsic dimension
    `d_hat`: from `DENSITY_MIN_DIMENSION` to `DENSITY_MAX_DIMENSION`.

    >>> sees_density(2.0), sees_density(7.5)
    (True, False)
    """
    return bool(DENSITY_MIN_DIMENSION <= d_hat <= DENSITY_MAX_DIMENSION)


def density_exponent(dimension):
    """The exponent g = 1 + 2 / d that gives the kNN walk a Gaussian kernel's conductivity rho^2.

    Parameters
    ----------
    dimension : float > 0
        The intrinsic dimension d of the data; values below 1 are read as 1.

    Returns
    -------
    float

    Examples
    --------
    >>> density_exponent(2.0), density_exponent(1.0)
    (2.0, 3.0)
    """
    d = check_real(dimension, "dimension", low=0.0, low_inclusive=False)
    return 1.0 + 2.0 / max(d, 1.0)


def log_density(kth_distance, dimension):
    """``log p = -d log(D_k / median D_k)``, the kNN density estimate in units of its median.

    Parameters
    ----------
    kth_distance : array (n,)
        Each point's distance to its k-th neighbour, >= 0 and finite.
    dimension : float > 0
        The intrinsic dimension d of the estimate.

    Returns
    -------
    array (n,)
        The same for any scale of the distances; clipped to +-`LOG_DENSITY_CLIP`, so duplicate
        points (D_k = 0) keep finite values. All zeros when every D_k is 0 (no density
        differences to see).

    Examples
    --------
    >>> import numpy as np
    >>> np.exp(log_density(np.array([1.0, 2.0, 4.0]), 1.0)).round(3).tolist()
    [2.0, 1.0, 0.5]
    """
    d = check_real(dimension, "dimension", low=0.0, low_inclusive=False)
    D = np.asarray(kth_distance, dtype=np.float64).ravel()
    bad = np.flatnonzero(~np.isfinite(D) | (D < 0))
    if bad.size:
        raise ValueError(f"kth_distance must be finite and >= 0; got {bad.size} value(s) that "
                         f"are not (first at {bad[0]}: {float(D[bad[0]])!r}).")
    positive = D[D > 0]
    if positive.size == 0:
        return np.zeros(D.size)
    # duplicates' D_k of 0 floored below every other distance (their log p is clipped anyway)
    D = np.maximum(D, positive.min() * np.exp(-LOG_DENSITY_CLIP / max(d, 1.0)))
    return np.clip(-d * np.log(D / np.median(D)), -LOG_DENSITY_CLIP, LOG_DENSITY_CLIP)


def density_weighted(W, kth_distance, dimension, exponent=None):
    """``W_ij (p_i p_j)^(g/2)`` with ``p = (D_k / median D_k)^(-d)``, the kNN density estimate.

    Parameters
    ----------
    W : sparse matrix (n, n)
        Symmetric non-negative weights (the fit's fuzzy kNN graph).
    kth_distance : array (n,)
        Each point's distance to its k-th neighbour, >= 0 and finite.
    dimension : float > 0
        The intrinsic dimension d of the density estimate.
    exponent : float >= 0 or None
        g; None is `density_exponent(dimension)`.

    Returns
    -------
    csr_matrix (n, n)
        Symmetric, the same pattern as W. Multiplying the distances by any factor gives the same
        matrix (the median divides it out); log p is clipped to +-`LOG_DENSITY_CLIP` around its
        median, so duplicate points (D_k = 0) keep finite weights.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 1.0], [0, 1.0, 0]]))
    >>> Wd = density_weighted(W, np.array([1.0, 2.0, 4.0]), 1.0, exponent=2.0)
    >>> np.round(Wd.toarray(), 3).tolist()
    [[0.0, 2.0, 0.0], [2.0, 0.0, 0.5], [0.0, 0.5, 0.0]]
    """
    d = check_real(dimension, "dimension", low=0.0, low_inclusive=False)
    g = density_exponent(d) if exponent is None else check_real(exponent, "exponent", low=0.0)
    W = sp.csr_matrix(W)
    n = np.size(kth_distance)
    if W.shape != (n, n):
        raise ValueError(f"kth_distance must hold one distance per row of W ({W.shape[0]}); "
                         f"got {n}.")
    # every point a duplicate: log p = 0, f = 1, W as it was
    f = np.exp(0.5 * g * log_density(kth_distance, d))
    out = W.copy()
    out.sort_indices()
    rows = np.repeat(np.arange(n), np.diff(out.indptr))
    # f_i f_j is one product, the same for (i, j) and (j, i): a symmetric W stays so, bit for bit
    out.data = out.data * (f[rows] * f[out.indices])
    return out
