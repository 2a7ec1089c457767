"""Epsilon-ball graph: every pair closer than a radius."""

from __future__ import annotations

import numpy as np

from .._validation import check_option, check_points, check_real
from ._graph import Graph
from ._knn import METRICS, prepare_metric, euclidean_to_metric

__all__ = ["epsilon_graph"]


def epsilon_graph(X, radius, *, metric="euclidean"):
    """Graph joining every pair of points at distance <= `radius`.

    Uses a ball tree / kd-tree radius search (scikit-learn), so memory grows with the number of
    edges, never n x n; a radius that is large relative to the data can still produce O(n^2)
    edges, so start from a small one (e.g. the median kNN distance). Isolated points are kept
    and reported through ``n_components``.

    Parameters
    ----------
    X : array-like (n_samples, n_features)
    radius : float > 0
        In units of `metric` (cosine distance = 1 - cos).
    metric : {"euclidean", "cosine"}

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
    Y = prepare_metric(X, metric)
    # euclidean radius on unit rows equivalent to the cosine radius: 1 - cos = ||a - b||^2 / 2
    r_eucl = np.sqrt(2.0 * radius) if metric == "cosine" else radius
    nn = NearestNeighbors(radius=r_eucl).fit(Y)
    dist, idx = nn.radius_neighbors(return_distance=True)  # excludes each point itself
    n = X.shape[0]
    counts = np.fromiter((len(i) for i in idx), dtype=np.int64, count=n)
    u = np.repeat(np.arange(n, dtype=np.int64), counts)
    v = np.concatenate(idx).astype(np.int64) if counts.sum() else np.empty(0, np.int64)
    d = np.concatenate(dist) if counts.sum() else np.empty(0)
    d = euclidean_to_metric(d, metric)
    keep = d <= radius  # guard the cosine conversion against rounding at the boundary
    return Graph._from_edges(
        n, u[keep], v[keep], d[keep],
        provenance={"builder": "epsilon_graph", "radius": radius, "metric": metric},
    )
