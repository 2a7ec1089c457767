"""The ``graphclust`` command line.

Subcommands register themselves in `build_parser` (one ``sub.add_parser`` block each); each one's
function takes the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

from ._cli_args import at_least

__all__ = ["main", "build_parser"]

DEMO_SETS = {
    "two_moons": (2, 400),
    "three_moons": (3, 600),
    "two_spirals": (2, 600),
    "three_spirals": (3, 900),
}


def _demo(args):
    import graphclust as gc
    from graphclust import datasets
    from graphclust.metrics import clustering_error, nmi

    if args.dataset not in DEMO_SETS:
        raise ValueError(f"--dataset must be one of {sorted(DEMO_SETS)}; got {args.dataset!r}.")
    n = DEMO_SETS[args.dataset][1] if args.n_samples is None else args.n_samples
    X, y = getattr(datasets, args.dataset)(n, random_state=args.seed)
    print(f"{args.dataset}: {X.shape[0]} points in 2-D (seed {args.seed})")
    criterion = args.criterion
    if criterion == "auto":  # as in ConsistencyClustering: a fixed c or a bound asks for Omega
        omega = args.n_clusters is not None or args.max_clusters is not None
        criterion = "omega" if omega else "stability"
    if criterion == "stability" and args.max_clusters is not None:
        raise ValueError("--max-clusters bounds the Omega search: use --criterion omega (or "
                         "auto), or drop it (--criterion stability has no bound on c).")
    t0 = time.perf_counter()
    model = gc.ConsistencyClustering(
        n_clusters="auto" if args.n_clusters is None else args.n_clusters,
        criterion=criterion,
        random_state=args.seed,
        **({"max_clusters": args.max_clusters} if args.max_clusters is not None else {}),
    ).fit(X)
    dt = time.perf_counter() - t0
    print(f"consistency clustering, everything automatic, criterion {criterion} ({dt:.2f} s):")
    if criterion == "stability":
        alpha = "-" if model.alpha_ is None else f"{model.alpha_:.7g}"
        print(f"  c = {model.n_clusters_}   alpha = {alpha}   tau = {model.tau_}   "
              f"(chosen as: {model.selection_rule_})")
        # the scan: any row's partition is model.stability_.labels_at(tau=...)
        print("\n".join("  " + line for line in model.stability_.summary().splitlines()[1:]))
    else:
        print(f"  sigma = {model.sigma_:.4g}   alpha = {model.alpha_:.7g}   "
              f"c = {model.n_clusters_}")
        best = model.omega_by_n_clusters_
        print("  Omega by c (best over sigma, alpha): " + "  ".join(
            f"{c}:{v:.3f}" if np.isfinite(v) else f"{c}:-" for c, v in best.items()))
    print("  representatives:")
    for j, i in enumerate(model.representatives_):
        print(f"    cluster {j}: point {i:5d} at ({X[i, 0]: .3f}, {X[i, 1]: .3f}), "
              f"{int((model.labels_ == j).sum())} points")
    if criterion == "omega":
        print("  worst global outliers (lowest inlierness):")
        for i in model.outliers(args.n_outliers):
            print(f"    point {i:5d} at ({X[i, 0]: .3f}, {X[i, 1]: .3f})  inlierness "
                  f"{model.inlierness_[i]:.4f}  cluster {model.labels_[i]}")
    print(f"  against the generating classes: error {clustering_error(y, model.labels_):.4f}, "
          f"NMI {nmi(y, model.labels_):.3f}")
    if args.output.lower() != "none":
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("graphclust: no picture: matplotlib is not installed; install the plotting "
                  "extra with: pip install graphclust[plot]", file=sys.stderr)
            return 0
        o = getattr(model, "inlierness_", None)
        size = 12 if o is None else 4 + 60 * (o - o.min()) / max(o.max() - o.min(), 1e-300)
        fig, ax = plt.subplots(figsize=(6, 5))
        ax.scatter(X[:, 0], X[:, 1], c=model.labels_, s=size, cmap="tab10", vmin=0, vmax=9,
                   linewidths=0)
        r = model.representatives_
        ax.scatter(X[r, 0], X[r, 1], marker="*", s=400, c="k", edgecolors="w",
                   label="representatives")
        if o is not None:
            worst = model.outliers(args.n_outliers)
            ax.scatter(X[worst, 0], X[worst, 1], marker="o", s=80, facecolors="none",
                       edgecolors="r", label="worst outliers")
            ax.set_title(f"{args.dataset}: c={model.n_clusters_}, sigma={model.sigma_:.3g}, "
                         f"alpha={model.alpha_:.7g}\n(point size = inlierness)")
        else:
            ax.set_title(f"{args.dataset}: c={model.n_clusters_} (Markov stability, "
                         f"tau={model.tau_})")
        ax.set_aspect("equal")
        ax.legend(loc="best", fontsize=8)
        fig.tight_layout()
        fig.savefig(args.output, dpi=120)
        plt.close(fig)
        print(f"  picture written to {args.output}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="graphclust",
        description="Sparse graph clustering: proximity graphs, diffusion kernels, clusterers.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="cluster a built-in moons / spirals set with everything automatic",
        description="Consistency clustering of a built-in set: the number of clusters and the "
        "scale are chosen automatically (by Markov stability; --criterion omega: sigma, alpha "
        "and c by the papers' Omega, with the worst outliers); prints them and the "
        "representatives, and draws the result (needs matplotlib: pip install "
        "graphclust[plot]).",
    )
    demo.add_argument("--dataset", default="three_moons", choices=sorted(DEMO_SETS),
                      help="built-in set (default three_moons)")
    demo.add_argument("--n-samples", type=at_least(1), default=None,
                      help="points to generate (default: 400 / 600 / 600 / 900 by set)")
    demo.add_argument("--n-clusters", type=at_least(1), default=None,
                      help="fix the number of clusters (default: chosen automatically)")
    demo.add_argument("--criterion", choices=("auto", "stability", "omega"), default="auto",
                      help="what chooses c: stability (Markov stability) or omega (the papers'); "
                      "default auto: stability unless --n-clusters or --max-clusters is given")
    demo.add_argument("--max-clusters", type=at_least(2), default=None,
                      help="largest number of clusters searched by --criterion omega "
                      "(default 10)")
    demo.add_argument("--n-outliers", type=at_least(0), default=5, help="outliers to list (default 5)")
    demo.add_argument("--seed", type=at_least(0), default=0, help="random seed (default 0)")
    demo.add_argument("--output", default="graphclust-demo.png",
                      help="picture file (default graphclust-demo.png; 'none' for no picture)")
    demo.set_defaults(func=_demo)
    from ._cli_apps import add_app_subcommands  # segment, communities, embed

    add_app_subcommands(sub)
    from ._cli_cluster import add_cluster_subcommand  # cluster

    add_cluster_subcommand(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    with warnings.catch_warnings():
        # a library warning reaches the user as one line, never with its source line
        if getattr(args, "quiet", False):
            warnings.simplefilter("ignore")
        else:
            warnings.showwarning = _one_line_warning
        try:
            return args.func(args)
        except (ValueError, TypeError, OSError) as err:
            text = str(err).strip().splitlines()
            print(f"graphclust: error: {text[0] if text else type(err).__name__}",
                  file=sys.stderr)
            return 1


def _one_line_warning(message, category, filename, lineno, file=None, line=None):
    text = " ".join(str(message).split())
    print(f"graphclust: warning: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
