"""The consistency seeds read on any kernel operator: seeds, labels, inlierness and Omega.

Breitenbach & Grudic read a positive semi-definite kernel K (the consistency kernel U in the
papers; any `graphclust.kernels.KernelOperator` with non-negative entries here) column by column.
With nu_j = ||K e_j||, V = K N^-1 and C = V^T V (cosines of the columns), D_M = 1 - C:

- inlierness o = C 1 / n (small = global outlier);
- seeds: l_1 = argmax o, then l_(m+1) = argmax of o * prod_(t <= m) D_M[:, l_t];
- labels y_i = argmax_j V[i, l_j];
- criterion Omega(c) = mean between-cluster D_M - mean within-cluster D_M.

Everything is a few applications of K to thin blocks, never forming K; `consistency_reference`
is the dense transcription the tests compare against.
"""

from __future__ import annotations

import numpy as np

__all__ = ["best_by_n_clusters", "consistency_path"]


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


def _omega_all(kernel, labels, cs, inv_nu):
    """({c: Omega}, {c: mean D_M matrix}) for every c at once, from one Gram matrix over atoms.

    Atoms group points with the same label for every c; M = K N^-1 P_atoms (one block of
    applications of K), G_c = A_c^T (M^T M) A_c aggregates atoms into the clusters of c. When
    there are more atoms than the sum of the c values, one block per c is cheaper.
    """
    n = kernel.n
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
    return omega, between


def consistency_path(kernel, nu, n_clusters_list, *, components=None, cluster_inlierness_for=None,
                     relative_error=None, refine_budget=0, refine_z=3.0):
    """Seeds, labels and Omega for several numbers of clusters from one kernel (matrix-free).

    Parameters
    ----------
    kernel : KernelOperator
        The kernel K read by its columns (U at one (sigma, alpha) in the papers; anything with
        ``n`` and ``apply``, see `graphclust.kernels.KernelOperator`).
    nu : array (n,)
        Column norms ||K e_j|| (exact or estimated, see `ConsistencyKernel.column_norms`).
    n_clusters_list : sequence of int
        The values of c to evaluate; seeds are nested (the greedy selection for c + 1 extends the
        one for c), so one run of max(c) greedy steps serves them all.
    components : array (n,), optional
        Connected-component label of each node; points in a component without a seed get
        label -1 (noise).
    cluster_inlierness_for : int, optional
        Also return the within-cluster inlierness for this c (one more block solve).
    relative_error : array (n,), optional
        Standard error of each nu_i relative to nu_i (estimated norms, `ColumnNorms`).
    refine_budget : int, default 0
        With `relative_error`: at most this many norms made exact (one solve each) where they
        could change a seed (Notes).
    refine_z : float, default 3.0
        Width, in standard errors, of the intervals compared when refining.

    Returns
    -------
    dict with ``inlierness`` (o), ``U_inv_nu`` (h = K N^-1 1), ``seeds`` (max(c),),
    ``V_seeds`` (n, max(c)) = U[:, seeds] / nu[seeds], ``labels`` {c: labels}, ``omega``
    {c: Omega}, ``between`` {c: mean D_M matrix}, ``nu`` (the norms used, refined rows exact),
    ``refined`` (their indices), and ``cluster_inlierness`` when asked.

    Notes
    -----
    The seeds' own norms nu_l are taken from their computed columns U e_l (exact to the CG
    tolerance), so with estimated norms the labels y_i = argmax_j U[i, l_j] / nu_(l_j) carry no
    estimation error; the estimate still enters o, C e_l and Omega through the other nu_i.
    Each seed is an argmax of O_i = o_i prod_t (1 - C_(l_t) i), which carries the error of the
    point's own nu_i (d log O_i / d log nu_i = -1 + sum_t C/(1 - C); the sums over all points
    average theirs out). With `refine_budget`, before each greedy step the points whose
    interval O_i exp(+-z f_i e_i) (f_i that sensitivity bound, e_i the relative error) reaches
    the best point's lower end get exact norms, by solves, until the argmax is exact and no
    estimated point can overtake it (or the budget is spent): a seed then no longer depends on
    the probe draw unless the budget runs out.

    Work, with b-column applications of U written U[b]: o = N^-1 U(U(N^-1 1)) / n (2 x U[1]);
    each seed but the last needs U e_l and U(U e_l) (2 x U[1], sequential), the last U e_l only;
    Omega for every c at once from M = U N^-1 P_atoms (one U[a]), where the "atoms" group points
    with the same label for every c (a is small: at most the sum of the c values), and
    G_c = A_c^T (M^T M) A_c aggregates atoms into the clusters of c.
    """
    n = kernel.n
    cs = sorted({int(c) for c in n_clusters_list})
    c_max = cs[-1]
    nu = np.array(nu, dtype=np.float64)
    inv_nu = 1.0 / nu
    h = kernel.apply(inv_nu)  # U N^-1 1, kept for the out-of-sample inlierness
    g = kernel.apply(h)
    o = inv_nu * g / n
    refine = _Refiner(kernel, nu, inv_nu, relative_error, refine_budget, refine_z)
    seeds = np.empty(c_max, dtype=np.int64)
    U_seeds = np.empty((n, c_max))
    UU = np.empty((n, c_max))  # U U e_l / nu_l: C e_l = inv_nu * UU[:, l]
    O = o.copy()
    sens = np.zeros(n)  # sum_t C/(1 - C): |d log O / d log nu| <= 1 + sens
    nu_seeds = np.empty(c_max)
    for m in range(c_max):
        seeds[m] = refine.argmax(O, sens, lambda idx, m=m: _O_rows(idx, inv_nu, g, UU[:, :m], n))
        l = seeds[m]
        e = np.zeros(n)
        e[l] = 1.0
        U_seeds[:, m] = kernel.apply(e)
        # the seed's own norm is known exactly from its column (nu may be an estimate)
        nu_seeds[m] = np.linalg.norm(U_seeds[:, m])
        if m + 1 < c_max:
            UU[:, m] = kernel.apply(U_seeds[:, m]) / nu_seeds[m]
            Ce = inv_nu * UU[:, m]  # C e_l
            O = O * (1.0 - Ce)
            if refine.budget:
                sens += np.abs(Ce) / np.maximum(1.0 - Ce, 1e-12)
    if refine.done:
        o = inv_nu * g / n  # with the refined norms
    V_seeds = U_seeds / nu_seeds[None, :]
    labels = {c: _labels_from(V_seeds, c, components, seeds) for c in cs}

    omega, between = _omega_all(kernel, labels, cs, inv_nu)
    out = {
        "inlierness": o,
        "U_inv_nu": h,
        "nu": nu,
        "refined": np.array(sorted(refine.done), dtype=np.int64),
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


def _O_rows(idx, inv_nu, g, UU, n):
    """O_i = o_i prod_t (1 - C e_(l_t))_i for the rows `idx`, from the current norms."""
    O = inv_nu[idx] * g[idx] / n
    for t in range(UU.shape[1]):
        O = O * (1.0 - inv_nu[idx] * UU[idx, t])
    return O


class _Refiner:
    """Exact norms, by solves, for the points that could win a greedy seed step (Notes of
    `consistency_path`); updates `nu` and `inv_nu` in place."""

    def __init__(self, kernel, nu, inv_nu, relative_error, budget, z, block=32):
        self.kernel, self.nu, self.inv_nu = kernel, nu, inv_nu
        self.z, self.block = float(z), int(block)
        self.budget = int(budget) if relative_error is not None else 0
        self.err = None if relative_error is None else np.array(relative_error, dtype=float)
        self.done = set()

    def argmax(self, O, sens, O_rows):
        best = int(np.argmax(O))
        while self.budget > len(self.done):
            width = self.z * (1.0 + sens) * self.err
            upper = O * np.exp(width)
            lower = O[best] * np.exp(-width[best])
            cand = np.flatnonzero((upper >= lower) & (self.err > 0))
            if cand.size == 0:
                break
            left = self.budget - len(self.done)
            cand = cand[np.argsort(-upper[cand], kind="stable")][: min(self.block, left)]
            E = np.zeros((self.kernel.n, cand.size))
            E[cand, np.arange(cand.size)] = 1.0
            Y = self.kernel.apply(E)
            self.nu[cand] = np.sqrt(np.einsum("ij,ij->j", Y, Y))
            self.inv_nu[cand] = 1.0 / self.nu[cand]
            self.err[cand] = 0.0
            self.done.update(cand.tolist())
            O[cand] = O_rows(cand)
            best = int(np.argmax(O))
        return best


def best_by_n_clusters(omega, valid, cs):
    """{c: the largest valid, finite Omega over the other axes of the surface} (NaN if none)."""
    out = {}
    for i, c in enumerate(cs):
        vals = np.where(valid[:, :, i] & np.isfinite(omega[:, :, i]), omega[:, :, i], -np.inf)
        best = float(vals.max())
        out[int(c)] = best if np.isfinite(best) else float("nan")
    return out
