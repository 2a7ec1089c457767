"""Model files of `ConsistencyClustering`: one .npz of arrays + JSON metadata, no pickle.

Format ``graphclust.ConsistencyClustering`` version 1: the constructor parameters, the chosen
values, the fitted arrays of `FITTED_ARRAYS`, and the small state `predict` needs (``predict_H``
= S V[:, seeds] with S's rows normalised, the degrees, the training points). Files written
before the ``kernel`` parameter existed load as consistency-kernel models.
"""

from __future__ import annotations

import numpy as np

from .._persistence import read_model_file, write_model_file

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
    if model._X_fit is not None:
        arrays["X_fit"] = model._X_fit
    return write_model_file(path, arrays, meta)


def load_consistency(cls, path):
    """The model of class `cls` written to `path` by `save_consistency`.

    Raises
    ------
    ValueError
        The file is damaged, is not a consistency model, or has another format version.
    """
    from ._consistency_predict import neighbour_index
    from ._seeds import best_by_n_clusters

    data, meta = read_model_file(path, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION,
                                 kind="model")
    params = dict(meta["params"])
    for key in ("sigma_grid", "alpha_grid"):
        if isinstance(params.get(key), list):
            params[key] = tuple(params[key])
    reads_u = params.get("kernel", "consistency") == "consistency"
    needed = (*FITTED_ARRAYS, "predict_H", "degrees") if reads_u else FITTED_ARRAYS
    missing = [k for k in needed if k not in data]
    if missing:
        raise ValueError(f"{path} is damaged: arrays {missing} are missing.")
    model = cls(**params)
    for k in FITTED_ARRAYS:
        setattr(model, k, data[k])
    model.n_clusters_ = int(meta["n_clusters_"])
    model.alpha_ = None if meta["alpha_"] is None else float(meta["alpha_"])
    model.sigma_ = None if meta["sigma_"] is None else float(meta["sigma_"])
    model.kernel_method_ = meta["kernel_method_"]
    model._fit_kind = meta["fit_kind"]
    model._predict_H = data.get("predict_H")
    model._degrees = data.get("degrees")
    model._X_fit = data.get("X_fit")
    model._nn = neighbour_index(model._X_fit, model.n_neighbors) if reads_u else None
    if meta.get("n_features_in_") is not None:
        model.n_features_in_ = int(meta["n_features_in_"])
    n = model.labels_.shape[0]
    consistent = (
        (not reads_u or (model._degrees.shape == (n,)
                         and model._predict_H.shape == (n, model.n_clusters_)))
        and (model._X_fit is None or model._X_fit.shape[0] == n)
    )
    if not consistent:
        raise ValueError(f"{path} is damaged: its arrays have inconsistent shapes.")
    model.omega_by_n_clusters_ = best_by_n_clusters(model.omega_, model.omega_valid_,
                                                    model.omega_n_clusters_)
    return model
