"""`scripts/bench_model_selection.py`'s battery sets: loading, expansion and noise-free scores."""

import gzip

import numpy as np
import pytest
from conftest import load_script


@pytest.fixture(scope="module")
def bench():
    return load_script("bench_model_selection")


def _write(folder, name, X, labels):
    folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(folder / f"{name}.data.gz", "wt") as f:
        np.savetxt(f, X)
    with gzip.open(folder / f"{name}.labels0.gz", "wt") as f:
        np.savetxt(f, labels, fmt="%d")


@pytest.fixture
def battery(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    _write(tmp_path / "toy", "blobs", rng.normal(size=(6, 2)), [1, 1, 2, 2, 0, 2])
    _write(tmp_path / "toy", "line", rng.normal(size=(4, 1)), [1, 2, 1, 2])
    # a data file without labels is not a set of the battery
    (tmp_path / "toy" / "unlabelled.data.gz").write_bytes(gzip.compress(b"1 2\n"))
    monkeypatch.setenv("GRAPHCLUST_BATTERY", str(tmp_path))
    return tmp_path


def test_folder_expands_to_its_labelled_sets(bench, battery):
    assert bench.expand_sets(["battery:toy", "usps"]) == [
        "battery:toy/blobs", "battery:toy/line", "usps"]
    assert bench.expand_sets(["battery:toy/line"]) == ["battery:toy/line"]


def test_labels_shift_and_noise_is_minus_one(bench, battery):
    X, y, metric = bench.load("battery:toy/blobs")
    assert X.shape == (6, 2) and metric == "euclidean"
    np.testing.assert_array_equal(y, [0, 0, 1, 1, -1, 1])
    assert bench.true_c(y) == 2
    X, _, _ = bench.load("battery:toy/line")
    assert X.shape == (4, 1)  # one column stays a 2-D array


def test_noise_points_are_not_scored(bench, battery, monkeypatch):
    X, y, metric = bench.load("battery:toy/blobs")
    # right on every scored point, a third cluster on the noise point
    found = np.array([5, 5, 7, 7, 9, 7])
    monkeypatch.setattr(bench, "fit_labels", lambda *a, **k: (found, 0.1, {}))
    row = bench.run("stability", X, y, metric, None)
    assert row["nmi"] == pytest.approx(1.0) and row["ari"] == pytest.approx(1.0)
    assert row["c"] == 3
    # a mistake on a scored point counts
    found = np.array([5, 7, 7, 7, 9, 7])
    assert bench.run("stability", X, y, metric, None)["ari"] < 1.0


def test_missing_battery_says_what_to_set(bench, monkeypatch):
    monkeypatch.delenv("GRAPHCLUST_BATTERY", raising=False)
    with pytest.raises(SystemExit, match="GRAPHCLUST_BATTERY"):
        bench.load("battery:uci/wine")


def test_make_blobs_sets_expand_to_a_development_grid_and_a_check_grid_apart(bench):
    dev, check = bench.expand_sets(["blobs"]), bench.expand_sets(["blobs-check"])
    assert len(dev) == len(check) == 30 and dev[0] == "blobs:10000:3:0"
    assert {s.split(":")[3] for s in dev} == set("01234")
    assert {s.split(":")[3] for s in check} == set("56789")  # the seeds kept apart
    X, y, metric = bench.load("blobs:300:4:7")
    assert X.shape == (300, 2) and metric == "euclidean" and bench.true_c(y) == 4
    # scikit-learn's own draw, so a user's make_blobs call gives the same points
    from sklearn.datasets import make_blobs
    np.testing.assert_array_equal(X, make_blobs(300, centers=4, n_features=2, random_state=7)[0])
    lab, _, _ = bench.fit_labels("gmm_at_c", X, y, metric, (None, None, 0.0))
    assert lab.shape == (300,) and np.unique(lab).size == 4


def test_toy_sets_are_scikit_learns_draws_standardised(bench):
    sets = bench.expand_sets(["toys"])
    assert len(sets) == 120 and len(set(sets)) == 120
    assert {s.split(":")[1] for s in sets} == {"moons", "circles"}
    X, y, metric = bench.load("toys:circles:400:0.08:3")
    assert X.shape == (400, 2) and metric == "euclidean" and bench.true_c(y) == 2
    from sklearn.datasets import make_circles
    from sklearn.preprocessing import StandardScaler
    raw = make_circles(400, factor=0.5, noise=0.08, random_state=3)[0]
    np.testing.assert_allclose(X, StandardScaler().fit_transform(raw))
    np.testing.assert_allclose(X.mean(axis=0), 0, atol=1e-12)
    with pytest.raises(SystemExit, match="moons or circles"):
        bench.load("toys:blobs:400:0.08:3")


def test_n_neighbors_of_the_stability_fits(bench, monkeypatch):
    monkeypatch.setattr(bench, "N_NEIGHBORS", None)
    assert bench.stability_params(312) == {}  # the estimator's default
    monkeypatch.setattr(bench, "N_NEIGHBORS", 8)
    assert bench.stability_params(312) == {"n_neighbors": 8}
    monkeypatch.setattr(bench, "N_NEIGHBORS", "ln")
    # ceil(ln n) between 5 and 10: 120 -> 5, 312 -> 6, 8 000 -> 9, 10^6 -> 10
    assert [bench.stability_params(n)["n_neighbors"] for n in (20, 120, 312, 8000, 10**6)] == [
        5, 5, 6, 9, 10]
