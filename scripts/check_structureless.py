"""Structureless shapes and small curves: does the automatic fit say when it finds no clusters?

Three checks of `StabilityClustering`'s defaults (docs/battery.md, docs/model_selection.md):

- ``rings``: one noisy annulus (radius 1, half-width 0.05, 0.1 or 0.2; 300, 600 or 1 200
  points; seeds 0-3; 36 fits). A fit is *silent* when it returns two or more clusters without
  a `graphclust.StabilityWarning`.
- ``manifolds``: structureless manifolds (a thin segment, a noisy spiral arm, a swiss roll, an
  S-curve, a sphere, a disk, a noisy circle in 3-D, a 10-D Gaussian; 500 and 2 000 points;
  seeds 0-2; 48 fits), silent as above.
- ``moons``: `three_moons` of 300 points (data seeds 0-4, fit seeds 0-7; 40 fits): right when
  c = 3 with no error; ``moons150`` the same with 150 points (not run by default).
- ``binary``: uniform binary tables (4-7 features; 100, 200 or 500 rows; seeds 0-1; 24 fits),
  silent as above: independent answers hold no classes.
- ``classes``: binary tables of 2 or 3 latent classes (5, 6 or 8 features, each answered yes
  with probability p or 1 - p by class, p 0.85, 0.9 or 0.95; 300 rows; seeds 0-1; 36 fits). A
  fit is *told chance* when it warns that no two features depend on each other; only tables
  whose classes differ in at most one feature are independent (``classes`` counts both).
- ``demo``: the sets of ``graphclust demo`` (two and three moons, two and three spirals) at
  100, 150, 200, 300, 400, 600 and 1 000 points, seeds 0-5 for the data and the fit, as
  ``graphclust demo --dataset D --n-samples N --seed S`` runs them (168 fits; not run by
  default): right as for ``moons``.

Prints one row per fit and a summary line per check::

    python scripts/check_structureless.py --checks rings manifolds moons --jobs 2
"""

from __future__ import annotations

import argparse
import time
import warnings
from multiprocessing import Pool

import numpy as np


def ring(n, half_width, seed):
    rng = np.random.default_rng(seed)
    t, r = rng.uniform(0, 2 * np.pi, n), 1 + half_width * rng.uniform(-1, 1, n)
    return np.c_[r * np.cos(t), r * np.sin(t)]


def manifold(kind, n, seed):
    from sklearn.datasets import make_s_curve, make_swiss_roll

    rng = np.random.default_rng(seed)
    if kind == "segment":
        return np.c_[rng.uniform(0, 10, n), rng.normal(0, 0.05, n)]
    if kind == "spiral arm":
        t = np.sqrt(rng.uniform(1, 16, n)) * np.pi
        return np.c_[t * np.cos(t), t * np.sin(t)] / 4 + rng.normal(0, 0.1, (n, 2))
    if kind == "swiss roll":
        return make_swiss_roll(n, noise=0.1, random_state=seed)[0]
    if kind == "S-curve":
        return make_s_curve(n, noise=0.05, random_state=seed)[0]
    if kind == "sphere":
        x = rng.normal(size=(n, 3))
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    if kind == "disk":
        r, a = np.sqrt(rng.uniform(0, 1, n)), rng.uniform(0, 2 * np.pi, n)
        return np.c_[r * np.cos(a), r * np.sin(a)]
    if kind == "3-D circle":
        a = rng.uniform(0, 2 * np.pi, n)
        return np.c_[np.cos(a), np.sin(a), np.zeros(n)] + rng.normal(0, 0.05, (n, 3))
    if kind == "10-D Gaussian":
        return rng.normal(size=(n, 10))
    raise ValueError(kind)


MANIFOLDS = ["segment", "spiral arm", "swiss roll", "S-curve", "sphere", "disk", "3-D circle",
             "10-D Gaussian"]


def latent_classes(c, d, n, p, seed):
    """(X, classes, profiles): `n` answers to `d` binary questions by `c` latent classes, each
    class answering each question yes with probability p or 1 - p."""
    rng = np.random.default_rng(seed)
    profiles = rng.random((c, d)) < 0.5
    z = rng.integers(c, size=n)
    X = (rng.random((n, d)) < np.where(profiles, p, 1 - p)[z]).astype(float)
    return X, z, profiles


def cases(checks):
    out = []
    if "binary" in checks:
        out += [("binary", f"binary d={d} n={n} seed={s}", ("binary", d, n, s), 0, None)
                for d in (4, 5, 6, 7) for n in (100, 200, 500) for s in range(2)]
    if "classes" in checks:
        out += [("classes", f"classes c={c} d={d} p={p} seed={s}", ("classes", c, d, p, s), 0,
                 "classes") for c in (2, 3) for d in (5, 6, 8) for p in (0.85, 0.9, 0.95)
                for s in range(2)]
    if "rings" in checks:
        out += [("rings", f"ring hw={hw} n={n} seed={s}", ("ring", n, hw, s), 0, None)
                for hw in (0.05, 0.1, 0.2) for n in (300, 600, 1200) for s in range(4)]
    if "manifolds" in checks:
        out += [("manifolds", f"{k} n={n} seed={s}", ("manifold", k, n, s), 0, None)
                for k in MANIFOLDS for n in (500, 2000) for s in range(3)]
    for n in (300, 150):
        name = "moons" if n == 300 else f"moons{n}"
        if name in checks:
            out += [(name, f"three moons n={n} data={d} fit={f}", ("moons", n, d), f, 3)
                    for d in range(5) for f in range(8)]
    if "demo" in checks:
        sets = {"two_moons": 2, "three_moons": 3, "two_spirals": 2, "three_spirals": 3}
        out += [("demo", f"{kind} n={n} seed={s}", ("demo", kind, n, s), s, c)
                for kind, c in sets.items() for n in (100, 150, 200, 300, 400, 600, 1000)
                for s in range(6)]
    return out


def run(case):
    import graphclust as gc
    from graphclust import datasets
    from graphclust.metrics import clustering_error

    check, name, spec, fit_seed, truth = case
    y = None
    if spec[0] == "ring":
        X = ring(spec[1], spec[2], spec[3])
    elif spec[0] == "manifold":
        X = manifold(spec[1], spec[2], spec[3])
    elif spec[0] == "demo":
        X, y = getattr(datasets, spec[1])(spec[2], random_state=spec[3])
    elif spec[0] == "binary":
        X = (np.random.default_rng(spec[3]).random((spec[2], spec[1])) < 0.5).astype(float)
    elif spec[0] == "classes":
        X, y, profiles = latent_classes(spec[1], spec[2], 300, spec[3], spec[4])
        # features on which some two classes differ: one or none leaves them independent
        truth = int((profiles != profiles[0]).any(axis=0).sum())
    else:
        X, y = datasets.three_moons(spec[1], random_state=spec[2])
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = gc.StabilityClustering(random_state=fit_seed).fit(X)
    warned = any(issubclass(w.category, gc.StabilityWarning) for w in caught)
    if spec[0] == "classes":  # warned: told that no two features depend on each other (the
        # graph's test) or that one latent class explains them (binary_tables' default)
        warned = any("depend on each other" in str(w.message)
                     or "smallest BIC at one class" in str(w.message) for w in caught)
    err = None if y is None or spec[0] == "classes" else clustering_error(y, m.labels_)
    return check, name, int(m.n_clusters_), warned, err, truth, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checks", nargs="+", default=["rings", "manifolds", "moons"],
                   choices=["rings", "manifolds", "moons", "moons150", "demo", "binary",
                            "classes"])
    p.add_argument("--jobs", type=int, default=1)
    args = p.parse_args()
    todo = cases(args.checks)
    with Pool(args.jobs) as pool:
        rows = pool.map(run, todo, chunksize=1)
    summary = {}
    for check, name, c, warned, err, truth, sec in rows:
        if check == "classes":  # truth: the features the classes differ on
            bad = warned and truth >= 2
            verdict = (("told chance" if warned else "not told") +
                       (", independent" if truth < 2 else ""))
        elif truth is None:
            bad = c >= 2 and not warned
            verdict = "SILENT" if bad else ("warned" if warned else "c = 1")
        else:
            bad = not (c == truth and err == 0.0)
            verdict = ("wrong, warned" if warned else "wrong") if bad else "right"
        print(f"{check:10s} {name:38s} c = {c:3d}  {verdict:24s} {sec:6.1f} s", flush=True)
        tot = summary.setdefault(check, [0, 0, 0, 0])
        tot[0] += bad
        tot[1] += 1 if check != "classes" else truth >= 2
        tot[2] += bad and warned
        tot[3] += check == "classes" and truth < 2 and warned
    for check, (bad, total, told, independent) in summary.items():
        if check == "classes":
            print(f"classes: told chance {bad} of {total} tables whose classes differ in two or "
                  f"more features ({independent} of the others)")
        elif check.startswith("moons") or check == "demo":
            print(f"{check}: wrong {bad} of {total} ({told} of them with a warning)")
        else:
            print(f"{check}: silent {bad} of {total}")


if __name__ == "__main__":
    main()
