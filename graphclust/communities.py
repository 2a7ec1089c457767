"""Graph communities: a network in, a partition of its nodes out (networkx-style API).

`communities` finds the communities of an undirected network and their number. The default,
``method="auto"``, runs `graphclust.cluster.CommunityDetection`: Leiden at the
maximum-likelihood resolution (Newman 2016) and the Bethe Hessian's spectral partition (Saade et
al. 2014) as candidates, the one of smallest description length kept (checked by edge
cross-validation when it is the coarser of the two), the Bethe Hessian's count reported as a
second opinion. The graph clusterers of the papers (consistency clustering, AHK)
stay available by name. It takes a networkx graph, a `Graph`, a sparse adjacency, a GML file or
an edge-list file, and returns a list of node sets, the shape networkx's own community functions
return (or a `CommunityResult` with the representatives and belonging of the nodes).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ._deprecation import moved_names
from ._validation import check_flag, check_int, check_option
from .graphs import Graph, affinity, largest_magnitude, rescale
from .io import read_network as _read_network

__all__ = ["communities", "COMMUNITY_METHODS", "CommunityResult"]

#: Methods `communities` can run, by name (the first is the default).
COMMUNITY_METHODS = ("auto", "bethe", "leiden-ml", "leiden", "bethe+leiden-ml", "consistency", "ahk")

_DETECTION = ("auto", "bethe", "leiden-ml", "leiden", "bethe+leiden-ml")

# read_network moved to graphclust.io; `from graphclust.communities import read_network` warns
__getattr__ = moved_names(__name__, {"read_network": "graphclust.io.read_network"})


@dataclass
class CommunityResult:
    """What ``communities(..., return_info=True)`` returns.

    Attributes
    ----------
    communities : list of set
        The communities, largest first (what ``communities(G)`` returns).
    representatives : list
        The most representative node of each community, in the order of `communities`: its
        member of largest `belonging` (ties: the largest margin over the best alternative).
    belonging : dict
        node -> probability that the node belongs to its own community rather than to one it
        links to, under the degree-corrected planted-partition model fitted to the partition
        (`graphclust.cluster.model_belonging`); 1 for isolated nodes.
    method : str
        The method that produced the partition (for "auto": the candidate chosen).
    n_communities_bethe : int or None
        Number of negative eigenvalues of the Bethe Hessian (the paper-grounded second opinion
        on the number of communities; None when not computed: "leiden", "leiden-ml",
        "consistency", "ahk").
    resolution : float or None
        Modularity resolution of the final Leiden run.
    description_lengths : dict
        Description length (nats) of each candidate ("auto") or of the result.
    timings : dict
        Seconds by stage.
    """

    communities: list
    representatives: list
    belonging: dict
    method: str
    n_communities_bethe: int | None = None
    resolution: float | None = None
    description_lengths: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)


def _directed_error(what):
    return ValueError(
        f"{what} is directed; communities need an undirected graph: use G.to_undirected() "
        "(networkx) or A.maximum(A.T) (a matrix), or pass symmetrize=True to use (A + A^T) / 2."
    )


def _as_adjacency(G, weight, symmetrize):
    """(W csr, nodes, networkx graph or None) of any accepted input."""
    import networkx as nx

    from .kernels import undirected_adjacency

    if isinstance(G, (str, os.PathLike)):
        G = _read_network(G)
    if isinstance(G, nx.Graph):
        if G.is_multigraph():
            raise ValueError("G is a multigraph; collapse parallel edges first, e.g. nx.Graph(G).")
        nodes = list(G.nodes)
        if not nodes:
            raise ValueError("G has no nodes; nothing to cluster.")
        if G.is_directed():
            if not symmetrize:
                raise _directed_error("G")
            A = nx.to_scipy_sparse_array(G, nodelist=nodes, weight=weight, format="csr")
            return undirected_adjacency(A, symmetrize=True, name="G"), nodes, G
        if weight not in (None, "weight") and G.number_of_edges() and not any(
                weight in data for _, _, data in G.edges(data=True)):
            warnings.warn(f"no edge of G has the attribute weight={weight!r} (a misspelt "
                          f"name?): every edge weighs 1.",
                          UserWarning, stacklevel=3)
        graph = Graph.from_networkx(G, weight=weight)
        if graph.n_edges == 0:
            raise ValueError(
                f"G has {len(nodes)} node(s) and no edge (of positive {weight!r}); communities "
                "need links between nodes."
            )
        return affinity(graph, kind="binary" if weight is None else "multiplicity"), nodes, G
    if isinstance(G, Graph):
        W = affinity(G, kind="binary" if weight is None else "multiplicity")
    elif sp.issparse(G):
        if G.shape[0] != G.shape[1]:
            raise ValueError(f"a sparse adjacency must be square; got shape {G.shape}.")
        W = undirected_adjacency(G, symmetrize=symmetrize)
        if weight is None:
            W.data[:] = 1.0
    else:
        raise TypeError(
            "G must be a graphclust Graph, a scipy sparse adjacency, a networkx Graph or the path "
            f"of a GML / edge-list file; got {type(G).__name__} (a dense array is ambiguous: "
            "wrap an adjacency in scipy.sparse.csr_matrix, or cluster points with "
            "graphclust.cluster.CommunityDetection)."
        )
    W = sp.csr_matrix(W)
    if W.shape[0] == 0:
        raise ValueError("G has no nodes; nothing to cluster.")
    if W.nnz == 0:
        raise ValueError(f"G has {W.shape[0]} node(s) and no edge; communities need links "
                         "between nodes.")
    return W, list(range(W.shape[0])), None


def communities(
    G,
    method="auto",
    n_clusters="auto",
    *,
    weight="weight",
    symmetrize=False,
    max_clusters=10,
    attribute=None,
    return_info=False,
    random_state=None,
    **params,
):
    """Communities of an undirected network, as a list of node sets.

    The affinity is the network's adjacency: w_ij = the edge attribute `weight` (1 when absent),
    or w_ij = 1 on every edge with ``weight=None``. Methods:

    - ``"auto"`` (default): `graphclust.cluster.CommunityDetection` -- Leiden at the
      maximum-likelihood resolution and the Bethe Hessian partition (with Leiden-ML started
      from it) as candidates, the one of smallest description length kept, unless it is the
      coarser of the two and held-out edges (edge cross-validation) prefer the finer. On a proximity
      graph (a `Graph` built from points by `knn_graph`, `epsilon_graph`, ...; or
      ``graph_kind="proximity"``): Leiden at resolution 1, as Louvain, since a block model sees
      hundreds of communities on a discretised manifold. With an integer `n_clusters`: the
      Bethe Hessian embedding with that many columns and k-means.
    - ``"bethe"``: spectral clustering on the Bethe Hessian (its count of negative eigenvalues,
      or `n_clusters`); ``"leiden-ml"``: Leiden at Newman's maximum-likelihood resolution;
      ``"leiden"``: Leiden on modularity at resolution 1 (what Louvain optimises);
      ``"bethe+leiden-ml"``: Leiden-ML started from the Bethe partition.
    - ``"consistency"``: `ConsistencyClustering` (Breitenbach & Grudic), which with
      ``n_clusters="auto"`` chooses the number in 2..`max_clusters` by its criterion Omega;
      ``"ahk"``: `AHKClustering` (Huang et al.) with a fixed integer `n_clusters`.

    Parameters
    ----------
    G : networkx.Graph, Graph, scipy sparse matrix, str or path-like
        Undirected network (weighted or not): a networkx graph, a `graphclust.Graph`, a sparse
        adjacency (nodes 0..n-1), or the path of a GML file or an edge list (see
        `graphclust.io.read_network`).
    method : {"auto", "bethe", "leiden-ml", "leiden", "bethe+leiden-ml", "consistency", "ahk"}
    n_clusters : int or "auto", default "auto"
        Number of communities; an integer only with "auto", "bethe", "consistency" and "ahk"
        ("ahk" needs one); at most the number of nodes.
    weight : str or None, default "weight"
        Edge attribute holding the link strength (>= 0; zero-weight edges are dropped); None
        ignores weights (binary adjacency).
    symmetrize : bool, default False
        Directed input (a networkx DiGraph, a directed GML file, a non-symmetric matrix) is
        refused unless True, which clusters (A + A^T) / 2.
    max_clusters : int, default 10
        Only ``method="consistency"``: largest number searched with ``n_clusters="auto"``.
    attribute : str or None, default None
        When given (and `G` is a networkx graph), each node's community index is written to
        ``G.nodes[node][attribute]`` and its belonging to ``G.nodes[node][attribute +
        "_belonging"]``.
    return_info : bool, default False
        Return a `CommunityResult` (communities, representatives, belonging, the Bethe count,
        the method chosen) instead of the list.
    random_state : int, Generator or None
        Seeds the clusterer (node orders of Leiden, eigensolver start vectors, k-means).
    **params
        Further parameters of the clusterer (e.g. ``max_spectral_communities=32`` or
        ``graph_kind="proximity"`` for the Leiden / Bethe methods, ``alpha=0.99`` for
        consistency, ``normalization="sym"`` for AHK).

    Returns
    -------
    list of set, or CommunityResult with ``return_info=True``
        The communities, largest first (ties broken by the first node's position in
        ``G.nodes``); every node of `G` is in exactly one of them.

    Warns
    -----
    UserWarning
        Isolated nodes (no edge, or only zero-weight edges) cannot be compared to anything: each
        becomes a community of its own, with a warning naming how many there are.

    Raises
    ------
    ValueError
        G has no nodes or no edges; G is directed (without ``symmetrize=True``); unknown
        `method`; an integer `n_clusters` with a Leiden method, or above the number of nodes;
        ``n_clusters="auto"`` with AHK; more connected components than `max_clusters` with
        consistency and ``n_clusters="auto"``.

    Notes
    -----
    Measured (``docs/applications.md``, ``scripts/bench_communities.py``): "auto" has an NMI
    at least that of networkx's Louvain and of leidenalg on LFR graphs (n = 1 000 to 100 000,
    mu up to 0.5; far above them at n >= 10 000, where modularity's resolution limit merges
    communities), on football and karate, and follows the detectability threshold on the sparse
    stochastic block model, where modularity methods shatter the graph. It loses on LFR
    n = 1 000 at mu = 0.6 (networkx's generator realises a mixing of 0.80 there, where the
    non-backtracking spectrum shows 3 informative eigenvalues) and to leidenalg on polbooks
    (within its spread); the document says why. Cost: Leiden-ML is a few Leiden runs; the
    Bethe count is exact (Lanczos in growing blocks) up to 2 000 nodes and a stochastic
    estimate above (Lanczos quadrature, within its probe noise sqrt(2 count / probes): 103 for
    100 groups at 10^6 edges, in 6 s), the Bethe embedding is only computed when the count is
    at most 64
    (`max_spectral_communities`).

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust import communities
    >>> G = nx.barbell_graph(6, 0)
    >>> parts = communities(G, random_state=0)
    >>> [sorted(p) for p in parts]
    [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    >>> info = communities(G, random_state=0, return_info=True)
    >>> info.n_communities_bethe, len(info.representatives)
    (2, 2)
    """
    check_option(method, "method", set(COMMUNITY_METHODS))
    check_flag(symmetrize, "symmetrize")
    check_flag(return_info, "return_info")
    if weight is not None and not isinstance(weight, str):
        raise TypeError(f"weight must be the name of an edge attribute (str) or None; got "
                        f"{type(weight).__name__} {weight!r}.")
    if isinstance(n_clusters, str):
        if n_clusters != "auto":
            raise ValueError(f"n_clusters must be 'auto' or an integer >= 1; got {n_clusters!r}.")
        if method == "ahk":
            raise ValueError(
                "method='ahk' needs an integer n_clusters (AHK does not choose it); use "
                "method='auto' or 'consistency' for n_clusters='auto'."
            )
    else:
        check_int(n_clusters, "n_clusters", low=1)
        if method in ("leiden", "leiden-ml", "bethe+leiden-ml"):
            raise ValueError(
                f"method={method!r} chooses the number of communities itself; use method='auto' "
                "or 'bethe' for a given n_clusters."
            )
    check_int(max_clusters, "max_clusters", low=2)
    W, nodes, nxG = _as_adjacency(G, weight, symmetrize)
    if not 2.0**-64 <= largest_magnitude(W) <= 2.0**64:  # degrees' squares overflow near
        W = rescale(W)[0]  # 1e154; a power-of-two scale (exact) changes no partition
    if n_clusters != "auto" and n_clusters > len(nodes):
        raise ValueError(f"n_clusters must satisfy 1 <= n_clusters <= the number of nodes = "
                         f"{len(nodes)}; got {n_clusters}.")
    deg = np.asarray(W.sum(axis=1)).ravel()
    isolated = np.flatnonzero(deg == 0)
    active = np.flatnonzero(deg > 0)
    if isolated.size:
        warnings.warn(
            f"{isolated.size} isolated node(s) (no edge of positive weight), e.g. "
            f"{nodes[int(isolated[0])]!r}: each is returned as a community of its own.",
            UserWarning,
            stacklevel=2,
        )
    Wa = W[active][:, active].tocsr()
    info = {"method": method}
    if method in _DETECTION and "graph_kind" not in params:
        from .cluster import CommunityDetection

        params = {**params, "graph_kind": CommunityDetection.input_graph_kind(G)}
    if active.size < 3:
        groups = [active]
        if n_clusters != "auto" and n_clusters > len(groups) + isolated.size:
            warnings.warn(f"G has {active.size} linked node(s) (and {isolated.size} isolated): "
                          f"too few to split, so {len(groups) + isolated.size} "
                          f"communit{'y is' if len(groups) + isolated.size == 1 else 'ies are'}"
                          f" returned where n_clusters={n_clusters} was asked.", UserWarning,
                          stacklevel=2)
    elif method in _DETECTION:
        groups = _detect(Wa, active, method, n_clusters, random_state, params, info)
    else:  # in an order of the nodes' own, as `CommunityDetection` works (its docstring)
        from .cluster import canonical_node_order

        order = canonical_node_order(Wa)
        groups = _paper_clusterer(Wa[order][:, order].tocsr(), active[order], method,
                                  n_clusters, max_clusters, random_state, params)
    groups.extend(np.array([i]) for i in isolated)
    groups.sort(key=lambda g: (-g.size, int(g.min())))
    result = [{nodes[int(i)] for i in g} for g in groups]
    belonging, reps = _belonging(W, groups)
    if attribute is not None:
        if nxG is None or isinstance(G, (str, os.PathLike)):
            raise ValueError("attribute needs a networkx graph G (a file path or a matrix has no "
                             "graph to annotate).")
        for idx, g in enumerate(groups):
            for i in g:
                nxG.nodes[nodes[int(i)]][attribute] = idx
                nxG.nodes[nodes[int(i)]][attribute + "_belonging"] = float(belonging[i])
    if not return_info:
        return result
    return CommunityResult(
        communities=result,
        representatives=[nodes[int(r)] for r in reps],
        belonging={nodes[i]: float(belonging[i]) for i in range(len(nodes))},
        method=info["method"],
        n_communities_bethe=info.get("n_bethe"),
        resolution=info.get("resolution"),
        description_lengths=info.get("description_lengths", {}),
        timings=info.get("timings", {}),
    )


def _belonging(W, groups):
    """Belonging of every node (isolated: 1) and the representative of each group."""
    from .cluster import community_representatives, model_belonging

    n = W.shape[0]
    labels = np.empty(n, dtype=np.int64)
    for idx, g in enumerate(groups):
        labels[g] = idx
    prob, margin = model_belonging(W, labels)
    deg = np.asarray(W.sum(axis=1)).ravel()
    prob[deg == 0] = 1.0
    reps = community_representatives(np.round(prob, 12), labels, margin + 1e-9 * deg)
    return prob, reps


def _detect(Wa, active, method, n_clusters, random_state, params, info):
    from .cluster import CommunityDetection

    model = CommunityDetection(
        method, n_clusters, affinity="precomputed", random_state=random_state, **params
    ).fit(Wa)
    info.update(method=model.chosen_method_, n_bethe=model.n_communities_bethe_,
                resolution=model.resolution_, description_lengths=model.description_lengths_,
                timings=model.timings_)
    labels = model.labels_
    return [active[labels == lab] for lab in range(model.n_communities_)]


def _paper_clusterer(Wa, active, method, n_clusters, max_clusters, random_state, params):
    """Consistency clustering or AHK on the adjacency of the non-isolated nodes."""
    from .cluster import AHKClustering, ConsistencyClustering

    n_active = active.size
    groups = []
    n_comp, comp = sp.csgraph.connected_components(Wa, directed=False)
    if method == "consistency":
        if n_clusters == "auto":
            if n_comp > max_clusters:
                raise ValueError(
                    f"G has {n_comp} connected components (isolated nodes aside), more than "
                    f"max_clusters = {max_clusters}: raise max_clusters to at least {n_comp} "
                    "or cluster the components separately."
                )
            mc = min(max_clusters, n_active)
            model = ConsistencyClustering(
                "auto", max_clusters=mc, affinity="precomputed",
                random_state=random_state, **params
            )
        else:
            model = ConsistencyClustering(
                min(n_clusters, n_active), affinity="precomputed",
                random_state=random_state, **params
            )
    else:
        k = min(n_clusters, n_active)
        if k > 50 and "n_eigenpairs" not in params:
            # AHK's own "auto" caps m at 100 and then refuses k > m: keep m >= 2k
            params = {**params, "n_eigenpairs": int(min(n_active - n_comp, max(100, 2 * k)))}
        model = AHKClustering(k, affinity="precomputed", random_state=random_state, **params)
    with warnings.catch_warnings():
        # unseeded components are handled (and warned about) below
        warnings.filterwarnings("ignore", message=".*without a seed.*")
        labels = np.asarray(model.fit(Wa).labels_)
    for lab in np.unique(labels[labels >= 0]):
        groups.append(active[labels == lab])
    unlabelled = labels < 0
    if unlabelled.any():
        lost = np.unique(comp[unlabelled])
        warnings.warn(
            f"{lost.size} connected component(s) received no seed with n_clusters="
            f"{n_clusters}; each is returned as one community.",
            UserWarning,
            stacklevel=3,
        )
        for c in lost:
            groups.append(active[unlabelled & (comp == c)])
    return groups
