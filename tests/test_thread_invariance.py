"""The library's thread count follows the machine's load (`graphclust.threads`), so a result
must not depend on it: the exact neighbour lists and a whole fit on tie-heavy data are the same
on one thread and on two."""

import warnings

import numpy as np

import graphclust as gc
from graphclust.threads import limit_threads


def _ties(seed=0, n=400, d=40):
    # small integer coordinates: many neighbours at exactly the same distance; more than 15
    # dimensions, so that scikit-learn searches by brute force (its rounding follows the threads)
    return np.random.default_rng(seed).integers(0, 3, size=(n, d)).astype(float)


def test_exact_lists_are_the_same_on_one_and_two_threads():
    X = _ties()
    found = []
    for n in (1, 2):
        with limit_threads(n):
            found.append(gc.nearest_neighbors(X, 10, method="exact"))
    (i1, d1), (i2, d2) = found
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(i1, i2)


def test_a_fit_on_tied_data_is_the_same_on_one_and_two_threads():
    X = _ties(1)
    labels = []
    for n in (1, 2):
        with limit_threads(n), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            labels.append(gc.StabilityClustering(random_state=0).fit(X).labels_)
    np.testing.assert_array_equal(labels[0], labels[1])
