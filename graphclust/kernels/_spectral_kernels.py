"""Diffusion kernels from a truncated Laplacian spectrum: AHK, heat, multiscale diffusion, commute.

Every kernel here has the form

    K = sum_(i=1..m) w(lambda_i) psi_i psi_i^T = Psi diag(w) Psi^T,

over the m smallest *non-trivial* generalised eigenpairs (lambda_i, psi_i) of a Laplacian
(`laplacian_eigenpairs`; each connected component's lambda = 0 vector is excluded, the paper's
step 3). The weight functions:

===========  ==============================  ==================================================
kernel       w(lambda)                       meaning
===========  ==============================  ==================================================
``ahk``      1 / (gamma + lambda)            Aggregated Heat Kernel: int_0^inf e^(-t lambda) dt,
                                             gamma >= 0 smooths small eigenvalues (Huang et al.)
``heat``     exp(-t lambda)                  heat kernel at time t
``mdm``      ((1 - lambda) / lambda)^2       multiscale diffusion map (Richards et al.): the
                                             coordinates psi_i scaled by sum_(t>=1) mu_i^t =
                                             mu_i / (1 - mu_i), mu_i = 1 - lambda_i; K is the
                                             Gram matrix of those coordinates
``commute``  vol / (gamma + lambda)          commute-time kernel (Green's function, Qiu &
                                             Hancock): the pseudo-inverse of L times
                                             vol = sum(d); with ``nn`` normalisation it gives
                                             the commute distance K_xx + K_yy - 2 K_xy
===========  ==============================  ==================================================

K is never formed. It has rank m, so with the thin QR factorisation Psi = Q R (Q n x m orthonormal)

    K = Q (R diag(w) R^T) Q^T,

and its top-k eigenvectors are Q U_k, with U_k the top-k eigenvectors of the m x m matrix
B = R diag(w) R^T (eigenvalues shared with K). Cost O(n m^2 + m^3); memory O(n m).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_option, check_real
from ._protocol import DENSE_KERNEL_MAX_NODES, ColumnNorms

__all__ = ["SPECTRAL_KERNELS", "SpectralKernel", "kernel_weights", "spectral_kernel"]

#: The weight functions w(lambda) of the module table, by name.
SPECTRAL_KERNELS = ("ahk", "heat", "mdm", "commute")


def kernel_weights(values, kernel="ahk", *, gamma=0.01, t=1.0, volume=1.0):
    """Weights w(lambda_i) of a spectral kernel (module table), for non-trivial lambda_i > 0.

    Examples
    --------
    >>> from graphclust.kernels import kernel_weights
    >>> kernel_weights([0.5, 1.0], "ahk", gamma=0.0).tolist()
    [2.0, 1.0]
    """
    check_option(kernel, "kernel", set(SPECTRAL_KERNELS))
    gamma = check_real(gamma, "gamma", low=0.0)
    lam = np.asarray(values, dtype=np.float64)
    # a non-trivial eigenvalue can be ~1e-17 below zero by rounding on a nearly split graph
    lam = np.maximum(lam, 0.0)
    if kernel in ("ahk", "commute"):
        if gamma == 0.0 and np.any(lam <= 0):
            raise ValueError(
                "gamma = 0 with an eigenvalue lambda = 0 (a graph that is numerically "
                "disconnected): use gamma > 0, e.g. the default 0.01."
            )
        w = 1.0 / (gamma + lam)
        return w * volume if kernel == "commute" else w
    if kernel == "heat":
        t = check_real(t, "t", low=0.0, low_inclusive=False)
        return np.exp(-t * lam)
    tiny = np.finfo(np.float64).tiny
    return ((1.0 - lam) / np.maximum(lam, tiny)) ** 2


def _sign_flip(V):
    """Make the largest-magnitude entry of each column positive (deterministic output)."""
    idx = np.argmax(np.abs(V), axis=0)
    signs = np.sign(V[idx, np.arange(V.shape[1])])
    signs[signs == 0] = 1.0
    return V * signs


class SpectralKernel:
    """The kernel K = Psi diag(w) Psi^T, held as its factors (never n x n).

    Parameters
    ----------
    vectors : array (n, m)
        Psi, the generalised eigenvectors.
    weights : array (m,)
        w(lambda_i) >= 0.
    eigenvalues : array (m,), optional
        The Laplacian eigenvalues behind the weights (kept for reports).
    kind : str, optional

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(80, 2))
    >>> K = gc.spectral_kernel(gc.affinity(gc.knn_graph(X, 8)), n_eigenpairs=20, random_state=0)
    >>> vecs, vals = K.top_eigenvectors(3)
    >>> vecs.shape, bool(vals[0] >= vals[1] >= vals[2] > 0)
    ((80, 3), True)
    """

    def __init__(self, vectors, weights, eigenvalues=None, kind="ahk"):
        self.vectors = np.asarray(vectors, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.eigenvalues = eigenvalues
        self.kind = kind
        if self.vectors.ndim != 2 or self.weights.shape != (self.vectors.shape[1],):
            raise ValueError(
                f"vectors (n, m) and weights (m,) must agree; got {self.vectors.shape} and "
                f"{self.weights.shape}."
            )
        if np.any(self.weights < 0) or not np.all(np.isfinite(self.weights)):
            raise ValueError("kernel weights must be finite and >= 0 (a positive semi-definite K).")

    @property
    def shape(self):
        n = self.vectors.shape[0]
        return (n, n)

    @property
    def n(self):
        """Number of nodes (`KernelOperator` protocol)."""
        return self.vectors.shape[0]

    @property
    def rank(self):
        return self.vectors.shape[1]

    def _factors(self):
        """K = Q B Q^T with Psi = Q R (thin QR) and B = R diag(w) R^T, computed once."""
        if getattr(self, "_qb", None) is None:
            Q, R = np.linalg.qr(self.vectors)
            B = (R * self.weights) @ R.T
            self._qb = (Q, 0.5 * (B + B.T))
        return self._qb

    def column_norms(self, method="auto", **options):
        """Column norms nu_j = ||K e_j|| = ||B q_j|| (q_j row j of Q), exact, O(n m^2).

        `method` and `options` are accepted for the `KernelOperator` protocol; the factors give
        the exact norms whatever is asked. Norms are floored at the smallest positive double
        (a column of zeros has no direction).

        Returns
        -------
        ColumnNorms
        """
        check_option(method, "method", {"auto", "exact", "estimate"})
        Q, B = self._factors()
        nu = np.maximum(np.linalg.norm(Q @ B, axis=1), np.finfo(np.float64).tiny)
        return ColumnNorms(nu, "factors", np.zeros(nu.shape[0]))

    def apply(self, B):
        """K @ B for an (n,) vector or (n, b) block, in O(n m b)."""
        B = np.asarray(B, dtype=np.float64)
        B2 = B.reshape(B.shape[0], -1)
        out = self.vectors @ (self.weights[:, None] * (self.vectors.T @ B2))
        return out.reshape(B.shape)

    __matmul__ = apply

    def diagonal(self):
        """diag(K) = sum_i w_i psi_i^2, in O(n m)."""
        return (self.vectors**2) @ self.weights

    def top_eigenvectors(self, k):
        """Top-k eigenpairs of K through the m x m problem (module notes).

        Returns
        -------
        vectors : array (n, k)
            Orthonormal eigenvectors of K, signs fixed so each column's largest-magnitude entry
            is positive.
        values : array (k,)
            The k largest eigenvalues of K, descending.
        """
        k = check_int(k, "k", low=1, high=self.rank)
        Q, B = self._factors()
        theta, U = np.linalg.eigh(B)
        theta, U = theta[::-1][:k], U[:, ::-1][:, :k]
        return _sign_flip(Q @ U), theta

    def with_constant_part(self):
        """The whole kernel: this one plus each component's lambda = 0 vector with weight w(0).

        The spectral kernels drop the lambda = 0 vectors (one per connected component), leaving
        a centred K whose columns within one cluster can be anti-correlated. The consistency
        seeds compare columns by their cosines, which must be >= 0 for the greedy product of
        (1 - cosine) factors to mean "far from every seed so far"; with the constant part back,
        AHK with ``normalization="sym"`` is (gamma I + L_sym)^-1 (truncated), an inverse M-matrix
        with non-negative entries: the consistency kernel U for alpha = 1 / (1 + gamma) up to the
        factor beta / alpha.

        Needs a kernel built by `spectral_kernel` (it holds the spectrum's trivial vectors) whose
        weight at lambda = 0 is finite: ``heat``, or ``ahk`` / ``commute`` with gamma > 0.

        Returns
        -------
        SpectralKernel
        """
        spec = getattr(self, "spectrum", None)
        if spec is None or self.kind not in SPECTRAL_KERNELS:
            raise ValueError("with_constant_part needs a kernel built by spectral_kernel (it "
                             "holds the trivial eigenvectors of the Laplacian).")
        gamma, t, volume = self.params["gamma"], self.params["t"], self.params["volume"]
        if not (self.kind == "heat" or (self.kind in ("ahk", "commute") and gamma > 0)):
            raise ValueError(
                f"the {self.kind!r} kernel with gamma={gamma} has no finite weight w(0) for the "
                "lambda = 0 vectors (the kernel's constant part): use kind='ahk' or 'commute' "
                "with gamma > 0, or kind='heat'.")
        T = spec.trivial_vectors
        T = T.toarray() if sp.issparse(T) else np.asarray(T)
        w0 = kernel_weights(np.zeros(T.shape[1]), self.kind, gamma=gamma, t=t, volume=volume)
        return SpectralKernel(np.hstack([T, self.vectors]), np.concatenate([w0, self.weights]),
                              None, self.kind)

    def to_dense(self):
        """K as a dense array (small n only: refused above `DENSE_KERNEL_MAX_NODES`)."""
        n = self.shape[0]
        if n > DENSE_KERNEL_MAX_NODES:
            raise ValueError(
                f"to_dense forms an n x n array; n = {n} is above the {DENSE_KERNEL_MAX_NODES} "
                "limit. Use apply() or top_eigenvectors()."
            )
        return (self.vectors * self.weights) @ self.vectors.T

    def __repr__(self):
        return f"SpectralKernel(kind={self.kind!r}, n={self.shape[0]}, rank={self.rank})"


def spectral_kernel(
    W,
    kind="ahk",
    *,
    normalization="lbn",
    n_eigenpairs=100,
    gamma=0.01,
    t=1.0,
    tol="auto",
    method="auto",
    random_state=None,
):
    """Build a `SpectralKernel` of the affinity matrix `W` from its truncated spectrum.

    Parameters
    ----------
    W : array-like or sparse (n, n)
        Symmetric non-negative affinities, no isolated vertex.
    kind : {"ahk", "heat", "mdm", "commute"}, default "ahk"
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
    n_eigenpairs : int, default 100
        m non-trivial eigenpairs, capped at n - n_components.
    gamma : float >= 0, default 0.01
        AHK / commute smoothing.
    t : float > 0, default 1.0
        Heat kernel time.
    tol, method, random_state
        Passed to `laplacian_eigenpairs`.

    Returns
    -------
    SpectralKernel
        With ``.spectrum`` (the `LaplacianSpectrum`) attached.

    Notes
    -----
    The truncated kernel equals the full one (sum over all n - n_components non-trivial pairs)
    when m = n - n_components; for smaller m it drops the terms with the largest lambda, i.e. the
    smallest weights for ahk, heat and commute (see ``docs/spectral.md`` for the measured effect).
    """
    from ._laplacian import laplacian_eigenpairs

    check_option(kind, "kind", set(SPECTRAL_KERNELS))
    gamma = check_real(gamma, "gamma", low=0.0)
    spec = laplacian_eigenpairs(
        W, n_eigenpairs, normalization, tol=tol, method=method, random_state=random_state
    )
    volume = float(sp.csr_matrix(W, dtype=np.float64).sum()) if kind == "commute" else 1.0
    w = kernel_weights(spec.values, kind, gamma=gamma, t=t, volume=volume)
    K = SpectralKernel(spec.vectors, w, spec.values, kind)
    K.spectrum = spec
    K.params = {"gamma": gamma, "t": t, "volume": volume}
    return K
