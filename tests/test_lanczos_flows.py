"""The block Gauss quadrature of the Markov-stability flows (`lanczos_flows`, from Chebyshev
moments by default, from a block Lanczos run by name) against the dense kernel, on graphs whose
block deflates: pieces that are whole components (zero columns of the remainder), components
smaller than the block (their Krylov space is exhausted in a few steps), and random blocks
(Hypothesis)."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.cluster._lanczos_quadrature import _block_qr, _quadrature_converged
from graphclust.cluster._stability import indicator, lanczos_flows
from graphclust.datasets import two_moons

pytestmark = pytest.mark.usefixtures("one_blas_thread")

ALPHAS = [0.5, 0.9, 0.99, 0.9999]
METHODS = ["moments", "lanczos"]


def _dense_flows(W, B, alphas):
    K = gc.ConsistencyKernel(W, 0.5, method="dense")
    return [B.T @ K.with_alpha(a).apply(B) for a in alphas]


def _assert_close(flows, ref):
    assert flows is not None, "the quadrature gave up (returned None)"
    for F, R in zip(flows, ref):
        np.testing.assert_allclose(F, R, atol=1e-8 * np.abs(R).max())


@pytest.fixture(scope="module")
def moons():
    X, _ = two_moons(240, noise=0.08, random_state=0)
    return gc.fuzzy_affinity(gc.knn_graph(X, 10))


def _ring(m):
    i = np.arange(m)
    A = sp.csr_matrix((np.ones(m), (i, (i + 1) % m)), shape=(m, m))
    return (A + A.T).tocsr()


@pytest.mark.parametrize("method", METHODS)
def test_pieces_that_are_whole_components_and_tiny_components(moons, method):
    # moons (240 nodes) + a ring of 5 + a ring of 3: the two rings are whole pieces, so their
    # columns of the remainder are zero, and the rings' Krylov spaces are exhausted at once
    W = sp.block_diag([moons, _ring(5), _ring(3)]).tocsr()
    n0 = moons.shape[0]
    labels = np.r_[np.arange(n0) * 6 // n0, [6] * 5, [7] * 3]
    d = np.asarray(W.sum(axis=1)).ravel()
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    _assert_close(lanczos_flows(W, B, ALPHAS, rtol=1e-8, method=method),
                  _dense_flows(W, B, ALPHAS))


@pytest.mark.parametrize("method", METHODS)
def test_pieces_split_inside_a_tiny_component(moons, method):
    # a ring of 6 cut into three pieces: three columns live in a 5-dimensional complement
    W = sp.block_diag([moons, _ring(6)]).tocsr()
    n0 = moons.shape[0]
    labels = np.r_[np.arange(n0) * 4 // n0, [4, 4, 5, 5, 6, 6]]
    d = np.asarray(W.sum(axis=1)).ravel()
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    _assert_close(lanczos_flows(W, B, ALPHAS, rtol=1e-8, method=method),
                  _dense_flows(W, B, ALPHAS))


@pytest.mark.parametrize("method", METHODS)
def test_a_block_wider_than_the_graph_is_exact(method):
    # 12 columns on a 10-node ring: the Krylov space is the whole complement after one step
    W = _ring(10)
    B = np.random.default_rng(0).normal(size=(10, 12))
    _assert_close(lanczos_flows(W, B, ALPHAS, rtol=1e-8, method=method),
                  _dense_flows(W, B, ALPHAS))


@pytest.mark.parametrize("method", METHODS)
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), b=st.integers(1, 9), n_rings=st.integers(0, 3))
def test_random_blocks_match_the_dense_kernel(moons, method, seed, b, n_rings):
    rng = np.random.default_rng(seed)
    W = sp.block_diag([moons] + [_ring(int(m)) for m in rng.integers(3, 8, size=n_rings)]).tocsr()
    B = rng.normal(size=(W.shape[0], b))
    if b > 2:
        B[:, 0] = 0.0  # a zero column among the others
    _assert_close(lanczos_flows(W, B, ALPHAS, rtol=1e-8, method=method),
                  _dense_flows(W, B, ALPHAS))


@pytest.mark.parametrize("shape", ["full", "deficient", "zero"])
def test_block_qr_reconstructs_and_is_orthonormal(shape):
    rng = np.random.default_rng(1)
    M = rng.normal(size=(200, 6))
    if shape == "deficient":
        M[:, 3] = M[:, 0] - 2 * M[:, 1]
        M[:, 5] = 0.0
    if shape == "zero":
        M[:] = 0.0
    Q, R = _block_qr(M, drop=1e-10)
    rank = {"full": 6, "deficient": 4, "zero": 0}[shape]
    assert Q.shape == (200, rank) and R.shape == (rank, 6)
    np.testing.assert_allclose(Q.T @ Q, np.eye(rank), atol=1e-12)
    np.testing.assert_allclose(Q @ R, M, atol=1e-10)


@pytest.mark.parametrize("method", METHODS)
def test_many_components_need_no_eigenbasis(moons, method):
    # 300 components: the per-component stationary vectors are projected out as a sparse block
    W = sp.block_diag([moons] + [_ring(3)] * 150 + [_ring(4)] * 150).tocsr()
    B = np.random.default_rng(3).normal(size=(W.shape[0], 5))
    _assert_close(lanczos_flows(W, B, ALPHAS, rtol=1e-8, method=method),
                  _dense_flows(W, B, ALPHAS))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 7))
def test_flows_do_not_depend_on_the_node_order(moons, seed, b):
    # the quadrature runs in reverse Cuthill-McKee order: any order of the input gives the
    # same B^T U_alpha B (to rounding), on a graph with several components
    W = sp.block_diag([moons, _ring(5), _ring(7)]).tocsr()
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    B = rng.normal(size=(n, b))
    perm = rng.permutation(n)
    B0 = B.copy()
    ref = lanczos_flows(W, B, ALPHAS, rtol=1e-8)
    np.testing.assert_array_equal(B, B0)  # the caller's block is not written over
    flows = lanczos_flows(W[perm][:, perm], B[perm], ALPHAS, rtol=1e-8)
    _assert_close(flows, ref)


def test_component_projection_matches_the_sparse_product():
    from graphclust.cluster._stability import _ComponentProjector

    rng = np.random.default_rng(0)
    comp = rng.integers(0, 4, size=500)
    phi = rng.random(500)
    for c in range(4):  # unit columns, one per component
        phi[comp == c] /= np.linalg.norm(phi[comp == c])
    P = _ComponentProjector(comp, phi, 4)
    X = rng.normal(size=(500, 6))
    Phi = sp.csr_matrix((phi, (np.arange(500), comp)), shape=(500, 4))
    expected = X - Phi @ (Phi.T @ X)
    np.testing.assert_allclose(P.remove(X.copy(), P.coefficients(X)), expected, atol=1e-13)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(1, 8), rank=st.integers(0, 8),
       scale=st.floats(1e-3, 1e3))
def test_rank_deficient_blocks_without_householder(seed, b, rank, scale):
    # a rank-deficient block goes through the pivoted Cholesky QR, not Householder: Q is
    # orthonormal, Q R reproduces the block to 1e-6 of its size, and the rank is found
    import scipy.linalg

    def no_householder(*args, **kwargs):
        raise AssertionError("Householder QR was called")

    rank = min(rank, b)
    if rank == 0:
        return  # an all-zero block: nothing to factor (covered above)
    rng = np.random.default_rng(seed)
    M = scale * rng.normal(size=(300, rank)) @ rng.normal(size=(rank, b))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(scipy.linalg, "qr", no_householder)
        Q, R = _block_qr(M, drop=1e-10 * np.linalg.norm(M, axis=0).max())
    assert Q.shape[1] == rank and R.shape == (rank, b)
    # a full-rank block with pivots within 1e-4 of each other takes one Cholesky QR pass,
    # orthonormal to about eps cond(M)^2 (3.5 times it at most over 3 000 draws); the
    # rank-deficient path to rounding (1.6e-15 at most)
    eps = np.finfo(np.float64).eps
    tol = 1e-12 if rank < b else max(1e-12, 20 * eps * np.linalg.cond(M) ** 2)
    np.testing.assert_allclose(Q.T @ Q, np.eye(rank), atol=tol)
    np.testing.assert_allclose(Q @ R, M, atol=1e-6 * np.abs(M).max())


def test_a_sparse_block_gives_the_dense_blocks_flows(moons):
    # the scan passes the pieces' scaled indicators sparse: made dense once, already permuted,
    # they are the same numbers as the dense block's
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    labels = np.random.default_rng(7).integers(0, 5, size=moons.shape[0])
    d = np.asarray(moons.sum(axis=1)).ravel()
    H = sp.csr_matrix((np.sqrt(d), labels, np.arange(labels.size + 1)), shape=(labels.size, 5))
    order = reverse_cuthill_mckee(moons, symmetric_mode=True)
    for o in (None, order, np.arange(moons.shape[0])):
        np.testing.assert_array_equal(
            np.asarray(lanczos_flows(moons, H, ALPHAS, order=o, method="lanczos")),
            np.asarray(lanczos_flows(moons, H.toarray(), ALPHAS, order=o, method="lanczos")))
        # the moments of a sparse indicator are segment sums, of a dense block inner
        # products: the same numbers to rounding
        _assert_close(lanczos_flows(moons, H, ALPHAS, order=o, rtol=1e-8, method="moments"),
                      lanczos_flows(moons, H.toarray(), ALPHAS, order=o, rtol=1e-8,
                                    method="moments"))


def test_a_given_node_order_gives_the_same_flows(moons):
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    B = np.random.default_rng(5).normal(size=(moons.shape[0], 4))
    order = reverse_cuthill_mckee(moons, symmetric_mode=True)
    np.testing.assert_array_equal(np.asarray(lanczos_flows(moons, B, ALPHAS, order=order)),
                                  np.asarray(lanczos_flows(moons, B, ALPHAS)))
    shuffled = np.random.default_rng(6).permutation(moons.shape[0])
    _assert_close(lanczos_flows(moons, B, ALPHAS, order=shuffled), lanczos_flows(moons, B, ALPHAS))


@pytest.mark.parametrize("bad", [np.arange(5), np.zeros(0, int), "ones", "float"])
def test_a_node_order_that_is_not_a_permutation_is_refused(moons, bad):
    n = moons.shape[0]
    if isinstance(bad, str):
        bad = np.ones(n, dtype=int) if bad == "ones" else np.arange(n, dtype=float)
    B = np.ones((n, 2))
    with pytest.raises(ValueError, match="order must be a permutation"):
        lanczos_flows(moons, B, ALPHAS, order=bad)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), b=st.integers(4, 12))
def test_recycled_product_blocks_give_the_same_quadrature(moons, seed, b):
    # each step's product is written into the block the step before retired: the same numbers
    # bit for bit as fresh blocks (no block is read after its memory is handed on), including
    # when directions deflate and the blocks narrow (pieces that are whole components)
    from graphclust.cluster._lanczos_quadrature import _lanczos_quadrature
    from graphclust.kernels import normalized_adjacency, shifted_product

    W = sp.block_diag([moons, _ring(5), _ring(7)]).tocsr()
    S, d = normalized_adjacency(W)
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    R = rng.normal(size=(n, b))
    R[n - 12:, :2] = 0.0  # two columns that live on the big component only
    shifts = [0.01, 0.1, 1.0]
    seen = []

    def recycling(P, out=None):
        seen.append(out is not None)
        return shifted_product(S, P, 0.9, out=out)

    def fresh(P, out=None):
        return shifted_product(S, P, 0.9)

    got = _lanczos_quadrature(recycling, R.copy(), shifts, lambda X: X, rtol=1e-8)
    ref = _lanczos_quadrature(fresh, R.copy(), shifts, lambda X: X, rtol=1e-8)
    assert any(seen)  # blocks were recycled
    for F, G in zip(got, ref):
        np.testing.assert_array_equal(F, G)


@settings(max_examples=60, deadline=None)
@given(rho=st.floats(0.05, 0.95), tol_exp=st.integers(3, 11), c=st.floats(0.1, 10.0))
def test_the_stopping_rule_stops_where_a_geometric_run_reaches_tol(rho, tol_exp, c):
    # estimates F_k = L - c rho^k (a scalar Gauss run in its geometric phase): the rule stops
    # at the first step whose true error is within tol, or one step later, never before
    tol, L = 10.0**-tol_exp, np.array([[20.0]])
    history, stopped = [], None
    for k in range(2000):
        history.append(L - c * rho**k)
        if _quadrature_converged(history, tol):
            stopped = k
            break
    errors = [c * rho**k / (20.0 - c * rho**k) for k in range(2000)]  # relative to |F_k|
    first = next(k for k, e in enumerate(errors) if e <= tol * (1 - 1e-9))
    assert stopped is not None and errors[stopped] <= tol * (1 + 1e-9)
    assert stopped <= max(first, 4) + 1


def test_the_stopping_rule_waits_out_a_stall():
    # fast steps (ratio 0.01), a stall of equal steps, then a geometric tail (ratio 0.5): the
    # rule must not extrapolate the fast ratio through the stall (the largest of the last
    # ratios is 1 there), and stops in the tail with the true error within tol
    steps = [1e-2, 1e-4, 1e-6, 1e-8] + [1e-8] * 4 + [1e-9 * 0.5**j for j in range(60)]
    tol, F, history, stopped = 1e-9, 1.0, [], None
    for i, step in enumerate(steps):
        F += step
        history.append(np.array([[F]]))
        if _quadrature_converged(history, tol):
            stopped = i
            break
    assert stopped is not None and stopped >= 8  # not before the stall has ended
    assert sum(steps[stopped + 1:]) <= tol * F * (1 + 1e-9)


def test_the_default_tolerance_gives_flows_within_a_millionth(moons):
    # lanczos_flows' default rtol = 1e-3: Gauss quadrature to rtol^2 of the largest entry
    d = np.asarray(moons.sum(axis=1)).ravel()
    labels = np.arange(moons.shape[0]) * 8 // moons.shape[0]
    B = np.sqrt(d)[:, None] * indicator(labels).toarray()
    alphas = [0.5, 0.9, 0.99, 8192 / 8193]
    for F, R in zip(lanczos_flows(moons, B, alphas), _dense_flows(moons, B, alphas)):
        np.testing.assert_allclose(F, R, atol=1e-6 * np.abs(R).max())


@pytest.mark.parametrize("local", [False, True])
def test_the_scan_reads_isolated_nodes_without_an_eigenbasis(monkeypatch, local):
    # 1 800 points of two moons and 7 isolated nodes: an isolated node's row of the pieces'
    # scaled indicators is 0, so the flows of the linked nodes are the scan's, exactly; before,
    # `lanczos_flows` gave up on a degree of 0 and the scan built an eigenbasis. Reference:
    # the same scan on the kernel's own solves (`kernel=`), in the node order RCM gives
    # (local) or as given
    import graphclust.cluster._markov_selection as ms
    from graphclust.cluster import markov_stability_scan
    from graphclust.cluster._stability import make_kernel

    if local:
        monkeypatch.setattr(ms, "LOCAL_ORDER_MIN_NODES", 1000)
    X, _ = two_moons(1800, noise=0.06, random_state=1)
    M = gc.fuzzy_affinity(gc.knn_graph(X, 10))
    W = sp.block_diag([M[:900, :900], sp.csr_matrix((7, 7)), M[900:, 900:]]).tocsr()
    scan = markov_stability_scan(W, taus=[1, 16, 256], random_state=0)
    assert scan["timings"]["basis"] == 0.0  # the quadrature, no eigenbasis
    ref = markov_stability_scan(W, taus=[1, 16, 256], random_state=0,
                                kernel=make_kernel(W, 0))
    np.testing.assert_array_equal(scan["pieces"], ref["pieces"])
    for F, R in zip(scan["flows"], ref["flows"]):
        np.testing.assert_allclose(F, R, atol=1e-6 * np.abs(R).max())
    for a, b in zip(scan["consensus"], ref["consensus"]):
        np.testing.assert_array_equal(a, b)


def test_a_small_graphs_scan_by_quadrature_matches_its_eigenbasis(moons):
    # the default (`EIGENBASIS_MAX_NODES` = 0): a graph of 240 nodes takes its flows by
    # quadrature; the reference takes them from its dense eigenbasis. The flows agree to the
    # quadrature's tolerance and the merges at every walk length are the same
    from graphclust.cluster import markov_stability_scan

    ref = markov_stability_scan(moons, random_state=0, eigenbasis_nodes=moons.shape[0])
    scan = markov_stability_scan(moons, random_state=0)
    assert ref["kernel"] is not None and scan["kernel"] is None
    assert scan["timings"]["basis"] == 0.0
    np.testing.assert_array_equal(scan["pieces"], ref["pieces"])
    for F, R in zip(scan["flows"], ref["flows"]):
        np.testing.assert_allclose(F, R, atol=1e-6 * np.abs(R).max())
    for a, b in zip(scan["consensus"], ref["consensus"]):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 400), n_blobs=st.integers(1, 4),
       k=st.integers(3, 12))
def test_every_scans_flows_by_quadrature_match_its_eigenbasis(seed, n, n_blobs, k):
    # the default scan (flows by quadrature at every size, as a cluster's own scan and the
    # null samples take them) against the reference from the dense eigenbasis, on kNN graphs
    # of 12-400 points in 1-4 blobs, which may fall apart into components: the same pieces
    # (the flows do not make them) and flows within 1e-7 of their largest entry (graphs this
    # small take `FINE_QUADRATURE_RTOL` = 1e-4: flows to about 1e-8)
    from graphclust.cluster import markov_stability_scan

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)) + 6.0 * rng.integers(0, n_blobs, size=n)[:, None]
    W = gc.fuzzy_affinity(gc.knn_graph(X, min(k, n - 1)))
    ref = markov_stability_scan(W, n_seeds=2, random_state=seed, eigenbasis_nodes=n)
    scan = markov_stability_scan(W, n_seeds=2, random_state=seed)
    assert ref["kernel"] is not None and scan["kernel"] is None
    np.testing.assert_array_equal(scan["pieces"], ref["pieces"])
    for F, R in zip(scan["flows"], ref["flows"]):
        np.testing.assert_allclose(F, R, atol=1e-7 * np.abs(R).max())


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 100_000), b=st.integers(1, 6), K=st.integers(1, 10),
       s=st.sampled_from([0.0, 0.3, -0.05]))
def test_the_gauss_estimate_after_every_block_matches_the_dense_inverse(seed, b, K, s):
    # `_ForwardGauss` (block Cholesky from the first block down, O(b^3) a block) against the
    # dense inverse of the block tridiagonal T_k + s I after every block, with blocks that
    # shrink as directions deflate (B_k of r_(k+1) x r_k) and a small negative shift, as a
    # run taken on to longer walks uses
    from graphclust.cluster._lanczos_quadrature import _ForwardGauss

    rng = np.random.default_rng(seed)
    sizes = np.maximum(b - np.sort(rng.integers(0, b, size=K)), 1)
    As = []
    for r in sizes:
        M = rng.normal(size=(r, r))
        As.append(0.1 * (M + M.T) + 2.0 * np.eye(r))
    Bs = [0.4 * rng.normal(size=(sizes[k + 1], sizes[k])) for k in range(K - 1)]
    B0 = rng.normal(size=(sizes[0], b))
    ends = np.concatenate([[0], np.cumsum(sizes)])
    forward = _ForwardGauss(B0, s)
    for k in range(K):
        E = forward.add(As[k], Bs[k - 1] if k else None)
        T = np.zeros((ends[k + 1], ends[k + 1]))
        for j in range(k + 1):
            T[ends[j]:ends[j + 1], ends[j]:ends[j + 1]] = As[j] + s * np.eye(sizes[j])
            if j:
                T[ends[j]:ends[j + 1], ends[j - 1]:ends[j]] = Bs[j - 1]
                T[ends[j - 1]:ends[j], ends[j]:ends[j + 1]] = Bs[j - 1].T
        R = B0.T @ np.linalg.inv(T)[:sizes[0], :sizes[0]] @ B0
        np.testing.assert_allclose(E, R, rtol=1e-9, atol=1e-10 * np.abs(R).max())
