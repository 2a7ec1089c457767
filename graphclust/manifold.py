"""Isomap on any proximity graph (Carreira-Perpinan & Zemel, section 3.2).

Geodesic distances are shortest-path lengths in the graph (``scipy.sparse.csgraph.dijkstra`` on the
edge lengths ``graph.distances``); classical MDS embeds them. Up to `FULL_MDS_MAX_SAMPLES` nodes the
whole n x n geodesic matrix is formed (exact Isomap); beyond, landmark Isomap (de Silva & Tenenbaum)
uses the geodesics from m landmarks only (m x n), so nothing n x n is ever allocated.

Ensemble graphs (PMST) are used binarised, as in the paper: an edge is in the graph when e_ij > 0,
and its length is the data-space distance d_ij.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ._validation import check_int, check_option, check_random_state
from .graphs import Graph

__all__ = [
    "isomap",
    "IsomapResult",
    "geodesic_distances",
    "residual_variance",
    "FULL_MDS_MAX_SAMPLES",
    "DEFAULT_N_LANDMARKS",
]

#: Above this many nodes ``n_landmarks="auto"`` switches from exact (n x n) to landmark Isomap.
FULL_MDS_MAX_SAMPLES = 3000
#: Landmarks used by ``n_landmarks="auto"`` on large graphs.
DEFAULT_N_LANDMARKS = 500


@dataclass
class IsomapResult:
    """What `isomap` returns.

    Attributes
    ----------
    embedding : array (n_embedded, n_components)
        Low-dimensional coordinates, one row per entry of `nodes`.
    residual_variance : float
        1 - R^2(G, D_Y), R the linear correlation over all pairs of the geodesic distances G and
        the embedding's Euclidean distances D_Y (exact Isomap); with landmarks it is taken over
        the landmark-to-all pairs (an estimate, see `isomap` Notes).
    eigenvalues : array (n_components,)
        Top eigenvalues of the double-centred squared geodesic matrix (the variance along each
        embedding axis, times n or m).
    nodes : int array (n_embedded,)
        Graph nodes embedded (all of them unless ``disconnected="largest"`` dropped some).
    landmarks : int array (m,) or None
        Landmark nodes (indices into the graph), None for exact Isomap.
    """

    embedding: np.ndarray
    residual_variance: float
    eigenvalues: np.ndarray
    nodes: np.ndarray
    landmarks: np.ndarray | None = None


def _check_graph(graph):
    if isinstance(graph, Graph):
        return graph
    if sp.issparse(graph):
        return Graph.from_sparse(graph, values="distances")
    raise TypeError(
        "graph must be a graphclust Graph (e.g. knn_graph(X, 10)) or a symmetric scipy sparse "
        f"matrix of edge lengths; got {type(graph).__name__}."
    )


def geodesic_distances(graph, sources=None):
    """Shortest-path lengths in `graph` (Dijkstra on ``graph.distances``).

    Parameters
    ----------
    graph : Graph or symmetric sparse matrix of edge lengths
    sources : int array or None
        Rows to compute; None for all nodes (an n x n matrix: small graphs only).

    Returns
    -------
    array (len(sources), n); np.inf between nodes in different components.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> from graphclust.manifold import geodesic_distances
    >>> g = gc.knn_graph(np.array([0.0, 1.0, 2.5, 4.5, 7.0]).reshape(-1, 1), 1)  # no ties
    >>> geodesic_distances(g, [0])
    array([[0. , 1. , 2.5, 4.5, 7. ]])
    """
    graph = _check_graph(graph)
    D = graph.distances
    if sources is None:
        return dijkstra(D, directed=False)
    return dijkstra(D, directed=False, indices=np.asarray(sources, dtype=np.int64))


def residual_variance(G, DY):
    """1 - R^2 between two sets of distances (flattened), R the linear correlation coefficient.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.manifold import residual_variance
    >>> round(residual_variance(np.array([1.0, 2, 3]), np.array([2.0, 4, 6])), 12)
    0.0
    """
    a = np.asarray(G, dtype=float).ravel()
    b = np.asarray(DY, dtype=float).ravel()
    if a.size != b.size:
        raise ValueError(f"G and DY must have the same number of entries; got {a.size} and {b.size}.")
    a = a - a.mean()
    b = b - b.mean()
    den = np.sqrt((a @ a) * (b @ b))
    if den == 0:
        return 1.0
    r = (a @ b) / den
    return float(1.0 - r * r)


def _classical_mds(D2, n_components):
    """Top eigenpairs of B = -1/2 J D2 J (D2 squared distances, m x m)."""
    m = D2.shape[0]
    row = D2.mean(axis=1)
    B = -0.5 * (D2 - row[:, None] - row[None, :] + row.mean())
    k = min(n_components, m)
    if m <= 50 or 3 * k >= m:
        vals, vecs = la.eigh(B, subset_by_index=[m - k, m - 1])
    else:
        # Lanczos to machine precision: far faster than a dense eigh for a few top pairs
        from scipy.sparse.linalg import eigsh

        vals, vecs = eigsh(B, k=k, which="LA", v0=np.ones(m) / np.sqrt(m) + 1e-3 * np.arange(m) / m)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    return vals, vecs, row


def _upper_pairs_r2(G, Y):
    iu = np.triu_indices(G.shape[0], k=1)
    diff = Y[:, None, :] - Y[None, :, :]
    DY = np.sqrt((diff**2).sum(-1))
    return residual_variance(G[iu], DY[iu])


def _maxmin_landmarks(graph, m, rng):
    """Farthest-point landmarks in geodesic distance; returns (landmarks, their m x n geodesics)."""
    n = graph.n_nodes
    GL = np.empty((m, n))
    L = [int(rng.integers(n))]
    GL[0] = dijkstra(graph.distances, directed=False, indices=L[0])
    nearest = GL[0].copy()
    for i in range(1, m):
        nxt = int(np.argmax(nearest))
        if nearest[nxt] == 0:
            break  # all remaining nodes coincide with a landmark
        L.append(nxt)
        GL[i] = dijkstra(graph.distances, directed=False, indices=nxt)
        np.minimum(nearest, GL[i], out=nearest)
    return np.array(L, dtype=np.int64), GL[: len(L)]


def _streaming_r2(GL, Y, L, chunk=8192):
    """1 - R^2 between GL (m x n) and the embedding distances ||Y[L_a] - Y[j]||, by column blocks."""
    from scipy.spatial.distance import cdist

    sums = np.zeros(5)  # a, b, a^2, b^2, ab
    count = 0
    YL = Y[L]
    for start in range(0, GL.shape[1], chunk):
        a = GL[:, start : start + chunk]
        b = cdist(YL, Y[start : start + chunk])
        sums += [a.sum(), b.sum(), (a * a).sum(), (b * b).sum(), (a * b).sum()]
        count += a.size
    ma, mb = sums[0] / count, sums[1] / count
    va = sums[2] / count - ma * ma
    vb = sums[3] / count - mb * mb
    cov = sums[4] / count - ma * mb
    if va <= 0 or vb <= 0:
        return 1.0
    r = cov / np.sqrt(va * vb)
    return float(1.0 - min(r * r, 1.0))


def isomap(
    graph,
    n_components=2,
    *,
    n_landmarks="auto",
    landmarks="maxmin",
    disconnected="raise",
    random_state=None,
):
    """Isomap embedding of the nodes of a proximity graph, with its residual variance.

    Parameters
    ----------
    graph : Graph or symmetric sparse matrix of edge lengths
        Any proximity graph (`knn_graph`, `epsilon_graph`, `pmst_graph`, `dmst_graph`, ...). Edge
        lengths are ``graph.distances``; ensemble weights are ignored (the graph is binarised).
    n_components : int, default 2
        Embedding dimension.
    n_landmarks : int, None or "auto", default "auto"
        None: exact Isomap (n x n geodesics and eigenproblem). An int m < n: landmark Isomap with m
        landmarks. "auto": exact up to `FULL_MDS_MAX_SAMPLES` nodes, else
        `DEFAULT_N_LANDMARKS` landmarks.
    landmarks : {"maxmin", "random"}, default "maxmin"
        Landmark choice: greedy farthest point in geodesic distance from a random start (spreads
        them over the manifold), or uniformly at random.
    disconnected : {"raise", "largest"}, default "raise"
        A disconnected graph has infinite geodesics between components. "raise": refuse with the
        component sizes; "largest": embed the largest component only, with a warning (the
        embedded nodes are in ``result.nodes``).
    random_state : int, Generator or None
        Seeds the landmark choice.

    Returns
    -------
    IsomapResult
        ``.embedding`` (n, n_components) and ``.residual_variance``, plus eigenvalues, nodes and
        landmarks.

    Raises
    ------
    ValueError
        Fewer than 2 nodes, a graph without edges, a disconnected graph with
        ``disconnected="raise"``, ``n_components`` >= number of nodes.

    Notes
    -----
    Exact Isomap: B = -1/2 J G^2 J with G the geodesic matrix and J = I - 11^T/n; Y = V_k
    Lambda_k^{1/2} for the top k eigenpairs. Residual variance 1 - R^2(G, D_Y) over all pairs
    i < j. Eigenvalues <= 0 (non-Euclidean geodesics) give zero coordinates on that axis, with a
    warning.

    Landmark Isomap (de Silva & Tenenbaum 2003): classical MDS of the m x m landmark geodesics
    gives L = V_k Lambda_k^{1/2}; every node i is placed by distance-based triangulation
    y_i = -1/2 L^# (delta_i - mean_delta), L^# = Lambda_k^{-1/2} V_k^T, delta_i its squared
    geodesics to the landmarks. Cost: m Dijkstra runs (O(m E log n)) and one m x n array of
    landmark geodesics (500 landmarks: 4 MB per 1 000 nodes), the rest in column blocks. It is
    exact when the geodesics are Euclidean distances of rank <= k (a test checks this with 20 of
    200 points as landmarks) and approximates exact Isomap otherwise (a test bounds the gap). The residual variance is then computed on the m x n landmark-to-node pairs: an
    estimate of the all-pairs value.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> t = np.linspace(0, 3 * np.pi, 200)
    >>> X = np.column_stack([t * np.cos(t), t * np.sin(t)])  # a 2-D spiral, a 1-D manifold
    >>> res = gc.isomap(gc.knn_graph(X, 5), n_components=1)
    >>> res.embedding.shape, res.residual_variance < 1e-3
    ((200, 1), True)
    """
    graph = _check_graph(graph)
    check_option(landmarks, "landmarks", {"maxmin", "random"})
    check_option(disconnected, "disconnected", {"raise", "largest"})
    n = graph.n_nodes
    if n < 2:
        raise ValueError(f"the graph has {n} node(s); Isomap needs at least 2.")
    if graph.n_edges == 0:
        raise ValueError(f"the graph has {n} nodes and no edges: there are no geodesics to embed.")
    nodes = np.arange(n)
    if graph.n_components > 1:
        sizes = np.bincount(graph.component_labels)
        top = np.sort(sizes)[::-1]
        shown = ", ".join(str(s) for s in top[:5]) + (", ..." if top.size > 5 else "")
        if disconnected == "raise":
            raise ValueError(
                f"the graph is disconnected ({graph.n_components} components of sizes {shown}): "
                "geodesics between components are infinite. Use a denser graph (larger k or "
                "epsilon, or an MST-based graph, which is always connected) or "
                "disconnected='largest' to embed the largest component only."
            )
        big = int(np.argmax(sizes))
        nodes = np.flatnonzero(graph.component_labels == big)
        warnings.warn(
            f"the graph is disconnected ({graph.n_components} components of sizes {shown}); "
            f"embedding the largest component only ({nodes.size} of {n} nodes).",
            UserWarning,
            stacklevel=2,
        )
        D = graph.distances[nodes][:, nodes]
        graph = Graph(D, provenance={"builder": "largest_component"})
    n_sub = nodes.size
    k = check_int(n_components, "n_components", low=1, high=n_sub, high_inclusive=False)
    if n_landmarks == "auto":
        m = None if n_sub <= FULL_MDS_MAX_SAMPLES else DEFAULT_N_LANDMARKS
    elif n_landmarks is None:
        m = None
    else:
        m = check_int(n_landmarks, "n_landmarks", low=k + 1)
        if m >= n_sub:
            m = None
    if m is None:
        if n_sub > 20000:
            raise ValueError(
                f"exact Isomap on {n_sub} nodes needs a {n_sub} x {n_sub} geodesic matrix "
                f"({n_sub * n_sub * 8 / 1e9:.1f} GB); use n_landmarks='auto' or an integer."
            )
        G = geodesic_distances(graph)
        vals, vecs, _ = _classical_mds(G**2, k)
        Y, vals = _coords(vals, vecs, k)
        rv = _upper_pairs_r2(G, Y)
        return IsomapResult(Y, rv, vals, nodes, None)
    rng = check_random_state(random_state)
    if landmarks == "maxmin":
        L, GL = _maxmin_landmarks(graph, m, rng)
    else:
        L = np.sort(rng.choice(n_sub, size=m, replace=False))
        GL = geodesic_distances(graph, L)
    D2L = GL[:, L] ** 2
    vals, vecs, _ = _classical_mds(D2L, k)
    _, vals = _coords(vals, vecs, k)
    pos = vals > 0
    pinv = np.zeros((k, L.size))
    pinv[pos] = vecs[:, pos].T / np.sqrt(vals[pos])[:, None]
    mean_delta = D2L.mean(axis=1)
    Y = np.empty((n_sub, k))
    for start in range(0, n_sub, 8192):  # column blocks: no second m x n array
        block = GL[:, start : start + 8192] ** 2 - mean_delta[:, None]
        Y[start : start + 8192] = -0.5 * (pinv @ block).T
    rv = _streaming_r2(GL, Y, L)
    return IsomapResult(Y, rv, vals, nodes, nodes[L])


def _coords(vals, vecs, k):
    if np.any(vals <= 0):
        warnings.warn(
            f"only {int((vals > 0).sum())} of the {k} requested MDS eigenvalues are positive "
            "(the geodesics are far from Euclidean); the other axes are set to 0.",
            UserWarning,
            stacklevel=3,
        )
    vals = np.where(vals > 0, vals, 0.0)
    return vecs * np.sqrt(vals)[None, :], vals
