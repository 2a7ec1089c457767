"""Bad input to every public entry point of the graph layer: the error type and what it says.

Each row is (entry point, call, exception, match): the message must name the parameter and say
what is allowed, so that the user can fix the call. Rows marked "issue 13" were accepted or
failed obscurely before (silently wrong graphs, raw numpy errors); the others pin messages
that were already right.
"""

import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc
from invariants import edge_set
from graphclust.graphs import EPSILON_MAX_EDGES, edge_lengths
from graphclust.graphs._epsilon import estimate_epsilon_edges

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 3))
XC = X.astype(np.complex128) + 1j
G = gc.knn_graph(X, 5)
IMG = RNG.uniform(size=(6, 5))
SYM = sp.csr_matrix(np.array([[0, 1.0, 0], [1.0, 0, 2.0], [0, 2.0, 0]]))


def _nan_graph():
    A = SYM.copy()
    A.data[:] = np.nan
    return A


BAD = {
    # ---------------------------------------------------------------- knn_graph
    "knn_graph": [
        (lambda: gc.knn_graph(XC, 5), ValueError, "Complex data not supported: X"),
        (lambda: gc.knn_graph(sp.csr_matrix(XC), 5), ValueError, "Complex data not supported: X"),  # issue 13
        (lambda: gc.knn_graph(X, 0), ValueError, "n_neighbors must satisfy 1 <= n_neighbors < 30; got 0"),
        (lambda: gc.knn_graph(X, 30), ValueError, "n_neighbors must satisfy 1 <= n_neighbors < 30; got 30"),
        (lambda: gc.knn_graph(X, 2.5), TypeError, "n_neighbors must be an integer; got 2.5"),
        (lambda: gc.knn_graph(X, 5, random_state="abc"), TypeError, "random_state must be None, an int"),  # issue 13
        (lambda: gc.knn_graph(X, 5, random_state=-1), ValueError, "random_state must be a non-negative int"),  # issue 13
        (lambda: gc.knn_graph(X, 5, metric="manhattan"), ValueError, "metric must be one of 'cosine', 'euclidean'; got 'manhattan'"),
        (lambda: gc.knn_graph(X, 5, method="fast"), ValueError, "method must be one of"),
        (lambda: gc.knn_graph(X, 5, mode="both"), ValueError, "mode must be one of"),
        (lambda: gc.knn_graph(X[:, 0], 5), ValueError, r"X must be a 2-D array .*X.reshape\(-1, 1\)"),
        (lambda: gc.knn_graph(X[:1], 1), ValueError, "X has 1 sample"),
        (lambda: gc.knn_graph(np.where(np.arange(90).reshape(30, 3) == 7, np.nan, X), 5), ValueError, r"X contains 1 NaN or infinite value\(s\) \(first at row 2, column 1\)"),
        (lambda: gc.knn_graph(np.array([["a", "b"], ["c", "d"]]), 1), TypeError, "X must hold numbers"),
        (lambda: gc.knn_graph(np.zeros((4, 2)), 2, metric="cosine"), ValueError, "metric='cosine' is undefined for all-zero rows"),
        (lambda: gc.knn_graph(np.array([[1e308, 0.0], [-1e308, 0.0], [0.0, 1.0]]), 2), ValueError, "X spans more than the float64 range"),  # issue 13
    ],
    # ---------------------------------------------------------------- epsilon_graph
    "epsilon_graph": [
        (lambda: gc.epsilon_graph(XC, 1.0), ValueError, "Complex data not supported: X"),
        (lambda: gc.epsilon_graph(X, 0.0), ValueError, r"radius must satisfy radius > 0.0; got 0.0"),
        (lambda: gc.epsilon_graph(X, np.nan), ValueError, "radius must be finite; got nan"),
        (lambda: gc.epsilon_graph(X, "1"), TypeError, "radius must be a real number; got '1'"),
        (lambda: gc.epsilon_graph(X, 1.0, metric="l1"), ValueError, "metric must be one of"),
        (lambda: gc.epsilon_graph(X, 1.0, max_edges=-1), ValueError, "max_edges must satisfy 0 <= max_edges; got -1"),
        (lambda: gc.epsilon_graph(X, 1e6, max_edges=100), ValueError, r"would build 435 edges \(29 neighbours per point\), more than max_edges=100"),  # issue 13
        (lambda: gc.epsilon_graph(RNG.normal(size=(5000, 2)), 1e6), ValueError, r"would build about 12,497,500 edges .* estimated from 256 sampled points.* max_edges=10,000,000"),  # issue 13
    ],
    # ---------------------------------------------------------------- MST family
    "mst_graph": [
        (lambda: gc.mst_graph(XC), ValueError, "Complex data not supported: X"),
        (lambda: gc.mst_graph(X, candidates="some"), ValueError, "candidates must be one of 'all', 'knn'; got 'some'"),
        (lambda: gc.mst_graph(X, n_neighbors=0), ValueError, "n_neighbors must satisfy 1 <= n_neighbors < 30"),
        (lambda: gc.mst_graph(X, random_state="abc"), TypeError, "random_state must be None, an int"),  # issue 13
        (lambda: gc.mst_graph(X, candidates=gc.knn_graph(X[:10], 3)), ValueError, "candidates is a Graph on 10 nodes but X has 30 points"),
        (lambda: gc.mst_graph(X, metric="cityblock"), ValueError, "metric must be one of"),
    ],
    "pmst_graph": [
        (lambda: gc.pmst_graph(XC), ValueError, "Complex data not supported: X"),
        (lambda: gc.pmst_graph(X, n_trees=0), ValueError, "n_trees must satisfy 1 <= n_trees; got 0"),
        (lambda: gc.pmst_graph(X, n_trees=2.5), TypeError, "n_trees must be an integer; got 2.5"),
        (lambda: gc.pmst_graph(X, r=1.5), ValueError, r"r must satisfy r in \[0.0, 1.0\]; got 1.5"),
        (lambda: gc.pmst_graph(X, r=-0.1), ValueError, r"r must satisfy r in \[0.0, 1.0\]; got -0.1"),
        (lambda: gc.pmst_graph(X, random_state="abc"), TypeError, "random_state must be None, an int"),
        (lambda: gc.pmst_graph(X, random_state=-3), ValueError, "random_state must be a non-negative int"),  # issue 13
    ],
    "dmst_graph": [
        (lambda: gc.dmst_graph(XC), ValueError, "Complex data not supported: X"),
        (lambda: gc.dmst_graph(X, n_trees=0.5), ValueError, "n_trees must satisfy n_trees >= 1"),
        (lambda: gc.dmst_graph(X, n_trees="3"), TypeError, "n_trees must be a real number; got '3'"),
        (lambda: gc.dmst_graph(X, random_state="abc"), TypeError, "random_state must be None, an int"),  # issue 13
        (lambda: gc.dmst_graph(X, candidates="knn", n_neighbors=30), ValueError, "n_neighbors must satisfy 1 <= n_neighbors < 30; got 30"),
    ],
    # ---------------------------------------------------------------- images
    "grid_graph": [
        (lambda: gc.grid_graph(IMG + 1j), ValueError, "Complex data not supported: image"),  # issue 13
        (lambda: gc.grid_graph(IMG, connectivity=6), ValueError, "connectivity must be 4 or 8; got 6"),
        (lambda: gc.grid_graph(IMG[0]), ValueError, r"image must have shape \(H, W\) for grey or \(H, W, C\)"),
        (lambda: gc.grid_graph(np.zeros((4, 4, 7))), ValueError, r"1 <= C <= 4 channels; got shape \(4, 4, 7\)"),
        (lambda: gc.grid_graph(np.zeros((1, 1))), ValueError, "image has 1 pixel"),
        (lambda: gc.grid_graph(np.where(IMG > 0.5, np.nan, IMG)), ValueError, "image contains NaN or infinite values"),
        (lambda: gc.grid_graph(IMG.astype(str)), TypeError, "image must be a numeric array"),
        (lambda: gc.grid_graph(IMG, position_weight=-1), ValueError, "position_weight must satisfy position_weight >= 0.0; got -1.0"),
        (lambda: gc.grid_graph(IMG, intensity_weight=np.inf), ValueError, "intensity_weight must be finite"),
    ],
    # ---------------------------------------------------------------- weights
    "affinity": [
        (lambda: gc.affinity(SYM), TypeError, "graph must be a graphclust Graph; got csr_matrix"),
        (lambda: gc.affinity(G, kind="rbf"), ValueError, "kind must be one of 'binary', 'cosine', 'gaussian', 'local', 'multiplicity'; got 'rbf'"),
        (lambda: gc.affinity(G, sigma=0), ValueError, "sigma must satisfy sigma > 0; got 0.0"),
        (lambda: gc.affinity(G, sigma=np.nan), ValueError, "sigma must be finite"),
        (lambda: gc.affinity(G, sigma=1.0, kind="local"), ValueError, "sigma applies only to kind='gaussian'"),
        (lambda: gc.affinity(G, kind="local", n_neighbors=0), ValueError, "n_neighbors must satisfy 1 <= n_neighbors; got 0"),
        (lambda: gc.affinity(G, kind="cosine"), ValueError, "kind='cosine' needs a graph built with metric='cosine'"),
    ],
    "local_scales": [
        (lambda: gc.local_scales(G, 0), ValueError, "n_neighbors must satisfy 1 <= n_neighbors; got 0"),  # issue 13
        (lambda: gc.local_scales(G, 2.5), TypeError, "n_neighbors must be an integer; got 2.5"),  # issue 13
        (lambda: gc.local_scales(SYM, 3), TypeError, "graph must be a graphclust Graph"),  # issue 13
    ],
    # ---------------------------------------------------------------- Graph constructors
    "Graph": [
        (lambda: gc.Graph(sp.csr_matrix([[0, 1.0], [0, 0]])), ValueError, r"distances must be symmetric; max \|distances - distances.T\| = 1"),  # issue 13
        (lambda: gc.Graph(sp.csr_matrix(np.ones((2, 3)))), ValueError, r"distances must be square \(n_nodes, n_nodes\); got shape \(2, 3\)"),  # issue 13
        (lambda: gc.Graph(sp.csr_matrix([[0, -1.0], [-1.0, 0]])), ValueError, r"distances has negative entries \(minimum -1\)"),  # issue 13
        (lambda: gc.Graph(_nan_graph()), ValueError, r"distances contains NaN or infinite entries \(4 of 4 stored\)"),  # issue 13
        (lambda: gc.Graph(SYM * 1j), ValueError, "Complex data not supported: distances"),  # issue 13
        (lambda: gc.Graph(np.array(["a"])), TypeError, "distances must be a numeric matrix"),  # issue 13
        (lambda: gc.Graph(sp.csr_matrix((3, 3)), sp.csr_matrix(np.ones((2, 2)))), ValueError, "multiplicity must have exactly the sparsity pattern of distances"),
        (lambda: gc.Graph(SYM, SYM * -1), ValueError, "multiplicity has negative entries"),  # issue 13
        (lambda: gc.Graph(SYM, sp.csr_matrix([[0, 1.0, 0], [2.0, 0, 1], [0, 1, 0]])), ValueError, "multiplicity must be symmetric"),  # issue 13
    ],
    "Graph.from_sparse": [
        (lambda: gc.Graph.from_sparse(sp.csr_matrix([[0, 1.0], [0, 0]])), ValueError, "A must be symmetric"),
        (lambda: gc.Graph.from_sparse(np.ones(3)), ValueError, r"A must be a square 2-D matrix; got shape \(3,\)"),
        (lambda: gc.Graph.from_sparse(SYM * 1j), ValueError, "Complex data not supported: A"),  # issue 13
        (lambda: gc.Graph.from_sparse(SYM.toarray() * 1j), ValueError, "Complex data not supported: A"),  # issue 13
        (lambda: gc.Graph.from_sparse(SYM, values="lengths"), ValueError, "values must be one of 'distances', 'weights'; got 'lengths'"),
        (lambda: gc.Graph.from_sparse(sp.csr_matrix((0, 0))), ValueError, "A is empty"),
        (lambda: gc.Graph.from_sparse(SYM * 1e-300 + sp.csr_matrix(([1e-305], ([0], [1])), shape=(3, 3))), ValueError, "A must be symmetric"),  # issue 13: relative tolerance
    ],
    "Graph.from_networkx": [
        (lambda: gc.Graph.from_networkx(SYM), TypeError, "G must be a networkx Graph; got csr_matrix"),
        (lambda: gc.Graph.from_networkx(nx.DiGraph([(0, 1)])), ValueError, "G is directed"),
        (lambda: gc.Graph.from_networkx(nx.Graph()), ValueError, "G has no nodes"),
        (lambda: gc.Graph.from_networkx(nx.Graph([(0, 1, {"weight": -2.0})])), ValueError, r"edge \(0, 1\) has weight=-2.0; weights must be >= 0"),
        (lambda: gc.Graph.from_networkx(nx.Graph([(0, 1, {"weight": np.nan})])), ValueError, r"edge \(0, 1\) has weight=nan"),
        (lambda: gc.Graph.from_networkx(nx.Graph([(0, 1, {"weight": 1 + 2j})])), ValueError, r"edge \(0, 1\) has weight=\(1\+2j\); weights must be real"),  # issue 13
        (lambda: gc.Graph.from_networkx(nx.Graph([(0, 1, {"weight": "heavy"})])), ValueError, r"edge \(0, 1\) has weight='heavy'; weights must be real"),  # issue 13
        (lambda: gc.Graph.from_networkx(nx.Graph([(0, 1)]), distance="length"), ValueError, r"edge \(0, 1\) has length=nan"),
    ],
    "join_components": [
        (lambda: gc.join_components(SYM, X), TypeError, "graph must be a graphclust Graph"),
        (lambda: gc.join_components(G, X[:10]), ValueError, "X has 10 points but the graph has 30 nodes"),
        (lambda: gc.join_components(G, XC), ValueError, "Complex data not supported: X"),
        (lambda: gc.join_components(G, X, metric="hamming"), ValueError, "metric must be one of"),
    ],
    # ---------------------------------------------------------------- edge_lengths
    "edge_lengths": [
        (lambda: edge_lengths(X, [0, 30], [1, 2]), ValueError,
         r"u must hold row numbers of Y in 0\.\.29; got 30"),
        (lambda: edge_lengths(X, [0, 1], [-1, 2]), ValueError,
         r"v must hold row numbers of Y in 0\.\.29; got -1"),
        (lambda: edge_lengths(X, [0, 1], [1]), ValueError,
         "u and v must have one entry per edge; got 2 and 1"),
        (lambda: edge_lengths(X, [0.0, 1.0], [1, 2]), ValueError,
         "u must be a 1-D array of row numbers"),
        (lambda: edge_lengths(np.where(X > 1, np.nan, X), [0], [1]), ValueError,
         "Y contains .* NaN or infinite"),
        (lambda: edge_lengths(XC, [0], [1]), ValueError, "Complex data not supported: Y"),
    ],
}

CASES = [
    pytest.param(call, exc, match, id=f"{entry}-{i}")
    for entry, rows in BAD.items()
    for i, (call, exc, match) in enumerate(rows)
]


@pytest.mark.parametrize("call, exc, match", CASES)
def test_bad_input_is_refused_with_a_message_that_says_what_to_do(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_every_public_graph_entry_point_has_a_table():
    names = {"knn_graph", "epsilon_graph", "mst_graph", "pmst_graph", "dmst_graph", "grid_graph",
             "affinity", "local_scales", "Graph", "Graph.from_sparse", "Graph.from_networkx",
             "join_components", "edge_lengths"}
    assert names <= set(BAD), names - set(BAD)


# ------------------------------------------------------------------ regressions of issue 13


def test_graph_constructor_no_longer_answers_nonsense_on_a_one_sided_matrix():
    # before: Graph(A) accepted it, n_edges said 0 while edges() listed one
    with pytest.raises(ValueError, match="distances must be symmetric"):
        gc.Graph(sp.csr_matrix(([2.0], ([0], [1])), shape=(2, 2)))


def test_graph_constructor_keeps_stored_zero_edges_and_drops_the_diagonal():
    A = sp.csr_matrix((np.array([0.0, 0.0, 5.0]), (np.array([0, 1, 2]), np.array([1, 0, 2]))), shape=(3, 3))
    g = gc.Graph(A)
    assert g.n_edges == 1 and g.distances.diagonal().max() == 0 and g.distances.nnz == 2


def test_epsilon_guard_estimate_is_exact_on_small_inputs_and_close_on_large():
    Y = RNG.uniform(size=(3000, 2))
    r = 0.05
    truth = gc.epsilon_graph(Y, r, max_edges=None).n_edges
    est = estimate_epsilon_edges(Y, r)
    assert abs(est - truth) <= 0.15 * truth
    assert estimate_epsilon_edges(Y[:200], r) == gc.epsilon_graph(Y[:200], r).n_edges
    assert EPSILON_MAX_EDGES == 10_000_000


def test_epsilon_guard_runs_before_the_build(monkeypatch):
    # the refusal must come from the estimate, without touching the radius search
    import sklearn.neighbors

    def boom(*args, **kwargs):
        raise AssertionError("the radius search ran before the size guard")

    monkeypatch.setattr(sklearn.neighbors.NearestNeighbors, "fit", boom)
    with pytest.raises(ValueError, match="more than max_edges=10"):
        gc.epsilon_graph(X, 1e6, max_edges=10)


def test_dmst_all_pairs_warning_does_not_advise_more_neighbours():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.dmst_graph(X[:12], n_trees=8, candidates="all")
    text = " ".join(str(w.message) for w in caught)
    assert "at most 6 edge-disjoint spanning trees" in text
    assert "n_neighbors" not in text


@pytest.mark.parametrize(
    "build",
    [
        lambda Z: gc.knn_graph(Z, 5),
        lambda Z: gc.mst_graph(Z),
        lambda Z: gc.dmst_graph(Z, 2),
        lambda Z: gc.pmst_graph(Z, 5, random_state=0),
        lambda Z: gc.epsilon_graph(Z, 0.8 * float(np.abs(Z).max()) / float(np.abs(X).max())),
        lambda Z: gc.knn_graph(Z, 5, metric="cosine"),
    ],
    ids=["knn", "mst", "dmst", "pmst", "epsilon", "knn-cosine"],
)
@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_extreme_scales_give_the_graph_of_the_rescaled_data(build, scale):
    # before: at 1e-300 every distance was 0 (all weights 1); at 1e300 scikit-learn failed
    # inside a reshape, and epsilon_graph(X * 1e300, 1e300) had no edges
    ref = build(X)
    g = build(X * scale)
    assert g.n_edges == ref.n_edges > 0
    assert edge_set(g) == edge_set(ref)
    cosine = g.provenance.get("metric") == "cosine"
    factor = 1.0 if cosine else scale
    np.testing.assert_allclose(g.distances.data / factor, ref.distances.data, rtol=1e-12)
    np.testing.assert_array_equal(g.multiplicity.data, ref.multiplicity.data)
    if not cosine:  # weights depend on d / sigma only: the same at every scale
        np.testing.assert_allclose(gc.affinity(g).data, gc.affinity(ref).data, rtol=1e-12)
        np.testing.assert_allclose(
            gc.affinity(g, kind="local").data, gc.affinity(ref, kind="local").data, rtol=1e-12
        )


def test_grid_graph_survives_extreme_intensity_scales():
    ref = gc.grid_graph(IMG, position_weight=0.0)
    for scale in (1e-300, 1e300):
        g = gc.grid_graph(IMG * scale, position_weight=0.0)
        np.testing.assert_allclose(g.distances.data / scale, ref.distances.data, rtol=1e-12)


def test_join_components_survives_extreme_scales():
    Z = np.r_[RNG.normal(size=(10, 2)), RNG.normal(size=(10, 2)) + 50]
    ref = gc.join_components(gc.knn_graph(Z, 3), Z)
    for scale in (1e-300, 1e300):
        g = gc.join_components(gc.knn_graph(Z * scale, 3), Z * scale)
        assert edge_set(g) == edge_set(ref)
        np.testing.assert_allclose(g.distances.data / scale, ref.distances.data, rtol=1e-12)


def test_auto_search_is_exact_up_to_the_first_call_limit(monkeypatch):
    # issue 13: pynndescent's compilation (30-270 s per fresh process) was paid from 10 001
    # points; dense points now never import it (graphclust's NN-descent, cached on disk), and
    # exact search is kept up to 20 000 points (docs/reliability.md)
    import sys

    from graphclust.graphs import EXACT_SEARCH_MAX_SAMPLES

    assert EXACT_SEARCH_MAX_SAMPLES == 20_000
    monkeypatch.setitem(sys.modules, "pynndescent", None)  # importing it now fails
    Z = np.random.default_rng(1).uniform(size=(12_000, 2))
    g = gc.knn_graph(Z, 5)
    assert g.n_nodes == 12_000 and g.degrees.min() >= 5
    Z = np.random.default_rng(1).uniform(size=(25_000, 3))
    g = gc.knn_graph(Z, 5, random_state=0)  # above the limit: NN-descent, without pynndescent
    assert g.n_nodes == 25_000 and g.degrees.min() >= 5


def _true_recall(Z, idx, k):
    # share of the returned neighbours no farther than the exact k-th (ties count), measured
    # on the data at the origin in float64
    d = np.sqrt(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1))
    np.fill_diagonal(d, np.inf)
    kth = np.sort(d, axis=1)[:, k - 1:k]
    return float(np.mean(np.take_along_axis(d, idx, axis=1) <= kth * (1 + 1e-9)))


@pytest.mark.parametrize("method", ["approximate", "exact"])
@pytest.mark.parametrize("offset", [1e4, 1e8, -3e12])
def test_data_far_from_the_origin_keeps_its_neighbours(method, offset):
    # before: NN-descent searched float32(X), whose rounding at 10^8 is 8 units: blobs of unit
    # spread lost every neighbour (a 30 000-point fit: ARI 0.21 against the same blobs at the
    # origin), and brute force's |a|^2 + |b|^2 - 2 a.b cancelled in float64 alike. The
    # features' far offset is now taken out first (`graphs._scale.far_offset`)
    rng = np.random.default_rng(3)
    centres = rng.normal(scale=3.0, size=(6, 20))
    Z = rng.normal(size=(600, 20)) + centres[rng.integers(6, size=600)]
    idx, dist = gc.graphs.nearest_neighbors(Z + offset, 8, method=method, random_state=0)
    # the data as given, translated back exactly (Sterbenz): at 3e12 float64 itself keeps
    # only 5e-4 of a unit
    given = (Z + offset) - offset
    assert _true_recall(given, idx, 8) >= (0.97 if method == "approximate" else 1.0)
    # the lengths are those of the points returned, measured on the data as given
    here = np.linalg.norm((Z + offset)[:, None, :] - (Z + offset)[idx], axis=2)
    np.testing.assert_allclose(dist, here, rtol=1e-12, atol=0)


def test_far_offset_is_found_only_where_it_costs_digits():
    from graphclust.graphs._scale import far_offset

    Z = np.random.default_rng(0).uniform(size=(50, 3))
    assert far_offset(Z) is None and far_offset(Z - 0.5) is None  # pixels, centred data
    assert far_offset(Z + 100) is None  # 8 bits of float32 or fewer: searched as given
    assert far_offset(sp.csr_matrix(Z + 1e6)) is None  # sparse data are searched as they are
    got = far_offset(np.c_[Z[:, :2], Z[:, 2] + 1e6])
    assert got[:2].tolist() == [0.0, 0.0] and abs(got[2] - 1e6 - 0.5) < 0.5
    # exact scalings commute with it (the search of X / 2^e is that of X)
    np.testing.assert_array_equal(far_offset((Z + 1e6) / 2**40), far_offset(Z + 1e6) / 2**40)
    # no overflow at the ends of the float64 range
    assert far_offset(np.array([[1e308, -1e308], [1e308, 1e308]])).tolist() == [1e308, 0.0]


@pytest.mark.parametrize("shift", [0.0, 1e8, -3e12, 1e300])
@pytest.mark.parametrize("exponent", [-300, 0, 280])
def test_centred_rescale_is_rescale_of_the_points_less_their_far_offset(shift, exponent):
    # one pass over X gives the offset and the scale: the numbers of rescale(X - far_offset(X))
    from graphclust.graphs._scale import centred_rescale, far_offset, rescale

    rng = np.random.default_rng(abs(exponent) + 7)
    X = rng.normal(size=(40, 3)) * 2.0**exponent
    X[:, 1] += shift
    X[3, 2] = np.inf if exponent == 280 else X[3, 2]  # a non-finite column: no scale to take
    centre = far_offset(X)
    want, s_want = rescale(X if centre is None else X - centre)
    got, s = centred_rescale(X)
    assert s == s_want and np.array_equal(got, want)
    Xs = sp.csr_matrix(np.where(np.abs(X) < 1e-3 * np.abs(X).max(), 0.0, X))
    got, s = centred_rescale(Xs)  # sparse: no offset, rescale's numbers
    want, s_want = rescale(Xs)
    assert s == s_want and (got != want).nnz == 0


def test_predict_of_data_far_from_the_origin_is_that_at_the_origin():
    rng = np.random.default_rng(1)
    centres = rng.normal(scale=6.0, size=(8, 12))
    Z = rng.normal(size=(3000, 12)) + centres[rng.integers(8, size=3000)]
    Q = Z[:200] + rng.normal(scale=0.3, size=(200, 12))
    lists, _ = gc.graphs.nearest_neighbors(Z, 10, random_state=0)
    for exact_max in (0, None):  # the graph search and scikit-learn's exact one
        ref = gc.graphs.NeighbourIndex(Z, lists, exact_max_samples=exact_max).kneighbors(Q, 5)
        got = gc.graphs.NeighbourIndex(Z + 1e9, lists, exact_max_samples=exact_max).kneighbors(
            Q + 1e9, 5)
        np.testing.assert_array_equal(got[1], ref[1])
        np.testing.assert_allclose(got[0], ref[0], atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: gc.SpectralClustering(n_clusters=4, random_state=0),
    lambda: gc.ConsistencyClustering(n_clusters=4, random_state=0),
], ids=["spectral", "consistency"])
def test_estimators_on_data_far_from_the_origin_fit_and_predict_as_at_the_origin(make):
    # 20 features: scikit-learn's exact search is brute force there, whose expansion
    # cancelled in float64 at 10^8 from the origin
    rng = np.random.default_rng(2)
    centres = rng.normal(scale=2.0, size=(4, 20))
    Z = rng.normal(size=(400, 20)) + centres[rng.integers(4, size=400)]
    Q = Z[:100] + rng.normal(scale=0.5, size=(100, 20))
    from sklearn.metrics import adjusted_rand_score

    ref, far = make().fit(Z), make().fit(Z + 1e8)
    assert adjusted_rand_score(ref.labels_, far.labels_) == 1.0  # (k-means may number apart)
    both = np.r_[ref.labels_, ref.predict(Q)], np.r_[far.labels_, far.predict(Q + 1e8)]
    assert adjusted_rand_score(*both) == 1.0


def test_join_components_far_from_the_origin_adds_the_bridges_at_the_origin():
    Z = np.r_[RNG.normal(size=(30, 20)), RNG.normal(size=(30, 20)) + 4.0]
    ref = gc.join_components(gc.knn_graph(Z, 3), Z)
    g = gc.join_components(gc.knn_graph(Z + 1e9, 3), Z + 1e9)
    assert edge_set(g) == edge_set(ref)
