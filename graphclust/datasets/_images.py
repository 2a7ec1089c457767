"""Seeded generators for the proximity-graph paper's experiments (Carreira-Perpinan & Zemel 2004).

- `occluder_image`: a grey occluder over a background, both with intensity gradients (Figure 2);
- `noisy_ellipse` and `swiss_roll`: points near a 1-D / 2-D manifold with Gaussian noise, with the
  manifold coordinates from which the true geodesic distances follow (`ellipse_geodesics`,
  `swiss_roll_geodesics`) (Figure 3).

The paper gives the noise of only one set exactly (Swiss roll, high noise: standard deviation 9%
of the separation between branches); the other levels here are our choices, stated per function.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import cdist

from .._validation import check_int, check_random_state, check_real

__all__ = [
    "occluder_image",
    "noisy_ellipse",
    "ellipse_geodesics",
    "swiss_roll",
    "swiss_roll_geodesics",
    "SWISS_ROLL_NOISE",
    "ELLIPSE_NOISE",
]

#: Noise standard deviation of `swiss_roll` by name. The separation between branches of the roll
#: (radius r = t) is 2 pi; "high" is 9% of it (the paper's definition), "low" 2% (our choice).
SWISS_ROLL_NOISE = {"none": 0.0, "low": 0.02 * 2 * np.pi, "high": 0.09 * 2 * np.pi}
#: Noise standard deviation of `noisy_ellipse` by name, in the units of the axes (2, 1) ellipse
#: ("high" about one mean spacing of 100 points along its perimeter of 9.69; our choice).
ELLIPSE_NOISE = {"none": 0.0, "low": 0.02, "high": 0.1}


def occluder_image(shape=(48, 64), *, noise=0.02, random_state=None):
    """A grey occluder over a background, both shaded by intensity gradients (paper's Figure 2).

    The background brightens linearly from left to right (0.15 to 0.65); the occluder, a
    rectangle over the middle half of the image, darkens from left to right (0.95 to 0.75) with a
    slight top-to-bottom gradient (+-0.05). Its contrast with the background thus falls from about
    0.7 at its left edge to about 0.25 at its right edge, and the background alone spans a wider
    intensity range than that contrast: a segmentation into a few clusters must follow the
    boundary, not the intensity level. Gaussian noise of standard deviation `noise` is added and
    the result clipped to [0, 1].

    Parameters
    ----------
    shape : (int, int), default (48, 64)
        (H, W), each >= 8.
    noise : float >= 0, default 0.02
    random_state : int, Generator or None

    Returns
    -------
    image : float64 array (H, W) in [0, 1]
    mask : bool array (H, W)
        True on the occluder.

    Examples
    --------
    >>> from graphclust.datasets import occluder_image
    >>> img, mask = occluder_image(random_state=0)
    >>> img.shape, int(mask.sum())
    ((48, 64), 768)
    """
    if np.ndim(shape) != 1 or len(shape) != 2:
        raise ValueError(f"shape must be (H, W); got {shape!r}.")
    H = check_int(shape[0], "shape[0]", low=8)
    W = check_int(shape[1], "shape[1]", low=8)
    noise = check_real(noise, "noise", low=0)
    rng = check_random_state(random_state)
    rows, cols = np.mgrid[0:H, 0:W]
    x = cols / (W - 1)
    img = 0.15 + 0.5 * x
    r0, r1 = H // 4, H - H // 4
    c0, c1 = W // 4, W - W // 4
    mask = np.zeros((H, W), dtype=bool)
    mask[r0:r1, c0:c1] = True
    xo = (cols - c0) / max(c1 - 1 - c0, 1)
    yo = (rows - r0) / max(r1 - 1 - r0, 1)
    occ = 0.95 - 0.2 * xo + 0.1 * (yo - 0.5)
    img = np.where(mask, occ, img)
    if noise > 0:
        img = img + rng.normal(scale=noise, size=img.shape)
    return np.clip(img, 0.0, 1.0), mask


def _noise_level(noise, table, name):
    if isinstance(noise, str):
        if noise not in table:
            raise ValueError(f"{name} must be one of {sorted(table)} or a number >= 0; got {noise!r}.")
        return table[noise]
    return check_real(noise, name, low=0)


def _ellipse_arclength(theta, a, b):
    """Arc length from angle 0 to theta (array) on x = a cos t, y = b sin t (trapezoid, fine grid)."""
    grid = np.linspace(0.0, 2 * np.pi, 20001)
    speed = np.hypot(a * np.sin(grid), b * np.cos(grid))
    cum = np.concatenate([[0.0], np.cumsum(0.5 * (speed[1:] + speed[:-1]) * np.diff(grid))])
    return np.interp(theta, grid, cum), cum[-1]


def noisy_ellipse(n_samples=100, *, noise="high", axes=(2.0, 1.0), random_state=None):
    """Points on an ellipse with isotropic Gaussian noise (paper's Figure 3, left).

    Angles are uniform on [0, 2 pi); the clean point is (a cos t, b sin t).

    Parameters
    ----------
    n_samples : int >= 3, default 100
    noise : {"none", "low", "high"} or float >= 0, default "high"
        Standard deviation (`ELLIPSE_NOISE`: low 0.02, high 0.1, our choices; the paper does not
        state its value).
    axes : (float, float), default (2, 1)
        Semi-axes (a, b).
    random_state : int, Generator or None

    Returns
    -------
    X : array (n, 2)
    arc : array (n,)
        Arc length of each clean point from angle 0; `ellipse_geodesics` turns it into the true
        geodesic distances.

    Examples
    --------
    >>> from graphclust.datasets import noisy_ellipse, ellipse_geodesics
    >>> X, arc = noisy_ellipse(100, random_state=0)
    >>> X.shape, ellipse_geodesics(arc).shape
    ((100, 2), (100, 100))
    """
    n = check_int(n_samples, "n_samples", low=3)
    sd = _noise_level(noise, ELLIPSE_NOISE, "noise")
    a = check_real(axes[0], "axes[0]", low=0, low_inclusive=False)
    b = check_real(axes[1], "axes[1]", low=0, low_inclusive=False)
    rng = check_random_state(random_state)
    t = rng.uniform(0.0, 2 * np.pi, size=n)
    X = np.column_stack([a * np.cos(t), b * np.sin(t)])
    if sd > 0:
        X = X + rng.normal(scale=sd, size=X.shape)
    arc, _ = _ellipse_arclength(t, a, b)
    return X, arc


def ellipse_geodesics(arc, axes=(2.0, 1.0)):
    """True geodesic distances on the ellipse: the shorter way round between arc positions.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.datasets import ellipse_geodesics
    >>> G = ellipse_geodesics(np.array([0.0, 1.0]), axes=(1.0, 1.0))  # the unit circle
    >>> round(float(G[0, 1]), 6)
    1.0
    """
    arc = np.asarray(arc, dtype=float).ravel()
    _, perimeter = _ellipse_arclength(0.0, float(axes[0]), float(axes[1]))
    d = np.abs(arc[:, None] - arc[None, :])
    return np.minimum(d, perimeter - d)


def _spiral_arclength(t):
    # arc length of r = t from 0 to t: (t sqrt(1 + t^2) + asinh t) / 2
    return 0.5 * (t * np.sqrt(1 + t * t) + np.arcsinh(t))


def swiss_roll(n_samples=500, *, noise="low", height=21.0, random_state=None):
    """The Swiss roll: x = t cos t, y = h, z = t sin t with t uniform on [1.5 pi, 4.5 pi].

    Parameters
    ----------
    n_samples : int >= 3, default 500
    noise : {"none", "low", "high"} or float >= 0, default "low"
        Isotropic Gaussian noise standard deviation (`SWISS_ROLL_NOISE`): "high" is 9% of the
        separation between branches (2 pi), the paper's definition; "low" is 2% (our choice).
    height : float > 0, default 21
        h is uniform on [0, height].
    random_state : int, Generator or None

    Returns
    -------
    X : array (n, 3)
    coords : array (n, 2)
        Manifold coordinates (arc length along the spiral, h) of the clean points: the true
        geodesic distances are their Euclidean distances (`swiss_roll_geodesics`).

    Examples
    --------
    >>> from graphclust.datasets import swiss_roll
    >>> X, coords = swiss_roll(500, noise="high", random_state=0)
    >>> X.shape, coords.shape
    ((500, 3), (500, 2))
    """
    n = check_int(n_samples, "n_samples", low=3)
    sd = _noise_level(noise, SWISS_ROLL_NOISE, "noise")
    height = check_real(height, "height", low=0, low_inclusive=False)
    rng = check_random_state(random_state)
    t = rng.uniform(1.5 * np.pi, 4.5 * np.pi, size=n)
    h = rng.uniform(0.0, height, size=n)
    X = np.column_stack([t * np.cos(t), h, t * np.sin(t)])
    if sd > 0:
        X = X + rng.normal(scale=sd, size=X.shape)
    return X, np.column_stack([_spiral_arclength(t), h])


def swiss_roll_geodesics(coords):
    """True geodesic distances on the Swiss roll: Euclidean distances of the manifold coordinates."""
    coords = np.asarray(coords, dtype=float)
    return cdist(coords, coords)
