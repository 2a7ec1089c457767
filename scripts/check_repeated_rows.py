"""Repeated rows: does the automatic fit give the partition of the rows given once?

`StabilityClustering(random_state=0)` (defaults) on three moons, two spirals (600 points each,
data seed 0) and two unit Gaussians 4 apart (300 + 300), each with a fraction of its rows
given a second time (10, 30, 50, 100 %; the rows drawn with seed 1), and on the named sets of
`bench_model_selection.py` as stored (``--sets letters,news20,battery:uci/yeast``). Prints c
and NMI per fit (NMI over all rows, copies included), and for the synthetic rows whether every
copy has its row's label. docs/model_selection.md, *Equal rows are one point*::

    python scripts/check_repeated_rows.py
    python scripts/check_repeated_rows.py --fractions --sets letters,news20

Run it with the code before on PYTHONPATH (``git archive <commit> graphclust | tar -x -C
DIR``) for the other column of the table.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import numpy as np


def synthetic(name):
    from graphclust.datasets import three_moons, two_spirals

    if name == "three moons":
        return three_moons(600, random_state=0)
    if name == "two spirals":
        return two_spirals(600, random_state=0)
    rng = np.random.default_rng(0)
    return (np.r_[rng.normal(size=(300, 2)), rng.normal(size=(300, 2)) + [4, 0]],
            np.repeat([0, 1], 300))


def fit(X, metric="euclidean"):
    from graphclust import StabilityClustering

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return StabilityClustering(metric=metric, random_state=0).fit(X)


def main(argv=None):
    from sklearn.metrics import normalized_mutual_info_score as nmi

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fractions", type=float, nargs="*", default=[0.1, 0.3, 0.5, 1.0],
                   help="fractions of the rows given twice (none: skip the synthetic rows)")
    p.add_argument("--sets", default="", help="comma-separated sets of bench_model_selection")
    args = p.parse_args(argv)
    for name in ("three moons", "two spirals", "two blobs") if args.fractions else ():
        X, y = synthetic(name)
        cells = []
        for frac in args.fractions:
            again = np.random.default_rng(1).permutation(len(X))[:int(round(frac * len(X)))]
            rows = np.r_[np.arange(len(X)), again]
            m = fit(X[rows])
            same = bool((m.labels_[len(X):] == m.labels_[again]).all())
            cells.append(f"{frac:g}: c={m.n_clusters_} {nmi(y[rows], m.labels_):.3f}"
                         f"{'' if same else ' (copies split)'}")
        print(f"{name:12s} | " + " | ".join(cells), flush=True)
    if args.sets:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import bench_model_selection as bench

        for name in args.sets.split(","):
            X, y, metric = bench.load(name)[:3]
            Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
            distinct = np.unique(Xd, axis=0).shape[0]
            t = time.perf_counter()
            m = fit(X, metric)
            print(f"{name}: {X.shape[0]} rows, {distinct} distinct; c={m.n_clusters_} "
                  f"NMI {nmi(y, m.labels_):.4f} ({m.selection_rule_}, tau {m.tau_}) "
                  f"{time.perf_counter() - t:.1f} s", flush=True)


if __name__ == "__main__":
    main()
