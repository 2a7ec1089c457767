"""graphclust's NN-descent (`graphclust.graphs._nndescent`) against an exact brute force."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.graphs._nndescent import nn_descent
from graphclust.graphs._numba import edge_length_kernel, list_lengths


def brute_force(X, k):
    """Exact neighbours (self excluded) by a dense distance matrix, ties by index."""
    X = np.asarray(X, dtype=np.float64)
    d = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(len(X)), d.shape), d), axis=1)[:, :k]
    return order, np.sqrt(np.take_along_axis(d, order, axis=1))


def tie_robust_recall(X, idx, k):
    """Share of returned neighbours no farther than the exact k-th neighbour (ties count)."""
    _, exact_d = brute_force(X, k)
    d = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(-1))
    return float(np.mean(d <= exact_d[:, -1:] * (1 + 1e-5) + 1e-6))


def clustered(n, d, seed):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(10, d))
    return centres[rng.integers(10, size=n)] + rng.normal(size=(n, d))


def test_recall_against_brute_force():
    X = clustered(3000, 20, 0)
    idx, dist = nn_descent(X, 10, random_state=0)
    assert idx.shape == (3000, 10) and dist.shape == (3000, 10)
    assert tie_robust_recall(X, idx, 10) >= 0.99
    assert not np.any(idx == np.arange(3000)[:, None])  # never a point itself
    assert all(len(set(row)) == 10 for row in idx)  # no repeated neighbour
    assert np.all(np.diff(dist, axis=1) >= 0)  # rows sorted by distance
    # reported distances are the distances of the reported neighbours (float32 search)
    true = np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(-1))
    np.testing.assert_allclose(dist, true, rtol=1e-4, atol=1e-4)


def test_exact_when_a_leaf_holds_everything():
    # fewer points than the smallest leaf: every pair is measured, the result is exact
    X = clustered(50, 3, 1)
    idx, dist = nn_descent(X, 6, random_state=3)
    ref_idx, ref_d = brute_force(X, 6)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-5, atol=1e-6)
    assert tie_robust_recall(X, idx, 6) == 1.0


@pytest.mark.parametrize("n_searches", [1, 3])
def test_deterministic_for_a_seed_and_independent_of_threads(n_searches):
    X = clustered(4000, 8, 2)
    a = nn_descent(X, 7, random_state=11, n_searches=n_searches)
    b = nn_descent(X, 7, random_state=11, n_searches=n_searches)
    np.testing.assert_array_equal(a[0], b[0])
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        c = nn_descent(X, 7, random_state=11, n_searches=n_searches)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(a[0], c[0])
    np.testing.assert_array_equal(a[1], c[1])


def test_duplicates_are_neighbours_at_distance_zero():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(400, 5))
    X = np.vstack([base, base, base])  # every point three times
    idx, dist = nn_descent(X, 4, random_state=0)
    # its two copies are at distance 0 and come first
    assert np.all(dist[:, :2] == 0)
    copies = np.sort(idx[:, :2] % 400, axis=1)
    np.testing.assert_array_equal(copies, np.repeat(np.arange(1200) % 400, 2).reshape(-1, 2))


def test_all_points_identical():
    X = np.ones((300, 4))
    idx, dist = nn_descent(X, 5, random_state=0)
    assert np.all(dist == 0)
    assert all(len(set(row)) == 5 and i not in row for i, row in enumerate(idx))


def test_exact_lengths_are_the_direct_formula_in_float64():
    # exact=True: the same lists, with the lengths recomputed from X as given (float64), the
    # numbers of `edge_length_kernel` bit for bit, whatever the leaf order used to compute them
    X = clustered(3000, 12, 7)
    idx, d32 = nn_descent(X, 9, random_state=5)
    idx2, d64 = nn_descent(X, 9, random_state=5, exact=True)
    np.testing.assert_array_equal(idx, idx2)
    assert d64.dtype == np.float64
    ref = edge_length_kernel(X, np.repeat(np.arange(3000), 9), idx.ravel()).reshape(3000, 9)
    np.testing.assert_array_equal(d64, ref)
    np.testing.assert_allclose(d32, d64, rtol=1e-4, atol=1e-4)


@settings(max_examples=25, deadline=None)
@given(e=st.sampled_from([-1000, -40, -3, 1, 5, 60, 1000]), seed=st.integers(0, 2**31 - 1),
       single=st.booleans())
def test_property_a_scale_gives_the_scaled_copys_search_bit_for_bit(e, seed, single):
    # scale=s reads X / s on the fly: the lists and lengths of the search on the copy X / s
    rng = np.random.default_rng(seed)
    with np.errstate(over="ignore"):
        X = np.ldexp(rng.normal(size=(300, 4)), e).astype(np.float32 if single else np.float64)
    if not np.isfinite(X).all() or not np.any(X):
        return  # float32 has no such scale
    s = float(np.ldexp(1.0, int(np.frexp(np.abs(X).max())[1])))
    idx, dist = nn_descent(X, 5, random_state=seed, exact=True, scale=s)
    ref_idx, ref_dist = nn_descent(np.asarray(X, dtype=np.float64) / s, 5, random_state=seed,
                                   exact=True)
    np.testing.assert_array_equal(idx, ref_idx)
    np.testing.assert_array_equal(dist, ref_dist)
    with pytest.raises(ValueError, match="scale must be a power of two"):
        nn_descent(X, 5, scale=3.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 60), k=st.integers(1, 5), d=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1), single=st.booleans())
def test_property_list_lengths_equal_edge_lengths_in_any_visit_order(n, k, d, seed, single):
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(n, d)).astype(np.float32 if single else np.float64)
    lists = rng.integers(0, n, size=(n, k))
    out = list_lengths(Y, lists, rng.permutation(n))
    ref = edge_length_kernel(Y, np.repeat(np.arange(n), k), lists.ravel()).reshape(n, k)
    np.testing.assert_array_equal(out, ref)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 120), d=st.integers(1, 6), k=st.integers(1, 6),
       seed=st.integers(0, 2**31 - 1))
def test_property_valid_lists(n, d, k, seed):
    X = np.random.default_rng(seed).normal(size=(n, d))
    idx, dist = nn_descent(X, k, random_state=seed)
    assert idx.shape == (n, k)
    assert np.all((idx >= 0) & (idx < n))
    assert not np.any(idx == np.arange(n)[:, None])
    assert all(len(set(row)) == k for row in idx)
    assert np.all(np.diff(dist, axis=1) >= 0)
    assert tie_robust_recall(X, idx, k) >= 0.9


def test_knn_graph_approximate_uses_it_and_is_symmetric():
    X = clustered(2500, 10, 5)
    g = gc.knn_graph(X, 8, method="approximate", random_state=0)
    W = g.distances
    assert (W != W.T).nnz == 0
    We = gc.knn_graph(X, 8, method="exact").distances
    # nearly the same edges as the exact graph, with the same (float64) lengths
    same = W.multiply(We > 0).nnz / We.nnz
    common = (W > 0).multiply(We > 0)
    np.testing.assert_allclose(W[common.nonzero()], We[common.nonzero()], rtol=1e-12)
    assert same >= 0.98


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300), k=st.integers(1, 5), seed=st.integers(0, 2**31 - 1))
def test_property_reverse_lists_equal_a_serial_counting_sort(n, k, seed):
    # the threaded reverse lists (buckets of targets, row chunks) against the plain serial
    # counting sort: the same CSR arrays, each wanted point's sources in (point, slot) order
    from graphclust.graphs._nndescent import _candidate_work, _reverse_lists

    rng = np.random.default_rng(seed)
    ind = rng.integers(-1, n, size=(n, k)).astype(np.int32)
    want = (rng.random(n) < rng.choice([0.0, 0.3, 1.0])).astype(np.uint8)
    # scratch arrays holding an earlier call's numbers: nothing of them may leak through
    work = [np.full_like(a, 7) for a in _candidate_work(n, k, 3)[:6]]
    start, src, slot = _reverse_lists(ind, want, *work)
    src, slot = src[:start[n]], slot[:start[n]]
    pairs = sorted((j, i, s) for i in range(n) for s in range(k)
                   if (j := ind[i, s]) >= 0 and want[j])
    np.testing.assert_array_equal(np.diff(start), np.bincount([p[0] for p in pairs],
                                                              minlength=n).astype(np.int64))
    np.testing.assert_array_equal(src, [p[1] for p in pairs])
    np.testing.assert_array_equal(slot, [p[2] for p in pairs])


def candidates_reference(ind, flag, m, seed, it):
    """Each point's new and old candidates as sets, by the definition: of its list's entries
    and of the points whose lists hold it, the m of smallest hashed priority among the new
    (flagged) ones and among the old ones; a point with no new candidate gets none (it has no
    local join). Also the flags after: a new entry sampled as a candidate becomes old."""
    from graphclust.graphs._nndescent import _hash3

    n, k = ind.shape
    offers = [[] for _ in range(n)]  # (priority, j, new)
    for i in range(n):
        for s in range(k):
            j = int(ind[i, s])
            if j >= 0:
                p = int(_hash3(seed + it, min(i, j), max(i, j))) >> 32
                offers[i].append((p, j, bool(flag[i, s])))
                offers[j].append((p, i, bool(flag[i, s])))
    new, old = [], []
    for i in range(n):
        pick = {kind: sorted(set((p, j) for p, j, f in offers[i] if f == kind))[:m]
                for kind in (True, False)}
        live = bool(pick[True])
        new.append({j for _, j in pick[True]} if live else set())
        old.append({j for _, j in pick[False]} if live else set())
    after = flag.copy()
    for i in range(n):
        for s in range(k):
            if flag[i, s] and ind[i, s] in new[i]:
                after[i, s] = 0
    return new, old, after


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 120), k=st.integers(1, 6), m=st.integers(1, 8),
       share=st.sampled_from([0.0, 0.01, 0.2, 1.0]), seed=st.integers(0, 2**31 - 1))
def test_property_candidates_equal_their_definition(n, k, m, share, seed):
    # the threaded candidates (bucketed reverse lists, heaps of packed priorities, only
    # points with something new) against the definition, late iterations included (few or
    # no flagged entries)
    from graphclust.graphs._nndescent import _candidate_work, _candidates

    rng = np.random.default_rng(seed)
    ind = np.stack([rng.permutation(np.delete(np.arange(n), i))[:k] if n - 1 >= k else
                    np.r_[np.delete(np.arange(n), i), -np.ones(k - n + 1, int)]
                    for i in range(n)]).astype(np.int32)
    flag = ((rng.random((n, k)) < share) & (ind >= 0)).astype(np.uint8)
    new_ref, old_ref, after = candidates_reference(ind, flag, m, seed, 3)
    work = tuple(np.full_like(a, 7) for a in _candidate_work(n, k, m))
    new_c, old_c = _candidates(ind, flag, m, seed, 3, work)
    assert [set(r[r >= 0].tolist()) for r in new_c] == new_ref
    assert [set(r[r >= 0].tolist()) for r in old_c] == old_ref
    np.testing.assert_array_equal(flag, after)


def merge_reference(idx, dist, k):
    """Each row's k nearest distinct indices of the concatenated lists, by (distance, index)."""
    out_i, out_d = [], []
    for ji, di in zip(idx, dist):
        pairs = sorted(set(zip(di.tolist(), ji.tolist())))
        seen, row = set(), []
        for d, j in pairs:
            if j >= 0 and j not in seen:
                seen.add(j)
                row.append((d, j))
        row = row[:k]
        out_d.append([d for d, _ in row])
        out_i.append([j for _, j in row])
    return np.array(out_i, dtype=np.int64), np.array(out_d)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), k=st.integers(1, 6), r=st.integers(1, 4),
       seed=st.integers(0, 2**31 - 1))
def test_property_merge_lists_equals_a_sorted_union(n, k, r, seed):
    from graphclust.graphs._numba import merge_lists

    rng = np.random.default_rng(seed)
    pool = 3 * k  # few candidates, so that searches share entries (and, with ties, distances)
    point = rng.integers(0, 4, size=(n, pool)).astype(np.float64)  # one distance per index
    blocks_i, blocks_d = [], []
    for _ in range(r):
        j = np.stack([rng.choice(pool, size=k, replace=False) for _ in range(n)])
        d = np.take_along_axis(point, j, axis=1)
        o = np.lexsort((j, d), axis=1)
        blocks_i.append(np.take_along_axis(j, o, axis=1))
        blocks_d.append(np.take_along_axis(d, o, axis=1))
    I, D = np.hstack(blocks_i), np.hstack(blocks_d)
    got_i, got_d = merge_lists(I, D, k)
    ref_i, ref_d = merge_reference(I, D, k)
    np.testing.assert_array_equal(got_i, ref_i)
    np.testing.assert_array_equal(got_d, ref_d)
    # the order of the searches does not matter
    perm = rng.permutation(r)
    I2 = np.hstack([blocks_i[p] for p in perm])
    D2 = np.hstack([blocks_d[p] for p in perm])
    np.testing.assert_array_equal(merge_lists(I2, D2, k)[0], got_i)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 30), m=st.integers(1, 24), seed=st.integers(0, 2**31 - 1),
       dtype=st.sampled_from([np.float32, np.float64]), view=st.booleans())
def test_property_rows_sorted_by_length_as_a_stable_argsort(n, m, seed, dtype, view):
    # in place, the permutation of numpy's stable argsort: ties (few distinct lengths), -0.0
    # beside 0.0 and infinite lengths keep their order; also on a column slice (a view)
    from graphclust.graphs._numba import sort_rows_by_length

    rng = np.random.default_rng(seed)
    values = np.array([-0.0, 0.0, 0.5, 1.0, 2.0, np.inf])
    dist = rng.choice(values, size=(n, m + 2)).astype(dtype)
    idx = rng.integers(-1, 1000, size=(n, m + 2))
    d, i = (dist[:, :m], idx[:, :m]) if view else (dist, idx)
    order = np.argsort(d, axis=1, kind="stable")
    want_d, want_i = np.take_along_axis(d, order, axis=1), np.take_along_axis(i, order, axis=1)
    sort_rows_by_length(d, i)
    np.testing.assert_array_equal(i, want_i)
    np.testing.assert_array_equal(d, want_d)
    assert np.array_equal(np.signbit(d), np.signbit(want_d))  # -0.0 stays where it was


def test_several_searches_find_more_true_neighbours():
    from graphclust.graphs import nearest_neighbors

    X = clustered(3000, 20, 7)
    one = nearest_neighbors(X, 10, method="approximate", random_state=4)
    # one search is NN-descent at the first seed that random_state's generator draws, as before
    # n_searches existed (lists sorted by their exact lengths)
    ref_i, ref_d = nn_descent(X, 10, random_state=int(np.random.default_rng(4).integers(2**62)),
                              exact=True)
    order = np.argsort(ref_d, axis=1, kind="stable")
    np.testing.assert_array_equal(one[0], np.take_along_axis(ref_i, order, axis=1))
    three = nearest_neighbors(X, 10, method="approximate", random_state=4, n_searches=3)
    r1, r3 = tie_robust_recall(X, one[0], 10), tie_robust_recall(X, three[0], 10)
    assert r3 >= r1 and r3 >= 0.998
    # lists stay valid: distinct, never the point itself, sorted, exact lengths
    idx, dist = three
    assert all(len(set(row)) == 10 for row in idx)
    assert not np.any(idx == np.arange(3000)[:, None])
    assert np.all(np.diff(dist, axis=1) >= 0)
    np.testing.assert_allclose(dist, np.sqrt(((X[:, None, :] - X[idx]) ** 2).sum(-1)),
                               rtol=1e-12)
    # the first search of three is the single search: a merge never loses a nearer entry
    assert np.all(dist[:, -1] <= one[1][:, -1])


def test_a_longer_search_keeps_its_nearest_entries():
    """search_neighbors: the first n_neighbors of the longer search's sorted lists, which find
    more true neighbours; the exact path ignores it."""
    from graphclust.graphs import nearest_neighbors

    X = clustered(3000, 20, 7)
    short = nearest_neighbors(X, 10, method="approximate", random_state=4)
    same = nearest_neighbors(X, 10, method="approximate", random_state=4, search_neighbors=10)
    np.testing.assert_array_equal(short[0], same[0])
    longer = nearest_neighbors(X, 20, method="approximate", random_state=4)
    kept = nearest_neighbors(X, 10, method="approximate", random_state=4, search_neighbors=20)
    np.testing.assert_array_equal(kept[0], longer[0][:, :10])
    np.testing.assert_array_equal(kept[1], longer[1][:, :10])
    assert tie_robust_recall(X, kept[0], 10) >= max(tie_robust_recall(X, short[0], 10), 0.998)
    small = clustered(200, 3, 1)
    np.testing.assert_array_equal(nearest_neighbors(small, 5, search_neighbors=50)[0],
                                  nearest_neighbors(small, 5)[0])
    # capped at n - 1 on the approximate path
    capped = nearest_neighbors(small, 5, method="approximate", random_state=0,
                               search_neighbors=500)
    assert capped[0].shape == (200, 5)


@pytest.mark.parametrize("bad", [4, 2.5, "30"])
def test_search_neighbors_is_checked(bad):
    from graphclust.graphs import nearest_neighbors

    with pytest.raises((ValueError, TypeError), match="search_neighbors"):
        nearest_neighbors(clustered(100, 3, 0), 5, method="approximate", random_state=0,
                          search_neighbors=bad)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3"])
def test_n_searches_is_checked(bad):
    X = clustered(100, 3, 0)
    with pytest.raises((ValueError, TypeError), match="n_searches"):
        gc.knn_graph(X, 5, n_searches=bad)
