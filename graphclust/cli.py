"""The ``graphclust`` command line."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

__all__ = ["main"]


def _demo(args):
    import graphclust as gc

    rng = np.random.default_rng(args.seed)
    n = args.n_samples
    t = np.linspace(0, np.pi, n // 2)
    X = np.concatenate(
        [np.c_[np.cos(t), np.sin(t)], np.c_[1 - np.cos(t), 0.5 - np.sin(t)]]
    ) + rng.normal(scale=0.05, size=(2 * (n // 2), 2))
    print(f"two moons: {X.shape[0]} points in 2-D (seed {args.seed})")
    for name, build in [
        ("knn_graph(k=10)", lambda: gc.knn_graph(X, 10)),
    ]:
        t0 = time.perf_counter()
        g = build()
        dt = time.perf_counter() - t0
        print(f"  {name:<22} {g.n_edges:>7} edges  {g.n_components} component(s)  {dt:6.2f} s")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(
        prog="graphclust",
        description="Sparse graph clustering: proximity graphs, diffusion kernels, clusterers.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the main job on built-in data and print a summary")
    demo.add_argument("--n-samples", type=int, default=1000, help="points to generate (default 1000)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (ValueError, TypeError, FileNotFoundError) as err:
        print(f"graphclust: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
