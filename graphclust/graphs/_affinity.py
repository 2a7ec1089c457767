"""Edge weights W from a `Graph`: gaussian, local scaling (self-tuning), cosine, binary."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_option, check_real
from ._graph import Graph

__all__ = ["affinity", "default_sigma", "local_scales", "AFFINITY_KINDS"]

AFFINITY_KINDS = ("gaussian", "local", "cosine", "binary", "multiplicity")


def default_sigma(graph):
    """Data-driven global scale: the median length of the graph's edges.

    On a kNN graph this is the typical distance to a k-th neighbour, so that affinities along
    edges spread over (0, 1) instead of all being ~0 or ~1. Zero-length edges (duplicates) are
    ignored; a graph whose edges all have length 0 gets sigma = 1.
    """
    d = graph.distances.data
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def local_scales(graph, n_neighbors=7):
    """sigma_i = length of node i's `n_neighbors`-th shortest edge (self-tuning scale).

    Nodes with fewer edges use their longest one; nodes with none get the median of the others.
    Zero scales (a node whose k nearest are duplicates) are replaced by the smallest positive one.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a graphclust Graph; got {type(graph).__name__}.")
    n_neighbors = check_int(n_neighbors, "n_neighbors", low=1)
    D = graph.distances
    n = graph.n_nodes
    sig = np.full(n, np.nan)
    for i in range(n):
        row = D.data[D.indptr[i] : D.indptr[i + 1]]
        if row.size:
            kk = min(n_neighbors, row.size) - 1
            sig[i] = np.partition(row, kk)[kk]
    if np.isnan(sig).all():
        return np.ones(n)
    sig[np.isnan(sig)] = np.nanmedian(sig)
    pos = sig[sig > 0]
    floor = pos.min() if pos.size else 1.0
    sig[sig <= 0] = floor
    return sig


def affinity(graph, sigma=None, *, kind="gaussian", n_neighbors=7):
    """Symmetric sparse affinity matrix W on the edges of `graph` (w_ii = 0).

    ==============  ==================================================================
    kind            w_ij on an edge (i, j)
    ==============  ==================================================================
    gaussian        e_ij exp(-d_ij^2 / (2 sigma^2)); sigma=None -> `default_sigma`
    local           e_ij exp(-d_ij^2 / (sigma_i sigma_j)), sigma_i = distance of i's
                    `n_neighbors`-th nearest graph neighbour (Zelnik-Manor & Perona)
    cosine          e_ij (1 - d_ij) for graphs built with metric="cosine" (d = 1 - cos),
                    i.e. the cosine similarity; negative similarities are clipped to 0
    binary          1
    multiplicity    e_ij (ensemble weights alone, or a network's link weights)
    ==============  ==================================================================

    e_ij is ``graph.multiplicity`` (1 except on PMST ensembles and weighted networks).

    Parameters
    ----------
    graph : Graph
    sigma : float > 0 or None
        Only for ``kind="gaussian"``.
    kind : str, default "gaussian"
    n_neighbors : int, default 7
        Only for ``kind="local"``.

    Returns
    -------
    scipy.sparse.csr_matrix (n, n), symmetric, non-negative; edges whose weight underflows to 0
    are removed, so check ``graph.n_components`` against the components of W for tiny sigma.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> W = gc.affinity(gc.knn_graph(X, 5), sigma=0.5)
    >>> bool(abs(W - W.T).max() == 0), float(W.diagonal().max())
    (True, 0.0)
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be a graphclust Graph; got {type(graph).__name__}.")
    check_option(kind, "kind", set(AFFINITY_KINDS))
    D = graph.distances
    E = graph.multiplicity
    d = D.data
    if kind == "gaussian":
        if sigma is None:
            sigma = default_sigma(graph)
        sigma = check_real(sigma, "sigma", low=0, low_inclusive=False)
        # (d / sigma)^2, not d^2 / sigma^2: squares of tiny or huge lengths under/overflow;
        # a length beyond ~1e154 sigma overflows to inf, whose weight is its limit, 0
        with np.errstate(over="ignore"):
            w = E.data * np.exp(-0.5 * (d / sigma) ** 2)
    else:
        if sigma is not None:
            raise ValueError(f"sigma applies only to kind='gaussian'; got sigma={sigma} with kind={kind!r}.")
        if kind == "local":
            n_neighbors = check_int(n_neighbors, "n_neighbors", low=1)
            s = local_scales(graph, n_neighbors)
            rows = np.repeat(np.arange(graph.n_nodes), np.diff(D.indptr))
            w = E.data * np.exp(-(d / s[rows]) * (d / s[D.indices]))
        elif kind == "cosine":
            metric = graph.provenance.get("metric")
            if metric not in (None, "cosine"):
                raise ValueError(
                    f"kind='cosine' needs a graph built with metric='cosine'; this one used "
                    f"metric={metric!r}."
                )
            w = E.data * np.clip(1.0 - d, 0.0, None)
        elif kind == "binary":
            w = np.ones_like(d)
        else:
            w = E.data.copy()
    W = sp.csr_matrix((w, D.indices.copy(), D.indptr.copy()), shape=D.shape)
    W.eliminate_zeros()
    return W
