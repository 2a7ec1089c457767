"""NJW spectral clustering (Ng, Jordan & Weiss): the one NJW of graphclust.

`njw_embedding` gives the k bottom eigenvectors of L_sym = I - D^-1/2 W D^-1/2 (each connected
component's lambda = 0 vector in closed form), `njw_labels` the NJW partition (rows normalised to
unit length, then k-means), and `SpectralClustering` the estimator around them (its input,
k-means, predict and files are `SpectralBase`'s, shared with AHK).
"""

from __future__ import annotations

import numpy as np

from ..kernels import laplacian_eigenpairs, symmetric_form
from ._common import best_kmeans, row_normalize, timed_stage, warn_more_components
from ._row_order import canonical_node_order
from ._spectral_base import SpectralBase

__all__ = ["MAX_NJW_COMPONENTS", "SpectralClustering", "njw_embedding", "njw_labels"]

#: NJW on a graph with more components than clusters embeds all component indicators (n x c).
MAX_NJW_COMPONENTS = 1000


class SpectralClustering(SpectralBase):
    """Ng-Jordan-Weiss (NJW) spectral clustering on a sparse graph.

    The embedding is the k eigenvectors of L_sym = I - D^-1/2 W D^-1/2 with the smallest
    eigenvalues (largest of S = D^-1/2 W D^-1/2), rows normalised to unit length, then k-means.
    New points are placed by the Nystrom extension (`predict`), and a fitted model is saved
    and loaded without pickle (`save`, `load`).

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
    graph : str or callable, default "knn"
        The proximity graph built from array input: a name of `graphclust.graphs.GRAPH_TYPES`
        that takes points ("knn", "mst", "pmst", "dmst"), or a callable ``X -> Graph`` (its
        ``metric`` attribute, if any, names the metric of its distances for `predict`).
    n_neighbors : int or "all", default 10
        kNN graph size for array input, and the number of training neighbours of a new point
        in `predict`; "all" is the complete graph (n <= 5000).
    local_neighbors : int, default 7
        The neighbour rank defining sigma_i for ``affinity="local"``.
    n_init : int, default 10
        k-means restarts; the one with the lowest within-cluster sum of squares is kept.
    eigen_solver : {"auto", "dense", "eigsh", "lobpcg", "lobpcg-amg", "shift-invert"}
        Default "auto". See `top_eigenpairs` ("lobpcg-amg" needs pyamg: the `amg` extra).
    eigen_tol : float or "auto", default "auto"
        Accuracy asked of the eigensolver (`top_eigenpairs`' ``tol``): "auto" is 1e-8 for
        Lanczos and the dense solver, 1e-6 for LOBPCG-AMG (also when "auto" hands over to it on
        a graph with a tiny spectral gap). 1e-6 gave the same labels
        (ARI >= 0.99) on the development sets and on 250 000 connected points in a third of the
        eigensolve's time (docs/scaling.md); on nearly disconnected graphs the labels move
        with it, since the top k-dimensional subspace there is barely determined.
    random_state : int, Generator, RandomState or None
        Seeds the kNN search (large n), the Lanczos start vector and k-means.
    verbose : bool, default False
        Progress lines on stderr (`graphclust._progress.Progress`) for the graph and
        affinities, the eigensolve and k-means, each with its time.

    Attributes
    ----------
    labels_ : int array (n,)
    embedding_ : array (n, k)
        The row-normalised spectral embedding k-means ran on.
    cluster_centers_ : array (n_clusters, k)
        The k-means centroids in that embedding (`predict` assigns to the nearest).
    eigenvalues_ : array (k,)
        Smallest eigenvalues of L_sym (the component zeros first).
    affinity_matrix_ : csr_matrix (n, n)
    sigma_ : float or None
    n_components_ : int
        Connected components of W. Each contributes its exact lambda = 0 eigenvector; when there
        are at least k components the embedding is the component indicators (all of them).
    inertia_ : float
        Within-cluster sum of squares of the kept k-means run.
    n_features_in_ : int
        Only after a fit on a data array.
    timings_ : dict
        Seconds per stage: graph, eigenpairs, embedding, kmeans.

    Notes
    -----
    Out-of-sample extension (`predict`). A new point x gets affinities w_xj to its
    ``n_neighbors`` nearest training points j (0 to the others), computed as in the fit:
    exp(-||x - x_j||^2 / (2 sigma_^2)) for ``gaussian``, exp(-||x - x_j||^2 / (sigma_x
    sigma_j)) for ``local`` (sigma_x its distance to its `local_neighbors`-th nearest training
    point, sigma_j the fitted scales), the cosine similarity clipped at 0 for ``cosine``, 1 for
    ``binary`` / ``multiplicity``. With d_x = sum_j w_xj and d_j the training degrees, its
    normalised affinity row is s_xj = w_xj / sqrt(d_x d_j), and each eigenvector phi_l of
    L_sym (eigenvalue lambda_l, so S phi_l = (1 - lambda_l) phi_l) extends by the Nystrom
    formula

        phi_l(x) = (s_x . phi_l) / (1 - lambda_l),

    which returns phi_l(x_i) exactly for a training point whose affinity row is s_x. The row
    (phi_1(x), ..., phi_k(x)) is normalised to unit length and x takes the label of the
    nearest centroid in ``cluster_centers_``. The kNN index of the training points is built
    in `fit` (exact search, scikit-learn's NearestNeighbors).

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (40, 2)), rng.normal(3, 0.3, (40, 2))])
    >>> model = gc.SpectralClustering(2, random_state=0).fit(X)
    >>> labels = model.labels_
    >>> int(labels[:40].sum() in (0, 40)), len(set(labels[:40]) & set(labels[40:]))
    (1, 0)
    >>> new = np.array([[0.1, -0.2], [2.9, 3.1]])
    >>> bool(model.predict(new)[0] == labels[0]), bool(model.predict(new)[1] == labels[40])
    (True, True)
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "njw.npz")
    >>> back = gc.SpectralClustering.load(model.save(path))
    >>> bool((back.predict(new) == model.predict(new)).all())
    True
    """

    def __init__(
        self,
        n_clusters=8,
        *,
        sigma=None,
        affinity=None,
        graph="knn",
        n_neighbors=10,
        local_neighbors=7,
        n_init=10,
        eigen_solver="auto",
        eigen_tol="auto",
        random_state=None,
        verbose=False,
    ):
        self.n_clusters = n_clusters
        self.sigma = sigma
        self.affinity = affinity
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.local_neighbors = local_neighbors
        self.n_init = n_init
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.random_state = random_state
        self.verbose = verbose

    def _fit(self, X):
        W, rng, timings, progress = self._begin_fit(X)
        with timed_stage(progress, timings, "eigenpairs",
                    f"NJW eigenpairs: the {self.n_clusters} smallest of L_sym"):
            Y, values, n_comp = njw_embedding(
                W,
                self.n_clusters,
                tol=self.eigen_tol,
                method=self.eigen_solver,
                random_state=rng,
            )
        timings["embedding"] = 0.0
        self.eigenvalues_ = values
        self.n_components_ = n_comp
        self._set_extension(Y, values, np.eye(Y.shape[1]), "sym")
        return self._finish_fit(Y, timings, progress)


def njw_embedding(W, n_clusters, *, tol="auto", method="auto", random_state=None):
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
        warn_more_components(c, n_clusters, stacklevel=3)
    Z = form.trivial.toarray()
    if k_rest <= 0:
        return Z, np.zeros(c), c
    spec = laplacian_eigenpairs(W, k_rest, "sym", tol=tol, method=method, random_state=random_state)
    Y = np.hstack([Z, spec.vectors])
    return Y, np.concatenate([np.zeros(c), spec.values]), c


def njw_labels(W, n_clusters, *, n_init=10, tol="auto", method="auto", random_state=None):
    """The NJW partition of the affinity W: `njw_embedding`, rows normalised, best k-means.

    Parameters
    ----------
    W : sparse or dense (n, n)
        Symmetric non-negative affinities, no isolated vertex.
    n_clusters : int
    n_init : int, default 10
        k-means++ restarts; the best by within-cluster sum of squares is kept.
    tol, method : as in `njw_embedding` (``method="shift-invert"`` suits pixel grids, whose
        smallest Laplacian eigenvalues crowd near 0).
    random_state : int, Generator or None
        Seeds the eigensolver, then k-means.

    Returns
    -------
    labels : int64 array (n,)

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (30, 2)), rng.normal(4, 0.3, (30, 2))])
    >>> labels = gc.cluster.njw_labels(gc.affinity(gc.knn_graph(X, 5)), 2, random_state=0)
    >>> int(labels[:30].sum() in (0, 30)), int(len(set(labels[:30])) + len(set(labels[30:])))
    (1, 2)
    """
    from .._validation import check_random_state

    rng = check_random_state(random_state)
    Y, _, _ = njw_embedding(W, n_clusters, tol=tol, method=method, random_state=rng)
    labels, _ = best_kmeans(row_normalize(Y), n_clusters, n_init, rng,
                            order=canonical_node_order(W))
    return labels
