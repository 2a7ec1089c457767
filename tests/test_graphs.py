"""Proximity graphs against plain references (brute-force kNN, scipy's dense MST)."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree
from scipy.spatial.distance import cdist, pdist, squareform

import graphclust as gc
from graphclust.graphs import _trees

from invariants import assert_spanning_tree, assert_symmetric, edge_set


def gaussian_points(n, dim, seed=0):
    return np.random.default_rng(seed).normal(size=(n, dim))


def two_blobs(n=200, gap=20.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    X[n // 2 :, 0] += gap
    return X


def brute_knn(X, k, metric="euclidean"):
    D = cdist(X, X, metric=metric)
    np.fill_diagonal(D, np.inf)
    idx = np.argsort(D, axis=1, kind="stable")[:, :k]
    return idx, np.take_along_axis(D, idx, axis=1)


def dense_mst(X):
    T = minimum_spanning_tree(squareform(pdist(X))).tocoo()
    keys = set(zip(np.minimum(T.row, T.col).tolist(), np.maximum(T.row, T.col).tolist()))
    return keys, T.data.sum()


def kruskal_reference(X, total):
    """Plain-python repeated Kruskal over all pairs (the paper's DMST procedure, verbatim)."""
    n = len(X)
    D = squareform(pdist(X))
    edges = sorted((D[i, j], i, j) for i in range(n) for j in range(i + 1, n))
    taken, chosen = set(), []
    while len(chosen) < total:
        parent = list(range(n))

        def find(a):
            while parent[a] != a:
                a = parent[a]
            return a

        tree = 0
        for d, i, j in edges:
            if (i, j) in taken:
                continue
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[ri] = rj
                taken.add((i, j))
                chosen.append((i, j))
                tree += 1
                if tree == n - 1 or len(chosen) == total:
                    break
    return set(chosen)


# ----------------------------------------------------------------------------- kNN
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_knn_exact_matches_brute_force(metric):
    X = gaussian_points(300, 4)
    idx, dist = gc.nearest_neighbors(X, 7, metric=metric, method="exact")
    ref_idx, ref_dist = brute_knn(X, 7, metric)
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-9, atol=1e-12)
    assert (idx == ref_idx).mean() > 0.999


@pytest.mark.parametrize("mode", ["union", "mutual"])
def test_knn_graph_symmetric_and_matches_directed_lists(mode):
    X = gaussian_points(250, 3)
    k = 6
    g = gc.knn_graph(X, k, mode=mode)
    assert_symmetric(g.distances)
    assert_symmetric(g.multiplicity)
    ref_idx, _ = brute_knn(X, k)
    directed = {(i, j) for i in range(len(X)) for j in ref_idx[i]}
    expected = {
        (min(i, j), max(i, j))
        for i, j in directed
        if mode == "union" or (j, i) in directed
    }
    assert edge_set(g) == expected
    D = squareform(pdist(X))
    u, v, d, _ = g.edges()
    np.testing.assert_allclose(d, D[u, v], rtol=1e-12)
    if mode == "union":
        assert g.degrees.min() >= k


def test_knn_graph_sparse_cosine_equals_dense():
    rng = np.random.default_rng(1)
    X = rng.exponential(size=(200, 40)) * (rng.random((200, 40)) < 0.3)  # sparse, no ties
    X[:, 0] += 1  # no all-zero rows
    gd = gc.knn_graph(X, 5, metric="cosine")
    gs = gc.knn_graph(sp.csr_matrix(X), 5, metric="cosine")
    assert edge_set(gd) == edge_set(gs)
    np.testing.assert_allclose(gd.distances.toarray(), gs.distances.toarray(), atol=1e-12)


def test_knn_graph_permutation_invariant():
    X = gaussian_points(200, 3, seed=3)
    perm = np.random.default_rng(0).permutation(200)
    g = gc.knn_graph(X, 5)
    gp = gc.knn_graph(X[perm], 5)
    P = sp.csr_matrix((np.ones(200), (np.arange(200), perm)), shape=(200, 200))
    np.testing.assert_allclose((P @ g.distances @ P.T).toarray(), gp.distances.toarray())


def test_exact_lists_with_tied_distances_follow_a_row_permutation():
    # integer points: many tied distances, broken in the rows' own order, not their numbers
    # (scikit-learn's digits had 62 of 1 797 points with tied 10th and 11th neighbours, and
    # SpectralClustering moved with the row order: ARI 0.973)
    # a grid: distances tie everywhere, and no two points are equal (equal rows have equal
    # keys, so the ties between them keep the input order)
    X = np.stack(np.meshgrid(np.arange(7), np.arange(7), np.arange(8)), -1).reshape(-1, 3)
    X = X.astype(float)
    perm = np.random.default_rng(1).permutation(len(X))
    idx, dist = gc.nearest_neighbors(X, 6, method="exact")
    idx_p, dist_p = gc.nearest_neighbors(X[perm], 6, method="exact")
    assert (dist[:, 5] == dist[:, 4]).any()  # ties in the lists
    np.testing.assert_array_equal(perm[idx_p], idx[perm])
    np.testing.assert_array_equal(dist_p, dist[perm])


def test_duplicate_points_keep_zero_length_edges():
    X = np.repeat(gaussian_points(50, 2), 3, axis=0)  # every point three times
    g = gc.knn_graph(X, 4)
    # each point's two copies are among its neighbours, at distance 0 (stored, not dropped)
    assert (g.distances.data == 0).sum() == 2 * 3 * 50
    edges = edge_set(g)
    assert all((i, i + 1) in edges and (i, i + 2) in edges for i in range(0, 150, 3))
    assert g.distances.nnz == g.multiplicity.nnz
    W = gc.affinity(g, sigma=1.0)
    assert W.nnz == g.distances.nnz and np.isfinite(W.data).all()
    t = gc.mst_graph(X)
    assert_spanning_tree(len(X), *t.edges()[:2])
    assert gc.dmst_graph(X, 2).n_edges == 2 * (len(X) - 1)
    assert gc.pmst_graph(X, n_trees=5, random_state=0).n_components == 1


def test_knn_graph_reports_components_instead_of_joining():
    g = gc.knn_graph(two_blobs(), 5)
    assert g.n_components == 2
    assert np.bincount(g.component_labels).tolist() == [100, 100]


@pytest.mark.data
@pytest.mark.slow
def test_knn_approximate_recall_at_20000_points(shared_data):
    """NN-descent recall against exact search on the 20 000 letters (>= 0.95)."""
    X, _ = gc.datasets.load_letters()
    k = 10
    idx, dist = gc.nearest_neighbors(X, k, method="approximate", random_state=0)
    _, exact = gc.nearest_neighbors(X, k, method="exact")
    # tie-robust recall: an approximate neighbour is correct if it is no farther than the exact
    # k-th neighbour (the letters have many duplicate rows and tied integer distances)
    recall = (dist <= exact[:, -1:] * (1 + 1e-9)).mean()
    assert recall >= 0.95, recall


# ----------------------------------------------------------------------------- epsilon
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_epsilon_graph_matches_brute_force(metric):
    X = gaussian_points(300, 3, seed=2)
    radius = 0.5 if metric == "euclidean" else 0.05
    g = gc.epsilon_graph(X, radius, metric=metric)
    D = cdist(X, X, metric=metric)
    iu, ju = np.triu_indices(len(X), 1)
    expected = {(i, j) for i, j in zip(iu.tolist(), ju.tolist()) if D[i, j] <= radius}
    assert edge_set(g) == expected
    u, v, d, _ = g.edges()
    np.testing.assert_allclose(d, D[u, v], rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- MST family
@pytest.mark.parametrize("dim", [2, 5])
def test_mst_all_pairs_equals_scipy_dense_mst(dim):
    X = gaussian_points(400, dim, seed=dim)
    g = gc.mst_graph(X, candidates="all")
    ref, length = dense_mst(X)
    u, v, d, _ = g.edges()
    assert_spanning_tree(len(X), u, v)
    assert edge_set(g) == ref
    assert d.sum() == pytest.approx(length, rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 5, 10])
def test_mst_knn_candidates_match_exact_at_2000_points(dim):
    X = gaussian_points(2000, dim, seed=10 + dim)
    ref, length = dense_mst(X)
    g = gc.mst_graph(X)  # kNN candidates, k = 10
    u, v, d, _ = g.edges()
    assert_spanning_tree(len(X), u, v)
    assert abs(d.sum() - length) / length < 1e-3
    assert len(edge_set(g) & ref) / len(ref) >= 0.99


def test_mst_joins_components_by_their_shortest_edge():
    X = two_blobs(gap=30.0)
    assert gc.knn_graph(X, 10).n_components == 2
    g = gc.mst_graph(X, n_neighbors=10)
    ref, length = dense_mst(X)
    assert g.n_components == 1
    assert edge_set(g) == ref
    assert g.edges()[2].sum() == pytest.approx(length, rel=1e-12)
    assert g.edges()[2].max() == pytest.approx(cdist(X[:100], X[100:]).min(), rel=1e-12)


def test_dmst_all_pairs_equals_plain_repeated_kruskal():
    X = gaussian_points(60, 2, seed=4)
    for t in (1, 2, 3, 2.5):
        g = gc.dmst_graph(X, t, candidates="all")
        assert edge_set(g) == kruskal_reference(X, int(round(t * 59)))


def test_dmst_trees_are_disjoint_spanning_trees():
    X = gaussian_points(500, 3, seed=5)
    trees = gc.spanning_trees(X, 4, n_neighbors=16)
    assert len(trees) == 4
    seen = set()
    for a, b, d in trees:
        assert_spanning_tree(len(X), a, b)
        keys = set(zip(np.minimum(a, b).tolist(), np.maximum(a, b).tolist()))
        assert not keys & seen, "trees share an edge"
        seen |= keys
    lengths = [d.sum() for _, _, d in trees]
    assert lengths == sorted(lengths), "later trees cannot be shorter than earlier ones"


def test_dmst_fractional_count_of_edges():
    X = gaussian_points(300, 2)
    g = gc.dmst_graph(X, 2.5)
    assert g.n_edges == round(2.5 * 299)
    assert g.provenance["tree_sizes"] == [299, 299, 150]


@pytest.mark.slow
@pytest.mark.parametrize("dim", [2, 5, 10])
def test_dmst_knn_candidates_match_exact_at_2000_points(dim):
    X = gaussian_points(2000, dim, seed=20 + dim)
    exact = edge_set(gc.dmst_graph(X, 3, candidates="all"))
    approx = edge_set(gc.dmst_graph(X, 3))
    assert len(approx) == len(exact) == 3 * 1999
    assert len(approx & exact) / len(exact) >= 0.99


def test_pmst_reproducible_and_well_formed():
    X = gaussian_points(400, 2, seed=6)
    T = 10
    g1 = gc.pmst_graph(X, T, 0.4, random_state=7)
    g2 = gc.pmst_graph(X, T, 0.4, random_state=7)
    g3 = gc.pmst_graph(X, T, 0.4, random_state=8)
    assert (g1.multiplicity != g2.multiplicity).nnz == 0
    assert edge_set(g1) != edge_set(g3)
    e = g1.multiplicity.data
    assert e.min() > 0 and e.max() <= 1
    np.testing.assert_allclose(e * T, np.round(e * T))  # fractions of T trees
    assert g1.n_edges <= T * (len(X) - 1)
    assert g1.n_components == 1
    # every tree spans, so each node's e_ij sum to at least 1
    assert (g1.multiplicity.sum(axis=1) >= 1 - 1e-12).all()
    D = squareform(pdist(X))
    u, v, d, _ = g1.edges()
    np.testing.assert_allclose(d, D[u, v], rtol=1e-12)  # lengths of the unperturbed data


def test_pmst_without_noise_is_the_mst():
    X = gaussian_points(300, 3)
    g = gc.pmst_graph(X, n_trees=3, r=0.0, random_state=0)
    assert edge_set(g) == dense_mst(X)[0]
    assert np.all(g.multiplicity.data == 1.0)


def test_pmst_knn_candidates_close_to_all_pairs_in_2d():
    X = gaussian_points(1000, 2, seed=9)
    exact = gc.pmst_graph(X, candidates="all", random_state=0)
    approx = gc.pmst_graph(X, candidates="knn", n_neighbors=30, random_state=0)
    overlap = approx.multiplicity.minimum(exact.multiplicity).sum()
    union = approx.multiplicity.maximum(exact.multiplicity).sum()
    assert overlap / union >= 0.99


def test_all_pairs_refused_above_limit(monkeypatch):
    monkeypatch.setattr(_trees, "ALL_PAIRS_MAX_SAMPLES", 50)
    with pytest.raises(ValueError, match=r"candidates='all'.*n <= 50.*candidates='knn'"):
        gc.mst_graph(gaussian_points(60, 2), candidates="all")


# ----------------------------------------------------------------------------- grid
@pytest.mark.parametrize("connectivity", [4, 8])
def test_grid_graph_edges_and_lengths(connectivity):
    rng = np.random.default_rng(0)
    img = rng.uniform(size=(7, 9))
    g = gc.grid_graph(img, connectivity, position_weight=0.5, intensity_weight=2.0)
    H, W = img.shape
    expected = H * (W - 1) + (H - 1) * W + (2 * (H - 1) * (W - 1) if connectivity == 8 else 0)
    assert g.n_edges == expected and g.n_components == 1
    # pixel (1, 1) -> (2, 2) is a diagonal edge in the 8-grid only
    a, b = 1 * W + 1, 2 * W + 2
    if connectivity == 8:
        d = np.sqrt(0.25 * 2 + 4.0 * (img[1, 1] - img[2, 2]) ** 2)
        assert g.distances[a, b] == pytest.approx(d)
    else:
        assert g.distances[a, b] == 0 and (a, b) not in edge_set(g)


def test_grid_graph_colour_and_integer_images():
    img = np.zeros((4, 5, 3), dtype=np.uint8)
    img[:, 2:, 0] = 255
    g = gc.grid_graph(img, 4, position_weight=0.0)
    assert set(np.round(g.distances.data, 12)) == {0.0, 1.0}  # red channel jumps 0 -> 1


def test_ensembles_constrained_to_the_grid():
    img = np.random.default_rng(1).uniform(size=(20, 25))
    grid = gc.grid_graph(img)
    F = gc.pixel_features(img)
    for g in (gc.pmst_graph(F, 10, candidates=grid, random_state=0), gc.dmst_graph(F, 2, candidates=grid)):
        assert edge_set(g) <= edge_set(grid)
        assert g.n_components == 1


def test_dmst_never_leaves_an_explicit_candidate_graph():
    """Regression: DMST with t = 4 on the 8-grid used to join its forests with non-grid edges."""
    img = np.random.default_rng(2).uniform(size=(12, 15))
    grid = gc.grid_graph(img)
    F = gc.pixel_features(img)
    with pytest.warns(UserWarning, match="could be found disjointly"):
        g = gc.dmst_graph(F, 4, candidates=grid)
    assert edge_set(g) <= edge_set(grid)
    assert g.n_edges < 4 * (F.shape[0] - 1)


# ----------------------------------------------------------------------------- Graph type
def test_from_sparse_round_trip_and_networkx():
    g = gc.knn_graph(gaussian_points(80, 2), 4)
    h = gc.Graph.from_sparse(g.distances)
    assert edge_set(h) == edge_set(g)
    G = g.to_networkx()
    assert G.number_of_edges() == g.n_edges
    back = gc.Graph.from_networkx(G, weight="multiplicity", distance="distance")
    np.testing.assert_allclose(back.distances.toarray(), g.distances.toarray())


def test_from_sparse_keeps_explicit_zero_edges():
    A = sp.csr_matrix((np.array([0.0, 0.0, 2.0, 2.0]), (np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1]))), shape=(3, 3))
    g = gc.Graph.from_sparse(A)
    assert g.n_edges == 2 and g.n_components == 1


def test_from_networkx_karate_weights():
    G = nx.karate_club_graph()
    g = gc.Graph.from_networkx(G)
    assert (g.n_nodes, g.n_edges) == (34, 78)
    W = gc.affinity(g, kind="multiplicity")
    assert W[0, 1] == G[0][1]["weight"]
    assert gc.affinity(g, kind="binary")[0, 1] == 1.0


@pytest.mark.parametrize(
    "A, match",
    [
        (np.ones((2, 3)), "square"),
        (np.array([[0, 1.0], [2.0, 0]]), "symmetric"),
        (np.array([[0, -1.0], [-1.0, 0]]), "negative"),
        (np.array([[0, np.nan], [np.nan, 0]]), "NaN"),
    ],
)
def test_from_sparse_rejects_bad_adjacency(A, match):
    with pytest.raises(ValueError, match=match):
        gc.Graph.from_sparse(A)


def test_from_sparse_rejects_one_sided_pattern():
    A = sp.csr_matrix((np.array([0.0]), (np.array([0]), np.array([1]))), shape=(2, 2))
    with pytest.raises(ValueError, match="pattern must be symmetric"):
        gc.Graph.from_sparse(A)


# ----------------------------------------------------------------------------- affinity
def test_affinity_kinds():
    X = gaussian_points(100, 2)
    g = gc.knn_graph(X, 5)
    u, v, d, _ = g.edges()
    W = gc.affinity(g, sigma=0.7)
    assert_symmetric(W)
    np.testing.assert_allclose(np.asarray(W[u, v]).ravel(), np.exp(-(d**2) / (2 * 0.49)))
    assert gc.affinity(g).nnz == W.nnz  # default sigma = median edge length
    assert gc.default_sigma(g) == pytest.approx(np.median(d))
    s = gc.local_scales(g, 3)
    L = gc.affinity(g, kind="local", n_neighbors=3)
    np.testing.assert_allclose(np.asarray(L[u, v]).ravel(), np.exp(-(d**2) / (s[u] * s[v])))
    gcos = gc.knn_graph(X + 5, 5, metric="cosine")
    C = gc.affinity(gcos, kind="cosine")
    a, b, _, _ = gcos.edges()
    Xn = (X + 5) / np.linalg.norm(X + 5, axis=1, keepdims=True)
    np.testing.assert_allclose(np.asarray(C[a, b]).ravel(), np.sum(Xn[a] * Xn[b], axis=1), atol=1e-12)
    with pytest.raises(ValueError, match="metric='cosine'"):
        gc.affinity(g, kind="cosine")


def test_affinity_uses_ensemble_weights():
    g = gc.pmst_graph(gaussian_points(200, 2), n_trees=10, random_state=0)
    W = gc.affinity(g, sigma=1e6)  # exp(.) ~ 1: W is e_ij
    np.testing.assert_allclose(W.data, g.multiplicity.data, rtol=1e-9)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: gc.knn_graph(np.array([[0.0, np.nan], [1, 2], [3, 4]]), 1), ValueError, r"X contains 1 NaN.*row 0, column 1"),
        (lambda: gc.knn_graph(np.array([[0.0, np.inf], [1, 2], [3, 4]]), 1), ValueError, "infinite"),
        (lambda: gc.knn_graph(np.empty((0, 2)), 1), ValueError, "0 sample"),
        (lambda: gc.knn_graph(np.ones((1, 2)), 1), ValueError, "1 sample"),
        (lambda: gc.knn_graph(np.arange(5.0), 1), ValueError, r"2-D.*Reshape your data.*reshape\(-1, 1\)"),
        (lambda: gc.knn_graph(np.ones((5, 2)) * 1j, 1), ValueError, "Complex data not supported"),
        (lambda: gc.knn_graph(np.array([["a", 1], [2, 3], [4, 5]], dtype=object), 1), TypeError, "must hold numbers"),
        (lambda: gc.knn_graph(np.ones((5, 0)), 1), ValueError, r"0 feature\(s\) \(shape=\(5, 0\)\)"),
        (lambda: gc.knn_graph(np.ones((5, 2)), 5), ValueError, r"n_neighbors must satisfy 1 <= n_neighbors < 5; got 5"),
        (lambda: gc.knn_graph(np.ones((5, 2)), 2.5), TypeError, "n_neighbors must be an integer"),
        (lambda: gc.knn_graph(np.ones((5, 2)), 2, metric="manhattan"), ValueError, r"metric must be one of 'cosine', 'euclidean'"),
        (lambda: gc.knn_graph(np.zeros((5, 2)), 2, metric="cosine"), ValueError, "all-zero rows"),
        (lambda: gc.epsilon_graph(np.ones((5, 2)), 0.0), ValueError, r"radius must satisfy radius > 0"),
        (lambda: gc.pmst_graph(np.random.rand(20, 2), r=1.5), ValueError, r"r must satisfy r in \[0.0, 1.0\]; got 1.5"),
        (lambda: gc.pmst_graph(np.random.rand(20, 2), n_trees=0), ValueError, "n_trees must satisfy 1 <= n_trees"),
        (lambda: gc.dmst_graph(np.random.rand(20, 2), n_trees=0.5), ValueError, r"n_trees must satisfy n_trees >= 1"),
        (lambda: gc.mst_graph(np.random.rand(20, 2), candidates="full"), ValueError, "candidates must be one of"),
        (lambda: gc.grid_graph(np.zeros((4, 4, 7))), ValueError, r"\(H, W, C\) with 1 <= C <= 4"),
        (lambda: gc.grid_graph(np.zeros(10)), ValueError, r"shape \(H, W\)"),
        (lambda: gc.grid_graph(np.zeros((4, 4)), connectivity=6), ValueError, "connectivity must be 4 or 8"),
        (lambda: gc.affinity(gc.knn_graph(np.random.rand(20, 2), 3), sigma=-1.0), ValueError, "sigma must satisfy sigma > 0"),
        (lambda: gc.affinity(np.eye(3)), TypeError, "graph must be a graphclust Graph"),
    ],
)
def test_bad_input_errors_name_the_parameter(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_candidate_graph_size_mismatch():
    grid = gc.grid_graph(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="16 nodes but X has 10 points"):
        gc.pmst_graph(np.random.rand(10, 3), candidates=grid)


@pytest.mark.slow
def test_pmst_refreshed_candidates_match_all_pairs_in_10d():
    """In 10-D the noise carries exact perturbed trees outside the data's kNN graph; recomputing
    the candidates on every copy recovers the all-pairs ensemble."""
    X = gaussian_points(1000, 10, seed=11)
    exact = gc.pmst_graph(X, 10, candidates="all", random_state=3)
    fresh = gc.pmst_graph(X, 10, n_neighbors=10, refresh_candidates=True, random_state=3)
    overlap = fresh.multiplicity.minimum(exact.multiplicity).sum()
    union = fresh.multiplicity.maximum(exact.multiplicity).sum()
    assert overlap / union >= 0.99
    fixed = gc.pmst_graph(X, 10, n_neighbors=10, random_state=3)
    assert edge_set(fixed) <= edge_set(gc.knn_graph(X, 10))  # the default stays in the kNN graph


def test_pmst_bridges_split_candidates_like_all_pairs():
    """A kNN candidate graph in two pieces is bridged once; each copy's bridge matches all-pairs."""
    X = two_blobs(n=400, gap=30.0, seed=2)
    assert gc.knn_graph(X, 20).n_components == 2
    exact = gc.pmst_graph(X, candidates="all", random_state=1)
    approx = gc.pmst_graph(X, n_neighbors=30, random_state=1)
    assert approx.n_components == 1
    cross = lambda g: g.multiplicity[:200, 200:].sum()  # noqa: E731
    assert cross(approx) == pytest.approx(cross(exact))  # one bridge per tree, T trees
    overlap = approx.multiplicity.minimum(exact.multiplicity).sum()
    assert overlap / approx.multiplicity.maximum(exact.multiplicity).sum() >= 0.99


def test_join_components_adds_the_exact_mst_bridges():
    rng = np.random.default_rng(4)
    X = np.concatenate([rng.normal(size=(60, 3)) + 15 * i for i in range(3)])
    g = gc.knn_graph(X, 5)
    assert g.n_components == 3
    joined = gc.join_components(g, X)
    assert joined.n_components == 1 and joined.n_edges == g.n_edges + 2
    added = edge_set(joined) - edge_set(g)
    assert added <= dense_mst(X)[0]  # the bridges are the all-pairs MST's bridges
    assert gc.join_components(joined, X) is joined
    with pytest.raises(ValueError, match="X has 10 points but the graph has 180 nodes"):
        gc.join_components(g, X[:10])
