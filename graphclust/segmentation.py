"""Image segmentation on pixel grids: image -> grid / PMST / DMST graph -> clusterer -> label image.

`segment_image` runs at full resolution (no down-sampling): every pixel is a node of the graph.
On the 8-connected grid a 481 x 321 image has 154 401 nodes and about 616 000 edges; NJW spectral
clustering finds the k bottom eigenvectors of L_sym = I - D^-1/2 W D^-1/2 by shift-invert Lanczos
(a sparse LU factorisation of L_sym + 1e-6 I, then a few solves per eigenvector), which takes
seconds where plain Lanczos on such a badly separated spectrum takes a minute or more.

Also here: the segmentation scores used by the BSDS benchmark (`probabilistic_rand_index`,
`variation_of_information`, `segmentation_covering`), the occluder error of the paper's Figure 2
(`occluder_error`), an overlay picture (`overlay`, `plot_segmentation`), image files (`read_image`,
`save_image`, Pillow imported on use) and the memory estimate checked before any work
(`segmentation_memory`).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ._validation import check_int, check_option, check_random_state, check_real
from .graphs import affinity, default_sigma, dmst_graph, grid_graph, pixel_features, pmst_graph
from .graphs import check_image

__all__ = [
    "segment_image",
    "segmentation_memory",
    "SEGMENTATION_GRAPHS",
    "SEGMENTATION_METHODS",
    "DEFAULT_MAX_MEMORY",
    "probabilistic_rand_index",
    "variation_of_information",
    "segmentation_covering",
    "occluder_error",
    "overlay",
    "plot_segmentation",
    "read_image",
    "save_image",
]

SEGMENTATION_GRAPHS = ("grid", "pmst", "dmst")
SEGMENTATION_METHODS = ("njw", "ahk", "consistency")
#: `segment_image` refuses jobs whose estimated peak memory exceeds this (bytes) unless told more.
DEFAULT_MAX_MEMORY = 4 * 2**30



# ---------------------------------------------------------------------------------------- files
def _pillow():
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "reading and writing image files needs Pillow: install the image extra with "
            "pip install graphclust[image]"
        ) from None
    return Image


def read_image(path):
    """Read a PNG / JPEG (any format Pillow reads) as a uint8 array (H, W) grey or (H, W, 3) colour.

    Palette and alpha images are converted to RGB; 16-bit grey stays uint16.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not an image Pillow can read.
    ImportError
        Pillow is missing (install ``graphclust[image]``).
    """
    Image = _pillow()
    path = Path(os.fspath(path))
    if not path.exists():
        raise FileNotFoundError(f"image file {str(path)!r} does not exist.")
    try:
        with Image.open(path) as im:
            im.load()
            if im.mode in ("L", "I;16", "I;16B"):
                arr = np.asarray(im)
            elif im.mode == "I":
                arr = np.asarray(im).astype(np.uint16)
            else:
                arr = np.asarray(im.convert("RGB"))
    except (OSError, SyntaxError, ValueError) as err:
        raise ValueError(f"cannot read image file {str(path)!r}: {err}") from err
    return arr


def save_image(path, array):
    """Write a uint8 (H, W) or (H, W, 3) array to `path` (format from the suffix) with Pillow."""
    Image = _pillow()
    arr = np.asarray(array)
    if arr.dtype != np.uint8:
        raise TypeError(f"save_image writes uint8 arrays; got dtype {arr.dtype}.")
    Image.fromarray(arr).save(os.fspath(path))


# -------------------------------------------------------------------------------------- memory
def segmentation_memory(shape, *, graph="grid", method="njw", n_segments=8, n_trees=20, max_segments=10):
    """Estimated peak memory (bytes) of `segment_image` on an image of this shape.

    The model counts, per pixel: the features and graph (distances, multiplicity and affinity as
    CSR, ~8 edges per pixel stored twice), the ensemble build (PMST: per-tree edge arrays), the
    eigensolver (all three methods: the sparse LU fill of the shift-invert factorisation of the
    2-D grid matrix, ~12 log2(n) entries per pixel; NJW: Lanczos vectors; AHK: its m = 100
    eigenpairs; consistency: its deflation basis and CG blocks), with a 1.5 safety factor. On a
    481 x 321 colour image it estimates 0.80 / 1.36 / 1.08 GiB for NJW / AHK / consistency on
    the grid against 0.63 / 1.09 / 0.89 GiB peak RSS measured for the whole process; it refuses
    hopeless jobs early and is not exact.

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
def _njw_embedding(W, k, rng, tol):
    """The k bottom eigenvectors of L_sym = I - D^-1/2 W D^-1/2 (columns), by shift-invert Lanczos.

    Lanczos runs on (S - (1 + 1e-6) I)^-1, S = D^-1/2 W D^-1/2, through one sparse LU
    factorisation (`top_eigenpairs(method="shift-invert")`); the smallest lambda become the
    largest, well separated eigenvalues even when they crowd near 0 as on image grids.
    Returns (values, vectors), values ascending.
    """
    from .kernels import normalized_adjacency, top_eigenpairs

    S, _ = normalized_adjacency(W)
    method = "dense" if k >= S.shape[0] - 1 else "shift-invert"
    spec = top_eigenpairs(S, k, tol=tol, method=method, upper=1.0, random_state=rng)
    return 1.0 - spec.values, spec.vectors


def _njw_labels(W, k, rng, n_init, tol):
    """NJW: rows of the bottom-k eigenvectors normalised to unit length, then k-means."""
    from sklearn.cluster import KMeans

    _, vecs = _njw_embedding(W, k, rng, tol)
    norms = np.linalg.norm(vecs, axis=1)
    norms[norms == 0] = 1.0
    Y = vecs / norms[:, None]
    km = KMeans(n_clusters=k, n_init=n_init, random_state=int(rng.integers(2**31 - 1))).fit(Y)
    return km.labels_.astype(np.int64)


def _consistency_defaults(n_pixels, n_segments, tol=1e-6):
    """The `ConsistencyClustering` settings `segment_image` uses for a pixel grid (fixed a priori).

    Parameters
    ----------
    n_pixels : int
        Pixels of the image (nodes of the graph).
    n_segments : int
        The number of segments asked for, or the largest one searched (``max_segments``).
    tol : float, default 1e-6
        CG tolerance of the final fit (`segment_image`'s own `tol`).

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
    alpha = 0.99995 for K = 8). The cost of CG does not grow beyond alpha ~ 1 - (1 - lambda_K)
    because deflation by the top K eigenpairs caps the condition number at
    ~2 / (1 - lambda_(K+1)).

    eigen_solver: the top eigenvalues of S on a pixel grid crowd below 1 (1 - lambda_32 ~ 6e-4
    on a 481 x 321 image); shift-invert Lanczos on one sparse LU finds the deflation basis in
    ~6 s where plain Lanczos did not finish in 12 minutes.

    method: a pixel grid is planar, so one sparse LU of I - alpha S (nested-dissection-like
    minimum-degree ordering) costs about a second and every solve is then two triangular
    sweeps; with it a BSDS image takes seconds where deflated CG took about a minute
    (the direct solver was proposed and prototyped by the applications work: column norms
    and the seed path in 2.8 s instead of 31 s on a 321 x 481 development image, same seeds
    and labels). The solves are checked against `tol` and refined once if needed.

    tol: the labels are an argmax over seed columns; a relative CG residual of 1e-6 (the
    search's own tolerance, and `segment_image`'s default `tol`) is plenty for the final fit
    too and saves ~25 % of the iterations of ConsistencyClustering's default 1e-8.

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
        NJW spectral clustering (shift-invert Lanczos, fast at full resolution), AHK
        (`AHKClustering` on the affinity) or consistency clustering (`ConsistencyClustering`).
        NJW and AHK both use shift-invert Lanczos (`top_eigenpairs(method="shift-invert")`):
        a 481 x 321 BSDS image takes about 3 s with NJW and 26 s with AHK (m = 100 eigenpairs).
        Consistency clustering runs deflated CG with a shift-invert deflation basis and an
        alpha fixed a priori from the image size (see Notes): about 70 s per 481 x 321
        image with `n_segments` given, 80 s with ``"auto"`` (which on natural images picks
        `max_segments` or close to it: Omega grows with the number of segments there).
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
        Eigensolver tolerance (NJW); CG tolerance of the final fit (consistency).
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
        alpha (several times slower on large images).

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
    Cost at 481 x 321 on a 2-core machine (NJW, grid): graph 1 s, LU + Lanczos ~5 s, k-means ~2 s.
    PMST (20 trees) adds ~6 s, DMST ~2 s. Memory: `segmentation_memory`.

    Consistency clustering on a pixel grid uses settings fixed a priori, never tuned on a
    benchmark: alpha = n / (n + K) with n pixels and K = `n_segments` (or `max_segments` with
    ``"auto"``), so that U = beta sum_t alpha^t S^t sums random walks of n / K steps on
    average, which reach about sqrt(n / K) pixels, the side of an average square segment
    (alpha = 0.99995 for K = 8 on a BSDS image); one alpha instead of the default search saves
    one set of column norms and seed solves per alpha. The deflation basis (32 top
    eigenpairs of S) comes from shift-invert Lanczos, the CG tolerance is `tol`. sigma is the
    image's median edge length as for the other methods. On a 481 x 321 image with K = 8 the
    basis takes 6-7 s and the CG solves 30-60 s depending on the machine's load (column-norm
    probes ~35 %, 17 single-column inlierness and seed solves ~30 %, three 8-column block
    solves for Omega and the within-cluster inlierness ~35 %); 68 s per image on average over
    the 20 BSDS images of ``docs/applications.md`` on a loaded 2-core machine.

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
        labels = _njw_labels(W, k, sub_rng, n_init, tol)
    elif method == "ahk":
        from .cluster import AHKClustering

        # shift-invert Lanczos: on pixel grids the bottom of the spectrum is crowded and plain
        # Lanczos takes minutes where one LU factorisation takes seconds
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


# ------------------------------------------------------------------------------------ metrics
def _pair_table(a, b):
    a = np.asarray(a).ravel()
    b = np.asarray(b).ravel()
    if a.shape != b.shape:
        raise ValueError(f"segmentations must have the same number of pixels; got {a.size} and {b.size}.")
    if a.size == 0:
        raise ValueError("segmentations are empty.")
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    table = sp.coo_matrix((np.ones(a.size), (ia, ib))).tocsr()
    table.sum_duplicates()
    return table


def _as_list(truths):
    if isinstance(truths, np.ndarray) and truths.ndim == 2:
        return [truths]
    truths = list(truths)
    if not truths:
        raise ValueError("give at least one ground-truth segmentation.")
    return truths


def _rand_index(a, b):
    t = _pair_table(a, b)
    n = float(t.sum())
    nij = t.data
    ai = np.asarray(t.sum(axis=1)).ravel()
    bj = np.asarray(t.sum(axis=0)).ravel()
    pairs = n * (n - 1) / 2
    if pairs == 0:
        return 1.0
    same_both = (nij * (nij - 1) / 2).sum()
    same_a = (ai * (ai - 1) / 2).sum()
    same_b = (bj * (bj - 1) / 2).sum()
    disagree = same_a + same_b - 2 * same_both
    return float(1.0 - disagree / pairs)


def probabilistic_rand_index(segmentation, truths):
    """Probabilistic Rand Index: the mean over ground truths of the Rand index.

    RI(S, G) = fraction of pixel pairs on which S and G agree (both same segment, or both
    different); PRI = mean_k RI(S, G_k) (Unnikrishnan et al. 2007), which is the same as the mean
    over pairs of p_ij c_ij + (1 - p_ij)(1 - c_ij) with p_ij the fraction of humans joining i, j.

    Examples
    --------
    >>> from graphclust.segmentation import probabilistic_rand_index
    >>> probabilistic_rand_index([[0, 0, 1]], [[[0, 0, 1]], [[0, 1, 1]]])  # pairs: 3/3 and 1/3
    0.6666666666666667
    """
    return float(np.mean([_rand_index(segmentation, g) for g in _as_list(truths)]))


def _voi(a, b):
    t = _pair_table(a, b)
    n = float(t.sum())
    p = t.data / n
    pa = np.asarray(t.sum(axis=1)).ravel() / n
    pb = np.asarray(t.sum(axis=0)).ravel() / n
    ha = -(pa * np.log(pa)).sum()
    hb = -(pb * np.log(pb)).sum()
    coo = t.tocoo()
    mi = (p * np.log(p / (pa[coo.row] * pb[coo.col]))).sum()
    return float(max(ha + hb - 2 * mi, 0.0))


def variation_of_information(segmentation, truths):
    """Variation of Information H(S) + H(G) - 2 I(S; G) (natural log), mean over ground truths.

    Lower is better; 0 for identical partitions.

    Examples
    --------
    >>> from graphclust.segmentation import variation_of_information
    >>> round(variation_of_information([[0, 0, 1, 1]], [[0, 0, 0, 0]]), 6)  # H(S) = log 2
    0.693147
    """
    return float(np.mean([_voi(segmentation, g) for g in _as_list(truths)]))


def _covering(seg, truth):
    t = _pair_table(truth, seg).tocoo()  # rows: regions of the ground truth
    n = float(t.data.sum())
    size_t = np.bincount(t.row, weights=t.data)
    size_s = np.bincount(t.col, weights=t.data)
    iou = t.data / (size_t[t.row] + size_s[t.col] - t.data)
    best = np.zeros(size_t.size)
    np.maximum.at(best, t.row, iou)
    return float((size_t * best).sum() / n)


def segmentation_covering(segmentation, truths):
    """Segmentation covering of the ground truth by `segmentation`, mean over ground truths.

    C(S -> G) = (1/N) sum_{R in G} |R| max_{R' in S} |R & R'| / |R | R'| (Arbelaez et al. 2011):
    each human region is matched with its best-overlapping segment. Higher is better, 1 at
    equality.

    Examples
    --------
    >>> from graphclust.segmentation import segmentation_covering
    >>> segmentation_covering([[0, 0, 1, 1]], [[0, 0, 0, 1]])  # (3 * 2/3 + 1 * 1/2) / 4
    0.625
    """
    return float(np.mean([_covering(segmentation, g) for g in _as_list(truths)]))


def occluder_error(labels, mask):
    """Mismatched occluder area of a segmentation, as a fraction of the occluder's area.

    The segments with more than half of their pixels on the occluder form the estimated occluder
    O'; the error is |O' xor O| / |O| (0: the occluder is exactly a union of segments; 1: e.g.
    no segment is mostly occluder). This is our reading of the paper's "clustering error
    (mismatched occluder area)" for K = 5 clusters, where the background may take several.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.segmentation import occluder_error
    >>> mask = np.array([[0, 1, 1, 0]], bool)
    >>> occluder_error(np.array([[0, 1, 1, 2]]), mask), occluder_error(np.array([[0, 0, 1, 1]]), mask)
    (0.0, 1.0)
    """
    labels = np.asarray(labels)
    mask = np.asarray(mask, dtype=bool)
    if labels.shape != mask.shape:
        raise ValueError(f"labels and mask must have the same shape; got {labels.shape} and {mask.shape}.")
    if not mask.any():
        raise ValueError("mask has no occluder pixel.")
    _, inv = np.unique(labels.ravel(), return_inverse=True)
    inside = np.bincount(inv, weights=mask.ravel().astype(float))
    total = np.bincount(inv)
    chosen = inside > total / 2
    est = chosen[inv].reshape(mask.shape)
    return float((est ^ mask).sum() / mask.sum())


# ------------------------------------------------------------------------------------ pictures
def _boundaries(labels):
    b = np.zeros(labels.shape, dtype=bool)
    b[:, :-1] |= labels[:, :-1] != labels[:, 1:]
    b[:-1, :] |= labels[:-1, :] != labels[1:, :]
    return b


def overlay(image, labels, *, alpha=0.5, boundary_color=(255, 0, 0)):
    """RGB picture of a segmentation: each segment blended with its mean colour, boundaries drawn.

    Parameters
    ----------
    image : array (H, W) or (H, W, C)
    labels : int array (H, W)
    alpha : float in [0, 1], default 0.5
        Weight of the segment's mean colour against the pixel's own.
    boundary_color : (int, int, int) or None

    Returns
    -------
    uint8 array (H, W, 3)

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.segmentation import overlay
    >>> overlay(np.zeros((2, 3)), np.array([[0, 0, 1], [0, 0, 1]])).shape
    (2, 3, 3)
    """
    img = check_image(image)
    labels = np.asarray(labels)
    if labels.shape != img.shape[:2]:
        raise ValueError(f"labels must have the image's shape {img.shape[:2]}; got {labels.shape}.")
    alpha = check_real(alpha, "alpha", low=0, high=1)
    rgb = img[:, :, :3] if img.shape[2] >= 3 else np.repeat(img[:, :, :1], 3, axis=2)
    rgb = np.clip(rgb, 0.0, 1.0)
    _, inv = np.unique(labels.ravel(), return_inverse=True)
    counts = np.bincount(inv)
    flat = rgb.reshape(-1, 3)
    means = np.column_stack([np.bincount(inv, weights=flat[:, c]) / counts for c in range(3)])
    out = (1 - alpha) * flat + alpha * means[inv]
    out = (255 * out.reshape(rgb.shape) + 0.5).astype(np.uint8)
    if boundary_color is not None:
        out[_boundaries(labels)] = np.asarray(boundary_color, dtype=np.uint8)
    return out


def plot_segmentation(image, labels, *, ax=None, title=None, path=None):
    """Draw `overlay(image, labels)` with matplotlib (imported here; ``pip install graphclust[plot]``).

    Returns the matplotlib Axes; with `path`, also saves the figure there.
    """
    try:
        import matplotlib

        if ax is None and path is not None:
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(
            "plot_segmentation needs matplotlib: install the plot extra with "
            "pip install graphclust[plot]"
        ) from None
    created = ax is None
    if created:
        fig, ax = plt.subplots(figsize=(6, 6 * labels.shape[0] / max(labels.shape[1], 1) + 0.5))
    ax.imshow(overlay(image, labels))
    ax.set_axis_off()
    ax.set_title(title or f"{len(np.unique(labels))} segments")
    if path is not None:
        ax.figure.tight_layout()
        ax.figure.savefig(os.fspath(path), dpi=120)
        if created:
            plt.close(ax.figure)
    return ax
