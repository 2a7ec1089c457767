"""Property-based tests (Hypothesis) of the graph builders' invariants on small random inputs.

- permutation equivariance: building on X[p] gives the edges of X mapped through p, with the
  same lengths and multiplicities (exact neighbour search; PMST draws its noise row by row, so
  it is equivariant only in distribution and is tested for determinism instead);
- scale invariance: X * c gives the same edges with lengths times c; exactly for c a power of
  two (the builders rescale by powers of two internally, issue 13), to rounding for any c;
- determinism under random_state;
- every affinity is symmetric, non-negative, finite, zero on the diagonal.

Points are drawn from a seeded normal distribution (Hypothesis chooses the seed, the size, the
dimension and the scale): continuous coordinates have no tied distances, on which any builder
may legitimately break ties by row order.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphclust as gc

SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@st.composite
def point_sets(draw, min_n=8, max_n=40):
    n = draw(st.integers(min_n, max_n))
    d = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10.0, size=d)
    return X, rng.permutation(n)


def _edge_map(graph, relabel=None):
    """{(i, j) with i < j: (length, multiplicity)}, node labels mapped through `relabel`."""
    u, v, d, m = graph.edges()
    if relabel is not None:
        u, v = relabel[u], relabel[v]
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return {(int(a), int(b)): (float(x), float(y)) for a, b, x, y in zip(lo, hi, d, m)}


def _assert_same_graph(g, ref, relabel=None, length_factor=1.0, rtol=0.0):
    got, want = _edge_map(g, relabel), _edge_map(ref)
    assert got.keys() == want.keys()
    keys = sorted(want)
    gl = np.array([got[k][0] for k in keys]) / length_factor
    wl = np.array([want[k][0] for k in keys])
    if rtol == 0.0:
        np.testing.assert_array_equal(gl, wl)
    else:
        np.testing.assert_allclose(gl, wl, rtol=rtol, atol=0)
    np.testing.assert_array_equal([got[k][1] for k in keys], [want[k][1] for k in keys])


def _radius(X):
    """A radius giving a few neighbours per point that scales with the data, exactly for powers
    of two (computed on X / 2^e), and lies off every pairwise distance by a relative 1e-6."""
    s = 2.0 ** np.frexp(np.abs(X).max())[1]
    Y = X / s
    D = np.sqrt(((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    return float(np.median(np.sort(D, axis=1)[:, 3])) * (1 + 1e-6) * s


BUILDERS = {
    "knn": lambda X: gc.knn_graph(X, 4, method="exact"),
    "knn-mutual": lambda X: gc.knn_graph(X, 4, method="exact", mode="mutual"),
    "knn-cosine": lambda X: gc.knn_graph(X, 4, method="exact", metric="cosine"),
    "epsilon": lambda X: gc.epsilon_graph(X, _radius(X)),
    "mst-knn": lambda X: gc.mst_graph(X, n_neighbors=4),
    "mst-all": lambda X: gc.mst_graph(X, candidates="all"),
    "dmst-knn": lambda X: gc.dmst_graph(X, 2),
    "dmst-all": lambda X: gc.dmst_graph(X, 2.5, candidates="all"),
}
SCALE_FREE = {"knn-cosine"}  # cosine distances do not scale with X


@pytest.mark.parametrize("name", sorted(BUILDERS))
@SETTINGS
@given(data=point_sets())
def test_builders_are_permutation_equivariant(name, data):
    X, p = data
    if name == "knn-cosine" and X.shape[1] == 1:
        X = np.c_[X, np.ones(len(X))]  # 1-D cosine has only two directions: all ties
    ref = BUILDERS[name](X)
    g = BUILDERS[name](X[p])
    _assert_same_graph(g, ref, relabel=p)


@pytest.mark.parametrize("name", sorted(BUILDERS) + ["pmst"])
@SETTINGS
@given(data=point_sets(), exponent=st.integers(-1000, 1000))
def test_builders_are_exactly_scale_invariant_under_powers_of_two(name, data, exponent):
    X, _ = data
    if name == "knn-cosine" and X.shape[1] == 1:
        X = np.c_[X, np.ones(len(X))]
    c = 2.0**exponent
    top = np.abs(X).max()
    if not (2.0**-1020 < top * c < 2.0**1020) or np.abs(X[X != 0]).min() * c < 2.0**-1020:
        c = 2.0 ** (exponent // 2)  # keep every coordinate a normal float
    build = BUILDERS.get(name, lambda Z: gc.pmst_graph(Z, 5, n_neighbors=5, random_state=3))
    ref = build(X)
    g = build(X * c)
    _assert_same_graph(g, ref, length_factor=1.0 if name in SCALE_FREE else c)


@pytest.mark.parametrize("name", ["knn", "epsilon", "mst-knn", "dmst-knn"])
@SETTINGS
@given(data=point_sets(), c=st.floats(1e-200, 1e200))
def test_builders_are_scale_invariant_to_rounding(name, data, c):
    X, _ = data
    ref = BUILDERS[name](X)
    g = BUILDERS[name](X * c)
    _assert_same_graph(g, ref, length_factor=c, rtol=1e-9)


@SETTINGS
@given(data=point_sets(), seed=st.integers(0, 2**32 - 1))
def test_pmst_is_deterministic_under_random_state(data, seed):
    X, _ = data
    a = gc.pmst_graph(X, 5, n_neighbors=5, random_state=seed)
    b = gc.pmst_graph(X, 5, n_neighbors=5, random_state=seed)
    _assert_same_graph(a, b)
    assert a.n_components == 1
    assert np.all((a.multiplicity.data > 0) & (a.multiplicity.data <= 1))


@SETTINGS
@given(data=point_sets(), seed=st.integers(0, 2**32 - 1))
def test_pmst_without_noise_is_permutation_equivariant(data, seed):
    X, p = data
    _assert_same_graph(
        gc.pmst_graph(X[p], 3, r=0.0, n_neighbors=5, random_state=seed), gc.pmst_graph(X, 3, r=0.0, n_neighbors=5, random_state=0), relabel=p
    )


@SETTINGS
@given(data=point_sets(min_n=6, max_n=30), shift=st.floats(5.0, 50.0))
def test_join_components_is_permutation_equivariant(data, shift):
    X, p = data
    X = np.r_[X, X + shift]  # two far groups: the kNN graph falls apart
    p = np.r_[p, p + len(p)][np.random.default_rng(len(p)).permutation(2 * len(p))]
    ref = gc.join_components(gc.knn_graph(X, 2), X)
    g = gc.join_components(gc.knn_graph(X[p], 2), X[p])
    assert ref.n_components == g.n_components == 1
    _assert_same_graph(g, ref, relabel=p)


@SETTINGS
@given(
    h=st.integers(2, 8), w=st.integers(2, 8), channels=st.integers(1, 3),
    seed=st.integers(0, 2**32 - 1), exponent=st.integers(-900, 900), connectivity=st.sampled_from([4, 8]),
)
def test_grid_graph_transpose_equivariant_and_scale_invariant(h, w, channels, seed, exponent, connectivity):
    img = np.random.default_rng(seed).uniform(size=(h, w, channels))
    ref = gc.grid_graph(img, connectivity)
    # transposing the image permutes the pixels: pixel (r, c) of img.T is pixel (c, r) of img
    rows, cols = np.divmod(np.arange(h * w), h)  # row-major index in the (w, h) transposed image
    relabel = cols * w + rows
    _assert_same_graph(gc.grid_graph(img.transpose(1, 0, 2), connectivity), ref, relabel=relabel, rtol=1e-15)
    # positions and intensities scaled together by a power of two: lengths scale exactly
    c = 2.0**exponent
    g = gc.grid_graph(img * c, connectivity, position_weight=c)
    _assert_same_graph(g, ref, length_factor=c)


@pytest.mark.parametrize("name", sorted(BUILDERS) + ["pmst"])
@SETTINGS
@given(data=point_sets(), exponent=st.integers(-1000, 1000))
def test_affinities_symmetric_nonnegative_finite(name, data, exponent):
    X, _ = data
    X = X * 2.0 ** (exponent // 2)
    build = BUILDERS.get(name, lambda Z: gc.pmst_graph(Z, 5, n_neighbors=5, random_state=0))
    g = build(X)
    kinds = ["gaussian", "local", "binary", "multiplicity"] + (["cosine"] if name == "knn-cosine" else [])
    for kind in kinds:
        W = gc.affinity(g, kind=kind)
        assert isinstance(W, sp.csr_matrix) or sp.issparse(W)
        assert np.all(np.isfinite(W.data)) and np.all(W.data >= 0)
        assert abs(W - W.T).max() == 0 if W.nnz else True
        assert W.diagonal().max() == 0
    for M in (g.distances, g.multiplicity):
        assert np.all(np.isfinite(M.data)) and np.all(M.data >= 0)
        assert abs(M - M.T).max() == 0 if M.nnz else True
    # the Graph constructor accepts what the builders produce, and gives the same graph back
    _assert_same_graph(gc.Graph(g.distances, g.multiplicity), g)


@SETTINGS
@given(point_sets(min_n=2, max_n=60), st.integers(0, 2**32 - 1))
def test_edge_lengths_match_the_dense_distances(data, seed):
    # the compiled lengths against numpy's norms of the differences: the same sums in another
    # order (column order against numpy's pairwise), so equal to a few units of rounding
    from graphclust.graphs import edge_lengths

    X, _ = data
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, X.shape[0], size=(2, 50))
    got = edge_lengths(X, u, v)
    np.testing.assert_allclose(got, np.linalg.norm(X[u] - X[v], axis=1), rtol=1e-14, atol=0)
    assert np.array_equal(got, edge_lengths(X, v, u))  # symmetric, bit for bit
    assert np.all(got[u == v] == 0.0)
