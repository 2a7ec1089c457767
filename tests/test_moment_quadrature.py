"""The flows' block Gauss quadrature from Chebyshev moments (`cluster._moment_quadrature`) and
its fused step (`kernels.chebyshev_step`) against dense references: the step's block and
segment sums to rounding, the quadrature to the dense solve, the segment-sum moments to the
inner-product ones, and the fallback to block Lanczos when the Galerkin space would grow too
large."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import example, given, settings
from hypothesis import strategies as st

import graphclust as gc
import graphclust.cluster._moment_quadrature as MQ
from graphclust.cluster._stability import indicator, lanczos_flows
from graphclust.datasets import two_moons
from graphclust.kernels import chebyshev_step, normalized_adjacency

pytestmark = pytest.mark.usefixtures("one_blas_thread")

ALPHAS = [0.5, 0.9, 0.99, 0.9999]


@pytest.fixture(scope="module")
def moons():
    X, _ = two_moons(300, noise=0.08, random_state=1)
    return gc.fuzzy_affinity(gc.knn_graph(X, 10))


def _dense(S, R, shifts, a0):
    A = np.eye(S.shape[0]) - a0 * S.toarray()
    return [R.T @ np.linalg.solve(A + s * np.eye(S.shape[0]), R) for s in shifts]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 300), b=st.integers(1, 9),
       n_seg=st.integers(1, 6), a=st.floats(-3, 3), c=st.floats(-3, 3))
def test_the_step_matches_its_dense_reference(seed, n, b, n_seg, a, c):
    rng = np.random.default_rng(seed)
    M = sp.random(n, n, density=min(1.0, 8 / n), random_state=rng, format="csr")
    X, Y = rng.normal(size=(n, b)), rng.normal(size=(n, b))
    seg, w = rng.integers(0, n_seg, size=n), rng.normal(size=n)
    expected = a * (M @ X) + c * Y
    B = sp.csr_matrix((w, seg, np.arange(n + 1)), shape=(n, n_seg))
    sums = chebyshev_step(M.indptr, M.indices, M.data, X, Y, a, c, seg, w, n_seg)
    np.testing.assert_allclose(Y, expected, rtol=1e-12, atol=1e-12 * (1 + np.abs(expected).max()))
    np.testing.assert_allclose(sums, B.T @ expected, rtol=1e-10,
                               atol=1e-10 * (1 + np.abs(B.T @ expected).max()))


def test_the_step_is_the_same_bit_for_bit_on_one_or_two_threads(moons):
    import numba

    S, _ = normalized_adjacency(moons)
    rng = np.random.default_rng(0)
    n = S.shape[0]
    X, Y0 = rng.normal(size=(n, 5)), rng.normal(size=(n, 5))
    seg, w = rng.integers(0, 4, size=n), rng.random(n)
    out = []
    before = numba.get_num_threads()
    try:
        for t in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(t)
            Y = Y0.copy()
            sums = chebyshev_step(S.indptr, S.indices, S.data, X, Y, 2.0, -1.0, seg, w, 4)
            out.append((Y, sums))
    finally:
        numba.set_num_threads(before)
    for Y, sums in out[1:]:
        np.testing.assert_array_equal(Y, out[0][0])
        np.testing.assert_array_equal(sums, out[0][1])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 8), a0=st.floats(0.3, 0.9999))
@example(seed=0, b=1, a0=0.9999)  # a single column at the slowest shift: 115 blocks
@example(seed=0, b=8, a0=0.9999)  # blocks that span the whole graph before converging
def test_the_quadrature_matches_the_dense_solve(moons, seed, b, a0):
    S, _ = normalized_adjacency(moons)
    R = np.random.default_rng(seed).normal(size=(S.shape[0], b))
    shifts = [0.0, 0.01, 0.5, 3.0]
    got = MQ.moment_quadrature(S, R, shifts, a0, rtol=1e-8)
    for F, E in zip(got, _dense(S, R, shifts, a0)):
        np.testing.assert_allclose(F, E, atol=1e-8 * np.abs(E).max())


def test_segment_moments_give_the_inner_product_moments(moons):
    # pieces' scaled indicators off the components' stationary vector: the moments as segment
    # sums of B (one nonzero per row) equal R^T U to rounding
    S, d = normalized_adjacency(moons)
    n = S.shape[0]
    labels = np.random.default_rng(2).integers(0, 6, size=n)
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    phi = np.sqrt(d) / np.linalg.norm(np.sqrt(d))
    R = B - np.outer(phi, phi @ B)
    shifts = [0.0, 0.1, 1.0]
    seg_path = MQ.moment_quadrature(S, R, shifts, 0.999, segments=(labels, np.sqrt(d), 6),
                                    rtol=1e-8)
    inner_path = MQ.moment_quadrature(S, R, shifts, 0.999, rtol=1e-8)
    for F, G, E in zip(seg_path, inner_path, _dense(S, R, shifts, 0.999)):
        np.testing.assert_allclose(F, G, atol=1e-9 * np.abs(G).max())
        np.testing.assert_allclose(F, E, atol=1e-8 * np.abs(E).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_a_galerkin_space_too_large_falls_back_to_lanczos(moons, monkeypatch, sparse):
    # sparse indicators take the segment sums, whose run writes over its first block: the
    # fallback must start from a rebuilt one
    labels = np.arange(moons.shape[0]) * 5 // moons.shape[0]
    d = np.asarray(moons.sum(axis=1)).ravel()
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    ref = lanczos_flows(moons, B, ALPHAS, rtol=1e-8, method="lanczos")
    S, _ = normalized_adjacency(moons)
    monkeypatch.setattr(MQ, "MAX_GALERKIN", 10)
    assert MQ.moment_quadrature(S, B, [0.0], 0.99) is None
    arg = sp.csr_matrix(B) if sparse else B
    for F, E in zip(lanczos_flows(moons, arg, ALPHAS, rtol=1e-8, method="moments"), ref):
        np.testing.assert_allclose(F, E, atol=1e-8 * np.abs(E).max())


def test_overwrite_uses_the_block_only_with_segment_sums(moons):
    labels = np.arange(moons.shape[0]) * 4 // moons.shape[0]
    S, d = normalized_adjacency(moons)
    R = np.sqrt(d)[:, None] * indicator(labels).toarray()
    segments = (labels, np.sqrt(d), 4)
    ref = MQ.moment_quadrature(S, R, [0.0, 0.5], 0.99, segments=segments, rtol=1e-8)
    kept = R.copy()
    MQ.moment_quadrature(S, R, [0.0], 0.99, rtol=1e-8, overwrite=True)  # no segments
    np.testing.assert_array_equal(R, kept)
    got = MQ.moment_quadrature(S, R, [0.0, 0.5], 0.99, segments=segments, rtol=1e-8,
                               overwrite=True)
    assert not np.array_equal(R, kept)  # written over
    for F, E in zip(got, ref):
        np.testing.assert_array_equal(F, E)


def test_zero_blocks_and_an_unknown_method():
    S = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    got = MQ.moment_quadrature(S, np.zeros((2, 3)), [0.0, 1.0], 0.9)
    assert all(np.array_equal(F, np.zeros((3, 3))) for F in got)
    with pytest.raises(ValueError, match="method must be 'auto', 'moments' or 'lanczos'; got 'qr'"):
        lanczos_flows(S, np.ones((2, 1)), ALPHAS, method="qr")


def test_the_moments_need_about_as_many_blocks_as_lanczos_steps(moons, monkeypatch):
    # the Galerkin value on K Chebyshev blocks is the block Gauss value after K Lanczos steps:
    # the runs agree block for block until the regularisation drops directions near the end
    # (here the Krylov space nears the whole graph: 29 blocks against 22 steps; on the
    # 250 000-point flows 28 against 28)
    import graphclust.cluster._lanczos_quadrature as LQ

    labels = np.arange(moons.shape[0]) * 7 // moons.shape[0]
    d = np.asarray(moons.sum(axis=1)).ravel()
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    counts = {}
    real = LQ._quadrature_converged

    def counting(history, tol):
        counts[key] = len(history)
        return real(history, tol)

    # the rule is the block Lanczos run's, and the moments' by import
    monkeypatch.setattr(LQ, "_quadrature_converged", counting)
    monkeypatch.setattr(MQ, "_quadrature_converged", counting)
    for key in ("lanczos", "moments"):
        lanczos_flows(moons, B, ALPHAS, rtol=1e-6, method=key)
    # Lanczos records one estimate per step from the 4th; the moments one per block from the
    # 4th, every other block from the 8th
    lanczos_steps = counts["lanczos"] + 3
    blocks = 3 + min(counts["moments"], 4) + 2 * max(counts["moments"] - 4, 0)
    assert lanczos_steps - 2 <= blocks <= 1.5 * lanczos_steps, (blocks, lanczos_steps)


def test_auto_takes_moments_only_where_their_dense_solves_are_affordable(monkeypatch):
    # n >= about 420 b: 30 blocks' solves (one K b x K b factorisation per shift) cost less
    # than Lanczos' 10 n b^2 flops per step; a run whose blocks stop being affordable gives up
    assert MQ.affordable(30, 30, 70_000, 14) and not MQ.affordable(30, 118, 20_000, 14)
    X, _ = two_moons(2000, noise=0.06, random_state=0)
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    d = np.asarray(W.sum(axis=1)).ravel()
    calls = []
    real = MQ.moment_quadrature

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        calls.append(out is not None)
        return out

    import graphclust.cluster._stability as ST
    monkeypatch.setattr(ST, "moment_quadrature", spy)
    # called (or not): on this graph b = 2 converges slowly, and the run may give up; a dense
    # block's moments would be n b^2 inner products, so auto leaves it to Lanczos
    for b, dense, expected in ((2, False, 1), (20, False, 0), (2, True, 0)):  # n >= ~120 b
        calls.clear()
        labels = np.arange(2000) * b // 2000
        B = sp.csr_matrix((np.sqrt(d), labels, np.arange(2001)), shape=(2000, b))
        B = B.toarray() if dense else B
        got = lanczos_flows(W, B, ALPHAS, rtol=1e-8)
        assert len(calls) == expected, (b, dense, calls)
        ref = lanczos_flows(W, B, ALPHAS, rtol=1e-8, method="lanczos")
        for F, E in zip(got, ref):
            np.testing.assert_allclose(F, E, atol=1e-8 * np.abs(E).max())
    # a run that outgrows its budget gives up for Lanczos, with the same flows
    monkeypatch.setattr(MQ, "affordable", lambda K, b, n, m: K < 6)
    calls.clear()
    labels = np.arange(2000) * 2 // 2000
    B = sp.csr_matrix((np.sqrt(d), labels, np.arange(2001)), shape=(2000, 2))
    got = lanczos_flows(W, B, ALPHAS, rtol=1e-8)
    assert calls == [False]
    for F, E in zip(got, lanczos_flows(W, B, ALPHAS, rtol=1e-8, method="lanczos")):
        np.testing.assert_allclose(F, E, atol=1e-8 * np.abs(E).max())


def test_segments_only_for_one_nonzero_per_row():
    B = sp.csr_matrix(np.array([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [1.5, 0.0, 0.0]]))
    seg, w, b = MQ.one_per_row(B)
    assert b == 3 and seg.tolist() == [1, 0, 0] and w.tolist() == [2.0, 0.0, 1.5]
    assert MQ.one_per_row(B.toarray()) is None  # dense: the moments are inner products
    assert MQ.one_per_row(sp.csr_matrix(np.array([[1.0, 1.0], [0.0, 1.0]]))) is None


def test_the_first_step_does_not_read_the_block_it_overwrites():
    M = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
    X, Y = np.array([[1.0], [2.0]]), np.full((2, 1), np.nan)
    sums = chebyshev_step(M.indptr, M.indices, M.data, X, Y, 1.0, 0.0, np.zeros(2, np.int64),
                          np.ones(2), 1)
    assert Y.ravel().tolist() == [2.0, 1.0] and sums.tolist() == [[3.0]]
