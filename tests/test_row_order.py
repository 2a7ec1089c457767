"""Row order: `canonical_order` and a StabilityClustering fit that the row order cannot move."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import graphclust as gc
from graphclust.cluster._row_order import (canonical_order, distinct_rows, lists_in_order,
                                          lists_order)
from graphclust.graphs._row_keys import _scale, _single


def _same_partition(a, b):
    """Equal up to the names of the clusters."""
    pairs = np.unique(np.c_[a, b], axis=0)
    return pairs.shape[0] == np.unique(a).size == np.unique(b).size


@settings(max_examples=60, deadline=None)
@given(X=arrays(np.float64, st.tuples(st.integers(1, 30), st.integers(1, 6)),
                elements=st.floats(-1e6, 1e6, allow_nan=False)),
       seed=st.integers(0, 2**16), scale_exp=st.sampled_from([-300, 0, 300]))
def test_canonical_order_does_not_depend_on_the_row_order(X, seed, scale_exp):
    X = X * 10.0 ** scale_exp  # tiny and huge coordinates: keys neither underflow to 0 nor overflow
    # duplicated rows, the case where only the rows, not their positions, may decide
    X = np.vstack([X, X[: X.shape[0] // 2]])
    p = np.random.default_rng(seed).permutation(X.shape[0])
    # the same rows in the same order, as far as single precision (after the exact scaling)
    # tells rows apart: 1e-48 next to 1 is a zero there
    Y = _single(X, _scale(X))
    assert np.array_equal(Y[canonical_order(X)], Y[p][canonical_order(X[p])])
    S = sp.csr_matrix(X)
    assert np.array_equal(Y[canonical_order(S)], Y[p][canonical_order(S[p])])


def test_single_precision_and_scale_do_not_change_the_order():
    X = np.random.default_rng(0).normal(size=(300, 5))
    order = canonical_order(X)
    for Z in (X.astype(np.float32), X * 2.0 ** 900, X * 2.0 ** -900):
        assert np.array_equal(canonical_order(Z), order)


def test_canonical_order_of_sparse_and_dense_rows_agree():
    X = np.random.default_rng(0).normal(size=(50, 8))
    X[X < 0.5] = 0.0
    assert np.array_equal(canonical_order(X), canonical_order(sp.csr_matrix(X)))


@settings(max_examples=80, deadline=None)
@given(X=arrays(np.int8, st.tuples(st.integers(1, 40), st.integers(1, 4)),
                elements=st.integers(-2, 2)), sparse=st.booleans())
def test_distinct_rows_marks_each_distinct_row_once(X, sparse):
    # small integers: many equal rows, and -0.0 beside 0.0 (equal values, equal rows)
    X = X.astype(np.float64)
    X[X == 0] = np.where(np.arange((X == 0).sum()) % 2, -0.0, 0.0)
    order, first = distinct_rows(sp.csr_matrix(X) if sparse else X)
    assert np.array_equal(np.sort(order), np.arange(X.shape[0]))
    Y = X[order]
    point = np.cumsum(first) - 1
    assert first.sum() == np.unique(X, axis=0).shape[0]
    assert (Y == Y[np.flatnonzero(first)[point]]).all()  # each row equals its point's first
    assert np.unique(Y[first], axis=0).shape[0] == first.sum()  # the firsts all differ


def test_repeated_rows_are_fitted_once_and_share_their_points_labels():
    # every row given twice or three times, or 30 % of them twice: the same partition of the
    # points as the rows once (before: 11, 61 and 4 clusters of the three moons), each copy
    # labelled as its point, and the same answers for unseen points
    X, y = gc.datasets.three_moons(600, random_state=0)
    a = gc.StabilityClustering(random_state=0).fit(X)
    assert a.n_clusters_ == 3
    some = np.random.default_rng(1).permutation(600)[:180]
    new = X[:40] + np.random.default_rng(2).normal(scale=0.05, size=(40, 2))
    once = np.arange(600)
    for copied in (once, np.r_[once, once], some):
        rows = np.r_[once, copied]  # the row of X that each row of the data repeats
        b = gc.StabilityClustering(random_state=0).fit(X[rows])
        assert b.n_clusters_ == 3 and _same_partition(a.labels_, b.labels_[:600])
        assert np.array_equal(b.labels_, b.labels_[rows])  # a copy has its point's label
        assert np.allclose(b.rho_, a.rho_[rows]) and np.allclose(b.sigma_, a.sigma_[rows])
        assert b._X_fit.shape[0] == 600  # one training point each
        assert _same_partition(a.predict(new), b.predict(new))


def test_a_point_repeated_more_than_n_neighbors_times_keeps_its_copies(tmp_path):
    # its copies' lists hold only copies: a clique of its own in any kNN graph of the rows,
    # kept as it is; the rows repeated fewer times are fitted once, and the file keeps both
    rng = np.random.default_rng(3)
    blobs = rng.normal(size=(180, 2)) * 0.7 + np.repeat([[4, 0], [0, 4], [4, 4]], 60, axis=0)
    X = np.r_[np.zeros((60, 2)), blobs, blobs[:50]]
    m = gc.StabilityClustering(random_state=0).fit(X)
    assert m._X_fit.shape[0] == 60 + 180
    assert m.n_clusters_ == 4 and (m.labels_[:60] == m.labels_[0]).all()
    assert np.array_equal(m.labels_[-50:], m.labels_[60:110])
    back = gc.StabilityClustering.load(m.save(tmp_path / "m.npz"))
    assert np.array_equal(back.predict(X), m.predict(X))


# cosine on 2-D points keeps only their direction: a curve with no clusters, and the fit says
# so with a StabilityWarning; the test is about equivariance, which holds either way
@pytest.mark.filterwarnings("ignore::graphclust.cluster.StabilityWarning")
@pytest.mark.parametrize("metric", ["euclidean", "cosine"])
def test_a_row_permutation_permutes_the_labels_and_changes_nothing_else(metric):
    X, _ = gc.datasets.three_moons(900, random_state=0)
    X = X + 3.0  # cosine needs directions that differ
    perm = np.random.default_rng(1).permutation(len(X))
    a = gc.StabilityClustering(metric=metric, random_state=0).fit(X)
    b = gc.StabilityClustering(metric=metric, random_state=0).fit(X[perm])
    assert a.n_clusters_ == b.n_clusters_ and a.tau_ == b.tau_
    assert _same_partition(a.labels_[perm], b.labels_)
    assert _same_partition(a.fine_labels_[perm], b.fine_labels_)
    assert np.allclose(a.rho_[perm], b.rho_) and np.allclose(a.sigma_[perm], b.sigma_)
    # the representatives are the same points, and unseen points get the same answers
    assert sorted(perm[b.representatives_].tolist()) == sorted(a.representatives_.tolist())
    new = X[:40] + np.random.default_rng(2).normal(scale=0.05, size=(40, 2))
    la, sa = a.predict(new, return_outlier_score=True)
    lb, sb = b.predict(new, return_outlier_score=True)
    assert _same_partition(la, lb) and np.allclose(sa, sb)
    assert _same_partition(a.predict(X[perm]), b.predict(X[perm]))


def test_predicts_graph_search_is_the_same_for_any_row_order(monkeypatch):
    # above EXACT_INDEX_MAX_SAMPLES predict searches the fit's kNN lists from seeded entry
    # points; the training points and lists are kept in the fit's own order, so a row
    # permutation of the training data changes none of its answers
    import graphclust.graphs._search as search

    monkeypatch.setattr(search, "EXACT_INDEX_MAX_SAMPLES", 100)
    X, _ = gc.datasets.three_moons(900, random_state=0)
    perm = np.random.default_rng(3).permutation(len(X))
    a = gc.StabilityClustering(random_state=0).fit(X)
    b = gc.StabilityClustering(random_state=0).fit(X[perm])
    assert a._nn.get().exact is False  # the graph search, not the exact one
    new = X[::9] + np.random.default_rng(4).normal(scale=0.1, size=(100, 2))
    ia, da = a._neighbours(new)
    ib, db = b._neighbours(new)
    np.testing.assert_array_equal(ia, perm[ib])
    np.testing.assert_array_equal(da, db)
    la, sa = a.predict(new, return_outlier_score=True)
    lb, sb = b.predict(new, return_outlier_score=True)
    assert _same_partition(la, lb)
    np.testing.assert_array_equal(sa, sb)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 200), d=st.integers(1, 5), seed=st.integers(0, 2**16),
       dtype=st.sampled_from([np.float32, np.float64, np.int32, np.bool_]))
def test_rows_as_float64_is_the_converted_gather(n, d, seed, dtype):
    from graphclust.cluster._row_order import rows_as_float64

    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, d)) * 100).astype(dtype)
    order = rng.permutation(n)
    got = rows_as_float64(X, order)
    assert got.dtype == np.float64 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, np.asarray(X, dtype=np.float64)[order])


def test_check_points_keeps_a_float_precision_only_when_asked_and_finds_late_nan():
    from graphclust._validation import BLOCK_ROWS, check_points

    X = np.random.default_rng(0).normal(size=(2 * BLOCK_ROWS + 5, 3)).astype(np.float32)
    kept = check_points(X, keep_float=True)
    assert kept.dtype == np.float32 and np.shares_memory(kept, X)
    assert check_points(X).dtype == np.float64
    assert check_points(X.astype(np.int64), keep_float=True).dtype == np.float64
    X[BLOCK_ROWS + 3, 2] = np.inf  # in the second block of rows
    X[-1, 0] = np.nan
    with pytest.raises(ValueError, match=rf"X contains 2 NaN or infinite value\(s\) \(first at "
                                         rf"row {BLOCK_ROWS + 3}, column 2\)"):
        check_points(X, keep_float=True)


def test_float32_points_give_the_fit_of_their_float64_values():
    X, _ = gc.datasets.three_moons(600, random_state=0)
    X32 = X.astype(np.float32)
    a = gc.StabilityClustering(random_state=0).fit(X32)
    b = gc.StabilityClustering(random_state=0).fit(X32.astype(np.float64))
    assert np.array_equal(a.labels_, b.labels_) and a.tau_ == b.tau_
    np.testing.assert_array_equal(a.predict(X32[:50]), b.predict(X32[:50]))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-6, 1e6), shift=st.floats(-1e3, 1e3))
def test_the_lists_order_follows_a_permutation_a_scale_and_a_shift(seed, scale, shift):
    # continuous points (no distance ties): the same exact lists whatever the scale or shift,
    # so the same order of the points; `lists_in_order` gives the lists of the reordered rows
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(120, 3))
    perm = rng.permutation(120)
    idx, dist = gc.nearest_neighbors(X, 6, method="exact")
    order = lists_order(idx, dist)
    Y = scale * X[perm] + shift
    other = lists_order(*gc.nearest_neighbors(Y, 6, method="exact"))
    np.testing.assert_array_equal(perm[other], order)  # the same points, in the same order
    Xo, io, do = lists_in_order(X, idx, dist, order)
    ref_idx, ref_dist = gc.nearest_neighbors(X[order], 6, method="exact")
    np.testing.assert_array_equal(Xo, X[order])
    np.testing.assert_array_equal(io, ref_idx)
    np.testing.assert_allclose(do, ref_dist, rtol=1e-12)
