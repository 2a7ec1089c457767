"""Scale benchmark of issue 15: every stage of NJW / AHK at 125 000 ... 1 000 000 points.

Data: `graphclust.datasets.load_infinite_mnist(n)` (MNIST + seeded shifts / rotations, PCA-50
fitted on the 70 000 originals; generated once and cached, not timed), or with
``--data jitter`` the near-duplicate set of ``scripts/bench_join.py`` (n / 16 MNIST images, each
repeated 16 times with Gaussian jitter of sd ``--sd``): its 10-NN graph falls into hundreds of
components, and once joined it is nearly disconnected (hundreds of eigenvalues within 1e-3 of 1).

Stages, each in a fresh Python process so its peak resident set size (``ru_maxrss``, which
counts numpy and numba memory alike) is its own:

- ``knn``: ``graphclust.knn_graph(X, 10, random_state=0)`` (NN-descent above 20 000 points);
- ``join``: ``graphclust.join_components`` (only when the graph has more than one component);
- ``spectrum``: the gaussian affinity and the 9 smallest non-trivial eigenpairs of L_sym
  (``top_eigenpairs`` with ``method="auto"``; the result's solver is printed);
- ``njw``: ``SpectralClustering(n_clusters=10)`` fitted on the (joined) graph: affinity,
  eigenpairs, k-means; NMI against the digits;
- ``ahk``: ``AHKClustering(n_clusters=10)`` likewise (default: the full kernel, every eigenpair);
- ``predict``: the fitted NJW model assigns 10 000 new points (rows n .. n + 9 999 of the same
  generator: unseen deformed copies); the neighbour index over the training points is built
  first and timed separately ("index_s"), and so is its 10-NN query of the new points alone
  ("search_s": scikit-learn's exact search, which dominates);
- ``auto`` (only when asked: ``--stages auto``): the fully automatic default fit
  ``ConsistencyClustering(random_state=S).fit(X)`` (S = 0 unless ``--random-state``) from
  the points, its own kNN lists included; c found, NMI, the number of consensus pieces b
  (the flows' block: they cost about n b^2 per step) and the fit's ``timings_`` (B/edge
  counts the 10-NN union graph's edges).

Per stage it prints wall time, the process's peak RSS, the RSS after its inputs were loaded
(baseline), (peak - baseline) / edges in bytes, and time(n) / time(n / 2) when both were run.
A stage that exceeds ``--timeout`` seconds is reported as such. With ``--repeat R`` the whole
sweep runs R times in rounds (every size once per round, so a slow phase of the machine falls
on all sizes alike), and a last table gives each stage's median time per size and the ratio of
the medians per doubling: on a shared machine one run's ratio moves by up to 0.5
(docs/scaling.md). ``--random-state S1 S2 ...`` gives round r the seed S_r (default 0 for
every round): the fit's b, and with it the flows' time, is a draw of the seed, so a ratio
measured on one draw per size inherits that draw.

``--report LOG ...`` runs nothing: it pools the rows that earlier runs printed (their output
saved to files, from any number of runs and sessions) and prints each stage's median per size,
the ratio of the medians per doubling, and the median of each sweep's own ratio (its sizes
paired: they share the machine's phase), each with a 90 % bootstrap interval, so a verdict on
the doubling says how sure it is:

    python scripts/bench_scale.py --n 125000 250000 500000 1000000 --stages auto \\
        --repeat 3 --random-state 12 13 14 > run1.log
    python scripts/bench_scale.py --report run1.log run2.log

    GRAPHCLUST_DATA=/work/shared/datasets OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 \\
        NUMBA_NUM_THREADS=1 nice -n 10 python scripts/bench_scale.py --n 125000 250000 500000 1000000

Times on a shared 2-core machine with one BLAS thread are upper bounds.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

N_NEW = 100_000  # rows n .. n + N_NEW - 1 of the generator are unseen points
N_PREDICT = 10_000  # of which predict assigns the first N_PREDICT (its time is linear in them)


def load(data, n, sd):
    if data == "mnist":
        from graphclust.datasets import load_infinite_mnist

        X, y = load_infinite_mnist(n + N_NEW)
        return X[:n], y[:n], X[n:]
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_join import jittered_mnist  # noqa: E402

    X = jittered_mnist(n + N_NEW, 16, sd)
    return X[:n], None, X[n:]


def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def run_stage(stage, data, n, sd, work, seed=0):
    """Body of one stage in this (fresh) process; returns a dict of measurements."""
    import graphclust as gc

    work = Path(work)
    X, y, X_new = load(data, n, sd)
    out = {}
    if stage == "auto":
        # the fully automatic default fit from the points (its own kNN lists included)
        base = rss_mb()
        t = time.perf_counter()
        model = gc.ConsistencyClustering(random_state=seed).fit(X)
        out["time"] = time.perf_counter() - t
        out["stages"] = {k: round(float(v), 1) for k, v in model.timings_.items()}
        out["c"] = int(model.n_clusters_)
        out["pieces"] = int(model.stability_.fine_labels_.max()) + 1
        out["random_state"] = int(seed)
        if y is not None:
            from sklearn.metrics import normalized_mutual_info_score as nmi

            out["NMI"] = round(float(nmi(y, model.labels_)), 3)
        g = None
    elif stage == "knn":
        base = rss_mb()
        t = time.perf_counter()
        g = gc.knn_graph(X, 10, random_state=0)
        out["time"] = time.perf_counter() - t
        out["components"] = int(g.n_components)
        _save_graph(g, work / "graph.npz")
    else:
        g = _load_graph(work / ("joined.npz" if (work / "joined.npz").exists() and stage != "join"
                                else "graph.npz"))
        base = rss_mb()
        t = time.perf_counter()
        if stage == "join":
            if g.n_components == 1:
                return {}
            gj = gc.join_components(g, X)
            out["time"] = time.perf_counter() - t
            out["added"] = int(gj.provenance.get("joined_edges", 0))
            out["search"] = str(gj.provenance.get("join_search", ""))
            _save_graph(gj, work / "joined.npz")
            g = gj
        elif stage == "spectrum":
            W = gc.affinity(g)
            t_aff = time.perf_counter() - t
            spec = gc.laplacian_eigenpairs(W, 9, "sym", tol=1e-8, random_state=0)
            out["time"] = time.perf_counter() - t
            out["affinity_s"] = round(t_aff, 1)
            out["solver"] = spec.method
            out["lambda_2..10"] = [float(f"{v:.3g}") for v in spec.values[[0, -1]]]
            out["max_resid"] = float(f"{spec.residuals.max():.1e}")
        elif stage in ("njw", "ahk"):
            cls = gc.SpectralClustering if stage == "njw" else gc.AHKClustering
            model = cls(n_clusters=10, random_state=0).fit(g)
            out["time"] = time.perf_counter() - t
            out["stages"] = {k: round(float(v), 1) for k, v in model.timings_.items()}
            if y is not None:
                from sklearn.metrics import normalized_mutual_info_score as nmi

                out["NMI"] = round(float(nmi(y, model.labels_)), 3)
            if stage == "njw":
                model.save(work / "njw_model.npz")
        elif stage == "predict":
            model = gc.SpectralClustering.load(work / "njw_model.npz")
            model._set_points(X, "euclidean")  # what graphclust.Pipeline does after a graph fit
            out["index_s"] = round(time.perf_counter() - t, 1)
            Xq = np.asarray(X_new[:N_PREDICT], dtype=np.float64)
            t = time.perf_counter()
            model._nn.kneighbors(Xq, n_neighbors=10)
            out["search_s"] = round(time.perf_counter() - t, 1)
            t = time.perf_counter()
            labels = model.predict(Xq)
            out["time"] = time.perf_counter() - t
            out["points/s"] = int(len(Xq) / out["time"])
            out["labels"] = int(len(np.unique(labels)))
        else:
            raise ValueError(stage)
    # the automatic fit keeps no graph: its edges are those of the 10-NN union graph
    out["edges"] = int(g.n_edges) if g is not None else int(gc.knn_graph(X, 10, random_state=0).n_edges)
    out["base_MB"] = round(base)
    out["peak_MB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    out["bytes/edge"] = round((out["peak_MB"] - out["base_MB"]) * 2**20 / max(out["edges"], 1))
    return out


def _save_graph(g, path):
    """The graph's distance matrix (explicit zeros kept) and its JSON-able provenance."""
    import scipy.sparse as sp

    sp.save_npz(path, g.distances, compressed=False)
    prov = {k: v for k, v in g.provenance.items() if isinstance(v, (str, int, float, bool))}
    Path(str(path) + ".json").write_text(json.dumps(prov))


def _load_graph(path):
    import scipy.sparse as sp

    import graphclust as gc

    prov = json.loads(Path(str(path) + ".json").read_text())
    return gc.Graph(sp.load_npz(path), provenance=prov)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="+", default=[125_000, 250_000, 500_000, 1_000_000])
    ap.add_argument("--stages", nargs="+",
                    default=["knn", "join", "spectrum", "njw", "ahk", "predict"])
    ap.add_argument("--data", choices=["mnist", "jitter"], default="mnist")
    ap.add_argument("--sd", type=float, default=0.5)
    ap.add_argument("--timeout", type=float, default=540)
    ap.add_argument("--repeat", type=int, default=1, help="rounds of the whole sweep")
    ap.add_argument("--random-state", type=int, nargs="+", default=[0],
                    help="the auto stage's seed per round (the last one repeats)")
    ap.add_argument("--report", type=Path, nargs="+", metavar="LOG",
                    help="run nothing: pool the rows of earlier runs' printed output (files) and "
                         "print each stage's median per size, the ratio of the medians and "
                         "the median of the sweeps' own ratios per doubling, with 90 %% "
                         "bootstrap intervals")
    ap.add_argument("--stage", help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.report:
        _report(args.report)
        return
    if args.stage:  # child process
        print(json.dumps(run_stage(args.stage, args.data, args.n[0], args.sd, args.work,
                                   args.random_state[0])))
        return
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} data={args.data} "
          f"{'sd=' + str(args.sd) if args.data == 'jitter' else ''}", flush=True)
    print(f"{'n':>9} {'stage':>8} {'time s':>8} {'x prev':>6} {'peak MB':>8} {'base MB':>8} "
          f"{'B/edge':>7} {'edges':>10}  details", flush=True)
    times = {}
    for rnd in range(max(1, args.repeat)):
        seed = args.random_state[min(rnd, len(args.random_state) - 1)]
        if args.repeat > 1:
            print(f"# round {rnd + 1} of {args.repeat} (random_state {seed})", flush=True)
        _sweep(args, times, seed)
    if args.repeat > 1:
        _medians(args, times)


def _medians(args, times):
    print(f"# medians of {args.repeat} rounds", flush=True)
    print(f"{'n':>9} {'stage':>8} {'median s':>9} {'x prev':>6}  runs", flush=True)
    for stage in args.stages:
        for n in args.n:
            runs = times.get((stage, n))
            if not runs:
                continue
            med = float(np.median(runs))
            half = times.get((stage, n // 2))
            ratio = f"{med / float(np.median(half)):.2f}" if half else ""
            print(f"{n:>9} {stage:>8} {med:9.1f} {ratio:>6}  "
                  f"{' '.join(f'{t:.1f}' for t in runs)}", flush=True)


def _read_sweeps(paths):
    """Each sweep that `_sweep` printed into the files `paths`, as {(stage, n): time}.

    A sweep starts with each file, at a ``# round`` line, or where a row repeats a (stage, n)
    of the sweep before (a sweep runs each once)."""
    sweeps = []
    for path in paths:
        sweeps.append({})
        for line in Path(path).read_text().splitlines():
            if line.startswith("# medians"):  # `_medians`' summary repeats the rows above it
                break
            parts = line.split()
            key = (parts[1], int(parts[0])) if len(parts) >= 3 and parts[0].isdigit() else None
            if line.startswith("# round") or key in sweeps[-1]:
                sweeps.append({})
            if key is None or parts[2].startswith(">"):
                continue
            try:
                sweeps[-1][key] = float(parts[2])
            except ValueError:  # "failed: ..."
                continue
    return [sw for sw in sweeps if sw]


def _pooled(sweeps):
    """(stage, n) -> the times of that stage and size over `sweeps`, in their order."""
    times = {}
    for sweep in sweeps:
        for key, t in sweep.items():
            times.setdefault(key, []).append(t)
    return times


def _interval(draw, n_boot):
    """The 90 % percentile-bootstrap interval of `n_boot` calls of `draw`, printed."""
    lo, hi = np.quantile([draw() for _ in range(n_boot)], [0.05, 0.95])
    return f"[{lo:.2f}, {hi:.2f}]"


def _report(paths, n_boot=4000, seed=0):
    """Medians per size of the pooled runs and two estimates of the ratio per doubling, each
    with a 90 % percentile-bootstrap interval.

    - The ratio of the medians: each size's runs resampled on their own, as if the sizes of
      one sweep were unpaired.
    - The median of the sweeps' own ratios time(n) / time(n / 2): the sweeps resampled. A
      sweep's sizes run within minutes of each other and share the machine's phase (over
      the 22 draws of docs/scaling.md the log times of adjacent sizes correlate 0.60-0.75,
      while the 125 000-point times alone span 11.5-16.4 s), so the paired ratio leaves the
      phase out: its interval is the narrower, and it measures the doubling itself.
    """
    sweeps = _read_sweeps(paths)
    times = _pooled(sweeps)
    rng = np.random.default_rng(seed)
    print(f"# {len(paths)} file(s), {len(sweeps)} sweep(s); per doubling the ratio of the "
          "medians and the median of the sweeps' own ratios [90 % bootstrap intervals]")
    print(f"{'n':>9} {'stage':>8} {'runs':>5} {'median s':>9} {'x prev':>6} {'interval':>13} "
          f"{'paired':>6} {'interval':>13}")
    for stage in dict.fromkeys(s for s, _ in times):
        for n in sorted(n for s, n in times if s == stage):
            runs = np.asarray(times[(stage, n)])
            med = float(np.median(runs))
            half = times.get((stage, n // 2))
            ratio = interval = paired = p_interval = ""
            if half:
                half = np.asarray(half)
                ratio = f"{med / float(np.median(half)):.3f}"
                interval = _interval(lambda: np.median(rng.choice(runs, runs.size))
                                     / np.median(rng.choice(half, half.size)), n_boot)
                own = np.asarray([sw[(stage, n)] / sw[(stage, n // 2)] for sw in sweeps
                                  if (stage, n) in sw and (stage, n // 2) in sw])
                if own.size:
                    paired = f"{np.median(own):.3f}"
                    p_interval = _interval(lambda: np.median(rng.choice(own, own.size)),
                                           n_boot)
            print(f"{n:>9} {stage:>8} {runs.size:5d} {med:9.1f} {ratio:>6} {interval:>13} "
                  f"{paired:>6} {p_interval:>13}")


def _sweep(args, times, seed=0):
    """One run of every stage at every size; each stage's time is appended to `times`."""
    prev = {}
    for n in args.n:
        with tempfile.TemporaryDirectory(prefix="bench_scale_") as work:
            for stage in args.stages:
                cmd = [sys.executable, __file__, "--stage", stage, "--work", work, "--n", str(n),
                       "--data", args.data, "--sd", str(args.sd), "--random-state", str(seed)]
                try:
                    proc = subprocess.run(cmd, capture_output=True, text=True,
                                          timeout=args.timeout, env=os.environ)
                except subprocess.TimeoutExpired:
                    print(f"{n:>9} {stage:>8} > {args.timeout:.0f} s (stopped)", flush=True)
                    continue
                if proc.returncode != 0:
                    print(f"{n:>9} {stage:>8} failed: {proc.stderr.strip().splitlines()[-1:]}",
                          flush=True)
                    continue
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                if stage == "join" and "time" not in r:
                    continue
                ratio = ""
                if (stage, n // 2) in prev:
                    ratio = f"{r['time'] / prev[(stage, n // 2)]:.2f}"
                prev[(stage, n)] = r["time"]
                times.setdefault((stage, n), []).append(r["time"])
                details = {k: v for k, v in r.items()
                           if k not in {"time", "peak_MB", "base_MB", "bytes/edge", "edges"}}
                print(f"{n:>9} {stage:>8} {r['time']:8.1f} {ratio:>6} {r['peak_MB']:8d} "
                      f"{r['base_MB']:8d} {r['bytes/edge']:7d} {r['edges']:10d}  "
                      f"{json.dumps(details)}", flush=True)


if __name__ == "__main__":
    main()
