"""The default fit of data moved away from the origin against the fit at the origin.

make_blobs (5 centres, 3 features, random_state 0) at 2 000 points (exact kNN lists) and
30 000 points (NN-descent), each plus offsets 1e4 .. 1e10; one line per fit with the adjusted
Rand index against the untranslated fit and both cluster counts (docs/reliability.md, *Data
far from the origin*)::

    python scripts/check_translation.py
"""

from __future__ import annotations

import warnings

from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score

import graphclust as gc


def main():
    warnings.simplefilter("ignore")
    print("n offset ARI c c_at_origin")
    for n in (2000, 30000):
        X, _ = make_blobs(n, centers=5, n_features=3, random_state=0)
        base = gc.StabilityClustering(random_state=0).fit(X)
        for offset in (1e4, 1e6, 1e8, 1e10):
            moved = gc.StabilityClustering(random_state=0).fit(X + offset)
            ari = adjusted_rand_score(base.labels_, moved.labels_)
            print(f"{n} {offset:.0e} {ari:.4f} {moved.n_clusters_} {base.n_clusters_}", flush=True)


if __name__ == "__main__":
    main()
