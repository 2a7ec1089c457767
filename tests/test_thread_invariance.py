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


def _fits_on_one_and_two_threads(X):
    """`StabilityClustering(random_state=0)` fitted to X on one thread, then on two."""
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
    return fits


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
    one, two = _fits_on_one_and_two_threads(_ties())
    np.testing.assert_array_equal(one.fine_labels_, two.fine_labels_)
    # the flows agree to rounding only (1e-13 relative: docs/reliability.md)
    np.testing.assert_allclose(one.scan_["flows"], two.scan_["flows"], rtol=1e-10, atol=1e-15)
    np.testing.assert_array_equal(one.labels_, two.labels_)


def test_a_partition_is_numbered_by_first_appearance_on_any_thread_count():
    # 8 000 blobs: one partition on one thread and on two, numbered apart before (3 222 labels
    # differed: the scan's numbering followed the order of its merges, which rounding moves);
    # labels_ and every level of labels_at now number clusters by their first point in the
    # fit's own order of the points, which no row order of X moves either
    from sklearn.datasets import make_blobs

    X, _ = make_blobs(8000, centers=5, random_state=2)
    one, two = _fits_on_one_and_two_threads(X)
    np.testing.assert_array_equal(one.labels_, two.labels_)
    np.testing.assert_array_equal(one.representatives_, two.representatives_)
    for labels in [one.labels_] + [one.labels_at(tau=t) for t in one.scan_["taus"]]:
        ids, first = np.unique(labels[one._fit_order], return_index=True)
        assert (ids == np.arange(ids.size)).all() and (np.diff(first) > 0).all()
    perm = np.random.default_rng(1).permutation(X.shape[0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = gc.StabilityClustering(random_state=0).fit(X[perm])
    np.testing.assert_array_equal(again.labels_, one.labels_[perm])
