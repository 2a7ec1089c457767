"""Reproduce Figure 2 of Carreira-Perpinan & Zemel (2004): occluder segmentation over sigma.

A seeded grey occluder-over-background image with intensity gradients (`occluder_image`) is
segmented by NJW spectral clustering with K = 5 on (a) the 8-connected grid, (b) PMST ensembles
constrained to the grid (r = 0.2, 0.4, 0.6; 20 trees) and (c) DMST ensembles constrained to the
grid (t = 2, 3, 4). Pixel features: (row, column, 10 * intensity); w_ij = e_ij exp(-d^2/(2 sigma^2)).
The error is the mismatched occluder area (`occluder_error`) for sigma on a log grid from 0.1 to
10, averaged over image seeds. Prints a table and writes a plot.

    python scripts/reproduce_occluder.py [--seeds 3] [--output docs/occluder_figure2.png]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import graphclust as gc
from graphclust.datasets import occluder_image
from graphclust.metrics import occluder_error

SIGMAS = np.round(np.logspace(-1, 1, 13), 3)
CONFIGS = [
    ("8-grid", dict(graph="grid")),
    ("PMST r=0.2", dict(graph="pmst", r=0.2)),
    ("PMST r=0.4", dict(graph="pmst", r=0.4)),
    ("PMST r=0.6", dict(graph="pmst", r=0.6)),
    ("DMST t=2", dict(graph="dmst", n_trees=2)),
    ("DMST t=3", dict(graph="dmst", n_trees=3)),
    ("DMST t=4", dict(graph="dmst", n_trees=4)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="image seeds averaged (default 3)")
    ap.add_argument("--shape", type=int, nargs=2, default=(48, 64))
    ap.add_argument("--output", default="docs/occluder_figure2.png")
    args = ap.parse_args()
    errors = {name: np.zeros((args.seeds, SIGMAS.size)) for name, _ in CONFIGS}
    edges = {name: [] for name, _ in CONFIGS}
    t0 = time.perf_counter()
    for seed in range(args.seeds):
        img, mask = occluder_image(tuple(args.shape), random_state=seed)
        for name, cfg in CONFIGS:
            for j, s in enumerate(SIGMAS):
                labels, info = gc.segment_image(img, 5, sigma=float(s), random_state=seed,
                                                return_info=True, **cfg)
                errors[name][seed, j] = occluder_error(labels, mask)
            edges[name].append(info["n_edges"])
    dt = time.perf_counter() - t0
    grid_edges = np.mean(edges["8-grid"])
    print(f"occluder {args.shape[0]} x {args.shape[1]}, K = 5, NJW, mean over {args.seeds} image "
          f"seeds ({dt:.0f} s)")
    print("mismatched occluder area / occluder area (0 = perfect):\n")
    head = "| graph | edges (% of 8-grid) | " + " | ".join(f"{s:g}" for s in SIGMAS) + " | sigma range with error < 0.05 |"
    print(head)
    print("|" + "---|" * (SIGMAS.size + 3))
    for name, _ in CONFIGS:
        e = errors[name].mean(axis=0)
        ok = SIGMAS[e < 0.05]
        rng = f"[{ok.min():g}, {ok.max():g}] ({ok.size}/{SIGMAS.size})" if ok.size else "none"
        print(f"| {name} | {100 * np.mean(edges[name]) / grid_edges:.0f}% | "
              + " | ".join(f"{v:.2f}" for v in e) + f" | {rng} |")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: pip install graphclust[plot]")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 2]})
    img, mask = occluder_image(tuple(args.shape), random_state=0)
    axes[0].imshow(img, cmap="gray", vmin=0, vmax=1)
    axes[0].contour(mask, levels=[0.5], colors="r", linewidths=0.8)
    axes[0].set_title("occluder image (seed 0), truth in red")
    axes[0].set_axis_off()
    for name, _ in CONFIGS:
        e = errors[name].mean(axis=0)
        if name == "8-grid":
            axes[1].semilogx(SIGMAS, e, "b-", lw=3, label=name)
        else:
            axes[1].semilogx(SIGMAS, e, "--" if "DMST" in name else "-", lw=1, label=name)
    axes[1].set_xlabel("sigma")
    axes[1].set_ylabel("mismatched occluder area (fraction)")
    axes[1].set_title("K = 5 NJW spectral clustering (cf. paper Fig. 2)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output, dpi=110)
    print(f"\nplot written to {args.output}")


if __name__ == "__main__":
    main()
