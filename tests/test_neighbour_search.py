"""NeighbourIndex: the graph search behind predict against the exact search (recall with a
stated tolerance), its invariants (determinism on any thread count, components the search
cannot leave, rows completed exactly), bad input, and StabilityClustering's use of it."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

import graphclust as gc
from graphclust.graphs import NeighbourIndex, nearest_neighbors

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def blobs():
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=6.0, size=(8, 12))
    X = centres[rng.integers(8, size=6000)] + rng.normal(size=(6000, 12))
    idx, _ = nearest_neighbors(X, 10, random_state=0)
    Q = centres[rng.integers(8, size=500)] + rng.normal(size=(500, 12))
    return X, idx, Q


def _recall(a, b):
    return np.mean([len(set(r) & set(s)) / len(r) for r, s in zip(a, b)])


def test_graph_search_recall_against_the_exact_search(blobs):
    X, idx, Q = blobs
    de, ie = NearestNeighbors().fit(X).kneighbors(Q, n_neighbors=10)
    dist, found = NeighbourIndex(X, idx, exact_max_samples=0).kneighbors(Q, 10)
    assert _recall(found, ie) >= 0.97
    assert (np.diff(dist, axis=1) >= 0).all()
    # the distances returned are the true distances of the points returned
    np.testing.assert_allclose(dist, np.linalg.norm(Q[:, None] - X[found], axis=2), rtol=1e-12)
    # and never better than the exact k-th neighbour allows
    assert (dist[:, 0] >= de[:, 0] - 1e-12).all()


def test_lists_and_their_graph_give_the_same_search(blobs):
    X, idx, Q = blobs
    n, k = idx.shape
    A = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    ia = NeighbourIndex(X, idx, exact_max_samples=0)
    ib = NeighbourIndex(X, A, exact_max_samples=0)
    np.testing.assert_array_equal(ia.kneighbors(Q, 5)[1], ib.kneighbors(Q, 5)[1])
    # the lists' own pass builds scipy's symmetric pattern of A + A^T (rows sorted)
    np.testing.assert_array_equal(ia._indptr, ib._indptr)
    np.testing.assert_array_equal(ia._indices, ib._indices)
    np.testing.assert_array_equal(ia._pivots, ib._pivots)


def test_lists_with_separate_components_give_scipys_pattern_and_pivots():
    # three far groups (two of them too small for a random pivot to hit) and padded lists
    rng = np.random.default_rng(1)
    X = np.r_[rng.normal(size=(3000, 4)), rng.normal(size=(6, 4)) + 50,
              rng.normal(size=(9, 4)) - 50]
    idx, _ = nearest_neighbors(X, 5, random_state=0)
    n, k = idx.shape
    A = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), idx.ravel())), shape=(n, n))
    A = (A + A.T).tocsr()
    A.setdiag(0)
    A.eliminate_zeros()
    A.sort_indices()
    index = NeighbourIndex(X, idx, exact_max_samples=0)
    np.testing.assert_array_equal(index._indptr, A.indptr)
    np.testing.assert_array_equal(index._indices, A.indices)
    from scipy.sparse.csgraph import connected_components

    _, comp = connected_components(A, directed=False)
    assert np.unique(comp[index._pivots]).size == comp.max() + 1  # every component entered


def test_the_search_is_the_same_on_any_thread_count(blobs):
    X, idx, Q = blobs
    index = NeighbourIndex(X, idx, exact_max_samples=0, random_state=3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = index.kneighbors(Q, 10)
        numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        many = index.kneighbors(Q, 10)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one[1], many[1])
    np.testing.assert_array_equal(one[0], many[0])


def test_a_small_separate_component_is_found(blobs):
    # 15 points far from the rest: a component of the graph that no random pivot may hit
    X, idx, _ = blobs
    rng = np.random.default_rng(5)
    far = 100.0 + rng.normal(size=(15, 12))
    X2 = np.vstack([X, far])
    idx2, _ = nearest_neighbors(X2, 10, random_state=0)
    index = NeighbourIndex(X2, idx2, exact_max_samples=0)
    dist, found = index.kneighbors(far[:3] + 0.01, 10)
    assert (found >= X.shape[0]).all()
    # a component of 15 points and k = 20: the rows are completed by the exact search
    dist, found = index.kneighbors(far[:2] + 0.01, 20)
    de, ie = NearestNeighbors().fit(X2).kneighbors(far[:2] + 0.01, n_neighbors=20)
    np.testing.assert_array_equal(found, ie)


def test_small_or_sparse_training_sets_are_searched_exactly(blobs):
    X, idx, Q = blobs
    index = NeighbourIndex(X, idx)  # 6 000 <= EXACT_INDEX_MAX_SAMPLES
    assert index.exact
    de, ie = NearestNeighbors().fit(X).kneighbors(Q, n_neighbors=4)
    np.testing.assert_array_equal(index.kneighbors(Q, 4)[1], ie)
    assert NeighbourIndex(sp.csr_matrix(X), idx, exact_max_samples=0).exact


@pytest.mark.parametrize("kwargs, match", [
    ({"ef": 0}, "ef must satisfy"),
    ({"n_entry": 0}, "n_entry must satisfy"),
    ({"graph": np.zeros((5, 3), int)}, "graph has 5 rows"),
    ({"graph": np.zeros(6000, int)}, "graph must be a sparse"),
])
def test_bad_input_names_the_parameter(blobs, kwargs, match):
    X, idx, _ = blobs
    kw = {"graph": idx, "exact_max_samples": 0, **kwargs}
    graph = kw.pop("graph")
    with pytest.raises(ValueError, match=match):
        NeighbourIndex(X, graph, **kw)


def test_stability_predict_through_the_graph_search_survives_save_and_load(tmp_path, monkeypatch):
    import graphclust.graphs._search as search

    monkeypatch.setattr(search, "EXACT_INDEX_MAX_SAMPLES", 0)
    X, _ = gc.datasets.three_moons(1200, random_state=0)
    model = gc.StabilityClustering(random_state=0).fit(X)
    assert model._nn._index is None  # built by the first predict, not by fit
    new = X[::7] + 0.01
    labels, score = model.predict(new, return_outlier_score=True)
    assert not model._nn.get().exact
    assert (labels == model.labels_[::7]).mean() >= 0.99
    model.save(tmp_path / "m.npz")
    loaded = gc.StabilityClustering.load(tmp_path / "m.npz")
    assert not loaded._nn.get().exact
    l2, s2 = loaded.predict(new, return_outlier_score=True)
    np.testing.assert_array_equal(l2, labels)
    np.testing.assert_array_equal(s2, score)


def test_stability_predict_index_is_lazy_and_pickles_with_or_without_it():
    import pickle

    X, _ = gc.datasets.three_moons(600, random_state=0)
    model = gc.StabilityClustering(random_state=0).fit(X)
    before = pickle.loads(pickle.dumps(model))  # no index yet
    labels = model.predict(X[:50] + 0.01)
    after = pickle.loads(pickle.dumps(model))  # the built index travels with the model
    assert before._nn._index is None and after._nn._index is not None
    np.testing.assert_array_equal(before.predict(X[:50] + 0.01), labels)
    np.testing.assert_array_equal(after.predict(X[:50] + 0.01), labels)
