"""Image segmentation on pixel grids: the default region hierarchy, and pixel-grid clusterers.

Default (``method="hierarchy"``): CIE Lab colour and an edge-preserving texture channel
(`graphclust.graphs.rgb_to_lab`, `local_contrast`); superpixels by the Felzenszwalb-Huttenlocher
merge on the 8-connected grid (`graph_superpixels`, Kruskal order and union-find in numba); their
region adjacency graph (`region_adjacency`); the piecewise-constant Mumford-Shah greedy merge of
adjacent regions (`graphclust.cluster.merge_hierarchy`), whose merge heights are an ultrametric:
every level is a segmentation and the levels nest (`SegmentationHierarchy`, `image_hierarchy`).
The level is the Mumford-Shah scale lambda = 70 (Lab units, one constant for every image), so the
number of segments follows the image; an integer `n_segments` cuts at that count instead. At a
scale, the cut's regions thinner than the texture window are judged by their colour alone
(`graphclust.cluster.absorb_thin_regions`): no strip along a strong edge stays a segment.
Images above `WORKING_PIXELS` are segmented on an anti-aliased copy of `REFERENCE_PIXELS` pixels
and the superpixels are brought back to full resolution (`refine_labels`).

Pixel-grid clusterers (``method="njw" | "ahk" | "consistency"``, the paper's experiments): every
pixel is a node of the grid / PMST / DMST graph and the clusterer runs at full resolution (NJW and
AHK by shift-invert Lanczos on one sparse LU; consistency by LU solves).

`segmentation_memory` estimates the peak memory from the shape, and `segment_image` refuses jobs
above `max_memory` before any work. Image files are read and written by `graphclust.io`,
segmentations are scored by `graphclust.metrics` and drawn by `graphclust.plots`; their old
names in this module still work, with a DeprecationWarning naming the new place. Measured scores
and times: ``docs/applications.md``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import ndimage

from ._deprecation import moved_names
from ._progress import Progress
from ._validation import check_int, check_option, check_random_state, check_real
from ._region_hierarchy import SegmentationHierarchy, relabel_by_first_appearance
from .cluster import MERGE_CRITERIA, merge_hierarchy, njw_labels
from .graphs import affinity, check_image, default_sigma, dmst_graph, gaussian_smooth
from .graphs import graph_superpixels, grid_edge_weights, grid_graph, local_contrast
from .graphs import pixel_features, pmst_graph, refine_labels, region_adjacency
from .graphs import region_statistics, rgb_to_lab

__all__ = [
    "segment_image",
    "image_hierarchy",
    "segmentation_memory",
    "SegmentationHierarchy",
    "HIERARCHY_DEFAULTS",
    "SEGMENTATION_GRAPHS",
    "SEGMENTATION_METHODS",
    "DEFAULT_MAX_MEMORY",
]

SEGMENTATION_GRAPHS = ("grid", "pmst", "dmst")
SEGMENTATION_METHODS = ("hierarchy", "njw", "ahk", "consistency")
#: `segment_image` refuses jobs whose estimated peak memory exceeds this (bytes) unless told more.
DEFAULT_MAX_MEMORY = 8 * 2**30
#: Settings of the default hierarchy for a 481 x 321 image (lengths scale with
#: f = sqrt(H W / REFERENCE_PIXELS), areas with f^2, lambda with sqrt(f)); ``scale`` is the one
#: constant chosen on the 20 BSDS500 development images (docs/applications.md).
HIERARCHY_DEFAULTS = {
    "superpixel_k": 30.0,  # Felzenszwalb-Huttenlocher k, Lab units x pixels
    "superpixel_min_size": 30,  # pixels
    "superpixel_smoothing": 0.8,  # Gaussian sigma (pixels) of Lab before the superpixel graph
    "texture_scale": 5.0,  # pixels
    "texture_weight": 3.0,  # weight of the texture channel against Lab units
    "size_prior": 300.0,  # pixels: smaller regions are merged first
    "scale": 70.0,  # the Mumford-Shah lambda of the default level
    "criterion": "mumford-shah",  # merge_hierarchy's dissimilarity
}
#: pixels of a 481 x 321 image, the size the constants above are given for
REFERENCE_PIXELS = 154401
#: images with more pixels are segmented on a copy of REFERENCE_PIXELS pixels
WORKING_PIXELS = 2 * REFERENCE_PIXELS
#: the stages of `image_hierarchy`, in order (progress lines)
HIERARCHY_STAGES = ("Lab colour and texture", "superpixels", "region adjacency graph",
                    "full-resolution boundaries", "merging regions")

#: Names that moved out of this module (old name -> new place); importing them from here warns.
_MOVED = {
    "read_image": "graphclust.io.read_image",
    "save_image": "graphclust.io.save_image",
    "probabilistic_rand_index": "graphclust.metrics.probabilistic_rand_index",
    "variation_of_information": "graphclust.metrics.variation_of_information",
    "segmentation_covering": "graphclust.metrics.segmentation_covering",
    "occluder_error": "graphclust.metrics.occluder_error",
    "overlay": "graphclust.plots.overlay",
    "plot_segmentation": "graphclust.plots.plot_segmentation",
}


def _axes_of(plot_segmentation):
    """The old contract of ``segmentation.plot_segmentation``: it returned the Axes drawn on."""

    def plot_segmentation_axes(image, labels, *, ax=None, title=None, path=None):
        fig = plot_segmentation(image, labels, ax=ax, title=title, path=path)
        return ax if ax is not None else fig.axes[0]

    return plot_segmentation_axes


__getattr__ = moved_names(
    __name__, _MOVED,
    adapters={"plot_segmentation": (_axes_of, "which returns the Figure, not the Axes")},
)


# -------------------------------------------------------------------------------------- memory
def segmentation_memory(shape, *, graph="grid", method="hierarchy", n_segments=8, n_trees=20,
                        max_segments=10):
    """Estimated peak memory (bytes) of `segment_image` on an image of this shape.

    ``method="hierarchy"``: 200 bytes per pixel up to `WORKING_PIXELS` (features, the 4 grid edge
    weights per pixel, their sort order, union-find arrays) and 130 bytes per pixel above (the
    decoded image, its float and Lab copies and the full-resolution labels; the hierarchy itself
    is built on a copy of `REFERENCE_PIXELS` pixels): 1.45 GiB for 4000 x 3000, where the whole
    process peaked at 1.36 GiB (scripts/bench_segmentation.py).

    Pixel-grid methods: the model counts, per pixel, the features and graph (distances,
    multiplicity and affinity as CSR, ~8 edges per pixel stored twice), the ensemble build (PMST:
    per-tree edge arrays), the eigensolver (the sparse LU fill of the shift-invert factorisation
    of the 2-D grid matrix, ~12 log2(n) entries per pixel; NJW: Lanczos vectors; AHK: its m = 100
    eigenpairs; consistency: its deflation basis and solve blocks), with a 1.5 safety factor.

    The estimates err on the high side and are meant to refuse hopeless jobs early (measured
    peak memory beside them: ``docs/applications.md``).

    Examples
    --------
    >>> from graphclust.segmentation import segmentation_memory
    >>> round(segmentation_memory((3000, 4000)) / 2**30, 2)
    1.45
    >>> round(segmentation_memory((321, 481), method="njw") / 2**30, 2)
    0.79
    """
    if len(shape) < 2:
        raise ValueError(f"shape must be (H, W) or (H, W, C); got {shape!r}.")
    if method == "hierarchy":
        n = int(shape[0]) * int(shape[1])
        return int((200 if n <= WORKING_PIXELS else 130) * n)
    n = int(shape[0]) * int(shape[1])
    c = int(shape[2]) if len(shape) > 2 else 1
    if n < 2:
        return 0
    per_pixel = 8 * (2 + c) * 3  # features, row/col helpers
    per_pixel += 8 * 2 * 12 * 4  # four symmetric CSR matrices of ~8 edges stored twice
    if graph == "pmst":
        per_pixel += 8 * 4 * 4 + 8 * 6  # edge arrays per tree (reused), counts, perturbed copy
    elif graph == "dmst":
        per_pixel += 8 * 4 * 4
    try:
        k = max(int(n_segments), 2)
    except (TypeError, ValueError):
        k = 8  # invalid values are reported by the caller's own checks
    # every method factorises one sparse LU of a shifted grid matrix (shift-invert Lanczos)
    lu_fill = 12 * 12 * np.log2(max(n, 2))
    if method == "njw":
        per_pixel += lu_fill + 8 * (3 * k + 20)
    elif method == "ahk":
        m = min(n - 1, 100)  # AHKClustering's default number of eigenpairs
        per_pixel += lu_fill + 8 * (3 * m + 20) + 8 * 4 * 12
    else:
        per_pixel += lu_fill + 8 * (12 * k + 60) + 8 * 4 * 12
    return int(1.5 * per_pixel * n)


# ------------------------------------------------------------------------------- the clusterers
def _consistency_defaults(n_pixels, n_segments, tol=1e-6):
    """The `ConsistencyClustering` settings `segment_image` uses for a pixel grid (fixed a priori).

    Parameters
    ----------
    n_pixels : int
        Pixels of the image (nodes of the graph).
    n_segments : int
        The number of segments asked for, or the largest one searched (``max_segments``).
    tol : float, default 1e-6
        Relative residual tolerance of the final fit's solves (`segment_image`'s own `tol`).

    Returns
    -------
    dict
        ``alpha = n_pixels / (n_pixels + n_segments)``, ``eigen_solver="shift-invert"``,
        ``method="lu"``, ``tol``; alpha and eigen_solver can be overridden through
        ``segment_image(**params)``, tol through ``segment_image(tol=...)`` (the kernel's
        `method` cannot: `segment_image`'s own ``method`` names the clusterer).

    Notes
    -----
    alpha: U = beta (I - alpha S)^-1 = beta sum_t alpha^t S^t sums random walks of geometric
    length, alpha / (1 - alpha) steps on average, which reach about sqrt(alpha / (1 - alpha))
    pixels on a grid. Columns of U (and so the cosines of the method) only see as far as that:
    with alpha / (1 - alpha) = n / K the reach is sqrt(n / K), the side of an average square
    segment, and the criterion Omega can tell segments apart. This also avoids a search over
    alpha, which costs one set of column norms and seed solves per value (a 481 x 321 image:
    alpha = 0.99995 for K = 8). With direct solves (`method` below) the cost of a solve does
    not depend on alpha.

    eigen_solver: the top eigenvalues of S on a pixel grid crowd below 1 (on a uniform 2-D grid
    1 - lambda_k grows like k / n), where plain Lanczos converges slowly; shift-invert Lanczos
    on one sparse LU makes them the largest and well separated eigenvalues of the inverse.

    method: a pixel grid is planar, so with a minimum-degree ordering the sparse LU of
    I - alpha S has a fill that grows like n log n, and every solve is then two triangular
    sweeps instead of CG iterations whose number grows with the condition number. The solves
    are checked against `tol` and refined once if needed.

    tol: the labels are an argmax over seed columns; a relative residual of 1e-6 (the search's
    own tolerance, and `segment_image`'s default `tol`) is enough for the final fit too, and
    looser than ConsistencyClustering's default 1e-8.

    Examples
    --------
    >>> from graphclust.segmentation import _consistency_defaults
    >>> d = _consistency_defaults(481 * 321, 8)
    >>> round(d["alpha"], 6), d["eigen_solver"], d["method"], d["tol"]
    (0.999948, 'shift-invert', 'lu', 1e-06)
    """
    n_pixels = check_int(n_pixels, "n_pixels", low=1)
    n_segments = check_int(n_segments, "n_segments", low=1)
    return {
        "alpha": n_pixels / (n_pixels + n_segments),
        "eigen_solver": "shift-invert",
        "method": "lu",
        "tol": check_real(tol, "tol", low=0, high=1, low_inclusive=False, high_inclusive=False),
    }


def _hierarchy_settings(settings):
    unknown = sorted(set(settings) - set(HIERARCHY_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown setting(s) {unknown} for method='hierarchy'; valid: "
                        f"{sorted(HIERARCHY_DEFAULTS)}.")
    cfg = {**HIERARCHY_DEFAULTS, **settings}
    for key in ("superpixel_k", "scale"):
        cfg[key] = check_real(cfg[key], key, low=0.0, low_inclusive=False)
    for key in ("superpixel_smoothing", "texture_scale", "texture_weight", "size_prior"):
        cfg[key] = check_real(cfg[key], key, low=0.0)
    cfg["superpixel_min_size"] = check_int(cfg["superpixel_min_size"], "superpixel_min_size", low=1)
    check_option(cfg["criterion"], "criterion", set(MERGE_CRITERIA))
    return cfg


def _check_memory(shape, max_memory, **model):
    """Refuse from the shape alone (before the image is converted) when the estimate is too big."""
    if max_memory is None or len(shape) not in (2, 3):
        return
    if isinstance(max_memory, bool) or not np.isscalar(max_memory) or not max_memory > 0:
        raise ValueError(f"max_memory must be a number of bytes > 0, or None; got {max_memory!r}.")
    need = segmentation_memory(shape, **model)
    if need > max_memory:
        raise ValueError(
            f"segmenting a {shape[0]} x {shape[1]} image ({shape[0] * shape[1]} pixels) with "
            f"method={model.get('method', 'hierarchy')!r} needs an estimated "
            f"{need / 2**30:.2f} GiB, "
            f"above max_memory = {max_memory / 2**30:.2f} GiB: crop, tile or downsample the "
            "image, or raise max_memory if the machine has the memory."
        )


def image_hierarchy(image, *, max_memory=DEFAULT_MAX_MEMORY, progress=None, **settings):
    """The hierarchy of segmentations of an image: superpixels and their Mumford-Shah merge tree.

    Parameters
    ----------
    image : array (H, W) or (H, W, C), C <= 4
        Grey or colour (a fourth channel is ignored); integer dtypes are scaled by their maximum,
        floats are expected in [0, 1] (`check_image` warns otherwise). Complex images are
        refused.
    max_memory : int (bytes) or None, default 8 GiB
        Refuse (from the shape, before any work) when `segmentation_memory` estimates more.
    progress : bool or None, default None
        True prints one line per stage (`HIERARCHY_STAGES`) on stderr.
    **settings
        Override `HIERARCHY_DEFAULTS` (e.g. ``superpixel_k=15`` for finer leaves,
        ``criterion="boundary"``); unknown names are a TypeError.

    Returns
    -------
    SegmentationHierarchy

    Notes
    -----
    Cost: O(n) for the features and the refinement, O(n log n) for the sort of the 4n grid edges
    of the superpixel merge (n: pixels of the working copy, at most `WORKING_PIXELS`), and
    O(m log m) for the merge tree over m region adjacencies (a few thousand).
    """
    return _image_hierarchy(image, max_memory, progress, settings, stacklevel=4)


def _progress_lines(progress):
    """`progress` as given: None or a bool (the public forms), or a `Progress` (the CLI's)."""
    if progress is None or isinstance(progress, (bool, np.bool_)):
        return Progress(bool(progress))
    if not isinstance(progress, Progress):
        raise TypeError(f"progress must be True, False or None; got {type(progress).__name__} "
                        f"{progress!r}.")
    return progress


def _image_hierarchy(image, max_memory, progress, settings, stacklevel):
    """`image_hierarchy`; `stacklevel` puts the image's `ImageRangeWarning` at the user's call."""
    cfg = _hierarchy_settings(settings)
    shape = np.shape(image)
    _check_memory(shape, max_memory, method="hierarchy")
    progress = _progress_lines(progress)
    with progress.step(HIERARCHY_STAGES[0]):
        img = check_image(image, unit_range=True, stacklevel=stacklevel)
        H0, W0 = img.shape[:2]
        full_lab = rgb_to_lab(img)
        del img
        if H0 * W0 > WORKING_PIXELS:  # anti-aliased working copy of REFERENCE_PIXELS pixels
            r = np.sqrt(REFERENCE_PIXELS / (H0 * W0))
            h_, w_ = max(2, int(round(H0 * r))), max(2, int(round(W0 * r)))
            lab = np.empty((h_, w_, 3), np.float32)
            for c in range(3):
                sm = gaussian_smooth(full_lab[:, :, c], 0.5 / r)
                lab[:, :, c] = ndimage.zoom(sm, (h_ / H0, w_ / W0), order=1, grid_mode=True,
                                            mode="nearest")[:h_, :w_]
            del sm
        else:
            lab, full_lab = full_lab, None
        H, W = lab.shape[:2]
        f = np.sqrt(H * W / REFERENCE_PIXELS)
        sigma_t = max(cfg["texture_scale"] * f, 2.0)
        texture = local_contrast(lab[:, :, 0], sigma_t, presmooth=max(f, 0.5))
        F = np.concatenate([lab, cfg["texture_weight"] * texture[:, :, None]], axis=2)
        del texture
    with progress.step(HIERARCHY_STAGES[1]):
        smooth = max(cfg["superpixel_smoothing"] * f, 0.5)
        feats = ndimage.gaussian_filter(lab, (smooth, smooth, 0))
        # contrast per reference pixel: an edge spreads over f times more pixels when f > 1
        w = grid_edge_weights(feats)
        w *= np.float32(max(f, 1.0))
        spx, m = graph_superpixels(feats, cfg["superpixel_k"] * f * f,
                                   max(1, int(round(cfg["superpixel_min_size"] * f * f))),
                                   weights=w)
        del w, feats
    with progress.step(HIERARCHY_STAGES[2]):
        strength = None
        if cfg["criterion"] == "boundary":
            from .graphs import contour_map

            strength = contour_map(lab)
        a, b, length, total = region_adjacency(spx, strength, m)
        size, sums, _ = region_statistics(spx, F, m)
        del F, lab, strength
    if full_lab is not None:
        with progress.step(HIERARCHY_STAGES[3]):
            spx = refine_labels(full_lab, spx, sums[:, :3] / size[:, None])
            del full_lab
    with progress.step(HIERARCHY_STAGES[4]):
        tree = merge_hierarchy(size, sums, a, b, length, total, criterion=cfg["criterion"],
                               size_prior=cfg["size_prior"] * f * f)
    # lambda = sqrt(Ward / border): Ward grows as f^2 and the border as f, so lambda as sqrt(f)
    default = cfg["scale"] * np.sqrt(f) if cfg["criterion"] == "mumford-shah" else None
    return SegmentationHierarchy(spx, tree, f, default,
                                 (size, sums[:, :3], a, b, length, 2.0 * sigma_t))


def _segment_by_hierarchy(image, n_segments, scale, max_memory, progress, random_state, params):
    """`segment_image` with method="hierarchy": (labels, info)."""
    cfg = _hierarchy_settings(params)  # bad settings are refused before any work
    check_random_state(random_state)  # unused (the hierarchy is deterministic), but checked
    if scale is not None:
        scale = check_real(scale, "scale", low=0.0, low_inclusive=False)
    if isinstance(n_segments, str):
        if n_segments != "auto":
            raise ValueError(
                f"n_segments must be 'auto' or an integer >= 1; got {n_segments!r}.")
        if cfg["criterion"] != "mumford-shah" and scale is None:
            raise ValueError("n_segments='auto' needs criterion='mumford-shah' or a scale.")
    else:
        if scale is not None:
            raise ValueError("give n_segments='auto' with a scale, or an integer n_segments.")
        shape = np.shape(image)
        n = shape[0] * shape[1] if len(shape) in (2, 3) and shape[0] * shape[1] >= 2 else None
        k = check_int(n_segments, "n_segments", low=1, high=n)
    h = _image_hierarchy(image, max_memory, progress, params, stacklevel=5)  # the user's line
    if isinstance(n_segments, str):
        t = h.default_threshold if scale is None else h.threshold_of(scale)
        labels = h.labels(threshold=t)
    else:
        t = h.tree.heights[h.tree.n_merges(k) - 1] if h.tree.n_merges(k) else 0.0
        labels = h.labels(k)
        if h.n_leaves < k:  # e.g. a constant image: one superpixel
            warnings.warn(f"the image's hierarchy has {h.n_leaves} region(s) at its finest "
                          f"(superpixels), fewer than n_segments={k}: returning "
                          f"{h.n_leaves}.", UserWarning, stacklevel=3)
    info = {"hierarchy": h, "threshold": float(t), "n_leaves": h.n_leaves, "model": None,
            "scale": (HIERARCHY_DEFAULTS["scale"] if scale is None else scale)
            if isinstance(n_segments, str) else None}
    return labels, info


def _segment_pixel_graph(image, n_segments, method, graph, sigma, connectivity, position_weight,
                         intensity_weight, n_trees, r, max_segments, n_init, tol, max_memory,
                         random_state, params):
    """`segment_image` with a pixel-grid method (njw, ahk, consistency): (labels, info)."""
    graph = "grid" if graph is None else graph
    _check_memory(np.shape(image), max_memory, graph=graph, method=method,
                  n_segments=n_segments if not isinstance(n_segments, str) else max_segments)
    if params:  # refused before any work: NJW takes none, AHK / consistency their estimator's
        import inspect

        from .cluster import AHKClustering, ConsistencyClustering

        known = set() if method == "njw" else set(inspect.signature(
            AHKClustering if method == "ahk" else ConsistencyClustering).parameters)
        if set(params) - known:
            raise TypeError(f"unknown parameter(s) {sorted(set(params) - known)} for "
                            f"method={method!r}.")
    img = check_image(image, unit_range=True, stacklevel=4)  # segment_image's caller
    H, W_, C = img.shape
    n = H * W_
    if isinstance(n_segments, str):
        if n_segments != "auto" or method != "consistency":
            raise ValueError(
                "n_segments must be an integer >= 1 (or 'auto' with method='consistency'); got "
                f"{n_segments!r} with method={method!r}."
            )
        k = check_int(max_segments, "max_segments", low=2, high=n)
    else:
        k = check_int(n_segments, "n_segments", low=1, high=n)
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity must be 4 or 8; got {connectivity!r}.")
    n_init = check_int(n_init, "n_init", low=1)
    tol = check_real(tol, "tol", low=0, low_inclusive=False)
    rng = check_random_state(random_state)
    seeds = rng.integers(2**31 - 1, size=3)
    grid = grid_graph(
        img, connectivity, position_weight=position_weight, intensity_weight=intensity_weight
    )
    if graph == "grid":
        g = grid
    else:
        F = pixel_features(img, position_weight=position_weight, intensity_weight=intensity_weight)
        if graph == "pmst":
            T = 20 if n_trees is None else n_trees
            g = pmst_graph(F, T, r, candidates=grid, random_state=int(seeds[0]))
        else:
            T = 3 if n_trees is None else n_trees
            g = dmst_graph(F, T, candidates=grid)
    sigma_ = default_sigma(g) if sigma is None else sigma
    W = affinity(g, sigma_, kind="gaussian")
    deg = np.asarray(W.sum(axis=1)).ravel()
    if np.any(deg == 0):
        raise ValueError(
            f"{int((deg == 0).sum())} pixel(s) have every edge weight underflow to 0 at sigma = "
            f"{sigma_:.4g} (their nearest graph neighbour is more than ~38 sigma away): increase "
            "sigma."
        )
    info = {"graph": g, "sigma": sigma_, "n_edges": g.n_edges, "model": None}
    sub_rng = np.random.default_rng(int(seeds[1]))
    if method == "njw":
        # shift-invert Lanczos: the smallest Laplacian eigenvalues of a pixel grid crowd near 0
        method_ = "dense" if k >= W.shape[0] - 1 else "shift-invert"
        labels = njw_labels(W, k, n_init=n_init, tol=tol, method=method_, random_state=sub_rng)
    elif method == "ahk":
        from .cluster import AHKClustering

        # shift-invert Lanczos: on pixel grids the bottom of the spectrum is crowded, where plain
        # Lanczos converges slowly; after one LU the wanted eigenvalues are the largest ones
        params = {"eigen_solver": "shift-invert", **params}
        model = AHKClustering(k, affinity="precomputed", random_state=int(seeds[2]), **params)
        labels = model.fit(W).labels_
        info["model"] = model
    else:
        from .cluster import ConsistencyClustering, ConsistencyWarning

        params = {**_consistency_defaults(n, k, tol), **params}
        model = ConsistencyClustering(
            n_segments,
            affinity="precomputed",
            max_clusters=max_segments,
            random_state=int(seeds[2]),
            **params,
        )
        with warnings.catch_warnings():  # said below, with what is done about it
            warnings.filterwarnings("ignore", message=".* no seed and are labelled -1",
                                    category=ConsistencyWarning)
            labels = model.fit(W).labels_
        info["model"] = model
        if np.any(labels < 0):  # a component of the pixel graph no seed reached: a region
            from scipy.sparse.csgraph import connected_components

            free = np.flatnonzero(labels < 0)
            n_own, own = connected_components(W[free][:, free], directed=False)
            labels = labels.copy()
            labels[free] = labels.max() + 1 + own
            warnings.warn(
                f"{free.size} pixel(s) lie in {n_own} component(s) of the pixel graph that no "
                f"seed reached; each is a segment of its own ({int(labels.max()) + 1} segments "
                f"where {n_segments} were asked).",
                UserWarning,
                stacklevel=3,  # the caller of segment_image
            )
    return relabel_by_first_appearance(labels).reshape(H, W_), info


def segment_image(
    image,
    n_segments="auto",
    *,
    method=None,
    scale=None,
    graph=None,
    sigma=None,
    connectivity=8,
    position_weight=1.0,
    intensity_weight=10.0,
    n_trees=None,
    r=0.4,
    max_segments=10,
    n_init=3,
    tol=1e-6,
    max_memory=DEFAULT_MAX_MEMORY,
    random_state=None,
    return_info=False,
    progress=None,
    **params,
):
    """Segment a grey or colour image into regions: (H, W) int64 labels at full resolution.

    Parameters
    ----------
    image : array (H, W) or (H, W, C), C <= 4
        Integer images are scaled to [0, 1] by their dtype's maximum (types wider than 16 bits,
        such as ``np.array`` of Python ints, by the bit depth their values fit: 255 or 65 535);
        float images are used as is, and an `ImageRangeWarning` tells when they stray outside
        [0, 1] (or span less than one 8-bit grey level), the range the scales are set for.
        Complex, NaN and non-numeric images are refused.
    n_segments : "auto" or int, default "auto"
        ``method="hierarchy"``: "auto" cuts the region hierarchy at the Mumford-Shah scale
        `scale` (the number of segments is the image's); an integer cuts it at that count.
        Pixel-grid methods: the number of segments; "auto" only with ``method="consistency"``,
        which chooses it in 2..`max_segments` by Omega.
    method : {"hierarchy", "njw", "ahk", "consistency"} or None, default None
        None is "hierarchy", except when pixel-grid options (``graph``, ``sigma``, ...) are
        given: then "njw", the previous default, with a FutureWarning asking to name it.
        "hierarchy": superpixels and their Mumford-Shah merge tree (`image_hierarchy`).
        "njw" (NJW spectral clustering), "ahk" (`AHKClustering`, m = 100 eigenpairs) and
        "consistency" (`ConsistencyClustering`, alpha = n / (n + K) fixed a priori, see
        `_consistency_defaults`) cluster the pixel graph `graph` at full resolution.
    scale : float > 0 or None
        Hierarchy only: the lambda of the "auto" level for a 481 x 321 image (None:
        ``HIERARCHY_DEFAULTS["scale"]`` = 70); larger is coarser.
    graph : {"grid", "pmst", "dmst"} or None
        Pixel-grid methods: the 8- (or 4-) connected grid, or a PMST / DMST ensemble constrained
        to it (None: "grid"). Features (position_weight * (row, column), intensity_weight *
        colour), w_ij = e_ij exp(-d_ij^2 / (2 sigma^2)).
    sigma, connectivity, position_weight, intensity_weight, n_trees, r, max_segments, n_init, tol
        Pixel-grid methods only (giving them with "hierarchy" is an error): Gaussian scale (None:
        median edge length), 4 or 8, feature weights (a priori 1 and 10), ensemble size (PMST 20
        trees, DMST t = 3), PMST perturbation, largest K of "auto", k-means restarts (NJW),
        eigensolver / solve tolerance.
    max_memory : int (bytes) or None, default 8 GiB
        Refuse (from the shape, before any work) when `segmentation_memory` estimates more;
        None: no limit. Must be > 0.
    random_state : int, Generator or None
        Seeds the pixel-grid methods (the hierarchy is deterministic).
    return_info : bool, default False
        Also return a dict: "hierarchy" (`SegmentationHierarchy`) and "threshold" for the
        hierarchy; "graph", "sigma", "n_edges", "model" for the pixel-grid methods.
    progress : bool or None, default None
        Hierarchy only: True prints one line per stage on stderr (the command line's).
    **params
        "hierarchy": settings of `HIERARCHY_DEFAULTS`; "ahk" / "consistency": parameters of the
        estimator (they override the ones chosen here; ``alpha="auto"`` restores consistency's
        search over alpha). Unknown names are a TypeError.

    Returns
    -------
    labels : int64 array (H, W)
        Segment of each pixel, numbered 0.. in order of first appearance (row-major).
    info : dict, only with ``return_info=True``

    Raises
    ------
    TypeError, ValueError
        Bad image or parameters; options of another method; a sigma so small that some pixel
        keeps no edge weight; an estimated memory above `max_memory` (the message gives it).

    Notes
    -----
    Cost of the hierarchy: `image_hierarchy`. Pixel-grid methods with n pixels and k segments:
    graph and affinity O(n); the sparse LU of a grid matrix (fill ~ n log n) and a few
    triangular solves per eigenvector or solved column; k-means O(n k) per iteration. Measured
    scores and times on BSDS500: ``docs/applications.md``.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust import segment_image
    >>> rng = np.random.default_rng(0)
    >>> img = np.where(np.arange(40)[None, :] < 20, 0.2, 0.8) + rng.normal(0, 0.02, (30, 40))
    >>> labels = segment_image(img, 2)
    >>> labels.shape, np.unique(labels[:, :20]).tolist(), np.unique(labels[:, 20:]).tolist()
    ((30, 40), [0], [1])
    >>> njw = segment_image(img, 2, method="njw", random_state=0)
    >>> bool((njw == labels).all())
    True
    """
    grid_only = {"graph": (graph, None), "sigma": (sigma, None),
                 "connectivity": (connectivity, 8), "position_weight": (position_weight, 1.0),
                 "intensity_weight": (intensity_weight, 10.0), "n_trees": (n_trees, None),
                 "r": (r, 0.4), "max_segments": (max_segments, 10), "n_init": (n_init, 3),
                 "tol": (tol, 1e-6)}
    given = [k for k, (v, d) in grid_only.items() if v is not d and v != d]
    if method is None:  # the default: the hierarchy, unless a caller still sets grid options
        method = "hierarchy"
        if given:
            warnings.warn(
                f"segment_image's default method is now 'hierarchy'; the pixel-grid option(s) "
                f"{', '.join(given)} select method='njw', the previous default: pass "
                "method='njw' to keep this behaviour without the warning.",
                FutureWarning, stacklevel=2)
            method = "njw"
    check_option(method, "method", set(SEGMENTATION_METHODS))
    check_option("grid" if graph is None else graph, "graph", set(SEGMENTATION_GRAPHS))
    if sigma is not None:
        sigma = check_real(sigma, "sigma", low=0, low_inclusive=False)
    if method == "hierarchy":
        if given:
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to the "
                             "pixel-grid methods: pass method='njw', 'ahk' or 'consistency'.")
        labels, info = _segment_by_hierarchy(image, n_segments, scale, max_memory, progress,
                                             random_state, params)
    else:
        if scale is not None or _progress_lines(progress).enabled:
            raise ValueError(f"scale and progress apply to method='hierarchy', not {method!r}.")
        labels, info = _segment_pixel_graph(
            image, n_segments, method, graph, sigma, connectivity, position_weight,
            intensity_weight, n_trees, r, max_segments, n_init, tol, max_memory, random_state,
            params)
    return (labels, info) if return_info else labels
