"""Fingerprints of fixed fits, to check that a refactor changed no result.

Run it once per checkout and compare the printed tables (every column but the time must match):

    PYTHONPATH=/path/to/old/checkout python scripts/compare_checkouts.py > old.txt
    PYTHONPATH=/path/to/new/checkout python scripts/compare_checkouts.py > new.txt
    diff <(cut -d'|' -f1-8 old.txt) <(cut -d'|' -f1-8 new.txt)

Each row fits one configuration on development data (``$GRAPHCLUST_DATA``) with a fixed seed and
prints the chosen c, sigma and alpha, a hash of the partition (labels numbered by first
appearance), the sum of the Omega surface (NaN
counted as -9) and the representatives. The rows cover the consistency estimator on the dense
path (synthetic control, 600 points) and the CG path with estimated norms (USPS, 3 000 points),
the consistency seeds on the AHK kernel, and k-means on the consistency kernel's embedding.
"""

import hashlib
import inspect
import time
import warnings

import numpy as np

import graphclust as gc
from graphclust.datasets import load_synthetic_control, load_usps


def _row(name, model, seconds):
    labels = np.asarray(model.labels_)
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    labels = np.argsort(np.argsort(first))[inverse]  # numbered by first appearance
    digest = hashlib.md5(labels.astype(np.int64).tobytes()).hexdigest()[:10]
    omega = getattr(model, "omega_", None)
    om = "" if omega is None else f"{np.nan_to_num(omega, nan=-9.0).sum():.8f}"
    sigma = "" if model.sigma_ is None else f"{model.sigma_:.6f}"
    alpha = "" if getattr(model, "alpha_", None) is None else f"{model.alpha_:.7g}"
    reps = getattr(model, "representatives_", None)
    reps = "" if reps is None else " ".join(str(int(r)) for r in reps)
    print(f"| {name} | {model.n_clusters_} | {sigma} | {alpha} | {digest} | {om} | {reps} | "
          f"{seconds:.1f} |", flush=True)


def main():
    warnings.simplefilter("ignore")
    X, _ = load_synthetic_control()
    Xu = load_usps()[0][:3000]
    print("| fit | c | sigma | alpha | labels | Omega sum | representatives | s |")
    print("|---|---|---|---|---|---|---|---|")
    # the papers' Omega search by name where the checkout has criterion= (default since issue 14)
    omega = ({"criterion": "omega"} if "criterion" in
             inspect.signature(gc.ConsistencyClustering).parameters else {})
    fits = [
        ("consistency, dense (control)", X,
         lambda: gc.ConsistencyClustering(random_state=0, **omega)),
        ("consistency, cg + estimate (USPS 3000)", Xu, lambda: gc.ConsistencyClustering(
            max_clusters=6, sigma_grid=(0.5, 1.0), alpha_grid=(0.99, 0.999), random_state=0)),
        ("seeds on AHK (control)", X, lambda: gc.Pipeline(
            gc.KNNGraph(10), gc.AHKStage(sigma="auto", sigma_grid=(0.5, 1.0)),
            gc.ConsistencySeeds(max_clusters=6), random_state=0)),
        ("k-means on U (control)", X, lambda: gc.Pipeline(
            gc.KNNGraph(10), gc.ConsistencyStage(0.99, sigma=None), gc.SpectralKMeans(6),
            random_state=0)),
    ]
    for name, data, make in fits:
        t0 = time.perf_counter()
        model = make().fit(data)
        _row(name, model, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
