"""Model files of `ConsistencyClustering`: one .npz of arrays + JSON metadata, no pickle.

Format ``graphclust.ConsistencyClustering`` version 1: the constructor parameters, the chosen
values, and per criterion (meta ``criterion_``): ``"omega"``, the fitted arrays of
`FITTED_ARRAYS` and the small state `predict` needs (``predict_H`` = S V[:, seeds] with S's rows
normalised, the degrees, the training points, and for the outlier score ``outlier_r`` and the
sorted training statistics ``outlier_ref``: files without them load, and their predict refuses
``return_outlier_score`` with a message); ``"stability"``, the labels, the
representatives and the fitted `StabilityClustering`'s own file embedded as bytes
(``stability_model``). Files written before the ``kernel`` parameter existed load as
consistency-kernel models; files written before ``criterion`` existed load as
``criterion="omega"`` models (what fitted them), with ``criterion="omega"`` in their
parameters so that a refit reproduces them.
"""

from __future__ import annotations

import numpy as np

from .._persistence import (
    file_array,
    file_value,
    jsonable,
    make_from_params,
    read_model_file,
    write_model_file,
)

__all__ = ["FITTED_ARRAYS", "MODEL_FORMAT", "MODEL_FORMAT_VERSION", "load_consistency",
           "save_consistency"]

#: Format name and version written by `save_consistency`.
MODEL_FORMAT = "graphclust.ConsistencyClustering"
MODEL_FORMAT_VERSION = 1

#: Fitted attributes stored as arrays.
FITTED_ARRAYS = ("labels_", "representatives_", "inlierness_", "cluster_inlierness_", "between_",
                 "omega_", "omega_valid_", "omega_sigmas_", "omega_alphas_",
                 "omega_n_clusters_")


def save_consistency(model, path):
    """Write the fitted `model` to `path`; returns the path written (`write_model_file`)."""
    params = {k: (list(v) if isinstance(v, tuple) else v) for k, v in model.get_params().items()
              if k != "graph" or isinstance(v, str)}
    if isinstance(params.get("random_state"), np.random.Generator):
        params["random_state"] = None
    if isinstance(params.get("stability_params"), dict):
        params["stability_params"] = jsonable(params["stability_params"])
    if model.criterion_ == "stability":
        from ._consistency_criterion import save_stability

        meta = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
                "params": params, "n_clusters_": model.n_clusters_, "alpha_": model.alpha_,
                "sigma_": None, "fit_kind": "array", "kernel_method_": None,
                "n_features_in_": model.n_features_in_}
        arrays = {"labels_": model.labels_, "representatives_": model.representatives_}
        save_stability(model, arrays, meta)
        return write_model_file(path, arrays, meta)
    meta = {
        "format": MODEL_FORMAT,
        "format_version": MODEL_FORMAT_VERSION,
        "params": params,
        "n_clusters_": model.n_clusters_,
        "alpha_": model.alpha_,
        "sigma_": model.sigma_,
        "fit_kind": model._fit_kind,
        "kernel_method_": model.kernel_method_,
        "n_features_in_": getattr(model, "n_features_in_", None),
    }
    arrays = {k: getattr(model, k) for k in FITTED_ARRAYS}
    if model._predict_H is not None:
        arrays["predict_H"] = model._predict_H
        arrays["degrees"] = model._degrees
        if getattr(model, "_outlier_r", None) is not None:  # predict's outlier score
            arrays["outlier_r"] = model._outlier_r
            arrays["outlier_ref"] = model._outlier_ref
    if model._X_fit is not None:
        arrays["X_fit"] = model._X_fit
    return write_model_file(path, arrays, meta)


def load_consistency(cls, path):
    """The model of class `cls` written to `path` by `save_consistency`.

    Every field is checked (type, shape, finiteness, range): an edited or damaged file is a
    ValueError that names the file and the field.

    Raises
    ------
    ValueError
        The file is damaged, is not a consistency model, or has another format version.
    """
    from ._consistency_predict import neighbour_index
    from ._seeds import best_by_n_clusters

    data, meta = read_model_file(path, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION,
                                 kind="model")
    criterion = meta.get("criterion_", "omega")  # files before the criterion: Omega's
    if criterion not in ("omega", "stability"):
        raise ValueError(f"{path} is damaged: criterion_ = {criterion!r}.")
    params = meta.get("params")
    if isinstance(params, dict):
        params = dict(params)
        for key in ("sigma_grid", "alpha_grid"):
            if isinstance(params.get(key), list):
                params[key] = tuple(params[key])
        params.setdefault("criterion", "omega")  # refitting reproduces an older file's fit
    if criterion == "stability":
        return _load_stability(cls, data, {**meta, "params": params}, path)
    reads_u = (meta.get("params") or {}).get("kernel", "consistency") == "consistency"
    needed = (*FITTED_ARRAYS, "predict_H", "degrees") if reads_u else FITTED_ARRAYS
    missing = [k for k in needed if k not in data]
    if missing:
        raise ValueError(f"{path} is damaged: arrays {missing} are missing.")
    model = make_from_params(cls, params, path)
    c = file_value(meta, "n_clusters_", path, kind="int", low=1)
    labels = file_array(data, "labels_", path, kind="int", ndim=1)
    n = labels.shape[0]
    if labels.size and (labels.min() < -1 or labels.max() >= c):
        raise ValueError(f"{path} is damaged: labels_ holds values outside -1..{c - 1}.")
    model.labels_ = labels
    model.representatives_ = file_array(data, "representatives_", path, kind="int", shape=(c,))
    model.inlierness_ = file_array(data, "inlierness_", path, shape=(n,))
    model.cluster_inlierness_ = file_array(data, "cluster_inlierness_", path, shape=(n,),
                                           finite=False)
    model.between_ = file_array(data, "between_", path, shape=(c, c), finite=False)
    model.omega_ = file_array(data, "omega_", path, ndim=3, finite=False)
    model.omega_valid_ = file_array(data, "omega_valid_", path, kind="bool",
                                    shape=model.omega_.shape)
    shape = model.omega_.shape
    model.omega_sigmas_ = file_array(data, "omega_sigmas_", path, shape=(shape[0],),
                                     finite=False)
    model.omega_alphas_ = file_array(data, "omega_alphas_", path, shape=(shape[1],),
                                     finite=False)
    model.omega_n_clusters_ = file_array(data, "omega_n_clusters_", path, kind="int",
                                         shape=(shape[2],))
    alpha = file_value(meta, "alpha_", path, allow_none=True)
    if alpha is not None and not 0 < alpha < 1:
        raise ValueError(f"{path} is damaged: alpha_ = {alpha} is outside (0, 1).")
    sigma = file_value(meta, "sigma_", path, allow_none=True)
    if sigma is not None and not sigma > 0:
        raise ValueError(f"{path} is damaged: sigma_ = {sigma} is not > 0.")
    model.n_clusters_, model.alpha_, model.sigma_ = c, alpha, sigma
    model.kernel_method_ = file_value(meta, "kernel_method_", path, kind="str")
    fit_kind = file_value(meta, "fit_kind", path, kind="str")
    if fit_kind not in ("array", "graph", "precomputed"):
        raise ValueError(f"{path} is damaged: fit_kind = {fit_kind!r}.")
    model._fit_kind = fit_kind
    model.criterion_ = "omega"
    reads_u = model.kernel == "consistency"
    model._predict_H = file_array(data, "predict_H", path, shape=(n, c), required=reads_u)
    model._degrees = file_array(data, "degrees", path, shape=(n,), required=reads_u)
    # files written before predict had outlier scores load without them (predict says so)
    model._outlier_r = file_array(data, "outlier_r", path, shape=(n,), required=False)
    model._outlier_ref = file_array(data, "outlier_ref", path, shape=(n,), required=False)
    if (model._outlier_r is None) != (model._outlier_ref is None) or (
            model._outlier_ref is not None and np.any(np.diff(model._outlier_ref) < 0)):
        raise ValueError(f"{path} is damaged: outlier_r / outlier_ref are incomplete or "
                         f"outlier_ref is not sorted.")
    n_features = file_value(meta, "n_features_in_", path, kind="int", allow_none=True, low=1)
    model._X_fit = file_array(data, "X_fit", path, shape=(n, n_features), required=False)
    if (fit_kind == "array") != (model._X_fit is not None):
        raise ValueError(f"{path} is damaged: a model fitted on {fit_kind} input "
                         f"{'needs' if fit_kind == 'array' else 'has no'} training points.")
    if n_features is not None:
        model.n_features_in_ = n_features
    if model.sigma_ is None and fit_kind == "array" and reads_u:
        raise ValueError(f"{path} is damaged: sigma_ is null for a model fitted on points.")
    model._nn = neighbour_index(model._X_fit) if reads_u else None
    model.omega_by_n_clusters_ = best_by_n_clusters(model.omega_, model.omega_valid_,
                                                    model.omega_n_clusters_)
    return model


def _load_stability(cls, data, meta, path):
    from ._consistency_criterion import load_stability

    model = make_from_params(cls, meta.get("params"), path)
    load_stability(model, data, path)
    model._fit_kind = "array"
    c = file_value(meta, "n_clusters_", path, kind="int", low=1)
    labels = file_array(data, "labels_", path, kind="int", ndim=1)
    if c != model.n_clusters_ or not np.array_equal(labels, model.labels_):
        raise ValueError(f"{path} is damaged: its labels_ / n_clusters_ differ from those of "
                         f"its embedded stability model.")
    return model
