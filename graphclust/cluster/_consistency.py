"""Consistency clustering (Breitenbach & Grudic): seeds, labels, outliers, model selection, predict.

The method reads the local-and-global-consistency kernel U = beta (I - alpha S)^-1 (Zhou et al.)
column by column: column j of U is the "activation" of every point when j alone is labelled. With
nu_j = ||U e_j||, V = U N^-1 and C = V^T V (cosines of the columns of U), D_M = 1 - C:

- inlierness o = C 1 / n (small = global outlier);
- seeds: l_1 = argmax o, then l_(m+1) = argmax of o * prod_(t <= m) D_M[:, l_t];
- labels y_i = argmax_j V[i, l_j];
- criterion Omega(c) = mean between-cluster D_M - mean within-cluster D_M, maximised over sigma
  and alpha for each c, then over c.

This module computes all of it with a few applications of U to thin blocks
(`graphclust.kernels.ConsistencyKernel`), never forming U; `_consistency_reference.py` is the
dense transcription the tests compare against.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import BaseEstimator, ClusterMixin

from .._validation import (
    check_int,
    check_option,
    check_points,
    check_random_state,
    check_real,
    check_symmetric_adjacency,
)
from .._persistence import read_model_file, write_model_file
from .._progress import Progress
from ..graphs import Graph, affinity, default_sigma, knn_graph
from ..kernels import ConsistencyKernel

__all__ = ["ConsistencyClustering", "ConsistencyWarning", "consistency_path"]

#: Version of the file format written by `ConsistencyClustering.save`.
MODEL_FORMAT = "graphclust.ConsistencyClustering"
MODEL_FORMAT_VERSION = 1

#: Default search grids (chosen a priori, not tuned on any reported data set):
#: sigma in octaves around the median edge length, alpha = 1 - 10^-t for t = 1..6.
DEFAULT_SIGMA_FACTORS = (0.25, 0.5, 1.0, 2.0)
DEFAULT_ALPHAS = (0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)


class ConsistencyWarning(UserWarning):
    """A documented fallback of consistency clustering was taken (isolated vertices, components)."""


# ---------------------------------------------------------------------------------------------
# The computational core, shared by the search and the final fit.
# ---------------------------------------------------------------------------------------------


def _noise_mask(comp, seeds):
    """Points whose connected component holds none of `seeds` (they cannot be labelled)."""
    if comp is None:
        return None
    return ~np.isin(comp, comp[seeds])


def _labels_from(V_seeds, c, comp, seeds):
    labels = np.argmax(V_seeds[:, :c], axis=1).astype(np.int64)
    noise = _noise_mask(comp, seeds[:c])
    if noise is not None and noise.any():
        labels[noise] = -1
    return labels


def _omega_from_gram(G, sizes):
    """Omega and the between-cluster mean-D_M matrix from G_jk = 1_pj^T C 1_pk and |p_j|."""
    c = sizes.size
    between = np.full((c, c), np.nan)
    ne = np.flatnonzero(sizes > 0)
    if ne.size:
        between[np.ix_(ne, ne)] = 1.0 - G[np.ix_(ne, ne)] / np.outer(sizes[ne], sizes[ne])
    if ne.size < 2:
        return float("nan"), between
    B = between[np.ix_(ne, ne)]
    off = ~np.eye(ne.size, dtype=bool)
    return float(B[off].mean() - np.diag(B).mean()), between


def consistency_path(kernel, nu, n_clusters_list, *, components=None, cluster_inlierness_for=None):
    """Seeds, labels and Omega for several numbers of clusters from one kernel (matrix-free).

    Parameters
    ----------
    kernel : ConsistencyKernel
        U at one (sigma, alpha).
    nu : array (n,)
        Column norms ||U e_j|| (exact or estimated, see `ConsistencyKernel.column_norms`).
    n_clusters_list : sequence of int
        The values of c to evaluate; seeds are nested (the greedy selection for c + 1 extends the
        one for c), so one run of max(c) greedy steps serves them all.
    components : array (n,), optional
        Connected-component label of each node; points in a component without a seed get
        label -1 (noise).
    cluster_inlierness_for : int, optional
        Also return the within-cluster inlierness for this c (one more block solve).

    Returns
    -------
    dict with ``inlierness`` (o), ``seeds`` (max(c),), ``V_seeds`` (n, max(c)) = U[:, seeds] /
    nu[seeds], ``labels`` {c: labels}, ``omega`` {c: Omega}, ``between`` {c: mean D_M matrix},
    and ``cluster_inlierness`` when asked.

    Notes
    -----
    The seeds' own norms nu_l are taken from their computed columns U e_l (exact to the CG
    tolerance), so with estimated norms the labels y_i = argmax_j U[i, l_j] / nu_(l_j) carry no
    estimation error; the estimate still enters o, C e_l and Omega through the other nu_i.

    Work, with b-column applications of U written U[b]: o = N^-1 U(U(N^-1 1)) / n (2 x U[1]);
    each seed but the last needs U e_l and U(U e_l) (2 x U[1], sequential), the last U e_l only;
    Omega for every c at once from M = U N^-1 P_atoms (one U[a]), where the "atoms" group points
    with the same label for every c (a is small: at most the sum of the c values), and
    G_c = A_c^T (M^T M) A_c aggregates atoms into the clusters of c.
    """
    n = kernel.n
    cs = sorted({int(c) for c in n_clusters_list})
    c_max = cs[-1]
    inv_nu = 1.0 / nu
    o = inv_nu * kernel.apply(kernel.apply(inv_nu)) / n
    seeds = np.empty(c_max, dtype=np.int64)
    U_seeds = np.empty((n, c_max))
    O = o.copy()
    seeds[0] = int(np.argmax(O))
    nu_seeds = np.empty(c_max)
    for m in range(c_max):
        l = seeds[m]
        e = np.zeros(n)
        e[l] = 1.0
        U_seeds[:, m] = kernel.apply(e)
        # the seed's own norm is known exactly from its column (nu may be an estimate)
        nu_seeds[m] = np.linalg.norm(U_seeds[:, m])
        if m + 1 < c_max:
            Ce = inv_nu * kernel.apply(U_seeds[:, m]) / nu_seeds[m]  # C e_l
            O = O * (1.0 - Ce)
            seeds[m + 1] = int(np.argmax(O))
    V_seeds = U_seeds / nu_seeds[None, :]
    labels = {c: _labels_from(V_seeds, c, components, seeds) for c in cs}

    # Omega for every c from one Gram matrix over atoms.
    omega, between = {}, {}
    L = np.stack([labels[c] for c in cs], axis=1)
    atoms, atom_of = np.unique(L, axis=0, return_inverse=True)
    atom_of = np.asarray(atom_of).ravel()
    real = np.flatnonzero((atoms >= 0).any(axis=1))  # atoms that are not noise at every c
    if real.size > sum(cs):  # many atoms: one block per c is cheaper
        for c in cs:
            y = labels[c]
            ok = np.flatnonzero(y >= 0)
            P = np.zeros((n, c))
            P[ok, y[ok]] = inv_nu[ok]
            M = kernel.apply(P)
            sizes = np.bincount(y[ok], minlength=c).astype(float)
            omega[c], between[c] = _omega_from_gram(M.T @ M, sizes)
    elif real.size:
        a_index = np.full(atoms.shape[0], -1)
        a_index[real] = np.arange(real.size)
        rows = np.flatnonzero(a_index[atom_of] >= 0)
        P = np.zeros((n, real.size))
        P[rows, a_index[atom_of[rows]]] = inv_nu[rows]
        M = kernel.apply(P)
        G_atoms = M.T @ M
        sizes_atoms = np.bincount(a_index[atom_of[rows]], minlength=real.size).astype(float)
        for ci, c in enumerate(cs):
            lab = atoms[real, ci]
            A = np.zeros((real.size, c))
            ok = lab >= 0
            A[np.flatnonzero(ok), lab[ok]] = 1.0
            omega[c], between[c] = _omega_from_gram(A.T @ G_atoms @ A, A.T @ sizes_atoms)
    else:  # every point is noise at every c
        for c in cs:
            omega[c], between[c] = float("nan"), np.full((c, c), np.nan)
    out = {
        "inlierness": o,
        "seeds": seeds,
        "V_seeds": V_seeds,
        "labels": labels,
        "omega": omega,
        "between": between,
    }
    if cluster_inlierness_for is not None:
        c = int(cluster_inlierness_for)
        y = labels[c]
        lab_ok = y >= 0
        P = np.zeros((n, c))
        P[np.flatnonzero(lab_ok), y[lab_ok]] = inv_nu[lab_ok]
        Q = kernel.apply(kernel.apply(P))  # U^2 N^-1 P
        sizes = np.bincount(y[lab_ok], minlength=c).astype(float)
        cin = np.full(n, np.nan)
        idx = np.flatnonzero(lab_ok)
        cin[idx] = Q[idx, y[idx]] * inv_nu[idx] / sizes[y[idx]]
        out["cluster_inlierness"] = cin
    return out


def _best_by_c(omega, valid, cs):
    out = {}
    for i, c in enumerate(cs):
        vals = np.where(valid[:, :, i] & np.isfinite(omega[:, :, i]), omega[:, :, i], -np.inf)
        best = float(vals.max())
        out[int(c)] = best if np.isfinite(best) else float("nan")
    return out


# ---------------------------------------------------------------------------------------------
# The estimator.
# ---------------------------------------------------------------------------------------------


def _neighbour_index(X, n_neighbors):
    """Exact nearest-neighbour index of the training points, for `predict` (None without X).

    Built in `fit` (and `load`) so that `predict` leaves the estimator unchanged.
    """
    if X is None:
        return None
    from sklearn.neighbors import NearestNeighbors

    return NearestNeighbors(n_neighbors=min(int(n_neighbors), X.shape[0])).fit(X)


def _resolve_graph_builder(graph, n_neighbors, random_state):
    if callable(graph):
        return graph
    check_option(graph, "graph", {"knn", "mst", "pmst", "dmst"})
    if graph == "knn":
        return lambda X: knn_graph(X, n_neighbors=n_neighbors, random_state=random_state)
    from .. import graphs

    builder = getattr(graphs, f"{graph}_graph", None)
    if builder is None:
        raise ValueError(f"graph={graph!r} needs graphclust.graphs.{graph}_graph, not available.")
    if graph == "mst":
        return lambda X: builder(X, n_neighbors=n_neighbors)
    if graph == "pmst":
        return lambda X: builder(X, random_state=random_state)
    return builder


def _join_graph_components(graph, X):
    """Add the exact shortest edges between the connected components of a Graph of points X."""
    from ..graphs import join_components

    n_before = graph.n_components
    joined = join_components(graph, X)
    warnings.warn(
        f"the {graph.provenance.get('builder', 'graph')} of the data has {n_before} connected "
        f"components; joined them by the {joined.provenance['joined_edges']} shortest edges "
        "between components "
        f"(join_components=False clusters the split graph as is).",
        ConsistencyWarning,
        stacklevel=4,
    )
    return joined


class ConsistencyClustering(ClusterMixin, BaseEstimator):
    """Clustering through ranking on manifolds (Breitenbach & Grudic), matrix-free.

    Builds a proximity graph, weights its edges w_ij = exp(-d_ij^2 / (2 sigma^2)), and clusters
    with the columns of the consistency kernel U = beta (I - alpha S)^-1
    (S = D^-1/2 W D^-1/2, beta = 1 - alpha): it picks c seed points (the most representative
    points), labels every point by its most similar seed, ranks global and within-cluster
    outliers, and chooses sigma, alpha and c by maximising the criterion Omega (mean distance
    between clusters minus mean distance within clusters, in the distance D_M = 1 - cosine of
    the columns of U). U is never formed: everything is a few conjugate-gradient block solves
    deflated by the top eigenpairs of S, one eigensolve per sigma.

    Parameters
    ----------
    n_clusters : int or "auto", default "auto"
        c; ``"auto"`` searches 2..`max_clusters` and keeps the largest Omega.
    alpha : float in (0, 1) or "auto", default "auto"
        ``"auto"`` searches `alpha_grid`.
    sigma : float > 0 or "auto", default "auto"
        Gaussian width; ``"auto"`` searches ``sigma_grid * median edge length`` on the fixed edge
        set of the graph. Ignored with ``affinity="precomputed"``.
    graph : {"knn", "mst", "pmst", "dmst"} or callable, default "knn"
        How to build the edge set from an array (a callable takes X and returns a `Graph`).
        Ignored when `fit` receives a `Graph` or a precomputed W.
    max_clusters : int >= 2, default 10
    affinity : None or "precomputed", default None
        ``"precomputed"``: `fit` takes a symmetric non-negative affinity matrix W used as is.
    n_neighbors : int, default 10
        Neighbours of the kNN graph, and of unseen points in `predict`.
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
        Size of the deflation basis for ``cg``.
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
    random_state : int, Generator or None
        Seeds the Lanczos start vectors, the probes, and the graph builder.
    verbose : bool, default False
        Progress lines on stderr for each step that can take seconds: the graph, and for each
        sigma the spectrum, the column norms and each alpha's seeds and Omega; then the final
        fit (`graphclust._progress.Progress`).

    Attributes
    ----------
    labels_ : int array (n,)
        Cluster of each point in 0..n_clusters_-1; -1 only for points whose connected component
        of the graph holds no seed (see Notes).
    n_clusters_, alpha_, sigma_ : chosen values (sigma_ is None for precomputed W).
    representatives_ : int array (n_clusters_,)
        Seed indices in selection order; cluster j is the cluster of representatives_[j].
    inlierness_ : array (n,)
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
    timings_ : dict
        Seconds per stage: graph, spectrum, norms, search, final.
    n_features_in_ : int (array input only)

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
    >>> model.n_clusters_, gc.metrics.clustering_error(y, model.labels_)
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
        alpha="auto",
        sigma="auto",
        graph="knn",
        max_clusters=10,
        affinity=None,
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
        random_state=None,
        verbose=False,
    ):
        self.n_clusters = n_clusters
        self.alpha = alpha
        self.sigma = sigma
        self.graph = graph
        self.max_clusters = max_clusters
        self.affinity = affinity
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
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ validation
    def _check_params(self, n):
        if self.affinity is not None:
            check_option(self.affinity, "affinity", {"precomputed"})
        check_option(self.method, "method", {"auto", "dense", "cg", "lu"})
        check_option(self.norms, "norms", {"auto", "exact", "estimate"})
        check_option(self.eigen_solver, "eigen_solver", {"auto", "lanczos", "shift-invert"})
        if not callable(self.graph):
            check_option(self.graph, "graph", {"knn", "mst", "pmst", "dmst"})
        check_int(self.n_neighbors, "n_neighbors", low=1)
        check_int(self.n_probes, "n_probes", low=2)
        check_real(self.tol, "tol", low=0, high=1, low_inclusive=False, high_inclusive=False)
        check_real(self.search_tol, "search_tol", low=0, high=1, low_inclusive=False,
                   high_inclusive=False)
        check_real(self.max_condition, "max_condition", low=1, low_inclusive=False)
        if self.n_clusters == "auto":
            max_c = check_int(self.max_clusters, "max_clusters", low=2)
            if max_c > n:
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
            grid = np.atleast_1d(np.asarray(self.alpha_grid, dtype=float))
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
            grid = np.atleast_1d(np.asarray(self.sigma_grid, dtype=float))
            if grid.size == 0:
                raise ValueError("sigma_grid is empty; give at least one factor > 0.")
            factors = [check_real(s, "sigma_grid entries", low=0, low_inclusive=False) for s in grid]
            sigma_spec = ("grid", factors)
        else:
            sigma_spec = ("fixed", [check_real(self.sigma, "sigma", low=0, low_inclusive=False)])
        if cs == [1] and (len(alphas) > 1 or (sigma_spec[0] == "grid" and len(sigma_spec[1]) > 1)):
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
        k = check_int(self.n_neighbors, "n_neighbors", low=1)
        if k >= n:
            raise ValueError(f"n_neighbors must satisfy 1 <= n_neighbors < n_samples = {n}; got {k}.")
        t0 = time.perf_counter()
        builder = _resolve_graph_builder(self.graph, k, self.random_state)
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
        self.timings_ = {"graph": 0.0, "spectrum": 0.0, "norms": 0.0, "search": 0.0, "final": 0.0}
        progress = Progress(bool(self.verbose))
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

        omega = np.full((len(sigmas), len(alphas), len(cs)), np.nan)
        valid_surface = np.zeros(omega.shape, dtype=bool)
        best = {c: (-np.inf, None, None) for c in cs}
        kernels = {}
        self._degenerate_seen = set()
        self.search_skipped_ = []
        self._graph_summary = (1, 0)
        searching = len(sigmas) * len(alphas) * len(cs) > 1
        if searching:
            progress.note(f"searching {len(sigmas)} sigma x {len(alphas)} alpha x c in "
                          f"{cs[0]}..{cs[-1]} (one eigensolve per sigma)")
        for si, sigma in enumerate(sigmas):
            W = W_pre if sigma is None else affinity(graph, sigma)
            comp = self._components(W, warn=len(sigmas) == 1)
            at = "" if sigma is None else f"sigma {si + 1}/{len(sigmas)} = {sigma:.4g}: "
            t0 = time.perf_counter()
            with progress.step(f"{at}spectrum of S"):
                base_kernel = ConsistencyKernel(
                    W,
                    alphas[0],
                    method=self.method,
                    n_eigenpairs=self.n_eigenpairs,
                    eigen_solver=self.eigen_solver,
                    rtol=self.tol,
                    random_state=eig_seed,
                )
            self.timings_["spectrum"] += time.perf_counter() - t0
            kernels[si] = (base_kernel, comp, W)
            if len(sigmas) * len(alphas) * len(cs) == 1:
                break  # nothing to search: the final fit below is the only evaluation
            lam_K = float(base_kernel.spectrum.values[-1])
            todo = []
            for ai, alpha in enumerate(alphas):
                if (
                    base_kernel.method == "cg"
                    and len(alphas) > 1
                    and (1 + alpha) / max(1 - alpha * lam_K, 1e-300) > self.max_condition
                ):
                    self.search_skipped_.append((sigma, alpha))
                    continue  # too ill-conditioned for the CG budget: left NaN, never chosen
                todo.append(ai)
            if len(todo) < len(alphas):
                progress.note(f"{at}skipping alpha in "
                              f"{[alphas[ai] for ai in range(len(alphas)) if ai not in todo]} "
                              f"(CG condition bound above max_condition = {self.max_condition:g})")
            if not todo:
                continue
            # the column norms of every alpha at once (one multi-shift solve of the probes)
            t0 = time.perf_counter()
            with progress.step(f"{at}column norms for {len(todo)} alpha(s)"):
                K_top = base_kernel.with_alpha(max(alphas[ai] for ai in todo))
                K_top.rtol = float(self.search_tol)
                all_norms = K_top.column_norms_for([alphas[ai] for ai in todo], self.norms,
                                                   n_probes=self.n_probes,
                                                   random_state=probe_seed)
            self.timings_["norms"] += time.perf_counter() - t0
            for ai, norms in zip(todo, all_norms):
                K = base_kernel.with_alpha(alphas[ai])
                K.rtol = float(self.search_tol)
                t1 = time.perf_counter()
                with progress.step(f"{at}alpha = {alphas[ai]:.7g}: seeds and Omega for c = "
                                   f"{cs[0]}..{cs[-1]}"):
                    path = consistency_path(K, norms.nu, cs, components=comp)
                self.timings_["search"] += time.perf_counter() - t1
                for ci, c in enumerate(cs):
                    om = path["omega"][c]
                    omega[si, ai, ci] = om
                    # a c that leaves a connected component without any seed does not cluster
                    # the whole graph: it is recorded but never chosen
                    valid = not (path["labels"][c] < 0).any()
                    valid_surface[si, ai, ci] = valid
                    if valid and np.isfinite(om) and om > best[c][0]:
                        best[c] = (om, si, ai)
        # choose c, then its (sigma, alpha)
        if len(sigmas) * len(alphas) * len(cs) == 1:
            c, si, ai = cs[0], 0, 0
        else:
            finite = [c for c in cs if best[c][1] is not None]
            if not finite:
                raise ValueError(
                    "no searched (sigma, alpha, c) gives a valid clustering: either fewer than two "
                    "clusters were ever nonempty, or the graph has more connected components than "
                    "the largest c searched, so some component never gets a seed. Check the graph "
                    "(n_components, isolated vertices; use more neighbours), raise max_clusters "
                    "or max_condition, or give n_clusters, alpha and sigma."
                )
            c = max(finite, key=lambda cc: best[cc][0])
            _, si, ai = best[c]
        t0 = time.perf_counter()
        base_kernel, comp, W = kernels[si]
        if len(sigmas) > 1:
            self._components(W, warn=True)
        sig = "" if sigmas[si] is None else f"sigma = {sigmas[si]:.4g}, "
        with progress.step(f"final fit at {sig}alpha = {alphas[ai]:.7g}, c = {c} "
                           f"(tol {self.tol:g})"):
            K = base_kernel.with_alpha(alphas[ai])
            norms = K.column_norms(self.norms, n_probes=self.n_probes, random_state=probe_seed)
            path = consistency_path(K, norms.nu, [c], components=comp, cluster_inlierness_for=c)
        self.timings_["final"] = time.perf_counter() - t0

        labels = path["labels"][c]
        if (labels < 0).any():
            n_comp, n_iso = self._graph_summary
            warnings.warn(
                f"the affinity graph has {n_comp} connected components ({n_iso} isolated "
                f"vertices); {int((labels < 0).sum())} point(s) lie in components that received "
                f"no seed and are labelled -1. Use more neighbours (a connected graph) or more "
                f"clusters.",
                ConsistencyWarning,
                stacklevel=2,
            )
        self.labels_ = labels
        self.n_clusters_ = int(c)
        self.alpha_ = float(alphas[ai])
        self.sigma_ = None if sigmas[si] is None else float(sigmas[si])
        self.representatives_ = path["seeds"][:c].copy()
        self.inlierness_ = path["inlierness"]
        self.cluster_inlierness_ = path["cluster_inlierness"]
        self.between_ = path["between"][c]
        self.omega_ = omega
        self.omega_valid_ = valid_surface
        if len(sigmas) * len(alphas) * len(cs) == 1:
            self.omega_[0, 0, 0] = path["omega"][c]
            self.omega_valid_[0, 0, 0] = not (labels < 0).any()
        self.omega_sigmas_ = np.array([np.nan if s is None else s for s in sigmas])
        self.omega_alphas_ = np.array(alphas)
        self.omega_n_clusters_ = np.array(cs)
        self.omega_by_n_clusters_ = _best_by_c(self.omega_, self.omega_valid_, cs)
        self.column_norms_ = norms
        self.kernel_method_ = K.method
        # the small model that predict needs
        V_seeds = path["V_seeds"][:, :c]
        S = K.S
        row_norm = np.sqrt(np.asarray(S.multiply(S).sum(axis=1)).ravel())
        inv_r = np.divide(1.0, row_norm, out=np.zeros_like(row_norm), where=row_norm > 0)
        self._predict_H = np.asarray(S @ (V_seeds * inv_r[:, None]))
        self._degrees = K.degrees.copy()
        self._fit_kind = "precomputed" if W_pre is not None else ("array" if X_arr is not None else "graph")
        self._X_fit = X_arr
        self._nn = _neighbour_index(X_arr, self.n_neighbors)
        if X_arr is not None:
            self.n_features_in_ = X_arr.shape[1]
        return self

    def _components(self, W, warn):
        """Connected-component labels of W (None when connected); warns about isolated vertices."""
        W = sp.csr_matrix(W, copy=True)
        W.eliminate_zeros()
        n_comp, comp = connected_components(W, directed=False)
        if n_comp == 1:
            return None
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
                stacklevel=3,
            )
        return comp

    # ------------------------------------------------------------------ results
    def outliers(self, n=10, *, within_cluster=False):
        """Indices of the `n` worst global (or within-cluster) outliers, worst first."""
        self._check_fitted()
        score = self.cluster_inlierness_ if within_cluster else self.inlierness_
        score = np.where(np.isnan(score), np.inf, score)
        return np.argsort(score, kind="stable")[: int(n)]

    def _check_fitted(self):
        if not hasattr(self, "labels_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(
                "This ConsistencyClustering instance is not fitted yet; call fit(X) first."
            )

    # ------------------------------------------------------------------ predict
    def decision_function(self, X):
        """Scores F (m, n_clusters_) of unseen points by the papers' rule (see `predict`)."""
        F, _ = self._scores(X)
        return F

    def _scores(self, X):
        self._check_fitted()
        n_train = self._degrees.shape[0]
        if self._fit_kind == "graph":
            raise ValueError(
                "this model was fitted on a Graph, so it has no coordinates to find the neighbours "
                "of new points: fit it on the data array to use predict."
            )
        if self._fit_kind == "precomputed":
            if sp.issparse(X):
                Wx = sp.csr_matrix(X, dtype=np.float64)
            else:
                arr = np.asarray(X, dtype=np.float64)
                if arr.ndim != 2:
                    raise ValueError(
                        f"with affinity='precomputed', predict takes affinities (m, {n_train}) of "
                        f"new points to the training points; got shape {arr.shape}."
                    )
                Wx = sp.csr_matrix(arr)
            if Wx.shape[1] != n_train:
                raise ValueError(
                    f"with affinity='precomputed', predict takes affinities (m, {n_train}) of new "
                    f"points to the training points; got shape {Wx.shape}."
                )
            if Wx.data.size and (not np.all(np.isfinite(Wx.data)) or Wx.data.min() < 0):
                raise ValueError("the affinities given to predict must be finite and >= 0.")
            nearest = None
        else:
            X = check_points(X, min_samples=1)
            if X.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"X has {X.shape[1]} features, but ConsistencyClustering is expecting "
                    f"{self.n_features_in_} features as input (the number it was fitted with)."
                )
            dist, idx = self._nn.kneighbors(X)
            m, k = idx.shape
            w = np.exp(-(dist**2) / (2.0 * self.sigma_**2))
            Wx = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n_train))
            nearest = idx[:, 0]
        dx = np.asarray(Wx.sum(axis=1)).ravel()
        d = self._degrees
        inv_sqrt_d = np.divide(1.0, np.sqrt(d), out=np.zeros_like(d), where=d > 0)
        inv_sqrt_dx = np.divide(1.0, np.sqrt(dx), out=np.zeros_like(dx), where=dx > 0)
        Sx = sp.diags(inv_sqrt_dx) @ Wx @ sp.diags(inv_sqrt_d)
        Sx = sp.csr_matrix(Sx)
        sn = np.sqrt(np.asarray(Sx.multiply(Sx).sum(axis=1)).ravel())
        Sx = sp.diags(np.divide(1.0, sn, out=np.zeros_like(sn), where=sn > 0)) @ Sx
        F = np.asarray(Sx @ self._predict_H)
        return F, nearest

    def predict(self, X, *, return_confidence=False):
        """Assign unseen points to the fitted clusters without refitting.

        The papers' rule: for a new point x, w_j = exp(-||x - x_j||^2 / (2 sigma_^2)) on its
        `n_neighbors` nearest training points (0 elsewhere), S_x = w / sqrt(d_x d) with
        d_x = sum w, S_x and the rows of S normalised to unit length, theta = S_rows S_x,
        F_j = V[:, l_j] . theta, label = argmax_j F_j.

        Parameters
        ----------
        X : array (m, n_features_in_), or with ``affinity="precomputed"`` the affinities
            (m, n_train) of the new points to the training points.
        return_confidence : bool
            Also return the confidence (F_(1) - F_(2)) / F_(1) in [0, 1] (relative margin of
            the best cluster over the second; 1 with a single cluster).

        Returns
        -------
        labels : int array (m,), values in 0..n_clusters_-1 only
        confidence : array (m,), when asked

        Notes
        -----
        Fallback: a point whose scores are all 0 (its affinities underflow, or its neighbours
        lie where no seed reaches) takes the label of its nearest training point when that is
        labelled, else cluster 0, with confidence 0.
        """
        F, nearest = self._scores(X)
        labels = np.argmax(F, axis=1).astype(np.int64)
        Fs = np.sort(F, axis=1)
        top = Fs[:, -1]
        second = Fs[:, -2] if F.shape[1] > 1 else np.zeros_like(top)
        conf = np.divide(top - second, top, out=np.zeros_like(top), where=top > 0)
        dead = ~(top > 0)
        if dead.any():
            if nearest is not None:
                fallback = self.labels_[nearest[dead]]
                labels[dead] = np.where(fallback >= 0, fallback, 0)
            else:
                labels[dead] = 0
            conf[dead] = 0.0
        if return_confidence:
            return labels, conf
        return labels

    # ------------------------------------------------------------------ persistence
    _ARRAYS = ("labels_", "representatives_", "inlierness_", "cluster_inlierness_", "between_",
               "omega_", "omega_valid_", "omega_sigmas_", "omega_alphas_", "omega_n_clusters_")

    def save(self, path):
        """Write the fitted model to `path` (.npz of arrays + JSON metadata; no pickle).

        Load it back with `ConsistencyClustering.load`.
        """
        self._check_fitted()
        meta = {
            "format": MODEL_FORMAT,
            "format_version": MODEL_FORMAT_VERSION,
            "params": {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.get_params().items()
                       if k != "graph" or isinstance(v, str)},
            "n_clusters_": self.n_clusters_,
            "alpha_": self.alpha_,
            "sigma_": self.sigma_,
            "fit_kind": self._fit_kind,
            "kernel_method_": self.kernel_method_,
            "n_features_in_": getattr(self, "n_features_in_", None),
        }
        if isinstance(meta["params"].get("random_state"), np.random.Generator):
            meta["params"]["random_state"] = None
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        arrays["predict_H"] = self._predict_H
        arrays["degrees"] = self._degrees
        if self._X_fit is not None:
            arrays["X_fit"] = self._X_fit
        return write_model_file(path, arrays, meta)

    @classmethod
    def load(cls, path):
        """Read a model written by `save` (``np.load(..., allow_pickle=False)``).

        Raises
        ------
        ValueError
            If the file is damaged, is not a graphclust consistency model, or was written by
            another format version.
        """
        data, meta = read_model_file(path, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION, kind="model")
        missing = [k for k in (*cls._ARRAYS, "predict_H", "degrees") if k not in data]
        if missing:
            raise ValueError(f"{path} is damaged: arrays {missing} are missing.")
        params = dict(meta["params"])
        for key in ("sigma_grid", "alpha_grid"):
            if isinstance(params.get(key), list):
                params[key] = tuple(params[key])
        model = cls(**params)
        for k in cls._ARRAYS:
            setattr(model, k, data[k])
        model.n_clusters_ = int(meta["n_clusters_"])
        model.alpha_ = float(meta["alpha_"])
        model.sigma_ = None if meta["sigma_"] is None else float(meta["sigma_"])
        model.kernel_method_ = meta["kernel_method_"]
        model._fit_kind = meta["fit_kind"]
        model._predict_H = data["predict_H"]
        model._degrees = data["degrees"]
        model._X_fit = data.get("X_fit")
        model._nn = _neighbour_index(model._X_fit, model.n_neighbors)
        if meta.get("n_features_in_") is not None:
            model.n_features_in_ = int(meta["n_features_in_"])
        n = model._degrees.shape[0]
        if model.labels_.shape != (n,) or model._predict_H.shape != (n, model.n_clusters_) or (
            model._X_fit is not None and model._X_fit.shape[0] != n
        ):
            raise ValueError(f"{path} is damaged: its arrays have inconsistent shapes.")
        model.omega_by_n_clusters_ = _best_by_c(
            model.omega_, model.omega_valid_, model.omega_n_clusters_
        )
        return model
