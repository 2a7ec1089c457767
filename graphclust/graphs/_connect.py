"""Joining a graph that fell apart: exact shortest edges between its components."""

from __future__ import annotations

import numpy as np

from .._validation import check_points
from ._graph import Graph
from ._join import index_join_edges
from ._numba import kruskal, root_labels
from ._knn import METRICS, prepare_metric, euclidean_to_metric
from ._scale import centred_rescale, scale_back

__all__ = ["JOIN_EXACT_MAX_SAMPLES", "component_bridges", "join_components", "join_edges"]


#: ``method="auto"`` keeps the all-points Boruvka scan up to this many points.
JOIN_EXACT_MAX_SAMPLES = 70_000


def join_components(graph, X, *, metric=None, method="auto"):
    """Join a disconnected graph into one component by the shortest edges between components.

    The added edges are those Boruvka's algorithm adds to connect the components: each round,
    every component but one takes its shortest edge to another component. With an exact search
    these are exactly the edges a minimum spanning tree over all pairs would use between the
    components, and their total length is that tree's. They get length = the metric distance
    and multiplicity 1. A connected graph is returned unchanged.

    Whatever the method, the result is connected and every added edge is a real pair of points
    with its true length (measured in float64 on the points). What differs is the search:

    - ``"exact"``: each component's shortest edge out by a blocked scan of all n points.
      Cost per round: (points outside the largest component) x n x dim: quadratic.
    - ``"index"``: the shortest edge out read from the sorted neighbour lists of the points
      outside the largest component only (``graphclust.graphs._join``). The lists come from a
      brute-force search while (those points) x n <= ``BRUTE_QUERY_MAX_WORK`` (5e9): then the
      result is exact, the same total added length as ``"exact"`` (the same edges up to ties).
      Above that they come from a best-first search of the graph itself, entered at the
      point's nearest pivots (a seeded sample) in other components, so that it only finds
      points outside the point's component; queried with 16 neighbours, and more only where a
      whole component found no edge out: each edge is then the shortest the search found,
      which can be longer than the true shortest bridge; a component whose lists find no edge
      out at 1024 neighbours is settled by an exact scan of its own points, so connectivity
      never depends on the search. Cost: (points outside the largest component) x (8 sqrt(n)
      pivots + the search's few hundred distances) x dim; no index over all points is built.
    - ``"auto"`` (default): ``"exact"`` up to ``JOIN_EXACT_MAX_SAMPLES`` (70 000) points, where
      its results stay identical to earlier releases; ``"index"`` above.

    Parameters
    ----------
    graph : Graph
    X : array-like (n_nodes, n_features)
        The points the graph was built on.
    metric : {"euclidean", "cosine"} or None
        None takes ``graph.provenance["metric"]`` (euclidean if absent).
    method : {"auto", "exact", "index"}
        How the shortest edges between components are searched (above).

    Returns
    -------
    Graph with one component; ``provenance`` gains ``joined_edges`` and ``join_search``.
        ``joined_edges`` counts the added edges; ``join_search`` is "exact", or "approximate"
        when the NN-descent index found them.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 10] + np.arange(10)[:, None] * 0.01
    >>> g = gc.knn_graph(X, 2)
    >>> g.n_components, gc.join_components(g, X).n_components
    (2, 1)
    """
    X, metric = _check_join(graph, X, metric, method)
    if graph.n_components <= 1:
        return graph
    a, b, length, search = _bridges(graph, X, metric, method)
    u, v, dist, mult = graph.edges()
    return Graph._from_edges(
        graph.n_nodes,
        np.concatenate([u, a]),
        np.concatenate([v, b]),
        np.concatenate([dist, length]),
        np.concatenate([mult, np.ones(a.size)]),
        provenance={**graph.provenance, "joined_edges": int(a.size), "join_search": search},
    )


def component_bridges(graph, X, *, metric=None, method="auto"):
    """The edges `join_components` would add: (a, b, length) joining `graph`'s components.

    Same search and guarantees as `join_components` (``method``); ``length`` is in `metric`.
    Empty arrays for a connected graph.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.r_[np.zeros((5, 2)), np.ones((5, 2)) * 10] + np.arange(10)[:, None] * 0.01
    >>> a, b, length = gc.graphs.component_bridges(gc.knn_graph(X, 2), X)
    >>> sorted((int(a[0]), int(b[0]))), round(float(length[0]), 2)
    ([4, 5], 14.16)
    """
    X, metric = _check_join(graph, X, metric, method)
    if graph.n_components <= 1:
        e = np.empty(0, np.int64)
        return e, e, np.empty(0)
    return _bridges(graph, X, metric, method)[:3]


def _check_join(graph, X, metric, method):
    """(X as float points, the metric resolved from the graph's provenance), or an error."""
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a graphclust Graph; got {type(graph).__name__}.")
    X = check_points(X, min_samples=1)
    if X.shape[0] != graph.n_nodes:
        raise ValueError(
            f"X has {X.shape[0]} points but the graph has {graph.n_nodes} nodes; pass the points "
            "the graph was built on."
        )
    if metric is None:
        metric = graph.provenance.get("metric", "euclidean")
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(map(repr, METRICS))}; got {metric!r}.")
    if method not in ("auto", "exact", "index"):
        raise ValueError(f"method must be one of 'auto', 'exact', 'index'; got {method!r}.")
    return X, metric


def _bridges(graph, X, metric, method):
    """(a, b, length in metric, search) of the shortest edges joining the components."""
    if method == "auto":
        method = "exact" if graph.n_nodes <= JOIN_EXACT_MAX_SAMPLES else "index"
    # lengths measured on Y / s (s a power of two, exact) so that no scale under- or overflows,
    # less the points' far offset, which the expansion |a|^2 + |b|^2 - 2 a.b would round with
    Y, s = centred_rescale(np.ascontiguousarray(prepare_metric(X, metric), dtype=np.float64))
    Y = np.ascontiguousarray(Y)
    if method == "exact":
        a, b, d = join_edges(Y, graph.component_labels, np.empty(0, np.int64))
        search = "exact"
    else:
        a, b, d, search = index_join_edges(Y, graph.component_labels, graph.distances)
    return a, b, euclidean_to_metric(scale_back(d, s), metric), search


def _shortest_edges_out(Y, sqnorm, inside, in_comp, taken, q=1):
    """The `q` shortest edges (a, b, length) from points of `inside` to points outside them.

    Exact search by blocks of rows: squared distances by the BLAS expansion
    |a|^2 + |b|^2 - 2 a.b, points of the component and edges in `taken` (CSR, may be None)
    masked out, then the few smallest candidates of each block re-measured directly so that
    rounding in the expansion cannot pick the wrong edge. Memory: about 4 million floats a block.
    Returns empty arrays if every edge out of the component is taken.
    """
    n = Y.shape[0]
    rows_per_block = max(1, 2**22 // n)
    A, B, L = [], [], []
    for start in range(0, inside.size, rows_per_block):
        rows = inside[start : start + rows_per_block]
        D2 = sqnorm[rows, None] + sqnorm[None, :] - 2.0 * (Y[rows] @ Y.T)
        D2[:, in_comp] = np.inf
        if taken is not None:
            sub = taken[rows]
            D2[sub.nonzero()] = np.inf
        flat = D2.ravel()
        kk = min(q + 8, flat.size)
        cand = np.argpartition(flat, kk - 1)[:kk]
        cand = cand[np.isfinite(flat[cand])]
        a = rows[cand // n]
        b = cand % n
        A.append(a)
        B.append(b)
        L.append(np.sqrt(((Y[a] - Y[b]) ** 2).sum(axis=1)))
    a, b, length = np.concatenate(A), np.concatenate(B), np.concatenate(L)
    best = np.argsort(length, kind="stable")[:q]
    return a[best], b[best], length[best]


def join_edges(Y, roots, forbidden_keys, bridges_per_component=1):
    """Edges (a, b, length) that connect the forest given by `roots` into one tree.

    Boruvka rounds on the components: each component except the largest takes its shortest edge
    to any point outside it (exact search), skipping edges in `forbidden_keys` (int64 keys
    u * n + v, u < v, of edges already used by earlier disjoint trees). Adding these edges is
    safe by the cut property; the largest component is reached from the others, so the number
    of components at least halves each round. Cost per round: (points outside the largest
    component) x n x dim.

    With ``bridges_per_component = q > 1`` each component contributes its q shortest outgoing
    edges instead (all returned, not only a tree): extra candidates for the PMST copies, whose
    own shortest bridges move with the noise.
    """
    import scipy.sparse as sp

    n = Y.shape[0]
    _, labels = np.unique(roots, return_inverse=True)
    if labels.max() == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    sqnorm = np.einsum("ij,ij->i", Y, Y)
    taken = None
    if forbidden_keys.size:
        fu, fv = forbidden_keys // n, forbidden_keys % n
        taken = sp.csr_matrix(
            (np.ones(2 * fu.size, dtype=np.int8), (np.concatenate([fu, fv]), np.concatenate([fv, fu]))),
            shape=(n, n),
        )
    added_a, added_b, added_d = [], [], []
    while True:
        n_comp = labels.max() + 1
        if n_comp <= 1:
            break
        order = np.argsort(labels, kind="stable")
        bounds = np.searchsorted(labels[order], np.arange(n_comp + 1))
        largest = int(np.argmax(np.diff(bounds)))
        found = [
            _shortest_edges_out(
                Y, sqnorm, order[bounds[c] : bounds[c + 1]], labels == c, taken, bridges_per_component
            )
            for c in range(n_comp)
            if c != largest
        ]  # a component whose every outgoing edge is taken contributes nothing and stays apart
        ra, rb, rd = (np.concatenate(x) for x in zip(*found))
        if ra.size == 0:
            break
        # add shortest first; ties could close a cycle, so keep only edges joining components
        o = np.argsort(rd, kind="stable")
        ra, rb, rd = ra[o], rb[o], rd[o]
        sel, _ = kruskal(
            int(n_comp), labels[ra], labels[rb], np.arange(ra.size), np.ones(ra.size, np.bool_), ra.size
        )
        keep = sel if bridges_per_component == 1 else np.ones(ra.size, dtype=bool)
        added_a.append(ra[keep])
        added_b.append(rb[keep])
        added_d.append(rd[keep])
        new_roots = root_labels(int(n_comp), labels[ra[sel]], labels[rb[sel]])
        _, labels = np.unique(new_roots[labels], return_inverse=True)
    if not added_a:
        return np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0)
    return np.concatenate(added_a), np.concatenate(added_b), np.concatenate(added_d)
