"""The input gates of `graphclust.dask`: a dask array of whole points, known row chunks, finite
blocks (errors name the chunk and its rows)."""

from __future__ import annotations

import dask.array as da
import numpy as np


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


def _check_block(block, loc, rows, name="X", allow_nan=False):
    """Refuse NaN / inf inside one block (inf only, with `allow_nan`: a model that reads NaN as
    a missing value), naming the block and its global rows."""
    bad = np.isinf(block) if allow_nan else ~np.isfinite(block)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        where = (f"rows {rows[0]}..{rows[1] - 1}, first at row {rows[0] + r}, column {c}"
                 if rows is not None and not np.isnan(rows[0]) else f"local row {r}, column {c}")
        what = "infinite" if allow_nan else "NaN or infinite"
        raise ValueError(
            f"{name} chunk {loc} ({where}) contains {int(bad.sum())} {what} value(s); "
            "graphclust needs finite coordinates: drop or impute them first.")


def _block_position(block_info):
    info = (block_info or {}).get(0, {})
    loc = info.get("chunk-location", ("?",))[0]
    rows = info.get("array-location", [None])[0]
    return loc, rows
