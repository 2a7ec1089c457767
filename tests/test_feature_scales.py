"""`warn_feature_scales`: one column far wider than the rest is reported before a fit."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from graphclust import (AHKClustering, ConsistencyClustering, FeatureScaleWarning,
                        SpectralClustering, StabilityClustering)
from graphclust._validation import FEATURE_SCALE_RATIO, warn_feature_scales


def _spread(X):
    # dense reference: largest over median standard deviation of the varying columns
    sd = np.asarray(X, dtype=np.float64).std(axis=0)
    sd = sd[sd > 0]
    return sd.max() / np.median(sd)


def _quiet(X, **kw):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = warn_feature_scales(X, **kw)
    return out, [x for x in w if issubclass(x.category, FeatureScaleWarning)]


def test_a_wide_column_is_named():
    X = np.random.default_rng(0).normal(size=(200, 4)) * [1.0, 2.0, 1.0, 5e3]
    spread, w = _quiet(X)
    assert spread == pytest.approx(_spread(X), rel=1e-12)
    assert len(w) == 1 and "column 3" in str(w[0].message)
    assert "StandardScaler" in str(w[0].message)


def test_columns_on_one_scale_pass_silently():
    X = np.random.default_rng(1).normal(size=(300, 6)) * [1, 2, 3, 4, 5, 6]
    spread, w = _quiet(X)
    assert spread == pytest.approx(_spread(X), rel=1e-12) and spread < FEATURE_SCALE_RATIO
    assert w == []


def test_constant_columns_sparse_input_and_one_column_are_not_judged():
    rng = np.random.default_rng(2)
    X = np.c_[rng.normal(size=(50, 2)), np.zeros(50), np.full(50, 7.0)]
    spread, w = _quiet(X)  # the two constant columns are left out
    assert spread == pytest.approx(_spread(X[:, :2]), rel=1e-12) and w == []
    assert _quiet(np.ones((40, 3)))[0] is None
    assert _quiet(rng.normal(size=(40, 1)))[0] is None
    assert _quiet(sp.random(40, 5, density=0.3, random_state=0, format="csr"))[0] is None


def test_every_row_is_read_in_blocks():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    X[50:, 0] *= 1e6  # wide only in the second half
    spread, w = _quiet(X)
    assert len(w) == 1 and spread == pytest.approx(_spread(X), rel=1e-12)
    assert _quiet(X, chunk=7)[0] == pytest.approx(spread, rel=1e-12)
    assert _quiet(X[::-1])[0] == pytest.approx(spread, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), log_scale=st.floats(-290, 290), perm=st.randoms())
def test_scale_and_column_order_change_nothing(seed, log_scale, perm):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 5)) * 10.0 ** rng.uniform(-3, 3, size=5)
    cols = list(range(5))
    perm.shuffle(cols)
    base, w0 = _quiet(X)
    scaled, w1 = _quiet(X * 10.0**log_scale)  # coordinates near 1e-290 .. 1e290
    permuted, w2 = _quiet(X[:, cols])
    assert np.isfinite(scaled)
    assert scaled == pytest.approx(base, rel=1e-9) and permuted == pytest.approx(base, rel=1e-12)
    if base > FEATURE_SCALE_RATIO * (1 + 1e-6) or base < FEATURE_SCALE_RATIO * (1 - 1e-6):
        assert len(w0) == len(w1) == len(w2)


def test_the_fit_warns_the_same_for_any_row_order():
    rng = np.random.default_rng(4)
    X = np.r_[rng.normal(size=(60, 3)), rng.normal(size=(60, 3)) + 8.0] * [1.0, 1.0, 1e4]

    def messages(Z):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            StabilityClustering(random_state=0).fit(Z)
        return [str(x.message) for x in w if issubclass(x.category, FeatureScaleWarning)]

    first = messages(X)
    assert len(first) == 1 and "column 2" in first[0]
    assert messages(X[rng.permutation(len(X))]) == first


def _wide_blobs():
    rng = np.random.default_rng(5)
    return np.r_[rng.normal(size=(40, 3)), rng.normal(size=(40, 3)) + 6.0] * [1.0, 1.0, 1e4]


@pytest.mark.parametrize("make, at_caller", [
    (lambda: SpectralClustering(n_clusters=2, random_state=0), True),
    (lambda: AHKClustering(n_clusters=2, random_state=0), True),
    (lambda: ConsistencyClustering(criterion="omega", max_clusters=3, random_state=0), True),
    # the default criterion warns from the StabilityClustering it delegates to
    (lambda: ConsistencyClustering(random_state=0), False),
])
def test_every_euclidean_point_estimator_warns(make, at_caller):
    with pytest.warns(FeatureScaleWarning) as record:
        make().fit(_wide_blobs())
    ours = [w for w in record if issubclass(w.category, FeatureScaleWarning)]
    assert len(ours) == 1 and "column 2" in str(ours[0].message)
    assert (ours[0].filename == __file__) == at_caller


def test_cosine_distances_are_not_judged_by_column_scales():
    with warnings.catch_warnings():
        warnings.simplefilter("error", FeatureScaleWarning)
        StabilityClustering(metric="cosine", random_state=0).fit(_wide_blobs() + 1.0)
