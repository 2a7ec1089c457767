"""predict's neighbour search at scale: `graphclust.graphs.NeighbourIndex` against the exact search.

Data: `graphclust.datasets.load_infinite_mnist` (MNIST extended by seeded shifts and rotations,
PCA 50); the first n rows train, the next `--queries` rows are the new points. Per n: the kNN
lists (the fit's own, 10 neighbours), the index build, new points per second of the graph search
and of scikit-learn's exact search (timed on `--exact-queries` rows), and the graph search's
recall of the exact 10 nearest (recall@10) and of the nearest (nn1). With `--labels N`, also
StabilityClustering fitted on N points: agreement of `predict`'s labels and outlier flags
between the two searches.

    GRAPHCLUST_DATA=/path/to/datasets python scripts/bench_predict.py \\
        --n 125000 250000 500000 1000000 --labels 125000

Default threads (as a user runs it); prints a Markdown table.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from sklearn.neighbors import NearestNeighbors

import graphclust as gc
from graphclust.graphs import NeighbourIndex, nearest_neighbors


def _recall(a, b):
    return float(np.mean([len(set(r) & set(s)) / len(r) for r, s in zip(a, b)]))


def index_row(n, m, m_exact):
    X, _ = gc.datasets.load_infinite_mnist(n_samples=n + m)
    Xt, Q = X[:n], X[n:]
    t = time.perf_counter()
    lists, _ = nearest_neighbors(Xt, 10, random_state=0)
    t_knn = time.perf_counter() - t
    t = time.perf_counter()
    index = NeighbourIndex(Xt, lists, exact_max_samples=0)
    t_build = time.perf_counter() - t
    index.kneighbors(Q[:10], 10)  # compiled (cached on disk after the first run)
    t = time.perf_counter()
    _, found = index.kneighbors(Q, 10)
    graph_rate = m / (time.perf_counter() - t)
    exact = NearestNeighbors().fit(Xt)
    t = time.perf_counter()
    _, ie = exact.kneighbors(Q[:m_exact], n_neighbors=10)
    exact_rate = m_exact / (time.perf_counter() - t)
    return (f"| {n:,} | {t_knn:.1f} | {t_build:.1f} | {graph_rate:,.0f} | {exact_rate:,.0f} | "
            f"{graph_rate / exact_rate:.1f} | {_recall(found[:m_exact], ie):.4f} | "
            f"{np.mean(found[:m_exact, 0] == ie[:, 0]):.4f} |")


def label_row(n, m):
    X, _ = gc.datasets.load_infinite_mnist(n_samples=n + m)
    model = gc.StabilityClustering(random_state=0).fit(X[:n])
    Q = X[n:]
    graph = model.predict(Q, return_outlier_score=True)
    model._nn = NeighbourIndex(model._X_fit, None)  # the exact search, same model
    exact = model.predict(Q, return_outlier_score=True)
    thr = model.outlier_threshold
    return (f"StabilityClustering on {n:,} points (c = {model.n_clusters_}), {m:,} new points: "
            f"labels equal to the exact search's {np.mean(graph[0] == exact[0]):.4f}; flagged "
            f"as outliers {int((graph[1] < thr).sum())} (exact search: "
            f"{int((exact[1] < thr).sum())}); mean |score difference| "
            f"{np.abs(graph[1] - exact[1]).mean():.4f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[125_000, 250_000])
    p.add_argument("--queries", type=int, default=20_000)
    p.add_argument("--exact-queries", type=int, default=2_000)
    p.add_argument("--labels", type=int, default=0)
    args = p.parse_args()
    print("| training n | kNN lists s | index build s | graph search points/s | exact points/s "
          "| speed-up | recall@10 | nn1 |")
    print("|---|---|---|---|---|---|---|---|")
    for n in args.n:
        print(index_row(n, args.queries, args.exact_queries), flush=True)
    if args.labels:
        print()
        print(label_row(args.labels, args.queries))


if __name__ == "__main__":
    main()
