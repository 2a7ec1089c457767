"""graphclust.plots: what each picture shows is checked on the matplotlib artists."""

import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import graphclust as gc  # noqa: E402
from graphclust import plots  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 0.3, (30, 2)), rng.normal(3, 0.3, (30, 2)), [[1.5, 6.0]]])
    return X


@pytest.fixture(scope="module")
def model(data):
    return gc.Pipeline(gc.KNNGraph(6), gc.ConsistencyStage(sigma_grid=(0.5, 1.0),
                                                          alpha_grid=(0.99, 0.999)),
                       gc.ConsistencySeeds(max_clusters=3), random_state=0).fit(data)


def test_plot_clusters_shows_labels_inlierness_representatives_outliers(data, model, tmp_path):
    fig = plots.plot_clusters(data, model, n_outliers=3, path=tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    points, stars, circles = fig.axes[0].collections
    np.testing.assert_allclose(points.get_offsets(), data)
    np.testing.assert_array_equal(points.get_array(), model.labels_)
    sizes = points.get_sizes()
    order = np.argsort(model.inlierness_)
    assert np.all(np.diff(sizes[order]) >= -1e-12)  # area grows with inlierness
    assert sizes.min() == pytest.approx(4.0) and sizes.max() == pytest.approx(64.0)
    np.testing.assert_allclose(stars.get_offsets(), data[model.representatives_])
    np.testing.assert_allclose(circles.get_offsets(), data[model.outliers(3)])
    assert model.outliers(1)[0] == len(data) - 1  # the isolated point is circled


def test_plot_clusters_projects_high_dimensional_data(model, data):
    X = np.column_stack([data, np.zeros(len(data)), data[:, 0] - data[:, 1]])
    fig = plots.plot_clusters(X, model)
    assert fig.axes[0].get_xlabel() == "principal component 1"
    P = np.asarray(fig.axes[0].collections[0].get_offsets())
    # X has rank 2, so its projection on the first two principal components loses nothing:
    # the projected points have exactly the centred points' inner products (P P^T = Xc Xc^T)
    Xc = X - X.mean(0)
    np.testing.assert_allclose(P @ P.T, Xc @ Xc.T, atol=1e-9)
    # and the values are scikit-learn's PCA scores, column by column up to a sign
    from sklearn.decomposition import PCA

    ref = PCA(2, svd_solver="full").fit_transform(X)
    signs = np.sign((P * ref).sum(axis=0))
    np.testing.assert_allclose(P * signs, ref, atol=1e-9)


def test_plot_clusters_projection_is_pca_on_full_rank_data(model, data):
    # 4 independent columns: the plot shows the top-2 principal component scores
    rng = np.random.default_rng(5)
    X = np.column_stack([data, rng.normal(size=(len(data), 2)) * [0.5, 0.1]])
    P = np.asarray(plots.plot_clusters(X, model).axes[0].collections[0].get_offsets())
    from sklearn.decomposition import PCA

    ref = PCA(2, svd_solver="full").fit_transform(X)
    signs = np.sign((P * ref).sum(axis=0))
    np.testing.assert_allclose(P * signs, ref, atol=1e-9)


def test_plot_clusters_errors(data, model):
    with pytest.raises(ValueError, match="X has 10 points but the model has 61 labels"):
        plots.plot_clusters(data[:10], model)
    with pytest.raises(ValueError, match="call fit first"):
        plots.plot_clusters(data, gc.Pipeline())


def test_plot_omega_panels_hold_the_surface(model):
    fig = plots.plot_omega(model)
    panels = [ax for ax in fig.axes if ax.images]
    assert len(panels) == len(model.omega_n_clusters_)
    for i, ax in enumerate(panels):
        np.testing.assert_allclose(np.ma.filled(ax.images[0].get_array(), np.nan),
                                   model.omega_[:, :, i], equal_nan=True)
    chosen = [ax for ax in panels if "(chosen)" in ax.get_title()]
    assert len(chosen) == 1 and chosen[0].get_title() == f"c = {model.n_clusters_} (chosen)"
    box = chosen[0].patches[0]
    si = int(np.argmin(np.abs(model.omega_sigmas_ - model.sigma_)))
    ai = int(np.argmin(np.abs(model.omega_alphas_ - model.alpha_)))
    assert box.get_xy() == (ai - 0.5, si - 0.5)


def test_plot_omega_for_ahk_seeds_and_refusal_for_kmeans(data):
    ahk = gc.Pipeline(gc.KNNGraph(6), gc.AHKStage(sigma="auto", sigma_grid=(0.5, 1.0)),
                      gc.ConsistencySeeds(max_clusters=3), random_state=0).fit(data)
    fig = plots.plot_omega(ahk)
    assert sum(1 for ax in fig.axes if ax.images) == 2
    km = gc.Pipeline(gc.KNNGraph(6), gc.NJWStage(), gc.SpectralKMeans(2)).fit(data)
    with pytest.raises(ValueError, match="has no omega_"):
        plots.plot_omega(km)


def test_plot_ranked_outliers(model):
    fig = plots.plot_ranked_outliers(model, n_outliers=4)
    curve, marks = fig.axes[0].lines
    np.testing.assert_allclose(curve.get_ydata(), np.sort(model.inlierness_))
    np.testing.assert_allclose(marks.get_ydata(), model.inlierness_[model.outliers(4)])
    fig = plots.plot_ranked_outliers(model, within_cluster=True)
    assert fig.axes[0].get_ylabel() == "within-cluster inlierness"


def test_gallery_rows_are_representative_then_worst_outliers(model, data):
    rows = plots.cluster_gallery_indices(model, n_outliers=3)
    assert len(rows) == model.n_clusters_
    for j, row in enumerate(rows):
        assert row[0] == model.representatives_[j]
        assert np.all(model.labels_[row] == j)
        cin = model.cluster_inlierness_[row[1:]]
        assert np.all(np.diff(cin) >= 0)
        others = np.setdiff1d(np.flatnonzero(model.labels_ == j), row)
        if others.size:
            assert cin.max() <= model.cluster_inlierness_[others].min()
    # the isolated point is a cluster of its own: its row is the representative alone
    assert sorted(len(r) for r in rows) == [1, 4, 4]
    images = np.arange(len(data) * 16, dtype=float).reshape(len(data), 16)
    fig = plots.plot_cluster_gallery(model, images, n_outliers=3)
    grid = np.array(fig.axes).reshape(model.n_clusters_, 4)
    for j, row in enumerate(rows):
        for c, i in enumerate(row):
            np.testing.assert_array_equal(grid[j, c].images[0].get_array(),
                                          images[i].reshape(4, 4))
        for c in range(len(row), 4):
            assert not grid[j, c].images and not grid[j, c].axison  # blank cell


def test_gallery_errors(model, data):
    with pytest.raises(ValueError, match="not a square number: give image_shape"):
        plots.plot_cluster_gallery(model, np.zeros((len(data), 12)))
    with pytest.raises(ValueError, match="images has 5 rows but the model has 61 points"):
        plots.plot_cluster_gallery(model, np.zeros((5, 16)))
    fig = plots.plot_cluster_gallery(model, np.zeros((len(data), 12)), image_shape=(3, 4))
    assert fig.axes[0].images[0].get_array().shape == (3, 4)
    km = gc.Pipeline(gc.KNNGraph(6), gc.NJWStage(), gc.SpectralKMeans(2)).fit(data)
    with pytest.raises(ValueError, match="representatives_"):
        plots.plot_cluster_gallery(km, np.zeros((len(data), 16)))


def test_plot_segmentation_overlay(tmp_path):
    from graphclust.plots import overlay

    image = np.zeros((12, 16))
    image[3:9, 4:12] = 1.0
    labels = (image > 0.5).astype(int)
    fig = plots.plot_segmentation(image, labels)
    np.testing.assert_array_equal(fig.axes[0].images[0].get_array(), overlay(image, labels))


def test_missing_matplotlib_names_the_extra(monkeypatch, model, data):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    for call in (lambda: plots.plot_clusters(data, model), lambda: plots.plot_omega(model),
                 lambda: plots.plot_ranked_outliers(model),
                 lambda: plots.plot_segmentation(np.zeros((2, 2)), np.zeros((2, 2), int))):
        with pytest.raises(ImportError, match=r"pip install graphclust\[plot\]"):
            call()
