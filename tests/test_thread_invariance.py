"""The library's thread count follows the machine's load (`graphclust.threads`), so a result
must not depend on it: the exact neighbour lists and a whole fit on tie-heavy data are the same
on one thread and on two."""

import warnings

import numpy as np

import graphclust as gc
from graphclust.threads import limit_threads, set_num_threads


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
    # the data of the test above (its lists differed with the threads before): the fit's
    # pieces, the walk's flows between them and the labels
    X = _ties()
    fits = []
    before = set_num_threads(None)  # restored below
    try:
        for n in (1, 2):  # the count a fit takes for itself (else the load chooses it)
            set_num_threads(n)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fits.append(gc.StabilityClustering(random_state=0).fit(X))
    finally:
        set_num_threads(before)
    one, two = fits
    np.testing.assert_array_equal(one.fine_labels_, two.fine_labels_)
    # the flows agree to rounding only (1e-13 relative: docs/reliability.md)
    np.testing.assert_allclose(one.scan_["flows"], two.scan_["flows"], rtol=1e-10, atol=1e-15)
    np.testing.assert_array_equal(one.labels_, two.labels_)
