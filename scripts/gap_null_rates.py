"""How often a structureless sample's kNN graph has a chance gap, on a line and in thin bands.

Per sample (uniform, or Gaussian, on a line stretched to a band of the given width): its
Levina-Bickel dimension, whether its 10-NN graph falls apart, and whether its widest bridge
ratio (`cluster._gap_null`'s statistic) passes each threshold; printed as rates over the draws
(docs/model_selection.md, *The gap test's power*)::

    python scripts/gap_null_rates.py --points 300 --draws 2000 --widths 0,0.01,0.02 \
        --thresholds 1.5,1.95
"""

from __future__ import annotations

import argparse

import numpy as np


def main():
    from graphclust.cluster._gap_null import bridge_ratios
    from graphclust.cluster._null_model import intrinsic_dimension
    from graphclust.graphs import knn_graph_from_neighbors, nearest_neighbors

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", type=int, default=300)
    p.add_argument("--draws", type=int, default=2000)
    p.add_argument("--widths", default="0,0.01,0.02")
    p.add_argument("--thresholds", default="1.5,1.95")
    args = p.parse_args()
    m, thresholds = args.points, [float(t) for t in args.thresholds.split(",")]
    print("reference | width | dimension | falls apart | " +
          " | ".join(f"widest > {t:g}" for t in thresholds))
    for ref in ("uniform", "Gaussian"):
        for w in (float(v) for v in args.widths.split(",")):
            dims, widest = [], []
            for r in range(args.draws):
                rng = np.random.default_rng(1000 + r)
                if ref == "uniform":
                    X = np.c_[rng.random(m), w * rng.random(m)]
                else:
                    X = np.c_[rng.standard_normal(m), w * rng.standard_normal(m)]
                idx, dist = nearest_neighbors(X, 10, method="exact")
                if r < 50:  # the dimension's spread is small: 50 draws tell it
                    dims.append(intrinsic_dimension(dist))
                g = knn_graph_from_neighbors(idx, dist)
                widest.append(1.0 if g.n_components == 1
                              else max(1.0, float(bridge_ratios(g, X, dist)[2].max())))
            widest = np.array(widest)
            print(f"{ref} | {w:g} | {np.mean(dims):.2f} | {np.mean(widest > 1):.3f} | " +
                  " | ".join(f"{np.mean(widest > t):.4f}" for t in thresholds), flush=True)


if __name__ == "__main__":
    main()
