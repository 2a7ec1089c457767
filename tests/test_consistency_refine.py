"""Seeds that do not depend on the probe draw: `consistency_path(relative_error=...,
refine_budget=...)` makes exact, by solves, the estimated column norms that could change a
greedy seed step (issue 14: labels moved between random_state values on USPS)."""

import numpy as np

import graphclust as gc
from graphclust.cluster._seeds import consistency_path
from graphclust.datasets import three_moons


def _kernel(n=900):
    X, _ = three_moons(n, random_state=0)
    W = gc.affinity(gc.knn_graph(X, 10), sigma=0.08)
    # few eigenpairs: the sampled remainder carries much of nu (relative errors 2-3 %)
    return gc.ConsistencyKernel(W, 0.99, method="cg", n_eigenpairs=16, random_state=0)


def test_refined_seeds_equal_the_exact_norms_seeds_for_every_probe_draw():
    K = _kernel()
    exact = consistency_path(K, K.column_norms("exact").nu, [6])
    moved = 0
    for seed in range(4):
        est = K.column_norms("estimate", n_probes=32, random_state=seed)
        plain = consistency_path(K, est.nu, [6])
        moved += not np.array_equal(plain["seeds"], exact["seeds"])
        ref = consistency_path(K, est.nu, [6], relative_error=est.relative_error,
                               refine_budget=K.n)
        np.testing.assert_array_equal(ref["seeds"], exact["seeds"])
        assert 0 < ref["refined"].size < K.n / 3
        np.testing.assert_allclose(ref["nu"][ref["refined"]],
                                   K.column_norms("exact").nu[ref["refined"]], rtol=1e-6)
    assert moved >= 3  # without refinement the draw moves the seeds (measured: 4 of 4)


def test_no_budget_or_no_errors_is_the_plain_path():
    K = _kernel(300)
    est = K.column_norms("estimate", n_probes=8, random_state=0)
    plain = consistency_path(K, est.nu, [3])
    for kw in ({"relative_error": est.relative_error}, {"refine_budget": 100}):
        other = consistency_path(K, est.nu, [3], **kw)
        np.testing.assert_array_equal(other["seeds"], plain["seeds"])
        assert other["refined"].size == 0
