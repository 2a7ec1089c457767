"""The application subcommands of ``graphclust``: ``segment``, ``communities`` and ``embed``.

`add_app_subcommands(subparsers)` registers them on the parser built by `graphclust.cli`; each
handler takes the parsed arguments and returns an exit code (errors are ValueError / TypeError /
FileNotFoundError, which `graphclust.cli.main` prints as ``graphclust: error: ...``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from ._cli_args import at_least, check_output_folders, float_or_auto, int_or_auto, int_or_words
from .graphs import GRAPH_TYPES

__all__ = ["add_app_subcommands"]

NETWORKS = ("karate", "football", "polbooks", "dolphins")
TRUTH_ATTRIBUTE = {"karate": "club", "football": "value", "polbooks": "value"}
MANIFOLDS = ("swiss_roll", "ellipse")


# ------------------------------------------------------------------------------------- segment
def _segment(args):
    from ._progress import Progress
    from .io import image_size, read_image, save_image
    from .plots import overlay
    from .segmentation import WORKING_PIXELS, segment_image, segmentation_memory

    hierarchy = args.method == "hierarchy"
    check_output_folders(("--labels", args.labels), ("--ucm", args.ucm),
                         ("--overlay", None if args.overlay.lower() == "none" else args.overlay))
    extra = {}
    if args.alpha is not None:
        if args.method != "consistency":
            raise ValueError(
                f"--alpha applies to --method consistency only; got --method {args.method}."
            )
        extra["alpha"] = args.alpha
    grid_opts = {"--graph": args.graph, "--sigma": args.sigma,
                 "--intensity-weight": args.intensity_weight,
                 "--position-weight": args.position_weight, "--max-segments": args.max_segments}
    if hierarchy:
        given = [name for name, value in grid_opts.items() if value is not None]
        if given:
            raise ValueError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to "
                             "--method njw, ahk or consistency, not to the default hierarchy.")
    elif args.scale is not None or args.ucm:
        raise ValueError(
            f"--scale and --ucm apply to --method hierarchy; got --method {args.method}.")
    if args.scale is not None and args.n_segments != "auto":
        raise ValueError("give --scale with -k auto (the default), or an integer -k.")
    if args.labels and Path(args.labels).suffix.lower() != ".npy" and args.n_segments != "auto" \
            and args.n_segments > 256:
        raise ValueError(f"-k {args.n_segments} segments do not fit a grey picture "
                         f"({args.labels}: at most 256 labels); write the labels to a .npy file.")
    # the header only: a picture too large is refused before its pixels are decoded
    H, W, C = image_size(args.image)
    model = {"method": args.method, "graph": args.graph or "grid"}
    if args.n_segments != "auto":
        model["n_segments"] = args.n_segments
    need = segmentation_memory((H, W, C), **model)
    if args.overlay.lower() != "none" or args.ucm:
        need += 40 * H * W  # the full-resolution pictures (1.72 GiB peak measured at 12 MP)
    if args.max_memory <= 0:
        raise ValueError(f"--max-memory must be > 0 GiB; got {args.max_memory}.")
    if need > args.max_memory * 2**30:
        raise ValueError(
            f"{args.image}: a {H} x {W} image needs an estimated {need / 2**30:.2f} GiB to segment "
            f"with --method {args.method}, above --max-memory {args.max_memory:g} GiB: downsample "
            "or tile it, or raise --max-memory."
        )
    image = read_image(args.image)
    print(f"{args.image}: {H} x {W} pixels, {'colour' if image.ndim == 3 else 'grey'}")
    t0 = time.perf_counter()
    common = {"max_memory": args.max_memory * 2**30, "return_info": True}
    if hierarchy:
        progress = Progress(H * W > WORKING_PIXELS and not args.quiet)
        labels, info = segment_image(image, args.n_segments, scale=args.scale, progress=progress,
                                     **common)
    else:
        labels, info = segment_image(
            image, args.n_segments, method=args.method, graph=args.graph or "grid",
            sigma=args.sigma,
            intensity_weight=10.0 if args.intensity_weight is None else args.intensity_weight,
            position_weight=1.0 if args.position_weight is None else args.position_weight,
            max_segments=10 if args.max_segments is None else args.max_segments,
            random_state=args.seed, **common, **extra)
    dt = time.perf_counter() - t0
    sizes = np.bincount(labels[labels >= 0].ravel())
    if hierarchy:
        level = (f"Mumford-Shah scale lambda = {info['scale']:g}" if info["scale"] is not None
                 else f"{args.n_segments} segments asked")
        print(f"hierarchy: {info['n_leaves']} superpixels merged to {sizes.size} segments "
              f"({level}) in {dt:.1f} s")
    else:
        print(f"graph {args.graph or 'grid'} ({info['n_edges']} edges), "
              f"sigma = {info['sigma']:.4g}, "
              f"method {args.method}: {sizes.size} segments in {dt:.1f} s")
    shown = " ".join(str(int(s)) for s in sizes[:40]) + (" ..." if sizes.size > 40 else "")
    print("  segment sizes (pixels): " + shown)
    model = info["model"]
    if args.method == "consistency":
        print(f"  consistency: c = {model.n_clusters_}, alpha = {model.alpha_:.6g}, "
              f"representative pixels (row, col): "
              + " ".join(f"({r // W}, {r % W})" for r in model.representatives_))
    if args.labels:
        path = Path(args.labels)
        if path.suffix.lower() == ".npy":
            np.save(path, labels)
        else:
            if labels.max() > 255:
                raise ValueError(f"{labels.max() + 1} segments do not fit a uint8 picture; use a .npy file.")
            save_image(path, labels.astype(np.uint8))
        print(f"  labels written to {path}")
    if args.ucm:
        u = info["hierarchy"].ucm()
        top = u.max() if u.max() > 0 else 1.0
        save_image(args.ucm, np.round(255 * u / top).astype(np.uint8))
        print(f"  ultrametric contour map written to {args.ucm} (white = {top:.4g})")
    if args.overlay.lower() != "none":
        save_image(args.overlay, overlay(image, labels))
        print(f"  picture with the boundaries written to {args.overlay}")
    return 0


# --------------------------------------------------------------------------------- communities
def _communities(args):
    from .communities import communities
    from .io import read_network
    from .metrics import nmi

    check_output_folders(("--output", args.output))
    truth_attr = args.truth_attribute
    if args.graph in NETWORKS and not os.path.exists(args.graph):
        from .datasets import load_network

        G = load_network(args.graph)
        truth_attr = truth_attr or TRUTH_ATTRIBUTE.get(args.graph)
    else:
        G = read_network(args.graph)
    print(f"{args.graph}: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges")
    weight = None if args.weight.lower() == "none" else args.weight
    t0 = time.perf_counter()
    params = {"max_clusters": args.max_clusters} if args.method == "consistency" else {}
    info = communities(
        G,
        args.method,
        args.n_clusters,
        weight=weight,
        symmetrize=args.symmetrize,
        attribute="community",
        return_info=True,
        random_state=args.seed,
        **params,
    )
    dt = time.perf_counter() - t0
    parts = info.communities
    chosen = f" (chose {info.method})" if info.method != args.method else ""
    print(f"{args.method}{chosen}: {len(parts)} communities in {dt:.2f} s")
    if info.n_communities_bethe is not None:
        print(f"  Bethe Hessian count (negative eigenvalues): {info.n_communities_bethe}")
    for i, p in enumerate(parts[: args.show]):
        try:
            members = [str(v) for v in sorted(p)]
        except TypeError:  # mixed node types
            members = sorted(map(str, p))
        text = ", ".join(members[:12]) + (", ..." if len(members) > 12 else "")
        print(f"  {i:3d} ({len(p)} nodes, representative {info.representatives[i]}): {text}")
    if len(parts) > args.show:
        print(f"  ... {len(parts) - args.show} more")
    if truth_attr:
        truth = [G.nodes[v].get(truth_attr) for v in G]
        if any(t is None for t in truth):
            print(f"  (no NMI: some nodes lack the attribute {truth_attr!r})")
        else:
            pred = [G.nodes[v]["community"] for v in G]
            print(f"  NMI against node attribute {truth_attr!r}: {nmi(truth, pred):.4f}")
    if args.output:
        with open(args.output, "w") as fh:
            fh.write("node\tcommunity\n")
            for v in G:
                fh.write(f"{v}\t{G.nodes[v]['community']}\n")
        print(f"  node -> community table written to {args.output}")
    return 0


# -------------------------------------------------------------------------------------- embed
def _load_points(source, n, noise, seed):
    from .datasets import noisy_ellipse, swiss_roll

    if source == "swiss_roll":
        X, _ = swiss_roll(n or 500, noise=noise, random_state=seed)
        return X
    if source == "ellipse":
        X, _ = noisy_ellipse(n or 100, noise=noise, random_state=seed)
        return X
    path = Path(source)
    if not path.exists():
        raise FileNotFoundError(
            f"{source!r} is neither a file nor a built-in set ({', '.join(MANIFOLDS)})."
        )
    from ._cli_cluster import read_table

    if path.suffix.lower() in (".csv", ".tsv", ".tab", ".npy"):
        X, _, _ = read_table(path)  # headers detected as `graphclust cluster` does
        return X
    try:
        return np.loadtxt(path, ndmin=2)  # whitespace-separated text
    except (ValueError, OSError) as err:
        raise ValueError(f"cannot read points from {source!r}: {err}") from err


def _embed(args):
    from . import graphs
    from ._validation import check_points
    from .manifold import isomap

    check_output_folders(("--output", args.output))
    X = check_points(_load_points(args.data, args.n_samples, args.noise, args.seed))
    p = args.param
    if args.graph == "knn":
        if p is not None and (p != int(p) or p < 1):
            raise ValueError(f"--param {p:g}: --graph knn takes an integer k >= 1.")
        g = graphs.knn_graph(X, 10 if p is None else int(p), random_state=args.seed)
    elif args.graph == "epsilon":
        if p is None:
            raise ValueError("--graph epsilon needs --param RADIUS.")
        g = graphs.epsilon_graph(X, float(p))
    elif args.graph == "mst":
        if p is not None:
            raise ValueError("--param does not apply to --graph mst.")
        g = graphs.mst_graph(X)
    elif args.graph == "pmst":
        g = graphs.pmst_graph(X, 20, float(0.4 if p is None else p), random_state=args.seed)
    else:
        g = graphs.dmst_graph(X, float(3 if p is None else p))
    print(f"{args.data}: {X.shape[0]} points in {X.shape[1]}-D; graph {args.graph} "
          f"({g.n_edges} edges, {g.n_components} component(s))")
    t0 = time.perf_counter()
    landmarks = args.n_landmarks
    res = isomap(
        g,
        args.n_components,
        n_landmarks=None if landmarks == "none" else landmarks,
        disconnected=args.disconnected,
        random_state=args.seed,
    )
    dt = time.perf_counter() - t0
    mode = "exact" if res.landmarks is None else f"{res.landmarks.size} landmarks"
    print(f"isomap ({mode}) in {dt:.2f} s: residual variance 1 - R^2 = {res.residual_variance:.4f}")
    if args.output:
        out = Path(args.output)
        if out.suffix.lower() == ".npy":
            np.save(out, res.embedding)
        else:
            np.savetxt(out, res.embedding, delimiter=",")
        print(f"  embedding ({res.embedding.shape[0]} x {res.embedding.shape[1]}) written to {out}")
    return 0


# ------------------------------------------------------------------------------- registration
def add_app_subcommands(subparsers):
    """Register ``segment``, ``communities`` and ``embed`` on an argparse subparsers object."""
    _add_segment(subparsers)
    _add_communities(subparsers)
    _add_embed(subparsers)
    return subparsers


def _add_segment(subparsers):
    seg = subparsers.add_parser(
        "segment",
        help="segment a PNG / JPEG image at full resolution",
        description="Segment an image: by default superpixels and their Mumford-Shah region "
        "hierarchy, cut at one scale so that the number of segments follows the image (or at "
        "-k segments); --method njw / ahk / consistency cluster the 8-connected pixel grid (or "
        "a PMST / DMST ensemble constrained to it). Writes the picture with the boundaries, the "
        "labels and the ultrametric contour map (needs Pillow: pip install graphclust[image]). "
        "Images too large for --max-memory are refused from their header, before decoding.",
    )
    seg.add_argument("image", help="PNG or JPEG file")
    seg.add_argument("-k", "--n-segments", type=int_or_auto, default="auto",
                     help="number of segments, or 'auto' (default): the hierarchy's level at "
                     "--scale, or consistency's choice with --method consistency")
    seg.add_argument("--method", default="hierarchy",
                     choices=["hierarchy", "njw", "ahk", "consistency"])
    seg.add_argument("--scale", type=float, default=None,
                     help="hierarchy: the Mumford-Shah scale lambda of the level (default 70; "
                     "larger is coarser)")
    seg.add_argument("--graph", default=None, choices=["grid", "pmst", "dmst"],
                     help="pixel-grid methods: the edge set (default grid)")
    seg.add_argument("--sigma", type=float, default=None,
                     help="pixel-grid methods: Gaussian scale (default: median edge length)")
    seg.add_argument("--intensity-weight", type=float, default=None,
                     help="pixel-grid methods: weight of intensity / colour (default 10)")
    seg.add_argument("--position-weight", type=float, default=None,
                     help="pixel-grid methods: weight of pixel position (default 1)")
    seg.add_argument("--alpha", type=float_or_auto, default=None,
                     help="consistency only: alpha in (0, 1) or 'auto' (search); default "
                     "n / (n + K) for n pixels and K segments")
    seg.add_argument("--max-segments", type=int, default=None,
                     help="consistency: largest number searched with -k auto (default 10)")
    seg.add_argument("--max-memory", type=float, default=8.0,
                     help="refuse images whose estimated peak memory is above this many GiB "
                     "(default 8)")
    seg.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    seg.add_argument("--labels", default=None,
                     help="write the label image (.npy, or a grey .png for <= 256 segments)")
    seg.add_argument("--ucm", default=None,
                     help="hierarchy: write the ultrametric contour map as a grey picture")
    seg.add_argument("--overlay", default="segmentation.png",
                     help="picture with the boundaries (default segmentation.png; 'none' for no "
                     "picture)")
    seg.add_argument("--quiet", "-q", action="store_true",
                     help="no progress lines (written to stderr on images above 0.3 megapixels)")
    seg.set_defaults(func=_segment)


def _add_communities(subparsers):
    com = subparsers.add_parser(
        "communities",
        help="find communities in a network (GML, edge list or a built-in network)",
        description="Find the communities of a network and their number. Default (auto): Leiden "
        "at the maximum-likelihood resolution and the Bethe Hessian's spectral partition, the "
        "one of smaller description length kept; the Bethe Hessian's count is printed beside "
        "it. consistency and ahk (the papers' clusterers) stay selectable.",
    )
    com.add_argument("graph", help="GML file, edge-list file, or one of " + ", ".join(NETWORKS))
    com.add_argument("--method", default="auto",
                     choices=["auto", "bethe", "leiden-ml", "leiden", "bethe+leiden-ml",
                              "consistency", "ahk"],
                     help="community method (default auto)")
    com.add_argument("-k", "--n-clusters", type=int_or_auto, default="auto",
                     help="number of communities or 'auto' (default auto; an integer with "
                     "auto, bethe, consistency, ahk)")
    com.add_argument("--symmetrize", action="store_true",
                     help="cluster a directed network as (A + A^T) / 2 (refused otherwise)")
    com.add_argument("--weight", default="weight",
                     help="edge attribute of link strengths ('none' for binary; default weight)")
    com.add_argument("--max-clusters", type=at_least(2), default=10,
                     help="consistency: largest number searched with -k auto (default 10)")
    com.add_argument("--truth-attribute", default=None,
                     help="node attribute with true communities: prints the NMI")
    com.add_argument("--show", type=at_least(0), default=10,
                     help="communities to list (default 10)")
    com.add_argument("--seed", type=at_least(0), default=0, help="random seed (default 0)")
    com.add_argument("--output", default=None, help="write a node<TAB>community table")
    com.set_defaults(func=_communities)


def _add_embed(subparsers):
    emb = subparsers.add_parser(
        "embed",
        help="Isomap embedding of points on a proximity graph",
        description="Isomap (shortest-path geodesics + classical MDS; landmarks beyond 3000 "
        "points) on a kNN, epsilon-ball, MST, PMST or DMST graph; prints the residual variance.",
    )
    emb.add_argument("data", help=".npy / .csv / whitespace text file of points, or one of "
                     + ", ".join(MANIFOLDS))
    emb.add_argument("--graph", default="pmst",
                     choices=[t.name for t in GRAPH_TYPES.values() if t.input == "points"])
    emb.add_argument("--param", type=float, default=None,
                     help="graph parameter: k (knn, default 10), radius (epsilon, required), "
                     "r (pmst, default 0.4), t (dmst, default 3)")
    emb.add_argument("--n-components", type=at_least(1), default=2)
    emb.add_argument("--n-landmarks", type=int_or_words("auto", "none"), default="auto",
                     help="'auto', 'none' (exact) or an integer")
    emb.add_argument("--disconnected", default="raise", choices=["raise", "largest"])
    emb.add_argument("--n-samples", type=at_least(1), default=None,
                     help="points of a built-in set")
    emb.add_argument("--noise", default="high", help="noise of a built-in set: none, low, high")
    emb.add_argument("--seed", type=at_least(0), default=0, help="random seed (default 0)")
    emb.add_argument("--output", default=None, help="write the embedding (.npy or .csv)")
    emb.set_defaults(func=_embed)
