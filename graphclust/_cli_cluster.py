"""``graphclust cluster DATA``: cluster a CSV / TSV / .npy file from the command line.

`add_cluster_subcommand(subparsers)` registers the subcommand on the parser of `graphclust.cli`.
The handler reads the data (header detection, optional label column), fits a `Pipeline`, and
writes ``PREFIX.labels.csv`` (one row per point: label, inlierness, within-cluster inlierness,
outlier rank, representative flag) and ``PREFIX.report.json`` (input, stages, chosen parameters,
representatives, worst outliers, the Omega search, timings, scores against the label column),
and with ``--plot`` a picture. Every output is written to a temporary file first and renamed only
when all of them are complete: a failure leaves nothing half-written.

Exit codes: 0 success; 2 usage error (argparse, or an option combination that makes no sense);
1 failure (unreadable or malformed data, a failed fit), with one line ``graphclust: error: ...``
on stderr.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np

from ._cli_args import at_least, check_output_folders, float_or_auto, floats, int_or_auto
from .cluster import binary_table_with_missing
from .kernels import NORMALIZATIONS, SPECTRAL_KERNELS
from .pipeline import CLUSTERER_STAGES, GRAPH_STAGES, KERNEL_STAGES

__all__ = ["add_cluster_subcommand", "read_table"]



class DataError(ValueError):
    """The data file cannot be read as a numeric table (message names the file, row, column)."""


# ============================================================================================
# Reading the table
# ============================================================================================


def _is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def _delimiter_for(path, delimiter):
    if delimiter is not None:
        delimiter = "\t" if delimiter in ("\\t", "tab") else delimiter
        if len(delimiter) != 1:
            raise ValueError(f"--delimiter must be one character (or 'tab'); got {delimiter!r}.")
        return delimiter
    return "\t" if path.suffix.lower() in (".tsv", ".tab") else ","


def _label_index(label_column, header, n_cols, path):
    if label_column is None:
        return None
    if header is not None and label_column in header:
        return header.index(label_column)
    try:
        j = int(label_column)
    except ValueError:
        where = f"the header names {header}" if header is not None else "the file has no header"
        raise DataError(f"{path}: --label-column {label_column!r} is not a column ({where}); "
                        "give a column name or a 0-based index.") from None
    if not -n_cols <= j < n_cols:
        raise DataError(f"{path}: --label-column {j} is out of range for {n_cols} columns.")
    return j % n_cols


def read_table(path, *, delimiter=None, header="auto", label_column=None):
    """Read a numeric table (CSV, TSV or .npy) with an optional label column.

    Parameters
    ----------
    path : str or Path
    delimiter : str, optional
        Field separator; default by suffix (``.tsv`` / ``.tab``: tab, otherwise comma).
    header : {"auto", "yes", "no"}, default "auto"
        "auto": the first row is a header when one of its fields is not a number while the same
        field of the second row is, or when it holds the name given as `label_column`.
    label_column : str or int, optional
        Name (with a header) or 0-based index (negative counts from the end) of a column of
        labels (any text) kept out of the features.

    Returns
    -------
    X : float array (n, d)
    labels : array of str (n,) or None
    info : dict
        ``columns`` (feature names), ``header`` (bool), ``label_column`` (name or None).

    Raises
    ------
    DataError (a ValueError)
        Empty file, no data rows, ragged rows, text or an empty field in a numeric column,
        fewer than 1 feature; the message names the row (1-based line) and column.
    """
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a directory, not a data file.")
    if path.suffix.lower() == ".npy":
        return _read_npy(path, label_column)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise DataError(f"{path} is not a UTF-8 text table ({err.reason} at byte {err.start}); "
                        "give a CSV / TSV text file or a .npy array.") from None
    delim = _delimiter_for(path, delimiter)
    rows = []
    for line_no, row in enumerate(csv.reader(text.splitlines(), delimiter=delim), start=1):
        if not row or all(not f.strip() for f in row):
            continue  # blank lines
        rows.append((line_no, [f.strip() for f in row]))
    if not rows:
        raise DataError(f"{path} is empty: no rows to cluster.")
    width = len(rows[0][1])
    for line_no, row in rows:
        if len(row) != width:
            raise DataError(f"{path}: line {line_no} has {len(row)} fields but line "
                            f"{rows[0][0]} has {width} (ragged rows; delimiter {delim!r}).")
    if header not in ("auto", "yes", "no"):
        raise DataError(f"header must be 'auto', 'yes' or 'no'; got {header!r}.")
    first = rows[0][1]
    if header == "auto":
        has_header = any(not _is_number(f) for f in first) and (
            len(rows) == 1 or any(not _is_number(a) and _is_number(b)
                                  for a, b in zip(first, rows[1][1]))
        )
        if len(rows) == 1 and any(not _is_number(f) for f in first):
            has_header = True
        if isinstance(label_column, str) and not _is_number(label_column) and \
                label_column in first:
            has_header = True  # the label column is named by the first row
    else:
        has_header = header == "yes"
    names = first if has_header else [f"x{j}" for j in range(width)]
    data = rows[1:] if has_header else rows
    if not data:
        raise DataError(f"{path} has a header but no data rows.")
    lab = _label_index(label_column, names if has_header else None, width, path)
    feat_cols = [j for j in range(width) if j != lab]
    if not feat_cols:
        raise DataError(f"{path}: no feature column is left besides the label column.")
    X = np.empty((len(data), len(feat_cols)))
    empty = None  # the first empty field: a missing answer only in a binary table
    for i, (line_no, row) in enumerate(data):
        for k, j in enumerate(feat_cols):
            field = row[j]
            if field == "":
                X[i, k] = np.nan
                empty = empty or (line_no, j)
                continue
            try:
                X[i, k] = float(field)
            except ValueError:
                what = "an empty field" if field == "" else f"{field[:30]!r}, not a number"
                hint = ("every column but the label column must be numeric; use "
                        "--label-column for a column of class names")
                if width == 1:
                    other = [d for d in (";", "\t", ",", "|", " ") if d != delim and d in field]
                    if other:
                        hint = (f"the file splits into one column with delimiter {delim!r}; "
                                f"give --delimiter {other[0]!r}")
                raise DataError(f"{path}: line {line_no}, column {names[j]!r}: {what} "
                                f"({hint}).") from None
    bad = ~np.isfinite(X)
    if bad.any() and (np.isinf(X).any() or not binary_table_with_missing(X)):
        # NaN and empty fields are missing answers of a table of binary answers (the latent
        # class model reads them); anywhere else they are refused, named by line
        i, k = np.argwhere(bad)[0]
        if empty is not None and np.isnan(X[i, k]) and data[i][1][feat_cols[k]] == "":
            raise DataError(f"{path}: line {empty[0]}, column {names[empty[1]]!r}: an empty "
                            f"field (a missing value is read only in a table of binary "
                            f"answers; here drop or impute it).")
        raise DataError(f"{path}: line {data[i][0]}, column {names[feat_cols[k]]!r}: "
                        f"{data[i][1][feat_cols[k]]!r} is not a finite number (NaN / inf "
                        "values must be dropped or imputed first, except missing answers "
                        "(NaN) of a table of binary answers).")
    labels = None if lab is None else np.array([row[lab] for _, row in data])
    info = {"columns": [names[j] for j in feat_cols], "header": bool(has_header),
            "label_column": None if lab is None else names[lab]}
    return X, labels, info


def _read_npy(path, label_column):
    try:
        A = np.load(path, allow_pickle=False)
    except ValueError as err:
        raise DataError(f"{path} is not a numeric .npy array ({err}).") from None
    except OSError as err:
        raise DataError(f"{path} cannot be read as a .npy file ({err}).") from None
    if not isinstance(A, np.ndarray) or A.ndim != 2:
        raise DataError(f"{path} holds an array of shape {getattr(A, 'shape', None)}; graphclust "
                        "needs a 2-D (n_samples, n_features) array.")
    if A.size == 0:
        raise DataError(f"{path} is empty: shape {A.shape}.")
    if np.iscomplexobj(A):
        raise DataError(f"{path} holds complex numbers ({A.dtype}); graphclust needs real "
                        "features: save the real and imaginary parts as separate columns.")
    if not (np.issubdtype(A.dtype, np.number) or A.dtype == bool):
        raise DataError(f"{path} holds dtype {A.dtype}; graphclust needs numbers.")
    width = A.shape[1]
    lab = _label_index(label_column, None, width, path)
    feat_cols = [j for j in range(width) if j != lab]
    if not feat_cols:
        raise DataError(f"{path}: no feature column is left besides the label column.")
    X = np.asarray(A[:, feat_cols], dtype=float)
    bad = ~np.isfinite(X)
    if bad.any() and (np.isinf(X).any() or not binary_table_with_missing(X)):
        i, k = np.argwhere(bad)[0]
        raise DataError(f"{path}: row {i}, column {feat_cols[k]} is not a finite number "
                        "(NaN / inf values must be dropped or imputed first, except missing "
                        "answers (NaN) of a table of binary answers).")
    labels = None if lab is None else np.array([str(v) for v in A[:, lab]])
    return X, labels, {"columns": [f"x{j}" for j in feat_cols], "header": False,
                       "label_column": None if lab is None else f"x{lab}"}


# ============================================================================================
# Options -> Pipeline
# ============================================================================================


def _clusterer(args):
    """--clusterer, or its default: k-means for NJW's S (no diffusion kernel), else seeds."""
    if args.clusterer is not None:
        return args.clusterer
    return "kmeans" if args.kernel == "njw" else "seeds"


def _usage_problem(args):
    """Option combinations that make no sense (exit code 2), or None."""
    if args.clusterer is None and args.kernel == "njw" and args.n_clusters == "auto":
        return ("--kernel njw clusters by k-means (--clusterer kmeans), which needs "
                "--n-clusters N (the 'auto' search uses the Omega criterion of the "
                "consistency seeds)")
    if _clusterer(args) == "kmeans":
        if args.n_clusters == "auto":
            return ("--clusterer kmeans needs --n-clusters N (the 'auto' search uses the Omega "
                    "criterion of --clusterer seeds)")
        if args.sigma == "auto":
            return ("--sigma auto is searched by the Omega criterion of --clusterer seeds; give "
                    "--sigma a number with --clusterer kmeans (or omit it: the median edge "
                    "length)")
        if args.kernel == "consistency" and args.alpha in ("auto", None):
            return ("--alpha auto is searched by the Omega criterion of --clusterer seeds; with "
                    "--clusterer kmeans give --alpha a number (it does not change the embedding)")
    if args.kernel == "njw" and _clusterer(args) == "seeds":
        return "--kernel njw works with --clusterer kmeans only (S is not a diffusion kernel)"
    if args.kernel != "consistency" and args.alpha not in ("auto", None):
        return f"--alpha applies to --kernel consistency only; got --kernel {args.kernel}"
    if args.graph == "pmst" and args.n_trees is not None and (
            args.n_trees != int(args.n_trees) or args.n_trees < 1):
        return f"--graph pmst needs an integer --n-trees >= 1; got {args.n_trees:g}"
    if args.graph not in ("pmst", "dmst") and args.n_trees is not None:
        return f"--n-trees applies to --graph pmst or dmst only; got --graph {args.graph}"
    if args.graph == "epsilon" and args.radius is None:
        return "--graph epsilon needs --radius R"
    if args.graph != "epsilon" and args.radius is not None:
        return f"--radius applies to --graph epsilon only; got --graph {args.graph}"
    if args.kernel == "njw" and args.sigma == "auto":
        return "--sigma auto needs --clusterer seeds (the Omega criterion)"
    return None


def _accepted(stage_cls, given):
    """The entries of `given` that are parameters of `stage_cls` and were given (not None)."""
    names = stage_cls._get_param_names()
    return {k: v for k, v in given.items() if k in names and v is not None}


def build_pipeline(args, verbose=False):
    """The `Pipeline` the options describe: each stage from its registry, with the options it
    takes (an option a stage does not take is refused earlier, in `_usage_problem`)."""
    from . import pipeline as gp

    n_trees = args.n_trees
    if n_trees is not None and float(n_trees).is_integer():
        n_trees = int(n_trees)  # pmst takes an integer T, dmst any t >= 1
    graph = gp.graph_stage(args.graph, **_accepted(
        gp.GRAPH_STAGES.get(args.graph, gp.KNNGraph),
        {"n_neighbors": args.n_neighbors, "metric": args.metric, "radius": args.radius,
         "n_trees": n_trees, "r": args.r}))
    clusterer_cls = gp.CLUSTERER_STAGES[_clusterer(args)]
    clusterer = clusterer_cls(args.n_clusters, **_accepted(
        clusterer_cls, {"max_clusters": args.max_clusters}))
    kernel_cls = gp.KERNEL_STAGES[args.kernel]
    kernel_params = _accepted(kernel_cls, {
        "alpha": args.alpha, "sigma": args.sigma, "sigma_grid": args.sigma_grid,
        "alpha_grid": args.alpha_grid, "normalization": args.normalization,
        "gamma": args.gamma, "kind": args.ahk_kind})
    if args.sigma is None and not clusterer.has_criterion:
        kernel_params["sigma"] = None  # no criterion to search it: the median edge length
    return gp.Pipeline(graph, kernel_cls(**kernel_params), clusterer, random_state=args.seed,
                       verbose=verbose)


# ============================================================================================
# Report and outputs
# ============================================================================================


def _nan_to_none(a):
    a = np.asarray(a, dtype=float)
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in a.reshape(
        a.shape[0], -1)] if a.ndim > 1 else [None if not np.isfinite(v) else float(v) for v in a]


def _omega_report(pipe):
    if not hasattr(pipe, "omega_"):
        return None
    omega = np.asarray(pipe.omega_, dtype=float)
    return {
        "sigmas": _nan_to_none(pipe.omega_sigmas_),
        "alphas": _nan_to_none(pipe.omega_alphas_),
        "n_clusters": [int(c) for c in pipe.omega_n_clusters_],
        "omega": [[_nan_to_none(omega[i, j]) for j in range(omega.shape[1])]
                  for i in range(omega.shape[0])],
        "valid": np.asarray(pipe.omega_valid_, dtype=bool).tolist(),
        "layout": "omega[sigma index][alpha index][c index]",
        "best_by_n_clusters": {str(c): (None if not np.isfinite(v) else float(v))
                               for c, v in pipe.omega_by_n_clusters_.items()},
    }


def make_report(pipe, X, labels_true, info, data_path, n_outliers):
    """The JSON-serialisable report of a fitted pipeline."""
    from .metrics import nmi

    labels = np.asarray(pipe.labels_)
    sizes = np.bincount(labels[labels >= 0], minlength=pipe.n_clusters_)
    stage = {name: ({"class": type(s).__name__, **{k: (list(v) if isinstance(v, tuple) else v)
                                                   for k, v in s.get_params().items()}}
                    if s is not None else None)
             for name, s in (("graph", pipe.graph), ("kernel", pipe.kernel),
                             ("clusterer", pipe.clusterer))}
    report = {
        "input": {"path": str(data_path), "n_samples": int(X.shape[0]),
                  "n_features": int(X.shape[1]), **info},
        "pipeline": stage,
        "random_state": pipe.random_state,
        "chosen": {"n_clusters": int(pipe.n_clusters_),
                   "sigma": None if pipe.sigma_ is None else float(pipe.sigma_),
                   "alpha": None if pipe.alpha_ is None else float(pipe.alpha_),
                   **({"n_neighbors": int(pipe.n_neighbors_),
                       "omega_by_n_neighbors": {str(k): v for k, v in pipe.graph_search_.items()}}
                      if getattr(pipe, "n_neighbors_", None) is not None else {})},
        "cluster_sizes": [int(s) for s in sizes],
        "graph": {"n_edges": int(pipe.graph_.n_edges),
                  "n_components": int(pipe.graph_.n_components)},
        "timings_seconds": {k: round(float(v), 4) for k, v in pipe.timings_.items()},
    }
    if hasattr(pipe, "representatives_"):
        reps = [int(i) for i in pipe.representatives_]
        report["representatives"] = [
            {"cluster": j, "index": i, "point": [float(v) for v in X[i]]}
            for j, i in enumerate(reps)]
        worst = pipe.outliers(min(n_outliers, X.shape[0]))
        report["worst_outliers"] = [
            {"index": int(i), "inlierness": float(pipe.inlierness_[i]), "cluster": int(labels[i])}
            for i in worst]
        report["omega_search"] = _omega_report(pipe)
    if labels_true is not None:
        from sklearn.metrics import adjusted_rand_score

        _, y = np.unique(labels_true, return_inverse=True)
        report["against_label_column"] = {
            "n_classes": int(y.max() + 1),
            "nmi": float(nmi(y, labels)),
            "adjusted_rand": float(adjusted_rand_score(y, labels)),
        }
    return report


def _labels_table(pipe):
    labels = np.asarray(pipe.labels_)
    n = labels.shape[0]
    header = ["index", "label"]
    cols = [np.arange(n), labels]
    if hasattr(pipe, "inlierness_"):
        rank = np.empty(n, dtype=np.int64)
        rank[pipe.outliers(n)] = np.arange(1, n + 1)
        rep = np.zeros(n, dtype=np.int64)
        rep[pipe.representatives_] = 1
        header += ["inlierness", "cluster_inlierness", "outlier_rank", "representative"]
        cols += [pipe.inlierness_, pipe.cluster_inlierness_, rank, rep]
    lines = [",".join(header)]
    for i in range(n):
        fields = []
        for c in cols:
            v = c[i]
            fields.append(repr(float(v)) if isinstance(v, (float, np.floating)) else str(int(v)))
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


def _write_all(outputs):
    """Write {path: bytes or callable(tmp_path)} atomically: all renamed only when all exist."""
    tmps = []
    try:
        for path, content in outputs.items():
            path = Path(path)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part",
                                       dir=path.parent if str(path.parent) else ".")
            os.close(fd)
            tmps.append((tmp, path))
            if callable(content):
                content(tmp)
            else:
                Path(tmp).write_bytes(content)
        for tmp, path in tmps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in tmps:
            if os.path.exists(tmp):
                os.unlink(tmp)


# ============================================================================================
# The subcommand
# ============================================================================================


def _cluster(args):
    from ._progress import Progress

    from ._cli_criterion import resolve_criterion

    args.criterion, problem = resolve_criterion(args)
    problem = problem or (_usage_problem(args) if args.criterion == "omega" else None)
    if problem:
        print(f"graphclust cluster: error: {problem}", file=sys.stderr)
        return 2
    try:
        return _run(args, Progress.for_terminal(quiet=args.quiet))
    except Exception as err:  # one clear line; GRAPHCLUST_DEBUG=1 shows the traceback
        if os.environ.get("GRAPHCLUST_DEBUG") == "1":
            raise
        msg = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        msg = _as_typed(msg)
        kind = "" if isinstance(err, (ValueError, OSError)) else f"{type(err).__name__}: "
        print(f"graphclust: error: {kind}{msg}", file=sys.stderr)
        return 1


#: Pipeline parameter names -> the options that set them, for error messages.
FLAG_NAMES = {
    "clusterer__n_clusters": "--n-clusters", "clusterer__max_clusters": "--max-clusters",
    "clusterer__n_init": "--n-init", "kernel__sigma_grid": "--sigma-grid",
    "kernel__alpha_grid": "--alpha-grid", "kernel__sigma": "--sigma", "kernel__alpha": "--alpha",
    "kernel__normalization": "--normalization", "kernel__gamma": "--gamma",
    "kernel__kind": "--ahk-kind", "graph__n_neighbors_grid": "--n-neighbors auto grid",
    "graph__n_neighbors": "--n-neighbors", "graph__radius": "--radius",
    "graph__n_trees": "--n-trees", "graph__r": "--r", "graph__metric": "--metric",
}


def _as_typed(message):
    """An error message with the pipeline's parameter names replaced by the user's options."""
    for name, flag in FLAG_NAMES.items():
        message = message.replace(f"{name}=", f"{flag} ").replace(name, flag)
    return message


def _run(args, progress):
    check_output_folders(("--save-model", args.save_model), ("--plot", args.plot))
    data_path = Path(args.data)
    if args.plot is not None:
        from .plots import require_pyplot

        require_pyplot(args.plot)  # fail now, not after the fit, when matplotlib is missing
    prefix = Path(args.output) if args.output else Path(data_path.stem)
    if prefix.parent != Path("") and not prefix.parent.is_dir():
        raise ValueError(f"--output {prefix}: directory {prefix.parent} does not exist.")
    with progress.step(f"reading {data_path}"):
        X, labels_true, info = read_table(data_path, delimiter=args.delimiter,
                                          header=args.header, label_column=args.label_column)
    if X.shape[0] < 3:
        raise ValueError(f"{data_path} has {X.shape[0]} data row(s); at least 3 are needed.")
    progress.note(f"{X.shape[0]} points, {X.shape[1]} features"
                  + (f", labels from column {info['label_column']!r}" if labels_true is not None
                     else ""))
    if args.criterion == "stability":
        from ._cli_criterion import build_stability

        pipe = build_stability(args, verbose=progress.enabled)
    else:
        pipe = build_pipeline(args, verbose=progress.enabled)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        pipe.fit(X)
        elapsed = time.perf_counter() - t0
    seen = set()
    for w in caught:
        text = str(w.message).replace("\n", " ")
        if text not in seen and not args.quiet:
            seen.add(text)
            print(f"graphclust: warning: {text}", file=sys.stderr)
    if args.criterion == "stability":
        from ._cli_criterion import stability_report

        report = stability_report(pipe, X, labels_true, info, data_path)
    else:
        report = make_report(pipe, X, labels_true, info, data_path, args.n_outliers)
    report["fit_seconds"] = round(elapsed, 4)
    outputs = {
        f"{prefix}.labels.csv": _labels_table(pipe).encode("utf-8"),
        f"{prefix}.report.json": (json.dumps(report, indent=2) + "\n").encode("utf-8"),
    }
    if args.plot is not None:
        from .plots import plot_clusters

        plot_path = Path(args.plot)
        suffix = plot_path.suffix or ".png"

        def draw(tmp):
            # matplotlib picks the format from the name: render to tmp + suffix, then move
            plot_clusters(X, pipe, path=tmp + suffix,
                          title=f"{data_path.name}: c = {pipe.n_clusters_}"
                          + (f", sigma = {pipe.sigma_:.3g}" if pipe.sigma_ else "")
                          + (f", alpha = {pipe.alpha_:.6g}" if pipe.alpha_ else ""))
            os.replace(tmp + suffix, tmp)

        outputs[str(plot_path)] = draw
    if args.save_model is not None:
        outputs[str(args.save_model)] = lambda tmp: _save_model(pipe, tmp)
    with progress.step("writing " + ", ".join(outputs)):
        _write_all(outputs)
    labels = np.asarray(pipe.labels_)
    print(f"{data_path.name}: {X.shape[0]} points -> {pipe.n_clusters_} clusters "
          f"(sizes {' '.join(str(int(s)) for s in np.bincount(labels[labels >= 0]))})"
          + (f", sigma = {pipe.sigma_:.4g}" if pipe.sigma_ is not None else "")
          + (f", alpha = {pipe.alpha_:.7g}" if pipe.alpha_ is not None else "")
          + f" in {elapsed:.2f} s")
    if "against_label_column" in report:
        a = report["against_label_column"]
        print(f"  against column {info['label_column']!r}: NMI {a['nmi']:.3f}, "
              f"ARI {a['adjusted_rand']:.3f}")
    if args.criterion == "stability":
        # the scan it chose from; any row's partition: ConsistencyClustering.labels_at
        print("\n".join("  " + line for line in pipe.summary().splitlines()[1:]))
    for path in outputs:
        print(f"  wrote {path}")
    return 0


def _save_model(pipe, tmp):
    written = pipe.save(tmp + ".npz")
    os.replace(written, tmp)


def add_cluster_subcommand(sub):
    """Register ``graphclust cluster`` on the subparsers `sub` of `graphclust.cli`."""
    p = sub.add_parser(
        "cluster",
        help="cluster a CSV / TSV / .npy table (graph, kernel, clusterer and parameters)",
        description=textwrap.fill(
            "Cluster the rows of DATA (CSV, TSV or .npy). By default (--criterion stability): "
            "a kNN graph with per-point scales, the number of clusters and alpha chosen by the "
            "Markov stability of the consistency walk (a number for --n-clusters is read from "
            "its hierarchy); a table of binary answers (every column two values; an empty "
            "field or NaN a missing answer) by a latent class model, its number of classes by "
            "BIC. With --criterion omega (the papers', "
            "and the default when an option of their stages is given): kNN graph, "
            "consistency kernel, consistency seeds, with sigma, alpha and the number of "
            "clusters chosen by the Omega criterion. Writes PREFIX.labels.csv (label; with "
            "omega also inlierness, within-cluster inlierness, outlier rank, representative "
            "flag per point) and PREFIX.report.json (chosen parameters, representatives, the "
            "stability scan or the worst outliers and the whole Omega search). Progress goes "
            "to stderr when it is a terminal (--quiet silences it).", 79),
        epilog="examples:\n"
        "  graphclust cluster points.csv --label-column class\n"
        "  graphclust cluster X.npy --criterion omega --graph pmst --n-trees 20 --r 0.4 "
        "--plot X.png\n"
        "  graphclust cluster X.tsv --kernel ahk --clusterer kmeans --n-clusters 4\n"
        "exit codes: 0 success, 2 usage error, 1 failure (one line on stderr)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", metavar="DATA", help="CSV, TSV or .npy file, one point per row")
    g = p.add_argument_group("input")
    g.add_argument("--delimiter", default=None,
                   help="field separator (default: tab for .tsv / .tab, else comma; 'tab' or "
                   "'\\t' for tab)")
    g.add_argument("--header", choices=("auto", "yes", "no"), default="auto",
                   help="first row is a header (default auto: detected)")
    g.add_argument("--label-column", default=None, metavar="COL",
                   help="column of true labels (name or 0-based index) left out of the "
                   "features and used to score the result")
    g = p.add_argument_group("graph")
    g.add_argument("--graph", choices=list(GRAPH_STAGES), default="knn", help="proximity graph (default knn)")
    g.add_argument("--n-neighbors", type=int_or_auto, default=None, metavar="K",
                   help="k of the kNN graph or of the MST candidates (default 10; 20 for pmst); "
                   "'auto' (knn graph, consistency kernel and seeds) searches k in 5, 10, 20 by "
                   "Omega")
    g.add_argument("--metric", choices=("euclidean", "cosine"), default="euclidean")
    g.add_argument("--radius", type=float, default=None, help="radius of --graph epsilon")
    g.add_argument("--n-trees", type=float, default=None, metavar="T",
                   help="trees of pmst (default 20) or dmst (default 3)")
    g.add_argument("--r", type=float, default=0.4, help="pmst noise level (default 0.4)")
    g = p.add_argument_group("kernel")
    g.add_argument("--kernel", choices=list(KERNEL_STAGES), default="consistency",
                   help="consistency U = beta (I - alpha S)^-1, ahk (aggregated heat kernel), "
                   "njw (default consistency)")
    g.add_argument("--sigma", type=float_or_auto, default=None,
                   help="Gaussian width or 'auto' (default: auto with seeds, else the median "
                   "edge length)")
    g.add_argument("--alpha", type=float_or_auto, default=None,
                   help="consistency alpha in (0, 1) or 'auto' (default auto)")
    g.add_argument("--sigma-grid", type=floats, default=None, metavar="F1,F2,...",
                   help="factors of the median edge length searched by --sigma auto "
                   "(default 0.25,0.5,1,2)")
    g.add_argument("--alpha-grid", type=floats, default=None, metavar="A1,A2,...",
                   help="alphas searched by --alpha auto (default 0.9,0.99,...,0.999999)")
    g.add_argument("--normalization", choices=list(NORMALIZATIONS), default="lbn",
                   help="Laplacian of --kernel ahk (default lbn)")
    g.add_argument("--gamma", type=float, default=0.01, help="AHK smoothing (default 0.01)")
    g.add_argument("--ahk-kind", choices=list(SPECTRAL_KERNELS), default="ahk",
                   help="spectral kernel of --kernel ahk (default ahk)")
    g = p.add_argument_group("clusterer")
    g.add_argument("--clusterer", choices=list(CLUSTERER_STAGES), default=None,
                   help="seeds: consistency seeds, labels, outliers, Omega; kmeans: k-means on "
                   "the top eigenvectors (default seeds; kmeans with --kernel njw)")
    g.add_argument("--n-clusters", type=int_or_auto, default="auto",
                   help="number of clusters or 'auto' (default auto)")
    g.add_argument("--criterion", choices=("auto", "stability", "omega"), default="auto",
                   help="what chooses the number of clusters: stability (Markov stability, "
                   "its own kNN graph), omega (the papers' Omega search over the stages "
                   "below); default auto: stability with none of "
                   "--graph, --kernel, --sigma, --alpha, the grids, --clusterer, "
                   "--max-clusters, --n-neighbors auto; else omega")
    g.add_argument("--max-clusters", type=at_least(2), default=None,
                   help="largest number of clusters searched by --criterion omega (default 10)")
    g = p.add_argument_group("output")
    g.add_argument("--output", "-o", default=None, metavar="PREFIX",
                   help="write PREFIX.labels.csv and PREFIX.report.json (default: DATA's name "
                   "without suffix, in the current directory)")
    g.add_argument("--plot", default=None, metavar="FILE",
                   help="also draw the clusters (needs pip install graphclust[plot])")
    g.add_argument("--save-model", default=None, metavar="FILE",
                   help="save the fitted pipeline (.npz + JSON, no pickle)")
    g.add_argument("--n-outliers", type=at_least(0), default=10,
                   help="outliers listed in the report (default 10)")
    g.add_argument("--seed", type=at_least(0), default=0, help="random seed (default 0)")
    g.add_argument("--quiet", "-q", action="store_true",
                   help="no progress and no warnings on stderr")
    p.set_defaults(func=_cluster)
    return p
