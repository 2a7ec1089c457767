"""Tables of few-valued features whose features are independent hold no classes
(`_feature_independence`): the test against a dense reference, its invariances, and the
warning of `StabilityClustering` on such tables (uniform binary answers got 2-30 clusters
with no warning)."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chi2_contingency
from sklearn.metrics import normalized_mutual_info_score

from graphclust import StabilityClustering, StabilityWarning
from graphclust.cluster._feature_independence import (FEW_VALUES, INDEPENDENCE_LEVEL,
                                                      codes_dependence, feature_dependence,
                                                      few_valued)

_SAID = "depend on each other"


def _coins(n, d, seed):
    return (np.random.default_rng(seed).random((n, d)) < 0.5).astype(float)


def _classes(n, d, seed, p=0.95):
    """Two latent classes of equal weight answering each of `d` binary questions yes with
    probability p and 1 - p: every feature tells them apart."""
    rng = np.random.default_rng(seed)
    z = rng.integers(2, size=n)
    return (rng.random((n, d)) < np.where(z[:, None] == 1, p, 1 - p)).astype(float), z


def _reference(X):
    """The smallest p-value of scipy's Pearson chi-square test over every pair of non-constant
    columns, times the number of pairs (at most 1)."""
    cols = [c for c in X.T if np.unique(c).size > 1]
    ps = []
    for i in range(len(cols)):
        for j in range(i + 1, len(cols)):
            a = np.unique(cols[i], return_inverse=True)[1].ravel()
            b = np.unique(cols[j], return_inverse=True)[1].ravel()
            table = np.zeros((a.max() + 1, b.max() + 1))
            np.add.at(table, (a, b), 1)
            ps.append(chi2_contingency(table, correction=False)[1])
    return min(1.0, min(ps) * len(ps)), len(ps)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 60), st.integers(2, 5), st.integers(2, 4), st.integers(0, 10**6))
def test_the_pairwise_test_is_scipys_chi_square_with_bonferroni(n, d, values, seed):
    X = np.random.default_rng(seed).integers(0, values, (n, d)).astype(float)
    if sum(np.unique(c).size > 1 for c in X.T) < 2:
        assert feature_dependence(X) == (None, 0)
        return
    p, pairs = feature_dependence(X)
    p_ref, pairs_ref = _reference(X)
    assert pairs == pairs_ref
    assert p == pytest.approx(p_ref, rel=1e-9, abs=1e-300)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6))
def test_the_test_ignores_row_and_column_order_and_how_values_are_coded(seed):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, (80, 4)).astype(float)
    p = feature_dependence(X)
    assert feature_dependence(X[rng.permutation(80)]) == p
    assert feature_dependence(X[:, rng.permutation(4)])[0] == pytest.approx(p[0], rel=1e-12)
    assert feature_dependence(7.5 - 3.0 * X)[0] == pytest.approx(p[0], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(20, 200), st.integers(2, 6), st.floats(0.5, 0.95), st.integers(0, 10**6))
def test_the_early_stop_gives_the_same_verdict(n, d, p, seed):
    # two classes answering yes with p and 1 - p: from independent (p = 0.5) to clear classes
    rng = np.random.default_rng(seed)
    z = rng.integers(2, size=n)
    X = (rng.random((n, d)) < np.where(z[:, None] == 1, p, 1 - p)).astype(float)
    full, pairs = feature_dependence(X)
    early = codes_dependence(X)
    if full is None or early is None:
        assert full is None or not few_valued(X)
        return
    assert early[1] == pairs and (early[0] < INDEPENDENCE_LEVEL) == (full < INDEPENDENCE_LEVEL)
    assert early[0] >= full - 1e-15
    if full >= INDEPENDENCE_LEVEL:
        assert early[0] == full


def test_copies_of_rows_count_as_evidence():
    # four answer patterns of two classes: repeated, the same dependence is ever clearer
    base = np.array([[0, 0], [1, 1], [0, 0], [1, 1], [0, 1], [1, 0]], float)
    p1 = feature_dependence(base)[0]
    p10 = feature_dependence(np.repeat(base, 10, axis=0))[0]
    assert p10 < p1 and p10 < INDEPENDENCE_LEVEL <= p1


def test_constant_features_are_left_out():
    X = np.c_[_coins(200, 3, 1), np.ones(200)]
    assert feature_dependence(X) == feature_dependence(X[:, :3])
    assert feature_dependence(np.c_[np.ones(50), np.zeros(50), _coins(50, 1, 0)]) == (None, 0)


def test_which_tables_are_read_as_codes():
    rng = np.random.default_rng(0)
    assert few_valued(rng.integers(0, FEW_VALUES, (500, 3)))
    assert not few_valued(rng.integers(0, FEW_VALUES + 1, (5000, 3)))
    assert not few_valued(rng.normal(size=(100, 3)))
    assert not few_valued(_coins(100, 1, 0))  # one feature: no pair to test
    # values that do not repeat are no codes, however few: eleven continuous points
    assert not few_valued(rng.normal(size=(11, 2)))
    assert few_valued(np.c_[np.arange(6) % 3, np.arange(6) % 2])
    assert not few_valued(np.c_[np.arange(6) % 3, np.arange(6) % 4])  # 4 values of 6 rows
    assert not few_valued(sp.csr_matrix(_coins(100, 4, 0)))
    # a continuous feature that starts late (past the first rows read) still rules it out
    X = _coins(3000, 3, 2)
    X[2000:, 1] = rng.normal(size=1000)
    assert not few_valued(X)


def test_independent_coins_are_told_apart_from_latent_classes():
    assert feature_dependence(_coins(300, 5, 1))[0] >= INDEPENDENCE_LEVEL
    assert feature_dependence(_classes(300, 6, 0)[0])[0] < 1e-20


def _fit(X, **kw):
    # the graph's fit of a binary table (by default such tables are the latent class model's:
    # tests/test_latent_classes.py)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = StabilityClustering(random_state=0, binary_tables="graph", **kw).fit(X)
    return m, [str(w.message) for w in caught if issubclass(w.category, StabilityWarning)]


@pytest.mark.parametrize("d, n, seed", [(5, 200, 0), (5, 200, 1), (4, 500, 0)])
def test_independent_binary_answers_are_warned_about(d, n, seed):
    # before: 3 and 4 metastable clusters, and the 16 answer patterns of 4 questions as 16
    # clusters (each an atom of 31 copies), all with no warning
    m, said = _fit(_coins(n, d, seed))
    assert m.n_clusters_ >= 2
    assert any(_SAID in s and f"the {m.n_clusters_} clusters found" in s for s in said)


def test_latent_classes_of_binary_answers_are_not():
    X, z = _classes(300, 6, 0)
    m, said = _fit(X)
    assert not any(_SAID in s for s in said)
    assert normalized_mutual_info_score(z, m.labels_) > 0.9


def test_the_test_is_part_of_the_null_model():
    m, said = _fit(_coins(200, 5, 0), null_model=False)
    assert m.n_clusters_ >= 2 and not any(_SAID in s for s in said)
