"""BSDS500 benchmark: graphclust's segmentation default and its alternatives beside scikit-image.

All 20 images of ``$GRAPHCLUST_DATA/bsds500`` at full resolution (481 x 321 = 154 401 pixels);
scores against every human segmentation of each image (mean over humans, then over images):
Probabilistic Rand Index (higher is better), Variation of Information (natural log, lower is
better), segmentation covering of the human regions (higher is better); segments, time and peak
memory per image; then one 12-megapixel photograph (a BSDS image upsampled bicubic to
4000 x 3000) for time and memory, in a fresh process.

Methods:

- ``gc-default``: `segment_image(img)` (superpixels, Mumford-Shah hierarchy, lambda = 70);
- ``gc-hierarchy-k12`` / ``-k8``: the same hierarchy cut at a fixed count;
- ``gc-no-texture`` / ``gc-no-size-prior``: the default without its texture channel / size prior;
- ``gc-boundary-k12``: the same superpixels merged by mean contour strength (OWT-UCM order,
  size prior 4000 px), K = 12;
- ``gc-superpixels``: the leaves of the hierarchy;
- ``gc-njw-grid``: NJW on the 8-grid, K = 8 (the default before the hierarchy); with --methods
  also ``gc-njw-pmst``, ``gc-njw-dmst``, ``gc-ahk-grid``, ``gc-consistency-grid`` (K = 8) and
  ``gc-consistency-auto`` (K by Omega in 2..10, minutes per image);
- scikit-image felzenszwalb with its best single ``scale`` chosen in this run on the same images:
  scale swept over 50..5000 for its defaults (sigma 0.8, min_size 20) and for (sigma 0.5,
  min_size 50); the setting of best mean PRI and the one of best mean VoI are both reported;
- scikit-image SLIC (250 segments, compactness 10) and its RAG normalised cut on SLIC
  superpixels (400, compactness 30; ``graph.cut_normalized`` on ``rag_mean_color``).

scikit-image and Pillow are needed for the baselines and the 12-MP image only (not graphclust
dependencies). Peak memory: the largest increase of the resident set while a method runs,
sampled every 2 ms (approximate; 0 means below the process's earlier high-water mark); the
12-MP row reports the whole process's peak RSS. Timings are wall clock on whatever machine runs
this.

    GRAPHCLUST_DATA=... OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1 \\
        python scripts/bench_segmentation.py [--methods ...] [--images N] [--no-large]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import threading
import time

import numpy as np

import graphclust as gc
from graphclust.datasets import bsds_ids, load_bsds
from graphclust.metrics import (
    probabilistic_rand_index,
    segmentation_covering,
    variation_of_information,
)
from graphclust.segmentation import image_hierarchy

PAGE = os.sysconf("SC_PAGE_SIZE")
FELZ_SCALES = (50, 100, 200, 300, 500, 700, 1000, 1500, 2000, 3000, 5000)
FELZ_SETTINGS = ((0.8, 20), (0.5, 50))  # (sigma, min_size)
DEFAULT_SET = ("gc-default", "gc-hierarchy-k12", "gc-hierarchy-k8", "gc-no-texture",
               "gc-no-size-prior", "gc-boundary-k12", "gc-superpixels", "gc-njw-grid",
               "skimage-slic-250", "skimage-rag-ncut")


def _rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * PAGE


def measure(fn, img):
    """labels, seconds, peak MB above the resident set at the call."""
    base = _rss()
    peak = [base]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.002)

    th = threading.Thread(target=watch, daemon=True)
    th.start()
    t0 = time.perf_counter()
    out = np.asarray(fn(img))
    dt = time.perf_counter() - t0
    stop.set()
    th.join()
    return out, dt, (max(peak[0], _rss()) - base) / 2**20


def _methods():
    seg = gc.segment_image
    out = {
        "gc-default": lambda img: seg(img),
        "gc-hierarchy-k12": lambda img: seg(img, 12),
        "gc-hierarchy-k8": lambda img: seg(img, 8),
        "gc-no-texture": lambda img: seg(img, texture_weight=0.0),
        "gc-no-size-prior": lambda img: seg(img, size_prior=0.0),
        "gc-boundary-k12": lambda img: seg(img, 12, criterion="boundary", size_prior=4000.0),
        "gc-superpixels": lambda img: image_hierarchy(img).superpixels,
        "gc-njw-grid": lambda img: seg(img, 8, method="njw", random_state=0),
        "gc-njw-pmst": lambda img: seg(img, 8, method="njw", graph="pmst", random_state=0),
        "gc-njw-dmst": lambda img: seg(img, 8, method="njw", graph="dmst", random_state=0),
        "gc-ahk-grid": lambda img: seg(img, 8, method="ahk", random_state=0),
        "gc-consistency-grid": lambda img: seg(img, 8, method="consistency", random_state=0),
        "gc-consistency-auto": lambda img: seg(img, "auto", method="consistency", random_state=0),
    }
    try:
        from skimage import graph as skgraph
        from skimage.segmentation import slic

        def ncut(img):
            sp = slic(img, n_segments=400, compactness=30, start_label=1)
            return skgraph.cut_normalized(sp, skgraph.rag_mean_color(img, sp, mode="similarity"))

        out["skimage-slic-250"] = lambda img: slic(img, n_segments=250, compactness=10,
                                                   start_label=0)
        out["skimage-rag-ncut"] = ncut
    except ImportError:
        print("scikit-image not installed: baselines skipped (pip install scikit-image)")
    return out


def felzenszwalb_sweep(data):
    """Mean PRI / VoI / segments of every (sigma, min_size, scale); the best-PRI and best-VoI."""
    from skimage.segmentation import felzenszwalb

    sweep = {}
    for sigma, min_size in FELZ_SETTINGS:
        for scale in FELZ_SCALES:
            rows = []
            for img, humans in data:
                lab = felzenszwalb(img, scale=scale, sigma=sigma, min_size=min_size)
                rows.append((probabilistic_rand_index(lab, humans),
                             variation_of_information(lab, humans), lab.max() + 1))
            sweep[(sigma, min_size, scale)] = np.mean(rows, axis=0)
            v = sweep[(sigma, min_size, scale)]
            print(f"  felzenszwalb sigma {sigma} min_size {min_size} scale {scale}: PRI {v[0]:.3f} "
                  f"VoI {v[1]:.3f} segments {v[2]:.0f}", flush=True)
    best_pri = max(sweep, key=lambda k: sweep[k][0])
    best_voi = min(sweep, key=lambda k: sweep[k][1])
    return best_pri, best_voi


def large_run():
    """12-MP photograph (fresh process): time, peak RSS, segments, agreement with 481 x 321."""
    from PIL import Image

    image_id = bsds_ids()[0]
    img, _ = load_bsds(image_id)
    big = np.asarray(Image.fromarray(img).resize((4000, 3000), Image.BICUBIC))
    gc.segment_image(img[:50, :60])  # compile the numba kernels outside the timing
    t0 = time.perf_counter()
    labels, info = gc.segment_image(big, return_info=True)
    dt = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    small = gc.segment_image(img)
    rows = np.arange(img.shape[0]) * big.shape[0] // img.shape[0]
    cols = np.arange(img.shape[1]) * big.shape[1] // img.shape[1]
    down = labels[rows][:, cols]
    est = gc.segmentation.segmentation_memory(big.shape) / 2**30
    print(f"| gc-default, 4000 x 3000 (BSDS {image_id} upsampled bicubic) | {dt:.1f} s | peak RSS "
          f"{peak:.2f} GiB (estimate {est:.2f} GiB) | {labels.max() + 1} segments, "
          f"{info['n_leaves']} superpixels | agreement with the 481 x 321 result "
          f"({small.max() + 1} "
          f"segments): PRI {probabilistic_rand_index(down, [small]):.3f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--images", type=int, default=None, help="first N images only")
    ap.add_argument("--no-large", action="store_true", help="skip the 12-MP photograph")
    ap.add_argument("--large-only", action="store_true", help="only the 12-MP photograph")
    args = ap.parse_args()
    if args.large_only:
        large_run()
        return
    methods = _methods()
    wanted = args.methods or [m for m in DEFAULT_SET if m in methods]
    unknown = sorted(set(wanted) - set(methods))
    if unknown:
        ap.error(f"unknown method(s) {unknown}; choose from {sorted(methods)}")
    methods = {k: methods[k] for k in wanted}
    ids = bsds_ids()[: args.images]
    data = [load_bsds(i) for i in ids]
    try:
        from skimage.segmentation import felzenszwalb

        print("felzenszwalb scale sweep on the same images:")
        kp, kv = felzenszwalb_sweep(data)
        for tag, (sig, ms, sc) in (("best-PRI", kp), ("best-VoI", kv)):
            methods[f"skimage-felzenszwalb {tag} (sigma {sig}, min_size {ms}, scale {sc})"] = (
                lambda img, sig=sig, ms=ms, sc=sc: felzenszwalb(img, scale=sc, sigma=sig,
                                                                min_size=ms))
    except ImportError:
        pass
    for fn in methods.values():  # compile numba kernels outside the timings
        fn(data[0][0][:64, :96])
    scores = {m: [] for m in methods}
    for (img, humans), image_id in zip(data, ids):
        for name, fn in methods.items():
            labels, dt, mem = measure(fn, img)
            assert labels.shape == img.shape[:2]
            row = (probabilistic_rand_index(labels, humans),
                   variation_of_information(labels, humans),
                   segmentation_covering(labels, humans), len(np.unique(labels)), dt, mem)
            scores[name].append(row)
            print(f"{image_id:>7} {name:40s} PRI {row[0]:.3f} VoI {row[1]:.3f} cover {row[2]:.3f} "
                  f"segments {row[3]:4d} {dt:6.2f} s {mem:6.0f} MB", flush=True)
    print(f"\n{len(ids)} BSDS500 images at full resolution, mean over images of the mean over "
          "human segmentations:\n")
    print("| method | PRI | VoI | covering | segments (mean, min-max) | s / image (mean, max) | "
          "peak MB (max) |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in scores.items():
        a = np.array(rows)
        print(f"| {name} | {a[:, 0].mean():.3f} | {a[:, 1].mean():.3f} | {a[:, 2].mean():.3f} | "
              f"{a[:, 3].mean():.1f} ({a[:, 3].min():.0f}-{a[:, 3].max():.0f}) | "
              f"{a[:, 4].mean():.2f} ({a[:, 4].max():.2f}) | {a[:, 5].max():.0f} |")
    h = []
    for _, humans in data:
        for k in range(len(humans)):
            others = humans[:k] + humans[k + 1:]
            h.append((probabilistic_rand_index(humans[k], others),
                      variation_of_information(humans[k], others),
                      segmentation_covering(humans[k], others)))
    h = np.array(h)
    print(f"| (one human vs the others) | {h[:, 0].mean():.3f} | {h[:, 1].mean():.3f} | "
          f"{h[:, 2].mean():.3f} | | | |")
    if "gc-default" in scores:
        P = np.array(scores["gc-default"])
        for name in [m for m in scores if m.startswith("skimage-felzenszwalb")]:
            F = np.array(scores[name])
            lose = [(ids[i], round(float(P[i, 0] - F[i, 0]), 3),
                     round(float(P[i, 1] - F[i, 1]), 3))
                    for i in range(len(ids)) if P[i, 0] < F[i, 0] or P[i, 1] > F[i, 1]]
            print(f"\ngc-default vs {name}: PRI better on {(P[:, 0] > F[:, 0]).sum()}/{len(ids)}, "
                  f"VoI better on {(P[:, 1] < F[:, 1]).sum()}/{len(ids)}; images where it loses "
                  f"(id, dPRI, dVoI): {lose}")
    if not args.no_large:
        print(flush=True)
        subprocess.run([sys.executable, os.path.abspath(__file__), "--large-only"], check=False)


if __name__ == "__main__":
    main()
