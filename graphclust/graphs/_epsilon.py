"""Epsilon-ball graph: every pair closer than a radius."""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_option, check_points, check_real
from ._graph import Graph
from ._knn import METRICS, prepare_metric, euclidean_to_metric
from ._numba import edge_length_kernel
from ._scale import centred_rescale, scale_back

__all__ = ["epsilon_graph", "EPSILON_MAX_EDGES", "estimate_epsilon_edges"]

#: `epsilon_graph` refuses a radius whose estimated edge count exceeds this (override with
#: ``max_edges``). Building costs about 280 bytes per edge at its peak (scikit-learn's radius
#: lists, then the two symmetric CSR matrices of the Graph): 10 M edges is about 3 GB.
EPSILON_MAX_EDGES = 10_000_000

#: Points whose neighbours are counted exactly to estimate the edge count.
_ESTIMATE_SAMPLE = 256

#: Measured peak memory of building, per undirected edge (5 000 points, 12.5 M edges: 3.5 GB).
_BYTES_PER_EDGE = 280


def estimate_epsilon_edges(Y, radius, *, n_sample=_ESTIMATE_SAMPLE):
    """Estimated number of undirected edges of the radius graph on the (prepared) points `Y`.

    Counts exactly, by brute force in blocks, the points within `radius` of each of `n_sample`
    points drawn without replacement (a fixed seed: the estimate is deterministic), and
    extrapolates: E ~ n * mean(count) / 2. Exact when n <= n_sample. Cost n_sample x n x dim,
    a fraction n_sample / n of a brute-force build, and never more than a few MB of memory.
    """
    n = Y.shape[0]
    if n <= n_sample:
        sample = np.arange(n)
    else:
        sample = np.sort(np.random.default_rng(0).choice(n, size=n_sample, replace=False))
    S = Y[sample]
    s_sq = np.einsum("ij,ij->i", S, S)
    counts = np.zeros(sample.size, dtype=np.int64)
    r2 = radius * radius
    block = max(1, 2**20 // max(sample.size, 1))
    for start in range(0, n, block):
        B = Y[start : start + block]
        D2 = s_sq[:, None] + np.einsum("ij,ij->i", B, B)[None, :] - 2.0 * (S @ B.T)
        counts += (D2 <= r2 * (1 + 1e-12)).sum(axis=1)
    counts -= 1  # each sampled point counted itself
    if n <= n_sample:
        return int(counts.sum() // 2)
    return int(round(n * float(counts.mean()) / 2.0))


def epsilon_graph(X, radius, *, metric="euclidean", max_edges=EPSILON_MAX_EDGES):
    """Graph joining every pair of points at distance <= `radius`.

    Uses a ball tree / kd-tree radius search (scikit-learn), so memory grows with the number of
    edges, never n x n. A radius that is large relative to the data produces O(n^2) edges, so
    the edge count is first estimated from a sample of 256 points (`estimate_epsilon_edges`)
    and a radius whose estimate exceeds `max_edges` is refused before anything is built. Start
    from a small radius (e.g. the median kNN distance). Isolated points are kept and reported
    through ``n_components``.

    Parameters
    ----------
    X : array-like (n_samples, n_features)
    radius : float > 0
        In units of `metric` (cosine distance = 1 - cos).
    metric : {"euclidean", "cosine"}
    max_edges : int >= 0 or None, default `EPSILON_MAX_EDGES` (10 000 000, about 3 GB)
        Refuse when the estimated number of edges is larger; None disables the guard.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).uniform(size=(500, 2))
    >>> g = gc.epsilon_graph(X, radius=0.1)
    >>> g.n_nodes, bool(g.distances.data.max() <= 0.1)
    (500, True)
    """
    from sklearn.neighbors import NearestNeighbors

    X = check_points(X)
    radius = check_real(radius, "radius", low=0.0, low_inclusive=False)
    check_option(metric, "metric", set(METRICS))
    if max_edges is not None:
        max_edges = check_int(max_edges, "max_edges", low=0)
    # distances on Y / s (s a power of two: exact), so that the scale of X can neither
    # underflow nor overflow them (less the points' far offset); the radius is divided by the
    # same s
    Y, s = centred_rescale(prepare_metric(X, metric))
    # euclidean radius on unit rows equivalent to the cosine radius: 1 - cos = ||a - b||^2 / 2
    r_eucl = (np.sqrt(2.0 * radius) if metric == "cosine" else radius) / s
    n = X.shape[0]
    if max_edges is not None:
        estimate = estimate_epsilon_edges(Y, r_eucl)
        if estimate > max_edges:
            exact = n <= _ESTIMATE_SAMPLE
            raise ValueError(
                f"epsilon_graph with radius={radius:g} would build {'' if exact else 'about '}"
                f"{estimate:,} edges ({2 * estimate / n:.0f} neighbours per point"
                f"{'' if exact else f', estimated from {_ESTIMATE_SAMPLE} sampled points'}), "
                f"more than max_edges={max_edges:,} (about {_BYTES_PER_EDGE * estimate / 1e9:.1f} "
                "GB to build). Use a smaller radius (e.g. a typical k-th neighbour distance) or "
                "knn_graph, or pass a larger max_edges (None disables the check)."
            )
    nn = NearestNeighbors(radius=r_eucl).fit(Y)
    dist, idx = nn.radius_neighbors(return_distance=True)  # excludes each point itself
    counts = np.fromiter((len(i) for i in idx), dtype=np.int64, count=n)
    u = np.repeat(np.arange(n, dtype=np.int64), counts)
    v = np.concatenate(idx).astype(np.int64) if counts.sum() else np.empty(0, np.int64)
    # lengths recomputed directly (symmetric in (i, j), no cancellation; see _knn._exact_lengths)
    d = edge_length_kernel(Y, u, v) if counts.sum() else np.empty(0)
    inside = d <= r_eucl  # the search's own test used another formula: agree with this one
    u, v, d = u[inside], v[inside], d[inside]
    d = euclidean_to_metric(scale_back(d, s), metric)
    keep = d <= radius  # guard the conversions against rounding at the boundary
    return Graph._from_edges(
        n, u[keep], v[keep], d[keep],
        provenance={"builder": "epsilon_graph", "radius": radius, "metric": metric},
    )
