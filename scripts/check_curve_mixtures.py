"""Curves beside blobs: does the automatic fit keep each curve whole and each blob apart?

Random planar mixtures, one per seed: 1-2 curves (an arc of a unit circle 1.5-3.5 radians
long, a sine ``0.3 sin(3t)`` over t in [-1, 1], or a circle of radius 0.6; 120-400 points
uniform in their parameter, Gaussian scatter 0.005-0.03) and 1-3 Gaussian blobs (80-300
points, deviation 0.15-0.4), each in its own cell of a 3 x 3 grid 2.5 apart. The truth is one
cluster per curve and per blob. A sine's points, uniform in t, are denser along its arc where
it is flat: two density modes a fit may rightly keep apart.

Not used to choose any default (docs/model_selection.md, *Built: pairs of clusters that are
curves, in data that are no curve* and *Built: a curve told from a blob by its local PCA*,
say what it measured). One row per mixture (seed, true
c, c found, adjusted Rand index, warned) and a summary; with ``--peers`` also scikit-learn's
HDBSCAN in the same run, at its defaults and at ``min_cluster_size=15`` (its noise points,
label -1, counted as one more cluster in the index and not in c)::

    python scripts/check_curve_mixtures.py --seeds 0 120 --peers
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np


def curve(rng, kind, n, centre):
    """n points of a curve of `kind` around `centre`, with Gaussian scatter."""
    if kind == "arc":
        a = rng.uniform(0, rng.uniform(1.5, 3.5), n)
        P = np.c_[np.cos(a), np.sin(a)]
    elif kind == "sine":
        t = rng.uniform(-1, 1, n)
        P = np.c_[t, 0.3 * np.sin(3 * t)]
    else:
        a = rng.uniform(0, 2 * np.pi, n)
        P = 0.6 * np.c_[np.cos(a), np.sin(a)]
    return centre + P + rng.normal(0, rng.uniform(0.005, 0.03), (n, 2))


def mixture(seed):
    """(X, y): the mixture of `seed` (module docstring)."""
    rng = np.random.default_rng(seed)
    parts, y = [], []
    n_curves, n_blobs = rng.integers(1, 3), rng.integers(1, 4)
    cells = rng.permutation(9)[: n_curves + n_blobs]
    for j, cell in enumerate(cells):
        centre = 2.5 * np.array([cell % 3, cell // 3], dtype=float)
        if j < n_curves:
            kind = rng.choice(["arc", "sine", "circle"])
            P = curve(rng, kind, int(rng.integers(120, 400)), centre)
        else:
            P = rng.normal(centre, rng.uniform(0.15, 0.4), (int(rng.integers(80, 300)), 2))
        parts.append(P)
        y += [j] * len(P)
    return np.vstack(parts), np.array(y)


def run_scenes(draw, seeds, methods, random_state=0, shapes=None, extra=None):
    """Fit each scene ``draw(seed) -> (X, y)`` for `seeds` (FIRST, STOP) with graphclust's
    default (the `methods` entry None) and each peer (an unfitted estimator); print one row
    per scene (true c, then per method c found, adjusted Rand index, warned) and a summary.
    `shapes(y)`: the points the index reads (default all); `extra(model)`: more text for
    graphclust's cell."""
    from sklearn.metrics import adjusted_rand_score

    import graphclust as gc

    rows = {name: [] for name in methods}
    for seed in range(*seeds):
        X, y = draw(seed)
        read = np.ones(len(y), bool) if shapes is None else shapes(y)
        line = f"{seed:5d}  c = {int(y.max()) + 1}"
        for name, peer in methods.items():
            warned, more = False, ""
            if peer is None:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model = gc.StabilityClustering(random_state=random_state).fit(X)
                labels = model.labels_
                warned = any(issubclass(w.category, gc.StabilityWarning) for w in caught)
                more = "" if extra is None else extra(model)
            else:
                labels = peer.fit(X).labels_
            found = int(labels.max()) + 1
            ari = adjusted_rand_score(y[read], labels[read])
            rows[name].append((int(y.max()) + 1 == found, found, ari, warned))
            line += f"  {name} {found:3d} {ari:.3f}{more}{' warned' if warned else ''}"
        print(line, flush=True)
    for name, got in rows.items():
        right = sum(r[0] for r in got)
        silent = sum(not r[0] and not r[3] for r in got)
        print(f"{name}: c right {right} of {len(got)}, wrong and silent {silent}, mean ARI "
              f"{np.mean([r[2] for r in got]):.4f}")


def scene_arguments(doc, what, stop):
    """The command line of a check of scenes (`run_scenes`): ``--seeds FIRST STOP`` (default
    0 `stop`; `what` names the scenes), ``--random-state``, ``--peers``."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--seeds", nargs=2, type=int, default=[0, stop], metavar=("FIRST", "STOP"),
                   help=f"{what} FIRST .. STOP - 1 (default 0 {stop})")
    p.add_argument("--random-state", type=int, default=0, help="the fit's (default 0)")
    p.add_argument("--peers", action="store_true", help="also scikit-learn's HDBSCAN")
    return p.parse_args()


def main():
    args = scene_arguments(__doc__, "mixtures", 120)
    from sklearn.cluster import HDBSCAN

    methods = {"graphclust": None}
    if args.peers:
        methods.update({"HDBSCAN": HDBSCAN(copy=True),
                        "HDBSCAN mcs 15": HDBSCAN(min_cluster_size=15, copy=True)})
    run_scenes(mixture, args.seeds, methods, args.random_state)


if __name__ == "__main__":
    main()
