"""Communities of a graph: Leiden at the maximum-likelihood resolution and the Bethe Hessian.

`CommunityDetection` partitions the nodes of any undirected graph (a networkx graph, a `Graph`,
a sparse adjacency, or points through their kNN graph) and finds the number of communities:

- ``"leiden-ml"``: Leiden (`leiden`) on modularity at the resolution gamma that makes modularity
  the log-likelihood of a degree-corrected planted-partition model (Newman, PRE 94, 052315,
  2016): gamma = (w_in - w_out) / (ln w_in - ln w_out), w_in and w_out fitted on the current
  partition; partition and gamma are iterated to a fixed point (`leiden_ml`). This removes
  modularity's resolution limit (Louvain merges the small communities of large graphs).
- ``"bethe"``: spectral clustering on the Bethe Hessian (`graphclust.kernels.bethe_embedding`):
  k = its number of negative eigenvalues, k-means on the row-normalised embedding
  (Saade et al. 2014; Dall'Amico et al. 2021). Detects communities down to the sparse block
  model's detectability threshold.
- ``"bethe+leiden-ml"``: Leiden-ML started from the Bethe partition.
- ``"leiden"``: Leiden at resolution 1 (plain modularity, as Louvain).
- ``"auto"``: the candidates Leiden-ML, Bethe and Bethe + Leiden-ML (the spectral two only when
  the Bethe count is at most `max_spectral_communities`; on weighted graphs of at most
  `BETHE_DENSE_MAX_NODES` nodes also the Bethe partition of the binary pattern). The smallest
  description length (`description_length`) wins, unless it is the coarser (fewer communities)
  of the best Leiden-ML and the best spectral candidate: the description length charges about
  ln K nats per node for the labels and so errs towards too few communities where they are
  weak, never towards too many. Then edge cross-validation decides (``selection="cv"``,
  `._community_selection`): both procedures are rerun on the graph without each tenth of its
  edges (the spectral one with its number of communities fixed), scored by the information
  their partitions carry about the held-out edges, and the larger wins if significantly above
  zero (neither: the description length's choice). ``selection="dl"``: the smallest description
  length always (the rule before). The Bethe count is always computed (exactly, or by stochastic Lanczos
  quadrature on large graphs) and reported as the second opinion. On a *proximity graph* (points joined to their neighbours: `graph_kind`) ``"auto"``
  is Leiden at resolution 1 instead, the practice of the field for kNN graphs (PhenoGraph,
  Levine et al. 2015; scanpy's ``tl.leiden``): a kNN graph is a discretised manifold, denser in
  every neighbourhood than a random graph of the same degrees, so under any block model it has
  hundreds of communities (Bethe count 413-466 on pendigits, USPS and MNIST, 10 classes) and the
  description length keeps falling with finer partitions.

For every result: the belonging of each node (`model_belonging`: its probability of belonging to
its own community under the fitted model, given all other nodes) and the most representative
node of each community (its member of largest belonging).
"""

from __future__ import annotations

import numbers
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import gammaln
from sklearn.base import BaseEstimator, ClusterMixin

from .._validation import check_int, check_option, check_random_state, check_seed
from ..graphs import Graph, affinity, knn_graph
from ..kernels import (
    BETHE_DENSE_MAX_NODES,
    bethe_embedding,
    count_eigenvalues_above,
    nonbacktracking_radius,
    regularized_adjacency,
    undirected_adjacency,
)
from ._common import row_normalize
from ._community_selection import cross_validate_partitions, select_partition
from ._leiden import leiden
from ._partition_quality import canonical_labels, community_representatives
from ._row_order import canonical_node_order

__all__ = [
    "COMMUNITY_DETECTION_METHODS",
    "CV_FOLDS",
    "CommunityDetection",
    "community_representatives",
    "description_length",
    "leiden_ml",
    "ml_resolution",
    "model_belonging",
]

#: Methods of `CommunityDetection`.
COMMUNITY_DETECTION_METHODS = ("auto", "bethe", "bethe+leiden-ml", "leiden-ml", "leiden")

#: Folds of the edge cross-validation of ``"auto"`` (``selection="cv"``).
CV_FOLDS = 10

# `Graph` builders whose graphs join points to their neighbours (graph_kind="auto": proximity)
_PROXIMITY_BUILDERS = frozenset({"knn_graph", "epsilon_graph", "mst_graph", "pmst_graph",
                                 "dmst_graph", "grid_graph", "graphclust.dask.kneighbors_graph"})


def _degrees(A):
    return np.asarray(A.sum(axis=1)).ravel()


def _inside_weight(A, labels):
    """Sum over ordered pairs (i, j) in the same community of A_ij (= 2 m_in)."""
    coo = A.tocoo()
    return float(coo.data[labels[coo.row] == labels[coo.col]].sum())


def _affinities(A, labels):
    """(w_in, w_out) of the degree-corrected planted partition fitted to `labels`, or None."""
    d = _degrees(A)
    two_m = d.sum()
    m_in2 = _inside_weight(A, labels)
    kappa = np.bincount(labels, weights=d)
    sk2 = float(kappa @ kappa)
    if two_m <= 0 or sk2 >= two_m * two_m * (1 - 1e-12) or m_in2 <= 0:
        return None
    w_in = two_m * m_in2 / sk2
    w_out = two_m * (two_m - m_in2) / (two_m * two_m - sk2)
    if w_out <= 0 or w_in <= w_out:
        return None
    return w_in, w_out


def ml_resolution(A, labels):
    """Newman's (2016) resolution gamma = (w_in - w_out) / (ln w_in - ln w_out) of a partition.

    w_in = 2m (2 m_in) / sum_r kappa_r^2 and w_out = 2m (2 m_out) / ((2m)^2 - sum_r kappa_r^2)
    are the maximum-likelihood within / between affinities of the degree-corrected planted
    partition model (m the total edge weight, m_in the weight inside communities, kappa_r the
    total degree of community r). Returns None when the partition carries no signal (a single
    community, or w_in <= w_out).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from graphclust.cluster import ml_resolution
    >>> A = nx.to_scipy_sparse_array(nx.planted_partition_graph(4, 50, 0.3, 0.02, seed=3))
    >>> round(ml_resolution(A, np.repeat(np.arange(4), 50)), 3) > 1
    True
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    labels = np.unique(np.asarray(labels), return_inverse=True)[1]
    fit = _affinities(A, labels)
    if fit is None:
        return None
    w_in, w_out = fit
    return float((w_in - w_out) / (np.log(w_in) - np.log(w_out)))


def description_length(A, labels):
    """Description length (nats) of a graph and its partition; lower is better.

    Newman's degree-corrected planted partition model (Poisson edges, E[A_ij] = w_(g_i g_j)
    d_i d_j / 2m) at its maximum likelihood, plus the cost of the partition under the uniform
    hierarchical prior of Peixoto (Zhang & Peixoto, PRR 2020):

        DL = -[m_in ln w_in + m_out ln w_out - m] + ln C(n - 1, K - 1) + ln n! - sum_r ln n_r! + ln n

    Terms that do not depend on the partition (the degrees) are dropped, so only differences
    between partitions of the same graph mean something. The likelihood alone always prefers
    more groups; the prior is what stops that. Weighted graphs are measured in units of their
    mean edge weight (the value does not change when all weights are scaled).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from graphclust.cluster import description_length
    >>> A = nx.to_scipy_sparse_array(nx.planted_partition_graph(4, 50, 0.3, 0.02, seed=3))
    >>> truth = np.repeat(np.arange(4), 50)
    >>> bool(description_length(A, truth) < description_length(A, np.zeros(200, int)))
    True
    """
    A = _unit_weights(sp.csr_matrix(A, dtype=np.float64))
    labels = np.unique(np.asarray(labels), return_inverse=True)[1]
    n = A.shape[0]
    d = _degrees(A)
    two_m = d.sum()
    m = two_m / 2
    K = int(labels.max()) + 1
    m_in = _inside_weight(A, labels) / 2
    m_out = m - m_in
    kappa = np.bincount(labels, weights=d, minlength=K)
    sk2 = float(kappa @ kappa)
    ll = -m
    if m_in > 0:
        ll += m_in * np.log(4 * m * m_in / sk2)
    if m_out > 1e-12 * m:
        ll += m_out * np.log(4 * m * m_out / (two_m * two_m - sk2))
    sizes = np.bincount(labels, minlength=K)
    prior = (gammaln(n) - gammaln(K) - gammaln(n - K + 1)) + gammaln(n + 1) \
        - gammaln(sizes + 1).sum() + np.log(n)
    return float(-ll + prior)


def model_belonging(A, labels, resolution=None):
    """How well each node belongs to its community under the fitted planted-partition model.

    For node i and community r, the log-likelihood of putting i in r (all other labels fixed)
    is beta (k_ir - gamma d_i kappa_r^(-i) / 2m) up to a constant: k_ir the link weight from i
    to r, kappa_r^(-i) the total degree of r without i, gamma the resolution (`resolution`, or
    `ml_resolution` of the partition) and beta = ln(w_in / w_out) (Newman 2016). The softmax
    of these over i's own community and the communities it links to is i's Gibbs conditional.

    Returns
    -------
    belonging : array (n,)
        Probability of i's own community: 1 certain, 1/2 a coin flip with the best alternative,
        below 1/2 it would rather move.
    margin : array (n,)
        Own score minus the best alternative's (the own score when i links to no other
        community).

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from graphclust.cluster import model_belonging
    >>> A = nx.to_scipy_sparse_array(nx.planted_partition_graph(2, 40, 0.4, 0.02, seed=2))
    >>> labels = np.repeat([0, 1], 40); labels[0] = 1
    >>> prob, margin = model_belonging(A, labels)
    >>> bool(prob[0] < 0.5), bool(np.median(prob[1:]) > 0.9)
    (True, True)
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    labels = np.unique(np.asarray(labels), return_inverse=True)[1]
    n = A.shape[0]
    d = _degrees(A)
    two_m = float(d.sum()) or 1.0
    K = int(labels.max()) + 1
    kappa = np.bincount(labels, weights=d, minlength=K)
    fit = _affinities(A, labels)
    beta = float(np.log(fit[0] / fit[1])) if fit is not None else 1.0
    if resolution is None:
        g = ml_resolution(A, labels)
        resolution = 1.0 if g is None else g
    gamma = float(resolution)
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, K))
    L = (A @ onehot).tocoo()  # k_ir for the communities i links to
    own = labels[L.row] == L.col
    kap = kappa[L.col] - np.where(own, d[L.row], 0.0)
    sc = beta * (L.data - gamma * d[L.row] * kap / two_m)
    has_own = np.zeros(n, bool)
    has_own[L.row[own]] = True
    own_sc = np.empty(n)
    own_sc[L.row[own]] = sc[own]
    lone = ~has_own  # no link inside its own community: k_ir = 0
    own_sc[lone] = -beta * gamma * d[lone] * (kappa[labels[lone]] - d[lone]) / two_m
    alt = np.full(n, -np.inf)
    np.maximum.at(alt, L.row[~own], sc[~own])
    finite = np.isfinite(alt)
    top = np.maximum(own_sc, np.where(finite, alt, own_sc))
    z = np.exp(own_sc - top)
    total = z.copy()
    np.add.at(total, L.row[~own], np.exp(sc[~own] - top[L.row[~own]]))
    return z / total, own_sc - np.where(finite, alt, 0.0)


def leiden_ml(A, *, initial=None, random_state=None, max_rounds=10, n_iterations=2, rtol=1e-2):
    """Leiden at Newman's maximum-likelihood resolution, iterated to a fixed point of gamma.

    Starts at gamma = 1 (or `ml_resolution` of `initial`); each round runs `n_iterations` Leiden
    iterations from the previous partition at the current gamma, then refits gamma; stops when
    gamma changes by less than `rtol` (relative) or after `max_rounds` rounds.

    Returns
    -------
    labels : int64 array (n,)
    resolution : float
        The gamma of the last Leiden run.

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust.cluster import leiden_ml
    >>> labels, gamma = leiden_ml(nx.to_scipy_sparse_array(nx.planted_partition_graph(
    ...     4, 30, 0.5, 0.02, seed=0)), random_state=0)
    >>> int(labels.max()) + 1
    4
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    gamma = ml_resolution(A, initial) if initial is not None else None
    gamma = 1.0 if gamma is None else gamma
    labels = leiden(A, resolution=gamma, initial=initial, random_state=random_state,
                    n_iterations=n_iterations)
    for _ in range(max_rounds):
        g2 = ml_resolution(A, labels)
        if g2 is None or abs(g2 - gamma) < rtol * gamma:
            break
        gamma = g2
        labels = leiden(A, resolution=gamma, initial=labels, random_state=random_state,
                        n_iterations=n_iterations)
    return np.asarray(labels, dtype=np.int64), float(gamma)


def _unit_weights(A):
    """A in units of its mean edge weight (binary graphs unchanged)."""
    if A.nnz and not np.all(A.data == 1.0):
        return A * (A.nnz / A.data.sum())
    return A


def _seed(random_state):
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return int(random_state)
    return int(check_random_state(random_state).integers(2**31 - 1))


def _kmeans_sphere(X, k, seed):
    from sklearn.cluster import KMeans

    Y = row_normalize(X)
    return KMeans(k, n_init=3, random_state=seed).fit(Y).labels_.astype(np.int64)


class CommunityDetection(ClusterMixin, BaseEstimator):
    """Communities of an undirected graph with their number found (see the module notes).

    Parameters
    ----------
    method : {"auto", "bethe", "bethe+leiden-ml", "leiden-ml", "leiden"}, default "auto"
    n_communities : int or "auto", default "auto"
        A given integer k: the Bethe embedding with k columns and k-means (``"auto"`` and
        ``"bethe"``); the Leiden methods choose their number and refuse an integer.
    selection : {"cv", "dl"}, default "cv"
        How ``"auto"`` chooses among its candidates: ``"dl"`` the smallest description length;
        ``"cv"`` the same, unless that is the coarser of the best Leiden-ML and the best
        spectral candidate: then edge cross-validation (`CV_FOLDS` folds) decides between the
        two (see the module notes).
    max_spectral_communities : int, default 64
        ``"auto"`` computes the Bethe embedding (one eigenvector per community) and its
        candidates only when the Bethe count is at most this; above, the count is still reported.
    affinity : {"auto", "precomputed", "knn"}, default "auto"
        What `fit` receives: ``"precomputed"`` an adjacency (sparse or dense matrix, `Graph`,
        networkx graph); ``"knn"`` points (n_samples, n_features), joined by their binary
        `n_neighbors`-NN graph; ``"auto"``: points for a dense array, an adjacency otherwise.
    n_neighbors : int, default 15
        Neighbours of the kNN graph of points.
    graph_kind : {"auto", "network", "proximity"}, default "auto"
        What the links are. ``"network"``: the data (a social, citation, ... network; ``"auto"``
        selects by description length under a block model). ``"proximity"``: points joined to
        their neighbours (a kNN, epsilon or MST graph); ``"auto"`` then runs Leiden at
        resolution 1, as Louvain / PhenoGraph users do (see the module notes). ``"auto"``:
        proximity for points and for a `Graph` built from points (`knn_graph`,
        `epsilon_graph`, the MST graphs, `grid_graph`), network otherwise -- pass
        ``"proximity"`` for a kNN graph given as a matrix.
    symmetrize : bool, default False
        A directed input (non-symmetric adjacency, networkx DiGraph) is refused unless True,
        which uses (A + A^T) / 2.
    weight : str or None, default "weight"
        Edge attribute of a networkx graph holding the link weight (None: binary).
    random_state : int, Generator or None

    Attributes
    ----------
    labels_ : int64 array (n,)
        Community of each node, 0..k-1 (k = `n_communities_`).
    n_communities_ : int
    n_communities_bethe_ : int or None
        The Bethe Hessian's count (None for ``"leiden"`` / ``"leiden-ml"``).
    chosen_method_ : str
        The candidate that gave `labels_` (for ``"auto"``: chosen by `selection` among
        "leiden-ml", "bethe", "bethe+leiden-ml" and, on weighted graphs, "bethe (binary
        pattern)"; "leiden" on a proximity graph).
    heldout_information_ : dict
        When the cross-validation ran: the held-out information (nats) of the two candidates
        on each of the `CV_FOLDS` folds (float arrays); empty otherwise.
    graph_kind_ : str
        "network" or "proximity" (the resolved `graph_kind`).
    description_lengths_ : dict
        Description length of each candidate (``"auto"``) or of the result.
    resolution_ : float or None
        The modularity resolution of the final Leiden run (None for ``"bethe"``).
    belonging_, margin_ : arrays (n,)
        `model_belonging` of `labels_`.
    representatives_ : int64 array (n_communities_,)
        Node index of the most representative member of each community (largest belonging,
        ties by margin).
    timings_ : dict
        Seconds by stage.

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust.cluster import CommunityDetection
    >>> karate = nx.karate_club_graph()  # binary links (its weights count interactions)
    >>> model = CommunityDetection(weight=None, random_state=0).fit(karate)
    >>> model.n_communities_, model.n_communities_bethe_, model.chosen_method_
    (2, 2, 'bethe')
    """

    def __init__(self, method="auto", n_communities="auto", *, selection="cv",
                 max_spectral_communities=64, affinity="auto", n_neighbors=15,
                 graph_kind="auto", symmetrize=False, weight="weight", random_state=None):
        self.method = method
        self.n_communities = n_communities
        self.selection = selection
        self.max_spectral_communities = max_spectral_communities
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.graph_kind = graph_kind
        self.symmetrize = symmetrize
        self.weight = weight
        self.random_state = random_state

    # ------------------------------------------------------------------ input
    @staticmethod
    def input_graph_kind(graph):
        """``"proximity"`` for a `Graph` built from points, ``"network"`` for any other graph.

        What ``graph_kind="auto"`` resolves to for a graph input (points given as an array are
        always a proximity graph): a `Graph` whose builder joins points to their neighbours
        (`knn_graph`, `epsilon_graph`, the MST graphs, `grid_graph`).

        Examples
        --------
        >>> import numpy as np
        >>> from graphclust import knn_graph
        >>> from graphclust.cluster import CommunityDetection
        >>> g = knn_graph(np.random.default_rng(0).normal(size=(30, 2)), 5)
        >>> CommunityDetection.input_graph_kind(g)
        'proximity'
        """
        if isinstance(graph, Graph) and graph.provenance.get("builder") in _PROXIMITY_BUILDERS:
            return "proximity"
        return "network"

    def _adjacency(self, X):
        """(validated adjacency, whether X is points or a `Graph` built from points)."""
        kind = self.affinity
        try:
            import networkx as nx
        except ImportError:  # pragma: no cover
            nx = None
        if nx is not None and isinstance(X, nx.Graph):
            if X.is_directed() and not self.symmetrize:
                raise ValueError(
                    "the graph is directed; communities need an undirected graph: pass "
                    "G.to_undirected(), or symmetrize=True to use (A + A^T) / 2."
                )
            if X.is_multigraph():
                raise ValueError("the graph is a multigraph; collapse parallel edges first, "
                                 "e.g. nx.Graph(G).")
            A = nx.to_scipy_sparse_array(X, nodelist=list(X.nodes), weight=self.weight,
                                         format="csr")
            A = undirected_adjacency(sp.csr_matrix(A), symmetrize=self.symmetrize, name="G")
            return A, False
        if isinstance(X, Graph):
            points = self.input_graph_kind(X) == "proximity"
            return undirected_adjacency(affinity(X, kind="multiplicity"), name="graph"), points
        if kind == "knn" or (kind == "auto" and not sp.issparse(X)):
            g = knn_graph(np.asarray(X, dtype=np.float64), self.n_neighbors,
                          random_state=self.random_state)
            return undirected_adjacency(affinity(g, kind="binary"), name="kNN graph"), True
        return undirected_adjacency(X, symmetrize=self.symmetrize), False

    # ------------------------------------------------------------------ fit
    def fit(self, X, y=None):
        """Find the communities of `X` (see `affinity` for what X may be)."""
        check_option(self.method, "method", set(COMMUNITY_DETECTION_METHODS))
        check_option(self.affinity, "affinity", {"auto", "precomputed", "knn"})
        check_option(self.graph_kind, "graph_kind", {"auto", "network", "proximity"})
        check_option(self.selection, "selection", {"cv", "dl"})
        check_int(self.max_spectral_communities, "max_spectral_communities", low=1)
        check_int(self.n_neighbors, "n_neighbors", low=1)
        check_seed(self.random_state)
        k = self.n_communities
        if isinstance(k, str):
            check_option(k, "n_communities", {"auto"})
            k = None
        else:
            check_int(k, "n_communities", low=1)
            if self.method in ("leiden", "leiden-ml", "bethe+leiden-ml"):
                raise ValueError(
                    f"method={self.method!r} chooses the number of communities itself; use "
                    "method='bethe' (or 'auto') for a given n_communities."
                )
        t0 = time.perf_counter()
        A, points = self._adjacency(X)
        A = _unit_weights(A)
        proximity = self.graph_kind == "proximity" or (self.graph_kind == "auto" and points)
        self.graph_kind_ = "proximity" if proximity else "network"
        n = A.shape[0]
        if k is not None and k > n:
            raise ValueError(f"n_communities must satisfy 1 <= n_communities <= the number of "
                             f"nodes = {n}; got {k}.")
        if A.nnz == 0:
            raise ValueError(f"the graph has {n} node(s) and no edge; communities need links.")
        self.timings_ = {"input": time.perf_counter() - t0}
        # the nodes in an order of their own (`canonical_node_order`): Leiden's moves and
        # aggregates and the cross-validation's edge folds follow the numbering, so the order
        # the nodes came in changed the communities (ARI 0 between two insertion orders of a
        # planted partition: docs/applications.md)
        A0, order = A, canonical_node_order(A)
        A = A[order][:, order].tocsr()
        seed = _seed(self.random_state)
        method = self.method
        if method == "auto" and k is not None:
            method = "bethe"
        elif method == "auto" and proximity:
            method = "leiden"
        self._spectral_counts = {}
        cands = self._candidates(A, method, k, seed)
        t = time.perf_counter()
        dls = {name: description_length(A, c[0]) for name, c in cands.items()}
        best = min(dls, key=dls.get)
        self.heldout_information_ = {}
        if self.selection == "cv" and len(cands) > 1:
            best = self._cross_validated(A, cands, dls, best, seed)
            t = time.perf_counter()
        labels, gamma = cands[best]
        back = np.empty_like(order)
        back[order] = np.arange(n)
        A, labels = A0, canonical_labels(labels[back])  # the input's numbering from here on
        prob, margin = model_belonging(A, labels, gamma)
        d = _degrees(A)
        self.labels_ = labels
        self.n_communities_ = int(labels.max()) + 1
        self.chosen_method_ = best
        self.description_lengths_ = dls
        self.resolution_ = gamma
        self.belonging_ = prob
        self.margin_ = margin
        self.representatives_ = community_representatives(np.round(prob, 12), labels,
                                                           margin + 1e-9 * d)
        self.timings_["selection + belonging"] = time.perf_counter() - t
        self.timings_["total"] = time.perf_counter() - t0
        return self

    def _timed(self, key, func, *args, **kwargs):
        t = time.perf_counter()
        out = func(*args, **kwargs)
        self.timings_[key] = time.perf_counter() - t
        return out

    def _cross_validated(self, A, cands, dls, best, seed):
        """`best` (the smallest description length) unless it is the coarser of the best
        Leiden-ML and the best spectral candidate; then the edge cross-validation of the two
        (`select_partition`) decides."""
        leiden_side = [c for c in cands if c in ("leiden-ml", "bethe+leiden-ml")]
        other = [c for c in cands if c not in leiden_side]
        if not leiden_side or not other or A.nnz < 2 * CV_FOLDS:
            return best
        pair = [min(side, key=dls.get) for side in (leiden_side, other)]
        k = {c: int(cands[c][0].max()) + 1 for c in pair}
        rival = pair[1] if best == pair[0] else pair[0]
        if k[best] >= k[rival]:
            return best
        self.heldout_information_ = self._timed(
            "cross-validation", cross_validate_partitions, A,
            {c: self._procedure(c) for c in pair}, CV_FOLDS, seed)
        return select_partition(self.heldout_information_, {c: dls[c] for c in pair})[0]

    def _procedure(self, name):
        """The procedure of candidate `name`, rerun on a training graph by the cross-validation
        (a spectral one with the full graph's number of communities)."""
        if name == "leiden-ml":
            return lambda train, seed, cache: leiden_ml(train, random_state=seed)[0]
        binary = name == "bethe (binary pattern)"
        k = self._spectral_counts["bethe (binary pattern)" if binary else "bethe"]

        def bethe(train, seed, cache):
            key = "bethe (binary pattern)" if binary else "bethe"
            if key not in cache:
                if binary:
                    train = train.copy()
                    train.data[:] = 1.0
                if k <= 1:
                    cache[key] = np.zeros(train.shape[0], dtype=np.int64)
                else:
                    emb = bethe_embedding(train, n_communities=k, random_state=seed)
                    cache[key] = _kmeans_sphere(emb.vectors[:, :k], k, seed)
            return cache[key]

        if name == "bethe+leiden-ml":
            return lambda train, seed, cache: leiden_ml(
                train, initial=bethe(train, seed, cache), random_state=seed)[0]
        return bethe

    def _bethe_partition(self, A, emb, k, seed):
        """k-means on the Bethe embedding, split along the graph's connected components.

        With the count chosen automatically, nodes of different components share no edge, so
        no community should hold both: 100 disjoint triangles have no informative eigenvalue
        (a cycle's rho(B) = 1) and would otherwise be one community. Leiden's communities are
        connected already; a given number of communities is kept as asked.
        """
        n = A.shape[0]
        split = k is None
        k = max(1, emb.n_communities) if k is None else k
        if k == 1:
            labels = np.zeros(n, dtype=np.int64)
        else:
            labels = self._timed("k-means", _kmeans_sphere, emb.vectors[:, :k], k, seed)
        n_comp, comp = connected_components(A, directed=False) if split else (1, None)
        if split and n_comp > 1:
            labels = np.unique(labels * n_comp + comp, return_inverse=True)[1].astype(np.int64)
        return labels

    def _candidates(self, A, method, k, seed):
        """{name: (labels, resolution)} of the candidates of `method`; sets the Bethe count."""
        n = A.shape[0]
        self.n_communities_bethe_ = None
        if method == "leiden":
            labels = self._timed("leiden", leiden, A, random_state=seed)
            return {"leiden": (labels, 1.0)}
        if method == "leiden-ml":
            return {"leiden-ml": self._timed("leiden-ml", leiden_ml, A, random_state=seed)}
        if method in ("bethe", "bethe+leiden-ml"):
            emb = self._timed("bethe eigenpairs", bethe_embedding, A, n_communities=k,
                              random_state=seed)
            self.n_communities_bethe_ = emb.n_communities
            labels = self._bethe_partition(A, emb, k, seed)
            if method == "bethe":
                return {"bethe": (labels, None)}
            return {method: self._timed("leiden-ml", leiden_ml, A, initial=labels,
                                        random_state=seed)}
        # auto: Leiden-ML, and the spectral candidates when the Bethe count is small
        cands = {"leiden-ml": self._timed("leiden-ml", leiden_ml, A, random_state=seed)}
        cands.update(self._spectral_candidates(A, seed))
        if n <= BETHE_DENSE_MAX_NODES and not np.all(A.data == 1.0):
            # weighted graph: the Bethe partition of its binary pattern is proposed too (the
            # weighted form, weights / max weight, can see fewer communities: 1 instead of 2 on
            # networkx's karate club, whose weights count interactions); the weighted
            # description length judges
            pattern = A.copy()
            pattern.data[:] = 1.0
            emb = self._timed("bethe eigenpairs (binary pattern)", bethe_embedding, pattern,
                              random_state=seed)
            if emb.n_communities <= int(self.max_spectral_communities):
                self._spectral_counts["bethe (binary pattern)"] = emb.n_communities
                cands["bethe (binary pattern)"] = (self._bethe_partition(A, emb, None, seed),
                                                   None)
        return cands

    def _spectral_candidates(self, A, seed):
        """The Bethe and Bethe + Leiden-ML candidates of "auto" (none above the cap)."""
        n = A.shape[0]
        cands = {}
        cap = int(self.max_spectral_communities)
        estimate = None
        if n > BETHE_DENSE_MAX_NODES:
            estimate = self._timed("bethe count (Lanczos quadrature)", _count_estimate, A,
                                   seed)
        if estimate is not None and estimate > 1.25 * cap:
            self.n_communities_bethe_ = int(round(estimate))
            return cands
        emb = self._timed("bethe eigenpairs", bethe_embedding, A,
                          max_communities=None if n <= BETHE_DENSE_MAX_NODES else cap,
                          expected_communities=estimate, random_state=seed)
        self.n_communities_bethe_ = emb.n_communities
        if emb.n_communities > cap or emb.capped:
            if estimate is not None and emb.capped:
                self.n_communities_bethe_ = int(round(estimate))
            return cands
        labels = self._bethe_partition(A, emb, None, seed)
        self._spectral_counts["bethe"] = emb.n_communities
        cands["bethe"] = (labels, None)
        cands["bethe+leiden-ml"] = self._timed("bethe+leiden-ml", leiden_ml, A, initial=labels,
                                               random_state=seed)
        return cands


def _count_estimate(A, seed):
    """Stochastic Lanczos quadrature estimate of the Bethe count (at most 100 steps,
    clip(2 10^7 / nnz, 10, 20) probes; noise ~ sqrt(2 k / probes)). Not KPM: its Jackson
    smoothing leaks the bulk, whose edge sits at the threshold (442 for 100 groups at 10^6
    edges, exactly 100)."""
    weighted = not np.all(A.data == 1.0)
    Aw = A / A.data.max() if weighted else A
    rho = nonbacktracking_radius(Aw, "moment" if weighted else "auto", random_state=seed)
    r = max(float(np.sqrt(rho)), 1.0 + 1e-3)
    S, _, _ = regularized_adjacency(Aw, r, weighted=weighted)
    n_vectors = int(np.clip(2e7 / max(S.nnz, 1), 10, 20))
    est, _ = count_eigenvalues_above(S, 1.0 / r, steps=100, n_vectors=n_vectors,
                                     random_state=seed)
    return est
