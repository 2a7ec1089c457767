"""The criterion that chooses c in `ConsistencyClustering`: Markov stability or the papers' Omega.

``criterion="stability"`` delegates the whole fit to `StabilityClustering` (per-point-scale kNN
graph, Leiden partitions merged by the Markov stability of the consistency walk, c and alpha
chosen by metastability / persistence, see ``docs/model_selection.md``) and adopts its result;
``criterion="omega"`` is the papers' seeds + Omega search (``_consistency.py``). This module
resolves ``"auto"``, refuses parameters that the resolved criterion does not use, runs the
stability fit, answers `predict` / `save` for a stability-fitted model, and prints what an
Omega fit chose from (`omega_summary`).
"""

from __future__ import annotations

import inspect

import numpy as np

from .._persistence import model_bytes, read_model_bytes
from .._validation import check_option, check_real
from ..graphs import Graph
from ._stability_clustering import StabilityClustering
from ._stability_io import MODEL_FORMAT, MODEL_FORMAT_VERSION

__all__ = ["CRITERIA", "OMEGA_ONLY", "STABILITY_KEYS", "resolve_criterion", "fit_stability",
           "check_criterion_params", "omega_summary", "ScanReportMixin", "seed_kernel_params"]

#: Values of `ConsistencyClustering`'s ``criterion``.
CRITERIA = ("auto", "stability", "omega")

#: Parameters of `ConsistencyClustering` that only the Omega search (the papers' seeds) reads.
OMEGA_ONLY = ("alpha", "sigma", "graph", "max_clusters", "affinity", "kernel", "kernel_params",
              "sigma_grid", "alpha_grid", "method", "norms", "n_eigenpairs", "eigen_solver",
              "n_probes", "tol", "search_tol", "join_components", "max_condition")

#: Keys of ``stability_params``: `StabilityClustering` parameters that have no Omega meaning.
STABILITY_KEYS = ("affinity", "metric", "n_seeds", "n_searches", "search_neighbors", "taus",
                  "plateau_vi", "fine_vi_max", "outlier_threshold", "settle_boundaries")

#: Fitted attributes of each criterion (cleared before a refit).
STABILITY_ATTRS = ("stability_", "tau_", "selection_rule_")
OMEGA_ATTRS = ("inlierness_", "cluster_inlierness_", "between_", "omega_", "omega_valid_",
               "omega_sigmas_", "omega_alphas_", "omega_n_clusters_", "omega_by_n_clusters_",
               "search_skipped_", "column_norms_", "kernel_method_")


def resolve_criterion(model, X):
    """The criterion `model` uses on the input `X`: "stability" or "omega".

    ``"auto"`` is "stability" on points when no parameter of the Omega search is set
    (`OMEGA_ONLY`, compared with its default), whether c is chosen or given (a given c is read
    from the stability scan's hierarchy, `StabilityClustering.labels_at`; measured with the
    true c on every development set, it has the better NMI on all seven real sets, 10-80 times
    faster: docs/model_selection.md); "omega" when the input is a `Graph` / a precomputed W
    (the stability fit builds its own kNN graph from points), or when a parameter only the
    Omega search reads is set (asking for it).
    """
    crit = check_option(model.criterion, "criterion", set(CRITERIA))
    if crit != "auto":
        return crit
    if isinstance(X, Graph) or omega_params_set(model):
        return "omega"
    return "stability"


def omega_params_set(model):
    """Names of the `OMEGA_ONLY` parameters of `model` that differ from their defaults."""
    defaults = {p.name: p.default for p in
                inspect.signature(type(model).__init__).parameters.values()}
    return [name for name in OMEGA_ONLY if not _is_default(getattr(model, name), defaults[name])]


def _is_default(value, default):
    if isinstance(default, (tuple, list)) and isinstance(value, (tuple, list, np.ndarray)):
        a, b = np.asarray(value, dtype=object).ravel(), np.asarray(default, dtype=object).ravel()
        return a.shape == b.shape and all(x == y for x, y in zip(a, b))
    if value is None or default is None or isinstance(value, (str, bool)) or isinstance(
            default, (str, bool)):
        return value is default or (type(value) is type(default) and value == default)
    try:
        return bool(value == default)
    except Exception:  # an array or another object: not the default
        return False


def check_criterion_params(model, criterion, X):
    """Refuse, before any work, a parameter that `criterion` does not read."""
    sp = model.stability_params
    if sp is not None and not isinstance(sp, dict):
        raise TypeError(f"stability_params must be a dict or None; got {type(sp).__name__}.")
    if criterion == "omega":
        if sp:
            raise ValueError(
                f"stability_params={sp!r} applies to criterion='stability' only; this fit uses "
                f"criterion='omega' (the papers' seeds and Omega search"
                + (", chosen because the input is a Graph or a precomputed W, or a parameter "
                   "of the Omega search is set" if model.criterion == "auto" else "")
                + "): drop stability_params, or pass criterion='stability'.")
        return
    unknown = sorted(set(sp or {}) - set(STABILITY_KEYS))
    if unknown:
        raise ValueError(f"stability_params has unknown key(s) {unknown}; allowed: "
                         f"{sorted(STABILITY_KEYS)}.")
    given = omega_params_set(model)
    if given:
        shown = ", ".join(f"{name}={getattr(model, name)!r}" for name in given)
        it = "them" if len(given) > 1 else "it"
        raise ValueError(
            f"{shown}: {'these apply' if len(given) > 1 else 'this applies'} to "
            f"criterion='omega' only (the papers' Gaussian graph, seeds and Omega search over "
            f"sigma, alpha and c = 2..max_clusters); criterion='stability' builds its own kNN "
            f"graph with per-point scales and chooses c and alpha by Markov stability. Drop "
            f"{it} (StabilityClustering options go in stability_params), or pass "
            f"criterion='omega' (or criterion='auto', which uses Omega when "
            f"{'they are' if len(given) > 1 else 'it is'} set).")
    if isinstance(X, Graph):
        raise ValueError(
            "criterion='stability' builds its own kNN graph from the points, so it cannot "
            "cluster a Graph: fit the data array, or pass criterion='omega' to cluster the Graph "
            "by the papers' seeds.")


def fit_stability(model, X, progress):
    """Fit `StabilityClustering` on `X` with `model`'s parameters and adopt its result."""
    n = getattr(X, "shape", (None,))[0]
    if not (isinstance(model.n_clusters, str) and model.n_clusters == "auto"):
        from .._validation import check_int

        c = check_int(model.n_clusters, "n_clusters", low=1)
        if n is not None and c > n:
            raise ValueError(f"n_clusters must satisfy 1 <= n_clusters <= n_samples = {n}; "
                             f"got {c}.")
    est = StabilityClustering(n_clusters=model.n_clusters, n_neighbors=model.n_neighbors,
                              random_state=model.random_state, verbose=model.verbose,
                              **{"outlier_threshold": model.outlier_threshold,
                                 **dict(model.stability_params or {})})
    progress.note("criterion 'stability': c and alpha chosen by the Markov stability of the "
                  "consistency walk (StabilityClustering)")
    est.fit(X)
    adopt_stability(model, est)
    return model


def adopt_stability(model, est):
    """Copy the result of the fitted `StabilityClustering` `est` onto `model`."""
    model.stability_ = est
    model.criterion_ = "stability"
    model.labels_ = est.labels_
    model.n_clusters_ = int(est.n_clusters_)
    model.alpha_ = est.alpha_
    model.tau_ = est.tau_
    model.sigma_ = None  # per-point scales: est.sigma_ (n,), not one Gaussian width
    model.selection_rule_ = est.selection_rule_
    model.representatives_ = est.representatives_
    model.timings_ = dict(getattr(est, "timings_", {}))
    model.n_features_in_ = est.n_features_in_


def save_stability(model, arrays, meta):
    """Embed the stability model's own file in `arrays` (bytes) and describe it in `meta`."""
    arrays["stability_model"] = model_bytes(*model.stability_._file_payload())
    meta["criterion_"] = "stability"


def load_stability(model, data, path):
    """Adopt the stability model embedded in the file `path` (arrays `data`)."""
    blob = data.get("stability_model")
    if blob is None or blob.dtype != np.uint8 or blob.ndim != 1:
        raise ValueError(f"{path} is damaged: a criterion='stability' model needs its embedded "
                         f"stability_model bytes.")
    name = f"{path} (its embedded stability model)"
    try:
        est = StabilityClustering._from_file_payload(
            *read_model_bytes(blob, name, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION,
                              kind="model"), name)
    except ValueError as err:
        raise ValueError(f"{path} is damaged: its embedded stability model does not load "
                         f"({err}).") from err
    adopt_stability(model, est)
    return model


class ScanReportMixin:
    """`ConsistencyClustering`'s `summary` and `labels_at`: what its criterion chose from."""

    def labels_at(self, *, tau=None, n_clusters=None):
        """`StabilityClustering.labels_at` of `stability_`: another level of the scan, no refit.

        ``criterion="omega"`` keeps one partition: refit with `n_clusters` there.
        """
        self._check_fitted()
        if self.criterion_ != "stability":
            raise ValueError("labels_at reads the Markov-stability scan of criterion='stability'; "
                             "this model was fitted with criterion='omega', which keeps one "
                             "partition: refit with n_clusters=... for another c.")
        return self.stability_.labels_at(tau=tau, n_clusters=n_clusters)

    def summary(self):
        """What the criterion chose from, as a table (str).

        ``"stability"``: `StabilityClustering.summary` (per walk length: c, stability, the
        tiers' numbers). ``"omega"``: per c searched, the best Omega over (sigma, alpha), the
        chosen c marked.
        """
        self._check_fitted()
        return self.stability_.summary() if self.criterion_ == "stability" else omega_summary(self)


def omega_summary(model):
    """`ConsistencyClustering.summary` of an Omega fit: per c searched, the best Omega over
    (sigma, alpha), the chosen c marked (str)."""
    sig = "-" if model.sigma_ is None else f"{model.sigma_:.4g}"
    alpha = "-" if model.alpha_ is None else f"{model.alpha_:.7g}"
    lines = [f"ConsistencyClustering: {model.n_clusters_} clusters of {model.labels_.size} "
             f"points (omega, sigma = {sig}, alpha = {alpha})", f"{'c':>4} {'best Omega':>11}"]
    for c, v in model.omega_by_n_clusters_.items():
        mark = "  <- chosen" if c == model.n_clusters_ else ""
        lines.append(f"{c:>4} {v:>11.4f}{mark}" if np.isfinite(v) else f"{c:>4} {'-':>11}")
    return "\n".join(lines)


def seed_kernel_params(kernel, kernel_params):
    """The Omega search's spectral kernel parameters (defaults filled in), checked.

    None for ``kernel="consistency"``, which takes alpha: kernel_params given with it are
    refused, not ignored.
    """
    if kernel == "consistency":
        if kernel_params is not None:
            raise ValueError(f"kernel_params set the kernels 'ahk', 'heat' and 'commute'; the "
                             f"consistency kernel takes alpha (kernel={kernel!r}, "
                             f"kernel_params={kernel_params!r}).")
        return None
    params = {"normalization": "lbn", "gamma": 0.01, "t": 1.0}
    given = {} if kernel_params is None else kernel_params
    if not isinstance(given, dict):
        raise TypeError(f"kernel_params must be a dict or None; got {type(given).__name__}.")
    unknown = sorted(set(given) - set(params))
    if unknown:
        raise ValueError(f"kernel_params has unknown key(s) {unknown}; allowed: "
                         f"{sorted(params)}.")
    params.update(given)
    from ..kernels import NORMALIZATIONS

    check_option(params["normalization"], "kernel_params['normalization']", set(NORMALIZATIONS))
    check_real(params["gamma"], "kernel_params['gamma']", low=0)
    check_real(params["t"], "kernel_params['t']", low=0, low_inclusive=False)
    if kernel in ("ahk", "commute") and params["gamma"] == 0:
        raise ValueError(
            f"kernel={kernel!r} with gamma = 0 has no finite weight at lambda = 0 for "
            "the kernel's constant part, which the seeds need: use gamma > 0 (e.g. 0.01).")
    return params
