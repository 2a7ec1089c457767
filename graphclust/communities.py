"""Graph communities: a network in, a partition of its nodes out (networkx-style API).

`communities` clusters the nodes of an undirected network with the graph clusterers of
``graphclust.cluster`` run on the network's own adjacency (binary, or its edge weights): consistency
clustering (which chooses the number of communities itself) or AHK spectral clustering (a fixed
number). It takes a networkx graph, a GML file or an edge-list file, and returns a list of node sets,
the shape networkx's own community functions return.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import scipy.sparse as sp

from ._deprecation import moved_names
from ._validation import check_int, check_option
from .graphs import Graph, affinity
from .io import read_network as _read_network

__all__ = ["communities", "COMMUNITY_METHODS"]

#: Clusterers `communities` can run, by name.
COMMUNITY_METHODS = ("consistency", "ahk")

# read_network moved to graphclust.io; `from graphclust.communities import read_network` warns
__getattr__ = moved_names(__name__, {"read_network": "graphclust.io.read_network"})


def _as_networkx(G):
    import networkx as nx

    if isinstance(G, (str, os.PathLike)):
        return _read_network(G)
    if not isinstance(G, nx.Graph):
        raise TypeError(
            "G must be a networkx Graph or the path of a GML / edge-list file; got "
            f"{type(G).__name__}."
        )
    if G.is_directed():
        raise ValueError("G is directed; communities needs an undirected graph: use G.to_undirected().")
    if G.is_multigraph():
        raise ValueError("G is a multigraph; collapse parallel edges first, e.g. nx.Graph(G).")
    return G


def communities(
    G,
    method="consistency",
    n_clusters="auto",
    *,
    weight="weight",
    max_clusters=10,
    attribute=None,
    random_state=None,
    **params,
):
    """Communities of an undirected network, as a list of node sets.

    The affinity is the network's adjacency: w_ij = the edge attribute `weight` (1 when absent),
    or w_ij = 1 on every edge with ``weight=None``. It is clustered as a precomputed affinity by

    - ``method="consistency"``: `ConsistencyClustering` (Breitenbach & Grudic), which with
      ``n_clusters="auto"`` chooses the number of communities in 2..`max_clusters` by its criterion
      Omega (and alpha from its grid);
    - ``method="ahk"``: `AHKClustering` (Huang et al.) with a fixed integer `n_clusters`.

    Parameters
    ----------
    G : networkx.Graph, str or path-like
        Undirected network (weighted or not), or the path of a GML file or an edge list (see
        `graphclust.io.read_network`).
    method : {"consistency", "ahk"}, default "consistency"
    n_clusters : int or "auto", default "auto"
        Number of communities; "auto" only with ``method="consistency"``.
    weight : str or None, default "weight"
        Edge attribute holding the link strength (>= 0; zero-weight edges are dropped); None
        ignores weights (binary adjacency).
    max_clusters : int, default 10
        Largest number of communities searched with ``n_clusters="auto"``.
    attribute : str or None, default None
        When given (and `G` is a networkx graph), each node's community index is written to
        ``G.nodes[node][attribute]``.
    random_state : int, Generator or None
        Seeds the clusterer (eigensolver start vectors, probes, k-means).
    **params
        Further parameters of the clusterer (e.g. ``alpha=0.99`` for consistency,
        ``normalization="sym"`` for AHK).

    Returns
    -------
    list of set
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
        G has no nodes or no edges; unknown `method`; ``n_clusters="auto"`` with AHK; more
        connected components than `max_clusters` with ``n_clusters="auto"`` (the message names
        the count: raise `max_clusters` or split the components first).

    Notes
    -----
    A network in several connected components is clustered as is: consistency clustering never
    lets a component go without a seed in its automatic search. With a fixed `n_clusters` smaller
    than the number of components, points of components that get no seed (label -1 in the
    clusterer) are returned as one community per such component, with a warning.

    Measured behaviour (``docs/applications.md``): AHK given the true k is the stronger method on
    the karate, football and polbooks networks and on LFR graphs; consistency clustering's
    automatic choice tends to the top of the searched range on networks. The cost of both grows
    with the number of communities k (AHK computes m >= 2k eigenpairs for large k, consistency
    one seed solve per community and block solves of k columns); measured times are in the same
    document.

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust import communities
    >>> G = nx.barbell_graph(6, 0)
    >>> parts = communities(G, random_state=0)
    >>> [sorted(p) for p in parts]
    [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]
    """
    from .cluster import AHKClustering, ConsistencyClustering

    check_option(method, "method", set(COMMUNITY_METHODS))
    if isinstance(n_clusters, str):
        if n_clusters != "auto":
            raise ValueError(f"n_clusters must be 'auto' or an integer >= 1; got {n_clusters!r}.")
        if method == "ahk":
            raise ValueError(
                "method='ahk' needs an integer n_clusters (AHK does not choose it); use "
                "method='consistency' for n_clusters='auto'."
            )
    else:
        check_int(n_clusters, "n_clusters", low=1)
    check_int(max_clusters, "max_clusters", low=2)
    given_graph = not isinstance(G, (str, os.PathLike))
    nxG = _as_networkx(G)
    nodes = list(nxG.nodes)
    if not nodes:
        raise ValueError("G has no nodes; nothing to cluster.")
    if n_clusters != "auto" and n_clusters > len(nodes):
        raise ValueError(f"n_clusters must satisfy 1 <= n_clusters <= the number of nodes = "
                         f"{len(nodes)}; got {n_clusters}.")
    graph = Graph.from_networkx(nxG, weight=weight)
    if graph.n_edges == 0:
        raise ValueError(
            f"G has {len(nodes)} node(s) and no edge (of positive {weight!r}); communities need "
            "links between nodes."
        )
    W = affinity(graph, kind="binary" if weight is None else "multiplicity")
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
    n_active = active.size
    groups = []
    if n_active < 3:
        groups.append(active)
    else:
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
                stacklevel=2,
            )
            for c in lost:
                groups.append(active[unlabelled & (comp == c)])
    groups.extend(np.array([i]) for i in isolated)
    groups.sort(key=lambda g: (-g.size, int(g.min())))
    result = [{nodes[int(i)] for i in g} for g in groups]
    if attribute is not None:
        if not given_graph:
            raise ValueError("attribute needs a networkx graph G (a file path has no graph to annotate).")
        for idx, group in enumerate(result):
            for node in group:
                nxG.nodes[node][attribute] = idx
    return result
