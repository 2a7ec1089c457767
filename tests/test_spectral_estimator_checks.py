"""scikit-learn's estimator contract for SpectralClustering and AHKClustering."""

import warnings

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

import graphclust as gc

from _estimator_checks import knn_expected_failures as _expected_failures  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@parametrize_with_checks(
    [gc.SpectralClustering(3, random_state=0), gc.AHKClustering(3, n_eigenpairs=5, random_state=0)],
    expected_failed_checks=_expected_failures,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
