"""Normalised adjacency S = D^-1/2 W D^-1/2 and its truncated spectrum (top eigenpairs).

This is the one implementation of "top eigenpairs of a normalised graph operator" that both
engines use: consistency clustering deflates its CG solves with it, and AHK / NJW take their
(generalised) eigenvectors from it (Laplacian eigenvalue lambda = 1 - mu for eigenvalue mu of S).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._validation import check_int, check_random_state

__all__ = ["normalized_adjacency", "Spectrum", "top_eigenpairs", "SpectrumConvergenceWarning"]


class SpectrumConvergenceWarning(UserWarning):
    """An eigensolver stopped before reaching the requested tolerance."""


def normalized_adjacency(W):
    """Return ``(S, d)`` with S = D^-1/2 W D^-1/2 (CSR) and degrees d = W 1.

    Isolated vertices (d_i = 0) get a zero row and column in S (their D^-1/2 entry is taken as 0);
    callers decide how to treat them and must say so.
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    d = np.asarray(W.sum(axis=1)).ravel()
    inv_sqrt = np.zeros_like(d)
    pos = d > 0
    inv_sqrt[pos] = 1.0 / np.sqrt(d[pos])
    Dm = sp.diags(inv_sqrt)
    S = sp.csr_matrix(Dm @ W @ Dm)
    return S, d


@dataclass
class Spectrum:
    """Top eigenpairs of a symmetric operator, in descending order of eigenvalue.

    Attributes
    ----------
    values : array (k,)
        Eigenvalues mu_1 >= mu_2 >= ... >= mu_k.
    vectors : array (n, k)
        Orthonormal eigenvectors (columns).
    residuals : array (k,)
        ||S v - mu v|| for each pair, the achieved accuracy.
    method : str
        Which solver produced them ("dense", "eigsh", "lobpcg").
    """

    values: np.ndarray
    vectors: np.ndarray
    residuals: np.ndarray
    method: str

    @property
    def n_eigenpairs(self):
        return self.values.shape[0]


#: Below this size the full dense eigendecomposition is cheaper and exact.
DENSE_SPECTRUM_MAX_NODES = 1500


def _residuals(S, values, vectors):
    R = S @ vectors - vectors * values
    return np.linalg.norm(R, axis=0)


def top_eigenpairs(S, n_eigenpairs, *, tol=1e-8, method="auto", random_state=None, maxiter=None):
    """Largest `n_eigenpairs` eigenpairs of the symmetric sparse matrix `S`.

    Parameters
    ----------
    S : sparse or dense symmetric matrix (n, n)
    n_eigenpairs : int
        1 <= n_eigenpairs <= n (ARPACK needs < n; the dense path serves n).
    tol : float
        Relative accuracy requested from ARPACK; achieved residuals are in the result.
    method : {"auto", "dense", "eigsh"}
        ``dense`` (numpy eigh, only for n <= 20 000 and refused above), ``eigsh`` (Lanczos, ARPACK,
        largest algebraic). ``auto``: dense for n <= `DENSE_SPECTRUM_MAX_NODES` or when
        n_eigenpairs >= n / 2, else eigsh.
    random_state : int, Generator or None
        Seeds the Lanczos start vector so results are reproducible.

    Returns
    -------
    Spectrum

    Notes
    -----
    If ARPACK does not converge, the pairs it did converge are completed by LOBPCG; a
    `SpectrumConvergenceWarning` reports the largest residual achieved against `tol`.
    """
    n = S.shape[0]
    k = check_int(n_eigenpairs, "n_eigenpairs", low=1, high=n)
    if method == "auto":
        method = "dense" if (n <= DENSE_SPECTRUM_MAX_NODES or k >= n // 2 or k >= n - 1) else "eigsh"
    if method == "dense":
        if n > 20_000:
            raise ValueError(
                f"method='dense' forms an n x n matrix; n = {n} is above the 20 000 limit. "
                "Use method='eigsh'."
            )
        A = S.toarray() if sp.issparse(S) else np.asarray(S, dtype=np.float64)
        vals, vecs = np.linalg.eigh(A)
        vals, vecs = vals[::-1][:k], vecs[:, ::-1][:, :k]
        return Spectrum(vals, np.ascontiguousarray(vecs), _residuals(S, vals, vecs), "dense")
    if method != "eigsh":
        raise ValueError(f"method must be one of 'auto', 'dense', 'eigsh'; got {method!r}.")
    if k >= n - 1:
        raise ValueError(f"eigsh needs n_eigenpairs < n - 1 = {n - 1}; got {k}. Use method='dense'.")
    rng = check_random_state(random_state)
    v0 = rng.uniform(-1.0, 1.0, size=n)
    # The spectrum of S lies in [-1, 1]; shifting by +I keeps "largest algebraic" the fastest case.
    op = sp.csr_matrix(S) + sp.identity(n, format="csr")
    method_used = "eigsh"
    try:
        vals, vecs = spla.eigsh(op, k=k, which="LA", tol=tol, v0=v0, maxiter=maxiter)
    except spla.ArpackNoConvergence as err:
        vals, vecs = _lobpcg_completion(op, k, err.eigenvalues, err.eigenvectors, tol, rng)
        method_used = "lobpcg"
    order = np.argsort(vals)[::-1]
    vals = vals[order] - 1.0
    vecs = np.ascontiguousarray(vecs[:, order])
    res = _residuals(S, vals, vecs)
    worst = float(res.max()) if res.size else 0.0
    if worst > max(1e3 * tol, 1e-6):
        warnings.warn(
            f"top_eigenpairs: largest residual ||S v - mu v|| = {worst:.2e} for {k} eigenpairs "
            f"of an n = {n} operator; requested tol = {tol:.1e} ({method_used}).",
            SpectrumConvergenceWarning,
            stacklevel=2,
        )
    return Spectrum(vals, vecs, res, method_used)


def _lobpcg_completion(op, k, vals0, vecs0, tol, rng):
    n = op.shape[0]
    X = rng.standard_normal((n, k))
    if vecs0 is not None and len(vals0):
        X[:, : vecs0.shape[1]] = vecs0
    vals, vecs = spla.lobpcg(op, X, largest=True, tol=max(tol, 1e-10), maxiter=500)
    return vals, vecs
