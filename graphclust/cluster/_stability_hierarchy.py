"""The scan of `StabilityClustering` as a hierarchy: any walk length's partition, and a table.

Every partition of the Markov-stability scan is a grouping of the same consensus pieces
(``fine_labels_``), kept as one int per piece and walk length (``scan_["groups"]``), so any
level is read back without refitting (`scan_labels`) and the whole scan prints as a table
(`scan_summary`). `groups_for_c` is the one rule that maps a requested c to a partition, for
``StabilityClustering(n_clusters=c)`` and for ``labels_at(n_clusters=c)`` alike.
"""

from __future__ import annotations

import warnings

import numpy as np

from .._validation import check_int, check_real
from ._partition_quality import canonical_labels
from ._stability import merge_by_stability

__all__ = ["COARSER_HINT", "StabilityWarning", "groups_for_c", "scan_labels", "scan_summary"]

#: How a warning about a fine partition ends: where a coarser answer is, without refitting.
COARSER_HINT = ("The scan's coarser partitions are kept: labels_at(n_clusters=k) gives k "
                "clusters without refitting.")


class StabilityWarning(UserWarning):
    """`StabilityClustering` found no clear cluster structure, or not the c asked for."""


def groups_for_c(cs, groups, flows, mass, c, stacklevel=4):
    """``(j, grouping of the pieces)`` with exactly `c` groups, read from the scan's hierarchy.

    The scan's own partition when a walk length gives c (the shortest such); otherwise the
    nearest finer one (the fewest clusters above c, the shortest walk length among ties) cut
    to c at its walk length by the least-loss merges of Markov stability
    (``merge_by_stability(n_groups=c)`` on that walk length's flows between the pieces); when
    c is finer than every walk length, the pieces themselves merged to c at the shortest.
    More than the pieces is out of reach: the pieces are returned with a `StabilityWarning`
    (at `stacklevel`).

    `cs`, `groups`, `flows`: per walk length (ascending), the consensus c, its grouping of the
    pieces and the pieces' flow matrix; `mass`: the pieces' stationary masses.
    """
    cs = np.asarray(cs)
    exact = np.flatnonzero(cs == c)
    if exact.size:
        return int(exact[0]), np.asarray(groups[exact[0]])
    finer = np.flatnonzero(cs > c)
    if finer.size:
        j = int(finer[np.argmin(cs[finer])])
        return j, merge_by_stability(flows[j], mass, initial=groups[j], n_groups=c)
    n_pieces = len(mass)
    if c <= n_pieces:
        return 0, merge_by_stability(flows[0], mass, n_groups=c)
    warnings.warn(f"no partition of the scan has {c} clusters: its consensus pieces, the finest "
                  f"level, are {n_pieces}; returning them.", StabilityWarning,
                  stacklevel=stacklevel)
    return 0, np.arange(n_pieces)


def _check(model):
    from sklearn.exceptions import NotFittedError

    if not hasattr(model, "labels_"):
        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet; call "
                             "fit(X) first.")
    if "groups" not in model.scan_ or "flows" not in model.scan_:
        raise ValueError("this model was saved before the scan's partitions were kept "
                         "(no scan_['groups'] or scan_['flows']); fit it again to read its "
                         "hierarchy.")


def _chosen_index(model):
    """Index of the chosen walk length in ``scan_`` (None for one cluster)."""
    if model.tau_ is None:
        return None
    return int(np.flatnonzero(model.scan_["taus"] == model.tau_)[0])


def scan_labels(model, tau=None, n_clusters=None):
    """`StabilityClustering.labels_at`: the scanned partition at `tau`, or of `n_clusters`.

    At the chosen walk length (or c) the fitted `labels_` (under the plateau tier the coarsest
    near-tie of the stability there, which the scan's consensus row may not be); another c by
    `groups_for_c`. When clusters were split by their own scans (`cluster_splits_`),
    `labels_` is no partition of the scan, and the chosen walk length gives the scan's row.
    When a background of noise was left out (`noise_`), the chosen walk length and c are the
    rest's own scan's and give `labels_`; the others are this scan's rows.
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
        split = any(r["c"] > 1 for r in getattr(model, "cluster_splits_", []))
        if j == chosen and not split:
            return model.labels_.copy()
        g = model.scan_["groups"][j]
    else:
        c = check_int(n_clusters, "n_clusters", low=1, high=model.labels_.size)
        if c == model.n_clusters_:
            return model.labels_.copy()
        s = model.scan_
        _, g = groups_for_c(s["consensus_n_clusters"], s["groups"], s["flows"],
                            s["piece_mass"], c, stacklevel=5)  # the caller of labels_at / predict
    labels = np.asarray(g)[model.fine_labels_]
    order = getattr(model, "_fit_order", None)  # numbered as `labels_`: by the fit's order
    seen = labels if order is None else labels[order]
    rank = np.zeros(int(labels.max()) + 1, dtype=np.int64)
    rank[seen] = canonical_labels(seen)
    return rank[labels]


def scan_summary(model):
    """`StabilityClustering.summary`: the scan as a table, the chosen row marked (str)."""
    _check(model)
    s = model.scan_
    taus, chosen = s["taus"], _chosen_index(model)
    how = {"n_clusters": "n_clusters given",
           "none": "no cluster structure found",
           "components": "the graph's connected components",
           "whole components": "the graph's large connected components, each whole",
           "mutual": "the mutual kNN graph's large components"}.get(
        model.selection_rule_, f"{model.selection_rule_} tier")
    tail = "" if model.tau_ is None else f", tau = {model.tau_:g}"
    lines = [f"StabilityClustering: {model.n_clusters_} clusters of {model.labels_.size} "
             f"points ({how}{tail})",
             f"{'tau':>6} {'c':>6} {'stability':>10} {'seeds VI':>9} {'VI next':>8} {'Q':>8}"]

    def num(values, j, fmt):
        return fmt.format(values[j]) if j < len(values) and np.isfinite(values[j]) else "-"

    splits = getattr(model, "cluster_splits_", [])
    split = any(r["c"] > 1 for r in splits)
    noise = getattr(model, "noise_", None)
    background = noise is not None and bool(noise.any())
    mark = (f"  <- chosen ({model.n_clusters_} after the splits below)" if split
            else f"  <- chosen ({model.n_clusters_} without the background, below)"
            if background else "  <- chosen")
    for j, t in enumerate(taus):
        c = (model.n_clusters_ if j == chosen and not (split or background)
             else int(s["consensus_n_clusters"][j]))
        q = s["metastability"][j]
        qs = ("fails" if q <= -1e2 else "inf" if q == np.inf
              else num(s["metastability"], j, "{:.2f}"))
        row = (f"{t:>6g} {c:>6d} {num(s['consensus_stability'], j, '{:.4f}'):>10} "
               f"{num(s['spread'], j, '{:.4f}'):>9} {num(s['vi_next'], j, '{:.4f}'):>8} "
               f"{qs:>8}")
        lines.append(row + (mark if j == chosen else ""))
    if background:  # the clusters come from the scan of the rest, not from this one
        lines.append(f"{int(noise.sum())} of the points ({noise.mean():.1%}) were left out as a "
                     f"background of noise (noise_); the rest's own scan chose "
                     f"{model.n_clusters_} clusters at tau = {model.tau_:g}, and each noise "
                     f"point joined the cluster the walk from it enters first.")
    g = getattr(model, "density_exponent_", None)
    if g is not None:  # this scan is of the second walk, not of the kNN walk
        lines.append(f"The kNN walk's own scan found no structure; this is the scan of the walk "
                     f"weighted by density, (p_i p_j)^{g / 2:.2f} (density_exponent_ = "
                     f"{g:.2f}), which found these clusters.")
    if splits:  # why c differs from the chosen row's partition of the scan
        lines += ["clusters scanned on their own (cluster_splits_):",
                  f"{'points':>8} {'kind':>10} {'rule':>11} {'tau':>6} {'c':>4}"]
        lines += [f"{r['size']:>8d} {'component' if r['component'] else 'cluster':>10} "
                  f"{r['rule']:>11} {'-' if r['tau'] is None else format(r['tau'], 'g'):>6} "
                  f"{r['c']:>4d}" for r in splits]
    return "\n".join(lines)
