"""Helpers shared by the clusterers: row normalisation, k-means, components, stage timing.

One implementation each; the estimators, the pipeline and the applications use these.
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = ["best_kmeans", "component_labels", "kmeans_model", "relabel_by_first_appearance",
           "row_normalize", "timed_stage", "warn_more_components"]


def relabel_by_first_appearance(labels):
    """Labels renumbered 0..K-1 by first appearance (in row-major order; -1 kept).

    Examples
    --------
    >>> import numpy as np
    >>> relabel_by_first_appearance(np.array([7, 3, -1, 7, 5])).tolist()
    [0, 1, -1, 0, 2]
    """
    labels = np.asarray(labels, dtype=np.int64)
    out = np.full_like(labels, -1)
    valid = labels >= 0
    _, first, inv = np.unique(labels[valid], return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.size)
    out[valid] = rank[inv.ravel()]
    return out


def row_normalize(Y):
    """Rows scaled to unit Euclidean length (an all-zero row stays zero).

    Examples
    --------
    >>> import numpy as np
    >>> row_normalize(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [0.0, 0.0]]
    """
    norms = np.linalg.norm(Y, axis=1)
    norms[norms == 0] = 1.0
    return Y / norms[:, None]


def kmeans_model(Y, n_clusters, n_init, rng, order=None):
    """Fitted scikit-learn `KMeans` on the rows of Y, best of `n_init` k-means++ restarts.

    `rng` is a numpy Generator; one seed is drawn from it. With `order` (a permutation of the
    rows) the restarts run on ``Y[order]`` and ``labels_`` is mapped back to Y's rows:
    k-means++ draws its starts by row number, so in an order that does not depend on how the
    rows came in (`canonical_node_order` of the graph), a row permutation permutes the labels
    and changes nothing else.
    """
    from sklearn.cluster import KMeans

    seed = int(rng.integers(2**31 - 1))
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit(
        Y if order is None else Y[order])
    if order is not None:
        labels = np.empty_like(km.labels_)
        labels[np.asarray(order)] = km.labels_
        km.labels_ = labels
    return km


def best_kmeans(Y, n_clusters, n_init, rng, order=None):
    """k-means on the rows of Y, best of `n_init` k-means++ restarts by within-cluster SS
    (in the rows' `order`, as `kmeans_model`).

    Returns
    -------
    labels : int64 array (n,)
    inertia : float
    """
    km = kmeans_model(Y, n_clusters, n_init, rng, order)
    return km.labels_.astype(np.int64), float(km.inertia_)


def warn_more_components(n_components, n_clusters, stacklevel=2):
    """The warning of a spectral clusterer (NJW, AHK) whose graph has more connected components
    than the clusters asked for. `stacklevel` as for `warnings.warn`, counted from the caller.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_more_components(3, 2)
    >>> str(w[0].message)[:60]
    'the graph has 3 connected components, more than n_clusters ='
    """
    warnings.warn(
        f"the graph has {n_components} connected components, more than n_clusters = "
        f"{n_clusters}: every cluster will be a union of whole components, and which share one "
        "is not the graph's to say. Connect it (more neighbours, graphclust.join_components); "
        "repeated rows of X cut a kNN graph apart too (fit the distinct rows, "
        "np.unique(X, axis=0, return_inverse=True)).",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


def component_labels(W):
    """``(n_components, labels)`` of the connected components of the non-zero pattern of W.

    Explicit zeros are not edges. ``labels`` is None when the graph is connected.

    Examples
    --------
    >>> import numpy as np
    >>> component_labels(np.array([[0, 1.0, 0], [1.0, 0, 0], [0, 0, 0]]))[0]
    2
    """
    W = sp.csr_matrix(W, copy=True)
    W.eliminate_zeros()
    n_comp, comp = connected_components(W, directed=False)
    return n_comp, (None if n_comp == 1 else comp)


@contextmanager
def timed_stage(progress, timings, key, what):
    """Time one fit stage into ``timings[key]`` (added up) and report it through `progress`."""
    t0 = time.perf_counter()
    with progress.step(what):
        yield
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - t0
