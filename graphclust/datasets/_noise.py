"""Seeded uniform background noise added to a data set (the AHK paper's noisy Iris / Glass)."""

from __future__ import annotations

import numpy as np

from .._validation import check_points, check_random_state, check_real

__all__ = ["add_uniform_noise", "load_iris_noisy"]


def add_uniform_noise(X, y, fraction, *, random_state=None):
    """Append ``round(fraction * n)`` points drawn uniformly in the bounding box of `X`.

    Parameters
    ----------
    X : array (n, d)
    y : array (n,)
        Labels of the original points; noise points get label -1.
    fraction : float >= 0
        Noise points per original point (0.4 adds 40 %).
    random_state : int, Generator or None

    Returns
    -------
    X_noisy : array (n + n_noise, d)
        The original points first, then the noise.
    y_noisy : int array (n + n_noise,)
        y, then -1 for every noise point.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.datasets import add_uniform_noise
    >>> X, y = add_uniform_noise(np.eye(3), [0, 1, 2], 1.0, random_state=0)
    >>> X.shape, y.tolist()
    ((6, 3), [0, 1, 2, -1, -1, -1])
    """
    X = check_points(X, min_samples=1)
    y = np.asarray(y).ravel()
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"y must have one label per row of X ({X.shape[0]}); got {y.shape[0]}.")
    fraction = check_real(fraction, "fraction", low=0.0)
    rng = check_random_state(random_state)
    n_noise = int(round(fraction * X.shape[0]))
    lo, hi = X.min(axis=0), X.max(axis=0)
    noise = rng.uniform(lo, hi, size=(n_noise, X.shape[1]))
    return np.vstack([X, noise]), np.concatenate([y.astype(np.int64), -np.ones(n_noise, np.int64)])


def load_iris_noisy(noise=0.4, *, random_state=None):
    """Fisher's Iris (scikit-learn's bundled copy, 150 x 4, 3 classes) plus uniform noise points.

    Returns ``(X, y)`` with the 150 Iris rows first and ``round(150 * noise)`` noise rows
    labelled -1 after them (see `add_uniform_noise`).
    """
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    return add_uniform_noise(X, y, noise, random_state=random_state)
