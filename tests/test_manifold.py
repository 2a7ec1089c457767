"""isomap(): exact vs dense reference, landmark vs exact, residual variance, bad input."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.spatial.distance import pdist, squareform

import graphclust as gc
from graphclust.datasets import ellipse_geodesics, noisy_ellipse, swiss_roll, swiss_roll_geodesics
from graphclust.manifold import geodesic_distances, isomap, residual_variance


def _complete_graph(X):
    D = squareform(pdist(X))
    return gc.Graph.from_sparse(sp.csr_matrix(D))


def _procrustes_error(A, B):
    """Relative Frobenius error of B against A after the best rotation/reflection (both centred)."""
    A = A - A.mean(0)
    B = B - B.mean(0)
    U, _, Vt = np.linalg.svd(B.T @ A)
    return np.linalg.norm(B @ U @ Vt - A) / np.linalg.norm(A)


def _dense_isomap(G, k):
    """Textbook classical MDS with numpy only (the reference)."""
    n = G.shape[0]
    J = np.eye(n) - np.ones((n, n)) / n
    B = -0.5 * J @ (G**2) @ J
    w, V = np.linalg.eigh(B)
    idx = np.argsort(w)[::-1][:k]
    return V[:, idx] * np.sqrt(w[idx])


def test_exact_isomap_matches_dense_reference():
    X, _ = swiss_roll(150, noise="low", random_state=0)
    g = gc.knn_graph(X, 8)
    res = isomap(g, 2)
    G = geodesic_distances(g)
    ref = _dense_isomap(G, 2)
    assert _procrustes_error(ref, res.embedding) < 1e-8
    iu = np.triu_indices(150, 1)
    DY = squareform(pdist(ref))
    assert res.residual_variance == pytest.approx(residual_variance(G[iu], DY[iu]), abs=1e-10)
    assert res.landmarks is None and np.array_equal(res.nodes, np.arange(150))


def test_euclidean_geodesics_recovered_exactly():
    # complete graph: geodesics are Euclidean distances, Isomap = PCA, residual variance 0
    X = np.random.default_rng(0).normal(size=(60, 2)) @ np.array([[3.0, 0.5], [0.0, 1.0]])
    res = isomap(_complete_graph(X), 2)
    assert _procrustes_error(X, res.embedding) < 1e-10
    assert res.residual_variance < 1e-12


@pytest.mark.parametrize("landmarks", ["maxmin", "random"])
def test_landmarks_exact_when_geodesics_are_euclidean(landmarks):
    # de Silva & Tenenbaum triangulation is exact for Euclidean distances of rank <= k
    X = np.random.default_rng(1).normal(size=(200, 2))
    g = _complete_graph(X)
    full = isomap(g, 2, n_landmarks=None)
    lm = isomap(g, 2, n_landmarks=20, landmarks=landmarks, random_state=0)
    assert lm.landmarks.shape == (20,)
    assert _procrustes_error(full.embedding, lm.embedding) < 1e-8
    assert lm.residual_variance < 1e-12


def test_landmarks_close_to_exact_on_swiss_roll():
    X, coords = swiss_roll(800, noise="low", random_state=2)
    g = gc.knn_graph(X, 6)  # k = 8 already short-cuts between branches of this sample
    full = isomap(g, 2, n_landmarks=None)
    lm = isomap(g, 2, n_landmarks=100, random_state=0)
    # stated tolerance: 5% relative Procrustes error with 100 of 800 points as landmarks
    assert _procrustes_error(full.embedding, lm.embedding) < 0.05
    assert abs(full.residual_variance - lm.residual_variance) < 0.02
    # and the embedding unrolls the roll: close to the true manifold coordinates
    assert _procrustes_error(coords, full.embedding) < 0.2
    assert full.residual_variance < 0.01


def test_auto_switches_to_landmarks(monkeypatch):
    import graphclust.manifold as m

    monkeypatch.setattr(m, "FULL_MDS_MAX_SAMPLES", 100)
    monkeypatch.setattr(m, "DEFAULT_N_LANDMARKS", 30)
    X, _ = swiss_roll(300, random_state=0)
    res = isomap(gc.knn_graph(X, 8), 2, random_state=0)
    assert res.landmarks.shape == (30,) and res.embedding.shape == (300, 2)
    again = isomap(gc.knn_graph(X, 8), 2, random_state=0)
    assert np.array_equal(res.embedding, again.embedding)


def test_true_geodesics_helpers():
    G = ellipse_geodesics(np.array([0.0, np.pi]), axes=(1.0, 1.0))
    assert G[0, 1] == pytest.approx(np.pi, rel=1e-6)
    X, arc = noisy_ellipse(50, noise="none", axes=(1.0, 1.0), random_state=0)
    ang = np.mod(np.arctan2(X[:, 1], X[:, 0]), 2 * np.pi)
    assert np.allclose(arc, ang, atol=1e-6)
    _, coords = swiss_roll(10, random_state=0)
    assert swiss_roll_geodesics(coords).shape == (10, 10)
    with pytest.raises(ValueError, match="noise must be one of"):
        swiss_roll(10, noise="medium")


def test_disconnected_graph():
    X = np.vstack([np.random.default_rng(0).normal(size=(40, 2)), 100 + np.random.default_rng(1).normal(size=(25, 2))])
    g = gc.knn_graph(X, 5)
    assert g.n_components == 2
    with pytest.raises(ValueError, match="disconnected \\(2 components of sizes 40, 25\\)"):
        isomap(g)
    with pytest.warns(UserWarning, match="largest component only \\(40 of 65"):
        res = isomap(g, disconnected="largest")
    assert res.embedding.shape == (40, 2) and np.array_equal(res.nodes, np.arange(40))


def test_bad_input():
    with pytest.raises(TypeError, match="graphclust Graph"):
        isomap(np.zeros((5, 2)))
    with pytest.raises(ValueError, match="no edges"):
        isomap(gc.Graph(sp.csr_matrix((4, 4))))
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="n_components must satisfy"):
        isomap(gc.knn_graph(X, 3), 10)
    with pytest.raises(ValueError, match="landmarks must be one of"):
        isomap(gc.knn_graph(X, 3), landmarks="kmeans")
    with pytest.raises(ValueError, match="n_landmarks must satisfy"):
        isomap(gc.knn_graph(X, 3), 2, n_landmarks=2)


def _scipy_geodesics(g):
    """Shortest paths by scipy on the graph's own edge lengths (not graphclust's solver)."""
    from scipy.sparse.csgraph import shortest_path

    return shortest_path(sp.csr_matrix(g.distances), method="D", directed=False)


@pytest.mark.parametrize("kind", ["pmst", "dmst"])
def test_ensemble_graphs_match_scipy_geodesics_and_numpy_mds(kind):
    # ensemble graphs carry multiplicities; Isomap binarises them and uses the edge lengths:
    # the embedding must be scipy's shortest paths + classical MDS in numpy, to rounding
    X, _ = noisy_ellipse(100, random_state=0)
    if kind == "pmst":
        g = gc.pmst_graph(X, 20, 0.4, candidates="all", random_state=0)
        assert np.ptp(g.multiplicity.data) > 0  # a real ensemble: unequal multiplicities
    else:
        g = gc.dmst_graph(X, 3, candidates="all")
    res = isomap(g, 2)
    G = _scipy_geodesics(g)
    ref = _dense_isomap(G, 2)
    assert _procrustes_error(ref, res.embedding) < 1e-8
    iu = np.triu_indices(100, 1)
    DY = squareform(pdist(ref))
    assert res.residual_variance == pytest.approx(residual_variance(G[iu], DY[iu]), abs=1e-10)


def test_cli_embed(tmp_path, capsys):
    from graphclust.cli import main

    X, _ = swiss_roll(200, noise="low", random_state=0)
    np.save(tmp_path / "x.npy", X)
    out = tmp_path / "y.csv"
    assert main(["embed", str(tmp_path / "x.npy"), "--graph", "knn", "--param", "7",
                 "--output", str(out)]) == 0
    assert "residual variance" in capsys.readouterr().out
    Y = np.loadtxt(out, delimiter=",")
    assert Y.shape == (200, 2)
    # the values: Isomap of the 7-NN graph built independently (scikit-learn's neighbours,
    # scipy's shortest paths, classical MDS in numpy), to rounding of the CSV text
    from sklearn.neighbors import kneighbors_graph
    from scipy.sparse.csgraph import shortest_path

    G = shortest_path(kneighbors_graph(X, 7, mode="distance"), method="D", directed=False)
    assert np.isfinite(G).all()
    assert _procrustes_error(_dense_isomap(G, 2), Y) < 1e-8
    assert main(["embed", str(tmp_path / "x.npy"), "--graph", "epsilon", "--param", "0.5"]) == 1
    assert "disconnected" in capsys.readouterr().err


def test_duplicate_points_zero_length_edges():
    # explicit zero-length edges are edges: duplicates are connected and embedded together
    # (widening gaps: each point's one neighbour is the previous one, with no tie to break)
    X = np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [3.0, 0.0], [6.0, 0.1]])
    g = gc.knn_graph(X, 1)
    G = geodesic_distances(g)
    assert np.isfinite(G).all() and G[0, 1] == 0.0
    res = isomap(g, 1)
    assert res.embedding[0, 0] == pytest.approx(res.embedding[1, 0], abs=1e-12)
