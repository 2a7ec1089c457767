"""Dense reference implementations of NJW and AHK for small n (tests compare the sparse path).

These follow the paper's Algorithm 1 and 2 literally on n x n arrays, with a full eigen-
decomposition and none of the sparse machinery (no symmetric forms, no deflation, no m x m
trick): generalised eigenpairs from ``scipy.linalg.eigh(W^(a), D^(a))``, the trivial eigenvectors
dropped by the paper's threshold rule (the n_components smallest eigenvalues), H formed densely,
its top-k eigenvectors from a dense ``eigh``. They refuse n > `REFERENCE_MAX_SAMPLES`.

The row normalisation and the k-means are this module's own (plain numpy: k-means++ seeding and
Lloyd iterations, best of `n_init` by within-cluster sum of squares), not the fast path's
(`_common.row_normalize`, scikit-learn's `KMeans`), so that label agreement between the two is
not partly a comparison of a function with itself.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._validation import check_random_state

__all__ = ["REFERENCE_MAX_SAMPLES", "ahk_reference", "dense_laplacian_spectrum", "njw_reference"]

REFERENCE_MAX_SAMPLES = 3000


def _dense(W):
    n = W.shape[0]
    if n > REFERENCE_MAX_SAMPLES:
        raise ValueError(
            f"the dense reference forms n x n arrays; n = {n} is above the "
            f"{REFERENCE_MAX_SAMPLES} limit."
        )
    A = W.toarray() if sp.issparse(W) else np.array(W, dtype=np.float64)
    np.fill_diagonal(A, 0.0)
    return A


def dense_laplacian_spectrum(W, normalization="lbn"):
    """All generalised eigenpairs (ascending lambda) and the number of components, densely.

    Returns ``(values (n,), vectors (n, n), n_components)``; vectors are M-orthonormal with M the
    mass matrix of the generalised problem (identity for nn and sym).
    """
    A = _dense(W)
    n = A.shape[0]
    d = A.sum(axis=1)
    n_comp = connected_components(sp.csr_matrix(A), directed=False)[0]
    if normalization == "nn":
        vals, vecs = sla.eigh(np.diag(d) - A)
    elif normalization == "sym":
        s = 1.0 / np.sqrt(d)
        vals, vecs = sla.eigh(np.eye(n) - s[:, None] * A * s[None, :])
    else:
        a = {"rw": 0.0, "fp": 0.5, "lbn": 1.0}[normalization]
        Wa = A * (d ** -a)[:, None] * (d ** -a)[None, :]
        da = Wa.sum(axis=1)
        # W^(a) psi = mu D^(a) psi, lambda = 1 - mu; eigh returns D^(a)-orthonormal psi
        mu, vecs = sla.eigh(Wa, np.diag(da))
        vals, vecs = 1.0 - mu[::-1], vecs[:, ::-1]
    return vals, vecs, n_comp


def _unit_rows(Y):
    """Rows divided by their Euclidean length; an all-zero row stays zero."""
    Y = np.asarray(Y, dtype=np.float64)
    lengths = np.sqrt(np.einsum("ij,ij->i", Y, Y))
    out = np.zeros_like(Y)
    nz = lengths > 0
    out[nz] = Y[nz] / lengths[nz, None]
    return out


def _sq_dists(Y, C):
    """(n, k) squared Euclidean distances, by explicit differences (no |a|^2 + |b|^2 - 2ab)."""
    return ((Y[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)


def _lloyd(Y, k, rng, max_iter=300):
    """One k-means run: k-means++ seeding (Arthur & Vassilvitskii 2007), then Lloyd until the
    labels stop changing. An emptied cluster takes the point farthest from its centre."""
    n = Y.shape[0]
    centres = [Y[rng.integers(n)]]
    for _ in range(1, k):
        d2 = _sq_dists(Y, np.array(centres)).min(axis=1)
        total = d2.sum()
        i = rng.integers(n) if total <= 0 else rng.choice(n, p=d2 / total)
        centres.append(Y[i])
    C = np.array(centres)
    labels = None
    for _ in range(max_iter):
        D = _sq_dists(Y, C)
        new = D.argmin(axis=1)
        for j in range(k):
            if not np.any(new == j):
                far = int(D[np.arange(n), new].argmax())
                new[far] = j
                D[far] = 0.0
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        C = np.array([Y[labels == j].mean(axis=0) for j in range(k)])
    inertia = float(_sq_dists(Y, C)[np.arange(n), labels].sum())
    return labels.astype(np.int64), inertia


def _reference_kmeans(Y, k, n_init, rng):
    """Best of `n_init` `_lloyd` runs by within-cluster sum of squares."""
    best = None
    for _ in range(n_init):
        labels, inertia = _lloyd(Y, k, rng)
        if best is None or inertia < best[1]:
            best = (labels, inertia)
    return best


def _weights(vals, kernel, gamma, t, volume):
    if kernel == "ahk":
        return 1.0 / (gamma + vals)
    if kernel == "commute":
        return volume / (gamma + vals)
    if kernel == "heat":
        return np.exp(-t * vals)
    return ((1.0 - vals) / vals) ** 2


def ahk_reference(
    W,
    n_clusters,
    *,
    normalization="lbn",
    gamma=0.01,
    n_eigenpairs=None,
    kernel="ahk",
    t=1.0,
    component_vectors="drop",
    n_init=10,
    random_state=None,
):
    """Dense AHK (Algorithm 2): returns ``(labels, embedding, kernel_eigenvalues, H)``.

    `n_eigenpairs` None keeps every non-trivial eigenpair (the paper's full kernel); an integer m
    keeps the m smallest, as the sparse path does. The embedding is the top-k eigenvectors of H
    before row normalisation, signs fixed like `SpectralKernel.top_eigenvectors`.
    ``component_vectors="contrast"`` adds w(0) (N N^T - g g^T), with N the lambda = 0 eigenvectors
    (any M-orthonormal basis of that eigenspace) and g the global trivial vector.
    """
    A = _dense(W)
    vals, vecs, c = dense_laplacian_spectrum(W, normalization)
    null = vecs[:, :c]
    vals, vecs = vals[c:], vecs[:, c:]  # the paper's threshold: drop the c smallest
    if n_eigenpairs is not None:
        vals, vecs = vals[:n_eigenpairs], vecs[:, :n_eigenpairs]
    volume = float(A.sum())
    w = _weights(np.maximum(vals, 0.0), kernel, gamma, t, volume)
    H = (vecs * w) @ vecs.T
    if component_vectors == "contrast" and c > 1:
        d = A.sum(axis=1)
        if normalization == "sym":
            g = np.sqrt(d)
            g = g / np.linalg.norm(g)
        else:
            mass = {"nn": np.ones_like(d)}.get(normalization)
            if mass is None:
                a = {"rw": 0.0, "fp": 0.5, "lbn": 1.0}[normalization]
                mass = (A * np.outer(d**-a, d**-a)).sum(axis=1)
            g = np.ones_like(d) / np.sqrt(mass.sum())
        w0 = _weights(np.zeros(1), kernel, gamma, t, volume)[0]
        H = H + w0 * (null @ null.T - np.outer(g, g))
    theta, U = np.linalg.eigh(0.5 * (H + H.T))
    theta, U = theta[::-1][:n_clusters], U[:, ::-1][:, :n_clusters]
    idx = np.argmax(np.abs(U), axis=0)
    U = U * np.sign(U[idx, np.arange(U.shape[1])])
    rng = check_random_state(random_state)
    labels, _ = _reference_kmeans(_unit_rows(U), n_clusters, n_init, rng)
    return labels, U, theta, H


def njw_reference(W, n_clusters, *, n_init=10, random_state=None):
    """Dense NJW (Algorithm 1 with L_sym): returns ``(labels, embedding, eigenvalues)``."""
    vals, vecs, _ = dense_laplacian_spectrum(W, "sym")
    U = vecs[:, :n_clusters]
    rng = check_random_state(random_state)
    labels, _ = _reference_kmeans(_unit_rows(U), n_clusters, n_init, rng)
    return labels, U, vals[:n_clusters]
