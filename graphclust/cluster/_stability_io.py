"""Model files of `StabilityClustering`: one .npz of arrays + JSON metadata, no pickle.

Format ``graphclust.StabilityClustering`` version 1: the constructor parameters, the chosen
values, the labels, pieces, representatives, local scales, training scores, kNN lists and
training points `predict` needs, and the scan (``scan_*``). Fields added later (the kNN lists,
the null model's, the gap test's and the dip test's values, the fit's row order
``fit_order`` in which the training points and lists are stored, the ``noise`` mask of the
points left out as a background of noise) are optional: older files load without them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._persistence import (file_array, file_value, jsonable, make_from_params,
                            read_model_file, write_model_file)
from ._latent_classes import LatentClassClustering, latent_class_from_arrays, latent_class_payload
from ._multinomial_mixture import MODEL_FORMAT as MULTINOMIAL_FORMAT
from ._multinomial_mixture import (MultinomialMixtureClustering, multinomial_from_arrays,
                                   multinomial_payload)
from ._stability_tables import LATENT_RULE, adopt_latent_classes

__all__ = ["MODEL_FORMAT", "MODEL_FORMAT_VERSION", "StabilityFiles", "scan_record",
           "stability_payload", "stability_from_payload"]

MODEL_FORMAT = "graphclust.StabilityClustering"
MODEL_FORMAT_VERSION = 1


def scan_record(scan):
    """``(scan_, metastability_, fine_labels_)`` of a fitted model from a scan
    (`markov_stability_scan`): the arrays a model keeps and saves of its hierarchy."""
    q = {j: qv for (j, _, qv) in scan.get("q_table", [])}
    record = {
        "taus": np.asarray(scan["taus"], dtype=np.float64),
        "alphas": np.asarray(scan["alphas"], dtype=np.float64),
        "n_clusters": np.asarray(scan["c"], dtype=np.int64),
        "stability": np.asarray(scan["r"], dtype=np.float64),
        "vi": np.asarray(scan["vi"], dtype=np.float64),
        "vi_next": np.asarray(scan.get("vi_next", []), dtype=np.float64),
        "consensus_n_clusters": np.asarray(scan["consensus_c"], dtype=np.int64),
        "consensus_stability": np.asarray(scan["consensus_r"], dtype=np.float64),
        "spread": np.asarray(scan.get("spread", []), dtype=np.float64),
        "metastability": np.array([q.get(j, np.nan) for j in range(len(scan["taus"]))]),
        # piece -> cluster per tau, and the pieces' flows: the whole hierarchy for
        # `labels_at`, P ints and P x P floats per tau
        "groups": np.array([np.asarray(g, dtype=np.int64)
                            for g in scan["consensus_groups"]]).reshape(len(scan["taus"]), -1),
        "flows": np.array(scan["flows"], dtype=np.float64),
        "piece_mass": np.asarray(scan["piece_mass"], dtype=np.float64),
    }
    finite = [v for v in q.values() if np.isfinite(v) and v > -1e2]
    return (record, float(max(finite)) if finite else None,
            np.asarray(scan["pieces"], dtype=np.int64))


class StabilityFiles:
    """`StabilityClustering`'s model files."""

    def save(self, path):
        """Write the fitted model to `path` (.npz of arrays + JSON metadata, no pickle)."""
        return write_model_file(path, *self._file_payload())

    def _file_payload(self):
        """``(arrays, meta)`` of the model file (also embedded whole in other models' files)."""
        return stability_payload(self)

    @classmethod
    def load(cls, path):
        """Read a model written by `save`; a damaged file is a ValueError naming the field."""
        data, meta = read_model_file(path, fmt=MODEL_FORMAT, version=MODEL_FORMAT_VERSION,
                                     kind="model")
        return cls._from_file_payload(data, meta, path)

    @classmethod
    def _from_file_payload(cls, data, meta, path):
        """The model of `_file_payload`'s ``(arrays, meta)``; `path` names it in errors."""
        return stability_from_payload(cls, data, meta, path)


def stability_payload(model):
    """``(arrays, meta)`` of a fitted model's file (also embedded whole in other models'
    files)."""
    if not hasattr(model, "labels_"):
        from sklearn.exceptions import NotFittedError

        raise NotFittedError("This StabilityClustering instance is not fitted yet.")
    if getattr(model, "latent_classes_", None) is not None:  # a binary table's: no graph
        payload = (multinomial_payload if isinstance(model.latent_classes_,
                                                     MultinomialMixtureClustering)
                   else latent_class_payload)
        arrays, inner = payload(model.latent_classes_, prefix="latent_")
        return arrays, {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
                        "params": jsonable(model.get_params()), "rule": LATENT_RULE,
                        "n_clusters": model.n_clusters_, "latent_classes": inner,
                        "n_features_in": int(model.n_features_in_)}
    arrays = {"labels": model.labels_, "fine_labels": model.fine_labels_,
              "representatives": model.representatives_, "rho": model.rho_,
              "sigma": model.sigma_, "training_scores": model.training_scores_,
              "knn_lists": model._knn_lists, "noise": model.noise_}
    if getattr(model, "_fit_order", None) is not None:
        arrays["fit_order"] = model._fit_order
    Xf = model._X_fit
    if sp.issparse(Xf):
        Xf = sp.csr_matrix(Xf)
        arrays.update({"X_fit_data": Xf.data, "X_fit_indices": Xf.indices.astype(np.int64),
                       "X_fit_indptr": Xf.indptr.astype(np.int64)})
    else:
        arrays["X_fit"] = np.asarray(Xf)
    arrays.update({f"scan_{k}": v for k, v in model.scan_.items()})
    meta = {"format": MODEL_FORMAT, "format_version": MODEL_FORMAT_VERSION,
            "params": jsonable(model.get_params()), "n_clusters": model.n_clusters_,
            "tau": model.tau_, "alpha": model.alpha_, "rule": model.selection_rule_,
            "metastability": model.metastability_, "scale": float(model._scale),
            "intrinsic_dimension": model.intrinsic_dimension_,
            "escape_time": model.escape_time_, "null_escape_time": model.null_escape_time_,
            "gap_ratio": model.gap_ratio_, "null_gap_ratio": model.null_gap_ratio_,
            "dip": getattr(model, "dip_", None),
            "dip_pvalue": getattr(model, "dip_pvalue_", None),
            "density_exponent": getattr(model, "density_exponent_", None),
            "support_agreement": getattr(model, "support_agreement_", None),
            "cluster_splits": [{"size": int(r["size"]), "component": bool(r["component"]),
                                "rule": str(r["rule"]),
                                "tau": None if r["tau"] is None else float(r["tau"]),
                                "c": int(r["c"])}
                               for r in getattr(model, "cluster_splits_", [])],
            "n_features_in": int(model.n_features_in_)}
    return arrays, meta


def stability_from_payload(cls, data, meta, path):
    """The `cls` model of `stability_payload`'s ``(arrays, meta)``; `path` names it in errors."""
    model = make_from_params(cls, meta.get("params"), path)
    if meta.get("rule") == LATENT_RULE:
        return _latent_from_payload(model, data, meta, path)
    model.latent_classes_ = None
    labels = file_array(data, "labels", path, kind="int", ndim=1)
    n = labels.size
    model.labels_ = labels
    model.n_clusters_ = file_value(meta, "n_clusters", path, kind="int", low=1)
    if labels.min() < 0 or labels.max() >= model.n_clusters_:
        raise ValueError(f"{path} is damaged: labels outside 0..n_clusters - 1.")
    model.fine_labels_ = file_array(data, "fine_labels", path, kind="int", shape=(n,))
    model.representatives_ = file_array(data, "representatives", path, kind="int",
                                        shape=(model.n_clusters_,))
    model.rho_ = file_array(data, "rho", path, shape=(n,))
    model.sigma_ = file_array(data, "sigma", path, shape=(n,))
    # the fitted points: one per distinct row (equal rows are one point of the fit); files
    # without fit_order fitted every row, in the rows' order
    order = file_array(data, "fit_order", path, kind="int", ndim=1, required=False)
    m = n if order is None else order.size
    if not 1 <= m <= n:
        raise ValueError(f"{path} is damaged: fit_order holds {m} points for {n} labels.")
    model.training_scores_ = file_array(data, "training_scores", path, shape=(m,))
    model.n_features_in_ = file_value(meta, "n_features_in", path, kind="int", low=1)
    if "X_fit_data" in data:
        parts = [file_array(data, f"X_fit_{k}", path, kind=kind, ndim=1)
                 for k, kind in (("data", "float"), ("indices", "int"), ("indptr", "int"))]
        try:
            model._X_fit = sp.csr_matrix(tuple(parts), shape=(m, model.n_features_in_))
            model._X_fit.check_format(full_check=True)
        except ValueError as err:
            raise ValueError(f"{path} is damaged: its training points are not a valid "
                             f"sparse matrix ({err}).") from err
    else:
        model._X_fit = file_array(data, "X_fit", path, ndim=2,
                                  shape=(m, model.n_features_in_))
    model.tau_ = file_value(meta, "tau", path, allow_none=True)
    model.alpha_ = file_value(meta, "alpha", path, allow_none=True)
    model.selection_rule_ = file_value(meta, "rule", path, kind="str")
    model.metastability_ = file_value(meta, "metastability", path, allow_none=True)
    for name in ("intrinsic_dimension", "escape_time", "null_escape_time", "gap_ratio",
                 "null_gap_ratio", "dip", "dip_pvalue", "density_exponent", "support_agreement"):
        setattr(model, name + "_", file_value(meta, name, path, allow_none=True)
                if name in meta else None)
    model.cluster_splits_ = _cluster_splits(meta, path)
    noise = file_array(data, "noise", path, kind="bool", shape=(n,), required=False)
    # older files: no background left out
    model.noise_ = np.zeros(n, dtype=bool) if noise is None else np.asarray(noise, dtype=bool)
    model._scale = file_value(meta, "scale", path, low=0)
    if "knn_lists" in data:  # absent from older files: exact search
        lists = file_array(data, "knn_lists", path, kind="int", ndim=2)
        if lists.shape[0] != m or lists.size and (lists.min() < 0 or lists.max() >= m):
            raise ValueError(f"{path} is damaged: knn_lists is not {m} lists of training "
                             "point indices.")
        model._knn_lists = lists
    if order is not None and (order.min() < 0 or order.max() >= n
                              or np.unique(order).size != m):
        raise ValueError(f"{path} is damaged: fit_order is not {m} distinct rows of the "
                         f"{n} training points.")
    model._fit_order = order
    model.scan_ = {k[5:]: data[k] for k in data if k.startswith("scan_")}
    model._index()
    return model


def _cluster_splits(meta, path):
    """The records of `cluster_splits_` in a file's `meta`. Files written before clusters
    beyond the scan's horizon were examined hold only whole components' records, under the
    key "component_splits"; files before that hold none."""
    keys = {"size", "component", "rule", "tau", "c"}
    if "cluster_splits" in meta:
        splits, name = meta["cluster_splits"], "cluster_splits"
    else:
        splits, name = meta.get("component_splits", []), "component_splits"
        keys = keys - {"component"}
    if not (isinstance(splits, list) and all(isinstance(r, dict) and set(r) == keys
                                             for r in splits)):
        raise ValueError(f"{path} is damaged: {name} is not a list of records with the keys "
                         f"{', '.join(sorted(keys))}.")
    return [dict(r, component=r.get("component", True)) for r in splits]


def _latent_from_payload(model, data, meta, path):
    """`stability_from_payload` of a binary table's latent class fit."""
    inner = meta.get("latent_classes")
    if not isinstance(inner, dict):
        raise ValueError(f"{path} is damaged: a latent class fit needs its latent_classes "
                         f"metadata.")
    counts = inner.get("format") == MULTINOMIAL_FORMAT  # word counts, not a binary table
    cls, read = ((MultinomialMixtureClustering, multinomial_from_arrays) if counts
                 else (LatentClassClustering, latent_class_from_arrays))
    lca = read(make_from_params(cls, inner.get("params"), path), data, inner, path,
               prefix="latent_")
    adopt_latent_classes(model, lca)
    model.n_features_in_ = file_value(meta, "n_features_in", path, kind="int", low=1)
    if lca.n_features_in_ != model.n_features_in_:
        raise ValueError(f"{path} is damaged: a model of {lca.n_features_in_} features for "
                         f"{model.n_features_in_} features.")
    return model
