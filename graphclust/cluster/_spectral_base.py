"""The input, affinity, k-means, out-of-sample and file stages common to NJW and AHK.

`SpectralClustering` (NJW, ``_spectral.py``) and `AHKClustering` (``_ahk.py``) differ only in
their embedding; both ``fit``

- an array (n_samples, n_features) (a scipy sparse matrix too, for ``affinity="cosine"`` text
  data): a proximity graph is built (``graph``, default the kNN graph with ``n_neighbors``;
  ``n_neighbors="all"`` joins every pair, the papers' setting, refused above
  `COMPLETE_GRAPH_MAX_SAMPLES` points), then the affinity W on its edges;
- a `Graph`: the affinity W on its edges;
- with ``affinity="precomputed"``: a symmetric sparse or dense W, used as is (a network's binary
  link matrix, for instance).
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._persistence import (
    file_array,
    file_value,
    jsonable,
    make_from_params,
    read_model_file,
    write_model_file,
)
from .._progress import Progress
from .._validation import (check_points, check_random_state, check_symmetric_adjacency,
                           warn_feature_scales)
from ..graphs import (
    GRAPH_TYPES,
    Graph,
    NeighbourIndex,
    affinity as edge_affinity,
    default_sigma,
    euclidean_to_metric,
    graph_builder,
    knn_graph,
    local_scales,
    prepare_metric,
)
from ..kernels import NORMALIZATIONS
from ..threads import limit_threads
from ._common import kmeans_model, row_normalize, timed_stage
from ._row_order import canonical_node_order

__all__ = ["AFFINITIES", "COMPLETE_GRAPH_MAX_SAMPLES", "SpectralBase"]

#: ``n_neighbors="all"`` (complete graph, n (n - 1) edges) is refused above this many points.
COMPLETE_GRAPH_MAX_SAMPLES = 5000

AFFINITIES = ("gaussian", "local", "cosine", "binary", "multiplicity", "precomputed")

#: Graph types an estimator can build by name from points (no other parameter needed).
POINT_GRAPHS = tuple(t.name for t in GRAPH_TYPES.values() if t.input == "points" and not t.required)

#: Version of the file format written by `SpectralClustering.save` (`AHKClustering` writes 2:
#: version 1 plus the ``extension`` of its full kernel, and reads both).
MODEL_FORMAT_VERSION = 1


class SpectralBase(ClusterMixin, BaseEstimator):
    """Graph, affinity and k-means stages common to NJW and AHK."""

    #: model file format version written by `save`, and the versions `load` reads
    _FORMAT_VERSION = MODEL_FORMAT_VERSION
    _READ_VERSIONS = (MODEL_FORMAT_VERSION,)

    _parameter_constraints: dict = {
        "n_clusters": [Interval(numbers.Integral, 1, None, closed="left")],
        "sigma": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "affinity": [StrOptions(set(AFFINITIES)), None],
        "n_neighbors": [Interval(numbers.Integral, 1, None, closed="left"), StrOptions({"all"})],
        "graph": [StrOptions(set(POINT_GRAPHS)), callable],
        "local_neighbors": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_init": [Interval(numbers.Integral, 1, None, closed="left")],
        "eigen_tol": [Interval(numbers.Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "eigen_solver": [StrOptions({"auto", "dense", "eigsh", "lobpcg", "lobpcg-amg", "shift-invert"})],
        # a numpy Generator too, as every other estimator here takes (sklearn's own
        # "random_state" constraint refuses it)
        "random_state": [None, numbers.Integral, np.random.RandomState, np.random.Generator],
        "verbose": ["boolean"],
    }

    def _check_param_types(self):
        """sklearn's checks, and no bool where a count goes: ``n_clusters=True`` is Integral."""
        self._validate_params()
        for name, rules in self._parameter_constraints.items():
            value = getattr(self, name)
            counts = any(getattr(r, "type", None) is numbers.Integral for r in rules
                         if not isinstance(r, (str, type)))
            if counts and isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{name} must be an integer; got the bool {value!r}.")

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
            if metric == "euclidean" and not callable(self.graph):
                warn_feature_scales(X, stacklevel=6)  # the caller of fit
            if callable(self.graph):  # a builder (e.g. a pipeline's graph): its own metric
                metric = getattr(self.graph, "metric", metric)
                graph = self.graph(X)
                if not isinstance(graph, Graph):
                    raise TypeError(f"graph builder returned {type(graph).__name__}; expected "
                                    "a Graph.")
            elif self.graph == "knn":
                graph = knn_graph(X, k, metric=metric, random_state=seed)
            else:
                graph = graph_builder(self.graph, n_neighbors=k, random_state=seed)(X)
            self._set_points(X, metric)
        self.graph_ = graph
        if kind == "gaussian":
            self.sigma_ = default_sigma(graph) if self.sigma is None else float(self.sigma)
            return edge_affinity(graph, self.sigma_, kind="gaussian")
        if kind == "local":
            self._local_scales = local_scales(graph, self.local_neighbors)  # for predict
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
        """Validate, build W; return (W, eigensolver rng, timings, progress)."""
        self._check_param_types()
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
        # predict state of an earlier fit must not survive this one
        self._fit_kind = "precomputed" if self.affinity == "precomputed" else (
            "graph" if isinstance(X, Graph) else "array"
        )
        self._X_fit = self._nn = self._metric = self._local_scales = None
        if self._fit_kind != "array" and hasattr(self, "n_features_in_"):
            del self.n_features_in_
        progress = Progress(bool(self.verbose))
        timings = {}
        if self._fit_kind == "array":
            k = "complete" if self.n_neighbors == "all" else f"{self.n_neighbors}-NN"
            what = f"{k} graph of {n} points and {self.affinity or 'gaussian'} affinities"
        elif self._fit_kind == "graph":
            what = f"{self.affinity or 'gaussian'} affinities on the given graph ({n} nodes)"
        else:
            what = f"checking the precomputed affinity matrix ({n} x {n})"
        with timed_stage(progress, timings, "graph", what):
            W = self._affinity_matrix(X, self._stage_rngs[0])
        progress.note(f"W has {W.nnz // 2} edges")
        self.affinity_matrix_ = W
        return W, self._stage_rngs[1], timings, progress

    def _finish_fit(self, Y, timings, progress):
        """Row-normalise the embedding Y, run k-means, keep what `predict` needs."""
        self.embedding_ = row_normalize(Y)
        with timed_stage(progress, timings, "kmeans", f"k-means ({self.n_init} restarts)"):
            # in the graph's own node order: the same starts for any order of the rows
            km = kmeans_model(self.embedding_, self.n_clusters, self.n_init, self._stage_rngs[2],
                              order=canonical_node_order(self.affinity_matrix_))
        self.labels_ = km.labels_.astype(np.int64)
        self.inertia_ = float(km.inertia_)
        self.cluster_centers_ = km.cluster_centers_
        self._degrees = np.asarray(self.affinity_matrix_.sum(axis=1)).ravel()
        self.timings_ = timings
        return self

    @property
    def n_clusters_(self):
        """Clusters of the fit (``labels_`` in 0..n_clusters_-1), as every clusterer here has."""
        check_is_fitted(self, "labels_")
        return int(self.labels_.max()) + 1

    def fit(self, X, y=None):
        """Cluster `X`.

        Parameters
        ----------
        X : array (n_samples, n_features), Graph, or (n, n) matrix W
            Points (a kNN graph is built on them), a `Graph` (affinities on its edges), or
            with ``affinity="precomputed"`` the symmetric affinity matrix itself.
        y : ignored

        Returns
        -------
        self
        """
        with limit_threads():
            return self._fit(X)

    def fit_predict(self, X, y=None):
        """Fit and return ``labels_``."""
        return self.fit(X).labels_

    # ------------------------------------------------------------------ out-of-sample
    def _set_points(self, X, metric):
        """Keep the training points (unit rows for cosine) and their neighbour index for predict.

        Called by fit on array input, and by `graphclust.Pipeline` after fitting the estimator
        on the graph it built from those points (the graph's distances must be `metric`
        distances of the points).
        """
        self._index_points(prepare_metric(X, metric), metric)
        self._fit_kind = "array"

    def _index_points(self, Xm, metric):
        self._X_fit = Xm
        self._metric = metric
        # exact, searched less the points' far offset (`graphs.NeighbourIndex`)
        self._nn = NeighbourIndex(Xm)
        self.n_features_in_ = Xm.shape[1]

    def _new_affinities(self, dist, idx):
        """Affinities (m, k) of new points to their k nearest training points, as in the fit."""
        kind = self.affinity or "gaussian"
        if kind == "gaussian":
            return np.exp(-0.5 * (dist / self.sigma_) ** 2)  # (d / sigma)^2: no under/overflow
        if kind == "local":
            # sigma_x: distance to the local_neighbors-th nearest training point (the k-th when
            # fewer are searched); zero scales take the smallest positive training scale
            rank = min(self.local_neighbors, dist.shape[1]) - 1
            sx = dist[:, rank].copy()
            sx[sx <= 0] = self._local_scales.min()
            return np.exp(-(dist / sx[:, None]) * (dist / self._local_scales[idx]))
        if kind == "cosine":
            return np.clip(1.0 - dist, 0.0, None)
        return np.ones_like(dist)  # binary, multiplicity: a kNN graph's edges all weigh 1

    def _nystrom(self, X):
        """Nystrom embedding of new points: (row-normalised E (m, k'), nearest, undefined mask).

        ``undefined`` marks the rows whose extension does not exist (every affinity underflows
        to 0, or ``normalization="nn"`` with d_x equal to an eigenvalue).
        """
        check_is_fitted(self, "labels_")
        name = type(self).__name__
        if self._fit_kind == "graph":
            raise ValueError(
                f"this {name} was fitted on a Graph, so it has no coordinates to find the "
                "neighbours of new points: fit it on the data array (n_samples, n_features) "
                "to use predict, or use graphclust.Pipeline, which builds the graph itself."
            )
        if self._fit_kind == "precomputed":
            raise ValueError(
                f"this {name} was fitted with affinity='precomputed', so it has no coordinates "
                "to find the neighbours of new points: fit it on the data array with a "
                "built-in affinity ('gaussian', 'local', 'cosine', 'binary') to use predict."
            )
        cosine = self._metric == "cosine"
        if sp.issparse(X) and not cosine:
            raise TypeError(
                "a scipy sparse X is read as data points only with affinity='cosine'; this "
                f"model was fitted with affinity={self.affinity!r}: pass a dense array."
            )
        X = check_points(X, min_samples=1, accept_sparse=cosine)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {name} is expecting {self.n_features_in_} "
                "features as input (the number it was fitted with)."
            )
        n_train = self._X_fit.shape[0]
        k = n_train if self.n_neighbors == "all" else min(self.n_neighbors, n_train)
        dist, idx = self._nn.kneighbors(prepare_metric(X, self._metric), n_neighbors=k)
        dist = euclidean_to_metric(dist, self._metric)
        w = self._new_affinities(dist, idx)
        m = X.shape[0]
        Wx = sp.csr_matrix((w.ravel(), idx.ravel(), np.arange(0, m * k + 1, k)), shape=(m, n_train))
        dx = w.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            E = self._extend(Wx, dx, idx[:, 0])
        undefined = ~(dx > 0) | ~np.all(np.isfinite(E), axis=1)
        E[undefined] = 0.0
        return row_normalize(E), idx[:, 0], undefined

    def _extend(self, Wx, dx, nearest):
        """Embedding rows (not normalised) of points with affinities Wx (m, n) to the training
        points, degrees dx and nearest training points `nearest`: the row of the fitted
        eigenproblem at each point, solved for it (class Notes). Non-finite where undefined."""
        d = self._degrees
        lam = self._ext_values
        norm = self._ext_normalization

        def inv(v):
            return np.divide(1.0, v, out=np.zeros_like(v), where=v > 0)

        a = NORMALIZATIONS.get(norm)
        if norm == "nn":
            A = Wx
        elif norm == "sym":
            A = sp.diags(inv(np.sqrt(dx))) @ Wx @ sp.diags(1.0 / np.sqrt(d))
        else:
            Wa = Wx @ sp.diags(d ** -a)
            rows = np.asarray(Wa.sum(axis=1)).ravel()
            A = sp.diags(inv(rows)) @ Wa
        AV = np.asarray(A @ self._ext_vectors)
        if self._ext_kind == "nystrom":
            den = dx[:, None] - lam[None, :] if norm == "nn" else 1.0 - lam
            return (AV / den) @ self._ext_coef
        # resolvent (AHK's full kernel): M y = mu y + diag(B^1/2 r) kappa at the row of x
        gamma = self._ext_gamma
        if norm == "nn":
            den, r = dx[:, None] + gamma - lam[None, :], np.ones_like(dx)
        elif norm == "sym":
            den, r = 1.0 + gamma - lam[None, :], np.sqrt(dx)
        else:  # d^(a)_x = dx^-a sum_j w_xj d_j^-a, the mass at x
            den, r = 1.0 + gamma - lam[None, :] / (dx ** -a * rows)[:, None], np.ones_like(dx)
        kappa = self._ext_coef[self._ext_components[nearest]]
        return (AV + r[:, None] * kappa) / den

    def predict(self, X):
        """Assign new points to the fitted clusters without refitting (Nystrom extension).

        Each new point x is placed in the fitted embedding by the Nystrom formula (see the
        class Notes for the exact formula), its row is normalised to unit length as in the fit,
        and it takes the label of the nearest k-means centroid (``cluster_centers_``).

        Parameters
        ----------
        X : array (m, n_features_in_)
            New points (a scipy sparse matrix too for a model fitted with
            ``affinity="cosine"``). Their neighbours are searched exactly among the training
            points: the ``n_neighbors`` nearest (all of them for ``n_neighbors="all"``).

        Returns
        -------
        labels : int array (m,)
            Values in 0 .. n_clusters - 1. A point whose extension is undefined (all its
            affinities underflow to 0, e.g. far from the data with a small sigma) takes the
            label of its nearest training point.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before `fit`.
        ValueError
            X has another number of features than the training data, or the model was fitted
            on a `Graph` or a precomputed affinity (no coordinates to search neighbours in).
        """
        E, nearest, undefined = self._nystrom(X)
        C = self.cluster_centers_
        labels = np.argmin((C**2).sum(axis=1)[None, :] - 2.0 * E @ C.T, axis=1).astype(np.int64)
        labels[undefined] = self.labels_[nearest[undefined]]
        return labels

    # ------------------------------------------------------------------ persistence
    #: fitted attributes written by `save` (arrays / JSON scalars); subclasses add theirs
    _SAVED_ARRAYS = ("labels_", "embedding_", "eigenvalues_", "cluster_centers_")
    _SAVED_SCALARS = ("sigma_", "inertia_", "n_components_")
    _PREDICT_ARRAYS = ("degrees", "ext_vectors", "ext_values", "ext_coef")

    @classmethod
    def _model_format(cls):
        return f"graphclust.{cls.__name__}"

    def save(self, path):
        """Write the fitted model to `path`: one .npz of arrays + JSON metadata, no pickle.

        The file holds the parameters, the fitted attributes listed in the class docstring
        (except ``affinity_matrix_``, ``graph_`` and, for AHK, ``kernel_``: the n x n
        operators are not stored) and what `predict` needs: the training points, the degrees,
        the eigenvectors, eigenvalues and coefficients of the extension, the centroids. It is
        written to a temporary file, then renamed: an error leaves nothing behind.

        Parameters
        ----------
        path : str or pathlib.Path

        Returns
        -------
        pathlib.Path
            The path written; read it back with `load`.
        """
        check_is_fitted(self, "labels_")
        params = {k: jsonable(v) for k, v in self.get_params().items()
                  if k != "graph" or isinstance(v, str)}  # a builder callable is not stored
        if not (params["random_state"] is None or isinstance(params["random_state"], int)):
            params["random_state"] = None  # a Generator cannot be stored; the fit does not need it
        meta = {
            "format": self._model_format(),
            "format_version": self._FORMAT_VERSION,
            "params": params,
            "fit_kind": self._fit_kind,
            "metric": self._metric,
            "normalization": self._ext_normalization,
            "extension": self._ext_kind,
            "extension_gamma": self._ext_gamma,
            "timings_": {k: float(v) for k, v in self.timings_.items()},
            "fitted": {k: jsonable(getattr(self, k)) for k in self._SAVED_SCALARS},
        }
        arrays = {k: getattr(self, k) for k in self._SAVED_ARRAYS}
        arrays.update(degrees=self._degrees, ext_vectors=self._ext_vectors,
                      ext_values=self._ext_values, ext_coef=self._ext_coef)
        if self._ext_kind == "resolvent":
            arrays["ext_components"] = self._ext_components
        if self._local_scales is not None:
            arrays["local_scales"] = self._local_scales
        if sp.issparse(self._X_fit):
            X = sp.csr_matrix(self._X_fit)
            arrays.update(X_fit_data=X.data, X_fit_indices=X.indices, X_fit_indptr=X.indptr,
                          X_fit_shape=np.array(X.shape))
        elif self._X_fit is not None:
            arrays["X_fit"] = self._X_fit
        return write_model_file(path, arrays, meta)

    @classmethod
    def load(cls, path):
        """Read a model written by `save` (``np.load(..., allow_pickle=False)``).

        Parameters
        ----------
        path : str or pathlib.Path

        Returns
        -------
        model : the class `load` is called on
            The fitted estimator; its `predict` gives the same labels as the saved one's.

        Raises
        ------
        ValueError
            If the file is damaged, was written by another estimator or is not a graphclust
            model, or has another format version.
        """
        data, meta = read_model_file(path, fmt=cls._model_format(), version=cls._READ_VERSIONS,
                                     kind="model")
        missing = [k for k in (*cls._SAVED_ARRAYS, *cls._PREDICT_ARRAYS) if k not in data]
        if missing:
            raise ValueError(f"{path} is damaged: arrays {missing} are missing.")
        model = make_from_params(cls, meta.get("params"), path)
        fitted = meta.get("fitted")
        if not isinstance(fitted, dict) or any(k not in fitted for k in cls._SAVED_SCALARS):
            raise ValueError(f"{path} is damaged: its fitted values "
                             f"{list(cls._SAVED_SCALARS)} are incomplete.")
        for k in cls._SAVED_SCALARS:
            setattr(model, k, fitted[k])
        if model.sigma_ is not None:
            file_value(fitted, "sigma_", path, low=0)
        file_value(fitted, "inertia_", path, low=0)
        fit_kind = file_value(meta, "fit_kind", path, kind="str")
        if fit_kind not in ("array", "graph", "precomputed"):
            raise ValueError(f"{path} is damaged: fit_kind = {fit_kind!r}.")
        metric = file_value(meta, "metric", path, kind="str", allow_none=True)
        normalization = file_value(meta, "normalization", path, kind="str")
        if normalization not in NORMALIZATIONS:
            raise ValueError(f"{path} is damaged: normalization = {normalization!r}.")
        model.timings_ = meta.get("timings_", {})
        k = model.n_clusters
        model.labels_ = file_array(data, "labels_", path, kind="int", ndim=1)
        n = model.labels_.shape[0]
        if n and (model.labels_.min() < 0 or model.labels_.max() >= k):
            raise ValueError(f"{path} is damaged: labels_ holds values outside 0..{k - 1}.")
        for name in cls._SAVED_ARRAYS:
            if name != "labels_":
                setattr(model, name, file_array(data, name, path))
        model._fit_kind = fit_kind
        model._ext_normalization = normalization
        model._degrees = file_array(data, "degrees", path, shape=(n,))
        model._ext_vectors = file_array(data, "ext_vectors", path, shape=(n, None))
        m = model._ext_vectors.shape[1]
        model._ext_values = file_array(data, "ext_values", path, shape=(m,))
        model._ext_coef = file_array(data, "ext_coef", path, shape=(None, None))
        model._ext_kind = meta.get("extension", "nystrom")  # absent from version 1 files
        model._ext_components = model._ext_gamma = None
        if model._ext_kind == "resolvent":
            model._ext_gamma = file_value(meta, "extension_gamma", path, low=0)
            model._ext_components = file_array(data, "ext_components", path, kind="int",
                                               shape=(n,))
            c = model._ext_coef.shape[0]
            if n and (model._ext_components.min() < 0 or model._ext_components.max() >= c):
                raise ValueError(f"{path} is damaged: ext_components holds values outside "
                                 f"0..{c - 1}.")
            if model._ext_coef.shape[1] != m:
                raise ValueError(f"{path} is damaged: ext_coef has shape "
                                 f"{model._ext_coef.shape}, expected (c, {m}).")
        elif model._ext_kind != "nystrom":
            raise ValueError(f"{path} is damaged: extension = {model._ext_kind!r}.")
        elif model._ext_coef.shape[0] != m:
            raise ValueError(f"{path} is damaged: ext_coef has shape {model._ext_coef.shape}, "
                             f"expected ({m}, k).")
        model._local_scales = file_array(data, "local_scales", path, shape=(n,), required=False)
        if model.cluster_centers_.shape != (k, model._ext_coef.shape[1]):
            raise ValueError(f"{path} is damaged: cluster_centers_ has shape "
                             f"{model.cluster_centers_.shape}.")
        model._X_fit = model._nn = model._metric = None
        if "X_fit_data" in data:
            X = sp.csr_matrix((file_array(data, "X_fit_data", path),
                                file_array(data, "X_fit_indices", path, kind="int"),
                                file_array(data, "X_fit_indptr", path, kind="int")),
                               shape=tuple(int(v) for v in file_array(
                                   data, "X_fit_shape", path, kind="int", shape=(2,))))
            model._index_points(X, metric)
        elif "X_fit" in data:
            model._index_points(file_array(data, "X_fit", path, shape=(n, None)), metric)
        if (fit_kind == "array") != (model._X_fit is not None) or (
                model._X_fit is not None and model._X_fit.shape[0] != n):
            raise ValueError(f"{path} is damaged: its training points do not match its labels.")
        model._upgrade(meta.get("format_version"))
        return model

    def _upgrade(self, version):
        """Adjust the parameters of a model loaded from an older file version (none here)."""

    def _set_extension(self, vectors, values, coef, normalization):
        """What `predict` needs: embedding = Nystrom(vectors, values) @ coef (class Notes)."""
        self._ext_kind = "nystrom"
        self._ext_vectors = vectors
        self._ext_values = np.asarray(values, dtype=np.float64)
        self._ext_coef = coef
        self._ext_normalization = normalization
        self._ext_components = self._ext_gamma = None

    def _set_resolvent_extension(self, vectors, mu, offsets, components, gamma, normalization):
        """What `predict` needs for AHK's full kernel: its top eigenvectors y, the eigenvalues
        mu of M = L + gamma B, the constraints' multipliers per component (`offsets`) and each
        training point's component (`graphclust.kernels.ResolventSpectrum`)."""
        self._set_extension(vectors, mu, offsets, normalization)
        self._ext_kind = "resolvent"
        self._ext_components = np.asarray(components, dtype=np.int64)
        self._ext_gamma = float(gamma)
