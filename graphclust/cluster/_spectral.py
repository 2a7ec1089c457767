"""NJW spectral clustering, and the graph / affinity / k-means plumbing shared with AHK.

Input handling is the same for both estimators (`SpectralClustering` here, `AHKClustering` in
``_ahk.py``): ``fit`` takes

- an array (n_samples, n_features) (a scipy sparse matrix too, for ``affinity="cosine"`` text
  data): a kNN graph is built (`knn_graph`, ``n_neighbors``; ``n_neighbors="all"`` joins every
  pair, the papers' setting, refused above `COMPLETE_GRAPH_MAX_SAMPLES` points), then the
  affinity W on its edges;
- a `Graph`: the affinity W on its edges;
- with ``affinity="precomputed"``: a symmetric sparse or dense W, used as is (a network's binary
  link matrix, for instance).
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.cluster import KMeans
from sklearn.utils._param_validation import Interval, StrOptions

from .._validation import check_points, check_random_state, check_symmetric_adjacency
from ..graphs import Graph, affinity as edge_affinity, default_sigma, knn_graph
from ..kernels import laplacian_eigenpairs

__all__ = ["SpectralClustering", "COMPLETE_GRAPH_MAX_SAMPLES"]

#: NJW on a graph with more components than clusters embeds all component indicators (n x c).
MAX_NJW_COMPONENTS = 1000

#: ``n_neighbors="all"`` (complete graph, n (n - 1) edges) is refused above this many points.
COMPLETE_GRAPH_MAX_SAMPLES = 5000

AFFINITIES = ("gaussian", "local", "cosine", "binary", "multiplicity", "precomputed")


def row_normalize(Y):
    """Rows scaled to unit Euclidean length (an all-zero row stays zero)."""
    norms = np.linalg.norm(Y, axis=1)
    norms[norms == 0] = 1.0
    return Y / norms[:, None]


def best_kmeans(Y, n_clusters, n_init, rng):
    """k-means on the rows of Y, best of `n_init` k-means++ restarts by within-cluster SS."""
    seed = int(rng.integers(2**31 - 1))
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed).fit(Y)
    return km.labels_.astype(np.int64), float(km.inertia_)


class _SpectralBase(ClusterMixin, BaseEstimator):
    """Graph, affinity and k-means stages common to NJW and AHK."""

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "affinity": [StrOptions(set(AFFINITIES)), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"all"})],
        "local_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "eigen_tol": [Interval(numbers.Real, 0, None, closed="neither")],
        "eigen_solver": [StrOptions({"auto", "dense", "eigsh", "lobpcg", "shift-invert"})],
        "random_state": ["random_state"],
    }

    # ------------------------------------------------------------------ graph and affinity
    def _affinity_matrix(self, X, rng):
        """Return the symmetric CSR affinity W; records graph-stage time and sigma_."""
        kind = self.affinity or "gaussian"
        self.sigma_ = None
        if kind == "precomputed":
            if self.sigma is not None:
                raise ValueError(
                    "sigma has no effect with affinity='precomputed' (W is used as is); "
                    f"got sigma={self.sigma}."
                )
            W = check_symmetric_adjacency(X, name="X (precomputed affinity)")
            W.eliminate_zeros()
            return W
        if kind != "gaussian" and self.sigma is not None:
            raise ValueError(
                f"sigma applies to affinity='gaussian' only; got sigma={self.sigma} with "
                f"affinity={kind!r}."
            )
        if isinstance(X, Graph):
            graph = X
        else:
            if sp.issparse(X) and kind != "cosine":
                raise TypeError(
                    "a scipy sparse X is read as data points only with affinity='cosine' (text); "
                    "for a precomputed affinity matrix pass affinity='precomputed'."
                )
            if not sp.issparse(X):
                X = np.asarray(X)
                if np.iscomplexobj(X):
                    raise ValueError("Complex data not supported: X must hold real numbers.")
                if X.dtype == object:
                    X = X.astype(np.float64)  # numbers stored as objects; anything else raises
                if X.ndim == 2 and X.shape[1] == 0:
                    raise ValueError(
                        f"X has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required."
                    )
            X = check_points(X, accept_sparse=kind == "cosine")
            n = X.shape[0]
            self.n_features_in_ = X.shape[1]
            metric = "cosine" if kind == "cosine" else "euclidean"
            if self.n_neighbors == "all":
                if n > COMPLETE_GRAPH_MAX_SAMPLES:
                    raise ValueError(
                        f"n_neighbors='all' builds the complete graph (n^2 edges); n = {n} is "
                        f"above the {COMPLETE_GRAPH_MAX_SAMPLES} limit. Use an integer "
                        "n_neighbors (a kNN graph)."
                    )
                k = n - 1
            else:
                k = self.n_neighbors
                if k >= n:
                    raise ValueError(
                        f"n_neighbors must be < n_samples = {n}; got {k}. Use n_neighbors='all' "
                        "for the complete graph."
                    )
            seed = int(rng.integers(2**31 - 1))
            graph = knn_graph(X, k, metric=metric, random_state=seed)
        self.graph_ = graph
        if kind == "gaussian":
            self.sigma_ = default_sigma(graph) if self.sigma is None else float(self.sigma)
            return edge_affinity(graph, self.sigma_, kind="gaussian")
        if kind == "local":
            return edge_affinity(graph, kind="local", n_neighbors=self.local_neighbors)
        return edge_affinity(graph, kind=kind)

    def _n_samples(self, X):
        if isinstance(X, Graph):
            return X.n_nodes
        shape = getattr(X, "shape", None)
        if shape is None:
            shape = np.shape(X)
        return int(shape[0]) if len(shape) else 0

    def _begin_fit(self, X):
        self._validate_params()
        n = self._n_samples(X)
        if n < 2:
            raise ValueError(f"clustering needs at least 2 samples; got n_samples = {n}.")
        if self.n_clusters > n:
            raise ValueError(
                f"n_clusters must satisfy 1 <= n_clusters <= n_samples = {n}; got "
                f"{self.n_clusters}."
            )
        rng = check_random_state(self.random_state)
        # one seed per stage, drawn up front: a stage that needs none (e.g. no kNN search for a
        # Graph input) does not shift the others, so array, Graph and precomputed inputs agree
        seeds = rng.integers(2**31 - 1, size=3)
        self._stage_rngs = [np.random.default_rng(int(s)) for s in seeds]
        timings = {}
        t0 = time.perf_counter()
        W = self._affinity_matrix(X, self._stage_rngs[0])
        timings["graph"] = time.perf_counter() - t0
        self.affinity_matrix_ = W
        return W, self._stage_rngs[1], timings

    def _finish_fit(self, Y, rng, timings):
        t0 = time.perf_counter()
        self.embedding_ = row_normalize(Y)
        self.labels_, self.inertia_ = best_kmeans(
            self.embedding_, self.n_clusters, self.n_init, self._stage_rngs[2]
        )
        timings["kmeans"] = time.perf_counter() - t0
        self.timings_ = timings
        return self

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_``."""
        return self.fit(X).labels_


class SpectralClustering(_SpectralBase):
    """Ng-Jordan-Weiss (NJW) spectral clustering on a sparse graph.

    The embedding is the k eigenvectors of L_sym = I - D^-1/2 W D^-1/2 with the smallest
    eigenvalues (largest of S = D^-1/2 W D^-1/2), rows normalised to unit length, then k-means.

    Parameters
    ----------
    n_clusters : int
        k, 1 <= k <= n_samples.
    sigma : float > 0 or None, default None
        Global Gaussian scale for ``affinity="gaussian"``, w_ij = exp(-d_ij^2 / (2 sigma^2));
        None: the median edge length of the graph (resolved value in ``sigma_``).
    affinity : {"gaussian", "local", "cosine", "binary", "multiplicity", "precomputed"} or None
        None means "gaussian". ``local``: self-tuning scales sigma_i sigma_j (Zelnik-Manor &
        Perona) with sigma_i the distance to the `local_neighbors`-th neighbour. ``cosine``: cosine
        similarity (text; X may be scipy sparse). ``binary``: 1 on every edge. ``multiplicity``:
        the graph's edge weights (networks). ``precomputed``: X is W.
    n_neighbors : int or "all", default 10
        kNN graph size for array input; "all" is the complete graph (n <= 5000).
    local_neighbors : int, default 7
        The neighbour rank defining sigma_i for ``affinity="local"``.
    n_init : int, default 10
        k-means restarts; the one with the lowest within-cluster sum of squares is kept.
    eigen_solver : {"auto", "dense", "eigsh", "lobpcg"}, default "auto"
        See `top_eigenpairs`.
    eigen_tol : float, default 1e-8
    random_state : int, Generator, RandomState or None
        Seeds the kNN search (large n), the Lanczos start vector and k-means.

    Attributes
    ----------
    labels_ : int array (n,)
    embedding_ : array (n, k)
        The row-normalised spectral embedding k-means ran on.
    eigenvalues_ : array (k,)
        Smallest eigenvalues of L_sym (the component zeros first).
    affinity_matrix_ : csr_matrix (n, n)
    sigma_ : float or None
    n_components_ : int
        Connected components of W. Each contributes its exact lambda = 0 eigenvector; when there
        are at least k components the embedding is the component indicators (all of them).
    inertia_ : float
        Within-cluster sum of squares of the kept k-means run.
    timings_ : dict
        Seconds per stage: graph, eigenpairs, embedding, kmeans.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (40, 2)), rng.normal(3, 0.3, (40, 2))])
    >>> labels = gc.SpectralClustering(2, random_state=0).fit_predict(X)
    >>> int(labels[:40].sum() in (0, 40)), len(set(labels[:40]) & set(labels[40:]))
    (1, 0)
    """

    def __init__(
        self,
        n_clusters=8,
        *,
        sigma=None,
        affinity=None,
        n_neighbors=10,
        local_neighbors=7,
        n_init=10,
        eigen_solver="auto",
        eigen_tol=1e-8,
        random_state=None,
    ):
        self.n_clusters = n_clusters
        self.sigma = sigma
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.local_neighbors = local_neighbors
        self.n_init = n_init
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.random_state = random_state

    def fit(self, X, y=None):
        """Cluster `X` (array, `Graph`, or W with ``affinity="precomputed"``)."""
        W, rng, timings = self._begin_fit(X)
        t0 = time.perf_counter()
        Y, values, n_comp = njw_embedding(
            W,
            self.n_clusters,
            tol=self.eigen_tol,
            method=self.eigen_solver,
            random_state=rng,
        )
        timings["eigenpairs"] = time.perf_counter() - t0
        timings["embedding"] = 0.0
        self.eigenvalues_ = values
        self.n_components_ = n_comp
        return self._finish_fit(Y, rng, timings)


def njw_embedding(W, n_clusters, *, tol=1e-8, method="auto", random_state=None):
    """The NJW embedding (before row normalisation): k bottom eigenvectors of L_sym.

    Each connected component's lambda = 0 eigenvector (sqrt(d) on the component) is taken in
    closed form, then the k - n_components smallest non-trivial ones from Lanczos; with
    n_components >= k all component vectors are returned (a k-means on them merges components).

    Returns
    -------
    Y : array (n, max(k, n_components))
    values : array
        The matching eigenvalues of L_sym, ascending.
    n_components : int
    """
    from ..kernels import symmetric_form

    form = symmetric_form(W, "sym")
    c = form.n_components
    k_rest = n_clusters - c
    if k_rest < 0:
        if c > MAX_NJW_COMPONENTS:
            raise ValueError(
                f"the graph has {c} connected components for n_clusters = {n_clusters}; the NJW "
                f"embedding would be n x {c} (above the {MAX_NJW_COMPONENTS} limit). Connect the "
                "graph (more neighbours, a larger sigma, an MST-joined graph)."
            )
        warnings.warn(
            f"the graph has {c} connected components, more than n_clusters = {n_clusters}: "
            "every cluster will be a union of whole components.",
            UserWarning,
            stacklevel=3,
        )
    Z = form.trivial.toarray()
    if k_rest <= 0:
        return Z, np.zeros(c), c
    spec = laplacian_eigenpairs(W, k_rest, "sym", tol=tol, method=method, random_state=random_state)
    Y = np.hstack([Z, spec.vectors])
    return Y, np.concatenate([np.zeros(c), spec.values]), c
