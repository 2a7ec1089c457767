"""Model files without pickle: one .npz of arrays plus JSON metadata, written atomically.

Shared by every estimator's ``save`` / ``load`` and by `Pipeline`'s. Files are read with
``np.load(..., allow_pickle=False)``; a damaged file, a file of another kind or of another format
version gives a ValueError that says which.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["jsonable", "read_model_file", "write_model_file"]


def jsonable(value):
    """numpy scalars, arrays, tuples and dicts as plain JSON-serialisable Python values."""
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [jsonable(v) for v in value]
    return value


def write_model_file(path, arrays, meta):
    """Write `arrays` (name -> ndarray) and the JSON-able dict `meta` to `path`.

    Written to a temporary file in the same folder, then renamed: an error leaves nothing behind.
    Returns the path.
    """
    path = Path(path)
    payload = dict(arrays)
    payload["meta_json"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(suffix=".npz.part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **payload)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def read_model_file(path, *, fmt, version, kind):
    """Read a file written by `write_model_file`; return ``(arrays, meta)``.

    `fmt` and `version` must match the metadata's ``format`` and ``format_version``; `kind`
    ("model", "pipeline") names the file in error messages.
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
        meta = json.loads(bytes(data.pop("meta_json")).decode("utf-8"))
    except FileNotFoundError:
        raise
    except Exception as err:  # zip, npy, key or JSON errors: all mean "damaged"
        raise ValueError(
            f"{path} is damaged or not a graphclust {kind} file ({type(err).__name__}: {err})."
        ) from err
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise ValueError(f"{path} is not a {fmt} file (format={found!r}).")
    if meta.get("format_version") != version:
        raise ValueError(
            f"{path} was written with {kind} format version {meta.get('format_version')!r}; "
            f"this graphclust reads version {version}: refit and save again."
        )
    return data, meta
