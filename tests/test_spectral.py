"""SpectralClustering (NJW): dense reference, components, affinities, determinism, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs, make_moons
from sklearn.exceptions import NotFittedError

import graphclust as gc
from graphclust.cluster._spectral_reference import njw_reference
from graphclust.metrics import nmi
from _spectral_helpers import assert_is_partition, sin_theta


pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _row_gram(E):
    """E E^T of a row-normalised embedding: the cosines between points' embeddings.

    It does not depend on the basis chosen inside the eigenspace (row normalisation commutes
    with a rotation on the right: unit(U Q) = unit(U) Q, and Q Q^T = I), so two embeddings of
    the same subspace have the same row Gram matrix whatever their signs or rotations.
    """
    return E @ E.T


def _unit_rows(U):
    return U / np.sqrt((U * U).sum(axis=1))[:, None]


@pytest.mark.parametrize("solver", ["dense", "eigsh"])
def test_njw_matches_dense_reference(solver):
    X, y = make_blobs(600, centers=[[0, 0], [4, 0], [2, 3.5]], cluster_std=1.0, random_state=0)
    W = gc.affinity(gc.knn_graph(X, 10))
    labels, U, vals = njw_reference(W, 3, random_state=0)
    model = gc.SpectralClustering(
        3, affinity="precomputed", eigen_solver=solver, random_state=0
    ).fit(W)
    np.testing.assert_allclose(model.eigenvalues_, vals, atol=1e-8)
    # the solver's own embedding (model.embedding_, rows normalised) against the reference's
    # eigenvectors with rows normalised, compared as subspaces: the row Gram matrices agree to
    # 1e-6 entrywise (cosines in [-1, 1]; eigen tolerance 1e-8, spectral gap lambda_4 - lambda_3
    # far above it on this graph), and the column spaces to sin(theta) < 1e-6.
    E = model.embedding_
    assert E.shape == U.shape
    np.testing.assert_allclose(_row_gram(E), _row_gram(_unit_rows(U)), atol=1e-6)
    assert sin_theta(_unit_rows(U), E) < 1e-6
    assert nmi(labels, model.labels_) == 1.0


def test_two_moons_complete_graph():
    X, y = make_moons(200, noise=0.05, random_state=0)
    model = gc.SpectralClustering(2, sigma=0.1, n_neighbors="all", random_state=0).fit(X)
    assert_is_partition(model.labels_, 200, 2)
    assert nmi(y, model.labels_) == 1.0


def test_disconnected_components_give_exact_indicator_embedding():
    X = np.vstack([np.random.default_rng(0).normal(c, 0.3, (40, 2)) for c in (0, 20, 40)])
    model = gc.SpectralClustering(3, n_neighbors=5, random_state=0).fit(X)
    assert model.n_components_ == 3
    np.testing.assert_allclose(model.eigenvalues_, 0, atol=1e-12)
    assert nmi(np.repeat([0, 1, 2], 40), model.labels_) == 1.0
    # more components than clusters: all component vectors are kept, k-means merges them
    with pytest.warns(UserWarning, match="3 connected components, more than n_clusters = 2"):
        model2 = gc.SpectralClustering(2, n_neighbors=5, random_state=0).fit(X)
    assert model2.embedding_.shape == (120, 3)
    assert_is_partition(model2.labels_, 120, 2)


def test_local_scaling_and_graph_input():
    X, y = make_blobs(300, centers=3, cluster_std=[0.3, 1.0, 2.0], random_state=3)
    g = gc.knn_graph(X, 10)
    a = gc.SpectralClustering(3, affinity="local", random_state=0).fit(X)
    b = gc.SpectralClustering(3, affinity="local", random_state=0).fit(g)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert nmi(y, a.labels_) > 0.8


def test_seeded_determinism():
    X, _ = make_blobs(2000, centers=5, cluster_std=2.0, random_state=1)
    a = gc.SpectralClustering(5, random_state=4).fit_predict(X)
    b = gc.SpectralClustering(5, random_state=4).fit_predict(X)
    np.testing.assert_array_equal(a, b)


def test_bad_input():
    X, _ = make_blobs(40, random_state=0)
    with pytest.raises(ValueError, match="n_clusters must satisfy 1 <= n_clusters <= n_samples = 40"):
        gc.SpectralClustering(41).fit(X)
    with pytest.raises(ValueError, match="'sigma' parameter of SpectralClustering must be"):
        gc.SpectralClustering(2, sigma=-1.0).fit(X)
    with pytest.raises(ValueError, match="'affinity' parameter of SpectralClustering must be"):
        gc.SpectralClustering(2, affinity="rbf").fit(X)
    with pytest.raises(ValueError, match="n_neighbors must be < n_samples = 40"):
        gc.SpectralClustering(2, n_neighbors=40).fit(X)
    with pytest.raises(ValueError, match="sigma has no effect with affinity='precomputed'"):
        gc.SpectralClustering(2, sigma=1.0, affinity="precomputed").fit(np.eye(3))
    with pytest.raises(TypeError, match="scipy sparse X is read as data points only with affinity='cosine'"):
        gc.SpectralClustering(2).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="must be symmetric"):
        gc.SpectralClustering(2, affinity="precomputed").fit(np.triu(np.ones((5, 5)), 1))
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="NaN or infinite"):
        gc.SpectralClustering(2).fit(Xn)
    with pytest.raises(ValueError, match="at least 2 samples"):
        gc.SpectralClustering(1).fit(np.zeros((1, 2)))


# ---------------------------------------------------------------- predict, save / load, verbose
# (both estimators: they share these code paths in _SpectralBase)
ESTIMATORS = {
    "njw": lambda k, **kw: gc.SpectralClustering(k, random_state=0, **kw),
    "ahk": lambda k, **kw: gc.AHKClustering(k, random_state=0, **kw),
}


def _moons():
    return make_moons(400, noise=0.05, random_state=0)


def _blobs():
    return make_blobs(600, centers=[[0, 0], [4, 0], [2, 3.5]], cluster_std=1.0, random_state=0)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize(
    ("data", "k", "params"),
    [(_blobs, 3, {}), (_moons, 2, {}), (_blobs, 3, {"affinity": "local"}),
     (_moons, 2, {"affinity": "binary"}), (_moons, 2, {"n_neighbors": "all", "sigma": 0.1})],
    ids=["blobs", "moons", "blobs-local", "moons-binary", "moons-complete-graph"],
)
def test_predict_on_training_points_reproduces_labels(name, data, k, params):
    X, _ = data()
    model = ESTIMATORS[name](k, **params).fit(X)
    agree = np.mean(model.predict(X) == model.labels_)
    assert agree >= 0.99, agree


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize(("spread", "n_neighbors", "n_components"), [(0.5, 10, 3), (1.2, 40, 1)],
                         ids=["disconnected-graph", "connected-graph"])
def test_held_out_points_of_separated_blobs_are_all_correct(name, spread, n_neighbors,
                                                            n_components):
    centers = [[0, 0], [8, 0], [4, 7]]
    X, y = make_blobs(400, centers=centers, cluster_std=spread, random_state=1)
    train, test = slice(0, 300), slice(300, 400)
    model = ESTIMATORS[name](3, n_neighbors=n_neighbors).fit(X[train])
    assert nmi(y[train], model.labels_) == 1.0
    to_label = {c: model.labels_[y[train] == c][0] for c in range(3)}
    expected = np.array([to_label[c] for c in y[test]])
    np.testing.assert_array_equal(model.predict(X[test]), expected)
    assert model.n_components_ == n_components


def _nystrom_njw_dense(model, X_train, X_new):
    """Dense NJW Nystrom: phi(x) = (s_x . phi) / (1 - lambda), s_xj = w_xj / sqrt(d_x d_j)."""
    W = model.affinity_matrix_.toarray()
    d = W.sum(axis=1)
    mu, Phi = np.linalg.eigh(W / np.sqrt(np.outer(d, d)))
    mu, Phi = mu[::-1][: model.n_clusters], Phi[:, ::-1][:, : model.n_clusters]
    D2 = ((X_new[:, None, :] - X_train[None, :, :]) ** 2).sum(axis=2)
    Wx = np.zeros_like(D2)
    for r, row in enumerate(D2):
        nearest = np.argsort(row)[: model.n_neighbors]
        Wx[r, nearest] = np.exp(-row[nearest] / (2 * model.sigma_**2))
    Sx = Wx / np.sqrt(np.outer(Wx.sum(axis=1), d))
    return Phi, (Sx @ Phi) / mu


def _row_normalised_aligned(Phi_train, E_new, embedding):
    """Row-normalise E_new with column signs chosen so Phi_train matches the model's embedding."""
    signs = np.sign(np.sum(Phi_train * embedding, axis=0))
    E = E_new * signs
    return E / np.linalg.norm(E, axis=1, keepdims=True)


def test_njw_nystrom_matches_dense_formula():
    X, _ = make_blobs(90, centers=3, cluster_std=1.2, random_state=2)
    X_new = np.random.default_rng(3).uniform(X.min(0), X.max(0), size=(25, 2))
    model = gc.SpectralClustering(3, n_neighbors=8, eigen_solver="dense", random_state=0).fit(X)
    assert model.n_components_ == 1
    Phi, E_ref = _nystrom_njw_dense(model, X, X_new)
    E, _, undefined = model._nystrom(X_new)
    assert not undefined.any()
    np.testing.assert_allclose(E, _row_normalised_aligned(Phi, E_ref, model.embedding_), atol=1e-8)
    C = model.cluster_centers_
    expected = np.argmin(((E[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_array_equal(model.predict(X_new), expected)


def test_cosine_model_predicts_sparse_rows():
    rng = np.random.default_rng(0)
    counts = rng.poisson(0.3, (120, 60)).astype(float)
    counts[:60, :25] += rng.poisson(1.5, (60, 25))
    counts[60:, 35:] += rng.poisson(1.5, (60, 25))
    X = sp.csr_matrix(counts)
    model = gc.SpectralClustering(2, affinity="cosine", n_neighbors=8, random_state=0).fit(X)
    labels = model.predict(X)
    assert np.mean(labels == model.labels_) >= 0.99
    np.testing.assert_array_equal(model.predict(counts), labels)  # dense rows, same answer


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_predict_errors_say_what_to_do(name):
    X, _ = make_blobs(60, centers=2, random_state=0)
    est = ESTIMATORS[name](2)
    cls = type(est).__name__
    with pytest.raises(NotFittedError):
        est.predict(X)
    est.fit(X)
    with pytest.raises(ValueError, match=f"X has 3 features, but {cls} is expecting 2 features"):
        est.predict(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="Reshape your data"):
        est.predict(X[0])
    with pytest.raises(TypeError, match="pass a dense array"):
        est.predict(sp.csr_matrix(X))
    g = ESTIMATORS[name](2).fit(gc.knn_graph(X, 10))
    with pytest.raises(ValueError, match="fitted on a Graph.*fit it on the data array"):
        g.predict(X)
    assert not hasattr(g, "n_features_in_")
    W = gc.affinity(gc.knn_graph(X, 10))
    p = ESTIMATORS[name](2, affinity="precomputed").fit(W)
    with pytest.raises(ValueError, match="affinity='precomputed'.*fit it on the data array"):
        p.predict(X)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_point_whose_affinities_underflow_takes_its_nearest_training_label(name):
    X, _ = make_blobs(80, centers=[[0, 0], [5, 5]], cluster_std=0.5, random_state=0)
    model = ESTIMATORS[name](2, sigma=0.2).fit(X)
    far = np.array([[40.0, 40.0], [-40.0, -40.0]])
    _, nearest, undefined = model._nystrom(far)
    assert undefined.all()
    np.testing.assert_array_equal(model.predict(far), model.labels_[nearest])
    assert set(model.labels_[nearest]) == {0, 1}  # the two far points are near different blobs


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("affinity", ["gaussian", "local", "cosine"])
def test_save_load_round_trip_gives_identical_predict(name, affinity, tmp_path):
    X, _ = _blobs()
    X = X + 10.0 if affinity == "cosine" else X  # away from the origin: distinct directions
    model = ESTIMATORS[name](3, affinity=affinity).fit(X)
    path = model.save(tmp_path / "model.npz")
    back = type(model).load(path)
    X_new = np.random.default_rng(0).normal(X.mean(axis=0), X.std(axis=0), size=(200, 2))
    np.testing.assert_array_equal(back.predict(X_new), model.predict(X_new))
    np.testing.assert_array_equal(back._nystrom(X_new)[0], model._nystrom(X_new)[0])
    np.testing.assert_array_equal(back.labels_, model.labels_)
    np.testing.assert_array_equal(back.embedding_, model.embedding_)
    assert back.get_params() == model.get_params()
    assert (back.sigma_, back.inertia_, back.n_features_in_) == (
        model.sigma_, model.inertia_, model.n_features_in_)
    assert not hasattr(back, "affinity_matrix_")  # the n x n operator is not stored


def test_save_load_sparse_cosine_and_graph_fitted_models(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(0.5, (80, 30)).astype(float) + sp.eye(80, 30) * 3)
    model = gc.AHKClustering(2, affinity="cosine", n_neighbors=8, random_state=0).fit(X)
    back = gc.AHKClustering.load(model.save(tmp_path / "cos.npz"))
    np.testing.assert_array_equal(back.predict(X), model.predict(X))
    Xb, _ = make_blobs(60, centers=2, random_state=0)
    g = gc.SpectralClustering(2, random_state=0).fit(gc.knn_graph(Xb, 10))
    gb = gc.SpectralClustering.load(g.save(tmp_path / "graph.npz"))
    np.testing.assert_array_equal(gb.labels_, g.labels_)
    with pytest.raises(ValueError, match="fitted on a Graph"):
        gb.predict(Xb)


def test_load_refuses_damaged_foreign_and_other_version_files(tmp_path):
    from graphclust._persistence import write_model_file

    X, _ = make_blobs(60, centers=2, random_state=0)
    model = gc.SpectralClustering(2, random_state=0).fit(X)
    good = model.save(tmp_path / "njw.npz")
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(good.read_bytes()[:200])
    with pytest.raises(ValueError, match="damaged.npz is damaged or not a graphclust model file"):
        gc.SpectralClustering.load(damaged)
    with pytest.raises(ValueError, match=r"is not a graphclust.AHKClustering file \(format="
                                         r"'graphclust.SpectralClustering'\)"):
        gc.AHKClustering.load(good)
    consistency = gc.ConsistencyClustering(2, alpha=0.99, sigma=1.0, random_state=0).fit(X)
    with pytest.raises(ValueError, match="format='graphclust.ConsistencyClustering'"):
        gc.SpectralClustering.load(consistency.save(tmp_path / "cc.npz"))
    meta = {"format": "graphclust.SpectralClustering", "format_version": 99}
    write_model_file(tmp_path / "v99.npz", {"labels_": np.zeros(3)}, meta)
    with pytest.raises(ValueError, match="format version 99; this graphclust reads version 1"):
        gc.SpectralClustering.load(tmp_path / "v99.npz")
    meta["format_version"] = 1
    write_model_file(tmp_path / "partial.npz", {"labels_": np.zeros(3)}, meta)
    with pytest.raises(ValueError, match=r"partial.npz is damaged: arrays \['embedding_'"):
        gc.SpectralClustering.load(tmp_path / "partial.npz")
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["labels_"] = arrays["labels_"][:-1]
    import json

    meta = json.loads(bytes(arrays.pop("meta_json")).decode())
    write_model_file(tmp_path / "shapes.npz", arrays, meta)
    with pytest.raises(ValueError, match="shapes.npz is damaged: its arrays have inconsistent"):
        gc.SpectralClustering.load(tmp_path / "shapes.npz")
    with pytest.raises(NotFittedError):
        gc.SpectralClustering(2).save(tmp_path / "unfitted.npz")
    assert not (tmp_path / "unfitted.npz").exists()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_verbose_reports_each_stage_and_is_silent_by_default(name, capsys):
    X, _ = make_blobs(100, centers=2, random_state=0)
    ESTIMATORS[name](2).fit(X)
    assert capsys.readouterr().err == ""
    model = ESTIMATORS[name](2, verbose=True).fit(X)
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert lines[0].startswith("graphclust: 10-NN graph of 100 points and gaussian affinities ...")
    assert "eigenpairs" in err and "graphclust: k-means (10 restarts) ... done in " in err
    assert all(line.startswith("graphclust: ") for line in lines)
    assert sum(" done in " in line for line in lines) == len(model.timings_) - (name == "njw")
    with pytest.raises(ValueError, match="'verbose' parameter of"):
        ESTIMATORS[name](2, verbose="yes").fit(X)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_row_permutation_of_integer_data_permutes_the_labels(name):
    # digits' 0-16 pixels tie many distances; the exact kNN search breaks them in the rows'
    # own order (`graphclust.graphs.canonical_order`), so the graph follows the rows (NJW: ARI
    # 0.973 when the search broke ties by row number); k-means++ draws its starts by row
    # number, and runs in the graph's own node order (AHK: one point of 1 797 moved before)
    from sklearn.datasets import load_digits

    X = load_digits().data
    perm = np.random.default_rng(0).permutation(len(X))
    a = ESTIMATORS[name](10).fit(X)
    b = ESTIMATORS[name](10).fit(X[perm])
    assert np.array_equal(a.labels_[perm], b.labels_)  # the names too: the same k-means
    c = ESTIMATORS[name](10, affinity="precomputed").fit(a.affinity_matrix_[perm][:, perm])
    assert np.array_equal(c.labels_, b.labels_)


def test_njw_labels_follow_a_permutation_of_the_graph():
    from sklearn.datasets import load_digits

    W = gc.SpectralClustering(10, random_state=0).fit(load_digits().data).affinity_matrix_
    perm = np.random.default_rng(1).permutation(W.shape[0])
    a = gc.cluster.njw_labels(W, 10, random_state=0)
    b = gc.cluster.njw_labels(W[perm][:, perm], 10, random_state=0)
    assert np.array_equal(a[perm], b)
