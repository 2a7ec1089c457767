"""How closely the scalable kNN-candidate trees match the papers' all-pairs definitions.

For seeded Gaussian data (2 000 points in 2, 5 and 10 dimensions) prints, for several candidate
k: the MST's relative total-length error and shared-edge fraction, the DMST (t = 3) shared-edge
fraction, and the PMST (T = 20, r = 0.4, same random perturbations in both modes) weighted
Jaccard agreement sum(min(e, e*)) / sum(max(e, e*)) with the all-pairs ensemble, for the
default fixed candidates and for candidates recomputed on every perturbed copy.

    python scripts/candidate_agreement.py
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import pdist, squareform

import graphclust as gc


def edge_keys(g):
    u, v, _, _ = g.edges()
    return set(zip(u.tolist(), v.tolist()))


def main():
    n = 2000
    print("| dim | k | MST length rel. error | MST shared edges | DMST t=3 shared edges | PMST weighted Jaccard | PMST edges (knn / all) | PMST refreshed candidates: Jaccard |")
    print("|---|---|---|---|---|---|---|---|")
    for dim in (2, 5, 10):
        X = np.random.default_rng(dim).normal(size=(n, dim))
        T = minimum_spanning_tree(squareform(pdist(X))).tocoo()
        mst = set(zip(np.minimum(T.row, T.col).tolist(), np.maximum(T.row, T.col).tolist()))
        length = T.data.sum()
        dmst = edge_keys(gc.dmst_graph(X, 3, candidates="all"))
        pmst = gc.pmst_graph(X, candidates="all", random_state=0)
        for k in (5, 10, 20, 30):
            g = gc.mst_graph(X, n_neighbors=k)
            err = abs(g.edges()[2].sum() - length) / length
            shared = len(edge_keys(g) & mst) / len(mst)
            d = edge_keys(gc.dmst_graph(X, 3, n_neighbors=k))
            p = gc.pmst_graph(X, n_neighbors=k, random_state=0)
            jac = p.multiplicity.minimum(pmst.multiplicity).sum() / p.multiplicity.maximum(pmst.multiplicity).sum()
            pr = gc.pmst_graph(X, n_neighbors=k, refresh_candidates=True, random_state=0)
            jac_r = pr.multiplicity.minimum(pmst.multiplicity).sum() / pr.multiplicity.maximum(pmst.multiplicity).sum()
            print(
                f"| {dim} | {k} | {err:.1e} | {shared:.4f} | {len(d & dmst) / len(dmst):.4f} | "
                f"{jac:.3f} | {p.n_edges} / {pmst.n_edges} | {jac_r:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.0f} s)")
