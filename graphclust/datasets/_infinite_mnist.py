"""MNIST extended to any size by seeded small shifts and rotations ("infinite MNIST"), PCA-reduced.

The benchmark of issue 15: a million real-looking points with labels, built from what is in the
data folder. Row i < 70 000 is MNIST image i (in `load_mnist` order, train then test), unchanged;
row i >= 70 000 is image ``i % 70 000`` rotated by an angle drawn uniformly in
[-`max_rotation`, `max_rotation`] degrees about its centre and shifted by a vector drawn uniformly
in [-`max_shift`, `max_shift`]^2 pixels (bilinear interpolation, zero outside the frame), the
"infinite MNIST" idea of Loosli, Canu & Bottou (2007) with its two simplest deformations. Every
row is then projected on the top `n_components` principal axes of the 70 000 originals (mean and
axes from the originals only, so the deformed copies do not move the basis).

Determinism: deformations are drawn in blocks of `_BLOCK` rows, block b from
``np.random.default_rng([random_state, b])``, so the result depends only on (row, random_state)
and ``load_infinite_mnist(n)`` is the first n rows of ``load_infinite_mnist(N)`` for N >= n. The
principal axes come from a symmetric eigendecomposition of the 784 x 784 covariance with a fixed
sign convention (the largest-magnitude coordinate of each axis positive).

Cache: results are written to the user cache folder (``$GRAPHCLUST_CACHE``, else the platform's:
``$XDG_CACHE_HOME/graphclust`` or ``~/.cache/graphclust`` on Linux, ``~/Library/Caches/graphclust``
on macOS, ``%LOCALAPPDATA%\\graphclust\\Cache`` on Windows), one ``.npz`` per parameter set whose
name encodes the format version and every parameter; a cached file for a larger n with the same
other parameters is sliced (prefix property above). Points are stored and returned as float32
(a million 50-dimensional points take 200 MB).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

from .._validation import check_int, check_real
from ._real import load_mnist

__all__ = ["cache_dir", "load_infinite_mnist"]

#: Bumped whenever the generated numbers change (file names carry it; old files are ignored).
FORMAT_VERSION = 1

#: Rows whose deformations share one seeded generator (part of the format: do not change).
_BLOCK = 10_000

#: Images held in memory at once while deforming (bounds the working memory to ~60 MB).
_BATCH = 10_000

N_ORIGINALS = 70_000
_SIDE = 28


def cache_dir():
    """The folder where graphclust caches generated data (created on first use by the writers).

    ``$GRAPHCLUST_CACHE`` if set, else the platform's user cache folder followed by ``graphclust``:
    ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` (then ``Cache``) on Windows. Never inside the repository.

    Examples
    --------
    >>> from graphclust.datasets import cache_dir
    >>> cache_dir().name in {"graphclust", "Cache"} or "GRAPHCLUST_CACHE" in __import__("os").environ
    True
    """
    env = os.environ.get("GRAPHCLUST_CACHE")
    if env:
        return Path(env).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", home / "AppData" / "Local"))
        return base / "graphclust" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "graphclust"
    return Path(os.environ.get("XDG_CACHE_HOME") or home / ".cache") / "graphclust"


def _principal_axes(X, n_components):
    """(mean, axes (784, d)) of X by eigh of its covariance; each axis's largest entry positive."""
    mean = X.mean(axis=0)
    Xc = X - mean
    cov = Xc.T @ Xc / (X.shape[0] - 1)
    vals, vecs = np.linalg.eigh(cov)
    axes = vecs[:, ::-1][:, :n_components]
    sign = np.sign(axes[np.abs(axes).argmax(axis=0), np.arange(n_components)])
    return mean, axes * sign


def _deform(images, angles_deg, shifts):
    """Rotate each 28 x 28 image by its angle about the centre and shift it, bilinear, zero outside.

    One `scipy.ndimage.map_coordinates` call per batch: output pixel p of image b samples input
    R(-angle_b) (p - c - shift_b) + c, the batch coordinate an exact integer (no mixing).
    """
    from scipy.ndimage import map_coordinates

    b = images.shape[0]
    c = (_SIDE - 1) / 2.0
    rows, cols = np.meshgrid(np.arange(_SIDE, dtype=np.float64), np.arange(_SIDE, dtype=np.float64),
                             indexing="ij")
    theta = np.deg2rad(angles_deg)[:, None, None]
    cos, sin = np.cos(theta), np.sin(theta)
    r = rows[None] - c - shifts[:, 0, None, None]
    q = cols[None] - c - shifts[:, 1, None, None]
    src_r = cos * r - sin * q + c
    src_c = sin * r + cos * q + c
    idx = np.broadcast_to(np.arange(b, dtype=np.float64)[:, None, None], src_r.shape)
    out = map_coordinates(images.reshape(b, _SIDE, _SIDE), [idx, src_r, src_c], order=1,
                          mode="constant", cval=0.0, prefilter=False)
    return out.reshape(b, _SIDE * _SIDE)


def _deformations(start, stop, random_state, max_shift, max_rotation):
    """Angles (degrees) and shifts (pixels) of deformed rows start..stop-1 (0 = row 70 000)."""
    angles, shifts = [], []
    for blk in range(start // _BLOCK, -(-stop // _BLOCK)):
        rng = np.random.default_rng([random_state, blk])
        a = rng.uniform(-max_rotation, max_rotation, size=_BLOCK)
        s = rng.uniform(-max_shift, max_shift, size=(_BLOCK, 2))
        lo, hi = max(start, blk * _BLOCK) - blk * _BLOCK, min(stop, (blk + 1) * _BLOCK) - blk * _BLOCK
        angles.append(a[lo:hi])
        shifts.append(s[lo:hi])
    return np.concatenate(angles), np.concatenate(shifts)


def _generate(n_samples, n_components, random_state, max_shift, max_rotation):
    X, y = load_mnist("all")
    if X.shape != (N_ORIGINALS, _SIDE * _SIDE):
        raise ValueError(f"load_mnist returned shape {X.shape}; expected ({N_ORIGINALS}, 784).")
    mean, axes = _principal_axes(X, n_components)
    out = np.empty((n_samples, n_components), dtype=np.float32)
    first = min(n_samples, N_ORIGINALS)
    out[:first] = (X[:first] - mean) @ axes
    for start in range(N_ORIGINALS, n_samples, _BATCH):
        stop = min(start + _BATCH, n_samples)
        base = np.arange(start, stop) % N_ORIGINALS
        angles, shifts = _deformations(start - N_ORIGINALS, stop - N_ORIGINALS, random_state,
                                       max_shift, max_rotation)
        out[start:stop] = (_deform(X[base], angles, shifts) - mean) @ axes
    labels = y[np.arange(n_samples) % N_ORIGINALS].astype(np.int64)
    return out, labels


def _fmt(value):
    return f"{value:g}".replace(".", "p").replace("-", "m")


def _cache_name(n_samples, n_components, random_state, max_shift, max_rotation):
    return (f"infinite_mnist_v{FORMAT_VERSION}_d{n_components}_seed{random_state}"
            f"_shift{_fmt(max_shift)}_rot{_fmt(max_rotation)}_n{n_samples}.npz")


def _cached(folder, n_samples, name):
    """The path of the smallest cached file with the same parameters and n >= n_samples."""
    exact = folder / name
    if exact.is_file():
        return exact
    stem = name.rsplit("_n", 1)[0] + "_n"
    best = None
    for path in folder.glob(stem + "*.npz"):
        tail = path.name[len(stem):-len(".npz")]
        if tail.isdigit() and int(tail) >= n_samples and (best is None or int(tail) < best[0]):
            best = (int(tail), path)
    return None if best is None else best[1]


def load_infinite_mnist(
    n_samples=1_000_000,
    n_components=50,
    *,
    random_state=0,
    max_shift=2.0,
    max_rotation=10.0,
    cache=True,
):
    """MNIST extended to `n_samples` images by seeded shifts and rotations, PCA-reduced.

    Rows 0..69 999 are the MNIST originals (train then test, as `load_mnist` orders them);
    row i >= 70 000 is original ``i % 70 000`` rotated by an angle uniform in
    [-`max_rotation`, `max_rotation`] degrees and shifted by up to `max_shift` pixels along each
    axis (bilinear). All rows are projected on the top `n_components` principal axes of the
    70 000 originals. Labels are the originals' digits, so NMI against them is meaningful.

    Parameters
    ----------
    n_samples : int, default 1 000 000
        Number of points, 1 <= n_samples <= 10^8.
    n_components : int, default 50
        PCA dimension, 1 <= n_components <= 784.
    random_state : int, default 0
        Non-negative seed of the deformations (an int, since it names the cache file).
    max_shift : float, default 2.0
        Largest shift in pixels along each axis, 0 <= max_shift <= 8.
    max_rotation : float, default 10.0
        Largest rotation in degrees, 0 <= max_rotation <= 180.
    cache : bool, default True
        Read and write the result under `cache_dir()`. With False nothing is read or written.

    Returns
    -------
    X : array (n_samples, n_components), float32
    y : array (n_samples,), int64
        Digits 0-9.

    Raises
    ------
    DataNotFoundError
        MNIST (``mnist/mnist.npz`` in the data folder, see `data_dir`) is needed to generate a
        result that is not cached.

    Notes
    -----
    Deterministic given the parameters (see the module notes for the seeding), on any machine
    with the same MNIST file; ``load_infinite_mnist(n)`` equals the first n rows of
    ``load_infinite_mnist(N)`` for N >= n, and a cached larger N serves a smaller n. Generation
    takes about a minute per million rows on one core; the cache file of a million rows is
    about 200 MB. Rows are in a fixed order: original j and its deformed copies are 70 000 rows
    apart, so shuffle or subsample at random if the order matters to a method.

    References
    ----------
    Loosli, Canu & Bottou, "Training invariant support vector machines using selective
    sampling", in Large Scale Kernel Machines, MIT Press, 2007 (the infinite MNIST set).

    Examples
    --------
    >>> from graphclust.datasets import load_infinite_mnist
    >>> X, y = load_infinite_mnist(71_000, 50, random_state=0)  # doctest: +SKIP
    >>> X.shape, X.dtype, y[:3].tolist(), bool((y[70_000:] == y[:1_000]).all())  # doctest: +SKIP
    ((71000, 50), dtype('float32'), [5, 0, 4], True)
    """
    n_samples = check_int(n_samples, "n_samples", low=1, high=100_000_000)
    n_components = check_int(n_components, "n_components", low=1, high=_SIDE * _SIDE)
    if not isinstance(random_state, (int, np.integer)) or isinstance(random_state, bool):
        raise TypeError(
            "random_state must be a non-negative int (it seeds the deformations and names the "
            f"cache file); got {random_state!r}."
        )
    random_state = check_int(random_state, "random_state", low=0)
    max_shift = check_real(max_shift, "max_shift", low=0, high=8)
    max_rotation = check_real(max_rotation, "max_rotation", low=0, high=180)
    if not isinstance(cache, (bool, np.bool_)):
        raise TypeError(f"cache must be True or False; got {cache!r}.")
    name = _cache_name(n_samples, n_components, random_state, max_shift, max_rotation)
    folder = cache_dir()
    if cache:
        path = _cached(folder, n_samples, name) if folder.is_dir() else None
        if path is not None:
            try:
                with np.load(path, allow_pickle=False) as z:
                    return z["X"][:n_samples].copy(), z["y"][:n_samples].copy()
            except (OSError, ValueError, KeyError):
                pass  # unreadable (e.g. a partial write from another tool): regenerate
    X, y = _generate(n_samples, n_components, random_state, max_shift, max_rotation)
    if cache:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{name}.{os.getpid()}.tmp.npz"
        np.savez(tmp, X=X, y=y)
        os.replace(tmp, folder / name)
    return X, y
