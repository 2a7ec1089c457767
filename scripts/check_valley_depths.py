"""The density look's pairs: how metastable each adjacent pair is, and how deep its valley.

Fits `StabilityClustering(random_state=0)` (defaults) on the named sets of
`bench_model_selection.py` and traces every call of the density look's join
(`join_transient_pairs`, in `_stability_looks`): for each adjacent pair of the clusters it is
given, the sizes, Q (the mass-weighted mean of log(t_esc / t_mix) of the pair's split within
its union, `metastability`) and the depth of its density valley (`valley_depths`: the lesser
peak of the smoothed log density minus the highest pass between them). A pair with Q <= 0 is
joined unless its valley is `BASIN_MIN_DEPTH` deep. Prints the pairs with Q <= ``--q-max``
and each call's clusters in and out, then the fit's c and NMI. docs/model_selection.md,
*Long basins of the density*::

    python scripts/check_valley_depths.py --sets battery:sipu/worms_2
    python scripts/check_valley_depths.py --sets toys --quiet

``--quiet`` prints only the calls whose join changed the clusters and the deepest valley among
their pairs with Q <= 0: the margin to `BASIN_MIN_DEPTH` on data where the join is right.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np


def main(argv=None):
    import scipy.sparse as sp
    from sklearn.metrics import normalized_mutual_info_score as nmi

    import graphclust.cluster._stability_looks as looks
    from graphclust import StabilityClustering
    from graphclust.cluster._markov_selection import metastability
    from graphclust.cluster._metastable_pairs import BASIN_MIN_DEPTH, valley_depths
    from graphclust.cluster._partition_quality import adjacent_pairs

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", required=True, help="comma-separated sets of bench_model_selection")
    p.add_argument("--q-max", type=float, default=0.6, help="print pairs with Q at most this")
    p.add_argument("--quiet", action="store_true", help="only the joins that changed clusters")
    args = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_model_selection as bench

    join = looks.join_transient_pairs
    calls = []

    def traced(W, labels, log_density=None):
        out = join(W, labels.copy(), log_density)
        W = sp.csr_matrix(W)
        peaks, passes = (valley_depths(W, labels, log_density) if log_density is not None
                         else (None, {}))
        rows = []
        for i, j in adjacent_pairs(W, labels).tolist():
            nodes = np.flatnonzero((labels == i) | (labels == j))
            q = float(metastability(W[nodes][:, nodes], (labels[nodes] == j) * 1,
                                    exact=True)[0])
            depth = (min(peaks[i], peaks[j]) - passes[i, j]) if peaks is not None else np.nan
            rows.append((q, i, j, int((labels == i).sum()), int((labels == j).sum()), depth))
        calls.append((W.shape[0], int(labels.max()) + 1, int(out.max()) + 1, sorted(rows)))
        return out

    looks.join_transient_pairs = traced
    print(f"BASIN_MIN_DEPTH = {BASIN_MIN_DEPTH}")
    for name in bench.expand_sets(args.sets.split(",")):
        X, y, metric = bench.load(name)[:3]
        calls.clear()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = StabilityClustering(metric=metric, random_state=0).fit(X)
        for n, c_in, c_out, rows in calls:
            low = [r for r in rows if r[0] <= 0]
            if args.quiet:
                if c_out < c_in:
                    deepest = max((r[5] for r in low), default=np.nan)
                    print(f"{name}: join on {n} points, {c_in} -> {c_out} clusters; deepest "
                          f"valley of its {len(low)} pairs with Q <= 0: {deepest:.2f}")
                continue
            print(f"{name}: join on {n} points, {c_in} -> {c_out} clusters")
            for q, i, j, ni, nj, depth in rows:
                if q <= args.q_max:
                    print(f"    pair {i:3d}-{j:<3d} {ni:7d} + {nj:<7d} Q {q:6.2f}  depth "
                          f"{depth:5.2f}")
        if not args.quiet:
            print(f"{name}: c = {model.n_clusters_}, NMI {nmi(y, model.labels_):.4f}")


if __name__ == "__main__":
    main()
