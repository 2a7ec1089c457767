"""A flows run kept and taken to longer walks (`KrylovFlows`): the Krylov space of I - a0 S does
not depend on a0, so the block Lanczos run of a scan gives the flows at longer walk lengths with
a few more steps; checked against the dense kernel, against a fresh run at those walk lengths
(its flows and the step where it stops), and through `markov_stability_scan`."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

import graphclust as gc
from graphclust.cluster._markov_selection import markov_stability_scan
from graphclust.cluster._lanczos_quadrature import KrylovFlows
from graphclust.cluster._stability import lanczos_flows
from graphclust.datasets import two_moons

pytestmark = pytest.mark.usefixtures("one_blas_thread")


def _alphas(top):
    taus = 2.0 ** np.arange(top + 1)
    return taus / (1 + taus)


def _dense_flows(W, B, alphas):
    K = gc.ConsistencyKernel(W, 0.5, method="dense")
    return [B.T @ K.with_alpha(a).apply(B) for a in alphas]


@pytest.fixture(scope="module")
def moons():
    X, _ = two_moons(600, noise=0.08, random_state=0)
    return gc.fuzzy_affinity(gc.knn_graph(X, 10))


def _pieces(W, b, seed):
    # b random pieces, scaled by sqrt(d): the scan's B
    d = np.asarray(W.sum(axis=1)).ravel()
    n = d.size
    labels = np.random.default_rng(seed).permutation(np.arange(n) * b // n)
    return sp.csr_matrix((np.sqrt(d), labels, np.arange(n + 1)), shape=(n, b))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10**6), b=st.integers(2, 24), short=st.integers(0, 6),
       extra=st.integers(1, 7))
def test_a_run_taken_to_longer_walks_matches_the_dense_kernel(moons, seed, b, short, extra):
    B = _pieces(moons, b, seed)
    _, kept = lanczos_flows(moons, B, _alphas(short), rtol=1e-8, method="lanczos", keep=True)
    assert isinstance(kept, KrylovFlows)
    alphas = _alphas(short + extra)
    got = kept.flows(alphas)
    assert got is not None
    for F, R in zip(got, _dense_flows(moons, B.toarray(), alphas)):
        np.testing.assert_allclose(F, R, atol=1e-8 * np.abs(R).max())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_stops_where_a_fresh_run_at_those_walks_stops(moons, seed):
    # the estimates are those of a fresh run up to rounding: the same stopping step (within
    # one, where an estimate sits at the rule's threshold) and flows within the rule's tol
    B = _pieces(moons, 16, seed)
    _, kept = lanczos_flows(moons, B, _alphas(6), keep=True)
    before = len(kept.run.As)
    got = kept.flows(_alphas(13))
    _, fresh = lanczos_flows(moons, B, _alphas(13), keep=True)
    assert len(kept.run.As) > before  # longer walks took more steps
    assert abs(len(kept.run.As) - len(fresh.run.As)) <= 1
    for F, R in zip(got, fresh.flows(_alphas(13))):
        np.testing.assert_allclose(F, R, atol=1e-6 * np.abs(R).max())


def test_walks_within_the_run_take_no_step_and_released_runs_stop(moons):
    B = _pieces(moons, 10, 0)
    ref, kept = lanczos_flows(moons, B, _alphas(8), keep=True)
    steps = len(kept.run.As)
    for F, R in zip(kept.flows(_alphas(8)), ref):
        np.testing.assert_allclose(F, R, rtol=1e-12, atol=1e-14)
    assert kept.flows(_alphas(8)[:4]) is not None and len(kept.run.As) == steps
    assert kept.flows([0.5, 1.0]) is None and kept.flows([]) is None
    kept.run.release()  # no blocks left: longer walks cannot be reached
    assert kept.flows(_alphas(14)) is None
    assert kept.flows(_alphas(5)) is not None


def test_a_moments_run_keeps_nothing(moons):
    B = _pieces(moons, 4, 0)
    flows, kept = lanczos_flows(moons, B, _alphas(6), method="moments", keep=True)
    assert kept is None and len(flows) == 7


def test_the_scan_of_longer_walks_reuses_the_run():
    # 2 000 points (above the scan's dense kernel): the longer scan's flows, hierarchy and
    # tiers' inputs equal those of a scan that runs its own flows; another graph's pieces are
    # not reused
    X, _ = two_moons(2000, noise=0.1, random_state=3)
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    first = markov_stability_scan(W, taus=2.0 ** np.arange(8), keep_quadrature=True)
    kept = first["quadrature"]
    assert isinstance(kept, KrylovFlows) and np.array_equal(kept.pieces, first["pieces"])
    taus = 2.0 ** np.arange(14)
    fresh = markov_stability_scan(W, taus=taus, fine=first["fine"])
    assert fresh["quadrature"] is None
    reused = markov_stability_scan(W, taus=taus, fine=first["fine"], quadrature=kept)
    for F, R in zip(reused["flows"], fresh["flows"]):
        np.testing.assert_allclose(F, R, atol=1e-6 * np.abs(R).max())
    assert np.array_equal(reused["consensus_c"], fresh["consensus_c"])
    for a, b in zip(reused["consensus"], fresh["consensus"]):
        assert adjusted_rand_score(a, b) == 1.0
    other = np.roll(first["pieces"], 1)
    kept.pieces = other  # keyed on other pieces: the scan runs its own flows
    again = markov_stability_scan(W, taus=taus, fine=first["fine"], quadrature=kept)
    for F, R in zip(again["flows"], fresh["flows"]):
        np.testing.assert_allclose(F, R, rtol=1e-12, atol=1e-15)
