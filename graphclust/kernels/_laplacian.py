"""Graph Laplacian normalisations and their truncated generalised spectra.

Five normalisations of a symmetric non-negative affinity matrix W (w_ii = 0, degrees d = W 1):

==============  ===============================================  =====================================
name            Laplacian L                                      generalised eigenproblem
==============  ===============================================  =====================================
``nn``          D - W (unnormalised)                             L psi = lambda psi
``sym``         I - D^-1/2 W D^-1/2                              L psi = lambda psi
``rw``          I - D^-1 W  (a = 0)                              W psi = (1 - lambda) D psi
``fp``          I - (D^(a))^-1 W^(a), a = 1/2 (Fokker-Planck)    W^(a) psi = (1 - lambda) D^(a) psi
``lbn``         I - (D^(a))^-1 W^(a), a = 1 (Laplace-Beltrami)   W^(a) psi = (1 - lambda) D^(a) psi
==============  ===============================================  =====================================

with W^(a) = D^-a W D^-a and D^(a) = diag(W^(a) 1) (Coifman & Lafon's anisotropic diffusion).

Every one is solved through a *symmetric form* A (sparse, same pattern as W) whose largest
eigenpairs (mu, phi) give the smallest Laplacian eigenpairs:

- rw / fp / lbn: A = (D^(a))^-1/2 W^(a) (D^(a))^-1/2, lambda = 1 - mu, psi = (D^(a))^-1/2 phi, so the
  psi are D^(a)-orthonormal (psi^T D^(a) psi = I), the natural normalisation of the generalised problem;
- sym: A = D^-1/2 W D^-1/2, lambda = 1 - mu, psi = phi (orthonormal);
- nn: A = c I - (D - W) with c = 2 max(d) (a Gershgorin bound, so A is positive semi-definite),
  lambda = c - mu, psi = phi.

Connected components (the paper's step 3). Each component C carries one trivial eigenpair with
lambda = 0: psi constant on C (phi proportional to sqrt(d^(a)) on C, or to the indicator of C for
nn / to sqrt(d) for sym). These vectors are known in closed form, so they are removed *exactly*:
the eigensolver runs on A with the component vectors deflated (`top_eigenpairs(..., deflate=...)`),
and the `n_eigenpairs` returned pairs are the smallest *non-trivial* ones. This is the paper's
"filter out the smaller eigenvalues" threshold made exact: no threshold has to be guessed, and a
nearly disconnected graph (a tiny but genuine lambda_2) is not mistaken for a disconnected one.
The component vectors stay available (``LaplacianSpectrum.trivial_vectors``, and
``component_contrasts()`` for the c - 1 of them orthogonal to the global one): `AHKClustering`
puts the contrasts back into its kernel by default (its ``component_vectors`` parameter), since
dropping them loses exactly the clusters a disconnected graph separates.

Isolated vertices (zero degree) have no random walk and no normalisation; they are refused with
an error that names them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._validation import check_int, check_option, check_real, check_symmetric_adjacency
from ._spectrum import diagonal_scaling, normalized_adjacency, top_eigenpairs

__all__ = [
    "NORMALIZATIONS",
    "LaplacianSpectrum",
    "SymmetricForm",
    "laplacian",
    "laplacian_eigenpairs",
    "symmetric_form",
]

#: Normalisation name -> anisotropy exponent a (None for the two without a random walk form).
NORMALIZATIONS = {"nn": None, "sym": None, "rw": 0.0, "fp": 0.5, "lbn": 1.0}


def _check_affinity(W, name="W"):
    """Clean symmetric CSR affinity, refusing isolated vertices."""
    W = check_symmetric_adjacency(W, name=name)
    W.eliminate_zeros()
    d = np.asarray(W.sum(axis=1)).ravel()
    isolated = np.flatnonzero(d <= 0)
    if isolated.size:
        shown = ", ".join(str(i) for i in isolated[:5]) + (", ..." if isolated.size > 5 else "")
        raise ValueError(
            f"{name} has {isolated.size} isolated vertex(es) with zero degree (node(s) {shown}); "
            "a Laplacian normalisation needs every degree > 0. Connect them (e.g. a kNN graph "
            "with more neighbours, a larger sigma, an MST-joined graph) or drop them."
        )
    return W, d


def _anisotropic(W, d, a):
    """W^(a) = D^-a W D^-a and its degrees d^(a)."""
    if a == 0.0:
        return W, d
    Wa = diagonal_scaling(W, d ** (-a))
    return Wa, np.asarray(Wa.sum(axis=1)).ravel()


def laplacian(W, normalization="lbn"):
    """The Laplacian operator L of `W` for one normalisation, as a sparse CSR matrix.

    Parameters
    ----------
    W : array-like or sparse (n, n)
        Symmetric, non-negative affinities; the diagonal is ignored; every degree must be > 0.
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
        See the module table. ``rw``, ``fp`` and ``lbn`` are not symmetric.

    Returns
    -------
    scipy.sparse.csr_matrix (n, n)
        L, with L 1 = 0 for nn, rw, fp and lbn (rows sum to zero).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import laplacian
    >>> W = np.array([[0, 1, 1], [1, 0, 2], [1, 2, 0]], dtype=float)
    >>> L = laplacian(W, "rw")
    >>> np.allclose(L @ np.ones(3), 0)
    True
    """
    check_option(normalization, "normalization", set(NORMALIZATIONS))
    W, d = _check_affinity(W)
    n = W.shape[0]
    eye = sp.identity(n, format="csr")
    if normalization == "nn":
        return sp.csr_matrix(sp.diags(d) - W)
    if normalization == "sym":
        return sp.csr_matrix(eye - normalized_adjacency(W)[0])
    Wa, da = _anisotropic(W, d, NORMALIZATIONS[normalization])
    return sp.csr_matrix(eye - sp.diags(1.0 / da) @ Wa)


@dataclass
class SymmetricForm:
    """A symmetric operator whose top eigenpairs are a Laplacian's bottom generalised eigenpairs.

    lambda = ``shift`` - mu and psi = ``scale`` * phi for each eigenpair (mu, phi) of ``operator``.

    Attributes
    ----------
    operator : csr_matrix (n, n)
        The symmetric form A.
    shift : float
        1 for sym / rw / fp / lbn, c = 2 max(d) for nn.
    scale : array (n,)
        (d^(a))^-1/2 for rw / fp / lbn, ones for sym and nn.
    mass : array (n,)
        Diagonal of the mass matrix M of the generalised problem (d^(a), or ones): psi^T M psi = I.
    trivial : csc_matrix (n, n_components)
        Orthonormal eigenvectors phi of A for lambda = 0, one per connected component, with
        disjoint supports.
    component_labels : array (n,)
    normalization : str
    trivial_weights : array (n_components,)
        Coefficients a of the graph's global trivial vector in the per-component ones:
        phi_global = trivial @ a / ||a||.
    """

    operator: sp.csr_matrix
    shift: float
    scale: np.ndarray
    mass: np.ndarray
    trivial: sp.csc_matrix
    component_labels: np.ndarray
    normalization: str
    trivial_weights: np.ndarray = None

    @property
    def n_components(self):
        return self.trivial.shape[1]


def symmetric_form(W, normalization="lbn"):
    """The `SymmetricForm` of `W` under `normalization` (see the module notes).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import symmetric_form
    >>> W = np.array([[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 2], [0, 0, 2, 0]], dtype=float)
    >>> f = symmetric_form(W, "lbn")
    >>> f.n_components, f.shift
    (2, 1.0)
    """
    check_option(normalization, "normalization", set(NORMALIZATIONS))
    W, d = _check_affinity(W)
    n = W.shape[0]
    n_comp, labels = connected_components(W, directed=False)
    if normalization == "nn":
        c = 2.0 * float(d.max())
        A = sp.csr_matrix(sp.diags(c - d) + W)
        shift, scale, mass = c, np.ones(n), np.ones(n)
        root = np.ones(n)
    elif normalization == "sym":
        A = normalized_adjacency(W)[0]
        shift, scale, mass = 1.0, np.ones(n), np.ones(n)
        root = np.sqrt(d)
    else:
        Wa, da = _anisotropic(W, d, NORMALIZATIONS[normalization])
        s = 1.0 / np.sqrt(da)
        A = diagonal_scaling(Wa, s)
        shift, scale, mass = 1.0, s, da
        root = np.sqrt(da)
    # one unit vector per component: root restricted to the component, normalised
    norms = np.sqrt(np.bincount(labels, weights=root**2, minlength=n_comp))
    Z = sp.csc_matrix((root / norms[labels], (np.arange(n), labels)), shape=(n, n_comp))
    # A is exactly symmetric: W is (check_symmetric_adjacency), and so is every diagonal
    # scaling of it (`diagonal_scaling`) and c I - D + W
    return SymmetricForm(sp.csr_matrix(A), shift, scale, mass, Z, labels, normalization, norms)


def contrast_coefficients(weights, j):
    """(c, j) orthonormal columns orthogonal to `weights` (c,): the first j component contrasts.

    A component contrast is a combination of the c per-component trivial vectors orthogonal to
    the global one, whose coefficients are `weights` (``trivial_weights``). These are columns
    1..j of the Householder reflector that maps weights / ||weights|| to e_0 (what
    ``np.linalg.qr(a[:, None], mode="complete")`` returns, to rounding), built without the
    c x c matrix: c may run into the thousands.
    """
    a = np.asarray(weights, dtype=np.float64) / np.linalg.norm(weights)
    v = a.copy()
    v[0] += 1.0 if a[0] >= 0 else -1.0
    v /= np.linalg.norm(v)
    E = -2.0 * np.outer(v, v[1:j + 1])
    E[np.arange(1, j + 1), np.arange(j)] += 1.0
    return E


@dataclass
class LaplacianSpectrum:
    """The smallest non-trivial generalised eigenpairs of a Laplacian, ascending.

    Attributes
    ----------
    values : array (m,)
        0 < lambda_1 <= ... <= lambda_m (the component eigenvalues lambda = 0 excluded).
    vectors : array (n, m)
        Generalised eigenvectors psi (columns), M-orthonormal: psi^T diag(mass) psi = I.
    mass : array (n,)
        Diagonal of M (d^(a) for rw / fp / lbn, ones for sym and nn).
    residuals : array (m,)
        ||A phi - mu phi|| of the symmetric form (the achieved accuracy).
    normalization : str
    n_components : int
    component_labels : array (n,)
    method : str
        Eigensolver used ("dense", "eigsh", "lobpcg").
    trivial_vectors : csc_matrix (n, n_components)
        The deflated lambda = 0 eigenvectors, scaled like ``vectors`` (M-orthonormal, supported on
        one component each, constant there except for sym, where they are sqrt(d)): what NJW
        prepends to its embedding.
    """

    values: np.ndarray
    vectors: np.ndarray
    mass: np.ndarray
    residuals: np.ndarray
    normalization: str
    n_components: int
    component_labels: np.ndarray
    method: str
    trivial_vectors: sp.csc_matrix = None
    trivial_weights: np.ndarray = None

    def component_contrasts(self):
        """The lambda = 0 eigenvectors orthogonal to the global trivial one, (n, c - 1).

        Each connected component carries a lambda = 0 vector; the graph as a whole has one
        *global* trivial vector (constant for nn / rw / fp / lbn, sqrt(d) for sym). The c - 1
        directions of the lambda = 0 eigenspace M-orthogonal to it are the component contrasts:
        what a connected graph's smallest non-trivial eigenvectors become as the edges between
        its clusters fade to zero. Returned M-orthonormal.
        """
        c = self.n_components
        if c < 2:
            return np.zeros((self.vectors.shape[0], 0))
        return np.asarray(self.trivial_vectors @ contrast_coefficients(self.trivial_weights, c - 1))

    @property
    def n_eigenpairs(self):
        return self.values.shape[0]


def laplacian_eigenpairs(
    W, n_eigenpairs, normalization="lbn", *, tol="auto", method="auto", random_state=None
):
    """Smallest `n_eigenpairs` non-trivial generalised eigenpairs of a Laplacian of `W`.

    Parameters
    ----------
    W : array-like or sparse (n, n)
        Symmetric non-negative affinities, every degree > 0 (isolated vertices are refused).
    n_eigenpairs : int
        m, with 1 <= m <= n - n_components (the number of non-trivial pairs that exist).
    normalization : {"nn", "sym", "rw", "fp", "lbn"}, default "lbn"
    tol : float or "auto", default "auto"
        Tolerance passed to the eigensolver (`top_eigenpairs`: "auto" is 1e-8, 1e-6 for
        LOBPCG-AMG); the achieved residuals are returned.
    method : {"auto", "dense", "eigsh", "lobpcg"}
        See `top_eigenpairs`.
    random_state : int, Generator or None
        Seeds the Lanczos start vector.

    Returns
    -------
    LaplacianSpectrum

    Notes
    -----
    Each connected component's trivial eigenvector (lambda = 0) is deflated exactly before the
    eigensolver runs (module notes), so ``values[0]`` is the first non-trivial eigenvalue even on a
    disconnected graph. For the dense method the result is exact to rounding; for Lanczos each pair
    satisfies ||A phi - mu phi|| <= ~tol ||A|| (checked, with a `SpectrumConvergenceWarning` beyond
    1e3 tol).

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(60, 2))
    >>> W = gc.affinity(gc.knn_graph(X, 8), sigma=1.0)
    >>> spec = gc.laplacian_eigenpairs(W, 5, "lbn", random_state=0)
    >>> spec.values.shape, bool(np.all(np.diff(spec.values) >= 0)), bool(spec.values[0] > 0)
    ((5,), True, True)
    """
    check_option(normalization, "normalization", set(NORMALIZATIONS))
    check_real(tol, "tol", low=0, low_inclusive=False, allow=("auto",))
    form = symmetric_form(W, normalization)
    n = form.operator.shape[0]
    available = n - form.n_components
    if available < 1:
        raise ValueError(
            f"the graph has {form.n_components} connected components on {n} nodes: no "
            "non-trivial eigenpair exists."
        )
    m = check_int(n_eigenpairs, "n_eigenpairs", low=1)
    if m > available:
        raise ValueError(
            f"n_eigenpairs must satisfy 1 <= n_eigenpairs <= n - n_components = {n} - "
            f"{form.n_components} = {available} (the non-trivial eigenpairs that exist); got {m}."
        )
    spec = top_eigenpairs(
        form.operator,
        m,
        tol=tol,
        method=method,
        random_state=random_state,
        deflate=form.trivial,
        upper=form.shift,  # the trivial eigenvalue (lambda = 0) tops the spectrum
    )
    values = form.shift - spec.values  # ascending, since spec.values is descending
    vectors = spec.vectors * form.scale[:, None]
    return LaplacianSpectrum(
        values=values,
        vectors=vectors,
        mass=form.mass,
        residuals=spec.residuals,
        normalization=normalization,
        n_components=form.n_components,
        component_labels=form.component_labels,
        method=spec.method,
        trivial_vectors=sp.csc_matrix(sp.diags(form.scale) @ form.trivial),
        trivial_weights=form.trivial_weights,
    )
