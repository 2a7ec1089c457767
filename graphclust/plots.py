"""Pictures of a clustering (the papers' figures); matplotlib is imported only when one is drawn.

=========================  =================================================================
function                   draws
=========================  =================================================================
`plot_clusters`            points coloured by cluster, marker area by inlierness, the
                           representatives starred and the worst outliers circled
`plot_omega`               the Omega surface over sigma and alpha, one panel per c, the
                           chosen (sigma, alpha, c) marked
`plot_ranked_outliers`     inlierness in ascending order (global outlier ranking)
`plot_cluster_gallery`     for image data (digits): per cluster its representative and its
                           worst within-cluster outliers as a picture grid (the USPS figure)
`plot_segmentation`        a segmentation overlaid on its image (`overlay`: the picture as
                           an RGB array, without matplotlib)
=========================  =================================================================

Every ``plot_*`` function takes a fitted `graphclust.Pipeline` or
`graphclust.ConsistencyClustering` (or anything with the same attributes; `plot_segmentation` an
image and its labels), returns the matplotlib Figure, and saves it when `path` is given. Without
matplotlib they raise an ImportError that says ``pip install graphclust[plot]``.
"""

from __future__ import annotations

import os

import numpy as np

from ._validation import check_real
from .graphs import check_image

__all__ = [
    "overlay",
    "plot_cluster_gallery",
    "plot_clusters",
    "plot_omega",
    "plot_ranked_outliers",
    "plot_segmentation",
]


def require_pyplot(path=None):
    """matplotlib.pyplot (Agg backend when only writing a file), or an ImportError saying how."""
    try:
        import matplotlib

        if path is not None and not os.environ.get("MPLBACKEND"):
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(
            "graphclust.plots needs matplotlib, which is not installed: install the plot extra "
            "with pip install graphclust[plot]"
        ) from None
    return plt


def _finish(plt, fig, path, created):
    if path is not None:
        fig.tight_layout()
        fig.savefig(os.fspath(path), dpi=120)
        if created:
            plt.close(fig)
    return fig


def _fitted(model, *names):
    missing = [n for n in names if not hasattr(model, n)]
    if missing:
        raise ValueError(
            f"{type(model).__name__} has no {', '.join(missing)}: plot a fitted ConsistencySeeds "
            "pipeline or ConsistencyClustering (call fit first)."
        )


def marker_sizes(inlierness, smallest=4.0, largest=64.0):
    """Marker areas growing linearly with inlierness, from `smallest` to `largest` (points^2)."""
    o = np.asarray(inlierness, dtype=float)
    finite = np.isfinite(o)
    if not finite.any():
        return np.full(o.shape, smallest)
    lo, hi = o[finite].min(), o[finite].max()
    span = hi - lo if hi > lo else 1.0
    out = smallest + (largest - smallest) * (np.where(finite, o, lo) - lo) / span
    return out


def _two_d(X):
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[1] < 1:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))]), ("x0", "")
    if X.shape[1] == 2:
        return X, ("x0", "x1")
    Xc = X - X.mean(axis=0)
    _, _, Vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ Vt[:2].T, ("principal component 1", "principal component 2")


def plot_clusters(X, model, *, n_outliers=5, ax=None, title=None, path=None):
    """Points coloured by cluster, area by inlierness, representatives starred.

    Parameters
    ----------
    X : array (n, d)
        The clustered points; d > 2 is drawn on its first two principal components.
    model : fitted Pipeline or ConsistencyClustering
        Uses ``labels_`` and, when present, ``inlierness_`` (marker area),
        ``representatives_`` (stars) and the `n_outliers` lowest inlierness (red circles).
    n_outliers : int, default 5
    ax : matplotlib Axes, optional
    title : str, optional
    path : str or Path, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import graphclust as gc
    >>> from graphclust.datasets import two_moons
    >>> from graphclust.plots import plot_clusters
    >>> X, _ = two_moons(200, random_state=0)
    >>> model = gc.ConsistencyClustering(2, alpha=0.99, sigma=0.1, random_state=0).fit(X)
    >>> fig = plot_clusters(X, model)
    >>> len(fig.axes[0].collections)   # points, representatives, outliers
    3
    """
    plt = require_pyplot(path if ax is None else None)
    _fitted(model, "labels_")
    P, names = _two_d(X)
    labels = np.asarray(model.labels_)
    if labels.shape != (P.shape[0],):
        raise ValueError(f"X has {P.shape[0]} points but the model has {labels.shape[0]} labels.")
    created = ax is None
    if created:
        fig, ax = plt.subplots(figsize=(6, 5))
    fig = ax.figure
    o = getattr(model, "inlierness_", None)
    sizes = marker_sizes(o) if o is not None else np.full(len(P), 12.0)
    k = max(int(labels.max()) + 1, 1)
    ax.scatter(P[:, 0], P[:, 1], c=np.where(labels >= 0, labels, k), s=sizes,
               cmap="tab10" if k <= 10 else "tab20", vmin=0, vmax=max(k, 9), linewidths=0)
    reps = getattr(model, "representatives_", None)
    if reps is not None:
        ax.scatter(P[reps, 0], P[reps, 1], marker="*", s=400, c="k", edgecolors="w",
                   label="representatives")
    if o is not None and n_outliers:
        worst = np.argsort(np.where(np.isfinite(o), o, np.inf), kind="stable")[:int(n_outliers)]
        ax.scatter(P[worst, 0], P[worst, 1], marker="o", s=90, facecolors="none",
                   edgecolors="r", label=f"{len(worst)} worst outliers")
    ax.set_xlabel(names[0])
    ax.set_ylabel(names[1])
    if title is None:
        title = f"{len(np.unique(labels[labels >= 0]))} clusters"
        if o is not None:
            title += " (marker area = inlierness)"
    ax.set_title(title)
    if reps is not None or o is not None:
        ax.legend(loc="best", fontsize=8)
    return _finish(plt, fig, path, created)


def plot_omega(model, *, path=None):
    """The searched Omega surface over (sigma, alpha), one panel per number of clusters c.

    The chosen (sigma_, alpha_) is boxed on the panel of the chosen c; entries the search could
    not choose (a component without a seed, ``omega_valid_`` False) are crossed; NaN is blank.

    Returns
    -------
    matplotlib.figure.Figure
    """
    _fitted(model, "omega_", "omega_sigmas_", "omega_alphas_", "omega_n_clusters_")
    plt = require_pyplot(path)
    omega = np.asarray(model.omega_, dtype=float)
    valid = np.asarray(getattr(model, "omega_valid_", np.isfinite(omega)), dtype=bool)
    sig, alp, cs = model.omega_sigmas_, model.omega_alphas_, model.omega_n_clusters_
    n_c = len(cs)
    cols = min(n_c, 4)
    rows = int(np.ceil(n_c / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols + 1, 2.8 * rows + 0.4),
                             squeeze=False)
    finite = omega[np.isfinite(omega)]
    vmin, vmax = (finite.min(), finite.max()) if finite.size else (0.0, 1.0)
    image = None
    for i, c in enumerate(cs):
        ax = axes[i // cols][i % cols]
        image = ax.imshow(np.ma.masked_invalid(omega[:, :, i]), vmin=vmin, vmax=vmax,
                          cmap="viridis", aspect="auto", origin="lower")
        bad = np.argwhere(~valid[:, :, i] & np.isfinite(omega[:, :, i]))
        if bad.size:
            ax.plot(bad[:, 1], bad[:, 0], "x", color="w", ms=8)
        ax.set_xticks(range(len(alp)))
        ax.set_xticklabels(["-" if np.isnan(a) else f"{a:.6g}" for a in alp], rotation=45,
                           fontsize=7)
        ax.set_yticks(range(len(sig)))
        ax.set_yticklabels(["W" if np.isnan(s) else f"{s:.3g}" for s in sig] if i % cols == 0
                           else [], fontsize=7)
        ax.set_title(f"c = {c}", fontsize=9)
        if i % cols == 0:
            ax.set_ylabel("sigma")
        ax.set_xlabel("alpha", fontsize=8)
        if int(c) == int(getattr(model, "n_clusters_", -1)):
            si = _index_of(sig, getattr(model, "sigma_", None))
            ai = _index_of(alp, getattr(model, "alpha_", None))
            ax.add_patch(plt.Rectangle((ai - 0.5, si - 0.5), 1, 1, fill=False, ec="r", lw=2))
            ax.set_title(f"c = {c} (chosen)", fontsize=9, color="r")
    for j in range(n_c, rows * cols):
        axes[j // cols][j % cols].set_axis_off()
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="Omega")
    fig.suptitle("Omega: mean D_M between clusters - mean D_M within")
    if path is not None:
        fig.savefig(os.fspath(path), dpi=120)
        plt.close(fig)
    return fig


def _index_of(values, value):
    values = np.asarray(values, dtype=float)
    if value is None or np.all(np.isnan(values)):
        return 0
    return int(np.nanargmin(np.abs(values - float(value))))


def plot_ranked_outliers(model, *, n_outliers=10, within_cluster=False, ax=None, path=None):
    """Inlierness in ascending order: the global (or within-cluster) outlier ranking.

    The `n_outliers` worst points are marked and annotated with their indices.

    Returns
    -------
    matplotlib.figure.Figure
    """
    name = "cluster_inlierness_" if within_cluster else "inlierness_"
    _fitted(model, name)
    plt = require_pyplot(path if ax is None else None)
    score = np.asarray(getattr(model, name), dtype=float)
    order = np.argsort(np.where(np.isfinite(score), score, np.inf), kind="stable")
    created = ax is None
    if created:
        fig, ax = plt.subplots(figsize=(6, 3.5))
    fig = ax.figure
    ax.plot(np.arange(len(order)), score[order], "-", color="0.3", lw=1)
    worst = order[:int(n_outliers)]
    ax.plot(np.arange(len(worst)), score[worst], "o", color="r", ms=5)
    for rank, i in enumerate(worst[:10]):
        ax.annotate(str(int(i)), (rank, score[i]), textcoords="offset points", xytext=(3, 3),
                    fontsize=7)
    ax.set_xlabel("rank (worst outlier first)")
    ax.set_ylabel("within-cluster inlierness" if within_cluster else "inlierness")
    ax.set_title(f"ranked {'within-cluster ' if within_cluster else ''}outliers")
    return _finish(plt, fig, path, created)


def cluster_gallery_indices(model, n_outliers=5):
    """Rows of the gallery: per cluster, [representative, worst within-cluster outliers...].

    Returns a list (one entry per cluster, in cluster order) of index arrays.
    """
    _fitted(model, "labels_", "representatives_", "cluster_inlierness_")
    labels = np.asarray(model.labels_)
    cin = np.asarray(model.cluster_inlierness_, dtype=float)
    rows = []
    for j, rep in enumerate(np.asarray(model.representatives_)):
        members = np.flatnonzero((labels == j) & (np.arange(len(labels)) != rep))
        worst = members[np.argsort(cin[members], kind="stable")][:int(n_outliers)]
        rows.append(np.concatenate([[int(rep)], worst]).astype(np.int64))
    return rows


def plot_cluster_gallery(model, images, *, image_shape=None, n_outliers=5, cmap="gray_r",
                         path=None):
    """Picture grid: one row per cluster, its representative then its worst outliers.

    The papers' USPS figure: the most representative image of each cluster (its seed) followed
    by the images of lowest within-cluster inlierness.

    Parameters
    ----------
    model : fitted ConsistencySeeds pipeline or ConsistencyClustering
    images : array (n, h, w) or (n, h * w)
    image_shape : (h, w), optional
        Needed for flat rows that are not square (a square number of pixels is reshaped to a
        square).
    n_outliers : int, default 5

    Returns
    -------
    matplotlib.figure.Figure
    """
    rows = cluster_gallery_indices(model, n_outliers)
    images = np.asarray(images, dtype=float)
    n = len(np.asarray(model.labels_))
    if images.shape[0] != n:
        raise ValueError(f"images has {images.shape[0]} rows but the model has {n} points.")
    if images.ndim == 2:
        if image_shape is None:
            side = int(round(np.sqrt(images.shape[1])))
            if side * side != images.shape[1]:
                raise ValueError(
                    f"images has {images.shape[1]} pixels per row, not a square number: give "
                    "image_shape=(height, width).")
            image_shape = (side, side)
        if int(np.prod(image_shape)) != images.shape[1]:
            raise ValueError(f"image_shape {tuple(image_shape)} does not hold "
                             f"{images.shape[1]} pixels.")
        images = images.reshape((n, *image_shape))
    elif images.ndim != 3:
        raise ValueError(f"images must be (n, h, w) or (n, h * w); got shape {images.shape}.")
    plt = require_pyplot(path)
    n_cols = 1 + int(n_outliers)
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(1.1 * n_cols + 0.6, 1.1 * len(rows)),
                             squeeze=False)
    for r, idx in enumerate(rows):
        for c in range(n_cols):
            ax = axes[r][c]
            ax.set_xticks([])
            ax.set_yticks([])
            if c < len(idx):
                ax.imshow(images[idx[c]], cmap=cmap)
                if c == 0:
                    for spine in ax.spines.values():
                        spine.set_edgecolor("r")
                        spine.set_linewidth(2)
            else:
                ax.set_axis_off()
        axes[r][0].set_ylabel(f"cluster {r}", fontsize=8)
    axes[0][0].set_title("representative", fontsize=8)
    if n_cols > 1:
        axes[0][1].set_title("worst outliers ->", fontsize=8, loc="left")
    if path is not None:
        fig.savefig(os.fspath(path), dpi=120)
        plt.close(fig)
    return fig


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
    >>> from graphclust.plots import overlay
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
    """A segmentation overlaid on its image: `overlay` drawn with matplotlib.

    Parameters
    ----------
    image : array (H, W) or (H, W, C)
    labels : int array (H, W)
    ax : matplotlib Axes, optional
    title : str, optional
        Default: the number of segments.
    path : str or Path, optional
        Save the figure there.

    Returns
    -------
    matplotlib.figure.Figure
    """
    plt = require_pyplot(path if ax is None else None)
    labels = np.asarray(labels)
    picture = overlay(image, labels)
    created = ax is None
    if created:
        _, ax = plt.subplots(figsize=(6, 6 * labels.shape[0] / max(labels.shape[1], 1) + 0.5))
    ax.imshow(picture)
    ax.set_axis_off()
    ax.set_title(title or f"{len(np.unique(labels))} segments")
    return _finish(plt, ax.figure, path, created)
