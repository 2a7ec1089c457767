"""`load_infinite_mnist`: determinism, prefix property, labels, deformations, cache, bad input."""

import numpy as np
import pytest

from graphclust.datasets import cache_dir, load_infinite_mnist, load_mnist
from graphclust.datasets import _infinite_mnist as im

N = 72_000  # the 70 000 originals and 2 000 deformed copies


@pytest.fixture
def tmp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCLUST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_cache_dir_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GRAPHCLUST_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    monkeypatch.delenv("GRAPHCLUST_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if im.sys.platform.startswith("linux"):
        assert cache_dir() == tmp_path / "xdg" / "graphclust"


def test_shapes_labels_determinism_and_cache(shared_data, tmp_cache):
    X, y = load_infinite_mnist(N, 50, random_state=0)
    assert X.shape == (N, 50) and X.dtype == np.float32 and y.shape == (N,) and y.dtype == np.int64
    assert np.isfinite(X).all()
    _, y0 = load_mnist()
    np.testing.assert_array_equal(y[:70_000], y0)
    np.testing.assert_array_equal(y[70_000:], y0[:2_000])  # copies carry their original's digit
    files = list(tmp_cache.glob("infinite_mnist_v1_*n72000.npz"))
    assert len(files) == 1 and "d50_seed0" in files[0].name
    # cache hit: same numbers, and a fresh generation (cache=False) agrees with the cached file
    X2, y2 = load_infinite_mnist(N, 50, random_state=0)
    np.testing.assert_array_equal(X, X2)
    X3, _ = load_infinite_mnist(N, 50, random_state=0, cache=False)
    np.testing.assert_array_equal(X, X3)
    # prefix property, served by slicing the larger cached file
    X4, y4 = load_infinite_mnist(71_000, 50, random_state=0)
    np.testing.assert_array_equal(X4, X[:71_000])
    np.testing.assert_array_equal(y4, y[:71_000])
    assert not list(tmp_cache.glob("*n71000.npz"))
    # another seed: same originals, different copies
    X5, _ = load_infinite_mnist(N, 50, random_state=1, cache=False)
    np.testing.assert_array_equal(X5[:70_000], X[:70_000])
    assert np.abs(X5[70_000:] - X[70_000:]).max() > 0.1


def test_copies_are_small_deformations(shared_data, tmp_cache):
    X, y = load_infinite_mnist(N, 50, random_state=0, cache=False)
    copies, originals = X[70_000:], X[:2_000]
    own = np.linalg.norm(copies - originals, axis=1)
    other = np.linalg.norm(copies - np.roll(originals, 1, axis=0), axis=1)
    assert np.median(own) < 0.8 * np.median(other)  # nearer their own original than to another
    assert np.median(own) > 0.5  # but genuinely moved
    # PCA of the originals: centred, variance in decreasing order
    assert np.abs(X[:70_000].mean(axis=0)).max() < 1e-3
    assert np.all(np.diff(X[:70_000].var(axis=0)) <= 1e-6)


def test_deform_identity_and_integer_shift():
    rng = np.random.default_rng(0)
    img = np.zeros((2, 784))
    img[:, 28 * 10 + 5: 28 * 10 + 20] = rng.uniform(size=15)
    np.testing.assert_allclose(im._deform(img, np.zeros(2), np.zeros((2, 2))), img)
    shifted = im._deform(img, np.zeros(2), np.array([[1.0, 0.0], [0.0, -2.0]]))
    np.testing.assert_allclose(shifted[0].reshape(28, 28), np.roll(img[0].reshape(28, 28), 1, 0))
    np.testing.assert_allclose(shifted[1].reshape(28, 28), np.roll(img[1].reshape(28, 28), -2, 1))


def test_deformations_are_blockwise_seeded():
    a1, s1 = im._deformations(0, 25_000, 3, 2.0, 10.0)
    a2, s2 = im._deformations(9_990, 20_010, 3, 2.0, 10.0)
    np.testing.assert_array_equal(a1[9_990:20_010], a2)
    np.testing.assert_array_equal(s1[9_990:20_010], s2)
    assert np.abs(a1).max() <= 10.0 and np.abs(s1).max() <= 2.0


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"n_samples": 0}, ValueError, "n_samples must satisfy 1 <= n_samples"),
        ({"n_samples": 2.5}, TypeError, "n_samples must be an integer"),
        ({"n_components": 785}, ValueError, "n_components must satisfy"),
        ({"random_state": None}, TypeError, "random_state must be a non-negative int"),
        ({"random_state": -1}, ValueError, "random_state must satisfy 0 <= random_state"),
        ({"max_shift": -1.0}, ValueError, "max_shift"),
        ({"max_rotation": float("nan")}, ValueError, "max_rotation must be finite"),
        ({"cache": "yes"}, TypeError, "cache must be True or False"),
    ],
)
def test_bad_input_is_refused_before_work(kwargs, err, match, tmp_cache):
    with pytest.raises(err, match=match):
        load_infinite_mnist(**kwargs)
    assert not tmp_cache.exists()
