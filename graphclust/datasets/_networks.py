"""Seeded benchmark networks with planted communities."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_real

__all__ = ["lfr_graph"]


def lfr_graph(n, mu, *, random_state=0, max_community=None):
    """networkx's LFR benchmark graph as a sparse adjacency and its community labels.

    The classic settings: degree exponent 3, community-size exponent 1.5, average degree 15,
    maximum degree 50, communities of at least 20 nodes (`max_community` caps them); self-loops
    removed; every edge weighs 1.

    Parameters
    ----------
    n : int >= 50
    mu : float in [0, 1]
        Mixing: the fraction of each node's edges that leave its community.
    random_state : int, default 0
        networkx's seed (the same seed gives the same graph).
    max_community : int, optional

    Returns
    -------
    A : scipy.sparse.csr_matrix (n, n), symmetric, binary
    labels : int64 array (n,)
        Communities numbered by first appearance.

    Raises
    ------
    networkx.ExceededMaxIterations
        When networkx cannot build a graph with these settings (small n, extreme mu).

    Examples
    --------
    >>> from graphclust.datasets import lfr_graph
    >>> A, labels = lfr_graph(250, 0.1, random_state=0)
    >>> A.shape, bool((A != A.T).nnz == 0), bool(labels.max() >= 1)
    ((250, 250), True, True)
    """
    import networkx as nx

    n = check_int(n, "n", low=50)
    mu = check_real(mu, "mu", low=0.0, high=1.0)
    G = nx.LFR_benchmark_graph(n, 3, 1.5, mu, average_degree=15, max_degree=50,
                               min_community=20, max_community=max_community,
                               seed=int(random_state))
    G.remove_edges_from(nx.selfloop_edges(G))
    labels = np.empty(n, dtype=np.int64)
    seen = {}
    for v in G:
        labels[v] = seen.setdefault(frozenset(G.nodes[v]["community"]), len(seen))
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(n)), dtype=float)
    return A, labels
