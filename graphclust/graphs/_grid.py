"""Pixel-grid graphs for images (4- or 8-connected), with (position, intensity) distances."""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import check_not_complex, check_real
from ._graph import Graph
from ._numba import edge_length_kernel
from ._scale import rescale, scale_back

__all__ = ["grid_graph", "pixel_features", "check_image", "ImageRangeWarning"]


#: How far an image may stray outside [0, 1] under ``unit_range=True`` before it is warned
#: about (one grey level of 8-bit data), and the least span of intensities it is not warned
#: about: rounding and interpolation move intensities by less.
UNIT_RANGE_SLACK = 1.0 / 255.0


class ImageRangeWarning(UserWarning):
    """An image's intensities are not on the [0, 1] scale that the segmentations are set for."""


def check_image(image, name="image", *, unit_range=False, stacklevel=3):
    """Return a float64 (H, W, C) copy of a grey (H, W) or colour (H, W, C) image.

    Integer images are scaled to [0, 1] by their dtype's maximum (8- and 16-bit types; wider
    ones, which images built from Python ints have, by the bit depth their values fit, 255 or
    65 535: `integer_image_scale`); float images are used as is.

    With ``unit_range=True`` (the segmentations, whose scales are set in [0, 1] intensities
    and whose colour space is sRGB's), an `ImageRangeWarning` when the intensities stray outside
    [0, 1] by more than `UNIT_RANGE_SLACK` (a float copy of an 8-bit image, physical units) or
    span less than it without being all equal (nearly uniform at these scales), at
    `stacklevel` (``warnings.warn``'s, counted from here). The image is used as given either
    way.
    """
    arr = np.asarray(image)
    check_not_complex(arr, name)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"{name} must be a numeric array; got dtype {arr.dtype}.")
    if arr.ndim not in (2, 3) or (arr.ndim == 3 and not 1 <= arr.shape[2] <= 4):
        raise ValueError(
            f"{name} must have shape (H, W) for grey or (H, W, C) with 1 <= C <= 4 channels; got "
            f"shape {arr.shape}."
        )
    if arr.shape[0] * arr.shape[1] < 2:
        raise ValueError(f"{name} has {arr.shape[0] * arr.shape[1]} pixel(s); at least 2 are needed.")
    if np.issubdtype(arr.dtype, np.integer):
        out = arr.astype(np.float64) / integer_image_scale(arr)
    else:
        out = arr.astype(np.float64)
        if not np.all(np.isfinite(out)):
            raise ValueError(f"{name} contains NaN or infinite values; all pixels must be finite.")
    if out.ndim == 2:
        out = out[:, :, None]
    if unit_range:
        lo, hi = float(out.min()), float(out.max())
        fix = f"({name} - {name}.min()) / ({name}.max() - {name}.min())"
        if lo < -UNIT_RANGE_SLACK or hi > 1.0 + UNIT_RANGE_SLACK:
            warnings.warn(
                f"{name}'s intensities lie in [{lo:.6g}, {hi:.6g}], while the segmentation's "
                f"scales are set for [0, 1]: a float copy of an 8-bit image should be divided "
                f"by 255 (or passed as integers), noise added to a [0, 1] image clipped, and "
                f"other units rescaled, e.g. {fix}.", ImageRangeWarning, stacklevel=stacklevel)
        elif 0.0 < hi - lo < UNIT_RANGE_SLACK:
            warnings.warn(
                f"{name}'s intensities span {hi - lo:.3g}, less than one grey level of 8-bit "
                f"data (1/255) in the [0, 1] range the segmentation's scales are set for: it is "
                f"segmented as nearly uniform. If its contrast matters, stretch it first, e.g. "
                f"{fix}.", ImageRangeWarning, stacklevel=stacklevel)
    return out


def integer_image_scale(arr):
    """The value that an integer image's full intensity has: its dtype's maximum up to 16 bits.

    An image of 32 or 64-bit integers is most often 8 or 16-bit data held in the default
    integer type (``np.array`` of Python ints, ``astype(int)``), so dividing by 2^31 or 2^63
    would leave it at about 1e-17 of the range, one grey level to the segmentations. Such an
    image is scaled by the smallest of 255, 65 535 and its dtype's maximum that covers its
    largest absolute value.

    >>> import numpy as np
    >>> integer_image_scale(np.array([[0, 200]], dtype=np.int64))
    255.0
    >>> integer_image_scale(np.array([[0, 200]], dtype=np.uint16))
    65535.0
    """
    top = float(np.iinfo(arr.dtype).max)
    if arr.dtype.itemsize <= 2:
        return top
    peak = float(np.abs(arr).max()) if arr.size else 0.0
    return next(s for s in (255.0, 65535.0, top) if peak <= s)


def pixel_features(image, *, position_weight=1.0, intensity_weight=1.0):
    """Feature vector of every pixel, (row, column, intensity...) weighted: shape (H W, 2 + C).

    Euclidean distance between two features is the paper's weighted distance
    d^2 = position_weight^2 |p_i - p_j|^2 + intensity_weight^2 |c_i - c_j|^2, with positions in
    pixels and intensities as returned by `check_image` (integers scaled to [0, 1]). Pixels are
    numbered in row-major order (index = row * W + column).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust import pixel_features
    >>> pixel_features(np.zeros((2, 3))).shape
    (6, 3)
    """
    img = check_image(image)
    position_weight = check_real(position_weight, "position_weight", low=0.0)
    intensity_weight = check_real(intensity_weight, "intensity_weight", low=0.0)
    H, W, C = img.shape
    rows, cols = np.divmod(np.arange(H * W), W)
    return np.column_stack(
        [position_weight * rows, position_weight * cols, intensity_weight * img.reshape(H * W, C)]
    ).astype(np.float64)


def _grid_edges(H, W, connectivity):
    idx = np.arange(H * W).reshape(H, W)
    pairs = [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]
    if connectivity == 8:
        pairs += [(idx[:-1, :-1], idx[1:, 1:]), (idx[:-1, 1:], idx[1:, :-1])]
    u = np.concatenate([a.ravel() for a, _ in pairs]).astype(np.int64)
    v = np.concatenate([b.ravel() for _, b in pairs]).astype(np.int64)
    return u, v


def grid_graph(image, connectivity=8, *, position_weight=1.0, intensity_weight=1.0):
    """Graph of an image's pixel grid: each pixel joined to its 4 or 8 grid neighbours.

    Edge length is the weighted euclidean distance of `pixel_features` (pixel location and
    intensity or colour). The graph has about 4 H W edges for 8-connectivity, so full-resolution
    images (481 x 321 = 154 401 pixels, about 616 000 edges) are cheap. Use `pixel_features` with
    the same weights and ``candidates=grid_graph(...)`` to build PMST / DMST ensembles constrained
    to the grid, as in the paper's image experiment.

    Parameters
    ----------
    image : array (H, W) or (H, W, C)
        Grey or colour image; integer dtypes are scaled to [0, 1].
    connectivity : {4, 8}, default 8
    position_weight, intensity_weight : float >= 0, default 1.0

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> g = gc.grid_graph(np.zeros((3, 4)), connectivity=4)
    >>> g.n_nodes, g.n_edges
    (12, 17)
    """
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8; got {connectivity!r}.")
    F = pixel_features(image, position_weight=position_weight, intensity_weight=intensity_weight)
    H, W = np.shape(image)[:2]
    u, v = _grid_edges(H, W, connectivity)
    F, s = rescale(F)  # exact power-of-two scaling: no under- or overflow at any intensity scale
    d = scale_back(edge_length_kernel(F, u, v), s, name="image")
    return Graph._from_edges(
        H * W,
        u,
        v,
        d,
        provenance={
            "builder": "grid_graph",
            "shape": (int(H), int(W)),
            "connectivity": connectivity,
            "position_weight": float(position_weight),
            "intensity_weight": float(intensity_weight),
        },
    )
