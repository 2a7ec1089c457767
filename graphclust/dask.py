"""graphclust on Dask: predict, the kNN graph and fit-on-a-sample for arrays beyond one machine.

Dask (an existing engine: task graphs, a distributed scheduler, workers on many machines) runs
the work; this module only writes the per-block functions and the task graphs:

- `predict`: a fitted model's out-of-sample rule over a `dask.array.Array`, block by block
  (``map_blocks``, as dask-ml's ``ParallelPostFit`` does). The model enters the task graph once,
  as one ``dask.delayed`` node every block depends on, so the distributed scheduler ships it to
  each worker once, not with every task.
- `kneighbors_graph`: the k-nearest-neighbour graph of a chunked array that need not fit in
  memory. Exact: every query block against every candidate block (block-vs-block top-k, then a
  merge), so each task holds two blocks only, at quadratic cost. By cells (approximate, linear):
  rows cut into k-means cells with multiple probes, NN-descent inside each cell. The gathered
  neighbour lists (n x k) must fit in memory, as the clusterers need the graph anyway.
- `fit_sample_extend`: fit an estimator on a seeded uniform sample, assign the other points by
  `predict` (as dask-ml's ``SpectralClustering`` fits on a Nystrom sample).

Install with ``pip install graphclust[dask]`` (``dask[array]`` and ``distributed``). Measured
throughput and the plan for 10^7 - 10^8 points: ``docs/scaling.md`` ("Dask").
"""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import numpy as np

try:
    import dask
    import dask.array as da
except ImportError as err:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "graphclust.dask needs Dask, an optional dependency: pip install graphclust[dask] "
        "(installs dask[array] and distributed)."
    ) from err

from numba import njit

from ._validation import check_int, check_option, check_random_state
from .graphs import knn_graph_from_neighbors

__all__ = ["fit_sample_extend", "kneighbors_graph", "kneighbors_lists", "kneighbors_lists_by_cells",
           "load_model", "predict"]

#: estimators (and the pipeline) whose model files `load_model` reads, by their file format name
_MODEL_CLASSES = ("ConsistencyClustering", "SpectralClustering", "AHKClustering",
                  "StabilityClustering", "Pipeline")
#: the keyword of ``model.predict`` that also returns a per-point score
_SCORE_KEYWORDS = ("return_confidence", "return_outlier_score")
#: rows of a query block compared at once in `kneighbors_graph` (caps a temporary at 1024 x m)
_QUERY_ROWS = 1024
#: extra candidates per row kept from the BLAS distances before the exact recomputation
_EXTRA = 8


# ------------------------------------------------------------------------------ input gates
def _as_dask(X, name="X"):
    """X as a 2-d dask array chunked along rows only (columns rechunked into one)."""
    if not isinstance(X, da.Array):
        if not hasattr(X, "shape") or not hasattr(X, "dtype"):
            raise TypeError(f"{name} must be a dask.array.Array (or a numpy array); got "
                            f"{type(X).__name__}.")
        X = da.from_array(np.asarray(X), chunks=(min(max(X.shape[0], 1), 100_000), -1))
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-d (n_samples, n_features); got {X.ndim}-d with shape "
                         f"{X.shape}.")
    if np.isnan(X.shape[1]) or any(np.isnan(c) for c in X.chunks[1]):
        raise ValueError(f"{name} has unknown chunk sizes along its feature axis (chunks[1] = "
                         f"{X.chunks[1]}): call {name}.compute_chunk_sizes() first.")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {X.dtype}.")
    if len(X.chunks[1]) > 1:  # a block must see whole points: one chunk along the features
        X = X.rechunk({1: -1})
    return X


def _known_rows(X, name="X"):
    """Refuse row chunks of unknown size (from boolean masks or dataframes), naming them."""
    unknown = [i for i, c in enumerate(X.chunks[0]) if np.isnan(c)]
    if unknown:
        raise ValueError(
            f"{name} has {len(unknown)} row chunk(s) of unknown size (chunk {unknown[0]} first; "
            "they come from boolean masks or dask.dataframe.to_dask_array()): the global row "
            f"index of each point is needed, so call {name}.compute_chunk_sizes() first.")
    return np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)


def _check_block(block, loc, rows, name="X"):
    """Refuse NaN / inf inside one block, naming the block and its global rows."""
    bad = ~np.isfinite(block)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        where = (f"rows {rows[0]}..{rows[1] - 1}, first at row {rows[0] + r}, column {c}"
                 if rows is not None and not np.isnan(rows[0]) else f"local row {r}, column {c}")
        raise ValueError(
            f"{name} chunk {loc} ({where}) contains {int(bad.sum())} NaN or infinite value(s); "
            "graphclust needs finite coordinates: drop or impute them first.")


def _block_position(block_info):
    info = (block_info or {}).get(0, {})
    loc = info.get("chunk-location", ("?",))[0]
    rows = info.get("array-location", [None])[0]
    return loc, rows


# ------------------------------------------------------------------------------ model files
def load_model(path):
    """Read a fitted graphclust model file, whatever estimator wrote it.

    The file's own format name (``graphclust.ConsistencyClustering``, ``...SpectralClustering``,
    ``...AHKClustering``, ``...StabilityClustering``, ``...Pipeline``) chooses the class, whose
    ``load`` checks the version and every field.

    Parameters
    ----------
    path : str or pathlib.Path

    Returns
    -------
    model : the fitted estimator or `Pipeline`

    Raises
    ------
    ValueError
        The file is damaged, is not a graphclust model, or was written with another format
        version (``refit and save again``).
    """
    from . import cluster, pipeline

    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta_json"]).decode("utf-8"))
    except FileNotFoundError:
        raise
    except Exception as err:
        raise ValueError(f"{path} is damaged or not a graphclust model file "
                         f"({type(err).__name__}: {err}).") from err
    fmt = meta.get("format") if isinstance(meta, dict) else None
    name = fmt[len("graphclust."):] if isinstance(fmt, str) and fmt.startswith("graphclust.") \
        else None
    if name not in _MODEL_CLASSES:
        raise ValueError(f"{path} is not a graphclust model file (format={fmt!r}); readable: "
                         f"{', '.join('graphclust.' + c for c in _MODEL_CLASSES)}.")
    cls = getattr(pipeline if name == "Pipeline" else cluster, name)
    return cls.load(path)


def _fitted_model(model, n_features, score):
    """The model (loaded from a file if a path), checked before any block is computed."""
    if isinstance(model, (str, Path)):
        model = load_model(model)
    if not hasattr(model, "predict"):
        raise TypeError(f"model must be a fitted graphclust estimator with a predict method (or "
                        f"the path of its model file); got {type(model).__name__}.")
    if not hasattr(model, "labels_"):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError(f"This {type(model).__name__} instance is not fitted yet; fit it "
                             "(or fit_sample_extend it) before predicting over a dask array.")
    expected = getattr(model, "n_features_in_", None)
    if expected is not None and expected != n_features:
        raise ValueError(f"X has {n_features} features, but the {type(model).__name__} model "
                         f"expects {expected} (the number it was fitted with).")
    if score is not None:
        import inspect

        if score not in inspect.signature(model.predict).parameters:
            raise ValueError(f"{score}=True: {type(model).__name__}.predict has no such score "
                             f"(it takes {list(inspect.signature(model.predict).parameters)}).")
    # one probe point (all ones: valid for the cosine metric too): a model that cannot predict
    # (fitted on a Graph or a precomputed affinity, a kernel without an out-of-sample rule)
    # refuses here, before any block, not in every task
    model.predict(np.ones((1, n_features)), **({score: True} if score else {}))
    return model


# ------------------------------------------------------------------------------ predict
def _predict_block(block, model, score, override, block_info=None):
    loc, rows = _block_position(block_info)
    width = 2 if score else None
    if block.shape[0] == 0:
        return np.empty((0, 2) if width else (0,), dtype=np.float64 if width else np.int64)
    _check_block(block, loc, rows)
    if score:
        labels, values = model.predict(block, **{score: True})
    else:
        labels, values = model.predict(block), None
    labels = np.asarray(labels, dtype=np.int64)
    if override is not None and rows is not None:
        sample_rows, sample_labels = override
        lo, hi = np.searchsorted(sample_rows, [rows[0], rows[1]])
        labels[sample_rows[lo:hi] - rows[0]] = sample_labels[lo:hi]
    if score:
        return np.column_stack([labels.astype(np.float64), np.asarray(values, np.float64)])
    return labels


def predict(model, X, *, return_confidence=False, return_outlier_score=False):
    """Labels of the rows of a dask array by a fitted model's ``predict``, block by block.

    Parameters
    ----------
    model : fitted estimator, or str / pathlib.Path
        A fitted `ConsistencyClustering`, `SpectralClustering`, `AHKClustering`,
        `StabilityClustering` or `Pipeline` (fitted on a data array, so that it can place new
        points), or the path of a model file they wrote (read by `load_model`).
    X : dask.array.Array (n, n_features_in_)
        Chunked along rows (row chunks of unknown size are fine here); a chunked feature axis
        is rechunked into one. A numpy array is wrapped.
    return_confidence : bool, default False
        Also return ``model.predict(..., return_confidence=True)``'s confidence
        (`ConsistencyClustering`, `Pipeline`).
    return_outlier_score : bool, default False
        Also return `StabilityClustering.predict`'s outlier score.

    Returns
    -------
    labels : dask array of int64 (n,), chunked as X's rows
    scores : dask array of float64 (n,), only when a score is asked

    Raises
    ------
    sklearn.exceptions.NotFittedError
        The model is not fitted.
    ValueError
        (Before any block is computed) X's feature count is not the model's, its feature chunks
        are of unknown size, the model cannot predict (fitted on a Graph), its file is damaged
        or of an older format. (When computed) a block holds NaN or inf: the message names the
        block's index and rows.

    Notes
    -----
    Each block is labelled by ``model.predict(block)``, so the labels equal the in-memory
    ``model.predict(X)`` exactly. The model is one ``dask.delayed`` node in the task graph:
    each worker receives it once. Cost per point: the model's predict (a search among the
    training points: O(n_train d) by brute force, then O(k c)).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import graphclust as gc
    >>> from graphclust.dask import predict
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (50, 2)), rng.normal(4, 0.3, (50, 2))])
    >>> model = gc.SpectralClustering(n_clusters=2, random_state=0).fit(X)
    >>> labels = predict(model, da.from_array(X + 0.01, chunks=(30, 2)))
    >>> bool((labels.compute() == model.labels_).all())
    True
    """
    if return_confidence and return_outlier_score:
        raise ValueError("ask for one score: return_confidence or return_outlier_score.")
    score = ("return_confidence" if return_confidence else
             "return_outlier_score" if return_outlier_score else None)
    X = _as_dask(X)
    model = _fitted_model(model, int(X.shape[1]), score)
    return _predict_graph(model, X, score, None)


def _predict_graph(model, X, score, override):
    # `token`, not `name`: a name is the output's whole key, so two predicts on one array (two
    # models, or with and without a score) shared their keys and the scheduler could return
    # the first one's blocks for the second; a token is a prefix to a hash of the arguments
    model_node = dask.delayed(model, pure=True, traverse=False)
    override_node = None if override is None else dask.delayed(override, traverse=False)
    if score:
        out = da.map_blocks(_predict_block, X, model_node, score, override_node,
                            chunks=(X.chunks[0], (2,)), dtype=np.float64,
                            token="graphclust-predict")
        return out[:, 0].astype(np.int64), out[:, 1]
    return da.map_blocks(_predict_block, X, model_node, score, override_node, drop_axis=1,
                         dtype=np.int64, token="graphclust-predict")


# ------------------------------------------------------------------------------ kNN graph
@njit(cache=True)
def _candidate_lengths(Q, C, cand):
    """||Q[i] - C[cand[i, t]]||, summed in the order of `knn_graph` (bit-identical lengths)."""
    m, k = cand.shape
    d = Q.shape[1]
    out = np.empty((m, k), dtype=np.float64)
    for i in range(m):
        for t in range(k):
            b = cand[i, t]
            s = 0.0
            for j in range(d):
                diff = Q[i, j] - C[b, j]
                s += diff * diff
            out[i, t] = np.sqrt(s)
    return out


def _block_topk(Q, C, q0, c0, k, q_loc, c_loc):
    """The k nearest points of C (global rows c0..) to each row of Q (global rows q0..), exact.

    Squared distances come from BLAS (|q|^2 + |c|^2 - 2 q.c), whose error is at most
    tol = 4 gamma_(d+2) (|q|^2 + max |c|^2) with gamma_m = m u / (1 - m u). If T is the k-th
    smallest of them, every true k-nearest has a BLAS value <= T + 2 tol: all such candidates
    (k + 8 of them, or the whole row where more tie) get their lengths recomputed exactly and
    the k shortest are kept, ties by the smaller index. Returns (indices, lengths), padded with
    (-1, inf) where C holds fewer than k other points.
    """
    Q = np.asarray(Q, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    if c_loc == 0:  # every block is checked once, as the queries of its first task
        _check_block(Q, q_loc, (q0, q0 + Q.shape[0]))
    mq, mc, d = Q.shape[0], C.shape[0], Q.shape[1]
    idx = np.full((mq, k), -1, dtype=np.int64)
    dist = np.full((mq, k), np.inf)
    if mq == 0 or mc == 0:
        return idx, dist
    cc = np.einsum("ij,ij->i", C, C)
    for B, norms, loc, b0 in ((Q, np.einsum("ij,ij->i", Q, Q), q_loc, q0), (C, cc, c_loc, c0)):
        if not np.isfinite(norms).all():
            _check_block(B, loc, (b0, b0 + B.shape[0]))  # NaN / inf: name them
            raise ValueError(
                f"X chunk {loc} has coordinates whose squared norms overflow float64 "
                "(|x| > 1e154): divide X by a constant first (the graph scales with it).")
    u = np.finfo(np.float64).eps / 2
    gamma = (d + 2) * u / (1 - (d + 2) * u)
    same = q0 == c0
    for s in range(0, mq, _QUERY_ROWS):
        Qs = Q[s:s + _QUERY_ROWS]
        r = Qs.shape[0]
        qq = np.einsum("ij,ij->i", Qs, Qs)
        D = qq[:, None] + cc[None, :] - 2.0 * (Qs @ C.T)
        if same:
            D[np.arange(r), np.arange(s, s + r)] = np.inf
        avail = mc - 1 if same else mc
        kk = min(k, avail)
        if kk <= 0:
            continue
        tol = 4.0 * gamma * (qq + cc.max())
        m = min(kk + _EXTRA, avail)
        if m < mc:
            part = np.argpartition(D, m, axis=1)
            cand = part[:, :m]
            outside = np.take_along_axis(D, part[:, m:m + 1], axis=1)[:, 0]
        else:
            cand = np.broadcast_to(np.arange(mc), (r, mc))
            outside = np.full(r, np.inf)
        vals = np.sort(np.take_along_axis(D, cand, axis=1), axis=1)
        bound = vals[:, kk - 1] + 2.0 * tol
        lengths = _candidate_lengths(Qs, C, np.ascontiguousarray(cand))
        full = np.flatnonzero(outside <= bound)  # more near-ties than candidates: whole row
        gi = cand + c0
        if same:
            lengths[gi == np.arange(q0 + s, q0 + s + r)[:, None]] = np.inf
        order = np.lexsort((gi, lengths), axis=-1)[:, :kk]
        idx[s:s + r, :kk] = np.take_along_axis(gi, order, axis=1)
        dist[s:s + r, :kk] = np.take_along_axis(lengths, order, axis=1)
        for i in full:
            all_c = np.arange(mc)[None, :]
            li = _candidate_lengths(Qs[i:i + 1], C, all_c)[0]
            if same:
                li[s + i] = np.inf
            o = np.lexsort((all_c[0] + c0, li))[:kk]
            idx[s + i, :kk], dist[s + i, :kk] = o + c0, li[o]
    return idx, dist


def _merge_topk(*parts):
    """Merge (indices, lengths) lists of the same query rows: the k shortest, ties by index."""
    idx = np.concatenate([p[0] for p in parts], axis=1)
    dist = np.concatenate([p[1] for p in parts], axis=1)
    k = parts[0][0].shape[1]
    key = np.where(idx < 0, np.iinfo(np.int64).max, idx)
    order = np.lexsort((key, dist), axis=-1)[:, :k]
    return np.take_along_axis(idx, order, axis=1), np.take_along_axis(dist, order, axis=1)


def kneighbors_lists(X, n_neighbors, *, merge_width=8):
    """Exact k nearest other points of every row of X, blockwise (see `kneighbors_graph`).

    Returns a list of ``dask.delayed`` (indices, lengths) pairs, one per row chunk of X.
    """
    X = _as_dask(X)
    offsets = _known_rows(X)
    n = int(offsets[-1])
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    merge_width = check_int(merge_width, "merge_width", low=2)
    blocks = X.to_delayed().ravel()
    topk = dask.delayed(_block_topk, pure=True)
    merge = dask.delayed(_merge_topk, pure=True)
    out = []
    for i, Q in enumerate(blocks):
        level = [topk(Q, C, int(offsets[i]), int(offsets[j]), k, i, j)
                 for j, C in enumerate(blocks)]
        while len(level) > 1:  # tree merge: at most merge_width partial lists in memory per task
            level = [merge(*level[t:t + merge_width]) if len(level[t:t + merge_width]) > 1
                     else level[t] for t in range(0, len(level), merge_width)]
        out.append(level[0])
    return out


def kneighbors_graph(X, n_neighbors=10, *, mode="union", merge_width=8, method="exact",
                     cell_size=50_000, probes=2, random_state=None):
    """The symmetrised k-nearest-neighbour `Graph` of a chunked dask array, exact or by cells.

    ``method="exact"``: each row chunk is a query block; each pair (query block, candidate
    block) is one task that keeps the k nearest candidates of every query row (BLAS distances
    with a proven error bound, then exact lengths for the candidates within it); the partial
    lists of a query block are merged by a tree of tasks (`merge_width` at a time). Each task
    holds two blocks and k lists, so X need not fit in memory; the result, n x k neighbours,
    is gathered on the client and symmetrised as `graphclust.knn_graph` does.

    ``method="cells"`` (`kneighbors_lists_by_cells`): approximate, for data past the exact
    search's quadratic cost. The rows are cut into about ``n / cell_size`` cells by k-means
    centroids of a seeded sample (64 rows per cell), each row goes to its `probes` nearest
    cells (each block is cut into its cells by one task, in one pass over X or in several when
    the cut blocks would crowd the workers' memory), the kNN lists inside each cell come from
    one task (exact up to 20 000 points, NN-descent above), and a row's lists from its cells
    are merged. A true neighbour is missed only when it shares none of the row's cells: the
    inverted-file search with multiple probes (Jegou, Douze & Schmid 2011), whose recall grows
    with `probes` (measured in ``docs/scaling.md``, "Dask"). The cells hold probes x n points
    in all, each searched within its cell: work linear in n at a fixed `cell_size`.

    Parameters
    ----------
    X : dask.array.Array (n, d)
        Row chunks of known sizes (``X.compute_chunk_sizes()`` otherwise); a chunked feature
        axis is rechunked into one. Finite values (a NaN names its chunk when computed).
    n_neighbors : int, default 10
        1 <= n_neighbors < n.
    mode : {"union", "mutual"}, default "union"
        As in `graphclust.knn_graph`.
    merge_width : int, default 8
        Partial lists merged per task (exact method).
    method : {"exact", "cells"}, default "exact"
        ``"exact"``: the guarantee under Returns, quadratic work. ``"cells"``: approximate
        (its recall is measured in ``docs/scaling.md``), linear work.
    cell_size : int, default 50 000
        Rows per cell on average (cells method): a cell task holds about ``probes x
        cell_size`` points. ``cell_size >= n`` gives one cell: the in-memory
        `graphclust.knn_graph` lists (exact up to 20 000 points).
    probes : int, default 2
        Cells per row (cells method), >= 1; as many as there are cells or more puts every row
        in every cell (the exact lists, at the cost of one search per cell over all points).
    random_state : int, Generator, RandomState or None
        Seed of the sample, the k-means and the cells' NN-descent (cells method): the same
        seed gives the same graph whatever the chunks and workers.

    Returns
    -------
    Graph
        Exact method: equal to ``graphclust.knn_graph(X.compute(), n_neighbors,
        method="exact", mode=mode)`` (same edges, lengths computed by the same formula) when
        no two candidates tie at the k-th distance; ties are broken by the smaller index here.

    Notes
    -----
    Exact: the guarantee holds for every input (no approximation, no sampling). Cost
    O(n^2 d) flops in B^2 tasks for B row chunks, communication O(B^2 (n/B) d) = O(B n d)
    floats (each block travels to the tasks of every other block) plus O(n k) for the lists.
    Past a few 10^6 points the quadratic cost rules (see ``docs/scaling.md``, "Dask").

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import graphclust as gc
    >>> from graphclust.dask import kneighbors_graph
    >>> X = np.random.default_rng(0).normal(size=(300, 5))
    >>> g = kneighbors_graph(da.from_array(X, chunks=(100, 5)), 5)
    >>> ref = gc.knn_graph(X, 5, method="exact")
    >>> bool(abs(g.distances - ref.distances).max() == 0)
    True
    """
    check_option(mode, "mode", {"union", "mutual"})
    check_option(method, "method", {"exact", "cells"})
    if method == "cells":
        idx, dist = kneighbors_lists_by_cells(X, n_neighbors, cell_size=cell_size,
                                              probes=probes, random_state=random_state)
    else:
        parts = dask.compute(*kneighbors_lists(X, n_neighbors, merge_width=merge_width))
        idx = np.concatenate([p[0] for p in parts])
        dist = np.concatenate([p[1] for p in parts])
    return knn_graph_from_neighbors(idx, dist, mode=mode, provenance={
        "builder": "graphclust.dask.kneighbors_graph", "n_neighbors": int(n_neighbors),
        "metric": "euclidean", "method": method, "mode": mode})


# ------------------------------------------------------------------------------ kNN by cells
#: sample rows per cell for the k-means centroids of `kneighbors_graph(method="cells")`
_SAMPLE_PER_CELL = 64
#: rows of a block whose distances to the centroids are computed at once
_SPLIT_ROWS = 32_768


def _nearest_cells(block, centroids, probes):
    """The `probes` nearest centroids of each row (int64 (m, probes), nearest first)."""
    D = (np.einsum("ij,ij->i", block, block)[:, None]
         + np.einsum("ij,ij->i", centroids, centroids)[None, :] - 2.0 * (block @ centroids.T))
    if probes < centroids.shape[0]:
        part = np.argpartition(D, probes - 1, axis=1)[:, :probes]
    else:
        part = np.broadcast_to(np.arange(centroids.shape[0]), (block.shape[0], probes))
    order = np.argsort(np.take_along_axis(D, part, axis=1), axis=1, kind="stable")
    return np.take_along_axis(part, order, axis=1)


def _split_block(block, b0, loc, centroids, probes, lo, hi):
    """One row block cut into cells lo..hi-1: a list, per cell, of (global rows, points).

    Each row goes to its `probes` nearest centroids among all of them; only the rows of the
    cells of this pass are kept.
    """
    block = np.asarray(block)
    _check_block(block, loc, (b0, b0 + block.shape[0]))
    # by row chunks: a block's distances to all centroids would be m x n_cells floats (1.6 GB
    # for 10^6 rows and 200 cells, which took a worker past its memory limit at 10^7 points)
    cells = np.empty((block.shape[0], probes), dtype=np.int64)
    for s in range(0, block.shape[0], _SPLIT_ROWS):
        part = np.asarray(block[s:s + _SPLIT_ROWS], dtype=np.float64)
        cells[s:s + _SPLIT_ROWS] = _nearest_cells(part, centroids, probes)
    rows = np.repeat(np.arange(block.shape[0]), probes)
    flat = cells.ravel()
    order = np.argsort(flat, kind="stable")
    bounds = np.searchsorted(flat[order], np.arange(centroids.shape[0] + 1))
    out = []
    for p in range(lo, hi):
        r = rows[order[bounds[p]:bounds[p + 1]]]
        out.append((r + b0, block[r]))
    return out


def _cell_lists(parts, k, seed):
    """The k nearest other points of each member of one cell, among the cell's members.

    `graphclust.nearest_neighbors` on the cell (exact up to ``EXACT_SEARCH_MAX_SAMPLES``
    points, NN-descent above, seeded). Returns (global rows, global neighbour rows, lengths),
    padded with (-1, inf) where the cell holds k or fewer points.
    """
    from .graphs import nearest_neighbors

    ids = np.concatenate([p[0] for p in parts]).astype(np.int64)
    m = ids.size
    idx = np.full((m, k), -1, dtype=np.int64)
    dist = np.full((m, k), np.inf)
    if m >= 2:
        pts = np.concatenate([p[1] for p in parts]).astype(np.float64, copy=False)
        kk = min(k, m - 1)
        li, ld = nearest_neighbors(pts, kk, random_state=seed)
        idx[:, :kk], dist[:, :kk] = ids[li], ld
    return ids, idx, dist


@njit(cache=True)
def _merge_into(out_i, out_d, ids, idx, dist):
    """Merge lists (ids, idx, dist) into the running lists (out_i, out_d), row by row, in place.

    Each row of the result holds its shortest distinct neighbours so far, sorted by (length,
    index), padded with (-1, inf); a neighbour found again keeps its shorter length. The final
    lists are the k shortest of the union whatever order the parts come in.
    """
    m, k = idx.shape
    K = out_i.shape[1]
    for t in range(m):
        r = ids[t]
        for s in range(k):
            j = idx[t, s]
            v = dist[t, s]
            if j < 0:
                continue
            pos = -1
            for u in range(K):
                if out_i[r, u] == j:
                    pos = u
                    break
            if pos >= 0:
                if v >= out_d[r, pos]:
                    continue
                for u in range(pos, K - 1):  # take it out, to be inserted at its new length
                    out_i[r, u] = out_i[r, u + 1]
                    out_d[r, u] = out_d[r, u + 1]
                out_i[r, K - 1] = -1
                out_d[r, K - 1] = np.inf
            last_i, last_d = out_i[r, K - 1], out_d[r, K - 1]
            if v > last_d or (v == last_d and last_i >= 0 and j > last_i):
                continue
            u = K - 1
            while u > 0 and (out_d[r, u - 1] > v or (out_d[r, u - 1] == v
                                                     and (out_i[r, u - 1] < 0
                                                          or out_i[r, u - 1] > j))):
                out_i[r, u] = out_i[r, u - 1]
                out_d[r, u] = out_d[r, u - 1]
                u -= 1
            out_i[r, u] = j
            out_d[r, u] = v


def _merge_rows(n, k, lists):
    """Per row, the k shortest distinct neighbours over all (rows, idx, dist) lists (ties by index).

    Returns (idx, dist) of shape (n, k), padded with (-1, inf) where fewer than k were found.
    """
    idx = np.full((n, k), -1, dtype=np.int64)
    dist = np.full((n, k), np.inf)
    for rows, i, d in lists:
        _merge_into(idx, dist, np.asarray(rows, dtype=np.int64), np.asarray(i, dtype=np.int64),
                    np.asarray(d, dtype=np.float64))
    return idx, dist


#: share of the distributed cluster's memory that the cut blocks of one pass may take
_PASS_MEMORY = 0.25


def _passes(nbytes, n_cells):
    """Passes over X so that one pass's cut blocks take at most `_PASS_MEMORY` of the workers'
    memory (1 without a distributed client, or when the workers state no memory limit)."""
    try:
        from distributed import default_client

        workers = default_client().scheduler_info()["workers"].values()
    except (ImportError, ValueError):
        return 1
    memory = sum(float(w.get("memory_limit") or 0) for w in workers)
    if memory <= 0:
        return 1
    return int(min(n_cells, max(1, np.ceil(nbytes / (_PASS_MEMORY * memory)))))


def _each_result(tasks, consume):
    """Compute dask `tasks`, handing each result to `consume` as it arrives.

    On a distributed client the results stream in (the client holds one cell's lists at a
    time, and merges while the workers compute); otherwise one ``dask.compute``.
    """
    try:
        from distributed import as_completed, default_client

        client = default_client()
    except (ImportError, ValueError):
        client = None
    if client is None:
        for r in dask.compute(*tasks):
            consume(r)
        return
    for fut in as_completed(client.compute(list(tasks))):
        consume(fut.result())
        fut.release()


def _rows_topk(Q, qids, C, c0, k):
    """Exact k nearest points of C (global rows c0..) to the rows `qids` (points Q), self excluded."""
    Q = np.asarray(Q, dtype=np.float64)
    C = np.asarray(C, dtype=np.float64)
    all_c = np.broadcast_to(np.arange(C.shape[0]), (Q.shape[0], C.shape[0]))
    L = _candidate_lengths(Q, C, np.ascontiguousarray(all_c))
    gi = all_c + c0
    L[gi == qids[:, None]] = np.inf
    kk = min(k, C.shape[0])
    o = np.lexsort((gi, L), axis=-1)[:, :kk]
    idx = np.full((Q.shape[0], k), -1, dtype=np.int64)
    dist = np.full((Q.shape[0], k), np.inf)
    idx[:, :kk], dist[:, :kk] = np.take_along_axis(gi, o, axis=1), np.take_along_axis(L, o, axis=1)
    idx[~np.isfinite(dist)] = -1
    return idx, dist


def kneighbors_lists_by_cells(X, n_neighbors, *, cell_size=50_000, probes=2, random_state=None):
    """Approximate k nearest other points of every row of X, found cell by cell.

    The method of ``kneighbors_graph(method="cells")``, whose parameters these are: the rows
    are cut into about ``n / cell_size`` cells by k-means centroids of a seeded sample, each row
    goes to its `probes` nearest cells, the kNN lists inside each cell come from one task
    (`graphclust.nearest_neighbors`: exact up to 20 000 points, NN-descent above), and each
    row's lists from its cells are merged on the client. Rows left with fewer than k
    neighbours (cells of k or fewer points) get an exact search of every block.

    Memory: the cut blocks wait in the workers' memory until their cells run, probes x n x d
    x itemsize bytes over the cluster. On a distributed client whose workers state a memory
    limit, the cells run in as many passes over X as keep that under a quarter of the limits'
    sum (each pass reads X again); the client holds the n x k lists and one cell's result.

    Parameters
    ----------
    X : dask.array.Array (n, d)
        Row chunks of known sizes; finite values (a NaN names its chunk).
    n_neighbors : int
        1 <= n_neighbors < n.
    cell_size : int, default 50 000
        Rows per cell on average, > n_neighbors.
    probes : int, default 2
        Cells per row, >= 1 (capped at the number of cells).
    random_state : int, Generator, RandomState or None
        Seed of the sample, the k-means and the cells' NN-descent.

    Returns
    -------
    indices : int64 array (n, n_neighbors), sorted by length
    lengths : float64 array (n, n_neighbors)

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> from graphclust.dask import kneighbors_lists_by_cells
    >>> X = np.random.default_rng(0).normal(size=(2000, 3))
    >>> idx, dist = kneighbors_lists_by_cells(da.from_array(X, chunks=(500, 3)), 5,
    ...                                       cell_size=500, random_state=0)
    >>> idx.shape, bool((np.diff(dist, axis=1) >= 0).all())
    ((2000, 5), True)
    """
    X = _as_dask(X)
    offsets = _known_rows(X)
    n = int(offsets[-1])
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    cell_size = check_int(cell_size, "cell_size", low=k + 1)
    n_cells = -(-n // cell_size)
    probes = check_int(probes, "probes", low=1)
    rng = check_random_state(random_state)
    # centroids: k-means (Lloyd, k-means++ start, scikit-learn) on a seeded uniform sample
    m = min(n, max(_SAMPLE_PER_CELL * n_cells, 10 * k))
    sample = np.sort(rng.choice(n, size=m, replace=False))
    Xs = np.asarray(X[sample].compute(), dtype=np.float64)
    _check_block(Xs, "sample", None)
    if n_cells > 1:
        from sklearn.cluster import KMeans

        centroids = KMeans(n_clusters=n_cells, n_init=1, random_state=int(rng.integers(2**31 - 1))
                           ).fit(Xs).cluster_centers_
    else:
        centroids = Xs.mean(axis=0, keepdims=True)
    n_cells = centroids.shape[0]
    probes = min(probes, n_cells)
    cents = dask.delayed(centroids, pure=True, traverse=False)
    blocks = X.to_delayed().ravel()
    seeds = rng.integers(2**31 - 1, size=n_cells)
    cell = dask.delayed(_cell_lists, pure=True)
    idx = np.full((n, k), -1, dtype=np.int64)
    dist = np.full((n, k), np.inf)
    # the cut blocks wait in the workers' memory until their cells run: in passes over X when
    # they would take more than a quarter of the cluster's memory (each pass reads X again)
    passes = _passes(probes * n * int(X.shape[1]) * X.dtype.itemsize, n_cells)
    bounds = np.linspace(0, n_cells, passes + 1).round().astype(int)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        split = dask.delayed(_split_block, pure=True, nout=int(hi - lo))
        pieces = [split(B, int(offsets[i]), i, cents, probes, int(lo), int(hi))
                  for i, B in enumerate(blocks)]
        _each_result([cell([pc[p - lo] for pc in pieces], k, int(seeds[p]))
                      for p in range(lo, hi)],
                     lambda part: _merge_into(idx, dist, *part))
    short = np.flatnonzero((idx < 0).any(axis=1))
    if short.size:  # rows whose cells held too few points: an exact search of all blocks
        Q = np.asarray(X[short].compute(), dtype=np.float64)
        topk = dask.delayed(_rows_topk, pure=True)
        parts = dask.compute(*[topk(Q, short, B, int(offsets[i]), k)
                               for i, B in enumerate(blocks)])
        idx[short], dist[short] = _merge_topk(*parts)
    return idx, dist


# ------------------------------------------------------------------------------ sample, extend
def fit_sample_extend(estimator, X, sample_size, *, random_state=None, return_confidence=False,
                      return_outlier_score=False):
    """Fit `estimator` on a seeded uniform sample of X's rows, then label all rows by `predict`.

    Parameters
    ----------
    estimator : unfitted graphclust estimator with ``predict`` (its parameters as usual)
    X : dask.array.Array (n, d)
        Row chunks of known sizes.
    sample_size : int
        2 <= sample_size <= n: rows drawn uniformly without replacement (seeded), gathered to
        the client (``sample_size x d`` floats) and given to ``estimator.fit``.
    random_state : int, Generator, RandomState or None
        Seed of the sample (and of the estimator, when it has no ``random_state`` of its own).
    return_confidence, return_outlier_score : bool
        As in `predict`.

    Returns
    -------
    estimator : the fitted estimator (its ``labels_`` are the sample's, in sorted row order)
    labels : dask array of int64 (n,)
        The sample's rows keep their fitted ``labels_``; every other row gets
        ``estimator.predict``. Compute it (or store it with ``da.to_zarr``) when needed.
    scores : dask array (n,), only when a score is asked (the sample's rows get predict's)
    sample : int64 array (sample_size,), the sorted rows of the sample

    Notes
    -----
    A uniform sample represents every cluster in proportion to its size: a cluster of n_c rows
    gets about n_c * sample_size / n of them, so clusters below ~ n / sample_size rows may be
    missed. The cost of sampling, measured in NMI against the full fit, is in
    ``docs/scaling.md`` ("Dask").

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import graphclust as gc
    >>> from graphclust.dask import fit_sample_extend
    >>> rng = np.random.default_rng(0)
    >>> X = np.vstack([rng.normal(0, 0.3, (500, 2)), rng.normal(4, 0.3, (500, 2))])
    >>> model, labels, sample = fit_sample_extend(
    ...     gc.SpectralClustering(n_clusters=2, random_state=0),
    ...     da.from_array(X, chunks=(250, 2)), 200, random_state=0)
    >>> lab = labels.compute()
    >>> bool((lab[:500] == lab[0]).all() and (lab[500:] != lab[0]).all())
    True
    """
    if return_confidence and return_outlier_score:
        raise ValueError("ask for one score: return_confidence or return_outlier_score.")
    score = ("return_confidence" if return_confidence else
             "return_outlier_score" if return_outlier_score else None)
    if not hasattr(estimator, "fit") or not hasattr(estimator, "predict"):
        raise TypeError(f"estimator must be a graphclust estimator with fit and predict; got "
                        f"{type(estimator).__name__}.")
    X = _as_dask(X)
    n = int(_known_rows(X)[-1])
    if isinstance(sample_size, numbers.Integral) and not isinstance(sample_size, bool) \
            and sample_size > n:
        raise ValueError(f"sample_size must satisfy 2 <= sample_size <= n = {n} (the rows of X); "
                         f"got {sample_size}: use fit on all rows, or a smaller sample.")
    sample_size = check_int(sample_size, "sample_size", low=2, high=n)
    rng = check_random_state(random_state)
    sample = np.sort(rng.choice(n, size=sample_size, replace=False)).astype(np.int64)
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    if "random_state" in params and params["random_state"] is None and random_state is not None:
        estimator.set_params(random_state=int(rng.integers(2**31 - 1)))
    Xs = X[sample].compute()  # sorted fancy index: each block contributes its own rows
    _check_block(Xs, "sample", None)
    estimator.fit(Xs)
    fitted = np.asarray(estimator.labels_, dtype=np.int64)
    _fitted_model(estimator, int(X.shape[1]), score)
    out = _predict_graph(estimator, X, score, (sample, fitted))
    if score:
        return estimator, out[0], out[1], sample
    return estimator, out, sample

