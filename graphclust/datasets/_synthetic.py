"""Seeded generators of the papers' synthetic sets: two / three moons, two / three spirals.

Each returns ``(X, y)``: float64 points (n, 2) and int64 labels 0..m-1 in generation order (all of
class 0 first). Noise is isotropic Gaussian with standard deviation `noise` in the units of X.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_random_state, check_real

__all__ = ["two_moons", "three_moons", "two_spirals", "three_spirals"]


def _split(n_samples, m):
    n_samples = check_int(n_samples, "n_samples", low=m)
    sizes = np.full(m, n_samples // m)
    sizes[: n_samples % m] += 1
    return sizes


def _moons(n_samples, m, noise, random_state):
    sizes = _split(n_samples, m)
    noise = check_real(noise, "noise", low=0)
    rng = check_random_state(random_state)
    # moon 0: upper arc centred (0, 0); moon 1: lower arc centred (1, 0.5) (the classic
    # interlocking pair); moon 2: upper arc centred (2, 1). Nearest gaps between clean arcs:
    # 0.5 (moons 0-1 and 1-2) and 0.41 (moons 0-2).
    centres = [(0.0, 0.0, 1.0), (1.0, 0.5, -1.0), (2.0, 1.0, 1.0)]
    X, y = [], []
    for k in range(m):
        t = rng.uniform(0.0, np.pi, size=sizes[k])
        cx, cy, up = centres[k]
        X.append(np.c_[cx + np.cos(t) * (1 if up > 0 else -1), cy + up * np.sin(t)])
        y.append(np.full(sizes[k], k, dtype=np.int64))
    X = np.concatenate(X)
    X += rng.normal(scale=noise, size=X.shape) if noise > 0 else 0.0
    return X, np.concatenate(y)


def two_moons(n_samples=400, *, noise=0.05, random_state=None):
    """Two interlocking half circles of radius 1 (the classic "two moons").

    Parameters
    ----------
    n_samples : int, default 400
        Total points, split as evenly as possible.
    noise : float, default 0.05
        Standard deviation of the Gaussian noise added to each coordinate (arcs 0.5 apart).
    random_state : int, Generator or None

    Returns
    -------
    X : array (n_samples, 2)
    y : int array (n_samples,)

    Examples
    --------
    >>> from graphclust.datasets import two_moons
    >>> X, y = two_moons(10, random_state=0)
    >>> X.shape, y.tolist()
    ((10, 2), [0, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    """
    return _moons(n_samples, 2, noise, random_state)


def three_moons(n_samples=600, *, noise=0.05, random_state=None):
    """Three interlocking half circles of radius 1 (upper, lower, upper), arcs >= 0.41 apart.

    See `two_moons` for the parameters.

    Examples
    --------
    >>> from graphclust.datasets import three_moons
    >>> X, y = three_moons(9, random_state=0)
    >>> sorted(set(y.tolist()))
    [0, 1, 2]
    """
    return _moons(n_samples, 3, noise, random_state)


def _spirals(n_samples, m, noise, turns, random_state):
    sizes = _split(n_samples, m)
    noise = check_real(noise, "noise", low=0)
    turns = check_real(turns, "turns", low=0, low_inclusive=False)
    rng = check_random_state(random_state)
    t0, t1 = 0.5 * np.pi, 0.5 * np.pi + 2 * np.pi * turns
    X, y = [], []
    for k in range(m):
        # uniform in arc length: the arc length of r = t grows like t^2 / 2
        t = np.sqrt(rng.uniform(t0**2, t1**2, size=sizes[k]))
        phase = 2 * np.pi * k / m
        X.append(np.c_[t * np.cos(t + phase), t * np.sin(t + phase)] / t1)
        y.append(np.full(sizes[k], k, dtype=np.int64))
    X = np.concatenate(X)
    X += rng.normal(scale=noise, size=X.shape) if noise > 0 else 0.0
    return X, np.concatenate(y)


def two_spirals(n_samples=600, *, noise=0.01, turns=1.5, random_state=None):
    """Two interleaved Archimedean spirals r = t (scaled to radius 1), points uniform in arc length.

    Parameters
    ----------
    n_samples : int, default 600
    noise : float, default 0.01
        Gaussian noise per coordinate (arms are 2 pi / (m t_max) ~ 0.31 apart for two arms).
    turns : float, default 1.5
        Turns of each arm.
    random_state : int, Generator or None

    Returns
    -------
    X : array (n_samples, 2)
    y : int array (n_samples,)

    Examples
    --------
    >>> from graphclust.datasets import two_spirals
    >>> X, y = two_spirals(100, random_state=0)
    >>> X.shape, int(y.sum())
    ((100, 2), 50)
    """
    return _spirals(n_samples, 2, noise, turns, random_state)


def three_spirals(n_samples=900, *, noise=0.01, turns=1.5, random_state=None):
    """Three interleaved spirals (arms ~0.21 apart); see `two_spirals`.

    Examples
    --------
    >>> from graphclust.datasets import three_spirals
    >>> X, y = three_spirals(90, random_state=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((90, 2), [0, 1, 2])
    """
    return _spirals(n_samples, 3, noise, turns, random_state)
