"""The default automatic fit on small sets, as a user runs it: one fresh process per fit.

A user's script or the command line fits once per process, so every fit here is the first of
its process (numba's compiled kernels loaded from their cache, the null model's samples drawn
anew). With ``--trees`` the same fits run on other checkouts too, interleaved round by round so
that both meet the same machine, and the table says whether the labels are the same:

    python scripts/bench_small_fits.py --trees /path/to/old/checkout,. --repeat 3

Sets: the names of ``scripts/bench_model_selection.py`` (``shapes:<name>`` and ``tables:<name>``
need ``GRAPHCLUST_TABLES``, ``battery:<folder>/<name>`` needs ``GRAPHCLUST_BATTERY``), plus
``digits`` (scikit-learn's bundled digits), ``moons<N>`` (the papers' three moons, seed 1) and
``blobs<D>`` (make_blobs: 3 000 points, 10 centres, D features, unit deviations, seed 1).
Columns: per tree, the median wall time of the fit (s, the data's loading excluded) and c; then
whether every tree's labels hash alike (``same``) or not (``DIFF``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

DEFAULT_SETS = ("moons600,digits,shapes:2d-10c,shapes:banana,shapes:xclara,shapes:square5,"
                "shapes:2dnormals,shapes:disk-4000n,tables:segment,tables:vowel")

# the child: load one set, fit once, print c, the seconds and a hash of the labels
CHILD = r"""
import hashlib, json, sys, time, warnings
import numpy as np
name = sys.argv[1]
sys.path.insert(0, sys.argv[2])
import graphclust as gc
if name == "digits":
    from sklearn.datasets import load_digits
    X, _ = load_digits(return_X_y=True)
elif name.startswith("moons"):
    X, _ = gc.datasets.three_moons(int(name[5:]), random_state=1)
elif name.startswith("blobs"):
    from sklearn.datasets import make_blobs
    X, _ = make_blobs(3000, n_features=int(name[5:]), centers=10, random_state=1)
else:
    import bench_model_selection as B
    X = B.load(name)[0]
warnings.simplefilter("ignore")
t = time.perf_counter()
m = gc.StabilityClustering(random_state=0).fit(X)
seconds = time.perf_counter() - t
digest = hashlib.md5(np.asarray(m.labels_, np.int64).tobytes()).hexdigest()[:10]
print(json.dumps({"n": int(X.shape[0]), "c": int(m.n_clusters_), "s": seconds, "h": digest,
                  "file": gc.__file__}))
"""


def fit_in_fresh_process(tree, name):
    """One fit of the checkout `tree` in a new interpreter: its dict (n, c, s, h, file)."""
    tree = os.path.abspath(tree)
    # run in the tree: ``python -c`` puts the working directory first on sys.path, ahead of
    # PYTHONPATH, so a graphclust/ beside the caller would be imported instead of the tree's
    out = subprocess.run([sys.executable, "-c", CHILD, name, HERE], cwd=tree,
                         env=dict(os.environ, PYTHONPATH=tree), capture_output=True, text=True,
                         check=True)
    found = json.loads(out.stdout.strip().splitlines()[-1])
    if not os.path.abspath(found["file"]).startswith(os.path.join(tree, "")):
        raise SystemExit(f"--trees: {tree} has no graphclust/ of its own; the fit imported "
                         f"{found['file']}")
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=DEFAULT_SETS, help="comma-separated set names")
    ap.add_argument("--trees", default=os.path.dirname(HERE),
                    help="comma-separated checkouts (default: this one)")
    ap.add_argument("--repeat", type=int, default=3, help="fits per set and tree")
    args = ap.parse_args(argv)
    trees = args.trees.split(",")
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1; got {args.repeat}")
    head = " | ".join(f"{os.path.basename(os.path.abspath(t)) or t}: s, c" for t in trees)
    print(f"| set | n | {head} | labels |")
    print("|---|---|" + "---|" * len(trees) + "---|")
    totals = np.zeros(len(trees))
    for name in args.sets.split(","):
        runs = [[] for _ in trees]
        for _ in range(args.repeat):  # round by round: every tree meets the same machine
            for i, tree in enumerate(trees):
                runs[i].append(fit_in_fresh_process(tree, name))
        cells = []
        for i, r in enumerate(runs):
            med = float(np.median([x["s"] for x in r]))
            totals[i] += med
            cells.append(f"{med:.1f}, c={r[0]['c']}")
        same = len({x["h"] for r in runs for x in r}) == 1
        print(f"| {name} | {runs[0][0]['n']} | " + " | ".join(cells)
              + f" | {'same' if same else 'DIFF'} |", flush=True)
    print("| all (sum of medians) | | " + " | ".join(f"{t:.1f}" for t in totals) + " | |")


if __name__ == "__main__":
    main()
