"""Hartigan's dip test (`graphclust.cluster._dip_test`) and its use by StabilityClustering."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.cluster import StabilityWarning
from graphclust.cluster._dip_test import (DIP_DRAWS, DIP_NULL_MAX_SAMPLES, dip_draws,
                                          dip_statistic, dip_test)


def _samples():
    # the draws of the reference values below, in this order
    rng = np.random.default_rng(2026)
    return [rng.normal(size=300), np.r_[rng.normal(size=100), rng.normal(size=100) + 3.0],
            rng.integers(0, 5, 60).astype(float), rng.random(50)]


def test_the_dip_equals_r_diptests():
    # reference: the C implementation of AS 217 in R's diptest (Maechler), through the PyPI
    # package diptest 0.12.0 (`diptest.dipstat`); 300 more samples of sizes 4-400, with
    # ties, agreed to 0.0 in the development check (docs/model_selection.md)
    expected = [0.015736457929822905, 0.025360180878052797, 0.10833333333333334,
                0.03902404220633481]
    got = [dip_statistic(x) for x in _samples()]
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


def test_the_dips_extremes():
    assert dip_statistic(np.r_[np.zeros(40), np.ones(40)]) == pytest.approx(0.25)
    # equally spaced points lie on their own minorant and majorant: 0, as in R's diptest;
    # a sample near that grid has about the least dip a sample can have, 1 / (2 n)
    assert dip_statistic(np.arange(100.0)) == 0.0
    near = np.arange(100.0) + np.random.default_rng(0).random(100) * 0.01
    assert dip_statistic(near) == pytest.approx(1 / 200, rel=0.02)
    assert dip_statistic([1.0, 2.0, 3.0]) == 0.0 and dip_statistic(np.full(10, 7.0)) == 0.0


@settings(max_examples=40, deadline=None)
@given(n=st.integers(4, 200), modes=st.integers(1, 3), seed=st.integers(0, 2**31 - 1),
       a=st.floats(1e-3, 1e3), b=st.floats(-1e3, 1e3), exp=st.integers(-900, 900))
def test_property_dip_bounds_and_invariances(n, modes, seed, a, b, exp):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n) + 5.0 * rng.integers(0, modes, n)
    d = dip_statistic(x)
    assert 0.0 <= d <= 0.25 + 1e-12
    assert dip_statistic(rng.permutation(x)) == d
    assert dip_statistic(x * 2.0 ** exp) == d  # power-of-two scales: exact, even near 1e+-270
    assert dip_statistic(-x) == pytest.approx(d, rel=1e-9)
    assert dip_statistic(a * x + b) == pytest.approx(d, rel=1e-6)


def test_dip_test_is_seeded_and_tells_one_mode_from_two():
    rng = np.random.default_rng(0)
    one, two = rng.normal(size=400), np.r_[rng.normal(size=200), rng.normal(size=200) + 5]
    assert dip_test(one, random_state=3) == dip_test(one, random_state=3)
    assert dip_test(one, random_state=3)[1] > 0.05 and dip_test(two, random_state=3)[1] < 0.01
    d, p = dip_test(two, n_draws=99)
    assert p == pytest.approx(1 / 100) and d == dip_statistic(two)


@pytest.mark.parametrize("level", [0.05, 0.01, 0.05 / 7, 0.001, 1e-4])
def test_dip_draws_resolve_the_level(level):
    n = dip_draws(level)
    assert n >= DIP_DRAWS and 1.0 / (n + 1) <= level / 2  # the floor can reject
    assert dip_draws(0.05) == DIP_DRAWS


@pytest.mark.parametrize("level", [0.0, 1.0, -0.1, float("nan")])
def test_dip_draws_refuse_a_level_outside_zero_one(level):
    with pytest.raises(ValueError, match="level must be in"):
        dip_draws(level)


def test_a_bonferroni_level_still_rejects_two_modes():
    # two clear modes: the p-value is the floor of its draws, below 0.05 / 30 with
    # dip_draws' draws and not with the default 200
    from graphclust.cluster._valley_joins import join_unimodal_pairs
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, 150), rng.normal(8, 1, 150)][:, None]
    sub = np.repeat([0, 1], 150)
    order = np.argsort(X[:, 0])  # a chain along the line: each point to the next
    W = sp.coo_matrix((np.ones(299), (order[:-1], order[1:])), shape=(300, 300))
    level = 0.05 / 30
    joined, p = join_unimodal_pairs(X, sub, (W + W.T).tocsr(), level=level)
    assert p[(0, 1)] < level and joined.max() == 1
    assert dip_test(X[:, 0], random_state=0)[1] > level  # 200 draws: floor 1 / 201


def test_dip_test_above_the_null_draws_size_compares_by_sqrt_n():
    rng = np.random.default_rng(1)
    n = 4 * DIP_NULL_MAX_SAMPLES
    assert dip_test(rng.normal(size=n), n_draws=50)[1] > 0.05
    assert dip_test(np.r_[rng.normal(size=n // 2), rng.normal(size=n // 2) + 2.5],
                    n_draws=50)[1] < 0.05


def _fit(X):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = gc.StabilityClustering(random_state=0).fit(X)
    return model, [str(w.message) for w in caught if issubclass(w.category, StabilityWarning)]


def test_a_structureless_line_that_passed_the_escape_null_is_warned(tmp_path):
    # n = 100 Gaussian points (seed 1007): c = 3 passed the escape-time null by chance
    X = np.random.default_rng(1007).normal(size=(100, 1))
    model, messages = _fit(X)
    assert model.n_clusters_ >= 2 and model.dip_pvalue_ >= 0.05
    assert any("dip test" in m and f"{model.n_clusters_} clusters" in m for m in messages)
    assert model.dip_ == dip_statistic(X)
    loaded = gc.StabilityClustering.load(model.save(tmp_path / "line.npz"))
    assert (loaded.dip_, loaded.dip_pvalue_) == (model.dip_, model.dip_pvalue_)


def test_blobs_on_a_line_and_points_in_the_plane_are_not_dip_tested_away():
    # the blobs of tests/test_gap_null.py, which pass silently
    rng = np.random.default_rng(0)
    X = (rng.normal(size=999) + 10 * np.repeat([0, 1, 2], 333))[:, None]
    model, messages = _fit(X)
    assert model.n_clusters_ == 3 and model.dip_pvalue_ < 0.01 and not messages
    plane, _ = gc.datasets.three_moons(600, random_state=0)
    model, _ = _fit(plane)
    assert model.dip_ is None and model.dip_pvalue_ is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 60), min_size=1, max_size=5), st.integers(0, 2**20))
def test_the_null_draws_are_one_seeded_sequence_read_by_prefix(requests, seed):
    """Whatever the order and the sizes of the requests, `_null_dips(m, k, seed)` is the
    first k dips of the seed's one sequence of draws: the numbers drawn afresh, read-only."""
    from graphclust.cluster import _dip_test as dt

    m = 40
    rng = np.random.default_rng(seed)
    fresh = np.array([dip_statistic(rng.random(m)) for _ in range(max(requests))])
    for k in requests:
        got = dt._null_dips(m, k, seed)
        np.testing.assert_array_equal(got, fresh[:k])
        assert not got.flags.writeable


def test_the_null_sequences_kept_are_bounded(monkeypatch):
    from graphclust.cluster import _dip_test as dt

    monkeypatch.setattr(dt, "NULL_SEQUENCES", 3)
    for m in range(10, 16):
        dt._null_dips(m, 5, 99)
    assert len(dt._null_sequences) <= 3
    assert (15, 99) in dt._null_sequences  # the most recent kept


@settings(max_examples=25, deadline=None)
@given(m=st.one_of(st.integers(0, 40), st.integers(41, 6000)), k=st.integers(0, 900),
       seed=st.integers(0, 2**31 - 1), batch=st.sampled_from([1, 7, 2**20]))
def test_the_null_draws_in_batches_are_the_dips_one_by_one(m, k, seed, batch):
    # the null's samples drawn by batches, sorted and their dips taken over the threads: the
    # numbers of drawing and testing one sample at a time, and the generator left where it
    # would be
    import graphclust.cluster._dip_test as dt
    from graphclust._validation import check_random_state

    one, batched = check_random_state(seed), check_random_state(seed)
    ref = np.array([dip_statistic(one.random(m)) for _ in range(k)])
    kept, dt.NULL_BATCH_NUMBERS = dt.NULL_BATCH_NUMBERS, batch * max(m, 1)
    try:
        got = dt._uniform_dips(batched, m, k)
    finally:
        dt.NULL_BATCH_NUMBERS = kept
    np.testing.assert_array_equal(got, ref)
    assert one.random() == batched.random()


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.lists(st.one_of(
    st.floats(0.0, 1.0, exclude_max=True),
    st.sampled_from([0.0, 0.5, np.nextafter(1.0, 0.0), 1e-300])), min_size=1, max_size=60),
    min_size=1, max_size=5).filter(lambda r: len({len(x) for x in r}) == 1))
def test_the_bucket_sort_of_uniform_rows_is_numpys(rows):
    # `_sort_uniform_rows`: numpy's sorted rows, also with repeated numbers, 0 and the
    # largest float below 1 (a bucket at each end), and rows of one number
    import graphclust.cluster._dip_test as dt

    U = np.array(rows, dtype=np.float64)
    got = U.copy()
    dt._sort_uniform_rows(got)
    np.testing.assert_array_equal(got, np.sort(U, axis=1))


def test_the_bucket_sort_sorts_rows_crowded_into_one_bucket():
    # numbers that are not uniform (all in one bucket) cost more, and still come out sorted
    import graphclust.cluster._dip_test as dt

    U = np.random.default_rng(0).random((3, 500)) * 1e-3
    got = U.copy()
    dt._sort_uniform_rows(got)
    np.testing.assert_array_equal(got, np.sort(U, axis=1))


@settings(max_examples=60, deadline=None)
@given(n=st.integers(4, 400), dip=st.floats(0.0, 0.2), level=st.sampled_from(
    [0.05, 0.05 / 3, 0.01, 0.001]), enough_times=st.sampled_from([1.0, 2.0, 3.0]),
    seed=st.integers(0, 3), generator=st.booleans())
def test_a_test_that_may_stop_early_keeps_the_fixed_tests_verdict(n, dip, level, enough_times,
                                                                  seed, generator):
    """With `enough`, the p-value is the fixed test's to the bit below `enough`, and at least
    `enough` where the fixed test's is (its verdict at `enough` unchanged); the same for a
    seed and for a generator."""
    from graphclust.cluster._dip_test import dip_pvalue

    n_draws = dip_draws(level)
    enough = min(0.99, level * enough_times)

    def rs():
        return np.random.default_rng(seed) if generator else seed

    fixed = dip_pvalue(dip, n, n_draws=n_draws, random_state=rs())
    early = dip_pvalue(dip, n, n_draws=n_draws, random_state=rs(), enough=enough)
    if fixed < enough:
        assert early == fixed
    else:
        assert early >= enough


def test_a_unimodal_sample_stops_after_few_draws_and_two_modes_read_them_all(monkeypatch):
    from graphclust.cluster import _dip_test as dt

    monkeypatch.setattr(dt, "_null_sequences", type(dt._null_sequences)())
    rng = np.random.default_rng(5)
    one = rng.normal(size=300)
    two = np.r_[rng.normal(size=150), rng.normal(size=150) + 6]
    n_draws = dip_draws(0.001)  # 1 999
    assert dip_test(one, n_draws=n_draws, random_state=11, enough=0.001)[1] >= 0.001
    assert dt._null_drawn(300, 11) < n_draws / 8
    assert dip_test(two, n_draws=n_draws, random_state=11, enough=0.001)[1] < 0.001
    assert dt._null_drawn(300, 11) == n_draws


@pytest.mark.parametrize("n_draws", [199, 1999, 7999])
@pytest.mark.parametrize("enough", [0.05, 0.05 / 3, 1e-3, 2.5e-4, 1.0])
def test_the_exceedances_that_end_a_test_are_the_fewest_past_enough(n_draws, enough):
    from graphclust.cluster._dip_test import _exceedances_past

    h = _exceedances_past(enough, n_draws)
    assert (1 + h) / (1 + n_draws) >= enough
    assert h == 0 or h / (1 + n_draws) < enough


def _links_by_chasing(x, minorant):
    """The minorant's (or majorant's) links by chasing them back through the array: the
    reference for the stack of `_dip_test._minorant_links` / `_majorant_links`."""
    n = x.size
    links = np.empty(n, dtype=np.int64)
    end = 0 if minorant else n - 1
    links[end] = end
    for j in (range(1, n) if minorant else range(n - 2, -1, -1)):
        links[j] = j - 1 if minorant else j + 1
        while True:
            a = links[j]
            b = links[a]
            if a == end or (x[j] - x[a]) * (a - b) < (x[a] - x[b]) * (j - a):
                break
            links[j] = b
    return links


@settings(max_examples=80, deadline=None)
@given(n=st.integers(1, 300), kind=st.sampled_from(["uniform", "ties", "two modes", "spikes"]),
       seed=st.integers(0, 2**31 - 1))
def test_the_hull_links_by_a_stack_are_the_chased_links(n, kind, seed):
    from graphclust.cluster._dip_test import _majorant_links, _minorant_links

    rng = np.random.default_rng(seed)
    x = {"uniform": lambda: rng.random(n),
         "ties": lambda: rng.integers(0, 4, n).astype(float),
         "two modes": lambda: np.r_[rng.normal(size=n // 2), rng.normal(size=n - n // 2) + 4],
         "spikes": lambda: np.repeat(rng.normal(size=max(1, n // 10)), 10)[:n]}[kind]()
    x = np.sort(x)
    assert np.array_equal(_minorant_links(x), _links_by_chasing(x, True))
    assert np.array_equal(_majorant_links(x), _links_by_chasing(x, False))
