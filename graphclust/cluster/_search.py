"""The search over the scale of the affinity, the kernel's own parameter and c, by a criterion.

One implementation serves every kernel the seeds can read (`graphclust.kernels.KernelOperator`):
for each sigma of the grid the affinity W is built once and handed to a *kernel family*, which
holds everything about W that does not depend on the kernel's own parameter (the consistency
kernel's alpha: one eigensolve of S serves every alpha; a spectral kernel has no such parameter
and one truncated Laplacian spectrum). The family gives, for each parameter value, a kernel
operator and its column norms; one greedy seed path (`consistency_path`) then scores every c at
once. The (sigma, value, c) with the best criterion wins; the final fit at that point re-reads
the kernel at the final tolerance.

======================  ===================================================================
family                  kernel, parameter, cost per sigma
======================  ===================================================================
`ConsistencyFamily`     U = beta (I - alpha S)^-1; alpha; one Lanczos (or shift-invert)
                        spectrum of S, one multi-shift set of probe solves for every alpha's
                        column norms, then per alpha one seed path
`SpectralFamily`        K = Psi diag(w) Psi^T plus its constant part (AHK, heat, commute);
                        none; one truncated Laplacian spectrum, exact norms from the factors
======================  ===================================================================

The criterion is the papers' Omega (mean between-cluster minus mean within-cluster D_M).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from .._validation import check_int
from ..kernels import ConsistencyKernel, spectral_kernel
from ._seeds import best_by_n_clusters, consistency_path

__all__ = ["ConsistencyFamily", "DEFAULT_ALPHAS", "DEFAULT_SIGMA_FACTORS", "SeedSearch",
           "SpectralFamily", "probe_row_order", "seed_search"]

#: Default search grids (chosen a priori, not tuned on any reported data set):
#: sigma in octaves around the median edge length, alpha = 1 - 10^-t for t = 1..6.
DEFAULT_SIGMA_FACTORS = (0.25, 0.5, 1.0, 2.0)
DEFAULT_ALPHAS = (0.9, 0.99, 0.999, 0.9999, 0.99999, 0.999999)

#: With estimated column norms, the final fit makes at most this many of them exact (one solve
#: each), those that could change a seed (`consistency_path`, ``refine_budget``).
FINAL_REFINE_BUDGET = 4096


def probe_row_order(X=None, W=None):
    """The order the column-norm probes are drawn in: one that depends on the data, not on
    how the rows are listed (not `graphclust.graphs.canonical_order`, the fit's row order).

    With points `X` (dense (n, d) or CSR): the lexicographic order of the rows (the first
    coordinate, then the second, ...). With only an affinity `W`: the order of (degree, sum of
    squared weights, largest weight), permutation-invariant node features. Rows equal in every
    key (duplicate points, automorphic nodes) keep their listed order among themselves.
    Used as `ConsistencyKernel.column_norms`' ``probe_order`` (`ConsistencyFamily`).

    Returns
    -------
    int array (n,), a permutation: ``order[k]`` is the k-th row in the canonical order
    """
    if X is not None:
        A = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        return np.lexsort(A.T[::-1]) if A.shape[1] else np.arange(A.shape[0])
    W = sp.csr_matrix(W)
    deg = np.asarray(W.sum(axis=1)).ravel()
    sq = np.asarray(W.multiply(W).sum(axis=1)).ravel()
    top = np.asarray(W.max(axis=1).todense()).ravel() if W.nnz else np.zeros(W.shape[0])
    return np.lexsort((top, sq, deg))



class ConsistencyFamily:
    """The consistency kernels U(alpha) of one affinity W, sharing S and its spectrum.

    Parameters
    ----------
    W : sparse (n, n)
    alphas : list of float
        The values the search will ask for (the first one builds the kernel).
    method, n_eigenpairs, eigen_solver, tol, random_state
        As in `ConsistencyKernel` (``tol`` is the final fit's CG tolerance).
    search_tol : float
        CG tolerance of the search's evaluations.
    norms : {"auto", "exact", "estimate"}
    n_probes : int
    probe_seed : int
        The same probes for every alpha and sigma (common random numbers).
    probe_order : int array (n,) or None
        Rows in the order the probes are drawn (`probe_row_order`): each point gets the same
        probe entries however the rows are listed.
    max_condition : float
        ``cg`` only: an alpha whose deflated CG condition bound (1 + alpha) / (1 - alpha
        lambda_K) exceeds it is not evaluated when several alphas are searched.
    """

    parameter = "alpha"

    def __init__(self, W, alphas, *, method, n_eigenpairs, eigen_solver, tol, search_tol,
                 norms, n_probes, probe_seed, max_condition, random_state, probe_order=None):
        self.base = ConsistencyKernel(W, alphas[0], method=method, n_eigenpairs=n_eigenpairs,
                                      eigen_solver=eigen_solver, rtol=tol,
                                      random_state=random_state)
        self.search_tol, self.norms, self.n_probes = search_tol, norms, n_probes
        self.probe_seed, self.max_condition = probe_seed, max_condition
        self.probe_order = probe_order

    @property
    def method(self):
        return self.base.method

    def evaluable(self, alphas):
        """The alphas worth evaluating: those within the CG condition budget (all if one)."""
        lam_K = float(self.base.spectrum.values[-1])
        if self.base.method != "cg" or len(alphas) == 1:
            return list(alphas)
        return [a for a in alphas
                if (1 + a) / max(1 - a * lam_K, 1e-300) <= self.max_condition]

    def search_norms(self, alphas):
        """Column norms of every alpha at once (one multi-shift solve of the probes)."""
        K_top = self.base.with_alpha(max(alphas))
        K_top.rtol = float(self.search_tol)
        return K_top.column_norms_for(list(alphas), self.norms, n_probes=self.n_probes,
                                      random_state=self.probe_seed,
                                      probe_order=self.probe_order)

    def search_kernel(self, alpha):
        K = self.base.with_alpha(alpha)
        K.rtol = float(self.search_tol)
        return K

    def final(self, alpha):
        """(kernel, ColumnNorms) at the final tolerance."""
        K = self.base.with_alpha(alpha)
        return K, K.column_norms(self.norms, n_probes=self.n_probes,
                                 random_state=self.probe_seed, probe_order=self.probe_order)


class SpectralFamily:
    """A spectral kernel with its constant part (`SpectralKernel.with_constant_part`) on W.

    Parameters
    ----------
    W : sparse (n, n)
    kind : {"ahk", "heat", "commute"}
    normalization : {"nn", "sym", "rw", "fp", "lbn"}
    n_eigenpairs : int or "auto"
        m; "auto" = min(n - n_components, 100).
    gamma, t : float
    n_components : int
        Connected components of W (m is capped at n - n_components).
    random_state : int
    """

    parameter = None
    method = "factors"

    def __init__(self, W, *, kind, normalization, n_eigenpairs, gamma, t, n_components,
                 random_state, name="kernel__n_eigenpairs"):
        n = W.shape[0]
        if n_eigenpairs == "auto":
            m = min(n - n_components, 100)
        else:
            m = check_int(n_eigenpairs, name, low=1, high=n - n_components)
        if m < 1:
            raise ValueError(f"the graph has {n_components} connected components for {n} "
                             "nodes: no non-trivial eigenpair is left for the kernel.")
        H = spectral_kernel(W, kind, normalization=normalization, n_eigenpairs=m, gamma=gamma,
                            t=t, random_state=random_state)
        self.kernel = H.with_constant_part()
        self.norms = self.kernel.column_norms()

    def evaluable(self, values):
        return list(values)

    def search_norms(self, values):
        return [self.norms for _ in values]

    def search_kernel(self, value):
        return self.kernel

    def final(self, value):
        return self.kernel, self.norms


@dataclass
class SeedSearch:
    """What `seed_search` found.

    Attributes
    ----------
    omega, valid : arrays (n_sigma, n_values, n_c)
        The criterion surface and where it may be chosen (every component got a seed).
    sigmas, values, cs : lists
        The axes (``values`` is ``[None]`` for a family without a parameter).
    n_clusters, sigma, value : the choice
    family : the kernel family at the chosen sigma
    kernel, norms, path : the final fit (``path`` from `consistency_path` with the
        within-cluster inlierness)
    components : array (n,) or None
    skipped : list of (sigma, value) left out by the family (`ConsistencyFamily.evaluable`)
    """

    omega: np.ndarray
    valid: np.ndarray
    sigmas: list
    values: list
    cs: list
    n_clusters: int
    sigma: object
    value: object
    family: object
    kernel: object
    norms: object
    path: dict
    components: object
    skipped: list = field(default_factory=list)

    @property
    def best_by_n_clusters(self):
        return best_by_n_clusters(self.omega, self.valid, self.cs)


def _label(sigma, index, count):
    return "" if sigma is None else f"sigma {index + 1}/{count} = {sigma:.4g}: "


def seed_search(affinity_of, sigmas, make_family, values, cs, *, components_of, progress,
                timings, parameter=None, operator="S", final_tol=None):
    """Search (sigma, value, c) by Omega, then fit the seeds at the best point.

    Parameters
    ----------
    affinity_of : callable
        ``affinity_of(sigma) -> W`` (sigma is None for a precomputed W).
    sigmas : list
        The scale grid (``[None]`` for a precomputed W).
    make_family : callable
        ``make_family(W, components, n_components) -> family`` (`ConsistencyFamily`,
        `SpectralFamily`, or anything with their methods).
    values : list
        The family's parameter values (``[None]`` for none).
    parameter : str or None
        The family's parameter name ("alpha"), for the progress lines.
    operator : str
        What the family's spectrum is of ("S"), for the progress lines.
    cs : list of int
        The numbers of clusters.
    components_of : callable
        ``components_of(W, warn) -> labels or None``; `warn` is True when only one sigma is
        searched (one warning per fit, not one per sigma).
    progress : Progress
    timings : dict
        Seconds added under "spectrum", "norms", "search" and "final".
    final_tol : float, optional
        Shown in the final fit's progress line.

    Returns
    -------
    SeedSearch

    Notes
    -----
    For each c the best (sigma, value) is the one with the largest Omega among the *valid*
    entries (a c that leaves a connected component without a seed is recorded but never
    chosen); the chosen c is the one whose best Omega is largest. With a single point in the
    grid nothing is searched: the final fit is the only evaluation.
    """
    omega = np.full((len(sigmas), len(values), len(cs)), np.nan)
    valid = np.zeros(omega.shape, dtype=bool)
    best = {c: (-np.inf, None, None) for c in cs}
    families, skipped = {}, []
    single = len(sigmas) * len(values) * len(cs) == 1
    if not single:
        what = f"{len(sigmas)} sigma x "
        what += f"{len(values)} {parameter} x " if parameter is not None else ""
        progress.note(f"searching {what}c in {cs[0]}..{cs[-1]} (one eigensolve per sigma)")
    for si, sigma in enumerate(sigmas):
        W = affinity_of(sigma)
        comp = components_of(W, len(sigmas) == 1)
        at = _label(sigma, si, len(sigmas))
        t0 = time.perf_counter()
        n_comp = 1 if comp is None else int(comp.max()) + 1
        with progress.step(f"{at}spectrum of {operator}"):
            family = make_family(W, comp, n_comp)
        timings["spectrum"] = timings.get("spectrum", 0.0) + time.perf_counter() - t0
        families[si] = (family, comp, W)
        if single:
            break
        todo = family.evaluable(values)
        if len(todo) < len(values):
            left = [v for v in values if v not in todo]
            skipped.extend((sigma, v) for v in left)
            progress.note(f"{at}skipping {family.parameter} in {left} (CG condition bound "
                          f"above max_condition = {family.max_condition:g})")
        if not todo:
            continue
        t0 = time.perf_counter()
        if family.parameter is not None:
            with progress.step(f"{at}column norms for {len(todo)} {family.parameter}(s)"):
                all_norms = family.search_norms(todo)
        else:
            all_norms = family.search_norms(todo)
        timings["norms"] = timings.get("norms", 0.0) + time.perf_counter() - t0
        for value, norms in zip(todo, all_norms):
            vi = values.index(value)
            K = family.search_kernel(value)
            t1 = time.perf_counter()
            where = at + (f"{family.parameter} = {value:.7g}: " if value is not None else "")
            with progress.step(f"{where}seeds and Omega for c = {cs[0]}..{cs[-1]}"):
                path = consistency_path(K, norms.nu, cs, components=comp)
            timings["search"] = timings.get("search", 0.0) + time.perf_counter() - t1
            for ci, c in enumerate(cs):
                om = path["omega"][c]
                ok = not (path["labels"][c] < 0).any()
                omega[si, vi, ci], valid[si, vi, ci] = om, ok
                if ok and np.isfinite(om) and om > best[c][0]:
                    best[c] = (om, si, vi)
    if single:
        c, si, vi = cs[0], 0, 0
    else:
        finite = [c for c in cs if best[c][1] is not None]
        if not finite:
            raise ValueError(
                f"no searched (sigma, {parameter or 'kernel'}, c) gives a valid clustering: "
                "either fewer than two clusters were ever nonempty, or the graph has more connected components "
                "than the largest c searched, so some component never gets a seed. Check the "
                "graph (n_components, isolated vertices; use more neighbours), raise "
                "max_clusters or max_condition, or give n_clusters, alpha and sigma."
            )
        c = max(finite, key=lambda cc: best[cc][0])
        _, si, vi = best[c]
    family, comp, W = families[si]
    if len(sigmas) > 1:
        components_of(W, True)
    t0 = time.perf_counter()
    sig = "" if sigmas[si] is None else f"sigma = {sigmas[si]:.4g}, "
    par = "" if values[vi] is None else f"{family.parameter} = {values[vi]:.7g}, "
    tol = "" if final_tol is None else f" (tol {final_tol:g})"
    with progress.step(f"final fit at {sig}{par}c = {c}{tol}"):
        K, norms = family.final(values[vi])
        estimated = norms.method == "estimate"
        path = consistency_path(K, norms.nu, [c], components=comp, cluster_inlierness_for=c,
                                relative_error=norms.relative_error if estimated else None,
                                refine_budget=FINAL_REFINE_BUDGET if estimated else 0)
        if path["refined"].size:  # the norms made exact for the seeds
            err = norms.relative_error.copy()
            err[path["refined"]] = 0.0
            norms = replace(norms, nu=path["nu"], relative_error=err)
    timings["final"] = timings.get("final", 0.0) + time.perf_counter() - t0
    if single:
        omega[0, 0, 0] = path["omega"][c]
        valid[0, 0, 0] = not (path["labels"][c] < 0).any()
    return SeedSearch(omega, valid, list(sigmas), list(values), list(cs), int(c), sigmas[si],
                      values[vi], family, K, norms, path, comp, skipped)
