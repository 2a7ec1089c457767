"""Model files without pickle: one .npz of arrays plus JSON metadata, written atomically.

Shared by every estimator's ``save`` / ``load`` and by `Pipeline`'s. Files are read with
``np.load(..., allow_pickle=False)``; a damaged file, a file of another kind or of another format
version gives a ValueError that says which.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["file_array", "file_value", "jsonable", "make_from_params", "model_bytes",
           "read_model_bytes", "read_model_file", "write_model_file"]


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


def _payload(arrays, meta):
    payload = dict(arrays)
    payload["meta_json"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    return payload


def write_model_file(path, arrays, meta):
    """Write `arrays` (name -> ndarray) and the JSON-able dict `meta` to `path`.

    Written to a temporary file in the same folder, then renamed: an error leaves nothing behind.
    Returns the path.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(suffix=".npz.part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **_payload(arrays, meta))
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def model_bytes(arrays, meta):
    """The bytes `write_model_file` would write, as a uint8 array (a model inside a model)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **_payload(arrays, meta))
    return np.frombuffer(buffer.getvalue(), dtype=np.uint8)


def read_model_file(path, *, fmt, version, kind):
    """Read a file written by `write_model_file`; return ``(arrays, meta)``.

    `fmt` and `version` (an int, or a tuple of the versions read) must match the metadata's
    ``format`` and ``format_version``; `kind` ("model", "pipeline") names the file in error
    messages.
    """
    return _read(Path(path), path, fmt=fmt, version=version, kind=kind)


def read_model_bytes(blob, name, *, fmt, version, kind):
    """`read_model_file` for the bytes of `model_bytes` (uint8 array); `name` is for errors."""
    return _read(io.BytesIO(np.asarray(blob, dtype=np.uint8).tobytes()), name, fmt=fmt,
                 version=version, kind=kind)


def _read(source, path, *, fmt, version, kind):
    try:
        with np.load(source, allow_pickle=False) as z:
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
    versions = version if isinstance(version, tuple) else (version,)
    if meta.get("format_version") not in versions:
        readable = " or ".join(str(v) for v in versions)
        raise ValueError(
            f"{path} was written with {kind} format version {meta.get('format_version')!r}; "
            f"this graphclust reads version {readable}: refit and save again."
        )
    return data, meta


# ---------------------------------------------------------------------------------------------
# Checks on what a file holds: a damaged or edited file is a ValueError naming the file and the
# field, never a wrong value or a raw KeyError / TypeError from deep inside.
# ---------------------------------------------------------------------------------------------

_KINDS = {"int": "iu", "float": "f", "number": "iuf", "bool": "b"}


def file_array(data, name, path, *, kind="float", ndim=None, shape=None, finite=True,
               required=True):
    """The array `name` of a model file, checked; None when absent and not `required`.

    Parameters
    ----------
    data : dict of arrays (from `read_model_file`)
    kind : {"int", "float", "number", "bool"}
        The dtype kind the field must have (labels stored as strings are refused).
    ndim : int, optional
    shape : tuple, optional
        Expected shape; None entries match any size.
    finite : bool
        Refuse NaN and infinite values (float fields).
    """
    if name not in data:
        if required:
            raise ValueError(f"{path} is damaged: the array {name!r} is missing.")
        return None
    a = data[name]
    if a.dtype.kind not in _KINDS[kind]:
        raise ValueError(f"{path} is damaged: {name} holds {a.dtype} values; expected {kind}.")
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{path} is damaged: {name} has {a.ndim} dimension(s); expected {ndim}.")
    if shape is not None and (a.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(a.shape, shape))):
        want = tuple("any" if w is None else w for w in shape)
        raise ValueError(f"{path} is damaged: its arrays have inconsistent shapes ({name} has "
                         f"shape {a.shape}; expected {want}).")
    if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        raise ValueError(f"{path} is damaged: {name} holds NaN or infinite values.")
    return a


def file_value(meta, key, path, *, kind="float", allow_none=False, low=None):
    """The metadata value `key`, checked: present, of `kind` ("int", "float", "str", "bool"),
    finite, at least `low`; None only when `allow_none`."""
    if key not in meta:
        raise ValueError(f"{path} is damaged: its metadata has no {key!r}.")
    v = meta[key]
    if v is None:
        if allow_none:
            return None
        raise ValueError(f"{path} is damaged: {key} is null.")
    ok = {"int": lambda x: isinstance(x, int) and not isinstance(x, bool),
          "float": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)
          and np.isfinite(x),
          "str": lambda x: isinstance(x, str),
          "bool": lambda x: isinstance(x, bool)}[kind]
    if not ok(v) or (low is not None and v < low):
        bound = "" if low is None else f" >= {low}"
        raise ValueError(f"{path} is damaged: {key} = {v!r} is not a {kind}{bound}.")
    return v


def make_from_params(cls, params, path):
    """``cls(**params)`` from a file's stored parameters, refusing unknown or malformed ones."""
    if not isinstance(params, dict):
        raise ValueError(f"{path} is damaged: its parameters are not a mapping.")
    known = set(cls._get_param_names())
    unknown = sorted(set(params) - known)
    if unknown:
        raise ValueError(f"{path} is damaged or from another graphclust: unknown {cls.__name__} "
                         f"parameter(s) {unknown}.")
    try:
        return cls(**params)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path} is damaged: its {cls.__name__} parameters are invalid "
                         f"({err}).") from err
