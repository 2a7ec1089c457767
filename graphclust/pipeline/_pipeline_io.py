"""Model files of `Pipeline`: one .npz of arrays + JSON metadata, no pickle.

Format ``graphclust.Pipeline`` version 1: the stages (class name and parameters), the fitted
arrays, the chosen values, and, when the pipeline can predict, the fitted estimator's own model
file embedded as bytes (under ``consistency_model`` or ``spectral_model``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from .._persistence import (
    file_array,
    file_value,
    jsonable,
    make_from_params,
    read_model_file,
    write_model_file,
)
from ..cluster import AHKClustering, ConsistencyClustering, SpectralClustering
from ._stages import STAGES, AHKStage, can_predict

__all__ = ["PIPELINE_FORMAT", "PIPELINE_FORMAT_VERSION", "load_pipeline", "save_pipeline"]

#: File format written by `Pipeline.save`.
PIPELINE_FORMAT = "graphclust.Pipeline"
PIPELINE_FORMAT_VERSION = 1

#: Fitted arrays stored when present.
ARRAYS = ("labels_", "representatives_", "inlierness_", "cluster_inlierness_", "omega_",
          "omega_valid_", "omega_sigmas_", "omega_alphas_", "omega_n_clusters_", "between_",
          "embedding_")


def _stage_to_json(stage):
    if stage is None:
        return None
    return {"class": type(stage).__name__,
            "params": {k: jsonable(v) for k, v in stage.get_params(deep=False).items()}}


def _stage_from_json(spec, where):
    if spec is None:
        return None
    name = spec.get("class") if isinstance(spec, dict) else None
    if name not in STAGES:
        raise ValueError(f"{where} is damaged: unknown stage class {name!r}.")
    params = spec.get("params")
    if isinstance(params, dict):
        params = {k: (tuple(v) if isinstance(v, list) else v) for k, v in params.items()}
    return make_from_params(STAGES[name], params, where)


def _params_json(pipe):
    rs = pipe.random_state
    if isinstance(rs, (np.integer,)):
        rs = int(rs)
    if not (rs is None or isinstance(rs, int)):
        rs = None  # a Generator cannot be stored; the fitted result does not need it
    return {"graph": _stage_to_json(pipe.graph), "kernel": _stage_to_json(pipe.kernel),
            "clusterer": _stage_to_json(pipe.clusterer), "random_state": rs,
            "verbose": bool(pipe.verbose)}


def save_pipeline(pipe, path):
    """Write the fitted `pipe` to `path`; returns the path written."""
    path = Path(path)
    meta = {
        "format": PIPELINE_FORMAT,
        "format_version": PIPELINE_FORMAT_VERSION,
        "params": _params_json(pipe),
        "n_clusters_": int(pipe.n_clusters_),
        "sigma_": None if pipe.sigma_ is None else float(pipe.sigma_),
        "alpha_": None if pipe.alpha_ is None else float(pipe.alpha_),
        "n_features_in_": getattr(pipe, "n_features_in_", None),
        "timings_": jsonable(pipe.timings_),
        "omega_by_n_clusters_": jsonable(getattr(pipe, "omega_by_n_clusters_", None)),
        "n_neighbors_": getattr(pipe, "n_neighbors_", None),
        "graph_search_": jsonable(getattr(pipe, "graph_search_", None)),
        "inertia_": getattr(pipe, "inertia_", None),
    }
    arrays = {k: getattr(pipe, k) for k in ARRAYS if hasattr(pipe, k)}
    folder = path.parent if str(path.parent) else Path(".")
    est = pipe.estimator_
    if est is not None and can_predict(pipe):  # the embedded model is what predict needs
        fd, tmp = tempfile.mkstemp(suffix=".npz", dir=folder)
        os.close(fd)
        key = "consistency_model" if isinstance(est, ConsistencyClustering) else "spectral_model"
        try:
            est.save(tmp)
            arrays[key] = np.fromfile(tmp, dtype=np.uint8)
        finally:
            os.unlink(tmp)
    return write_model_file(path, arrays, meta)


def load_pipeline(cls, path):
    """The `Pipeline` (class `cls`) written to `path` by `save_pipeline`."""
    data, meta = read_model_file(path, fmt=PIPELINE_FORMAT, version=PIPELINE_FORMAT_VERSION,
                                 kind="pipeline")
    p = meta.get("params")
    if not isinstance(p, dict) or any(k not in p for k in ("graph", "kernel", "clusterer")):
        raise ValueError(f"{path} is damaged: its stages (params) are missing.")
    pipe = make_from_params(cls, {
        "graph": _stage_from_json(p["graph"], path),
        "kernel": _stage_from_json(p["kernel"], path),
        "clusterer": _stage_from_json(p["clusterer"], path),
        "random_state": p.get("random_state"), "verbose": p.get("verbose", False)}, path)
    if "labels_" not in data:
        raise ValueError(f"{path} is damaged: the labels_ array is missing.")
    c = file_value(meta, "n_clusters_", path, kind="int", low=1)
    labels = file_array(data, "labels_", path, kind="int", ndim=1)
    if labels.size and (labels.min() < -1 or labels.max() >= c):
        raise ValueError(f"{path} is damaged: labels_ holds values outside -1..{c - 1}.")
    for k in ARRAYS:
        if k in data:
            setattr(pipe, k, file_array(data, k, path, kind="bool" if k == "omega_valid_" else
                                        "int" if k in ("labels_", "representatives_",
                                                       "omega_n_clusters_") else "float",
                                        finite=k in ("labels_", "embedding_", "inlierness_")))
    pipe.n_clusters_ = c
    pipe.sigma_ = file_value(meta, "sigma_", path, allow_none=True, low=0)
    pipe.alpha_ = file_value(meta, "alpha_", path, allow_none=True, low=0)
    pipe.timings_ = meta.get("timings_", {})
    pipe.graph_ = None
    if meta.get("inertia_") is not None:
        pipe.inertia_ = float(meta["inertia_"])
    if meta.get("omega_by_n_clusters_") is not None:
        pipe.omega_by_n_clusters_ = {int(k): float(v) for k, v in
                                     meta["omega_by_n_clusters_"].items()}
    pipe.n_neighbors_ = meta.get("n_neighbors_")
    pipe.graph_search_ = None if meta.get("graph_search_") is None else {
        int(k): float(v) for k, v in meta["graph_search_"].items()}
    if meta.get("n_features_in_") is not None:
        pipe.n_features_in_ = int(meta["n_features_in_"])
    pipe.estimator_ = None
    spectral = AHKClustering if isinstance(pipe.kernel, AHKStage) else SpectralClustering
    for key, est_cls in (("consistency_model", ConsistencyClustering),
                         ("spectral_model", spectral)):
        if key not in data:
            continue
        fd, tmp = tempfile.mkstemp(suffix=".npz")
        os.close(fd)
        try:
            data[key].tofile(tmp)
            pipe.estimator_ = est_cls.load(tmp)
        finally:
            os.unlink(tmp)
    return pipe
