"""Does StabilityClustering give the same labels for X in other units?

For each set: the default fit (random_state 0) on X, then on X times each scale and on X
shifted, with c and the adjusted Rand index against the fit on X (docs/model_selection.md,
*An order that any scale keeps*)::

    python scripts/check_scale_invariance.py --sets digits,blobs,battery:sipu/s4 \
        --scales 1e-3,7.3,0.00392156862745098,1e300 --shift 1e3

Sets: ``digits`` (scikit-learn's), ``blobs`` (eight blobs in five dimensions, 3 000 points),
or any name `bench_model_selection.py` loads (development sets, ``battery:<folder>/<name>``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score, normalized_mutual_info_score


def load(name):
    if name == "digits":
        from sklearn.datasets import load_digits

        return load_digits(return_X_y=True)
    if name == "blobs":
        from sklearn.datasets import make_blobs

        return make_blobs(3000, n_features=5, centers=8, cluster_std=2.0, random_state=0)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_model_selection

    X, y, *_ = bench_model_selection.load(name)
    return X, y


def main():
    import graphclust as gc

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", default="digits,blobs")
    p.add_argument("--scales", default="1e-3,7.3,0.00392156862745098,1e300")
    p.add_argument("--shift", type=float, default=1e3)
    args = p.parse_args()
    warnings.simplefilter("ignore")
    for name in args.sets.split(","):
        X, y = load(name)
        X = np.asarray(X, dtype=np.float64)
        ok = np.asarray(y) >= 0  # the battery's noise points are left out of NMI
        base = gc.StabilityClustering(random_state=0).fit(X)
        nmi = normalized_mutual_info_score(y[ok], base.labels_[ok])
        cells = [f"X: c {base.n_clusters_} NMI {nmi:.3f}"]
        variants = [(f"x {float(s):g}", float(s) * X) for s in args.scales.split(",")]
        variants.append((f"+ {args.shift:g}", X + args.shift))
        for label, Y in variants:
            m = gc.StabilityClustering(random_state=0).fit(Y)
            cells.append(f"{label}: c {m.n_clusters_} ARI "
                         f"{adjusted_rand_score(base.labels_, m.labels_):.3f}")
        print(f"{name}: " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
