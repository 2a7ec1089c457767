"""Minimum spanning trees and the two MST ensembles of Carreira-Perpinan & Zemel (NIPS 2004).

Candidate edges
---------------
The paper builds every tree over all N(N-1)/2 pairs. ``candidates="all"`` does exactly that and is
refused above `ALL_PAIRS_MAX_SAMPLES` points. ``candidates="knn"`` builds the trees over the edges
of the symmetrised kNN graph of the data (re-weighted with each perturbed copy's distances for
PMST), then joins the forest this leaves by exact shortest connecting edges (Boruvka rounds:
every component but the largest takes its shortest edge to another component, found by exact
nearest-neighbour search against the points outside it). ``candidates=<Graph>`` uses that graph's
edges and only those (e.g. an 8-connected pixel grid, the paper's image experiment): when they
run out, as for DMST with t near the grid's edge count per node, the trees stay forests and a
warning says how many edges could be found.

How the candidate mode approximates the exact one: Kruskal over a subset of edges returns the
exact MST whenever the subset contains every MST edge. The joining step is exact (it is Boruvka's
rule on the components), so the only error comes from an MST edge (i, j) inside a component for
which neither endpoint is among the other's k nearest neighbours; such edges are rare because MST
edges are short (every MST edge is a relative-neighbourhood edge). The tests measure the agreement
on 2 000 points in 2, 5 and 10 dimensions (total length within 1e-3, >= 99% shared edges).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import (
    check_int,
    check_option,
    check_points,
    check_random_state,
    check_real,
    check_seed,
)
from ._graph import Graph, unique_edges
from ._connect import join_edges as _join_components
from ._numba import edge_length_kernel, kruskal, root_labels, row_smallest_mean
from ._knn import METRICS, prepare_metric, euclidean_to_metric, nearest_neighbors
from ._scale import centred_rescale, scale_back

__all__ = [
    "mst_graph",
    "pmst_graph",
    "dmst_graph",
    "spanning_trees",
    "ALL_PAIRS_MAX_SAMPLES",
]

#: ``candidates="all"`` enumerates N(N-1)/2 edges; above this many points it is refused.
ALL_PAIRS_MAX_SAMPLES = 5000

#: Neighbours of each point in the PMST noise model: d_i = mean distance to its 5 nearest.
NOISE_NEIGHBORS = 5


class CandidateEdges:
    """Edge list (u < v) the trees are chosen from, on prepared coordinates ``Y``.

    ``Y`` is the data on which euclidean distance orders edges like the metric does (rows scaled
    to unit length for cosine), divided by the power of two ``scale`` (exact, see `_scale`);
    ``to_metric`` converts euclidean lengths on ``Y`` back to the metric on the data.
    """

    def __init__(self, Y, u, v, metric, join, scale=1.0):
        self.Y = Y
        self.u = u
        self.v = v
        self.metric = metric
        self.join = join  # join leftover components by exact nearest-neighbour search
        self.scale = scale

    @property
    def n(self):
        return self.Y.shape[0]

    def to_metric(self, lengths):
        return euclidean_to_metric(scale_back(lengths, self.scale), self.metric)


def _candidate_edges(X, candidates, n_neighbors, metric, random_state):
    n = X.shape[0]
    Y, scale = centred_rescale(np.ascontiguousarray(prepare_metric(X, metric), dtype=np.float64))
    Y = np.ascontiguousarray(Y)
    if isinstance(candidates, Graph):
        if candidates.n_nodes != n:
            raise ValueError(
                f"candidates is a Graph on {candidates.n_nodes} nodes but X has {n} points; "
                "they must match (build the graph on the same points)."
            )
        u, v, _, _ = candidates.edges()
        # an explicit candidate graph is a constraint (e.g. the paper's 8-grid): never add
        # edges outside it; trees that cannot span it stay forests
        return CandidateEdges(Y, u, v, metric, join=False, scale=scale)
    check_option(candidates, "candidates", {"knn", "all"})
    if candidates == "all":
        if n > ALL_PAIRS_MAX_SAMPLES:
            raise ValueError(
                f"candidates='all' enumerates all {n * (n - 1) // 2} pairs of the {n} points; it is "
                f"limited to n <= {ALL_PAIRS_MAX_SAMPLES}. Use candidates='knn'."
            )
        u, v = np.triu_indices(n, k=1)
        return CandidateEdges(Y, u.astype(np.int64), v.astype(np.int64), metric, join=False, scale=scale)
    n_neighbors = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    idx, _ = nearest_neighbors(Y, n_neighbors, metric="euclidean", random_state=random_state)
    u = np.repeat(np.arange(n, dtype=np.int64), n_neighbors)
    u, v = unique_edges(n, u, idx.ravel())
    return CandidateEdges(Y, u, v, metric, join=True, scale=scale)


def _edge_keys(n, a, b):
    return np.minimum(a, b) * n + np.maximum(a, b)


def _spanning_forest(cand, Y, lengths, order, available, forbidden_keys):
    """One minimum spanning tree (or forest) on the available candidate edges, then joined.

    Returns (a, b, euclidean length on Y, selected-candidate mask).
    """
    n = cand.n
    selected, roots = kruskal(n, cand.u, cand.v, order, available, n - 1)
    a, b, d = cand.u[selected], cand.v[selected], lengths[selected]
    if cand.join and selected.sum() < n - 1:
        ja, jb, jd = _join_components(Y, roots, forbidden_keys)
        a, b, d = np.concatenate([a, ja]), np.concatenate([b, jb]), np.concatenate([d, jd])
    return a, b, d, selected


def spanning_trees(
    X,
    n_trees=1,
    *,
    candidates="knn",
    n_neighbors=10,
    metric="euclidean",
    random_state=None,
):
    """Edge-disjoint minimum spanning trees by repeated Kruskal (the DMST construction).

    Tree 1 is the MST; tree k is the MST of the edges not used by trees 1..k-1. A fractional
    `n_trees` t fixes the total edge count at round(t (N - 1)): the last tree is cut to its
    shortest edges, which is where Kruskal's algorithm would have stopped.

    Returns
    -------
    list of (u, v, distance) arrays, one triple per tree, distances in `metric`.
    """
    X = check_points(X)
    n = X.shape[0]
    n_trees = check_real(n_trees, "n_trees", low=1)
    check_option(metric, "metric", set(METRICS))
    check_seed(random_state)
    cand = _candidate_edges(X, candidates, n_neighbors, metric, random_state)
    lengths = edge_length_kernel(cand.Y, cand.u, cand.v)
    order = np.argsort(lengths, kind="stable")
    available = np.ones(cand.u.size, dtype=np.bool_)
    total = int(round(n_trees * (n - 1)))
    trees, taken = [], np.empty(0, np.int64)
    remaining = total
    while remaining > 0:
        a, b, d, selected = _spanning_forest(cand, cand.Y, lengths, order, available, taken)
        if a.size == 0:
            break
        if a.size > remaining:  # fractional t: Kruskal's first `remaining` edges
            keep = np.argsort(d, kind="stable")[:remaining]
            a, b, d = a[keep], b[keep], d[keep]
            sel_idx = np.flatnonzero(selected)
            keys_kept = set(_edge_keys(n, a, b).tolist())
            sel_keys = _edge_keys(n, cand.u[sel_idx], cand.v[sel_idx])
            selected = np.zeros_like(selected)
            selected[sel_idx[np.isin(sel_keys, list(keys_kept))]] = True
        available &= ~selected
        taken = np.union1d(taken, _edge_keys(n, a, b))
        trees.append((a, b, cand.to_metric(d)))
        remaining -= a.size
    if remaining > 0:
        if isinstance(candidates, Graph):
            why = " (the given candidate graph)."
        elif candidates == "all":
            # the complete graph itself ran out: n points have at most n // 2 disjoint spanning trees
            why = (
                f" (all pairs of the {n} points: at most {n // 2} edge-disjoint spanning trees "
                "exist); use a smaller n_trees."
            )
        else:
            why = "; use a larger n_neighbors."
        warnings.warn(
            f"only {total - remaining} of the {total} edges requested (n_trees={n_trees}) could be "
            f"found disjointly among the {cand.u.size} candidate edges" + why,
            stacklevel=2,
        )
    return trees


def _trees_to_graph(n, trees, provenance):
    a = np.concatenate([t[0] for t in trees])
    b = np.concatenate([t[1] for t in trees])
    d = np.concatenate([t[2] for t in trees])
    return Graph._from_edges(n, a, b, d, provenance=provenance)


def mst_graph(X, *, candidates="knn", n_neighbors=10, metric="euclidean", random_state=None):
    """Minimum spanning tree of the points (euclidean or cosine lengths).

    Parameters
    ----------
    X : array-like (n_samples, n_features)
    candidates : {"knn", "all"} or Graph, default "knn"
        Edges the tree is chosen from (see the module notes): ``all`` is the exact definition
        (n <= 5 000), ``knn`` the scalable approximation joined into one tree, a Graph its edges.
    n_neighbors : int, default 10
        k of the kNN candidate graph.
    metric : {"euclidean", "cosine"}
    random_state : int or None
        Only used by approximate neighbour search (n > `EXACT_SEARCH_MAX_SAMPLES`).

    Returns
    -------
    Graph with N - 1 edges (one component) unless a candidate Graph was itself split and could
    not be joined.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> g = gc.mst_graph(X)
    >>> g.n_edges, g.n_components
    (299, 1)
    """
    X = check_points(X)
    check_seed(random_state)
    trees = spanning_trees(
        X, 1, candidates=candidates, n_neighbors=n_neighbors, metric=metric, random_state=random_state
    )
    return _trees_to_graph(
        X.shape[0],
        trees,
        {"builder": "mst_graph", "candidates": _cand_name(candidates), "n_neighbors": n_neighbors, "metric": metric},
    )


def dmst_graph(X, n_trees=3, *, candidates="knn", n_neighbors=None, metric="euclidean", random_state=None):
    """Disjoint-MST ensemble: the union of `n_trees` edge-disjoint minimum spanning trees.

    Tree k is the MST of the edges not in trees 1..k-1 (repeated Kruskal over the sorted edge
    list); every edge has multiplicity 1. t = 2-4 is typical; a fractional t fixes the edge count
    at round(t (N - 1)).

    Parameters
    ----------
    X : array-like (n_samples, n_features)
    n_trees : float >= 1, default 3
    candidates : {"knn", "all"} or Graph
    n_neighbors : int or None
        k of the kNN candidates; None uses max(10, 4 ceil(t)) so that later trees still find
        short edges among the candidates.
    metric : {"euclidean", "cosine"}

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> gc.dmst_graph(X, n_trees=2).n_edges
    598
    """
    X = check_points(X)
    t = check_real(n_trees, "n_trees", low=1)
    check_seed(random_state)
    if n_neighbors is None:
        n_neighbors = min(max(10, 4 * int(np.ceil(t))), X.shape[0] - 1)
    trees = spanning_trees(
        X, t, candidates=candidates, n_neighbors=n_neighbors, metric=metric, random_state=random_state
    )
    g = _trees_to_graph(
        X.shape[0],
        trees,
        {
            "builder": "dmst_graph",
            "n_trees": t,
            "candidates": _cand_name(candidates),
            "n_neighbors": n_neighbors,
            "metric": metric,
            "tree_sizes": [int(tr[0].size) for tr in trees],
        },
    )
    return g


def pmst_graph(
    X,
    n_trees=20,
    r=0.4,
    *,
    candidates="knn",
    n_neighbors=20,
    metric="euclidean",
    refresh_candidates=False,
    random_state=None,
):
    """Perturbed-MST ensemble: edge weight e_ij = fraction of `n_trees` perturbed MSTs using (i, j).

    Each of the T copies moves point i by zero-mean uniform noise of standard deviation
    s_i = r d_i in every coordinate (uniform on [-sqrt(3) s_i, sqrt(3) s_i]), d_i being the mean
    distance from i to its 5 nearest neighbours (its 5 shortest candidate edges when candidates
    is a Graph); an MST is fitted to each copy. Edge lengths in the result are those of the
    unperturbed data; ``multiplicity`` holds e_ij in (0, 1]. At most T (N - 1) edges.

    Parameters
    ----------
    X : array-like (n_samples, n_features)
    n_trees : int >= 1, default 20 (the paper's T)
    r : float in [0, 1], default 0.4 (the paper's r)
    candidates : {"knn", "all"} or Graph, default "knn"
        See the module notes. With "knn" the candidate kNN graph (of the unperturbed data) is
        re-weighted with each copy's distances and each tree is joined exactly on that copy.
    n_neighbors : int, default 20
        k of the kNN candidate graph. The perturbation moves points by about r sqrt(dim) d_i, so
        perturbed trees reach beyond the nearest few neighbours; docs/graphs.md gives the
        measured agreement with ``candidates="all"`` by dimension and k.
    metric : {"euclidean", "cosine"}
        For cosine the rows are first scaled to unit length, and the noise acts on them.
    refresh_candidates : bool, default False
        With ``candidates="knn"``: recompute the kNN candidates on every perturbed copy (T
        neighbour searches instead of one). Then each tree is the copy's MST to the accuracy of
        `mst_graph` (exact in the measured cases), where the default re-weights the unperturbed
        kNN edges and so keeps every tree inside the data's kNN graph. The two agree in 2-D; in
        higher dimension the noise, about r sqrt(dim) d_i per point, takes exact perturbed trees
        well outside it (docs/graphs.md).
    random_state : int, Generator or None

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> g = gc.pmst_graph(X, n_trees=10, random_state=0)
    >>> g.n_components, bool(g.multiplicity.data.max() <= 1.0)
    (1, True)
    """
    X = check_points(X)
    n = X.shape[0]
    T = check_int(n_trees, "n_trees", low=1)
    r = check_real(r, "r", low=0.0, high=1.0)
    check_option(metric, "metric", set(METRICS))
    rng = check_random_state(random_state)
    cand = _candidate_edges(X, candidates, n_neighbors, metric, random_state)
    Y = cand.Y
    scale = np.sqrt(3.0) * r * _noise_distances(cand, candidates)
    available = np.ones(cand.u.size, dtype=np.bool_)
    no_forbidden = np.empty(0, np.int64)
    keys = []
    refresh = bool(refresh_candidates) and isinstance(candidates, str) and candidates == "knn"
    if cand.join and not refresh:
        cand = _bridged(cand, n_neighbors)
    for _ in range(T):
        Yt = Y + rng.uniform(-1.0, 1.0, size=Y.shape) * scale[:, None]
        cand_t = _candidate_edges(Yt, "knn", n_neighbors, "euclidean", random_state) if refresh else cand
        lengths = edge_length_kernel(Yt, cand_t.u, cand_t.v)
        order = np.argsort(lengths, kind="stable")
        avail = available if cand_t is cand else np.ones(cand_t.u.size, dtype=np.bool_)
        a, b, _, _ = _spanning_forest(cand_t, Yt, lengths, order, avail, no_forbidden)
        keys.append(_edge_keys(n, a, b))
    uniq, counts = np.unique(np.concatenate(keys), return_counts=True)
    a, b = uniq // n, uniq % n
    dist = cand.to_metric(edge_length_kernel(Y, a, b))
    return Graph._from_edges(
        n,
        a,
        b,
        dist,
        counts / T,
        provenance={
            "builder": "pmst_graph",
            "n_trees": T,
            "r": r,
            "candidates": _cand_name(candidates),
            "n_neighbors": n_neighbors,
            "metric": metric,
            "refresh_candidates": refresh,
        },
    )


def _bridged(cand, per_component):
    """Candidates made connected once: each component adds its shortest outgoing edges.

    The PMST copies then span without a search of their own: each copy's shortest bridge is
    sought among the `per_component` shortest bridges of the unperturbed data, as its other
    edges are sought among the unperturbed kNN edges.
    """
    roots = root_labels(cand.n, cand.u, cand.v)
    if np.unique(roots).size == 1:
        return cand
    a, b, _ = _join_components(cand.Y, roots, np.empty(0, np.int64), per_component)
    u, v = unique_edges(cand.n, np.concatenate([cand.u, a]), np.concatenate([cand.v, b]))
    return CandidateEdges(cand.Y, u, v, cand.metric, join=True, scale=cand.scale)


def _noise_distances(cand, candidates):
    """d_i: mean euclidean distance (prepared coordinates) to the 5 nearest neighbours."""
    n = cand.n
    if isinstance(candidates, Graph) or candidates == "knn":
        # the 5 shortest candidate edges of i are its 5 nearest neighbours when the candidates are
        # a kNN graph with k >= 5; for a pixel grid they are its 5 nearest grid neighbours
        import scipy.sparse as sp

        lengths = edge_length_kernel(cand.Y, cand.u, cand.v)
        A = sp.csr_matrix(
            (np.concatenate([lengths, lengths]), (np.concatenate([cand.u, cand.v]), np.concatenate([cand.v, cand.u]))),
            shape=(n, n),
        )
        if candidates == "knn" and np.diff(A.indptr).min() < min(NOISE_NEIGHBORS, n - 1):
            _, dist = nearest_neighbors(cand.Y, min(NOISE_NEIGHBORS, n - 1))
            return dist.mean(axis=1)
        return row_smallest_mean(A.indptr, A.data, NOISE_NEIGHBORS)
    _, dist = nearest_neighbors(cand.Y, min(NOISE_NEIGHBORS, n - 1), method="exact")
    return dist.mean(axis=1)


def _cand_name(candidates):
    return candidates if isinstance(candidates, str) else "graph"
