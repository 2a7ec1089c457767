"""`ConsistencyClustering` (Breitenbach & Grudic): the estimator, its input, its predict.

The method reads the local-and-global-consistency kernel U = beta (I - alpha S)^-1 (Zhou et al.)
column by column (`graphclust.cluster.consistency_path` holds the formulas: seeds, labels,
inlierness, Omega); `seed_search` (``_search.py``) chooses sigma, alpha and c; this module
builds the graph from the input, validates the parameters, keeps the fitted state and places
unseen points. Persistence is in ``_consistency_io.py``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin

from .._progress import Progress
from ..threads import limit_threads
from .._validation import (
    check_flag,
    check_int,
    check_neighbors,
    check_option,
    check_points,
    check_random_state,
    check_real,
    check_symmetric_adjacency,
    float_sequence,
    warn_feature_scales,
)
from ..graphs import GRAPH_TYPES, Graph, affinity, default_sigma, graph_builder, join_components
from ._common import component_labels
from ._consistency_criterion import (OMEGA_ATTRS, STABILITY_ATTRS, ScanReportMixin,
                                    check_criterion_params, fit_stability, resolve_criterion,
                                    seed_kernel_params)
from ._consistency_predict import SeedPredictMixin, set_predict_state
from ._search import (
    DEFAULT_ALPHAS,
    DEFAULT_SIGMA_FACTORS,
    ConsistencyFamily,
    SpectralFamily,
    probe_row_order,
    seed_search,
)

__all__ = ["ConsistencyClustering", "ConsistencyWarning"]

#: Kernels the seeds can read: the papers' U, or a spectral kernel with its constant part
#: (finite weight at lambda = 0).
SEED_KERNELS = ("consistency", "ahk", "heat", "commute")


class ConsistencyWarning(UserWarning):
    """A documented fallback of consistency clustering was taken (isolated vertices, components)."""


def _join_graph_components(graph, X):
    """Add the exact shortest edges between the connected components of a Graph of points X."""
    n_before = graph.n_components
    joined = join_components(graph, X)
    warnings.warn(
        f"the {graph.provenance.get('builder', 'graph')} of the data has {n_before} connected "
        f"components; joined them by the {joined.provenance['joined_edges']} shortest edges "
        "between components "
        f"(join_components=False clusters the split graph as is).",
        ConsistencyWarning,
        stacklevel=5,  # the caller of fit
    )
    return joined


class ConsistencyClustering(SeedPredictMixin, ScanReportMixin, ClusterMixin, BaseEstimator):
    """Clustering through ranking on manifolds (Breitenbach & Grudic), matrix-free.

    Two criteria choose the number of clusters c (`criterion`):

    - ``"stability"`` (the default when c is chosen, ``n_clusters="auto"``, from points):
      the Markov stability of the consistency walk, delegated to `StabilityClustering`: a kNN
      graph with per-point scales (UMAP's fuzzy union), fine Leiden partitions merged by the
      exact stability gains of the resolvent walk ``R_alpha = (1 - alpha)(I - alpha P)^-1``
      (the papers' kernel read through its flows between clusters) at every walk length, and
      c and alpha chosen by metastability, else persistence across seeds and scales, else a
      warning. Right on real data where Omega is not (``docs/model_selection.md``: Omega grows
      with c; the measured table).
    - ``"omega"`` (the papers'; the default when c is given, and for a `Graph` or a precomputed
      W): builds a proximity graph, weights its edges w_ij = exp(-d_ij^2 / (2 sigma^2)), and
      reads the columns of the consistency kernel U = beta (I - alpha S)^-1
      (S = D^-1/2 W D^-1/2, beta = 1 - alpha): it picks c seed points (the most representative
      points), labels every point by its most similar seed, ranks global and within-cluster
      outliers, and chooses sigma, alpha and c by maximising Omega (mean distance between
      clusters minus mean distance within clusters, in the distance D_M = 1 - cosine of the
      columns of U). U is never formed: everything is a few conjugate-gradient block solves
      deflated by the top eigenpairs of S, one eigensolve per sigma. Pass it by name to
      reproduce the papers (``scripts/reproduce_consistency.py``).

    With c given (an integer), ``"auto"`` also uses ``"stability"``: exactly c clusters read
    from `StabilityClustering`'s hierarchy (`labels_at`'s rule; more than its consensus
    pieces is out of reach, with a warning). Measured with the true c on the seven real
    development sets it has the better NMI on all seven against Omega at that c, 10 to 80
    times faster (docs/model_selection.md). The papers' seeds at a given c, with sigma and
    alpha searched by Omega, are ``criterion="omega"`` (exact recovery of three spirals at
    c = 3, where the hierarchy gets NMI 0.75).

    Parameters only one criterion reads: every parameter from `alpha` to `max_condition`
    below is the Omega search's (with ``criterion="auto"``, setting one selects "omega";
    with ``criterion="stability"`` it is a ValueError that names it, before any work);
    `stability_params` is the stability fit's (a ValueError with "omega"). `n_neighbors`,
    `random_state` and `verbose` serve both.

    Parameters
    ----------
    n_clusters : int or "auto", default "auto"
        c; ``"auto"`` chooses it by `criterion`.
    criterion : {"auto", "stability", "omega"}, default "auto"
        How c is chosen (above). ``"auto"``: "stability" when `fit` receives points and no
        parameter of the Omega search (`alpha` to `max_condition` below) differs from its
        default, whether c is chosen or given; "omega" otherwise (a `Graph` or precomputed W,
        or a parameter that asks for the Omega search). The one used is `criterion_`.
    stability_params : dict or None, default None
        ``criterion="stability"`` only: `StabilityClustering` parameters ``affinity``
        ("fuzzy"), ``metric`` ("euclidean"), ``n_seeds`` (3), ``n_searches`` (3),
        ``search_neighbors`` (n_neighbors), ``taus`` (2^0..2^13), ``plateau_vi`` (0.02),
        ``fine_vi_max`` (0.2), ``outlier_threshold`` (0.01), ``settle_boundaries`` (False).
    alpha : float in (0, 1) or "auto", default "auto"
        ``"auto"`` searches `alpha_grid`.
    sigma : float > 0 or "auto", default "auto"
        Gaussian width; ``"auto"`` searches ``sigma_grid * median edge length`` on the fixed edge
        set of the graph. Ignored with ``affinity="precomputed"``.
    graph : str or callable, default "knn"
        How to build the edge set from an array: a name of `graphclust.graphs.GRAPH_TYPES` that
        takes points and needs no other parameter ("knn", "mst", "pmst", "dmst"), or a callable
        that takes X and returns a `Graph`. Ignored when `fit` receives a `Graph` or a
        precomputed W.
    max_clusters : int >= 2, default 10
        Largest c of the Omega search (``"omega"`` only: the stability fit has no bound).
    affinity : None or "precomputed", default None
        ``"precomputed"``: `fit` takes a symmetric non-negative affinity matrix W used as is.
    kernel : {"consistency", "ahk", "heat", "commute"}, default "consistency"
        The kernel whose columns the seeds read: the papers' U = beta (I - alpha S)^-1, or a
        spectral kernel of the Laplacian with its constant part
        (`SpectralKernel.with_constant_part`; alpha is then not used and `predict` is not
        available: the papers' out-of-sample rule is written for U).
    kernel_params : dict or None, default None
        Spectral kernels only: ``normalization`` ("lbn"), ``gamma`` (0.01) and ``t`` (1.0), as
        in `graphclust.kernels.spectral_kernel`.
    n_neighbors : int, default 10
        Neighbours of the kNN graph, and of unseen points in `predict` (both criteria).
    sigma_grid : sequence of float, default (0.25, 0.5, 1, 2)
        Factors of the median edge length searched when ``sigma="auto"``.
    alpha_grid : sequence of float, default (0.9, 0.99, ..., 0.999999)
        Values searched when ``alpha="auto"``.
    method : {"auto", "dense", "cg", "lu"}, default "auto"
        How U is applied (`ConsistencyKernel`): ``dense`` full eigendecomposition (n <= 5000,
        exact), ``cg`` deflated CG (any n), ``lu`` one sparse LU of I - alpha S per alpha
        (pixel grids and other graphs with small separators). ``auto``: dense for n <= 1500,
        cg above.
    norms : {"auto", "exact", "estimate"}, default "auto"
        Column norms nu: exact (dense closed form, or one CG solve per column) or estimated
        (top-K spectral part + stochastic remainder). ``auto``: exact for dense, estimate for cg.
    n_eigenpairs : int or "auto", default "auto"
        Size of the deflation basis for ``cg`` (auto: 64 with estimated column norms, whose
        top-K part is exact, else 32); for a spectral kernel its rank m
        (auto: min(n - n_components, 100)).
    eigen_solver : {"auto", "lanczos", "shift-invert"}, default "auto"
        How the deflation basis of ``cg`` is computed (`ConsistencyKernel`); ``shift-invert``
        suits pixel grids, whose top eigenvalues crowd below 1.
    n_probes : int, default 32
        Random probes of the norm estimate.
    tol : float, default 1e-8
        CG relative residual per right-hand side (``||b - A x|| <= tol ||b||``) of the final
        fit at the chosen (sigma, alpha, c).
    search_tol : float, default 1e-6
        The same for the evaluations of the search (``cg`` only; dense kernels are exact).
    max_condition : float, default 2000
        ``cg`` search only: a (sigma, alpha) whose deflated CG condition number bound
        (1 + alpha) / (1 - alpha lambda_K) exceeds it is not evaluated (NaN in `omega_`, listed
        in `search_skipped_`). lambda_K, the smallest eigenvalue of the deflation basis, bounds
        the rest of the spectrum of S; near-disconnected graphs (small sigma) with alpha -> 1
        would otherwise need thousands of CG iterations per solve. A fixed alpha is always
        evaluated.
    join_components : bool, default True
        When `fit` builds the graph from an array and it falls apart into several connected
        components (common for kNN graphs of real data), join them by the exact shortest edges
        between components (Boruvka rounds, as the MST builders do) with a
        `ConsistencyWarning`. False clusters the split graph as is (see Notes). Graphs and
        matrices given to `fit` are never modified.
    outlier_threshold : float in [0, 1], default 0.01
        ``predict(X, return_outlier_score=True)`` scores below it mean "outside what the model
        knows" (both criteria; the score is a p-value among the training points, so about 1 %
        of new points drawn like the training data fall below 0.01).
    random_state : int, Generator or None
        Seeds the Lanczos start vectors, the probes, and the graph builder (``"omega"``); the
        kNN search, the Leiden runs and the eigensolver (``"stability"``). None draws fresh
        seeds: results may then differ between runs.
    verbose : bool, default False
        Progress lines on stderr for each step that can take seconds
        (`graphclust._progress.Progress`). ``"omega"``: the graph, and for each sigma the
        spectrum, the column norms and each alpha's seeds and Omega; then the final fit.
        ``"stability"``: the kNN lists, the fine partitions, the flows of every walk length, the
        chosen c and tau.

    Attributes
    ----------
    labels_ : int array (n,)
        Cluster of each point in 0..n_clusters_-1; with ``"omega"``, -1 only for points whose
        connected component of the graph holds no seed (see Notes).
    n_clusters_ : int
    criterion_ : {"stability", "omega"}
        The criterion used (`criterion` with "auto" resolved).
    alpha_ : float or None
        ``"omega"``: the alpha of U chosen (None for a spectral `kernel`). ``"stability"``: the
        chosen walk length as alpha = tau / (1 + tau) of the same resolvent (None when one
        cluster is returned).
    sigma_ : float or None
        ``"omega"``: the Gaussian width (None for precomputed W). ``"stability"``: None, the
        graph has one scale per point (``stability_.sigma_``, an array).
    representatives_ : int array (n_clusters_,)
        One point per cluster; cluster j is the cluster of representatives_[j].
        ``"omega"``: the seeds in selection order (the papers'). ``"stability"``: each
        cluster's point of largest within-cluster degree.
    timings_ : dict
        Seconds per stage (``"omega"``: graph, spectrum, norms, search, final;
        ``"stability"``: `StabilityClustering.timings_`).
    n_features_in_ : int (array input only)

    stability_ : StabilityClustering (``criterion="stability"`` only, as the two below)
        The fitted estimator that did the work: ``scan_`` (c, stability, VI per walk length),
        ``metastability_``, ``fine_labels_``, ``training_scores_``.
    tau_ : float or None
        Chosen mean walk length tau = alpha_ / (1 - alpha_).
    selection_rule_ : str
        Which tier chose the partition (`StabilityClustering`: "metastable", "plateau",
        "fine", "multiscale", "components", "whole components", "mutual", "density tree",
        "none" or "n_clusters"); "fine" and "none" come with a `StabilityWarning`.

    inlierness_ : array (n,) (``criterion="omega"`` only, as every attribute below)
        o = C 1 / n; ascending order ranks global outliers first (`outliers()`).
    cluster_inlierness_ : array (n,)
        Mean cosine C[i, p] of i to the points p of its cluster (i included); ascending order
        ranks within-cluster outliers first. NaN for label -1.
    omega_ : array (n_sigma, n_alpha, n_c)
        The whole searched criterion surface; axes in `omega_sigmas_`, `omega_alphas_`,
        `omega_n_clusters_`. NaN where fewer than two clusters are nonempty.
    omega_valid_ : bool array, shape of `omega_`
        False where that c left a connected component of the graph without a seed (such
        points would be labelled -1); the search never chooses those.
    omega_by_n_clusters_ : dict {c: best Omega over (sigma, alpha)}
    between_ : array (c, c)
        Mean D_M between (off-diagonal) and within (diagonal) the final clusters.
    column_norms_ : ColumnNorms
        nu of the final fit with its achieved (estimated) error.
    search_skipped_, kernel_method_
        The (sigma, alpha) the search skipped (`max_condition`); how U was applied.

    Notes
    -----
    Exact vs estimated: with ``method="dense"`` every quantity is exact to rounding; with
    ``method="cg"`` they meet the CG tolerance `tol`, and with ``norms="estimate"`` the column
    norms carry the estimated error reported in ``column_norms_``.

    Degenerate graphs: a graph in several connected components is clustered as is. U is block
    diagonal, so between components D_M = 1 exactly, and points in a component that receives
    no seed cannot be compared to any seed: they get label -1 and a `ConsistencyWarning`. The
    search never chooses a c that leaves a component without a seed (`omega_valid_`), so with
    ``n_clusters="auto"`` every point is labelled whenever the graph has at most
    `max_clusters` components. Note that with alpha -> 1 the within-component distances vanish,
    so Omega -> 1 at c = number of components: a kNN graph that splits the data favours that c.
    Isolated vertices (zero degree, e.g. when every edge weight underflows for a small sigma)
    are components of one point: U e_i = beta e_i, their inlierness is 1/n, the smallest
    possible; they always trigger a warning. Duplicate points are neighbours at distance 0 with
    weight 1 and need no special care.

    Examples
    --------
    >>> import graphclust as gc
    >>> from graphclust.datasets import two_moons
    >>> X, y = two_moons(400, noise=0.05, random_state=0)
    >>> model = gc.ConsistencyClustering(random_state=0).fit(X)
    >>> model.criterion_, model.n_clusters_, gc.metrics.clustering_error(y, model.labels_)
    ('stability', 2, 0.0)
    >>> labels, score = model.predict(X[:2] + 20.0, return_outlier_score=True)
    >>> bool((score < model.stability_.outlier_threshold).all())   # far from all training data
    True
    >>> papers = gc.ConsistencyClustering(criterion="omega", max_clusters=4,
    ...                                   random_state=0).fit(X)
    >>> papers.n_clusters_, gc.metrics.clustering_error(y, papers.labels_)
    (2, 0.0)

    References
    ----------
    M. Breitenbach, G. Z. Grudic, "Clustering through ranking on manifolds", ICML 2005.
    D. Zhou et al., "Learning with local and global consistency", NIPS 2003.
    """

    def __init__(
        self,
        n_clusters="auto",
        *,
        criterion="auto",
        alpha="auto",
        sigma="auto",
        graph="knn",
        max_clusters=10,
        affinity=None,
        kernel="consistency",
        kernel_params=None,
        n_neighbors=10,
        sigma_grid=DEFAULT_SIGMA_FACTORS,
        alpha_grid=DEFAULT_ALPHAS,
        method="auto",
        norms="auto",
        n_eigenpairs="auto",
        eigen_solver="auto",
        n_probes=32,
        tol=1e-8,
        search_tol=1e-6,
        join_components=True,
        max_condition=2000.0,
        stability_params=None,
        outlier_threshold=0.01,
        random_state=None,
        verbose=False,
    ):
        self.n_clusters = n_clusters
        self.criterion = criterion
        self.stability_params = stability_params
        self.alpha = alpha
        self.sigma = sigma
        self.graph = graph
        self.max_clusters = max_clusters
        self.affinity = affinity
        self.kernel = kernel
        self.kernel_params = kernel_params
        self.n_neighbors = n_neighbors
        self.sigma_grid = sigma_grid
        self.alpha_grid = alpha_grid
        self.method = method
        self.norms = norms
        self.n_eigenpairs = n_eigenpairs
        self.eigen_solver = eigen_solver
        self.n_probes = n_probes
        self.tol = tol
        self.search_tol = search_tol
        self.join_components = join_components
        self.max_condition = max_condition
        self.outlier_threshold = outlier_threshold
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:  # CSR input (text, stability_params={"metric": "cosine"}) goes to the stability fit
            tags.input_tags.sparse = resolve_criterion(self, None) == "stability"
        except (TypeError, ValueError):
            pass
        return tags

    # ------------------------------------------------------------------ validation
    def _check_params(self, n, for_omega=True):
        if self.affinity is not None:
            check_option(self.affinity, "affinity", {"precomputed"})
        check_option(self.method, "method", {"auto", "dense", "cg", "lu"})
        check_option(self.norms, "norms", {"auto", "exact", "estimate"})
        check_option(self.eigen_solver, "eigen_solver", {"auto", "lanczos", "shift-invert"})
        if not callable(self.graph):
            check_option(self.graph, "graph", {t.name for t in GRAPH_TYPES.values()
                                               if t.input == "points" and not t.required})
        check_option(self.kernel, "kernel", set(SEED_KERNELS))
        seed_kernel_params(self.kernel, self.kernel_params)
        if self.n_eigenpairs != "auto":
            check_int(self.n_eigenpairs, "n_eigenpairs", low=1, high=n - 1)
        check_flag(self.join_components, "join_components")
        check_flag(self.verbose, "verbose", levels=True)
        check_int(self.n_neighbors, "n_neighbors", low=1)
        check_int(self.n_probes, "n_probes", low=2)
        check_real(self.tol, "tol", low=0, high=1, low_inclusive=False, high_inclusive=False)
        check_real(self.search_tol, "search_tol", low=0, high=1, low_inclusive=False,
                   high_inclusive=False)
        check_real(self.max_condition, "max_condition", low=1, low_inclusive=False)
        check_real(self.outlier_threshold, "outlier_threshold", low=0, high=1)
        if self.n_clusters == "auto":
            max_c = check_int(self.max_clusters, "max_clusters", low=2)
            if max_c > n and for_omega:  # the stability fit does not read max_clusters
                raise ValueError(
                    f"max_clusters must satisfy 2 <= max_clusters <= n_samples = {n}; got {max_c}."
                )
            cs = list(range(2, max_c + 1))
        else:
            if isinstance(self.n_clusters, str):
                raise ValueError(f"n_clusters must be 'auto' or an integer; got {self.n_clusters!r}.")
            c = check_int(self.n_clusters, "n_clusters", low=1)
            if c > n:
                raise ValueError(
                    f"n_clusters must satisfy 1 <= n_clusters <= n_samples = {n}; got {c}."
                )
            cs = [c]
        if isinstance(self.alpha, str):
            if self.alpha != "auto":
                raise ValueError(f"alpha must be 'auto' or a number in (0, 1); got {self.alpha!r}.")
            grid = float_sequence(self.alpha_grid, "alpha_grid")
            if grid.size == 0:
                raise ValueError("alpha_grid is empty; give at least one alpha in (0, 1).")
            alphas = [
                check_real(a, "alpha_grid entries", low=0, high=1, low_inclusive=False,
                           high_inclusive=False)
                for a in grid
            ]
        else:
            alphas = [
                check_real(self.alpha, "alpha", low=0, high=1, low_inclusive=False,
                           high_inclusive=False)
            ]
        if isinstance(self.sigma, str):
            if self.sigma != "auto":
                raise ValueError(f"sigma must be 'auto' or a number > 0; got {self.sigma!r}.")
            grid = float_sequence(self.sigma_grid, "sigma_grid")
            if grid.size == 0:
                raise ValueError("sigma_grid is empty; give at least one factor > 0.")
            factors = [check_real(s, "sigma_grid entries", low=0, low_inclusive=False) for s in grid]
            sigma_spec = ("grid", factors)
        else:
            sigma_spec = ("fixed", [check_real(self.sigma, "sigma", low=0, low_inclusive=False)])
        searched = len(alphas) > 1 or (sigma_spec[0] == "grid" and len(sigma_spec[1]) > 1)
        if for_omega and cs == [1] and searched:
            raise ValueError(
                "n_clusters=1 leaves nothing for the criterion Omega to compare (it needs two "
                "clusters): give alpha and sigma as numbers, or n_clusters >= 2."
            )
        return cs, alphas, sigma_spec

    def _prepare_input(self, X, progress):
        """Return (graph or None, W-builder over sigma values, n, coordinates or None)."""
        if self.affinity == "precomputed":
            if isinstance(X, Graph):
                raise TypeError("affinity='precomputed' takes a matrix W, not a Graph.")
            W = check_symmetric_adjacency(X, name="W")
            if W.shape[0] < 2:
                raise ValueError(f"W has {W.shape[0]} node(s); at least 2 are needed.")
            return None, W, W.shape[0], None
        if isinstance(X, Graph):
            if X.n_nodes < 2:
                raise ValueError(f"the graph has {X.n_nodes} node(s); at least 2 are needed.")
            return X, None, X.n_nodes, None
        X = check_points(X, min_samples=2)
        n = X.shape[0]
        k = check_neighbors(self, n, low=1)
        self._check_params(n)  # every parameter, before the graph is built
        check_random_state(self.random_state)
        if not callable(self.graph):  # a builder of the user's own chooses its metric
            warn_feature_scales(X, stacklevel=5)
        t0 = time.perf_counter()
        builder = graph_builder(self.graph, n_neighbors=k, random_state=self.random_state)
        what = self.graph if isinstance(self.graph, str) else "custom"
        with progress.step(f"{what} graph of {n} points in {X.shape[1]} dimensions"):
            graph = builder(X)
            if not isinstance(graph, Graph):
                raise TypeError(f"graph builder returned {type(graph).__name__}; expected a Graph.")
            if self.join_components and graph.n_components > 1:
                graph = _join_graph_components(graph, X)
        self.timings_["graph"] = time.perf_counter() - t0
        return graph, None, n, X

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None):
        """Cluster `X`: an (n, d) array, a `Graph`, or (``affinity="precomputed"``) a matrix W.

        Returns
        -------
        self
        """
        with limit_threads():
            return self._fit(X)

    def _fit(self, X):
        for name in (*STABILITY_ATTRS, *OMEGA_ATTRS):
            if name in self.__dict__:
                delattr(self, name)
        progress = Progress(bool(self.verbose))
        criterion = resolve_criterion(self, X)
        if criterion == "stability":
            return self._fit_stability(X, progress)
        check_criterion_params(self, "omega", X)
        self.criterion_ = "omega"
        self.timings_ = {"graph": 0.0, "spectrum": 0.0, "norms": 0.0, "search": 0.0, "final": 0.0}
        graph, W_pre, n, X_arr = self._prepare_input(X, progress)
        cs, alphas, sigma_spec = self._check_params(n)
        rng = check_random_state(self.random_state)
        eig_seed = int(rng.integers(2**31 - 1))
        probe_seed = int(rng.integers(2**31 - 1))
        if W_pre is not None:
            sigmas = [None]
        elif sigma_spec[0] == "grid":
            base = default_sigma(graph)
            sigmas = [base * f for f in sigma_spec[1]]
        else:
            sigmas = sigma_spec[1]
        self._degenerate_seen = set()
        self._graph_summary = (1, 0)

        def affinity_of(sigma):
            return W_pre if sigma is None else affinity(graph, sigma)

        if self.kernel == "consistency":
            # probes drawn in an order of the data, not of its rows: the estimated norms, and
            # every choice made from them, follow a permutation of the input
            order_x = None if X_arr is None else probe_row_order(X=X_arr)

            def make_family(W, comp, n_comp):
                return ConsistencyFamily(
                    W, alphas, method=self.method, n_eigenpairs=self._eigenpairs(W.shape[0]),
                    eigen_solver=self.eigen_solver, tol=self.tol, search_tol=self.search_tol,
                    norms=self.norms, n_probes=self.n_probes, probe_seed=probe_seed,
                    max_condition=self.max_condition, random_state=eig_seed,
                    probe_order=order_x if order_x is not None else probe_row_order(W=W))
            values, parameter, operator = alphas, "alpha", "S"
        else:
            kp = seed_kernel_params(self.kernel, self.kernel_params)

            def make_family(W, comp, n_comp):
                return SpectralFamily(W, kind=self.kernel, n_eigenpairs=self.n_eigenpairs,
                                      n_components=n_comp, random_state=eig_seed,
                                      name="n_eigenpairs", **kp)
            values, parameter, operator = [None], None, f"the {self.kernel} kernel"
        found = seed_search(affinity_of, sigmas, make_family, values, cs,
                            components_of=self._components, progress=progress,
                            timings=self.timings_, parameter=parameter, operator=operator,
                            final_tol=self.tol if self.kernel == "consistency" else None)
        self._set_result(found, W_pre, X_arr)
        if X_arr is not None and self.n_clusters_ > 1 and not np.ptp(X_arr, axis=0).any():
            warnings.warn(  # Omega grows with c: it cannot say "one cluster" on its own
                f"all {n} points are identical: nothing separates them, so the "
                f"{self.n_clusters_} clusters found are arbitrary (criterion='stability' "
                f"returns one cluster with a warning).", ConsistencyWarning, stacklevel=3)
        return self

    def _fit_stability(self, X, progress):
        """``criterion="stability"``: every parameter checked, then `StabilityClustering`."""
        if self.affinity == "precomputed" or isinstance(X, Graph):
            check_criterion_params(self, "stability", X)  # refuses: it needs points
        # NaN passes on: `StabilityClustering` reads it as a binary table's missing answers
        # and refuses it anywhere else, with the same message
        X = check_points(X, accept_sparse=True, min_samples=2, allow_nan=not sp.issparse(X))
        self._check_params(X.shape[0], for_omega=False)  # every value, then which apply
        check_criterion_params(self, "stability", X)
        check_random_state(self.random_state)
        self._fit_kind = "array"
        return fit_stability(self, X, progress)

    def _eigenpairs(self, n):
        """K of the consistency kernel: "auto" is 64 when the column norms are estimated.

        The top-K part of nu is exact and only the remainder is sampled; measured with c given
        (docs/consistency.md), K = 64 instead of 32 cuts the labels moved by another probe draw
        from 1.5 % to 0.4 % (three moons, 2 400) and from 7.9 % to 2.9 % (USPS, 9 298), the
        second fit faster (better deflated CG). Dense and LU kernels ignore it.
        """
        if self.n_eigenpairs != "auto" or self.norms == "exact" or self.method in ("dense", "lu"):
            return self.n_eigenpairs
        return max(1, min(64, n - 2))

    def _set_result(self, found, W_pre, X_arr):
        """The fitted attributes and the small model `predict` needs, from a `SeedSearch`."""
        c, path = found.n_clusters, found.path
        labels = path["labels"][c]
        if (labels < 0).any():
            n_comp, n_iso = self._graph_summary
            warnings.warn(
                f"the affinity graph has {n_comp} connected components ({n_iso} isolated "
                f"vertices); {int((labels < 0).sum())} point(s) lie in components that received "
                f"no seed and are labelled -1. Use more neighbours (a connected graph) or more "
                f"clusters.",
                ConsistencyWarning,
                stacklevel=4,  # the caller of fit
            )
        self.labels_ = labels
        self.n_clusters_ = int(c)
        self.alpha_ = None if found.value is None else float(found.value)
        self.sigma_ = None if found.sigma is None else float(found.sigma)
        self.representatives_ = path["seeds"][:c].copy()
        self.inlierness_ = path["inlierness"]
        self.cluster_inlierness_ = path["cluster_inlierness"]
        self.between_ = path["between"][c]
        self.omega_ = found.omega
        self.omega_valid_ = found.valid
        self.omega_sigmas_ = np.array([np.nan if s is None else s for s in found.sigmas])
        self.omega_alphas_ = np.array([np.nan if a is None else a for a in found.values])
        self.omega_n_clusters_ = np.array(found.cs)
        self.omega_by_n_clusters_ = found.best_by_n_clusters
        self.search_skipped_ = found.skipped
        self.column_norms_ = found.norms
        self.kernel_method_ = found.family.method
        self._fit_kind = "precomputed" if W_pre is not None else (
            "array" if X_arr is not None else "graph")
        self._X_fit = X_arr
        if X_arr is not None:
            self.n_features_in_ = X_arr.shape[1]
        # the small model that predict needs: theta -> F = theta^T V[:, seeds], and the
        # training points' out-of-sample inlierness for the outlier score
        if self.kernel == "consistency":
            set_predict_state(self, found.kernel, path, c, found.norms.nu, X_arr)
        else:  # the papers' rule is written for U; a spectral kernel has no predict here
            self._predict_H = self._degrees = self._nn = None
            self._outlier_r = self._outlier_ref = None

    def _components(self, W, warn):
        """Connected-component labels of W (None when connected); warns about isolated vertices."""
        n_comp, comp = component_labels(W)
        if n_comp == 1:
            return None
        W = sp.csr_matrix(W)
        deg = np.asarray(W.sum(axis=1)).ravel()
        n_iso = int((deg == 0).sum())
        self._graph_summary = (n_comp, n_iso)
        if warn and n_iso and n_iso not in self._degenerate_seen:
            self._degenerate_seen.add(n_iso)
            warnings.warn(
                f"the affinity graph has {n_iso} isolated vertex/vertices (zero degree, e.g. all "
                f"their edge weights underflow): for them U e_i = beta e_i, their inlierness is "
                f"1/n (the smallest possible) and they are labelled -1 unless chosen as a seed.",
                ConsistencyWarning,
                stacklevel=5,  # the caller of fit
            )
        return comp

    # ------------------------------------------------------------------ results
    def outliers(self, n=10, *, within_cluster=False):
        """Indices of the `n` worst global (or within-cluster) outliers, worst first.

        `n` is an integer >= 0; more than the number of points returns them all.
        """
        self._check_fitted()
        n = check_int(n, "n", low=0)
        if self.criterion_ == "stability":
            raise ValueError(
                "outliers() ranks the training points by the papers' inlierness, which "
                "criterion='omega' computes; this model was fitted with criterion='stability': "
                "use predict(X, return_outlier_score=True) to score points against the model, "
                "or refit with criterion='omega'.")
        score = self.cluster_inlierness_ if within_cluster else self.inlierness_
        score = np.where(np.isnan(score), np.inf, score)
        return np.argsort(score, kind="stable")[:n]

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                "This ConsistencyClustering instance is not fitted yet; call fit(X) first."
            )

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the fitted model to `path` (.npz of arrays + JSON metadata; no pickle).

        Load it back with `ConsistencyClustering.load`. A ``criterion="stability"`` model
        stores its `StabilityClustering` (``stability_``) inside the file; a
        ``criterion="omega"`` model stores the seeds' state `predict` needs.

        Returns
        -------
        pathlib.Path
        """
        from ._consistency_io import save_consistency

        self._check_fitted()
        return save_consistency(self, path)

    @classmethod
    def load(cls, path):
        """Read a model written by `save` (``np.load(..., allow_pickle=False)``).

        Files written before `criterion` existed were fitted by Omega: they load as
        ``criterion="omega"`` models, with ``criterion="omega"`` in their parameters so that a
        refit reproduces them.

        Raises
        ------
        ValueError
            If the file is damaged, is not a graphclust consistency model, or was written by
            another format version.
        """
        from ._consistency_io import load_consistency

        return load_consistency(cls, path)
