"""Model files written by graphclust before the layout change (format version 1) still load and
predict as they did. The files in tests/data were written by the commit before it (6c72e8e) on
the 60 points of v1_points.npy (two blobs)."""

from pathlib import Path

import numpy as np
import pytest

import graphclust as gc

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def points():
    return np.load(DATA / "v1_points.npy")


@pytest.mark.parametrize("name,cls", [
    ("v1_consistency.npz", gc.ConsistencyClustering),
    ("v1_spectral.npz", gc.SpectralClustering),
    ("v1_ahk.npz", gc.AHKClustering),
    ("v1_pipeline_seeds.npz", gc.Pipeline),
    ("v1_pipeline_ahk.npz", gc.Pipeline),
])
def test_old_files_load_and_predict_their_labels(name, cls, points):
    model = cls.load(DATA / name)
    labels = np.asarray(model.labels_)
    assert sorted(np.unique(labels)) == [0, 1]
    assert (labels[:30] == labels[0]).all() and (labels[30:] == labels[30]).all()
    np.testing.assert_array_equal(model.predict(points + 0.01), labels)


def test_old_consistency_files_load_as_the_papers_omega_fit(points):
    # written before ConsistencyClustering had `criterion`: Omega fitted them, and a refit of
    # the loaded parameters must fit Omega again (not the newer default, Markov stability)
    model = gc.ConsistencyClustering.load(DATA / "v1_consistency.npz")
    assert model.criterion_ == "omega" and model.criterion == "omega"
    assert model.omega_.ndim == 3 and model.sigma_ > 0
    refit = type(model)(**model.get_params())
    assert refit.fit(points).criterion_ == "omega"
    pipe = gc.Pipeline.load(DATA / "v1_pipeline_seeds.npz")
    assert pipe.estimator_.criterion_ == "omega"


def test_old_consistency_files_refuse_the_outlier_score_with_a_message(points):
    # written before predict had an outlier score under Omega: labels still predict, the score
    # needs the training points' inlierness reference, which a refit computes
    model = gc.ConsistencyClustering.load(DATA / "v1_consistency.npz")
    np.testing.assert_array_equal(model.predict(points), model.labels_)
    with pytest.raises(ValueError, match="predates outlier scores.*refit"):
        model.predict(points, return_outlier_score=True)


def test_model_bytes_round_trip_in_memory_and_name_the_damage():
    """A model embedded in another model's file is written and read without temporary files."""
    from graphclust._persistence import model_bytes, read_model_bytes

    arrays = {"labels": np.arange(5), "x": np.linspace(0, 1, 3)}
    meta = {"format": "graphclust.Test", "format_version": 1, "n": 5}
    blob = model_bytes(arrays, meta)
    assert blob.dtype == np.uint8 and blob.ndim == 1
    data, back = read_model_bytes(blob, "inner", fmt="graphclust.Test", version=1, kind="model")
    assert back == meta
    np.testing.assert_array_equal(data["labels"], arrays["labels"])
    np.testing.assert_array_equal(data["x"], arrays["x"])
    with pytest.raises(ValueError, match="inner is damaged"):
        read_model_bytes(blob[:40], "inner", fmt="graphclust.Test", version=1, kind="model")
    with pytest.raises(ValueError, match="format version"):
        read_model_bytes(blob, "inner", fmt="graphclust.Test", version=2, kind="model")


def test_old_ahk_files_keep_their_truncated_kernel():
    # written when n_eigenpairs="auto" meant m = min(n - n_components, 100): a refit of the
    # loaded parameters must fit that truncated kernel again, not the newer full kernel
    model = gc.AHKClustering.load(DATA / "v1_ahk.npz")
    assert model.n_eigenpairs == model.n_eigenpairs_ and isinstance(model.n_eigenpairs, int)
    assert model._ext_kind == "nystrom"
