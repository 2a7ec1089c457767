"""The top eigenvectors of the full AHK kernel, without its spectrum: a sparse eigenproblem.

Huang et al.'s kernel over *every* non-trivial eigenpair of the generalised problem
L psi = lambda B psi (psi^T B psi = I; `graphclust.kernels.laplacian`) is

    H = sum_(i >= 2) psi_i psi_i^T / (gamma + lambda_i).

Truncating the sum to m pairs (`AHKClustering(n_eigenpairs=m)`) needs m eigenpairs, m >> k, and
at 250 000 nodes the block eigensolve for m = 100 took 758 s (docs/scaling.md). The full sum
needs none of them. With M = L + gamma B (sparse, positive definite for gamma > 0) and
Psi^T B Psi = I, the resolvent is M^-1 = sum_(all i) psi_i psi_i^T / (gamma + lambda_i), so

    H = M^-1 - psi_1 psi_1^T / gamma = P^T M^-1 P,   P = I - b psi_1^T,  b = B psi_1,

and on the complement of b (which holds the range of H) H^-1 = Q M Q, Q = I - b b^T / b^T b
(on b^perp: Q M (P^T M^-1 P y) = Q M M^-1 P y = Q P y = y). The top-k eigenpairs (theta, y) of
H are therefore the k *smallest* eigenpairs (mu = 1 / theta, y) of the sparse matrix M
restricted to b^perp: an eigenproblem of the size NJW solves (k columns), on a matrix as sparse
as W, where the paper's H is exact (m = n - 1). One constraint per connected component (b_c =
B psi_1^(c)) drops every component's trivial vector (``components="drop"``); one global b drops
only the graph's global trivial vector and keeps the component contrasts at weight 1 / gamma
(``"contrast"``), as `AHKClustering`'s ``component_vectors`` does.

In the symmetric form of `graphclust.kernels.symmetric_form` (operator A, shift s, mass B),
M = B^1/2 ((s + gamma) I - A) B^1/2. The solve runs on I - M / g (g = max_i sum_j |m_ij| >=
||M||), whose top eigenpairs `graphclust.kernels.top_eigenpairs` finds with the constraints
as its ``deflate`` columns (not eigenvectors of M: it restricts the operator to their
complement); mu = g (1 - eigenvalue).

For sym and nn (B = I) the eigenvectors of H are the Laplacian's own (H is diagonal in the
orthonormal psi basis); for rw / fp / lbn they are not (psi is B-orthonormal, and H's
Euclidean eigenvectors mix all of them), which is why the truncated path needs m >> k.

Extension to new points: the row x of M y = mu y + Z nu (nu = Z^T M y, the constraints'
multipliers) solved for y(x); `AHKClustering` documents the formula.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_option, check_real
from ._laplacian import NORMALIZATIONS, contrast_coefficients, symmetric_form
from ._amg import amg_available
from ._spectral_kernels import _sign_flip
from ._spectrum import AMG_MIN_NODES, diagonal_scaling, top_eigenpairs

__all__ = ["ResolventSpectrum", "resolvent_eigenpairs"]


@dataclass
class ResolventSpectrum:
    """Top eigenpairs of the full AHK kernel H, from the smallest of M = L + gamma B on b^perp.

    Attributes
    ----------
    values : array (k,)
        theta_1 >= ... >= theta_k, the largest eigenvalues of H (theta = 1 / mu).
    vectors : array (n, k)
        Their eigenvectors y (Euclidean orthonormal, orthogonal to every constraint), each
        column's largest-magnitude entry positive.
    mu : array (k,)
        The eigenvalues of M on b^perp, ascending.
    residuals : array (k,)
        ||Q (I - M / g) y - (1 - mu / g) y|| of the solved problem (relative to ||M|| <= g).
    offsets : array (c, k)
        kappa with M y = mu y + diag(B^1/2 r) kappa[component] (r the symmetric form's trivial
        direction: sqrt(mass) for rw / fp / lbn, sqrt(d) for sym, ones for nn): the
        constraints' multipliers per component, what the extension to new points needs (one
        row for ``components="contrast"``).
    component_labels : array (n,) int
        The connected component of each node (the row of `offsets` it uses: all 0 for
        ``contrast``).
    normalization, components, method : str
    gamma : float
    n_components : int
        Connected components of the graph.
    """

    values: np.ndarray
    vectors: np.ndarray
    mu: np.ndarray
    residuals: np.ndarray
    offsets: np.ndarray
    component_labels: np.ndarray
    normalization: str
    components: str
    method: str
    gamma: float
    n_components: int


def resolvent_eigenpairs(W, k, normalization="lbn", *, gamma=0.01, components="contrast",
                         tol="auto", method="auto", random_state=None):
    """Top-`k` eigenpairs of the full AHK kernel H = sum_(i >= 2) psi_i psi_i^T / (gamma + lambda_i).

    Every non-trivial eigenpair of the Laplacian enters H (the paper's kernel with m = n - 1);
    none is computed (module notes): the pairs are the smallest of M = L + gamma B restricted
    to the complement of the degree vectors b = B psi_1, by the solvers of `top_eigenpairs`.

    Parameters
    ----------
    W : array-like or sparse (n, n)
        Symmetric non-negative affinities, every degree > 0.
    k : int
        1 <= k <= n - (number of constraints).
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
    gamma : float, default 0.01
        > 0; 0 (the Laplacian pseudo-inverse) only with ``components="drop"``.
    components : {"contrast", "drop"}, default "contrast"
        ``contrast``: only the graph's global trivial vector leaves H (one constraint); a
        disconnected graph's component contrasts stay with weight 1 / gamma. ``drop``: every
        component's trivial vector leaves H (one constraint per component).
    tol : float or "auto", default "auto"
        Passed to `top_eigenpairs` (on I - M / g, so relative to ||M||).
    method : {"auto", "dense", "eigsh", "lobpcg", "lobpcg-amg", "shift-invert"}
        See `top_eigenpairs`. ``auto`` is top_eigenpairs' except that from `AMG_MIN_NODES`
        nodes on, with pyamg installed, LOBPCG-AMG runs at once: on M, whose small eigenvalues
        no normalisation separates, ARPACK was 3x slower (MNIST 70 000 points, 10 pairs:
        14.2 s against 4.6 s; 250 000 points: 36.9 s against 14.0 s), and its probe before
        the hand-over cost 10-60 s (docs/scaling.md).
    random_state : int, Generator or None

    Returns
    -------
    ResolventSpectrum

    Notes
    -----
    Contract: with ``method="dense"`` the pairs equal those of the dense H of
    `graphclust.cluster.ahk_reference` (every eigenpair kept) to rounding; other methods meet
    `tol` on the residuals returned.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> from graphclust.kernels import resolvent_eigenpairs
    >>> X = np.random.default_rng(0).normal(size=(80, 2))
    >>> W = gc.affinity(gc.knn_graph(X, 8), sigma=1.0)
    >>> spec = resolvent_eigenpairs(W, 3, random_state=0)
    >>> spec.vectors.shape, bool(np.all(np.diff(spec.values) <= 0))
    ((80, 3), True)
    """
    check_option(normalization, "normalization", set(NORMALIZATIONS))
    check_option(components, "components", {"contrast", "drop"})
    gamma = check_real(gamma, "gamma", low=0.0)
    if gamma == 0 and components == "contrast":
        raise ValueError(
            "gamma = 0 gives the component contrasts (lambda = 0) the weight 1 / gamma = inf: "
            "use gamma > 0 or components='drop'."
        )
    n = W.shape[0] if hasattr(W, "shape") else len(W)
    check_int(k, "k", low=1, high=max(n - 1, 1))  # before any graph work; refined below
    form = symmetric_form(W, normalization)
    if components == "contrast" and form.n_components > 1 and normalization in ("sym", "nn"):
        return _with_exact_contrasts(form, k, gamma, tol, method, random_state)
    return _smallest_of_M(form, k, gamma, components, tol, method, random_state)


def _smallest_of_M(form, k, gamma, components, tol, method, random_state):
    """The pairs from M = L + gamma B on the complement of the constraints (module notes)."""
    normalization = form.normalization
    n = form.operator.shape[0]
    root_mass = np.sqrt(form.mass)
    # exactly symmetric, as form.operator is (`diagonal_scaling`)
    M = diagonal_scaling((form.shift + gamma) * sp.identity(n, format="csr") - form.operator,
                         root_mass)
    # b = B psi_1 is proportional, on each component, to base = B^1/2 r, with r the symmetric
    # form's trivial direction (sqrt(mass), sqrt(d) for sym, ones for nn): form.trivial holds
    # r / ||r|| per component (one nonzero per row) and trivial_weights those norms
    labels = np.asarray(form.component_labels, dtype=np.int64)
    r = np.asarray(form.trivial.sum(axis=1)).ravel() * form.trivial_weights[labels]
    base = root_mass * r
    if components == "contrast":
        labels = np.zeros(n, dtype=np.int64)
    c = int(labels.max()) + 1
    norms = np.sqrt(np.bincount(labels, weights=base**2, minlength=c))
    Z = sp.csc_matrix((base / norms[labels], (np.arange(n), labels)), shape=(n, c))
    if c == 1:
        Z = Z.toarray()
    k = check_int(k, "k", low=1, high=n - c)
    g = float(abs(M).sum(axis=1).max())
    S = (sp.identity(n, format="csr") - M / g).tocsr()
    if method == "auto" and n >= AMG_MIN_NODES and amg_available():
        method = "lobpcg-amg"
    spec = top_eigenpairs(S, k, tol=tol, method=method, random_state=random_state,
                          deflate=Z, upper=1.0)
    mu = g * (1.0 - spec.values)
    Y = _sign_flip(spec.vectors)  # as SpectralKernel.top_eigenvectors: deterministic signs
    # M y = mu y + Z nu with nu = Z^T M y; (Z nu)_x = base_x nu_c(x) / norms_c(x)
    offsets = np.asarray(Z.T @ (M @ Y)) / norms[:, None]
    return ResolventSpectrum(
        values=1.0 / mu, vectors=Y, mu=mu, residuals=spec.residuals, offsets=offsets,
        component_labels=labels, normalization=normalization, components=components,
        method=spec.method, gamma=gamma, n_components=form.n_components)


def _with_exact_contrasts(form, k, gamma, tol, method, random_state):
    """``contrast`` on a disconnected graph when B = I (sym, nn): the c - 1 component contrasts
    are exact eigenvectors of M (M phi_c = gamma phi_c), a multiple eigenvalue, which
    single-vector Lanczos would return only once; they lie outside the range of the ``drop``
    kernel (orthogonal to every component's phi_c), so H = H_drop + N N^T / gamma: the top
    pairs are the contrasts (theta = 1 / gamma, the largest), then ``drop``'s."""
    n = form.operator.shape[0]
    c = form.n_components
    k = check_int(k, "k", low=1, high=n - 1)
    j = min(k, c - 1)
    N = np.asarray(form.trivial @ contrast_coefficients(form.trivial_weights, j))
    labels = np.asarray(form.component_labels, dtype=np.int64)
    if k > j:
        rest = _smallest_of_M(form, k - j, gamma, "drop", tol, method, random_state)
        vectors = np.hstack([N, rest.vectors])
        mu = np.concatenate([np.full(j, gamma), rest.mu])
        residuals = np.concatenate([np.zeros(j), rest.residuals])
        offsets = np.hstack([np.zeros((c, j)), rest.offsets])  # rest's signs are fixed
        method = rest.method
    else:
        vectors, mu, residuals, offsets = N, np.full(j, gamma), np.zeros(j), np.zeros((c, j))
        method = "exact"
    return ResolventSpectrum(
        values=1.0 / mu, vectors=np.ascontiguousarray(_sign_flip(vectors)), mu=mu,
        residuals=residuals,
        offsets=offsets, component_labels=labels, normalization=form.normalization,
        components="contrast", method=method, gamma=gamma, n_components=c)
