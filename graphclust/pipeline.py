"""`Pipeline`: graph -> kernel -> clusterer as one scikit-learn estimator, and its stage objects.

A pipeline chains three stages (DESIGN.md section 1):

=============  ==========================================================================
stage          objects (all in ``graphclust.pipeline`` and re-exported by ``graphclust``)
=============  ==========================================================================
graph          `KNNGraph`, `EpsilonGraph`, `MSTGraph`, `PMSTGraph`, `DMSTGraph`: builders of
               the proximity graph (wrapping `knn_graph`, `epsilon_graph`, ...); ``None``
               when `Pipeline.fit` receives a `Graph`
kernel         `ConsistencyStage` (U = beta (I - alpha S)^-1 on the Gaussian affinity),
               `AHKStage` (Aggregated Heat Kernel and the other spectral kernels),
               `NJWStage` (the normalised affinity S of NJW spectral clustering)
clusterer      `ConsistencySeeds` (seeds, labels, outliers and the Omega criterion),
               `SpectralKMeans` (k-means on the row-normalised top eigenvectors)
=============  ==========================================================================

Naming: the kernel *stages* are called ``...Stage`` because ``graphclust.ConsistencyKernel``
already names the computational object that applies U to blocks; a stage only holds parameters.

Which combinations work, and how each is computed:

=================  ==================  ====================================================
kernel             clusterer           computed by
=================  ==================  ====================================================
ConsistencyStage   ConsistencySeeds    `ConsistencyClustering` on the built graph
ConsistencyStage   SpectralKMeans      top-k eigenvectors of U (those of S), rows normalised,
                                       k-means; alpha does not change them (see Notes)
AHKStage           ConsistencySeeds    the consistency seeds / labels / Omega read on the
                                       columns of the spectral kernel H with its lambda = 0
                                       vectors put back (a few products with its rank-m
                                       factors), Omega searched over sigma and c
AHKStage           SpectralKMeans      `AHKClustering` on the built graph
NJWStage           SpectralKMeans      `SpectralClustering` (NJW) on the built graph
NJWStage           ConsistencySeeds    refused: S is not a positive semi-definite kernel
=================  ==================  ====================================================

"auto" parameters (``sigma``, ``alpha``, ``n_clusters``, and the kNN graph's ``n_neighbors``)
are searched jointly by the Omega criterion of `ConsistencySeeds`: the graph is built once, each
sigma gets one affinity matrix and one eigensolve, and every alpha and every c of the search
reuse them. ``KNNGraph(n_neighbors="auto")`` runs one neighbour search with the largest k of its
grid, whose first k columns give every smaller k, and one such search per k; the k whose best
Omega is largest wins. Other graph parameters are not searched (a new value rebuilds the graph
and there is no shared work).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_array, check_is_fitted

from ._persistence import read_model_file, write_model_file
from ._progress import Progress
from ._validation import check_int, check_option, check_real
from .graphs import (
    Graph,
    affinity,
    default_sigma,
    dmst_graph,
    epsilon_graph,
    knn_graph,
    mst_graph,
    pmst_graph,
)
from .graphs import knn_graph_from_neighbors, nearest_neighbors
from ._validation import check_points

__all__ = [
    "AHKStage",
    "ConsistencySeeds",
    "ConsistencyStage",
    "DMSTGraph",
    "EpsilonGraph",
    "KNNGraph",
    "MSTGraph",
    "NJWStage",
    "PMSTGraph",
    "Pipeline",
    "SpectralKMeans",
]

#: File format written by `Pipeline.save`.
PIPELINE_FORMAT = "graphclust.Pipeline"
PIPELINE_FORMAT_VERSION = 1

#: Same a-priori grids as `ConsistencyClustering` (sigma factors of the median edge length).
DEFAULT_SIGMA_FACTORS = (0.25, 0.5, 1.0, 2.0)
DEFAULT_ALPHAS = (0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)


def _no_auto(stage, role):
    for key, value in stage.get_params(deep=False).items():
        if isinstance(value, str) and value == "auto":
            raise ValueError(
                f"{role}__{key}='auto': only KNNGraph(n_neighbors='auto') is searched (its graphs "
                f"share one neighbour search); give {key} a value, or compare graphs by fitting "
                "one pipeline per graph."
            )


# ============================================================================================
# Graph stages
# ============================================================================================


class _GraphStage(BaseEstimator):
    """Base of the graph stages: ``build(X, random_state)`` returns a `Graph`."""

    #: neighbours of unseen points in `Pipeline.predict` (the graph's k when it has one)
    def _predict_neighbors(self):
        k = getattr(self, "n_neighbors", None)
        return k if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else 10

    def build(self, X, random_state=None):  # pragma: no cover - overridden
        raise NotImplementedError

    def describe(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"


class KNNGraph(_GraphStage):
    """Symmetrised k-nearest-neighbour graph stage (`graphclust.knn_graph`).

    Parameters
    ----------
    n_neighbors : int or "auto", default 10
        ``"auto"``: searched over `n_neighbors_grid` by the Omega criterion, jointly with the
        kernel's sigma, alpha and the number of clusters (needs ``ConsistencyStage`` +
        ``ConsistencySeeds``, the stages that have a criterion). One neighbour search with the
        largest k serves every k of the grid (the k nearest are the first k of the k_max
        nearest); each k then costs one full consistency search on its own graph.
    metric : {"euclidean", "cosine"}, default "euclidean"
    mode : {"union", "mutual"}, default "union"
    n_neighbors_grid : sequence of int, default (5, 10, 20)
        The values of k searched when ``n_neighbors="auto"`` (fixed a priori: half, once and
        twice the default).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.pipeline import KNNGraph
    >>> KNNGraph(5).build(np.random.default_rng(0).normal(size=(50, 2))).n_nodes
    50
    """

    def __init__(self, n_neighbors=10, *, metric="euclidean", mode="union",
                 n_neighbors_grid=(5, 10, 20)):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.mode = mode
        self.n_neighbors_grid = n_neighbors_grid

    def build(self, X, random_state=None):
        """The kNN `Graph` of the (n, d) array `X`."""
        _no_auto(self, "graph")
        return knn_graph(X, self.n_neighbors, metric=self.metric, mode=self.mode,
                         random_state=random_state)

    def _grid(self, n):
        grid = sorted({check_int(k, "graph__n_neighbors_grid entries", low=1, high=n,
                                 high_inclusive=False)
                       for k in np.atleast_1d(np.asarray(self.n_neighbors_grid))})
        if not grid:
            raise ValueError("graph__n_neighbors_grid is empty; give at least one k >= 1.")
        return grid

    def build_family(self, X, random_state=None):
        """{k: kNN `Graph`} for every k of `n_neighbors_grid`, from one neighbour search."""
        X = check_points(X, accept_sparse=True)
        grid = self._grid(X.shape[0])
        check_option(self.mode, "graph__mode", {"union", "mutual"})
        idx, dist = nearest_neighbors(X, grid[-1], metric=self.metric, random_state=random_state)
        return {k: knn_graph_from_neighbors(
            idx[:, :k], dist[:, :k], mode=self.mode,
            provenance={"builder": "knn_graph", "n_neighbors": k, "metric": self.metric,
                        "mode": self.mode})
            for k in grid}


class EpsilonGraph(_GraphStage):
    """Epsilon-ball graph stage (`graphclust.epsilon_graph`): every pair at distance <= radius.

    Parameters
    ----------
    radius : float > 0
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    def __init__(self, radius=1.0, *, metric="euclidean"):
        self.radius = radius
        self.metric = metric

    def build(self, X, random_state=None):
        """The epsilon-ball `Graph` of `X` (isolated points are kept; see `epsilon_graph`)."""
        _no_auto(self, "graph")
        return epsilon_graph(X, self.radius, metric=self.metric)


class MSTGraph(_GraphStage):
    """Minimum spanning tree stage (`graphclust.mst_graph`).

    Parameters
    ----------
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int, default 10
        k of the kNN candidate graph.
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    def __init__(self, *, candidates="knn", n_neighbors=10, metric="euclidean"):
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric

    def build(self, X, random_state=None):
        """The MST `Graph` of `X` (one component)."""
        _no_auto(self, "graph")
        return mst_graph(X, candidates=self.candidates, n_neighbors=self.n_neighbors,
                         metric=self.metric, random_state=random_state)


class PMSTGraph(_GraphStage):
    """Perturbed-MST ensemble stage (`graphclust.pmst_graph`), edge weights e_ij in (0, 1].

    Parameters
    ----------
    n_trees : int, default 20
        The paper's T.
    r : float in [0, 1], default 0.4
        Noise level relative to each point's mean distance to its 5 nearest neighbours.
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int, default 20
        k of the kNN candidate graph.
    metric : {"euclidean", "cosine"}, default "euclidean"

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.pipeline import PMSTGraph
    >>> g = PMSTGraph(n_trees=5, r=0.4).build(np.random.default_rng(0).normal(size=(60, 2)),
    ...                                       random_state=0)
    >>> g.n_components, bool(g.multiplicity.data.max() <= 1.0)
    (1, True)
    """

    def __init__(self, n_trees=20, r=0.4, *, candidates="knn", n_neighbors=20,
                 metric="euclidean"):
        self.n_trees = n_trees
        self.r = r
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric

    def _predict_neighbors(self):
        return 10

    def build(self, X, random_state=None):
        """The PMST ensemble `Graph` of `X`, seeded by `random_state`."""
        _no_auto(self, "graph")
        k = self.n_neighbors
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            k = min(int(k), np.shape(X)[0] - 1)  # small inputs: at most n - 1 candidates
        return pmst_graph(X, self.n_trees, self.r, candidates=self.candidates, n_neighbors=k,
                          metric=self.metric, random_state=random_state)


class DMSTGraph(_GraphStage):
    """Disjoint-MST ensemble stage (`graphclust.dmst_graph`): union of edge-disjoint MSTs.

    Parameters
    ----------
    n_trees : float >= 1, default 3
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int or None, default None
        k of the kNN candidates (None: max(10, 4 ceil(n_trees))).
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    def __init__(self, n_trees=3, *, candidates="knn", n_neighbors=None, metric="euclidean"):
        self.n_trees = n_trees
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric

    def build(self, X, random_state=None):
        """The DMST ensemble `Graph` of `X`."""
        _no_auto(self, "graph")
        return dmst_graph(X, self.n_trees, candidates=self.candidates,
                          n_neighbors=self.n_neighbors, metric=self.metric,
                          random_state=random_state)


# ============================================================================================
# Kernel stages
# ============================================================================================


class _KernelStage(BaseEstimator):
    """Base of the kernel stages (parameters only; the pipeline does the computation)."""


def _check_sigma(sigma, name, *, allow_auto, allow_none):
    if sigma is None:
        if allow_none:
            return None
        raise ValueError(f"{name} must be a number > 0 or 'auto'; got None.")
    if isinstance(sigma, str):
        if sigma == "auto" and allow_auto:
            return "auto"
        allowed = "a number > 0" + (", 'auto'" if allow_auto else "") + (
            " or None (the median edge length)" if allow_none else "")
        raise ValueError(f"{name} must be {allowed}; got {sigma!r}.")
    return check_real(sigma, name, low=0, low_inclusive=False)


def _check_grid(grid, name, *, low=0.0, high=None):
    values = np.atleast_1d(np.asarray(grid, dtype=float)) if not isinstance(grid, str) else None
    if values is None or values.ndim != 1 or values.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of numbers; got {grid!r}.")
    return [check_real(v, f"{name} entries", low=low, high=high, low_inclusive=False,
                       high_inclusive=False) for v in values]


class ConsistencyStage(_KernelStage):
    """The consistency kernel U = beta (I - alpha S)^-1 on the Gaussian affinity of the graph.

    S = D^-1/2 W D^-1/2 with w_ij = e_ij exp(-d_ij^2 / (2 sigma^2)). Computed matrix-free by
    `graphclust.ConsistencyKernel` (deflated CG, one eigensolve per sigma shared by all alphas).

    Parameters
    ----------
    alpha : float in (0, 1) or "auto", default "auto"
        "auto": searched over `alpha_grid` by the Omega criterion (needs `ConsistencySeeds`).
    sigma : float > 0, "auto" or None, default "auto"
        "auto": searched over ``sigma_grid * median edge length`` (needs `ConsistencySeeds`);
        None: the median edge length (with `SpectralKMeans` only).
    sigma_grid, alpha_grid : sequences of float
        The searched values (defaults as in `ConsistencyClustering`).
    method : {"auto", "dense", "cg"}, default "auto"
    norms : {"auto", "exact", "estimate"}, default "auto"
    n_eigenpairs : int or "auto", default "auto"
    tol, search_tol : float
        CG tolerances of the final fit and of the search evaluations.
    join_components : bool, default True
        Join a split graph of an array by its shortest between-component edges (warned).

    See `ConsistencyClustering` for the meaning of each parameter.
    """

    def __init__(self, alpha="auto", *, sigma="auto", sigma_grid=DEFAULT_SIGMA_FACTORS,
                 alpha_grid=DEFAULT_ALPHAS, method="auto", norms="auto", n_eigenpairs="auto",
                 tol=1e-8, search_tol=1e-6, join_components=True):
        self.alpha = alpha
        self.sigma = sigma
        self.sigma_grid = sigma_grid
        self.alpha_grid = alpha_grid
        self.method = method
        self.norms = norms
        self.n_eigenpairs = n_eigenpairs
        self.tol = tol
        self.search_tol = search_tol
        self.join_components = join_components


class AHKStage(_KernelStage):
    """A spectral diffusion kernel H = sum_i w(lambda_i) psi_i psi_i^T (default: AHK).

    Parameters
    ----------
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
        Laplacian normalisation (`graphclust.kernels.laplacian`).
    gamma : float >= 0, default 0.01
        AHK smoothing w(lambda) = 1 / (gamma + lambda).
    n_eigenpairs : int or "auto", default "auto"
        m; "auto" = min(n - n_components, 100).
    kind : {"ahk", "heat", "mdm", "commute"}, default "ahk"
        The weight function (`graphclust.kernels.kernel_weights`).
    t : float > 0, default 1.0
        Heat kernel time.
    sigma : float > 0, None or "auto", default None
        Gaussian width; None is the median edge length; "auto" searches ``sigma_grid * median``
        by the Omega criterion (needs `ConsistencySeeds`).
    sigma_grid : sequence of float, default (0.25, 0.5, 1, 2)
    component_vectors : {"auto", "contrast", "drop"}, default "auto"
        As in `AHKClustering` (used with `SpectralKMeans`).
    """

    def __init__(self, normalization="lbn", *, gamma=0.01, n_eigenpairs="auto", kind="ahk",
                 t=1.0, sigma=None, sigma_grid=DEFAULT_SIGMA_FACTORS, component_vectors="auto"):
        self.normalization = normalization
        self.gamma = gamma
        self.n_eigenpairs = n_eigenpairs
        self.kind = kind
        self.t = t
        self.sigma = sigma
        self.sigma_grid = sigma_grid
        self.component_vectors = component_vectors


class NJWStage(_KernelStage):
    """The normalised affinity S = D^-1/2 W D^-1/2 of NJW spectral clustering.

    Parameters
    ----------
    sigma : float > 0 or None, default None
        Gaussian width; None is the median edge length.
    """

    def __init__(self, sigma=None):
        self.sigma = sigma


# ============================================================================================
# Clusterer stages
# ============================================================================================


class _ClustererStage(BaseEstimator):
    """Base of the clusterer stages (parameters only)."""


class ConsistencySeeds(_ClustererStage):
    """Consistency clustering read on a kernel: seeds, labels, outliers and the Omega criterion.

    Parameters
    ----------
    n_clusters : int or "auto", default "auto"
        "auto" searches 2..`max_clusters` by Omega, jointly with the kernel's "auto" parameters.
    max_clusters : int >= 2, default 10
    """

    def __init__(self, n_clusters="auto", *, max_clusters=10):
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters


class SpectralKMeans(_ClustererStage):
    """k-means on the row-normalised top-k eigenvectors of the kernel (best of `n_init`).

    Parameters
    ----------
    n_clusters : int, default 8
    n_init : int, default 10
    """

    def __init__(self, n_clusters=8, *, n_init=10):
        self.n_clusters = n_clusters
        self.n_init = n_init


STAGES = {
    cls.__name__: cls
    for cls in (KNNGraph, EpsilonGraph, MSTGraph, PMSTGraph, DMSTGraph, ConsistencyStage,
                AHKStage, NJWStage, ConsistencySeeds, SpectralKMeans)
}
_GRAPH_NAMES = "KNNGraph, EpsilonGraph, MSTGraph, PMSTGraph, DMSTGraph"


# ============================================================================================
# Helpers of the computations the existing clusterers do not cover
# ============================================================================================


class _FixedGraph:
    """A graph 'builder' that returns a graph built beforehand (picklable, unlike a lambda)."""

    def __init__(self, graph):
        self.graph = graph

    def __call__(self, X):
        return self.graph


class _FactoredKernel:
    """H = Psi diag(w) Psi^T = Q B Q^T (thin QR), with the interface `consistency_path` uses."""

    def __init__(self, spectral_kernel):
        Q, R = np.linalg.qr(spectral_kernel.vectors)
        B = (R * spectral_kernel.weights) @ R.T
        self.Q, self.B = Q, 0.5 * (B + B.T)
        self.n = Q.shape[0]

    def apply(self, X):
        X = np.asarray(X, dtype=np.float64)
        return self.Q @ (self.B @ (self.Q.T @ X))

    def column_norms(self):
        """nu_j = ||H e_j|| = ||B q_j|| (q_j row j of Q), exact, O(n m^2)."""
        nu = np.linalg.norm(self.Q @ self.B, axis=1)
        tiny = np.finfo(np.float64).tiny
        return np.maximum(nu, tiny)


def _components_of(W):
    from scipy.sparse.csgraph import connected_components

    W = sp.csr_matrix(W, copy=True)
    W.eliminate_zeros()
    n_comp, comp = connected_components(W, directed=False)
    return n_comp, (None if n_comp == 1 else comp)


def _row_normalize(Y):
    norms = np.linalg.norm(Y, axis=1)
    norms[norms == 0] = 1.0
    return Y / norms[:, None]


def _kmeans(Y, k, n_init, seed):
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=k, n_init=n_init, random_state=seed).fit(Y)
    return km.labels_.astype(np.int64), float(km.inertia_)


def _jsonable(value):
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _stage_to_json(stage):
    if stage is None:
        return None
    return {"class": type(stage).__name__,
            "params": {k: _jsonable(v) for k, v in stage.get_params(deep=False).items()}}


def _stage_from_json(spec, where):
    if spec is None:
        return None
    name = spec.get("class") if isinstance(spec, dict) else None
    if name not in STAGES:
        raise ValueError(f"{where} is damaged: unknown stage class {name!r}.")
    params = {k: (tuple(v) if isinstance(v, list) else v) for k, v in spec["params"].items()}
    return STAGES[name](**params)


# ============================================================================================
# Pipeline
# ============================================================================================


def _can_predict(self):
    kernel = self.kernel if self.kernel is not None else ConsistencyStage()
    clusterer = self.clusterer if self.clusterer is not None else ConsistencySeeds()
    if isinstance(kernel, ConsistencyStage):
        return isinstance(clusterer, ConsistencySeeds)
    return isinstance(clusterer, SpectralKMeans)  # AHK / NJW: the Nystrom extension


class Pipeline(ClusterMixin, BaseEstimator):
    """Graph -> kernel -> clusterer as one scikit-learn estimator.

    Parameters
    ----------
    graph : KNNGraph, EpsilonGraph, MSTGraph, PMSTGraph, DMSTGraph or None, default None
        How to build the proximity graph from an array; None means ``KNNGraph()`` for array
        input, and must be None when `fit` receives a `Graph`.
    kernel : ConsistencyStage, AHKStage, NJWStage or None, default None
        None means ``ConsistencyStage()`` (sigma and alpha "auto").
    clusterer : ConsistencySeeds, SpectralKMeans or None, default None
        None means ``ConsistencySeeds()`` (n_clusters "auto").
    random_state : int, numpy Generator / RandomState or None, default None
        Seeds every stage (NN-descent, PMST noise, eigensolver start vectors, norm probes,
        k-means): one seed per stage is drawn from it, so equal seeds give equal results.
    verbose : bool, default False
        Progress lines on stderr for the graph, the spectrum / search and the final fit.

    Attributes
    ----------
    labels_ : int array (n,)
    n_clusters_ : int
    sigma_ : float or None
        The Gaussian width used (chosen by the search when "auto").
    alpha_ : float or None
        The consistency alpha used (None for AHK / NJW kernels).
    representatives_, inlierness_, cluster_inlierness_ : arrays (`ConsistencySeeds` only)
        Seed indices in selection order; global and within-cluster inlierness (ascending order
        ranks outliers first, `outliers`).
    omega_ : array (n_sigma, n_alpha, n_c) (`ConsistencySeeds` only)
        The searched Omega surface, axes in ``omega_sigmas_``, ``omega_alphas_`` (NaN for a
        kernel without alpha), ``omega_n_clusters_``; ``omega_valid_`` marks the admissible
        entries and ``omega_by_n_clusters_`` gives the best Omega for each c.
    embedding_ : array (n, k) (`SpectralKMeans` only)
        The row-normalised eigenvectors k-means ran on.
    graph_ : Graph or None
        The graph the kernel was built on (None after `load`).
    n_neighbors_, graph_search_ : int, dict or None
        With ``KNNGraph(n_neighbors="auto")``: the chosen k and {k: best Omega of that k's
        search}; None otherwise.
    estimator_ : ConsistencyClustering, AHKClustering, SpectralClustering or None
        The fitted clusterer behind the result when one of the library's estimators did the
        work (see the module table); None otherwise.
    timings_ : dict
        Seconds per stage.
    n_features_in_ : int (array input only)

    Notes
    -----
    Cost of "auto": with ``ConsistencyStage()`` and ``ConsistencySeeds()`` the search evaluates
    every (sigma, alpha, c) of ``len(sigma_grid) x len(alpha_grid) x (max_clusters - 1)``
    (4 x 6 x 9 by default); the graph is built once, each sigma costs one affinity matrix and
    one eigensolve, each (sigma, alpha) one set of column norms and one greedy seed path that
    serves every c at once. With `AHKStage`, each sigma costs one truncated Laplacian
    eigensolve, and all c come from one seed path on its rank-m kernel.

    `SpectralKMeans` on `ConsistencyStage`: U = beta (I - alpha S)^-1 is an increasing function
    of S, so its top eigenvectors are those of S for every alpha; the embedding is NJW's
    (alpha must be a number, and has no effect). `ConsistencySeeds` on `AHKStage` reads the
    papers' cosine geometry on the columns of H + w(0) T T^T, T the lambda = 0 vector of each
    component: with ``normalization="sym"`` that is the truncated (gamma I + L_sym)^-1, i.e. the
    consistency kernel for alpha = 1 / (1 + gamma) up to a factor. Measured on two moons (200
    points): with a given c it recovers the moons exactly, but Omega over c keeps growing with c
    on this kernel, so "auto" c is not reliable there (use it with `ConsistencyStage`).

    Examples
    --------
    >>> import graphclust as gc
    >>> from graphclust.datasets import two_moons
    >>> X, y = two_moons(200, noise=0.05, random_state=0)
    >>> pipe = gc.Pipeline(gc.KNNGraph(10), gc.ConsistencyStage(sigma_grid=(0.5, 1.0),
    ...                    alpha_grid=(0.99, 0.9999)), gc.ConsistencySeeds(max_clusters=4),
    ...                    random_state=0)
    >>> labels = pipe.fit_predict(X)
    >>> pipe.n_clusters_, gc.metrics.clustering_error(y, labels)
    (2, 0.0)
    >>> pipe.set_params(graph__n_neighbors=8).get_params()["graph__n_neighbors"]
    8
    """

    def __init__(self, graph=None, kernel=None, clusterer=None, *, random_state=None,
                 verbose=False):
        self.graph = graph
        self.kernel = kernel
        self.clusterer = clusterer
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _stages(self, graph_input):
        graph, kernel, clusterer = self.graph, self.kernel, self.clusterer
        if graph is not None and not isinstance(graph, _GraphStage):
            raise TypeError(f"graph must be one of {_GRAPH_NAMES} or None; got "
                            f"{type(graph).__name__}.")
        if kernel is not None and not isinstance(kernel, _KernelStage):
            raise TypeError("kernel must be ConsistencyStage, AHKStage, NJWStage or None; got "
                            f"{type(kernel).__name__}.")
        if clusterer is not None and not isinstance(clusterer, _ClustererStage):
            raise TypeError("clusterer must be ConsistencySeeds, SpectralKMeans or None; got "
                            f"{type(clusterer).__name__}.")
        if graph_input and graph is not None:
            raise ValueError(
                f"fit received a Graph, so there is nothing for the graph stage "
                f"{type(graph).__name__} to build: set graph=None, or pass the data array."
            )
        if not graph_input and graph is None:
            graph = KNNGraph()
        kernel = ConsistencyStage() if kernel is None else kernel
        clusterer = ConsistencySeeds() if clusterer is None else clusterer
        if isinstance(kernel, NJWStage) and isinstance(clusterer, ConsistencySeeds):
            raise ValueError(
                "NJWStage with ConsistencySeeds makes no sense: the NJW matrix S is an embedding "
                "operator, not a positive definite diffusion kernel whose columns the seeds "
                "compare. Use kernel=ConsistencyStage() or AHKStage() with ConsistencySeeds, or "
                "clusterer=SpectralKMeans(k) with NJWStage."
            )
        if isinstance(clusterer, SpectralKMeans):
            if isinstance(clusterer.n_clusters, str):
                raise ValueError(
                    f"clusterer__n_clusters={clusterer.n_clusters!r}: SpectralKMeans needs an "
                    "integer number of clusters; the 'auto' search uses the Omega criterion of "
                    "ConsistencySeeds (clusterer=ConsistencySeeds())."
                )
            for key in ("sigma", "alpha"):
                if getattr(kernel, key, None) == "auto":
                    raise ValueError(
                        f"kernel__{key}='auto' is searched by the Omega criterion of "
                        "ConsistencySeeds; SpectralKMeans has no criterion to search it: give "
                        f"{key} a number (or None for sigma: the median edge length)."
                    )
        return graph, kernel, clusterer

    def _check_input(self, X, reset):
        if isinstance(X, Graph):
            if X.n_nodes < 2:
                raise ValueError(f"the graph has {X.n_nodes} node(s); at least 2 are needed.")
            return X, None
        X = check_array(X, dtype=np.float64, ensure_min_samples=2,
                        input_name="X")
        if reset:
            self.n_features_in_ = X.shape[1]
        return None, X

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None):
        """Build the graph of `X` (or take the `Graph` `X`), the kernel, and cluster.

        Parameters
        ----------
        X : array (n_samples, n_features) or Graph
        y : ignored

        Returns
        -------
        self
        """
        from ._validation import check_random_state

        graph_in, X_arr = self._check_input(X, reset=True)
        if graph_in is not None and hasattr(self, "n_features_in_"):
            del self.n_features_in_
        graph_stage, kernel, clusterer = self._stages(graph_in is not None)
        n = graph_in.n_nodes if graph_in is not None else X_arr.shape[0]
        self._check_clusterer(clusterer, n)
        rng = check_random_state(self.random_state)
        graph_seed, kernel_seed = (int(s) for s in rng.integers(2**31 - 1, size=2))
        progress = Progress(bool(self.verbose))
        self.timings_ = {}
        self.n_neighbors_ = self.graph_search_ = None
        if isinstance(graph_stage, KNNGraph) and isinstance(graph_stage.n_neighbors, str) and (
                graph_stage.n_neighbors == "auto"):
            return self._fit_graph_search(X_arr, graph_stage, kernel, clusterer, graph_seed,
                                          kernel_seed, progress)
        if graph_in is None:
            with progress.step(f"graph {graph_stage.describe()} of {n} points"):
                t0 = time.perf_counter()
                graph = graph_stage.build(X_arr, random_state=graph_seed)
                self.timings_["graph"] = time.perf_counter() - t0
            progress.note(f"{graph.n_edges} edges, {graph.n_components} connected component(s)")
        else:
            graph = graph_in
            self.timings_["graph"] = 0.0
        self.graph_ = graph
        for name in ("representatives_", "inlierness_", "cluster_inlierness_", "omega_",
                     "embedding_", "_inner_predictor"):
            if hasattr(self, name):
                delattr(self, name)
        self.estimator_ = None
        self.alpha_ = None
        if isinstance(kernel, ConsistencyStage) and isinstance(clusterer, ConsistencySeeds):
            self._fit_consistency(graph, X_arr, graph_stage, kernel, clusterer, kernel_seed,
                                  progress)
        elif isinstance(kernel, ConsistencyStage):
            self._fit_consistency_kmeans(graph, kernel, clusterer, kernel_seed, progress)
        elif isinstance(kernel, AHKStage) and isinstance(clusterer, ConsistencySeeds):
            self._fit_spectral_seeds(graph, kernel, clusterer, kernel_seed, progress)
        else:
            self._fit_spectral_kmeans(graph, X_arr, graph_stage, kernel, clusterer, kernel_seed,
                                      progress)
        return self

    @staticmethod
    def _check_clusterer(clusterer, n):
        if isinstance(clusterer, ConsistencySeeds):
            if clusterer.n_clusters == "auto":
                c = check_int(clusterer.max_clusters, "clusterer__max_clusters", low=2)
                if c > n:
                    raise ValueError(f"clusterer__max_clusters must satisfy 2 <= max_clusters <= "
                                     f"n_samples = {n}; got {c}.")
            else:
                if isinstance(clusterer.n_clusters, str):
                    raise ValueError("clusterer__n_clusters must be 'auto' or an integer; got "
                                     f"{clusterer.n_clusters!r}.")
                check_int(clusterer.n_clusters, "clusterer__n_clusters", low=1, high=n)
        else:
            check_int(clusterer.n_clusters, "clusterer__n_clusters", low=1, high=n)
            check_int(clusterer.n_init, "clusterer__n_init", low=1)

    # -- n_neighbors="auto": one consistency search per k, the largest Omega wins
    def _fit_graph_search(self, X_arr, graph_stage, kernel, clusterer, graph_seed, kernel_seed,
                          progress):
        if not (isinstance(kernel, ConsistencyStage) and isinstance(clusterer, ConsistencySeeds)):
            raise ValueError(
                "graph__n_neighbors='auto' is searched by the Omega criterion of ConsistencySeeds "
                f"on ConsistencyStage; {type(kernel).__name__} + {type(clusterer).__name__} has "
                "no criterion to compare graphs: give n_neighbors a number."
            )
        grid = graph_stage._grid(X_arr.shape[0])
        t0 = time.perf_counter()
        with progress.step(f"{grid[-1]}-NN search of {X_arr.shape[0]} points (serves k in "
                           f"{grid})"):
            family = graph_stage.build_family(X_arr, random_state=graph_seed)
        self.timings_["graph"] = time.perf_counter() - t0
        fits = {}
        for k, graph in family.items():
            progress.note(f"n_neighbors = {k}: {graph.n_edges} edges, {graph.n_components} "
                          "connected component(s)")
            self._fit_consistency(graph, X_arr, graph_stage, kernel, clusterer, kernel_seed,
                                  progress, n_neighbors=k)  # adds its stage times
            fits[k] = (self.omega_by_n_clusters_[self.n_clusters_], self.estimator_, graph)
        # the largest Omega of each k's own choice of (sigma, alpha, c); ties go to the smaller k
        best = max(fits, key=lambda kk: (fits[kk][0], -kk))
        self._adopt_consistency(fits[best][1], progress)
        self.graph_ = fits[best][2]
        self.n_neighbors_ = int(best)
        self.graph_search_ = {int(kk): float(v[0]) for kk, v in fits.items()}
        progress.note(f"chose n_neighbors = {best} (Omega by k: " + ", ".join(
            f"{kk}: {v:.4f}" for kk, v in self.graph_search_.items()) + ")")
        return self

    # -- consistency kernel + seeds: the library's ConsistencyClustering on the built graph
    def _fit_consistency(self, graph, X_arr, graph_stage, kernel, clusterer, seed, progress,
                         n_neighbors=None):
        from .cluster import ConsistencyClustering

        if n_neighbors is not None:
            k = n_neighbors
        else:
            k = graph_stage._predict_neighbors() if graph_stage is not None else 10
        if X_arr is not None:
            k = max(1, min(int(k), X_arr.shape[0] - 1))
        est = ConsistencyClustering(
            clusterer.n_clusters, alpha=kernel.alpha, sigma=kernel.sigma,
            graph=_FixedGraph(graph) if X_arr is not None else "knn",
            max_clusters=clusterer.max_clusters, n_neighbors=k,
            sigma_grid=kernel.sigma_grid, alpha_grid=kernel.alpha_grid, method=kernel.method,
            norms=kernel.norms, n_eigenpairs=kernel.n_eigenpairs, tol=kernel.tol,
            search_tol=kernel.search_tol, join_components=kernel.join_components,
            random_state=seed, verbose=progress.enabled,
        )
        est.fit(X_arr if X_arr is not None else graph)  # its own progress lines, step by step
        for key, v in est.timings_.items():
            if key != "graph":
                self.timings_[key] = self.timings_.get(key, 0.0) + v
        self._adopt_consistency(est, progress)

    def _adopt_consistency(self, est, progress):
        self.estimator_ = est
        for name in ("labels_", "n_clusters_", "alpha_", "sigma_", "representatives_",
                     "inlierness_", "cluster_inlierness_", "omega_", "omega_valid_",
                     "omega_sigmas_", "omega_alphas_", "omega_n_clusters_",
                     "omega_by_n_clusters_", "between_"):
            setattr(self, name, getattr(est, name))
        progress.note(f"chose c = {self.n_clusters_}, sigma = {self.sigma_:.4g}, "
                      f"alpha = {self.alpha_:.7g}" if self.sigma_ is not None else
                      f"chose c = {self.n_clusters_}, alpha = {self.alpha_:.7g}")

    # -- consistency kernel + k-means: top eigenvectors of U (= those of S)
    def _fit_consistency_kmeans(self, graph, kernel, clusterer, seed, progress):
        from .kernels import ConsistencyKernel

        sigma = _check_sigma(kernel.sigma, "kernel__sigma", allow_auto=False, allow_none=True)
        sigma = default_sigma(graph) if sigma is None else sigma
        alpha = check_real(kernel.alpha, "kernel__alpha", low=0, high=1, low_inclusive=False,
                           high_inclusive=False)
        k = int(clusterer.n_clusters)
        n = graph.n_nodes
        t0 = time.perf_counter()
        with progress.step(f"consistency kernel spectrum (top {k} eigenvectors)"):
            W = affinity(graph, sigma)
            n_eig = kernel.n_eigenpairs
            if kernel.method != "dense" and n > 1500:
                n_eig = max(k, 32) if n_eig == "auto" else max(int(n_eig), k)
                n_eig = min(n_eig, n - 2)
            K = ConsistencyKernel(W, alpha, method=kernel.method, n_eigenpairs=n_eig,
                                  random_state=seed)
            Y = K.spectrum.vectors[:, :k]  # descending eigenvalues of S
        self.timings_["spectrum"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        with progress.step(f"k-means ({clusterer.n_init} restarts)"):
            self.embedding_ = _row_normalize(Y)
            self.labels_, self.inertia_ = _kmeans(self.embedding_, k, clusterer.n_init,
                                                  seed + 1)
        self.timings_["kmeans"] = time.perf_counter() - t0
        self.n_clusters_ = k
        self.sigma_ = float(sigma)
        self.alpha_ = float(alpha)

    # -- AHK / NJW + k-means: the library's estimators on the built graph
    def _fit_spectral_kmeans(self, graph, X_arr, graph_stage, kernel, clusterer, seed, progress):
        from .cluster import AHKClustering, SpectralClustering

        sigma = _check_sigma(kernel.sigma, "kernel__sigma", allow_auto=False, allow_none=True)
        k = graph_stage._predict_neighbors() if graph_stage is not None else 10  # for predict
        if isinstance(kernel, AHKStage):
            est = AHKClustering(
                clusterer.n_clusters, normalization=kernel.normalization, gamma=kernel.gamma,
                n_eigenpairs=kernel.n_eigenpairs, sigma=sigma, kernel=kernel.kind, t=kernel.t,
                component_vectors=kernel.component_vectors, n_init=clusterer.n_init,
                n_neighbors=k, random_state=seed, verbose=progress.enabled,
            )
        else:
            est = SpectralClustering(clusterer.n_clusters, sigma=sigma, n_init=clusterer.n_init,
                                     n_neighbors=k, random_state=seed, verbose=progress.enabled)
        est.fit(graph)  # the estimator reports its own stages
        if X_arr is not None:  # fitted on the graph built from X_arr: keep X_arr for predict
            est._set_points(X_arr, getattr(graph_stage, "metric", "euclidean"))
        self.estimator_ = est
        self.labels_ = est.labels_
        self.embedding_ = est.embedding_
        self.inertia_ = est.inertia_
        self.n_clusters_ = int(clusterer.n_clusters)
        self.sigma_ = est.sigma_
        self.timings_.update({k: v for k, v in est.timings_.items() if k != "graph"})

    # -- AHK kernel + consistency seeds: Omega over sigma and c on the factored kernel
    def _fit_spectral_seeds(self, graph, kernel, clusterer, seed, progress):
        from .cluster import consistency_path
        from .kernels import spectral_kernel

        sigma = _check_sigma(kernel.sigma, "kernel__sigma", allow_auto=True, allow_none=True)
        check_option(kernel.normalization, "kernel__normalization",
                     {"nn", "sym", "rw", "fp", "lbn"})
        check_option(kernel.kind, "kernel__kind", {"ahk", "heat", "mdm", "commute"})
        if sigma == "auto":
            base = default_sigma(graph)
            sigmas = [base * f for f in _check_grid(kernel.sigma_grid, "kernel__sigma_grid")]
        else:
            sigmas = [default_sigma(graph) if sigma is None else float(sigma)]
        n = graph.n_nodes
        if clusterer.n_clusters == "auto":
            cs = list(range(2, int(clusterer.max_clusters) + 1))
        else:
            cs = [int(clusterer.n_clusters)]
        omega = np.full((len(sigmas), 1, len(cs)), np.nan)
        valid = np.zeros(omega.shape, dtype=bool)
        best = {c: (-np.inf, None) for c in cs}
        ops = []
        self.timings_["spectrum"] = self.timings_["search"] = 0.0
        for si, s in enumerate(sigmas):
            t0 = time.perf_counter()
            with progress.step(f"{kernel.kind} kernel spectrum at sigma = {s:.4g} "
                               f"({si + 1}/{len(sigmas)})"):
                W = affinity(graph, s)
                n_comp, comp = _components_of(W)
                m = kernel.n_eigenpairs
                m = min(n - n_comp, 100) if m == "auto" else check_int(
                    m, "kernel__n_eigenpairs", low=1, high=n - n_comp)
                if m < 1:
                    raise ValueError(f"the graph has {n_comp} connected components for {n} "
                                     "nodes: no non-trivial eigenpair is left for the kernel.")
                H = spectral_kernel(W, kernel.kind, normalization=kernel.normalization,
                                    n_eigenpairs=m, gamma=kernel.gamma, t=kernel.t,
                                    random_state=seed)
                H = self._with_trivial_vectors(H, W, kernel)
                op = _FactoredKernel(H)
                nu = op.column_norms()
            self.timings_["spectrum"] += time.perf_counter() - t0
            ops.append((op, nu, comp))
            t0 = time.perf_counter()
            path = consistency_path(op, nu, cs, components=comp)
            self.timings_["search"] += time.perf_counter() - t0
            for ci, c in enumerate(cs):
                om = path["omega"][c]
                ok = not (path["labels"][c] < 0).any()
                omega[si, 0, ci], valid[si, 0, ci] = om, ok
                if ok and np.isfinite(om) and om > best[c][0]:
                    best[c] = (om, si)
        if len(sigmas) * len(cs) == 1:
            c, si = cs[0], 0
        else:
            finite = [c for c in cs if best[c][1] is not None]
            if not finite:
                raise ValueError(
                    "no searched (sigma, c) gives a valid clustering (fewer than two nonempty "
                    "clusters, or more connected components than clusters): connect the graph "
                    "or give n_clusters."
                )
            c = max(finite, key=lambda cc: best[cc][0])
            si = best[c][1]
        op, nu, comp = ops[si]
        path = consistency_path(op, nu, [c], components=comp, cluster_inlierness_for=c)
        self.labels_ = path["labels"][c]
        self.n_clusters_ = int(c)
        self.sigma_ = float(sigmas[si])
        self.representatives_ = path["seeds"][:c].copy()
        self.inlierness_ = path["inlierness"]
        self.cluster_inlierness_ = path["cluster_inlierness"]
        self.between_ = path["between"][c]
        if len(sigmas) * len(cs) == 1:
            omega[0, 0, 0] = path["omega"][c]
            valid[0, 0, 0] = not (self.labels_ < 0).any()
        self.omega_, self.omega_valid_ = omega, valid
        self.omega_sigmas_ = np.asarray(sigmas, dtype=float)
        self.omega_alphas_ = np.array([np.nan])
        self.omega_n_clusters_ = np.asarray(cs)
        self.omega_by_n_clusters_ = {
            int(cc): (float(np.max(np.where(valid[:, 0, i] & np.isfinite(omega[:, 0, i]),
                                            omega[:, 0, i], -np.inf)))
                      if (valid[:, 0, i] & np.isfinite(omega[:, 0, i])).any() else float("nan"))
            for i, cc in enumerate(cs)
        }
        progress.note(f"chose c = {self.n_clusters_}, sigma = {self.sigma_:.4g}")

    @staticmethod
    def _with_trivial_vectors(H, W, kernel):
        """H plus each component's lambda = 0 vector with weight w(0): the whole kernel.

        The seeds compare columns by their cosines, which must be >= 0 for the greedy product
        of (1 - cosine) factors to mean "far from every seed so far". The spectral kernels drop
        the lambda = 0 vectors, leaving a centred H whose columns within one cluster can be
        anti-correlated; with them back, AHK with ``normalization="sym"`` is
        (gamma I + L_sym)^-1 (truncated), an inverse M-matrix with non-negative entries, which is
        the consistency kernel U for alpha = 1 / (1 + gamma) up to the factor beta / alpha.
        """
        from .kernels import SpectralKernel, kernel_weights

        finite_w0 = kernel.kind == "heat" or (kernel.kind in ("ahk", "commute") and
                                              kernel.gamma > 0)
        if not finite_w0:
            raise ValueError(
                f"ConsistencySeeds on AHKStage(kind={kernel.kind!r}, gamma={kernel.gamma}) needs a "
                "finite weight w(0) for the lambda = 0 vectors (the kernel's constant part): use "
                "kind='ahk' or 'commute' with gamma > 0, or kind='heat'.")
        T = H.spectrum.trivial_vectors
        T = T.toarray() if sp.issparse(T) else np.asarray(T)
        volume = float(W.sum()) if kernel.kind == "commute" else 1.0
        w0 = kernel_weights(np.zeros(T.shape[1]), kernel.kind, gamma=kernel.gamma, t=kernel.t,
                            volume=volume)
        return SpectralKernel(np.hstack([T, H.vectors]), np.concatenate([w0, H.weights]),
                              None, H.kind)

    # ------------------------------------------------------------------ results
    def __sklearn_is_fitted__(self):
        return hasattr(self, "labels_")

    def outliers(self, n=10, *, within_cluster=False):
        """Indices of the `n` worst global (or within-cluster) outliers, worst first.

        Needs `ConsistencySeeds` (inlierness is defined by the seeds' cosine geometry).
        """
        check_is_fitted(self)
        if not hasattr(self, "inlierness_"):
            raise ValueError("outliers need clusterer=ConsistencySeeds() (inlierness); this "
                             "pipeline used SpectralKMeans.")
        n = check_int(n, "n", low=0)
        score = self.cluster_inlierness_ if within_cluster else self.inlierness_
        score = np.where(np.isnan(score), np.inf, score)
        return np.argsort(score, kind="stable")[:n]

    @available_if(_can_predict)
    def predict(self, X, *, return_confidence=False):
        """Labels (and optionally confidences) of unseen points, without refitting.

        Available with ``ConsistencyStage`` + ``ConsistencySeeds`` fitted on an array with a
        Euclidean graph: the papers' out-of-sample rule (`ConsistencyClustering.predict`):
        w_j = exp(-||x - x_j||^2 / (2 sigma_^2)) on the new point's nearest training points
        (the graph stage's ``n_neighbors``, 10 for ensembles and epsilon graphs), whatever
        graph the model was fitted on. With ``AHKStage`` or ``NJWStage`` + ``SpectralKMeans``:
        the Nystrom extension of the spectral embedding on the same neighbours and weights,
        then the nearest k-means centroid (`AHKClustering.predict`, `SpectralClustering.predict`;
        the graph's ensemble weights e_ij are not applied to new points).

        Parameters
        ----------
        X : array (m, n_features_in_)
        return_confidence : bool, default False
            ``ConsistencySeeds`` only (k-means has no confidence).

        Returns
        -------
        labels : int array (m,)
        confidence : array (m,), when asked
        """
        check_is_fitted(self)
        if self.estimator_ is None:
            raise ValueError("this pipeline has no fitted model to predict with (a file saved "
                             "without one, e.g. by an older graphclust): refit it.")
        X = check_array(X, dtype=np.float64, input_name="X")
        n_feat = getattr(self, "n_features_in_", None)
        if n_feat is None:
            raise ValueError("this pipeline was fitted on a Graph, so it has no coordinates to "
                             "find the neighbours of new points: fit it on the data array.")
        if X.shape[1] != n_feat:
            raise ValueError(f"X has {X.shape[1]} features, but Pipeline is expecting {n_feat} "
                             "features as input (the number it was fitted with).")
        if isinstance(self.clusterer, SpectralKMeans):
            if return_confidence:
                raise ValueError("return_confidence=True needs clusterer=ConsistencySeeds(); "
                                 "SpectralKMeans assigns to the nearest centroid, with no "
                                 "confidence: call predict(X).")
            return self.estimator_.predict(X)
        metric = getattr(self.graph, "metric", "euclidean")
        if metric != "euclidean":
            raise ValueError(
                f"predict places new points by their Euclidean nearest training points and "
                f"Gaussian weights; this pipeline's graph uses metric={metric!r}, so its "
                "affinities would not match: refit with metric='euclidean' (e.g. on "
                "L2-normalised rows, where Euclidean order equals cosine order) to predict.")
        return self.estimator_.predict(X, return_confidence=return_confidence)

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ("labels_", "representatives_", "inlierness_", "cluster_inlierness_", "omega_",
               "omega_valid_", "omega_sigmas_", "omega_alphas_", "omega_n_clusters_",
               "between_", "embedding_")

    def _params_json(self):
        rs = self.random_state
        if isinstance(rs, (np.integer,)):
            rs = int(rs)
        if not (rs is None or isinstance(rs, int)):
            rs = None  # a Generator cannot be stored; the fitted result does not need it
        return {"graph": _stage_to_json(self.graph), "kernel": _stage_to_json(self.kernel),
                "clusterer": _stage_to_json(self.clusterer), "random_state": rs,
                "verbose": bool(self.verbose)}

    def save(self, path):
        """Write the fitted pipeline to `path`: one .npz of arrays + JSON metadata, no pickle.

        The file holds the stages' parameters, the fitted arrays, and for a consistency model
        the small state `predict` needs (`ConsistencyClustering.save`, embedded). The graph is
        not stored. Written to a temporary file first, then renamed: an error leaves nothing.

        Returns
        -------
        pathlib.Path
        """
        check_is_fitted(self)
        path = Path(path)
        meta = {
            "format": PIPELINE_FORMAT,
            "format_version": PIPELINE_FORMAT_VERSION,
            "params": self._params_json(),
            "n_clusters_": int(self.n_clusters_),
            "sigma_": None if self.sigma_ is None else float(self.sigma_),
            "alpha_": None if self.alpha_ is None else float(self.alpha_),
            "n_features_in_": getattr(self, "n_features_in_", None),
            "timings_": _jsonable(self.timings_),
            "omega_by_n_clusters_": _jsonable(getattr(self, "omega_by_n_clusters_", None)),
            "n_neighbors_": getattr(self, "n_neighbors_", None),
            "graph_search_": _jsonable(getattr(self, "graph_search_", None)),
            "inertia_": getattr(self, "inertia_", None),
        }
        arrays = {k: getattr(self, k) for k in self._ARRAYS if hasattr(self, k)}
        tmpdir = path.parent if str(path.parent) else Path(".")
        if self.estimator_ is not None and hasattr(self.estimator_, "save"):
            fd, tmp = tempfile.mkstemp(suffix=".npz", dir=tmpdir)
            os.close(fd)
            key = "spectral_model" if isinstance(self.clusterer, SpectralKMeans) else (
                "consistency_model")
            try:
                self.estimator_.save(tmp)
                arrays[key] = np.fromfile(tmp, dtype=np.uint8)
            finally:
                os.unlink(tmp)
        return write_model_file(path, arrays, meta)

    @classmethod
    def load(cls, path):
        """Read a pipeline written by `save` (``np.load(..., allow_pickle=False)``).

        Raises
        ------
        ValueError
            If the file is damaged, is not a graphclust pipeline, or has another format version.
        """
        from .cluster import AHKClustering, ConsistencyClustering, SpectralClustering

        data, meta = read_model_file(
            path, fmt=PIPELINE_FORMAT, version=PIPELINE_FORMAT_VERSION, kind="pipeline"
        )
        p = meta["params"]
        pipe = cls(graph=_stage_from_json(p["graph"], path),
                   kernel=_stage_from_json(p["kernel"], path),
                   clusterer=_stage_from_json(p["clusterer"], path),
                   random_state=p["random_state"], verbose=p["verbose"])
        if "labels_" not in data:
            raise ValueError(f"{path} is damaged: the labels_ array is missing.")
        for k in cls._ARRAYS:
            if k in data:
                setattr(pipe, k, data[k])
        pipe.n_clusters_ = int(meta["n_clusters_"])
        pipe.sigma_ = meta["sigma_"]
        pipe.alpha_ = meta["alpha_"]
        pipe.timings_ = meta["timings_"]
        pipe.graph_ = None
        if meta.get("inertia_") is not None:
            pipe.inertia_ = float(meta["inertia_"])
        if meta.get("omega_by_n_clusters_") is not None:
            pipe.omega_by_n_clusters_ = {int(k): float(v) for k, v in
                                         meta["omega_by_n_clusters_"].items()}
        pipe.n_neighbors_ = meta.get("n_neighbors_")
        pipe.graph_search_ = None if meta.get("graph_search_") is None else {
            int(k): float(v) for k, v in meta["graph_search_"].items()}
        if meta.get("n_features_in_") is not None:
            pipe.n_features_in_ = int(meta["n_features_in_"])
        pipe.estimator_ = None
        spectral = AHKClustering if isinstance(pipe.kernel, AHKStage) else SpectralClustering
        for key, est_cls in (("consistency_model", ConsistencyClustering),
                             ("spectral_model", spectral)):
            if key not in data:
                continue
            fd, tmp = tempfile.mkstemp(suffix=".npz")
            os.close(fd)
            try:
                data[key].tofile(tmp)
                pipe.estimator_ = est_cls.load(tmp)
            finally:
                os.unlink(tmp)
        return pipe
