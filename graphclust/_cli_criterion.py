"""``graphclust cluster --criterion``: which criterion chooses c, and the stability fit's report.

``--criterion stability`` (the default when c is chosen, ``--n-clusters auto``) fits
``ConsistencyClustering(criterion="stability")``: its own kNN graph with per-point scales, c and
alpha by Markov stability (`graphclust.StabilityClustering`). ``--criterion omega`` fits the
papers' pipeline of graph, kernel and clusterer stages, with sigma, alpha and c searched by Omega.
As in the library, ``auto`` is "stability" with ``--n-clusters auto`` and no option that only the
Omega pipeline reads, "omega" otherwise; such an option with ``--criterion stability`` is a usage
error (exit code 2).
"""

from __future__ import annotations

import numpy as np

__all__ = ["resolve_criterion", "build_stability", "stability_report"]

#: Options the Omega pipeline reads and the stability fit does not: (dest, flag, default).
OMEGA_OPTIONS = (
    ("graph", "--graph", "knn"), ("radius", "--radius", None), ("n_trees", "--n-trees", None),
    ("kernel", "--kernel", "consistency"), ("sigma", "--sigma", None),
    ("alpha", "--alpha", None), ("sigma_grid", "--sigma-grid", None),
    ("alpha_grid", "--alpha-grid", None), ("clusterer", "--clusterer", None),
    ("max_clusters", "--max-clusters", None),
)


def _omega_options(args):
    given = [flag for dest, flag, default in OMEGA_OPTIONS
             if getattr(args, dest, default) != default]
    if args.n_neighbors == "auto":
        given.append("--n-neighbors auto")
    return given


def resolve_criterion(args):
    """``(criterion, problem)``: the criterion the options ask for, and a usage problem or None.

    ``auto``: "stability" with no option of the Omega pipeline (c chosen, or a number of
    clusters read from its scan's hierarchy), "omega" when an option describes the papers'
    stages.
    """
    given = _omega_options(args)
    if args.criterion == "auto":
        return ("stability" if not given else "omega"), None
    if args.criterion == "stability" and given:
        it = "them" if len(given) > 1 else "it"
        return "stability", (
            f"{', '.join(given)} {'apply' if len(given) > 1 else 'applies'} to --criterion "
            f"omega only (the papers' graph, kernel and seeds, with sigma, alpha and c searched "
            f"by Omega); --criterion stability builds its own kNN graph with per-point scales "
            f"and chooses c and alpha by Markov stability: drop {it}, or use --criterion omega "
            f"(or auto, which uses omega when {'they are' if len(given) > 1 else 'it is'} "
            f"given)")
    return args.criterion, None


def build_stability(args, verbose=False):
    """The ``ConsistencyClustering(criterion="stability")`` the options describe."""
    from .cluster import ConsistencyClustering

    k = 10 if args.n_neighbors is None else args.n_neighbors
    return ConsistencyClustering(args.n_clusters, criterion="stability", n_neighbors=k,
                                 stability_params={"metric": args.metric},
                                 random_state=args.seed, verbose=verbose)


def stability_report(model, X, labels_true, info, data_path):
    """The JSON-serialisable report of a ``criterion="stability"`` fit."""
    from sklearn.metrics import adjusted_rand_score

    from .metrics import nmi

    est = model.stability_
    labels = np.asarray(model.labels_)
    scan = est.scan_

    def floats(a):
        return [None if not np.isfinite(v) else float(v) for v in np.ravel(a)]

    report = {
        "input": {"path": str(data_path), "n_samples": int(X.shape[0]),
                  "n_features": int(X.shape[1]), **info},
        "estimator": {"class": "ConsistencyClustering", "criterion": "stability",
                      "n_clusters": model.n_clusters, "n_neighbors": int(model.n_neighbors),
                      "stability_params": model.stability_params},
        "random_state": model.random_state,
        "chosen": {"n_clusters": int(model.n_clusters_), "sigma": None,
                   "alpha": None if model.alpha_ is None else float(model.alpha_),
                   "tau": None if model.tau_ is None else float(model.tau_),
                   "selection_rule": model.selection_rule_,
                   # the clusters scanned on their own, as `summary()` lists them
                   "cluster_splits": [dict(r) for r in est.cluster_splits_],
                   # points left out of the scan as a background of noise (indices into X)
                   "noise": np.flatnonzero(est.noise_).tolist(),
                   # g of the walk weighted by density that found the clusters, or None
                   "density_exponent": getattr(est, "density_exponent_", None)},
        "cluster_sizes": [int(s) for s in np.bincount(labels, minlength=model.n_clusters_)],
        "representatives": [{"cluster": j, "index": int(i), "point": [float(v) for v in X[i]]}
                            for j, i in enumerate(model.representatives_)],
        "stability_scan": None if scan is None else {
            "taus": floats(scan["taus"]), "alphas": floats(scan["alphas"]),
            "n_clusters": np.asarray(scan["n_clusters"]).astype(int).tolist(),
            "vi_between_seeds": floats(scan["vi"]),
            "metastability": floats(scan["metastability"]),
            "layout": "n_clusters[tau index][seed index]",
            # the consensus partition per tau (the one labels_at returns; the chosen one at tau)
            "consensus_n_clusters": np.asarray(scan["consensus_n_clusters"]).astype(int).tolist(),
            "consensus_stability": floats(scan["consensus_stability"]),
            "seeds_vi_to_consensus": floats(scan["spread"]),
            "vi_to_next_tau": floats(scan["vi_next"]),
        },
        "timings_seconds": {k: round(float(v), 4) for k, v in model.timings_.items()},
    }
    lca = getattr(est, "latent_classes_", None)
    if lca is not None:  # a binary table: no scan, the BIC of each number of classes tried
        report["latent_classes"] = {"bic": {str(c): float(v) for c, v in lca.bic_.items()},
                                    "weights": floats(lca.weights_),
                                    "log_likelihood": float(lca.log_likelihood_)}
    if labels_true is not None:
        _, y = np.unique(labels_true, return_inverse=True)
        report["against_label_column"] = {
            "n_classes": int(y.max() + 1), "nmi": float(nmi(y, labels)),
            "adjusted_rand": float(adjusted_rand_score(y, labels))}
    return report
