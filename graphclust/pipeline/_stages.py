"""The stage objects of a `Pipeline`: what to build, which kernel, which clusterer (parameters).

Stages hold parameters only; each answers the questions the pipeline asks of it:

- a graph stage builds its `Graph` through `graphclust.graphs.GRAPH_TYPES` (one registry for the
  estimators, the pipeline and the CLI);
- a kernel stage says which clusterers can read it (``readings``), and gives the parameters of
  the estimator that does the work: `seed_params` for `ConsistencySeeds` (the seeds read the
  kernel's columns: `ConsistencyClustering` with that kernel), `embedding_estimator` for
  `SpectralKMeans` (k-means on the top eigenvectors);
- a clusterer stage builds that estimator (`ClustererStage.estimator`).

So the table of kernel x clusterer combinations is not written anywhere: a new kernel stage
declares its readings and the pipeline accepts it with every clusterer that reads them.
"""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.base import BaseEstimator

from .._validation import check_int, check_option, check_points, check_real
from ..cluster import (
    DEFAULT_ALPHAS,
    DEFAULT_SIGMA_FACTORS,
    AHKClustering,
    ConsistencyClustering,
    SpectralClustering,
)
from ..graphs import GRAPH_TYPES, knn_graph_from_neighbors, nearest_neighbors
from ..kernels import NORMALIZATIONS, SPECTRAL_KERNELS

__all__ = [
    "AHKStage",
    "CLUSTERER_STAGES",
    "ConsistencySeeds",
    "ConsistencyStage",
    "DMSTGraph",
    "EpsilonGraph",
    "GRAPH_STAGES",
    "KERNEL_STAGES",
    "KNNGraph",
    "MSTGraph",
    "NJWStage",
    "PMSTGraph",
    "SpectralKMeans",
    "graph_stage",
]


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


class GraphStage(BaseEstimator):
    """Base of the graph stages: ``build(X, random_state)`` returns a `Graph`.

    A subclass names its entry of `graphclust.graphs.GRAPH_TYPES` in ``graph_type`` and
    declares the builder's parameters in its ``__init__``; `build` passes them on.
    """

    graph_type = None
    #: constructor parameters that are the stage's own, not the builder's
    _stage_only = ()

    def _predict_neighbors(self):
        """Neighbours of unseen points in `Pipeline.predict` (the graph's k when it has one)."""
        k = getattr(self, "n_neighbors", None)
        return k if isinstance(k, (int, np.integer)) and not isinstance(k, bool) else 10

    def _build_params(self, X):
        return {k: v for k, v in self.get_params(deep=False).items() if k not in self._stage_only}

    def build(self, X, random_state=None):
        """The `Graph` of the (n, d) array `X` (seeded by `random_state` where it matters)."""
        _no_auto(self, "graph")
        spec = GRAPH_TYPES[self.graph_type]
        params = self._build_params(X)
        if spec.accepts("random_state"):
            params["random_state"] = random_state
        return spec.build(X, **params)

    def describe(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params(deep=False).items())
        return f"{type(self).__name__}({params})"


class KNNGraph(GraphStage):
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

    graph_type = "knn"
    _stage_only = ("n_neighbors_grid",)

    def __init__(self, n_neighbors=10, *, metric="euclidean", mode="union",
                 n_neighbors_grid=(5, 10, 20)):
        self.n_neighbors = n_neighbors
        self.metric = metric
        self.mode = mode
        self.n_neighbors_grid = n_neighbors_grid

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


class EpsilonGraph(GraphStage):
    """Epsilon-ball graph stage (`graphclust.epsilon_graph`): every pair at distance <= radius.

    Isolated points are kept (see `epsilon_graph`).

    Parameters
    ----------
    radius : float > 0
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    graph_type = "epsilon"

    def __init__(self, radius=1.0, *, metric="euclidean"):
        self.radius = radius
        self.metric = metric


class MSTGraph(GraphStage):
    """Minimum spanning tree stage (`graphclust.mst_graph`): one component.

    Parameters
    ----------
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int, default 10
        k of the kNN candidate graph.
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    graph_type = "mst"

    def __init__(self, *, candidates="knn", n_neighbors=10, metric="euclidean"):
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric


class PMSTGraph(GraphStage):
    """Perturbed-MST ensemble stage (`graphclust.pmst_graph`), edge weights e_ij in (0, 1].

    Parameters
    ----------
    n_trees : int, default 20
        The paper's T.
    r : float in [0, 1], default 0.4
        Noise level relative to each point's mean distance to its 5 nearest neighbours.
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int, default 20
        k of the kNN candidate graph (at most n - 1 on small inputs).
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

    graph_type = "pmst"

    def __init__(self, n_trees=20, r=0.4, *, candidates="knn", n_neighbors=20,
                 metric="euclidean"):
        self.n_trees = n_trees
        self.r = r
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric

    def _predict_neighbors(self):
        return 10

    def _build_params(self, X):
        params = super()._build_params(X)
        k = params["n_neighbors"]
        if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            params["n_neighbors"] = min(int(k), np.shape(X)[0] - 1)  # small inputs
        return params


class DMSTGraph(GraphStage):
    """Disjoint-MST ensemble stage (`graphclust.dmst_graph`): union of edge-disjoint MSTs.

    Parameters
    ----------
    n_trees : float >= 1, default 3
    candidates : {"knn", "all"}, default "knn"
    n_neighbors : int or None, default None
        k of the kNN candidates (None: max(10, 4 ceil(n_trees))).
    metric : {"euclidean", "cosine"}, default "euclidean"
    """

    graph_type = "dmst"

    def __init__(self, n_trees=3, *, candidates="knn", n_neighbors=None, metric="euclidean"):
        self.n_trees = n_trees
        self.candidates = candidates
        self.n_neighbors = n_neighbors
        self.metric = metric


#: The graph stage of each graph type of `GRAPH_TYPES` that takes points, by name.
GRAPH_STAGES = {cls.graph_type: cls for cls in (KNNGraph, EpsilonGraph, MSTGraph, PMSTGraph,
                                                DMSTGraph)}


def graph_stage(name, **params):
    """A graph stage for the graph type `name` of `GRAPH_TYPES`, with the builder's parameters.

    The stage classes above serve the built-in types; a type added to the registry without a
    stage class gets one made from its builder's signature, so a new graph type needs no
    pipeline code.

    Examples
    --------
    >>> from graphclust.pipeline import graph_stage
    >>> graph_stage("knn", n_neighbors=5)
    KNNGraph(n_neighbors=5)
    """
    points = {t.name for t in GRAPH_TYPES.values() if t.input == "points"}
    check_option(name, "graph", points)
    if name not in GRAPH_STAGES:
        GRAPH_STAGES[name] = _stage_class(GRAPH_TYPES[name])
    return GRAPH_STAGES[name](**params)


def _stage_class(spec):
    """A `GraphStage` subclass whose parameters are those of ``spec.build`` after X."""
    sig = inspect.signature(spec.build)
    names = [p for p in list(sig.parameters)[1:] if p != "random_state"]
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)] + [
        sig.parameters[p].replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in names]

    def __init__(self, **kwargs):
        bound = init_sig.bind(self, **kwargs)
        bound.apply_defaults()
        for key in names:
            setattr(self, key, bound.arguments[key])

    init_sig = inspect.Signature(params)
    __init__.__signature__ = init_sig
    title = "".join(part.capitalize() for part in spec.name.split("_")) + "Graph"
    return type(title, (GraphStage,), {"__init__": __init__, "graph_type": spec.name,
                                       "__doc__": f"Graph stage of ``{spec.build.__name__}``."})


# ============================================================================================
# Kernel stages
# ============================================================================================


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


class KernelStage(BaseEstimator):
    """Base of the kernel stages (parameters only; module notes).

    Attributes
    ----------
    readings : tuple of str
        Which clusterer stages can read this kernel: "seeds" (`ConsistencySeeds`) and / or
        "embedding" (`SpectralKMeans`).
    predicts_with : tuple of str
        The readings after which `Pipeline.predict` has an out-of-sample rule.
    """

    readings = ()
    predicts_with = ()

    def refusal(self, reading):
        """Why this kernel cannot be read by `reading` (a sentence for the error)."""
        return f"{type(self).__name__} cannot be read by {reading}."

    def result_alpha(self):
        """The alpha reported by a pipeline that read this kernel by its embedding."""
        return None


class ConsistencyStage(KernelStage):
    """The consistency kernel U = beta (I - alpha S)^-1 on the Gaussian affinity of the graph.

    S = D^-1/2 W D^-1/2 with w_ij = e_ij exp(-d_ij^2 / (2 sigma^2)). Computed matrix-free by
    `graphclust.ConsistencyKernel` (deflated CG, one eigensolve per sigma shared by all alphas).
    With `SpectralKMeans` the embedding is the top eigenvectors of U, which are those of S for
    every alpha (U is an increasing function of S): NJW's (`SpectralClustering`).

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

    readings = ("seeds", "embedding")
    predicts_with = ("seeds",)

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

    def seed_params(self):
        """`ConsistencyClustering` parameters of this kernel."""
        return dict(kernel="consistency", alpha=self.alpha, sigma=self.sigma,
                    sigma_grid=self.sigma_grid, alpha_grid=self.alpha_grid, method=self.method,
                    norms=self.norms, n_eigenpairs=self.n_eigenpairs, tol=self.tol,
                    search_tol=self.search_tol, join_components=self.join_components)

    def embedding_estimator(self, n_clusters, **common):
        self.result_alpha()  # validated before any work
        sigma = _check_sigma(self.sigma, "kernel__sigma", allow_auto=False, allow_none=True)
        return SpectralClustering(n_clusters, sigma=sigma, **common)

    def result_alpha(self):
        return check_real(self.alpha, "kernel__alpha", low=0, high=1, low_inclusive=False,
                          high_inclusive=False)


class AHKStage(KernelStage):
    """A spectral diffusion kernel H = sum_i w(lambda_i) psi_i psi_i^T (default: AHK).

    With `ConsistencySeeds` the seeds read the columns of H with its constant part
    (`SpectralKernel.with_constant_part`): with ``normalization="sym"`` that is the truncated
    (gamma I + L_sym)^-1, the consistency kernel for alpha = 1 / (1 + gamma) up to a factor.

    Parameters
    ----------
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
        Laplacian normalisation (`graphclust.kernels.laplacian`).
    gamma : float >= 0, default 0.01
        AHK smoothing w(lambda) = 1 / (gamma + lambda).
    n_eigenpairs : int, "auto" or "all", default "auto"
        m, as in `AHKClustering`: with `SpectralKMeans`, "auto" is the full kernel (every
        eigenpair, "all") for kind "ahk" / "commute", min(n - n_components, 100) for the
        others. `ConsistencySeeds` read the columns of H, which only the truncated kernel
        holds: there "auto" is min(n - n_components, 100) and "all" is refused.
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

    readings = ("seeds", "embedding")
    predicts_with = ("embedding",)

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

    def seed_params(self):
        """`ConsistencyClustering` parameters of this kernel (checked with stage names)."""
        sigma = _check_sigma(self.sigma, "kernel__sigma", allow_auto=True, allow_none=True)
        check_option(self.normalization, "kernel__normalization", set(NORMALIZATIONS))
        check_option(self.kind, "kernel__kind", set(SPECTRAL_KERNELS))
        gamma = check_real(self.gamma, "kernel__gamma", low=0)
        if not (self.kind == "heat" or (self.kind in ("ahk", "commute") and gamma > 0)):
            raise ValueError(
                f"ConsistencySeeds on AHKStage(kind={self.kind!r}, gamma={self.gamma}) needs a "
                "finite weight w(0) for the lambda = 0 vectors (the kernel's constant part): use "
                "kind='ahk' or 'commute' with gamma > 0, or kind='heat'.")
        if isinstance(self.n_eigenpairs, str) and self.n_eigenpairs == "all":
            raise ValueError(
                "kernel__n_eigenpairs='all' (the full kernel) holds only H's top eigenvectors, "
                "while ConsistencySeeds read the columns of H: use an integer m or 'auto' "
                "(min(n - n_components, 100)) with ConsistencySeeds, or SpectralKMeans.")
        # sigma None is the median edge length: the grid (1,) of factors of it
        return dict(kernel=self.kind, sigma="auto" if sigma is None else sigma,
                    sigma_grid=(1.0,) if sigma is None else self.sigma_grid,
                    n_eigenpairs=self.n_eigenpairs, join_components=False,
                    kernel_params={"normalization": self.normalization, "gamma": gamma,
                                   "t": self.t})

    def embedding_estimator(self, n_clusters, **common):
        sigma = _check_sigma(self.sigma, "kernel__sigma", allow_auto=False, allow_none=True)
        # named as the pipeline's parameters, before AHKClustering names them as its own
        check_option(self.normalization, "kernel__normalization", set(NORMALIZATIONS))
        check_option(self.kind, "kernel__kind", set(SPECTRAL_KERNELS))
        check_real(self.gamma, "kernel__gamma", low=0)
        check_real(self.t, "kernel__t", low=0, low_inclusive=False)
        return AHKClustering(n_clusters, normalization=self.normalization, gamma=self.gamma,
                             n_eigenpairs=self.n_eigenpairs, sigma=sigma, kernel=self.kind,
                             t=self.t, component_vectors=self.component_vectors, **common)


class NJWStage(KernelStage):
    """The normalised affinity S = D^-1/2 W D^-1/2 of NJW spectral clustering.

    Parameters
    ----------
    sigma : float > 0 or None, default None
        Gaussian width; None is the median edge length.
    """

    readings = ("embedding",)
    predicts_with = ("embedding",)

    def __init__(self, sigma=None):
        self.sigma = sigma

    def refusal(self, reading):
        return ("NJWStage with ConsistencySeeds makes no sense: the NJW matrix S is an embedding "
                "operator, not a positive definite diffusion kernel whose columns the seeds "
                "compare. Use kernel=ConsistencyStage() or AHKStage() with ConsistencySeeds, or "
                "clusterer=SpectralKMeans(k) with NJWStage.")

    def embedding_estimator(self, n_clusters, **common):
        sigma = _check_sigma(self.sigma, "kernel__sigma", allow_auto=False, allow_none=True)
        return SpectralClustering(n_clusters, sigma=sigma, **common)


#: Kernel stages by the name the CLI uses.
KERNEL_STAGES = {"consistency": ConsistencyStage, "ahk": AHKStage, "njw": NJWStage}


# ============================================================================================
# Clusterer stages
# ============================================================================================


class ClustererStage(BaseEstimator):
    """Base of the clusterer stages: ``reads`` names the kernel reading it needs."""

    reads = None
    has_criterion = False


class ConsistencySeeds(ClustererStage):
    """Consistency clustering read on a kernel: seeds, labels, outliers and the Omega criterion.

    The papers' method on the pipeline's own graph and kernel stages:
    ``ConsistencyClustering(criterion="omega")``. The default automatic fit of
    `ConsistencyClustering` (``criterion="stability"``, better on real data) builds its own
    per-point-scale kNN graph, so it is not a stage over a Gaussian kernel: use
    ``gc.ConsistencyClustering()`` (or ``graphclust cluster``'s default) for it.

    Parameters
    ----------
    n_clusters : int or "auto", default "auto"
        "auto" searches 2..`max_clusters` by Omega, jointly with the kernel's "auto" parameters.
    max_clusters : int >= 2, default 10
    """

    reads = "seeds"
    has_criterion = True

    def __init__(self, n_clusters="auto", *, max_clusters=10):
        self.n_clusters = n_clusters
        self.max_clusters = max_clusters

    def check(self, n):
        if self.n_clusters == "auto":
            c = check_int(self.max_clusters, "clusterer__max_clusters", low=2)
            if c > n:
                raise ValueError(f"clusterer__max_clusters must satisfy 2 <= max_clusters <= "
                                 f"n_samples = {n}; got {c}.")
        else:
            if isinstance(self.n_clusters, str):
                raise ValueError("clusterer__n_clusters must be 'auto' or an integer; got "
                                 f"{self.n_clusters!r}.")
            check_int(self.n_clusters, "clusterer__n_clusters", low=1, high=n)

    def estimator(self, kernel, *, graph, n_neighbors, random_state, verbose):
        """The `ConsistencyClustering` that reads `kernel` by its seeds."""
        return ConsistencyClustering(self.n_clusters, criterion="omega",
                                     max_clusters=self.max_clusters, graph=graph, n_neighbors=n_neighbors,
                                     random_state=random_state, verbose=verbose,
                                     **kernel.seed_params())


class SpectralKMeans(ClustererStage):
    """k-means on the row-normalised top-k eigenvectors of the kernel (best of `n_init`).

    Parameters
    ----------
    n_clusters : int, default 8
    n_init : int, default 10
    """

    reads = "embedding"

    def __init__(self, n_clusters=8, *, n_init=10):
        self.n_clusters = n_clusters
        self.n_init = n_init

    def check(self, n):
        if isinstance(self.n_clusters, str):
            raise ValueError(
                f"clusterer__n_clusters={self.n_clusters!r}: SpectralKMeans needs an integer "
                "number of clusters; the 'auto' search uses the Omega criterion of "
                "ConsistencySeeds (clusterer=ConsistencySeeds()).")
        check_int(self.n_clusters, "clusterer__n_clusters", low=1, high=n)
        check_int(self.n_init, "clusterer__n_init", low=1)

    def estimator(self, kernel, *, graph, n_neighbors, random_state, verbose):
        """The spectral estimator of `kernel`'s embedding, with k-means."""
        return kernel.embedding_estimator(self.n_clusters, n_init=self.n_init, graph=graph,
                                          n_neighbors=n_neighbors, random_state=random_state,
                                          verbose=verbose)


#: Clusterer stages by the name the CLI uses.
CLUSTERER_STAGES = {"seeds": ConsistencySeeds, "kmeans": SpectralKMeans}

#: Every stage class by class name (model files name their stages this way).
STAGES = {cls.__name__: cls for cls in (*GRAPH_STAGES.values(), *KERNEL_STAGES.values(),
                                        *CLUSTERER_STAGES.values())}


def can_predict(pipe):
    """Whether a `Pipeline`'s stages can place unseen points: its clusterer reads a kernel
    that predicts (``clusterer.reads in kernel.predicts_with``; None stages are the defaults)."""
    kernel = pipe.kernel if pipe.kernel is not None else ConsistencyStage()
    clusterer = pipe.clusterer if pipe.clusterer is not None else ConsistencySeeds()
    return getattr(clusterer, "reads", None) in getattr(kernel, "predicts_with", ())
