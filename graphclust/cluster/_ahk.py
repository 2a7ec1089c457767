"""Aggregated Heat Kernel (AHK) spectral clustering (Huang, Yoo, Qin & Yu, ICDM 2011)."""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ..kernels import (
    NORMALIZATIONS,
    SPECTRAL_KERNELS,
    SpectralKernel,
    kernel_weights,
    laplacian_eigenpairs,
    resolvent_eigenpairs,
)
from ._common import timed_stage, warn_more_components
from ._spectral_base import SpectralBase

__all__ = ["AHKClustering", "DEFAULT_N_EIGENPAIRS"]

#: Default m (non-trivial eigenpairs) when ``n_eigenpairs="auto"`` truncates (the heat and mdm
#: kernels; ahk and commute take the full kernel): min(n - n_components, 100).
#: Measured, on sets that are not reported against the paper (``scripts/reproduce_ahk.py --m-dev``:
#: USPS 2000, letters 3000, synthetic control, estimator defaults): NMI is flat from m = 20-50 on
#: (within +-1 point), while Lanczos time grows with m. On the seeded 1 000-point test set the
#: top-k subspace of the truncated kernel is within sin(theta) = 4e-3 of the full kernel's at
#: m = 100 against 2.4e-2 at m = 50 (tests/test_ahk.py). 100 is the smallest round m meeting both;
#: the paper's 300-500 bought nothing measurable on these sets (``docs/spectral.md``).
DEFAULT_N_EIGENPAIRS = 100

#: Kernels whose weight is a resolvent, w(lambda) = c / (gamma + lambda): their full sum over every
#: eigenpair is computed without the spectrum (`graphclust.kernels.resolvent_eigenpairs`).
FULL_KERNELS = frozenset({"ahk", "commute"})

#: At most this many component contrasts are kept (``component_vectors``): each is a dense column.
MAX_COMPONENT_CONTRASTS = 1000


class AHKClustering(SpectralBase):
    """Aggregated Heat Kernel spectral clustering on a sparse graph.

    Algorithm 2 of Huang et al.: (1) a Laplacian normalisation of the affinity W (default
    Laplace-Beltrami); (2)-(4) the top-k eigenvectors of the kernel
    H = sum_i psi_i psi_i^T / (gamma + lambda_i) over the non-trivial generalised eigenpairs
    (lambda_i, psi_i); (5) rows normalised to unit length; (6) k-means, best of `n_init`
    restarts by within-cluster sum of squares.

    By default (``n_eigenpairs="auto"`` with the ahk or commute kernel) H sums over *every*
    eigenpair, the paper's kernel without truncation, and no eigenpair of L is computed: H's
    top eigenvectors are the smallest eigenvectors of the sparse M = L + gamma B (B the mass
    matrix) restricted to the complement of the degree vector
    (`graphclust.kernels.resolvent_eigenpairs`), an eigenproblem with k columns. With an
    integer m, the paper's truncation: the m smallest eigenpairs (Lanczos on the symmetric
    form, each connected component's trivial eigenvector deflated exactly), H held as its
    factors, its top-k eigenvectors through an m x m eigenproblem (never n x n); needed by
    the heat and mdm kernels, whose weights are not a resolvent.

    Parameters
    ----------
    n_clusters : int
        k, 1 <= k < n_samples for the full kernel; 1 <= k <= m for a truncated one.
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
        Laplacian normalisation (see `graphclust.kernels.laplacian`).
    gamma : float >= 0, default 0.01
        Eigenvalue smoothing (the paper's value); gamma = 0 is the Laplacian pseudo-inverse.
    n_eigenpairs : int, "auto" or "all", default "auto"
        m, 1 <= m <= n - n_components (m >= n is refused): H over the m smallest eigenpairs.
        "all": every eigenpair, without computing them (above; kernels ahk and commute only).
        "auto": "all" for the ahk and commute kernels, min(n - n_components,
        `DEFAULT_N_EIGENPAIRS`) for heat and mdm. Measured on the development sets
        (``scripts/reproduce_ahk.py --m-dev``): the full kernel's NMI equals m = 100's within
        0.3 points, at a fraction of the time (docs/spectral.md); at 250 000 points it takes
        seconds where m = 100 took minutes (docs/scaling.md).
    kernel : {"ahk", "heat", "mdm", "commute"}, default "ahk"
        The spectral weight w(lambda) (`graphclust.kernels.kernel_weights`): AHK 1/(gamma +
        lambda), heat kernel exp(-t lambda), multiscale diffusion map ((1 - lambda)/lambda)^2,
        commute time vol/(gamma + lambda) (use with ``normalization="nn"``).
    t : float > 0, default 1.0
        Heat kernel time (``kernel="heat"`` only).
    component_vectors : {"auto", "contrast", "drop"}, default "auto"
        What a disconnected graph's lambda = 0 eigenvectors contribute to H (see Notes).
        ``contrast``: Algorithm 2's step 3 read literally (the sum starts at i = 2): only the
        graph's one global trivial vector is dropped; the c - 1 component contrasts (lambda = 0)
        are kept with weight w(0), e.g. 1/gamma. ``drop``: the paper's remark for unconnected
        graphs ("filter out the smaller eigenvalues"): every component's vector is dropped.
        ``auto``: contrast when w(0) is finite (ahk / commute with gamma > 0, heat), else drop;
        drop with a warning above `MAX_COMPONENT_CONTRASTS` components (each contrast is a
        dense column). Irrelevant for connected graphs.
    sigma, affinity, graph, n_neighbors, local_neighbors, n_init, eigen_solver, eigen_tol, random_state
        As in `SpectralClustering` (``n_neighbors`` is also the number of training neighbours
        of a new point in `predict`).
    verbose : bool, default False
        Progress lines on stderr (`graphclust._progress.Progress`) for the graph and
        affinities, the Laplacian eigensolve, the kernel embedding and k-means, each with its
        time.

    Attributes
    ----------
    labels_ : int array (n,)
    embedding_ : array (n, k)
        Row-normalised top-k eigenvectors of H.
    eigenvalues_ : array (m,)
        The m smallest non-trivial Laplacian eigenvalues, ascending (empty for the full
        kernel, which computes none).
    kernel_eigenvalues_ : array (k,)
        The k largest eigenvalues of H.
    kernel_ : SpectralKernel or None
        The truncated H as its factors (apply it to blocks, take its diagonal, ...); None for
        the full kernel, which is never formed.
    n_eigenpairs_ : int
        m, or n - n_components for the full kernel.
    n_components_ : int
    eigen_residual_ : float
        Largest residual ||A phi - mu phi|| of the eigenpairs (symmetric form; for the full
        kernel, of I - M / ||M|| restricted, `graphclust.kernels.ResolventSpectrum`).
    component_vectors_ : str
        The resolved ``component_vectors`` ("contrast" or "drop").
    eigen_method_ : str
        The eigensolver that produced them (`graphclust.kernels.top_eigenpairs`' methods, e.g.
        "dense", "eigsh", "eigsh+lobpcg-amg").
    cluster_centers_ : array (n_clusters, k)
        The k-means centroids in ``embedding_`` (`predict` assigns to the nearest).
    affinity_matrix_, sigma_, inertia_, n_features_in_, timings_
        As in `SpectralClustering` (timings: graph, eigenpairs, embedding, kmeans).

    Notes
    -----
    Disconnected graphs: dropping every component's trivial vector throws away exactly the
    vectors that tell the components apart, so on a graph that falls apart into its k clusters
    ``drop`` clusters *within* components (a test shows it); ``contrast`` is the limit of a
    connected graph whose bridges fade, and recovers them. Tiny components (a few outliers) then
    weigh as much as big ones, as in NJW.

    Exactness: the full kernel (and m = n - n_components) with ``eigen_solver="dense"`` equals
    the dense reference `graphclust.cluster.ahk_reference` to rounding; the iterative solvers
    meet `eigen_tol`; smaller m drops the terms of largest lambda, the smallest weights (tests
    and ``docs/spectral.md`` quantify the effect). The paper's "if unconnected, filter out the smaller
    eigenvalues" is done exactly: the lambda = 0 vector of every component is deflated.

    Out-of-sample extension (`predict`). A new point x gets affinities w_xj to its
    ``n_neighbors`` nearest training points j (0 to the others), computed as in the fit (see
    `SpectralClustering`), and d_x = sum_j w_xj. Each column psi_i of ``kernel_.vectors``
    (Laplacian eigenvalue lambda_i; the component contrasts have lambda_i = 0) extends by the
    row of its generalised eigenproblem at x (the Nystrom formula), with d_j the training
    degrees:

    - rw, fp, lbn (a = 0, 1/2, 1): psi_i(x) = sum_j p_xj psi_i(j) / (1 - lambda_i), with
      p_xj = w_xj d_j^-a / sum_l w_xl d_l^-a (the row x of (D^(a))^-1 W^(a); d_x^-a cancels);
    - sym: psi_i(x) = sum_j w_xj psi_i(j) / (sqrt(d_x d_j) (1 - lambda_i));
    - nn: psi_i(x) = sum_j w_xj psi_i(j) / (d_x - lambda_i).

    The kernel row is H(x, .) = sum_i w(lambda_i) psi_i(x) psi_i, and the embedding
    coordinate of x on the l-th top eigenvector y_l of H (eigenvalue theta_l) is

        y_l(x) = H(x, .) y_l / theta_l = sum_i psi_i(x) w(lambda_i) (psi_i . y_l) / theta_l,

    which is y_l(x_i) exactly for a training point whose affinity row is w_x, since
    H y_l = theta_l y_l.

    The full kernel holds no psi_i: its y_l extends by the row x of its own eigenproblem
    M y = mu y + b kappa (kappa the multiplier of the constraint y orthogonal to b = B psi_1,
    per connected component for ``drop``; a new point takes its nearest training point's
    component), solved for y(x):

    - rw, fp, lbn: y(x) = (sum_j p_xj y(j) + kappa) / (1 + gamma - mu / d^(a)_x), with p_xj as
      above and d^(a)_x = d_x^-a sum_j w_xj d_j^-a;
    - sym: y(x) = (sum_j w_xj y(j) / sqrt(d_x d_j) + sqrt(d_x) kappa) / (1 + gamma - mu);
    - nn: y(x) = (sum_j w_xj y(j) + kappa) / (d_x + gamma - mu).

    Both are y(x_i) exactly for a training point whose affinity row is w_x (tested). The row
    (y_1(x), ..., y_k(x)) is normalised to unit length and x takes the label of the nearest
    centroid in ``cluster_centers_``. The kNN index of the training points is built in `fit`
    (exact search).

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> from graphclust.metrics import nmi
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (40, 2)), rng.normal(3, 0.3, (40, 2))])
    >>> model = gc.AHKClustering(2, n_neighbors=8, random_state=0).fit(X)
    >>> nmi(np.repeat([0, 1], 40), model.labels_)
    1.0
    >>> new = np.array([[0.1, -0.2], [2.9, 3.1]])
    >>> bool((model.predict(new) == model.labels_[[0, 40]]).all())
    True
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "ahk.npz")
    >>> back = gc.AHKClustering.load(model.save(path))
    >>> bool((back.predict(new) == model.predict(new)).all())
    True
    """

    _FORMAT_VERSION = 2  # version 1 plus the full kernel's extension ("resolvent")
    _READ_VERSIONS = (1, 2)
    _SAVED_ARRAYS = (*SpectralBase._SAVED_ARRAYS, "kernel_eigenvalues_")
    _SAVED_SCALARS = (*SpectralBase._SAVED_SCALARS, "n_eigenpairs_", "component_vectors_",
                      "eigen_method_", "eigen_residual_")

    _parameter_constraints: dict = {
        **SpectralBase._parameter_constraints,
        "normalization": [StrOptions(set(NORMALIZATIONS))],
        "gamma": [Interval(numbers.Real, 0, None, closed="left")],
        "n_eigenpairs": [Interval(numbers.Integral, 1, None, closed="left"),
                         StrOptions({"auto", "all"})],
        "kernel": [StrOptions(set(SPECTRAL_KERNELS))],
        "t": [Interval(numbers.Real, 0, None, closed="neither")],
        "component_vectors": [StrOptions({"auto", "contrast", "drop"})],
    }

    def __init__(
        self,
        n_clusters=8,
        *,
        normalization="lbn",
        gamma=0.01,
        n_eigenpairs="auto",
        sigma=None,
        affinity=None,
        kernel="ahk",
        t=1.0,
        component_vectors="auto",
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
        self.normalization = normalization
        self.gamma = gamma
        self.n_eigenpairs = n_eigenpairs
        self.sigma = sigma
        self.affinity = affinity
        self.kernel = kernel
        self.t = t
        self.component_vectors = component_vectors
        self.graph = graph
        self.n_neighbors = n_neighbors
        self.local_neighbors = local_neighbors
        self.n_init = n_init
        self.eigen_solver = eigen_solver
        self.eigen_tol = eigen_tol
        self.random_state = random_state
        self.verbose = verbose

    def _fit(self, X):
        self._check_param_types()
        full = self._full_kernel()
        n = self._n_samples(X)
        m_given = not isinstance(self.n_eigenpairs, str)
        if m_given and self.n_eigenpairs >= n:
            raise ValueError(
                f"n_eigenpairs must satisfy n_eigenpairs < n_samples = {n} (at most n - "
                f"n_components non-trivial eigenpairs exist); got {self.n_eigenpairs}."
            )
        if m_given and self.n_eigenpairs < self.n_clusters:
            raise ValueError(
                f"n_eigenpairs = {self.n_eigenpairs} must be >= n_clusters = {self.n_clusters}: "
                "the k eigenvectors of H live in the span of the m eigenvectors."
            )
        if full and self.n_clusters == n:  # above n, `_begin_fit` refuses it
            raise ValueError(
                f"n_clusters = {self.n_clusters} must be < n_samples = {n}: the full kernel "
                "has rank at most n - 1."
            )
        W, rng, timings, progress = self._begin_fit(X)
        from scipy.sparse.csgraph import connected_components

        n_comp = connected_components(W, directed=False)[0]
        if n_comp > self.n_clusters:  # as NJW says it (`_spectral.njw_embedding`)
            warn_more_components(n_comp, self.n_clusters, stacklevel=3)
        available = n - n_comp
        if full:
            return self._fit_full(W, n, n_comp, rng, timings, progress)
        m = min(available, DEFAULT_N_EIGENPAIRS) if self.n_eigenpairs == "auto" else self.n_eigenpairs
        if m > available:
            raise ValueError(
                f"n_eigenpairs = {m} but the graph has {n_comp} connected components, so only "
                f"n - n_components = {available} non-trivial eigenpairs exist."
            )
        if self.n_clusters > m:
            raise ValueError(
                f"n_clusters = {self.n_clusters} exceeds the {m} non-trivial eigenpairs "
                f"available (n = {n}, {n_comp} connected components)."
            )
        with timed_stage(progress, timings, "eigenpairs",
                    f"eigenpairs: the {m} smallest non-trivial of the {self.normalization} "
                    f"Laplacian ({n} nodes, {n_comp} component(s))"):
            spec = laplacian_eigenpairs(
                W,
                m,
                self.normalization,
                tol=self.eigen_tol,
                method=self.eigen_solver,
                random_state=rng,
            )
        with timed_stage(progress, timings, "embedding",
                    f"{self.kernel} kernel: top {self.n_clusters} eigenvectors"):
            Y, theta = self._kernel_embedding(spec, W)
        self.n_eigenpairs_ = m
        self.n_components_ = spec.n_components
        self.eigenvalues_ = spec.values
        self.kernel_eigenvalues_ = theta
        self.eigen_residual_ = float(spec.residuals.max())
        self.eigen_method_ = spec.method
        # Nystrom coefficients: Y = H Y / theta = Psi diag(w) (Psi^T Y) / theta (class Notes)
        K = self.kernel_
        coef = np.divide(K.weights[:, None] * (K.vectors.T @ Y), theta[None, :],
                         out=np.zeros((K.rank, Y.shape[1])), where=theta[None, :] > 0)
        self._set_extension(K.vectors, K.eigenvalues, coef, self.normalization)
        return self._finish_fit(Y, timings, progress)

    def _upgrade(self, version):
        # version 1 files predate n_eigenpairs="all": their "auto" meant the truncated kernel
        # with m = n_eigenpairs_, which a refit of the loaded model must reproduce
        if version == 1 and self.n_eigenpairs == "auto":
            self.n_eigenpairs = int(self.n_eigenpairs_)

    def _full_kernel(self):
        """Whether this fit takes H over every eigenpair (`resolvent_eigenpairs`), or truncated."""
        if self.n_eigenpairs == "all":
            if self.kernel not in FULL_KERNELS:
                raise ValueError(
                    f"n_eigenpairs='all' needs a kernel whose weight is a resolvent, "
                    f"w(lambda) = 1 / (gamma + lambda) up to a factor ({sorted(FULL_KERNELS)}); "
                    f"got kernel={self.kernel!r}: pass an integer n_eigenpairs (or 'auto')."
                )
            return True
        return self.n_eigenpairs == "auto" and self.kernel in FULL_KERNELS

    def _fit_full(self, W, n, n_comp, rng, timings, progress):
        """H over every non-trivial eigenpair: its top k from M = L + gamma B (sparse)."""
        mode = self._component_mode(n_comp, full=True)
        with timed_stage(progress, timings, "eigenpairs",
                         f"eigenpairs: top {self.n_clusters} of the full {self.kernel} kernel, "
                         f"from L + gamma B ({self.normalization}, {n} nodes, {n_comp} "
                         "component(s))"):
            spec = resolvent_eigenpairs(W, self.n_clusters, self.normalization,
                                        gamma=self.gamma, components=mode, tol=self.eigen_tol,
                                        method=self.eigen_solver, random_state=rng)
        with timed_stage(progress, timings, "embedding",
                         f"{self.kernel} kernel: its top {self.n_clusters} eigenvectors"):
            volume = float(W.sum()) if self.kernel == "commute" else 1.0
            Y = spec.vectors
        self.n_eigenpairs_ = n - n_comp
        self.n_components_ = n_comp
        self.eigenvalues_ = np.zeros(0)
        self.kernel_eigenvalues_ = volume * spec.values
        self.kernel_ = None
        self.eigen_residual_ = float(spec.residuals.max())
        self.eigen_method_ = spec.method
        self.component_vectors_ = mode
        self._set_resolvent_extension(Y, spec.mu, spec.offsets,
                                      spec.component_labels, self.gamma, self.normalization)
        return self._finish_fit(Y, timings, progress)

    def _component_mode(self, n_components, full=False):
        """``component_vectors`` resolved ("contrast" or "drop"), or a ValueError."""
        finite_w0 = self.kernel == "heat" or (self.kernel in ("ahk", "commute") and self.gamma > 0)
        mode = self.component_vectors
        n_contrasts = n_components - 1
        if mode == "auto":
            mode = "contrast" if finite_w0 else "drop"
            # the full kernel holds no contrast column (one constraint instead)
            if mode == "contrast" and n_contrasts > MAX_COMPONENT_CONTRASTS and not full:
                warnings.warn(
                    f"the graph has {n_components} connected components; keeping their "
                    f"{n_contrasts} contrast vectors would add an n x {n_contrasts} block, above "
                    f"the {MAX_COMPONENT_CONTRASTS} limit: they are dropped instead "
                    "(component_vectors='drop'). Connect the graph (more neighbours, an "
                    "MST-joined graph) to avoid this.",
                    UserWarning,
                    stacklevel=4,
                )
                mode = "drop"
        if mode == "contrast" and n_contrasts > MAX_COMPONENT_CONTRASTS and not full:
            raise ValueError(
                f"component_vectors='contrast' with {n_components} connected components "
                f"needs an n x {n_contrasts} block, above the {MAX_COMPONENT_CONTRASTS} limit: "
                "use component_vectors='drop' or connect the graph."
            )
        if mode == "contrast" and n_components > 1 and not finite_w0:
            raise ValueError(
                f"component_vectors='contrast' gives the lambda = 0 component vectors the weight "
                f"w(0), infinite for kernel={self.kernel!r} with gamma={self.gamma}: use "
                "gamma > 0 or component_vectors='drop'."
            )
        return mode

    def _kernel_embedding(self, spec, W):
        """H = Psi diag(w) Psi^T from the spectrum (component vectors resolved); its top k."""
        volume = float(W.sum()) if self.kernel == "commute" else 1.0
        mode = self._component_mode(spec.n_components)
        vectors, values = spec.vectors, spec.values
        if mode == "contrast" and spec.n_components > 1:
            C = spec.component_contrasts()
            vectors = np.hstack([C, vectors])
            values = np.concatenate([np.zeros(C.shape[1]), values])
        self.component_vectors_ = mode
        w = kernel_weights(values, self.kernel, gamma=self.gamma, t=self.t, volume=volume)
        self.kernel_ = SpectralKernel(vectors, w, values, self.kernel)
        return self.kernel_.top_eigenvectors(self.n_clusters)
