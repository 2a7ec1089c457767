"""scikit-learn estimator checks that graphclust's kNN estimators fail by design.

n_neighbors >= n_samples is an error, not a silent cap (the project's design notes); these checks
fit data with as many samples as the default n_neighbors = 10.
"""

import sklearn
from sklearn.utils.fixes import parse_version

KNN_TOO_LARGE = "n_neighbors=10 >= n_samples=10 is refused by design (an error, not a silent cap)"


def knn_expected_failures(estimator=None):
    """{check name: reason} for `parametrize_with_checks(expected_failed_checks=...)`."""
    failures = {"check_estimators_nan_inf": KNN_TOO_LARGE, "check_fit2d_1feature": KNN_TOO_LARGE}
    if parse_version(sklearn.__version__) < parse_version("1.8"):
        # before 1.8 this check fits 10 samples (15 since)
        failures["check_n_features_in_after_fitting"] = KNN_TOO_LARGE
    return failures
