"""Reproduce the experiments of Breitenbach & Grudic: ConsistencyClustering(criterion="omega").

    python scripts/reproduce_consistency.py            # all experiments, markdown table
    python scripts/reproduce_consistency.py synthetic  # or: usps, control

Every fit uses the papers' criterion, passed by name (``criterion="omega"``: the default
criterion with c chosen is Markov stability since issue 14, so the papers' search must be asked
for) and otherwise the estimator's defaults (kNN graph with 10 neighbours, sigma searched over
(0.25, 0.5, 1, 2) x the median edge length, alpha over 1 - 10^-t for t = 1..6, c over 2..10)
and random_state=0. Error = fraction misassigned under the best one-to-one matching of
cluster labels to classes (Hungarian); NMI beside it.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

import graphclust as gc
from graphclust.cluster import ConsistencyWarning
from graphclust.datasets import (
    load_synthetic_control,
    load_usps,
    three_moons,
    three_spirals,
    two_moons,
    two_spirals,
)
from graphclust.metrics import clustering_error, nmi

ROWS = []


def row(experiment, paper, c, sigma, alpha, error, nmi_value, seconds, note=""):
    ROWS.append((experiment, paper, c, sigma, alpha, error, nmi_value, seconds, note))
    sig = "-" if sigma is None else f"{sigma:.4g}"
    print(
        f"| {experiment} | {paper} | {c} | {sig} | {alpha:.7g} | {error:.4f} | {nmi_value:.3f} "
        f"| {seconds:.1f} | {note} |",
        flush=True,
    )


def fit(X, **kw):
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConsistencyWarning)
        model = gc.ConsistencyClustering(criterion="omega", random_state=0, **kw).fit(X)
    notes = sorted({str(w.message).split(";")[0] for w in caught})
    return model, time.perf_counter() - t0, notes


def synthetic():
    sets = [
        ("two moons (n=400, noise 0.05)", two_moons(400, random_state=0), "c=2 found, 0 errors"),
        ("three moons (n=600, noise 0.05)", three_moons(600, random_state=0), "c=3 found, 0 errors"),
        ("two spirals (n=600, noise 0.01)", two_spirals(600, random_state=0), "c=2 found, 0 errors"),
        (
            "three spirals (n=900, noise 0.01)",
            three_spirals(900, random_state=0),
            "ICML: c=3 found; workshop: c had to be given; 0 errors",
        ),
    ]
    for name, (X, y), paper in sets:
        model, dt, notes = fit(X)
        row(name, paper, model.n_clusters_, model.sigma_, model.alpha_,
            clustering_error(y, model.labels_), nmi(y, model.labels_), dt, "; ".join(notes))
        if model.n_clusters_ != len(np.unique(y)):
            c = len(np.unique(y))
            model, dt, notes = fit(X, n_clusters=c)
            row(f"{name}, c={c} given", paper, c, model.sigma_, model.alpha_,
                clustering_error(y, model.labels_), nmi(y, model.labels_), dt, "")


def usps_split():
    """Digits 1-4 of the USPS training set, in file order: the first 200 of each digit are
    fitted (800 points), the following 200 of each digit are the unseen points (800)."""
    X_train, y_train, _, _ = load_usps()
    fit_idx = np.concatenate([np.flatnonzero(y_train == d)[:200] for d in (1, 2, 3, 4)])
    new_idx = np.concatenate([np.flatnonzero(y_train == d)[200:400] for d in (1, 2, 3, 4)])
    return X_train[fit_idx], y_train[fit_idx], X_train[new_idx], y_train[new_idx]


def usps():
    X, y, X_new, y_new = usps_split()
    model, dt, notes = fit(X)
    row("USPS 1-4, fitted (800)", "c=4 found, error 0.0238", model.n_clusters_, model.sigma_,
        model.alpha_, clustering_error(y, model.labels_), nmi(y, model.labels_), dt)
    t0 = time.perf_counter()
    pred = model.predict(X_new)
    row("USPS 1-4, unseen (800) by predict", "error 0.0425", model.n_clusters_, model.sigma_,
        model.alpha_, clustering_error(y_new, pred), nmi(y_new, pred), time.perf_counter() - t0)


def control():
    X, y = load_synthetic_control()
    model, dt, notes = fit(X, n_clusters=6)
    row("control charts (600), c=6 given", "error 0.4117", 6, model.sigma_, model.alpha_,
        clustering_error(y, model.labels_), nmi(y, model.labels_), dt)
    worst = np.argsort(model.inlierness_, kind="stable")[:50]
    keep = np.setdiff1d(np.arange(X.shape[0]), worst)
    model2, dt2, _ = fit(X[keep], n_clusters=6)
    classes = np.bincount(y[worst], minlength=6).tolist()
    row("control charts, 50 worst global outliers removed, refit (550)", "error 0.28 (0.2764)", 6,
        model2.sigma_, model2.alpha_, clustering_error(y[keep], model2.labels_),
        nmi(y[keep], model2.labels_), dt2, f"removed points per class: {classes}")
    auto, dt3, _ = fit(X)
    row("control charts (600), c searched", "ICML: c=6; workshop: c not found", auto.n_clusters_,
        auto.sigma_, auto.alpha_, clustering_error(y, auto.labels_), nmi(y, auto.labels_), dt3)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", nargs="*", help="synthetic, usps, control (default: all)")
    args = parser.parse_args(argv)
    args.which = args.which or ["synthetic", "usps", "control"]
    bad = sorted(set(args.which) - {"synthetic", "usps", "control"})
    if bad:
        parser.error(f"unknown experiment(s) {bad}; choose from synthetic, usps, control")
    print("| experiment | paper | c | sigma | alpha | error | NMI | s | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.which:
        {"synthetic": synthetic, "usps": usps, "control": control}[name]()
    return 0


if __name__ == "__main__":
    sys.exit(main())
