"""Shapes in clutter: does the automatic fit keep each ring, band and blob whole?

Random planar scenes, one per seed: 2-4 shapes, each in its own cell of a 3 x 3 grid 2.6
apart, each a thick ring (uniform over an annulus of radii 0.7 and 1), a thick band (the same
annulus over an angle of 2-4 radians) or a Gaussian blob (deviation 0.2-0.35), of 300-900
points; then 10-30 % more points uniform over the scene's box, the clutter of chameleon's
sets (battery other/chameleon_t*). The truth is one cluster per shape; the clutter has none,
and the adjusted Rand index is read on the shapes' points only (as a fit or HDBSCAN may give
the clutter to any cluster or to noise). A ring or band has no density valley along it: a fit
that cuts one has cut a shape at a chance sparse spot.

Not used to choose any default (docs/model_selection.md, *Built: clusters found without a
background joined where no valley lies between them*, says what it measured). One row per
scene (seed, true c, c found, adjusted Rand index, points left out as a background, warned)
and a summary; with ``--peers`` also scikit-learn's HDBSCAN (``min_cluster_size=15``, its
noise label not counted in c) in the same run::

    python scripts/check_shapes_in_clutter.py --seeds 0 60 --peers
"""

from __future__ import annotations

import numpy as np


def shape(rng, kind, n, centre):
    """n points of a shape of `kind` ("ring", "band" or "blob") around `centre`."""
    if kind == "blob":
        return rng.normal(centre, rng.uniform(0.2, 0.35), (n, 2))
    r = np.sqrt(rng.uniform(0.7**2, 1.0**2, n))  # uniform over the annulus' area
    a = rng.uniform(0, 2 * np.pi if kind == "ring" else rng.uniform(2, 4), n)
    return centre + np.c_[r * np.cos(a), r * np.sin(a)]


def scene(seed):
    """(X, y): the scene of `seed` (module docstring); y = -1 for the clutter."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 5))
    parts, y = [], []
    for j, cell in enumerate(rng.permutation(9)[:k]):
        centre = 2.6 * np.array([cell % 3, cell // 3], dtype=float)
        P = shape(rng, rng.choice(["ring", "band", "blob"]), int(rng.integers(300, 900)), centre)
        parts.append(P)
        y += [j] * len(P)
    P = np.vstack(parts)
    clutter = rng.uniform(P.min(0) - 0.5, P.max(0) + 0.5, (int(rng.uniform(0.1, 0.3) * len(P)), 2))
    return np.vstack([P, clutter]), np.r_[y, np.full(len(clutter), -1)]


def main():
    from check_curve_mixtures import run_scenes, scene_arguments
    from sklearn.cluster import HDBSCAN

    args = scene_arguments(__doc__, "scenes", 60)

    methods = {"graphclust": None}
    if args.peers:
        methods["HDBSCAN mcs 15"] = HDBSCAN(min_cluster_size=15, copy=True)
    run_scenes(scene, args.seeds, methods, args.random_state, shapes=lambda y: y >= 0,
               extra=lambda model: f" background {int(model.noise_.sum()):4d}")


if __name__ == "__main__":
    main()
