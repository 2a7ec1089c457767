"""`predict` over a dask array, model files, and fit-on-a-sample-then-extend."""

from __future__ import annotations

import json
import numbers
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from sklearn.utils import get_tags

from .._validation import check_int, check_random_state
from ._gates import _as_dask, _block_position, _check_block, _known_rows

#: estimators (and the pipeline) whose model files `load_model` reads, by their file format name
_MODEL_CLASSES = ("ConsistencyClustering", "SpectralClustering", "AHKClustering",
                  "StabilityClustering", "LatentClassClustering",
                  "MultinomialMixtureClustering", "Pipeline")
#: the keyword of ``model.predict`` that also returns a per-point score
_SCORE_KEYWORDS = ("return_confidence", "return_outlier_score")


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
    from .. import cluster, pipeline

    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(bytes(z["meta_json"]).decode("utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"no model file {str(path)!r}: give a fitted estimator or the "
                                f"path of a file its save() wrote.") from None
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
    # a model whose scikit-learn tags allow NaN reads it as a missing value
    _check_block(block, loc, rows, allow_nan=_reads_nan(model))
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


def _reads_nan(model):
    """Whether the model's scikit-learn tags allow NaN (`LatentClassClustering`)."""
    try:
        return bool(get_tags(model).input_tags.allow_nan)
    except (AttributeError, TypeError):  # not a scikit-learn estimator
        return False


def predict(model, X, *, return_confidence=False, return_outlier_score=False, tau=None,
            n_clusters=None):
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
    tau, n_clusters : optional
        (`StabilityClustering` only) place the points in that level of the scan, as
        ``model.predict(block, tau=..., n_clusters=...)`` does; checked before any block.

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
    if tau is not None or n_clusters is not None:
        model = _at_level(model, tau, n_clusters)
    return _predict_graph(model, X, score, None)


def _at_level(model, tau, n_clusters):
    """A shallow copy of a fitted `StabilityClustering` whose clusters are a level of its scan.

    ``copy.predict(X)`` is ``model.predict(X, tau=tau, n_clusters=n_clusters)`` (the same
    vote over that level's training labels); the level is read once, on the client.
    """
    import copy

    from ..cluster import StabilityClustering

    if not isinstance(model, StabilityClustering):
        raise ValueError(f"tau / n_clusters choose a level of StabilityClustering's scan; got a "
                         f"{type(model).__name__} (for ConsistencyClustering(criterion="
                         f"'stability'), pass its stability_).")
    level = copy.copy(model)
    level.labels_ = model.labels_at(tau=tau, n_clusters=n_clusters)
    level.n_clusters_ = int(level.labels_.max()) + 1
    return level


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
