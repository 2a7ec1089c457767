"""BSDS500 benchmark: graphclust segmentation at full resolution beside scikit-image.

All 20 images of ``$GRAPHCLUST_DATA/bsds500`` (481 x 321 = 154 401 pixels, no down-sampling);
scores against every human segmentation of each image (mean over humans, then over images):
Probabilistic Rand Index (higher is better), Variation of Information (natural log, lower is
better), segmentation covering of the human regions (higher is better); time per image.

Methods (settings chosen a priori, not tuned on these images):

- graphclust NJW, 8-grid, K = 8: `segment_image(img, 8)` defaults (features (row, column,
  10 * RGB in [0, 1]), sigma = median edge length, shift-invert Lanczos, 3 k-means restarts);
- graphclust NJW, PMST (20 trees, r = 0.4) constrained to the 8-grid, K = 8;
- graphclust NJW, DMST (t = 3) constrained to the 8-grid, K = 8;
- graphclust AHK, 8-grid, K = 8: `segment_image(img, 8, method="ahk")` (shift-invert Lanczos,
  AHKClustering's defaults: m = 100 eigenpairs);
- graphclust consistency, 8-grid, K = 8: `segment_image(img, 8, method="consistency")`
  (alpha = n / (n + K), deflation basis of 32 eigenpairs by shift-invert, CG tolerance 1e-6;
  see `graphclust.segmentation._consistency_defaults` for why);
- graphclust consistency, 8-grid, K chosen by Omega in 2..10 (``gc-consistency-auto``; not in
  the default set because it takes about 2 minutes per image: ask for it with --methods);
- scikit-image felzenszwalb(scale=100, sigma=0.5, min_size=50) (its documentation's example);
- scikit-image SLIC(n_segments=250, compactness=10) (its documentation's example) and SLIC with
  n_segments=8 (the same segment budget as ours).

scikit-image is needed for the baselines only (``pip install scikit-image``; not a graphclust
dependency). Timings are wall-clock on whatever machine runs this.

    python scripts/bench_segmentation.py [--methods ...] [--images N] [--ids ID ...] [--output-dir DIR]

(set OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 on a shared machine).

With --output-dir, overlay pictures of the first 3 images are written there (keep them out of
the repository: BSDS500 is for non-commercial research use and is not redistributed).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import graphclust as gc
from graphclust.datasets import bsds_ids, load_bsds
from graphclust.metrics import (
    probabilistic_rand_index,
    segmentation_covering,
    variation_of_information,
)
from graphclust.plots import plot_segmentation


def _methods():
    out = {
        "gc-njw-grid": lambda img: gc.segment_image(img, 8, random_state=0),
        "gc-njw-pmst": lambda img: gc.segment_image(img, 8, graph="pmst", random_state=0),
        "gc-njw-dmst": lambda img: gc.segment_image(img, 8, graph="dmst", random_state=0),
        "gc-ahk-grid": lambda img: gc.segment_image(img, 8, method="ahk", random_state=0),
        "gc-consistency-grid": lambda img: gc.segment_image(img, 8, method="consistency",
                                                            random_state=0),
        "gc-consistency-auto": lambda img: gc.segment_image(img, "auto", method="consistency",
                                                            max_segments=10, random_state=0),
    }
    try:
        from skimage.segmentation import felzenszwalb, slic

        out["skimage-felzenszwalb"] = lambda img: felzenszwalb(img, scale=100, sigma=0.5, min_size=50)
        out["skimage-slic-250"] = lambda img: slic(img, n_segments=250, compactness=10, start_label=0)
        out["skimage-slic-8"] = lambda img: slic(img, n_segments=8, compactness=10, start_label=0)
    except ImportError:
        print("scikit-image not installed: baselines skipped (pip install scikit-image)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", nargs="*", default=None)
    ap.add_argument("--images", type=int, default=None, help="first N images only")
    ap.add_argument("--ids", nargs="*", default=None,
                    help="these BSDS image ids only (e.g. to finish a run that --images cut short)")
    ap.add_argument("--output-dir", default=None, help="overlay pictures of the first 3 images")
    args = ap.parse_args()
    methods = _methods()
    if args.methods:
        unknown = sorted(set(args.methods) - set(methods))
        if unknown:
            ap.error(f"unknown method(s) {unknown}; choose from {sorted(methods)}")
        methods = {k: v for k, v in methods.items() if k in args.methods}
    else:
        methods.pop("gc-consistency-auto")
    ids = bsds_ids()
    if args.ids:
        unknown = sorted(set(args.ids) - set(ids))
        if unknown:
            ap.error(f"unknown BSDS image id(s) {unknown}; available: {ids}")
        ids = [i for i in ids if i in args.ids]
    ids = ids[: args.images]
    out_dir = Path(args.output_dir) if args.output_dir else None
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
    scores = {m: [] for m in methods}
    for n_img, image_id in enumerate(ids):
        img, humans = load_bsds(image_id)
        for name, fn in methods.items():
            t0 = time.perf_counter()
            labels = np.asarray(fn(img))
            dt = time.perf_counter() - t0
            assert labels.shape == img.shape[:2]
            row = (
                probabilistic_rand_index(labels, humans),
                variation_of_information(labels, humans),
                segmentation_covering(labels, humans),
                len(np.unique(labels)),
                dt,
            )
            scores[name].append(row)
            print(f"{image_id:>7} {name:22s} PRI {row[0]:.3f}  VoI {row[1]:.3f}  cover {row[2]:.3f}  "
                  f"segments {row[3]:4d}  {dt:6.1f} s", flush=True)
            if out_dir is not None and n_img < 3:
                try:
                    plot_segmentation(img, labels, title=f"{image_id} {name}",
                                      path=out_dir / f"{image_id}_{name}.png")
                except ImportError:
                    pass
    print(f"\n{len(ids)} BSDS500 images at full resolution ({img.shape[1]} x {img.shape[0]} or "
          "transposed), mean over images of the mean over human segmentations:\n")
    print("| method | PRI (higher better) | VoI (lower better) | covering (higher better) | "
          "segments (mean) | time / image (s, mean) | time max (s) |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in scores.items():
        a = np.array(rows)
        print(f"| {name} | {a[:, 0].mean():.3f} | {a[:, 1].mean():.3f} | {a[:, 2].mean():.3f} | "
              f"{a[:, 3].mean():.1f} | {a[:, 4].mean():.1f} | {a[:, 4].max():.1f} |")
    print("\nPer-image time (s): " + "; ".join(
        f"{name}: " + ", ".join(f"{r[4]:.1f}" for r in rows) for name, rows in scores.items()))
    humans_row = []
    for image_id in ids:
        _, humans = load_bsds(image_id)
        # each human against the others: the human consistency reference
        for k in range(len(humans)):
            others = humans[:k] + humans[k + 1:]
            humans_row.append((probabilistic_rand_index(humans[k], others),
                               variation_of_information(humans[k], others),
                               segmentation_covering(humans[k], others)))
    h = np.array(humans_row)
    print(f"| (one human vs the others) | {h[:, 0].mean():.3f} | {h[:, 1].mean():.3f} | "
          f"{h[:, 2].mean():.3f} | | | |")


if __name__ == "__main__":
    main()
