"""`Pipeline`: graph -> kernel -> clusterer as one scikit-learn estimator.

The pipeline chooses and calls; it computes nothing itself. It builds the graph with the graph
stage, asks the clusterer stage for the estimator that reads the kernel stage
(`ClustererStage.estimator`), fits that estimator on the graph (keeping the points, so it can
predict), and adopts its results:

=================  ===================  =================================================
kernel reading     clusterer            estimator that does the work
=================  ===================  =================================================
``"seeds"``        `ConsistencySeeds`   `ConsistencyClustering` with that kernel: seeds,
                                        labels, outliers, the search of "auto" parameters
``"embedding"``    `SpectralKMeans`     `SpectralClustering` (NJW; also for the consistency
                                        kernel, whose top eigenvectors are S's) or
                                        `AHKClustering`
=================  ===================  =================================================

A kernel stage lists its ``readings``; a clusterer stage names the one it ``reads``. Any other
pairing is refused with the kernel's own explanation (`KernelStage.refusal`).

``KNNGraph(n_neighbors="auto")`` runs one neighbour search with the largest k of its grid,
whose first k columns give every smaller k, fits one consistency search per k, and keeps the k
whose best Omega is largest.
"""

from __future__ import annotations

import time

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._progress import Progress
from .._validation import check_int, check_points, check_random_state
from ..graphs import Graph, PrebuiltGraph
from ._stages import (
    GRAPH_STAGES,
    ClustererStage,
    ConsistencySeeds,
    ConsistencyStage,
    GraphStage,
    KernelStage,
    KNNGraph,
    can_predict,
)

__all__ = ["Pipeline"]

#: Fitted attributes adopted from a `ConsistencyClustering`.
_SEED_RESULTS = ("labels_", "n_clusters_", "alpha_", "sigma_", "representatives_",
                 "inlierness_", "cluster_inlierness_", "omega_", "omega_valid_", "omega_sigmas_",
                 "omega_alphas_", "omega_n_clusters_", "omega_by_n_clusters_", "between_")


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
        None means ``ConsistencySeeds()`` (n_clusters "auto", chosen by the papers' Omega
        criterion over the stages' parameters: ``ConsistencyClustering(criterion="omega")``;
        the Markov-stability choice of c, `ConsistencyClustering`'s default, builds its own
        per-point-scale graph and is not a stage).
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
        The fitted estimator that did the work (module notes); None after loading a file
        written without one.
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
    consistency kernel for alpha = 1 / (1 + gamma) up to a factor. With a given c it recovers
    two moons exactly, but Omega over c keeps growing with c on this kernel, so "auto" c is not
    reliable there (use it with `ConsistencyStage`).

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
    def _stages(self, graph_input, n):
        graph, kernel, clusterer = self.graph, self.kernel, self.clusterer
        names = ", ".join(cls.__name__ for cls in GRAPH_STAGES.values())
        if graph is not None and not isinstance(graph, GraphStage):
            raise TypeError(f"graph must be one of {names} or None; got {type(graph).__name__}.")
        if kernel is not None and not isinstance(kernel, KernelStage):
            raise TypeError("kernel must be ConsistencyStage, AHKStage, NJWStage or None; got "
                            f"{type(kernel).__name__}.")
        if clusterer is not None and not isinstance(clusterer, ClustererStage):
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
        if clusterer.reads not in kernel.readings:
            raise ValueError(kernel.refusal(clusterer.reads))
        clusterer.check(n)
        if not clusterer.has_criterion:
            for key in ("sigma", "alpha"):
                if getattr(kernel, key, None) == "auto":
                    raise ValueError(
                        f"kernel__{key}='auto' is searched by the Omega criterion of "
                        f"ConsistencySeeds; {type(clusterer).__name__} has no criterion to "
                        f"search it: give {key} a number (or None for sigma: the median edge "
                        "length)."
                    )
        return graph, kernel, clusterer

    def _check_input(self, X, reset):
        if isinstance(X, Graph):
            if X.n_nodes < 2:
                raise ValueError(f"the graph has {X.n_nodes} node(s); at least 2 are needed.")
            return X, None
        X = check_points(X)  # names the row and column of a NaN, as every estimator does
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
        graph_in, X_arr = self._check_input(X, reset=True)
        if graph_in is not None and hasattr(self, "n_features_in_"):
            del self.n_features_in_
        n = graph_in.n_nodes if graph_in is not None else X_arr.shape[0]
        graph_stage, kernel, clusterer = self._stages(graph_in is not None, n)
        rng = check_random_state(self.random_state)
        graph_seed, kernel_seed = (int(s) for s in rng.integers(2**31 - 1, size=2))
        progress = Progress(bool(self.verbose))
        self.timings_ = {}
        self.n_neighbors_ = self.graph_search_ = None
        for name in ("representatives_", "inlierness_", "cluster_inlierness_", "omega_",
                     "embedding_", "inertia_"):
            if hasattr(self, name):
                delattr(self, name)
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
        self._fit_on(graph, X_arr, graph_stage, kernel, clusterer, kernel_seed, progress)
        self.graph_ = graph
        return self

    def _fit_on(self, graph, X_arr, graph_stage, kernel, clusterer, seed, progress,
                n_neighbors=None):
        """Fit the estimator `clusterer` asks for on `graph` (with the points, if any)."""
        if n_neighbors is None:  # neighbours of unseen points: the graph's own k
            n_neighbors = graph_stage._predict_neighbors() if graph_stage is not None else 10
        if X_arr is not None:
            n_neighbors = max(1, min(int(n_neighbors), X_arr.shape[0] - 1))
            builder = PrebuiltGraph(graph, getattr(graph_stage, "metric", "euclidean"))
        else:
            builder = "knn"
        est = clusterer.estimator(kernel, graph=builder, n_neighbors=n_neighbors,
                                  random_state=seed, verbose=progress.enabled)
        est.fit(X_arr if X_arr is not None else graph)  # its own progress lines
        for key, v in est.timings_.items():
            if key != "graph":
                self.timings_[key] = self.timings_.get(key, 0.0) + v
        self._adopt(est, kernel, progress)

    def _adopt(self, est, kernel, progress):
        self.estimator_ = est
        if hasattr(est, "omega_"):  # the seeds
            for name in _SEED_RESULTS:
                setattr(self, name, getattr(est, name))
            what = f"chose c = {self.n_clusters_}"
            if self.sigma_ is not None:
                what += f", sigma = {self.sigma_:.4g}"
            if self.alpha_ is not None:
                what += f", alpha = {self.alpha_:.7g}"
            progress.note(what)
        else:  # an embedding and k-means
            self.labels_, self.embedding_ = est.labels_, est.embedding_
            self.inertia_, self.sigma_ = est.inertia_, est.sigma_
            self.n_clusters_ = int(est.n_clusters)
            self.alpha_ = kernel.result_alpha()

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
            self._fit_on(graph, X_arr, graph_stage, kernel, clusterer, kernel_seed, progress,
                         n_neighbors=k)  # adds its stage times
            fits[k] = (self.omega_by_n_clusters_[self.n_clusters_], self.estimator_, graph)
        # the largest Omega of each k's own choice of (sigma, alpha, c); ties go to the smaller k
        best = max(fits, key=lambda kk: (fits[kk][0], -kk))
        self._adopt(fits[best][1], kernel, progress)
        self.graph_ = fits[best][2]
        self.n_neighbors_ = int(best)
        self.graph_search_ = {int(kk): float(v[0]) for kk, v in fits.items()}
        progress.note(f"chose n_neighbors = {best} (Omega by k: " + ", ".join(
            f"{kk}: {v:.4f}" for kk, v in self.graph_search_.items()) + ")")
        return self

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

    @available_if(can_predict)
    def predict(self, X, *, return_confidence=False):
        """Labels (and optionally confidences) of unseen points, without refitting.

        Available where the kernel has an out-of-sample rule for the clusterer's reading
        (`KernelStage.predicts_with`): ``ConsistencyStage`` + ``ConsistencySeeds`` fitted on an
        array with a Euclidean graph, the papers' rule (`ConsistencyClustering.predict`):
        w_j = exp(-||x - x_j||^2 / (2 sigma_^2)) on the new point's nearest training points
        (the graph stage's ``n_neighbors``, 10 for ensembles and epsilon graphs), whatever
        graph the model was fitted on; ``AHKStage`` or ``NJWStage`` + ``SpectralKMeans``: the
        Nystrom extension of the spectral embedding on the same neighbours and weights, then
        the nearest k-means centroid (`AHKClustering.predict`, `SpectralClustering.predict`;
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
        X = check_points(X, min_samples=1)
        n_feat = getattr(self, "n_features_in_", None)
        if n_feat is None:
            raise ValueError("this pipeline was fitted on a Graph, so it has no coordinates to "
                             "find the neighbours of new points: fit it on the data array.")
        if X.shape[1] != n_feat:
            raise ValueError(f"X has {X.shape[1]} features, but Pipeline is expecting {n_feat} "
                             "features as input (the number it was fitted with).")
        if not hasattr(self, "omega_"):
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
    def save(self, path):
        """Write the fitted pipeline to `path`: one .npz of arrays + JSON metadata, no pickle.

        The file holds the stages' parameters, the fitted arrays, and the fitted estimator's
        own file (embedded) when the pipeline can `predict`. The graph is not stored. Written to a
        temporary file first, then renamed: an error leaves nothing.

        Returns
        -------
        pathlib.Path
        """
        from ._pipeline_io import save_pipeline

        check_is_fitted(self)
        return save_pipeline(self, path)

    @classmethod
    def load(cls, path):
        """Read a pipeline written by `save` (``np.load(..., allow_pickle=False)``).

        Raises
        ------
        ValueError
            If the file is damaged, is not a graphclust pipeline, or has another format version.
        """
        from ._pipeline_io import load_pipeline

        return load_pipeline(cls, path)
