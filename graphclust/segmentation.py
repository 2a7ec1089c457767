"""Image segmentation on pixel grids: image -> grid / PMST / DMST graph -> clusterer -> label image.

`segment_image` runs at full resolution (no down-sampling): every pixel is a node of the graph, so
an H x W image on the 8-connected grid has n = HW nodes and about 4n edges. NJW spectral clustering
finds the k bottom eigenvectors of L_sym = I - D^-1/2 W D^-1/2 by shift-invert Lanczos: one sparse
LU factorisation of L_sym + 1e-6 I (a grid is planar: with a minimum-degree ordering the fill grows
like n log n), then a few pairs of triangular solves per eigenvector. Plain Lanczos converges
slowly there, because the bottom of a grid Laplacian's spectrum is a dense cluster of tiny
eigenvalues (on a uniform 2-D grid lambda_k grows like k / n). `segmentation_memory` estimates
the peak memory from the shape, and `segment_image` refuses jobs above `max_memory` before any
work.

Image files are read and written by `graphclust.io`, segmentations are scored by
`graphclust.metrics` (PRI, VoI, covering, occluder error) and drawn by `graphclust.plots`
(`overlay`, `plot_segmentation`); their old names in this module still work, with a
DeprecationWarning naming the new place. Measured times and scores: ``docs/applications.md``.
"""

from __future__ import annotations

import warnings

import numpy as np

from ._deprecation import moved_names
from ._validation import check_int, check_option, check_random_state, check_real
from .graphs import affinity, check_image, default_sigma, dmst_graph, grid_graph, pixel_features
from .graphs import pmst_graph
from .cluster import njw_labels

__all__ = [
    "segment_image",
    "segmentation_memory",
    "SEGMENTATION_GRAPHS",
    "SEGMENTATION_METHODS",
    "DEFAULT_MAX_MEMORY",
]

SEGMENTATION_GRAPHS = ("grid", "pmst", "dmst")
SEGMENTATION_METHODS = ("njw", "ahk", "consistency")
#: `segment_image` refuses jobs whose estimated peak memory exceeds this (bytes) unless told more.
DEFAULT_MAX_MEMORY = 4 * 2**30

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
def segmentation_memory(shape, *, graph="grid", method="njw", n_segments=8, n_trees=20, max_segments=10):
    """Estimated peak memory (bytes) of `segment_image` on an image of this shape.

    The model counts, per pixel: the features and graph (distances, multiplicity and affinity as
    CSR, ~8 edges per pixel stored twice), the ensemble build (PMST: per-tree edge arrays), the
    eigensolver (all three methods: the sparse LU fill of the shift-invert factorisation of the
    2-D grid matrix, ~12 log2(n) entries per pixel; NJW: Lanczos vectors; AHK: its m = 100
    eigenpairs; consistency: its deflation basis and solve blocks), with a 1.5 safety factor. It
    is meant to refuse hopeless jobs early and errs on the high side; it is not exact (measured
    peak memory beside the estimate: ``docs/applications.md``).

    Examples
    --------
    >>> from graphclust.segmentation import segmentation_memory
    >>> round(segmentation_memory((321, 481)) / 2**30, 2)
    0.79
    """
    if len(shape) < 2:
        raise ValueError(f"shape must be (H, W) or (H, W, C); got {shape!r}.")
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


def _relabel(labels):
    """Labels renumbered 0..K-1 by first appearance in row-major order (-1 kept)."""
    labels = np.asarray(labels, dtype=np.int64)
    out = np.full_like(labels, -1)
    valid = labels >= 0
    _, first, inv = np.unique(labels[valid], return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.size)
    out[valid] = rank[inv]
    return out


def segment_image(
    image,
    n_segments=8,
    *,
    graph="grid",
    method="njw",
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
    **params,
):
    """Segment a grey or colour image into regions: (H, W) integer labels at full resolution.

    Pipeline: every pixel is a node with features (position_weight * (row, column),
    intensity_weight * intensity / colour) (`pixel_features`); edges join 8- (or 4-) connected
    neighbours (`grid_graph`), or are selected from those grid edges by a PMST or DMST ensemble
    (the paper's image experiment); w_ij = e_ij exp(-d_ij^2 / (2 sigma^2)); then a clusterer.

    Parameters
    ----------
    image : array (H, W) or (H, W, C), C <= 4
        Integer images are scaled to [0, 1] by their dtype's maximum; float images are used as
        is (expected in [0, 1] for the default weights to make sense).
    n_segments : int or "auto", default 8
        Number of segments. "auto" only with ``method="consistency"``, which chooses it in
        2..`max_segments`.
    graph : {"grid", "pmst", "dmst"}, default "grid"
        Edge set: the pixel grid, or an ensemble of minimum spanning trees constrained to it.
    method : {"njw", "ahk", "consistency"}, default "njw"
        NJW spectral clustering (k bottom eigenvectors), AHK (`AHKClustering` on the affinity,
        m = 100 eigenpairs by default) or consistency clustering (`ConsistencyClustering`).
        NJW and AHK both use shift-invert Lanczos (`top_eigenpairs(method="shift-invert")`).
        Consistency clustering solves with one sparse LU of I - alpha S, its column-norm
        estimate uses a shift-invert basis, and alpha is fixed a priori from the image size
        (see Notes). With ``n_segments="auto"`` on natural images it tends to pick
        `max_segments` or close to it (Omega grows with the number of segments there; see
        ``docs/applications.md``).
    sigma : float > 0 or None, default None
        Gaussian scale; None: the median edge length of the graph.
    connectivity : {4, 8}, default 8
    position_weight, intensity_weight : float >= 0, default 1 and 10
        Weights of the pixel position (pixels) and intensity ([0, 1]) in the edge length: with
        10, a step of 0.1 in grey level counts as much as one pixel of distance. Chosen a priori
        (not tuned on the benchmarks).
    n_trees : int or float or None
        Ensemble size: PMST trees (default 20) or DMST trees t (default 3).
    r : float in [0, 1], default 0.4
        PMST perturbation (paper default).
    max_segments : int, default 10
        Search range of ``n_segments="auto"``.
    n_init : int, default 3
        k-means restarts (NJW).
    tol : float, default 1e-6
        Eigensolver tolerance (NJW); relative residual tolerance of the final fit's solves
        (consistency).
    max_memory : int (bytes) or None, default 4 GiB
        Refuse (before any work) when `segmentation_memory` estimates more; None: no limit.
    random_state : int, Generator or None
        Seeds the PMST perturbations, the Lanczos start vector and k-means.
    return_info : bool, default False
        Also return a dict with the graph, sigma, edge count and the clusterer (if any).
    **params
        Passed to `AHKClustering` / `ConsistencyClustering`; they override the settings
        `segment_image` chooses (AHK: ``eigen_solver="shift-invert"``; consistency: `alpha`
        and `eigen_solver`, see Notes). ``alpha="auto"`` restores consistency's search over
        alpha (one LU, one set of column norms and seed solves per alpha searched).

    Returns
    -------
    labels : int64 array (H, W)
        Segment of each pixel, numbered 0.. in order of first appearance (row-major).
    info : dict, only with ``return_info=True``

    Raises
    ------
    TypeError, ValueError
        Non-numeric image, wrong shape, fewer than 2 pixels, NaN; bad parameters; a sigma so small
        that some pixel keeps no edge weight; an estimated memory above `max_memory` (the message
        gives the estimate).

    Notes
    -----
    Cost with n pixels and k segments: graph and affinity O(n); the sparse LU of a grid matrix
    (fill ~ n log n) and a few triangular solves per eigenvector (NJW, AHK) or per solved column
    (consistency); k-means O(n k) per iteration and restart. A PMST of T trees adds T spanning
    trees of the ~4n grid edges, O(T n log n); a DMST likewise. Memory: `segmentation_memory`.
    Measured times per method on BSDS images: ``docs/applications.md``.

    Consistency clustering on a pixel grid uses settings fixed a priori, never tuned on a
    benchmark: alpha = n / (n + K) with n pixels and K = `n_segments` (or `max_segments` with
    ``"auto"``), so that U = beta sum_t alpha^t S^t sums random walks of n / K steps on
    average, which reach about sqrt(n / K) pixels, the side of an average square segment
    (alpha = 0.99995 for K = 8 on a BSDS image); one alpha instead of the default search saves
    one set of column norms and seed solves per alpha. The basis of the column-norm estimate
    (32 top eigenpairs of S) comes from shift-invert Lanczos; the solves are direct (one sparse
    LU of I - alpha S, ``method="lu"``), checked against `tol`. sigma is the image's median
    edge length as for the other methods. Details: `_consistency_defaults`.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust import segment_image
    >>> rng = np.random.default_rng(0)
    >>> img = np.where(np.arange(40)[None, :] < 20, 0.2, 0.8) + rng.normal(0, 0.02, (30, 40))
    >>> labels = segment_image(img, 2, random_state=0)
    >>> labels.shape, np.unique(labels[:, :20]).tolist(), np.unique(labels[:, 20:]).tolist()
    ((30, 40), [0], [1])
    """
    shape = np.shape(image)
    if max_memory is not None and len(shape) in (2, 3):
        # before anything is converted: a huge image is refused without allocating it
        need = segmentation_memory(
            shape, graph=graph, method=method,
            n_segments=n_segments if not isinstance(n_segments, str) else max_segments,
            max_segments=max_segments,
        )
        if need > max_memory:
            raise ValueError(
                f"segmenting a {shape[0]} x {shape[1]} image ({shape[0] * shape[1]} pixels) with "
                f"graph={graph!r}, method={method!r} needs an estimated {need / 2**30:.2f} GiB, "
                f"above max_memory = {max_memory / 2**30:.2f} GiB: crop or tile the image, or "
                "raise max_memory if the machine has the memory."
            )
    img = check_image(image)
    H, W_, C = img.shape
    check_option(graph, "graph", set(SEGMENTATION_GRAPHS))
    check_option(method, "method", set(SEGMENTATION_METHODS))
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
    if sigma is not None:
        sigma = check_real(sigma, "sigma", low=0, low_inclusive=False)
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
        from .cluster import ConsistencyClustering

        params = {**_consistency_defaults(n, k, tol), **params}
        model = ConsistencyClustering(
            n_segments,
            affinity="precomputed",
            max_clusters=max_segments,
            random_state=int(seeds[2]),
            **params,
        )
        labels = model.fit(W).labels_
        info["model"] = model
        if np.any(labels < 0):
            warnings.warn(
                f"{int((labels < 0).sum())} pixel(s) lie in graph components without a seed; "
                "they are labelled -1.",
                UserWarning,
                stacklevel=2,
            )
    labels = _relabel(labels).reshape(H, W_)
    return (labels, info) if return_info else labels
