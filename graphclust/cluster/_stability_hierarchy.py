"""The scan of `StabilityClustering` as a hierarchy: any walk length's partition, and a table.

Every partition of the Markov-stability scan is a grouping of the same consensus pieces
(``fine_labels_``), kept as one int per piece and walk length (``scan_["groups"]``), so any
level is read back without refitting (`scan_labels`) and the whole scan prints as a table
(`scan_summary`). `nearest_c` is the one rule that maps a requested c to a walk length, for
``StabilityClustering(n_clusters=c)`` and for ``labels_at(n_clusters=c)`` alike.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import check_int, check_real

__all__ = ["StabilityWarning", "nearest_c", "scan_labels", "scan_summary"]


class StabilityWarning(UserWarning):
    """`StabilityClustering` found no clear cluster structure, or not the c asked for."""


def nearest_c(cs, c, stacklevel=4):
    """Index of the walk length whose c (in `cs`) is nearest `c`, the shortest among ties.

    A `StabilityWarning` (at `stacklevel`) says so when no walk length gives exactly `c`.
    """
    cs = np.asarray(cs)
    j = int(np.argmin(np.abs(cs - c)))
    if cs[j] != c:
        warnings.warn(f"no walk length gives {c} clusters; returning the nearest, "
                      f"{int(cs[j])}.", StabilityWarning, stacklevel=stacklevel)
    return j


def _check(model):
    from sklearn.exceptions import NotFittedError

    if not hasattr(model, "labels_"):
        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet; call "
                             "fit(X) first.")
    if "groups" not in model.scan_:
        raise ValueError("this model was saved before the scan's partitions were kept "
                         "(no scan_['groups']); fit it again to read its hierarchy.")


def _chosen_index(model):
    """Index of the chosen walk length in ``scan_`` (None for one cluster)."""
    if model.tau_ is None:
        return None
    return int(np.flatnonzero(model.scan_["taus"] == model.tau_)[0])


def scan_labels(model, tau=None, n_clusters=None):
    """`StabilityClustering.labels_at`: the scanned partition at `tau` or of c nearest `n_clusters`.

    At the chosen walk length the fitted `labels_` (under the plateau tier the coarsest
    near-tie of the stability there, which the scan's consensus row may not be).
    """
    _check(model)
    if (tau is None) == (n_clusters is None):
        raise ValueError(f"give exactly one of tau and n_clusters; got tau={tau!r}, "
                         f"n_clusters={n_clusters!r}.")
    taus = model.scan_["taus"]
    chosen = _chosen_index(model)
    if tau is not None:
        t = check_real(tau, "tau", low=0, low_inclusive=False)
        hit = np.flatnonzero(np.isclose(taus, t, rtol=1e-9, atol=0.0))
        if hit.size == 0:
            raise ValueError(f"tau must be one of the scanned walk lengths "
                             f"{[float(v) for v in taus]}; got {tau!r}.")
        j = int(hit[0])
    else:
        c = check_int(n_clusters, "n_clusters", low=1, high=model.labels_.size)
        cs = model.scan_["consensus_n_clusters"].copy()
        if chosen is not None:
            cs[chosen] = model.n_clusters_
        j = nearest_c(cs, c, stacklevel=4)  # the caller of labels_at or predict
    if j == chosen:
        return model.labels_.copy()
    return np.unique(model.scan_["groups"][j], return_inverse=True)[1][model.fine_labels_]


def scan_summary(model):
    """`StabilityClustering.summary`: the scan as a table, the chosen row marked (str)."""
    _check(model)
    s = model.scan_
    taus, chosen = s["taus"], _chosen_index(model)
    how = {"n_clusters": "n_clusters given",
           "none": "no cluster structure found"}.get(model.selection_rule_,
                                                      f"{model.selection_rule_} tier")
    tail = "" if model.tau_ is None else f", tau = {model.tau_:g}"
    lines = [f"StabilityClustering: {model.n_clusters_} clusters of {model.labels_.size} "
             f"points ({how}{tail})",
             f"{'tau':>6} {'c':>6} {'stability':>10} {'seeds VI':>9} {'VI next':>8} {'Q':>8}"]

    def num(values, j, fmt):
        return fmt.format(values[j]) if j < len(values) and np.isfinite(values[j]) else "-"

    for j, t in enumerate(taus):
        c = model.n_clusters_ if j == chosen else int(s["consensus_n_clusters"][j])
        q = s["metastability"][j]
        qs = ("fails" if q <= -1e2 else "inf" if q == np.inf
              else num(s["metastability"], j, "{:.2f}"))
        row = (f"{t:>6g} {c:>6d} {num(s['consensus_stability'], j, '{:.4f}'):>10} "
               f"{num(s['spread'], j, '{:.4f}'):>9} {num(s['vi_next'], j, '{:.4f}'):>8} "
               f"{qs:>8}")
        lines.append(row + ("  <- chosen" if j == chosen else ""))
    return "\n".join(lines)
