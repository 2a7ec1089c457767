"""Superpixels on the pixel grid and the region adjacency graph above them.

Over-segmentation by the graph engine's own machinery (Kruskal order and union-find in numba).

`graph_superpixels` is the Felzenszwalb & Huttenlocher (2004) merge on the 8-connected grid: edges
visited by increasing weight (Kruskal's order), two components joined when the edge is no heavier
than both components' internal difference plus k / size; then components smaller than
`min_size` are absorbed along their lightest edges. Edge weights are never stored as a graph:
they are recomputed from the (H, W, C) feature image inside the kernels, so a 12-megapixel image
needs the 4 H W edge weights and their sort order plus the union-find arrays, nothing more.

`refine_labels` brings labels computed on a downsampled copy back to full resolution;
`region_adjacency` and `region_statistics` give the region adjacency graph (border lengths,
summed border strength) and the additive statistics of every region (pixel count, feature sums),
which `graphclust.cluster.merge_hierarchy` agglomerates.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._validation import check_int, check_real
from ._numba import _find  # union-find root with path halving (one implementation)

__all__ = [
    "graph_superpixels",
    "grid_edge_weights",
    "refine_labels",
    "region_adjacency",
    "region_statistics",
]

# the four forward neighbour offsets of the 8-connected grid: right, down, down-right, down-left
_DY = np.array([0, 1, 1, 1])
_DX = np.array([1, 0, 1, -1])


@njit(cache=True)
def _edge_weights(F, nbr):
    H, W, C = F.shape
    out = np.full(H * W * nbr, np.inf, dtype=np.float32)
    for y in range(H):
        for x in range(W):
            base = (y * W + x) * nbr
            for t in range(nbr):
                yy = y + _DY[t]
                xx = x + _DX[t]
                if yy >= H or xx < 0 or xx >= W:
                    continue
                s = 0.0
                for c in range(C):
                    d = F[y, x, c] - F[yy, xx, c]
                    s += d * d
                out[base + t] = np.sqrt(s)
    return out


def grid_edge_weights(F, connectivity=8):
    """Euclidean feature difference of every forward grid edge: float32 array (H W nbr,).

    Edge ``(p * nbr + t)`` joins pixel p = y W + x to its t-th forward neighbour (right, down,
    down-right, down-left; the first two for 4-connectivity); edges leaving the image are inf.
    """
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8; got {connectivity!r}.")
    nbr = 4 if connectivity == 8 else 2
    return _edge_weights(np.ascontiguousarray(F, dtype=np.float32), nbr)


@njit(cache=True)
def _felzenszwalb(H, W, nbr, w, order, k, min_size):
    n = H * W
    parent = np.arange(n)
    size = np.ones(n, dtype=np.int64)
    internal = np.zeros(n, dtype=np.float32)
    for t in range(order.shape[0]):
        e = order[t]
        we = w[e]
        if not np.isfinite(we):
            break
        p = e // nbr
        j = e - p * nbr
        q = p + _DY[j] * W + _DX[j]
        a = _find(parent, p)
        b = _find(parent, q)
        if a == b:
            continue
        if we <= min(internal[a] + k / size[a], internal[b] + k / size[b]):
            if size[a] < size[b]:
                a, b = b, a
            parent[b] = a
            size[a] += size[b]
            internal[a] = we  # edges come in increasing order: the new maximum of the MST
    if min_size > 1:
        for t in range(order.shape[0]):
            e = order[t]
            if not np.isfinite(w[e]):
                break
            p = e // nbr
            j = e - p * nbr
            q = p + _DY[j] * W + _DX[j]
            a = _find(parent, p)
            b = _find(parent, q)
            if a != b and (size[a] < min_size or size[b] < min_size):
                if size[a] < size[b]:
                    a, b = b, a
                parent[b] = a
                size[a] += size[b]
    labels = np.empty(n, dtype=np.int64)
    remap = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):
        r = _find(parent, i)
        if remap[r] < 0:
            remap[r] = count
            count += 1
        labels[i] = remap[r]
    return labels, count


def graph_superpixels(features, k, min_size, *, connectivity=8, weights=None):
    """Felzenszwalb-Huttenlocher over-segmentation of a feature image on its pixel grid.

    Parameters
    ----------
    features : float array (H, W, C)
        Per-pixel features (e.g. smoothed Lab); edge weight = their euclidean difference.
    k : float > 0
        Scale of the merge predicate: components join while the joining edge is at most
        min(Int(A) + k / |A|, Int(B) + k / |B|) (Int: largest MST edge inside), so larger k gives
        larger regions, in units of the feature difference times pixels.
    min_size : int >= 1
        Components smaller than this are merged into a neighbour afterwards (lightest edge first).
    connectivity : {4, 8}, default 8
    weights : float32 array or None
        Precomputed `grid_edge_weights` (e.g. from another feature image); None: from `features`.

    Returns
    -------
    labels : int64 array (H, W)
        Superpixel of each pixel, numbered 0.. in row-major order of first pixel.
    count : int

    Examples
    --------
    >>> import numpy as np
    >>> F = np.zeros((20, 30, 1)); F[:, 15:] = 10.0
    >>> labels, count = graph_superpixels(F, 1.0, 5)
    >>> count, np.unique(labels[:, :15]).tolist(), np.unique(labels[:, 15:]).tolist()
    (2, [0], [1])
    """
    k = check_real(k, "k", low=0.0, low_inclusive=False)
    min_size = check_int(min_size, "min_size", low=1)
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8; got {connectivity!r}.")
    F = np.ascontiguousarray(features, dtype=np.float32)
    if F.ndim == 2:
        F = F[:, :, None]
    if F.ndim != 3:
        raise ValueError(f"features must have shape (H, W) or (H, W, C); got {np.shape(features)}.")
    H, W, _ = F.shape
    nbr = 4 if connectivity == 8 else 2
    w = grid_edge_weights(F, connectivity) if weights is None else weights
    order = np.argsort(w, kind="stable")
    labels, count = _felzenszwalb(H, W, nbr, w, order, np.float32(k), int(min_size))
    return labels.reshape(H, W), int(count)


@njit(cache=True)
def _refine(lab, coarse, means, sy, sx):
    H, W, C = lab.shape
    h, w = coarse.shape
    out = np.empty((H, W), dtype=np.int64)
    for y in range(H):
        yc = min(int((y + 0.5) * sy), h - 1)
        for x in range(W):
            xc = min(int((x + 0.5) * sx), w - 1)
            own = coarse[yc, xc]
            same = True
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    yy = min(max(yc + dy, 0), h - 1)
                    xx = min(max(xc + dx, 0), w - 1)
                    if coarse[yy, xx] != own:
                        same = False
            if same:
                out[y, x] = own
                continue
            best = own
            bestd = np.inf
            for dy in range(-1, 2):
                for dx in range(-1, 2):
                    yy = min(max(yc + dy, 0), h - 1)
                    xx = min(max(xc + dx, 0), w - 1)
                    cand = coarse[yy, xx]
                    d = 0.0
                    for c in range(C):
                        t = lab[y, x, c] - means[cand, c]
                        d += t * t
                    if d < bestd:
                        bestd = d
                        best = cand
            out[y, x] = best
    return out


def refine_labels(lab, coarse, means):
    """Full-resolution labels from labels computed on a downsampled copy of the image.

    Each full-resolution pixel maps to a pixel of the coarse label image; where its 3 x 3
    coarse neighbourhood holds one label the pixel takes it, otherwise (a band about one coarse
    pixel wide along every boundary) it takes the neighbouring label whose region mean colour
    is closest to its own. Boundaries are thus placed at full-resolution precision where
    colour decides them; regions (and the hierarchy above them) are unchanged.

    Parameters
    ----------
    lab : float32 array (H, W, C)
        Full-resolution features (Lab).
    coarse : int64 array (h, w)
        Labels 0..n-1 on the downsampled grid.
    means : float array (n, C)
        Mean feature of every label.

    Returns
    -------
    int64 array (H, W)

    Examples
    --------
    >>> import numpy as np
    >>> lab = np.zeros((8, 8, 1), np.float32); lab[:, 3:] = 1.0   # edge at column 3
    >>> coarse = np.array([[0, 1, 1, 1]] * 4)                        # coarse edge at column 2
    >>> refine_labels(lab, coarse, np.array([[0.0], [1.0]]))[0].tolist()
    [0, 0, 0, 1, 1, 1, 1, 1]
    """
    lab = np.ascontiguousarray(lab, dtype=np.float32)
    coarse = np.ascontiguousarray(coarse, dtype=np.int64)
    sy = coarse.shape[0] / lab.shape[0]
    sx = coarse.shape[1] / lab.shape[1]
    return _refine(lab, coarse, np.ascontiguousarray(means, dtype=np.float64), sy, sx)


def region_adjacency(labels, strength=None, n_regions=None):
    """Adjacent superpixel pairs with their border length and summed contour strength.

    Borders are counted on the 4-connected grid: every pair of horizontally or vertically
    adjacent pixels with different labels is one unit of border, of strength
    max(strength[p], strength[q]) (the contour map's ridge lies on one side or the other).

    Parameters
    ----------
    labels : int array (H, W)
        Superpixels numbered 0..n_regions-1.
    strength : float array (H, W) or None
        Contour map; None: every border pixel pair has strength 0 (``total`` is zero).
    n_regions : int or None
        Number of regions; None: ``labels.max() + 1``.

    Returns
    -------
    a, b : int64 arrays (m,)
        Region pairs, a < b, sorted.
    length : float64 array (m,)
        Border length (pixel pairs).
    total : float64 array (m,)
        Summed strength along the border (mean = total / length).

    Examples
    --------
    >>> import numpy as np
    >>> lab = np.array([[0, 0, 1], [0, 0, 1], [2, 2, 2]])
    >>> a, b, length, total = region_adjacency(lab, np.ones((3, 3)))
    >>> a.tolist(), b.tolist(), length.tolist()
    ([0, 0, 1], [1, 2, 2], [2.0, 2.0, 1.0])
    """
    labels = np.asarray(labels)
    E = None if strength is None else np.asarray(strength)
    m = int(labels.max()) + 1 if n_regions is None else int(n_regions)
    keys, vals = [], []
    for sl1, sl2 in (
        ((slice(None), slice(None, -1)), (slice(None), slice(1, None))),
        ((slice(None, -1), slice(None)), (slice(1, None), slice(None))),
    ):
        l1, l2 = labels[sl1], labels[sl2]
        diff = l1 != l2
        x, y = l1[diff].astype(np.int64), l2[diff].astype(np.int64)
        keys.append(np.minimum(x, y) * m + np.maximum(x, y))
        if E is not None:
            vals.append(np.maximum(E[sl1][diff], E[sl2][diff]).astype(np.float64))
    keys = np.concatenate(keys)
    uniq, inv = np.unique(keys, return_inverse=True)
    length = np.bincount(inv, minlength=uniq.size).astype(np.float64)
    if E is None:
        total = np.zeros(uniq.size)
    else:
        total = np.bincount(inv, weights=np.concatenate(vals), minlength=uniq.size)
    return uniq // m, uniq % m, length, total


def region_statistics(labels, features, n_regions=None):
    """Pixel count, feature sums and sums of squares of every region (additive statistics:
    those of a union of regions are the sums).

    Parameters
    ----------
    labels : int array (H, W)
        Regions numbered 0..n_regions-1.
    features : float array (H, W) or (H, W, C)
    n_regions : int or None
        None: ``labels.max() + 1``.

    Returns
    -------
    size : float64 (n,)
    sums : float64 (n, C)
    squares : float64 (n, C)

    Examples
    --------
    >>> import numpy as np
    >>> size, sums, sq = region_statistics(np.array([[0, 0, 1]]), np.array([[1.0, 3.0, 5.0]]))
    >>> size.tolist(), sums.ravel().tolist(), sq.ravel().tolist()
    ([2.0, 1.0], [4.0, 5.0], [10.0, 25.0])
    """
    labels = np.asarray(labels).ravel()
    F = np.asarray(features).reshape(labels.size, -1)
    n = int(labels.max()) + 1 if n_regions is None else int(n_regions)
    size = np.bincount(labels, minlength=n).astype(np.float64)
    cols = range(F.shape[1])
    sums = np.column_stack([np.bincount(labels, weights=F[:, c], minlength=n) for c in cols])
    sq = np.column_stack(
        [np.bincount(labels, weights=F[:, c].astype(np.float64) ** 2, minlength=n) for c in cols]
    )
    return size, sums, sq
