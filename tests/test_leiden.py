"""Leiden / Louvain and the partition qualities: exact qualities against dense references,
Leiden's guarantees (connected communities, node-optimal result), determinism."""

import os

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.linalg import expm
from scipy.sparse.csgraph import connected_components

from graphclust.cluster import leiden, louvain, markov_stability, modularity
from graphclust.datasets import lfr_graph
from graphclust.cluster._partition_quality import canonical_labels


# ------------------------------------------------------------------------------------------
# helpers stating invariants, and dense references
# ------------------------------------------------------------------------------------------
def random_graph(n, p, seed, weighted=False, loops=False):
    rng = np.random.default_rng(seed)
    M = np.triu(rng.random((n, n)) < p, 1).astype(float)
    if weighted:
        M *= rng.uniform(0.1, 3.0, size=M.shape)
    A = M + M.T
    if loops:
        A[np.diag_indices(n)] = (rng.random(n) < 0.3) * rng.uniform(0.5, 2.0, n)
    return sp.csr_matrix(A)


def modularity_reference(A, labels, resolution=1.0):
    """Dense double sum of the definition."""
    A = np.asarray(sp.csr_matrix(A).toarray(), dtype=float)
    k = A.sum(1)
    two_m = A.sum()
    same = labels[:, None] == labels[None, :]
    return float(((A - resolution * np.outer(k, k) / two_m) * same).sum() / two_m)


def assert_is_partition(labels, n):
    labels = np.asarray(labels)
    assert labels.shape == (n,)
    assert labels.dtype == np.int64
    k = labels.max() + 1
    assert set(np.unique(labels)) == set(range(k))
    np.testing.assert_array_equal(labels, canonical_labels(labels))


def assert_communities_connected(A, labels):
    A = sp.csr_matrix(A)
    for c in np.unique(labels):
        idx = np.nonzero(labels == c)[0]
        if idx.size > 1:
            ncomp, _ = connected_components(A[idx][:, idx], directed=False)
            assert ncomp == 1, f"community {c} of {idx.size} nodes has {ncomp} connected parts"


def assert_node_optimal(A, labels, resolution=1.0, rtol=1e-9):
    """No single node can raise modularity by moving to another community or a new one."""
    A = np.asarray(sp.csr_matrix(A).toarray(), dtype=float)
    n = A.shape[0]
    k = A.sum(1)
    two_m = A.sum()
    res = resolution / two_m
    k_lab = labels.max() + 1
    H = np.zeros((n, k_lab))
    H[np.arange(n), labels] = 1
    W = (A - np.diag(np.diag(A))) @ H  # weight of each node to each community
    K = H.T @ k
    for v in range(n):
        c = labels[v]
        Kc = K - k[v] * (np.arange(k_lab) == c)
        gains = W[v] - res * k[v] * Kc
        best = max(gains.max(), 0.0)  # 0.0: alone in a new community
        assert best <= gains[c] + rtol * (k[v] + 1), (v, c, best, gains[c])


def best_partition_reference(A, resolution=1.0):
    """Exhaustive modularity maximum over all set partitions (restricted growth strings)."""
    n = A.shape[0]
    best_q, best = -np.inf, None
    labels = np.zeros(n, dtype=np.int64)

    def rec(i, m):
        nonlocal best_q, best
        if i == n:
            q = modularity_reference(A, labels, resolution)
            if q > best_q + 1e-12:
                best_q, best = q, labels.copy()
            return
        for c in range(m + 1):
            labels[i] = c
            rec(i + 1, max(m, c + 1))

    labels[0] = 0
    rec(1, 1)
    return best_q, best


def lfr(n, mu, seed):
    return lfr_graph(n, mu, random_state=seed)


def sbm(sizes, p_in, p_out, seed):
    G = nx.stochastic_block_model(
        sizes, [[p_in if i == j else p_out for j in range(len(sizes))] for i in range(len(sizes))],
        seed=seed,
    )
    return sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(sum(sizes))), dtype=float)


def cliques(sizes):
    blocks = [np.ones((s, s)) - np.eye(s) for s in sizes]
    truth = np.repeat(np.arange(len(sizes)), sizes)
    return sp.csr_matrix(sp.block_diag(blocks)), truth


def data_graph(name):
    root = os.environ.get("GRAPHCLUST_DATA", "/work/shared/datasets")
    files = {"karate": "karate/karate_club.gml", "football": "football/football.gml",
             "polbooks": "polbooks/polbooks.gml"}
    path = os.path.join(root, files[name])
    if not os.path.exists(path):
        pytest.skip(f"{path} not found (set GRAPHCLUST_DATA)")
    G = nx.read_gml(path, label="id")
    return nx.Graph(G)


def nx_louvain_quality(G, seed):
    comms = nx.community.louvain_communities(G, seed=seed)
    return nx.community.modularity(G, comms)


# ------------------------------------------------------------------------------------------
# modularity and Markov stability: exact values
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("resolution", [0.5, 1.0, 2.0])
def test_modularity_matches_networkx(weighted, seed, resolution):
    A = random_graph(40, 0.15, seed, weighted=weighted)
    G = nx.from_scipy_sparse_array(A)
    labels = np.random.default_rng(seed).integers(0, 5, 40)
    comms = [set(np.nonzero(labels == c)[0]) for c in np.unique(labels)]
    expected = nx.community.modularity(G, comms, resolution=resolution)
    assert modularity(A, labels, resolution) == pytest.approx(expected, abs=1e-12)
    assert modularity(G, labels, resolution) == pytest.approx(expected, abs=1e-12)


def test_modularity_selfloops_networkx_convention():
    A = random_graph(30, 0.2, 3, weighted=True, loops=True)
    G = nx.from_scipy_sparse_array(A)  # loop of weight w stored once
    labels = np.random.default_rng(0).integers(0, 4, 30)
    comms = [set(np.nonzero(labels == c)[0]) for c in np.unique(labels)]
    expected = nx.community.modularity(G, comms)
    assert modularity(G, labels) == pytest.approx(expected, abs=1e-12)
    A2 = A + sp.diags(A.diagonal())  # matrix with doubled diagonal = networkx convention
    assert modularity(A2, labels) == pytest.approx(expected, abs=1e-12)
    # the matrix formula itself
    assert modularity(A, labels) == pytest.approx(modularity_reference(A, labels), abs=1e-12)


def test_modularity_edge_cases():
    assert modularity(sp.csr_matrix((5, 5)), np.arange(5)) == 0.0
    A, truth = cliques([4, 4])
    assert modularity(A, truth) == pytest.approx(0.5)
    assert modularity(A, np.zeros(8, int)) == pytest.approx(0.0)


@pytest.mark.parametrize("t", [0.0, 0.1, 1.0, 5.0])
def test_markov_stability_matches_dense(t):
    A = random_graph(25, 0.25, 1, weighted=True)
    labels = np.random.default_rng(1).integers(0, 3, 25)
    D = A.toarray()
    k = D.sum(1)
    pi = k / k.sum()
    L = np.eye(25) - D / k[:, None]
    B = np.diag(pi) @ expm(-t * L) - np.outer(pi, pi)
    H = np.eye(3)[labels]
    expected = np.trace(H.T @ B @ H)
    assert markov_stability(A, labels, t) == pytest.approx(expected, abs=1e-10)
    # = modularity of the flow graph Pi exp(-t L_rw)
    W = np.diag(pi) @ expm(-t * L)
    assert markov_stability(A, labels, t) == pytest.approx(
        modularity(np.round((W + W.T) / 2, 15), labels), abs=1e-9
    )


def test_markov_stability_linearised_is_modularity_at_resolution_1_over_t():
    A = random_graph(30, 0.2, 2)
    labels = leiden(A, random_state=0)
    for t in [1e-3, 1e-2]:
        lin = (1 - t) + t * modularity(A, labels, resolution=1 / t)
        assert markov_stability(A, labels, t) == pytest.approx(lin, abs=5 * t**2)
    vals = markov_stability(A, labels, [0.0, 0.5])
    assert vals.shape == (2,)


# ------------------------------------------------------------------------------------------
# Leiden: guarantees, exactness on designed graphs, determinism
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sizes", [[5, 5, 5], [3, 8, 12, 20], [10] * 30])
@pytest.mark.parametrize("method", [leiden, louvain])
def test_disjoint_cliques_exact(sizes, method):
    A, truth = cliques(sizes)
    for seed in range(3):
        labels = method(A, random_state=seed)
        assert_is_partition(labels, A.shape[0])
        np.testing.assert_array_equal(labels, canonical_labels(truth))


def test_ring_of_cliques_beats_louvain_limit():
    # ring of 30 5-cliques joined by single edges: resolution-limit example; at gamma = 1 the
    # optimum merges pairs, at a larger gamma each clique is found
    k, s = 30, 5
    A, truth = cliques([s] * k)
    A = A.tolil()
    for i in range(k):
        a, b = i * s, ((i + 1) % k) * s + 1
        A[a, b] = A[b, a] = 1
    A = A.tocsr()
    labels = leiden(A, resolution=2.0, random_state=0)
    np.testing.assert_array_equal(labels, canonical_labels(truth))
    q_leiden = modularity(A, leiden(A, random_state=0))
    assert q_leiden >= modularity(A, truth) - 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_finds_exhaustive_optimum_on_tiny_graphs(seed):
    A = random_graph(8, 0.4, seed, weighted=seed % 2 == 1)
    if A.nnz == 0:
        pytest.skip("empty graph")
    q_opt, _ = best_partition_reference(A)
    best = max(modularity(A, leiden(A, random_state=s)) for s in range(3))
    assert best == pytest.approx(q_opt, abs=1e-12)


@pytest.mark.parametrize("mu", [0.3, 0.5, 0.6])
def test_communities_connected_and_node_optimal_lfr(mu):
    A, _ = lfr(1000, mu, seed=1)
    for seed in range(2):
        labels = leiden(A, random_state=seed)
        assert_is_partition(labels, A.shape[0])
        assert_communities_connected(A, labels)
        assert_node_optimal(A, labels)


@pytest.mark.parametrize("resolution", [0.2, 1.0, 5.0])
def test_connected_and_node_optimal_weighted_with_loops(resolution):
    A = random_graph(150, 0.03, 7, weighted=True, loops=True)
    labels = leiden(A, resolution=resolution, random_state=0)
    assert_communities_connected(A, labels)
    assert_node_optimal(A, labels, resolution)


def test_determinism_and_canonical_labels():
    A, _ = lfr(1000, 0.4, seed=2)
    a = leiden(A, random_state=123)
    b = leiden(A, random_state=123)
    np.testing.assert_array_equal(a, b)
    assert_is_partition(a, A.shape[0])
    c = leiden(A, random_state=np.random.default_rng(5))
    d = leiden(A, random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(c, d)
    np.testing.assert_array_equal(louvain(A, random_state=1), louvain(A, random_state=1))


def test_input_formats_agree():
    A = random_graph(60, 0.1, 4, weighted=True)
    ref = leiden(A, random_state=0)
    for M in (A.tocoo(), A.tocsc(), A.toarray(), sp.csr_array(A), A.astype(np.float32)):
        np.testing.assert_array_equal(leiden(M, random_state=0), ref)
    A64 = sp.csr_matrix(A)
    A64.indices = A64.indices.astype(np.int64)
    A64.indptr = A64.indptr.astype(np.int64)
    np.testing.assert_array_equal(leiden(A64, random_state=0), ref)


def test_initial_partition_kept_when_optimal():
    A, truth = cliques([6, 7, 8])
    A = A.tolil()
    A[0, 6] = A[6, 0] = 1  # a bridge: truth is still the optimum
    A[13, 7] = A[7, 13] = 1
    A = A.tocsr()
    initial = np.array([7, 7, 7, 7, 7, 7, 2, 2, 2, 2, 2, 2, 2, 9, 9, 9, 9, 9, 9, 9, 9])
    labels = leiden(A, initial=initial, random_state=0)
    np.testing.assert_array_equal(labels, canonical_labels(initial))
    # a converged result is a fixed point
    B, _ = lfr(1000, 0.3, seed=3)
    lab = leiden(B, random_state=0)
    np.testing.assert_array_equal(leiden(B, initial=lab, random_state=1), lab)


def test_initial_partition_is_improved_never_worsened():
    A, truth = lfr(1000, 0.5, seed=4)
    rng = np.random.default_rng(0)
    noisy = truth.copy()
    flip = rng.random(truth.size) < 0.3
    noisy[flip] = rng.integers(0, truth.max() + 1, flip.sum())
    labels = leiden(A, initial=noisy, random_state=0)
    assert modularity(A, labels) >= modularity(A, noisy)
    assert_communities_connected(A, labels)


def test_isolated_nodes_and_tiny_graphs():
    A = sp.csr_matrix(sp.block_diag([cliques([4])[0], sp.csr_matrix((3, 3))]))
    labels = leiden(A, random_state=0)
    np.testing.assert_array_equal(labels, [0, 0, 0, 0, 1, 2, 3])
    np.testing.assert_array_equal(leiden(sp.csr_matrix((1, 1)), random_state=0), [0])
    np.testing.assert_array_equal(leiden(sp.csr_matrix((4, 4)), random_state=0), [0, 1, 2, 3])
    # isolated node given in a community of an initial partition is put on its own
    labels = leiden(A, initial=[0, 0, 0, 0, 0, 1, 1], random_state=0)
    assert_communities_connected(A, labels)
    # self-loop only
    B = sp.csr_matrix(np.diag([1.0, 2.0]))
    np.testing.assert_array_equal(leiden(B, random_state=0), [0, 1])


def test_cpm_quality():
    A, truth = cliques([5, 6, 7])
    A = A.tolil()
    A[0, 5] = A[5, 0] = 1
    A = A.tocsr()
    # density threshold 0.5: cliques (density 1) kept, the bridge (density << 0.5) cut
    np.testing.assert_array_equal(
        leiden(A, quality="cpm", resolution=0.5, random_state=0), canonical_labels(truth)
    )
    # threshold above 1: singletons
    labels = leiden(A, quality="cpm", resolution=1.5, random_state=0)
    assert labels.max() + 1 == A.shape[0]


@pytest.mark.parametrize(
    "bad, match",
    [
        (sp.csr_matrix(np.array([[0, 1.0], [0, 0]])), "symmetric"),
        (sp.csr_matrix(np.array([[0, -1.0], [-1.0, 0]])), "negative"),
        (np.ones((2, 3)), "square"),
        (sp.csr_matrix(np.array([[0, np.nan], [np.nan, 0]])), "NaN"),
    ],
)
def test_errors_say_what_to_do(bad, match):
    with pytest.raises(ValueError, match=match):
        leiden(bad)


def test_parameter_errors():
    A, _ = cliques([3, 3])
    with pytest.raises(ValueError, match="quality"):
        leiden(A, quality="surprise")
    with pytest.raises(ValueError, match="resolution"):
        leiden(A, resolution=-1)
    with pytest.raises(ValueError, match="shape"):
        leiden(A, initial=[0, 1])
    with pytest.raises(ValueError, match="n_iterations"):
        leiden(A, n_iterations=0)
    with pytest.raises(TypeError, match="random_state"):
        leiden(A, random_state="x")


# ------------------------------------------------------------------------------------------
# quality against networkx's Louvain, the peer a networkx user has
# ------------------------------------------------------------------------------------------
SEEDS = range(4)


@pytest.mark.parametrize("mu", [0.1, 0.3, 0.5])
def test_quality_at_least_networkx_louvain_lfr(mu):
    A, _ = lfr(1000, mu, seed=5)
    G = nx.from_scipy_sparse_array(A)
    ours = np.mean([modularity(A, leiden(A, random_state=s)) for s in SEEDS])
    theirs = np.mean([nx_louvain_quality(G, s) for s in SEEDS])
    assert ours >= theirs - 1e-3


def test_quality_at_least_networkx_louvain_sbm():
    A = sbm([100] * 8, 0.12, 0.02, seed=0)
    G = nx.from_scipy_sparse_array(A)
    ours = np.mean([modularity(A, leiden(A, random_state=s)) for s in SEEDS])
    theirs = np.mean([nx_louvain_quality(G, s) for s in SEEDS])
    assert ours >= theirs - 1e-3


@pytest.mark.parametrize("name", ["karate", "football", "polbooks"])
def test_quality_at_least_networkx_louvain_real(name):
    G = data_graph(name)
    G = nx.convert_node_labels_to_integers(G)
    ours = np.mean([modularity(G, leiden(G, random_state=s)) for s in SEEDS])
    theirs = np.mean([nx_louvain_quality(G, s) for s in SEEDS])
    assert ours >= theirs - 1e-3
    for s in SEEDS:
        labels = leiden(G, random_state=s)
        assert_communities_connected(nx.to_scipy_sparse_array(G), labels)


def test_leiden_at_least_louvain_on_average():
    A, _ = lfr(1000, 0.5, seed=6)
    q_leiden = np.mean([modularity(A, leiden(A, random_state=s)) for s in SEEDS])
    q_louvain = np.mean([modularity(A, louvain(A, random_state=s)) for s in SEEDS])
    assert q_leiden >= q_louvain - 1e-4


# ------------------------------------------------------------------------------------------
# invariances (property tests)
# ------------------------------------------------------------------------------------------
graphs = st.builds(
    random_graph,
    n=st.integers(2, 30),
    p=st.floats(0.05, 0.6),
    seed=st.integers(0, 10**6),
    weighted=st.booleans(),
    loops=st.booleans(),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(A=graphs, perm_seed=st.integers(0, 10**6), seed=st.integers(0, 3))
def test_permutation_invariance(A, perm_seed, seed):
    n = A.shape[0]
    perm = np.random.default_rng(perm_seed).permutation(n)
    B = A[perm][:, perm]
    labels = leiden(A, random_state=seed)
    # the quality function is exactly invariant
    assert modularity(B, labels[perm]) == pytest.approx(modularity(A, labels), abs=1e-12)
    # the optimiser is randomised by node order, so on the permuted graph it returns a partition
    # with the same guarantees (not necessarily the same local optimum: Leiden is a heuristic)
    lb = leiden(B, random_state=seed)
    assert_communities_connected(B, lb)
    if A.nnz:
        assert_node_optimal(B, lb)
        assert_node_optimal(A, labels)


@settings(max_examples=40, deadline=None)
@given(A=graphs, relabel_seed=st.integers(0, 10**6))
def test_relabelling_initial_gives_identical_result(A, relabel_seed):
    n = A.shape[0]
    rng = np.random.default_rng(relabel_seed)
    initial = rng.integers(0, 4, n)
    mapping = rng.permutation(100)[:4] * 7 - 50  # any integers, even negative
    a = leiden(A, initial=initial, random_state=0)
    b = leiden(A, initial=mapping[initial], random_state=0)
    np.testing.assert_array_equal(a, b)
    assert modularity(A, a) >= modularity(A, initial) - 1e-12 or A.nnz == 0


def test_unvalidated_csr_path_matches_public_function():
    from graphclust.cluster._leiden import optimise_partition

    A = random_graph(80, 0.08, 9, weighted=True)
    A.sort_indices()
    labels = optimise_partition(
        A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(np.float64),
        resolution=1.3, random_state=4,
    )
    np.testing.assert_array_equal(labels, leiden(A, resolution=1.3, random_state=4))


def test_unstable_iterations_are_capped_with_a_warning(monkeypatch):
    import graphclust.cluster._leiden as partition_opt

    monkeypatch.setattr(partition_opt, "_MAX_ITERATIONS", 1)
    A, _ = lfr(1000, 0.6, seed=1)
    with pytest.warns(RuntimeWarning, match="still changed"):
        leiden(A, random_state=0)


def test_runs_in_threads_give_the_labels_of_sequential_runs():
    # the kernels release the GIL (markov_stability_scan runs its seeds in threads): a run's
    # labels depend on its seed only
    from concurrent.futures import ThreadPoolExecutor

    import graphclust as gc
    from graphclust.cluster import leiden as leiden_

    X, _ = gc.datasets.three_moons(3000, random_state=0)
    W = gc.fuzzy_affinity(gc.knn_graph(X, 10, random_state=0))
    seeds = [0, 1, 2, 3]
    sequential = [leiden_(W, random_state=s, n_iterations=2) for s in seeds]
    with ThreadPoolExecutor(2) as pool:
        threaded = list(pool.map(lambda s: leiden_(W, random_state=s, n_iterations=2), seeds))
    for a, b in zip(sequential, threaded):
        np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------------------------------
# the "blocks" visiting order (markov_stability_scan's fine runs)
# ------------------------------------------------------------------------------------------
@given(n=st.integers(1, 5000), seed=st.integers(0, 2**31 - 1))
@settings(max_examples=30, deadline=None)
def test_blocks_visiting_order_is_a_permutation_of_local_blocks(n, seed):
    from graphclust.cluster._leiden import VISIT_BLOCK, _visit_order

    order = _visit_order(np.random.default_rng(seed), n, "blocks")
    np.testing.assert_array_equal(np.sort(order), np.arange(n))
    if n >= 4 * VISIT_BLOCK:
        # runs of VISIT_BLOCK visits cover whole blocks of consecutive nodes
        blocks = order // VISIT_BLOCK
        starts = np.flatnonzero(np.diff(blocks)) + 1
        assert np.unique(blocks).size == starts.size + 1  # each block visited in one run


@pytest.mark.parametrize("mu", [0.3, 0.5])
def test_blocks_visiting_order_keeps_leidens_guarantees(mu):
    from graphclust.cluster._leiden import optimise_partition

    A, _ = lfr(3000, mu, seed=1)
    args = A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data.astype(np.float64)
    for seed in range(2):
        labels = optimise_partition(*args, random_state=seed, visit="blocks")
        assert_is_partition(labels, A.shape[0])
        assert_communities_connected(A, labels)
        assert_node_optimal(A, labels)
        uniform = optimise_partition(*args, random_state=seed)
        assert modularity(A, labels) >= modularity(A, uniform) - 0.01


def test_blocks_visiting_order_bad_value():
    from graphclust.cluster._leiden import optimise_partition

    A = random_graph(30, 0.2, 1)
    with pytest.raises(ValueError, match="visit must be"):
        optimise_partition(A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data,
                           visit="sorted")


def test_fine_runs_split_by_iteration_give_the_labels_of_whole_runs():
    # markov_stability_scan queues each run's second iteration when its first ends (three
    # runs fill two cores); the labels are those of one call with two iterations
    import graphclust as gc
    from graphclust.cluster._leiden import optimise_partition
    from graphclust.cluster._markov_selection import _fine_partitions

    X, _ = gc.datasets.three_moons(3000, random_state=0)
    W = sp.csr_matrix(gc.fuzzy_affinity(gc.knn_graph(X, 10, random_state=0)))
    args = W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data
    seeds = [3, 1, 4]
    split = _fine_partitions(*args, seeds, 1.0, visit="blocks")
    for s, labels in zip(seeds, split):
        whole = optimise_partition(*args, n_iterations=2, random_state=s, visit="blocks")
        np.testing.assert_array_equal(labels, whole)


def test_scan_in_local_order_maps_the_runs_back_to_the_callers_nodes(monkeypatch):
    # above LOCAL_ORDER_MIN_NODES the runs work on W in RCM numbering: mapped back, each run
    # is still a partition of the caller's W into connected communities, as good as the uniform
    # order's (two iterations: not node-optimal in either order), and the consensus pieces
    # refine every run
    import graphclust as gc
    import graphclust.cluster._markov_selection as ms

    X, _ = gc.datasets.three_moons(4000, random_state=1)
    W = sp.csr_matrix(gc.fuzzy_affinity(gc.knn_graph(X, 10, random_state=0)))
    uniform = ms.markov_stability_scan(W, random_state=0)
    floor = min(modularity(W, labels) for labels in uniform["fine"]) - 0.01
    monkeypatch.setattr(ms, "LOCAL_ORDER_MIN_NODES", 1000)
    scan = ms.markov_stability_scan(W, random_state=0)
    for labels in scan["fine"]:
        assert_communities_connected(W, labels)
        assert modularity(W, labels) >= floor
        # every piece lies inside one community of the run (absorbed points aside)
        pieces = scan["pieces"]
        inside = sum(np.bincount(labels[pieces == p]).max() for p in np.unique(pieces))
        assert inside >= 0.99 * W.shape[0]


# ---------------------------------------------------------------------------------------------
# the input gate's threaded row sort and symmetry check, against scipy and a dense reference
# ---------------------------------------------------------------------------------------------
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 40), density=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1),
       kind=st.sampled_from(["symmetric", "values", "pattern"]), long_rows=st.booleans())
def test_symmetry_check_matches_dense_reference(n, density, seed, kind, long_rows):
    from graphclust.cluster._partition_quality import _mirror_error, _sort_rows

    rng = np.random.default_rng(seed)
    if long_rows:  # rows longer than the insertion sort's limit
        n, density = max(n, 80), max(density, 0.9)
    M = sp.random(n, n, density=density, random_state=rng, format="csr")
    M = M + M.T
    if kind == "values" and M.nnz:
        M = M.tocsr()
        M.data[rng.integers(M.nnz)] += 0.5
    elif kind == "pattern":
        M = M + sp.csr_matrix(([1.0], ([0], [n - 1])), shape=(n, n))
    M = sp.csr_matrix(M)
    M.sum_duplicates()
    # shuffle each row's entries, then sort them back over the threads: scipy's arrays
    shuffled = M.copy()
    for i in range(n):
        a, b = shuffled.indptr[i], shuffled.indptr[i + 1]
        o = rng.permutation(b - a)
        shuffled.indices[a:b] = shuffled.indices[a:b][o]
        shuffled.data[a:b] = shuffled.data[a:b][o]
    _sort_rows(shuffled.indptr, shuffled.indices, shuffled.data)
    np.testing.assert_array_equal(shuffled.indices, M.indices)
    np.testing.assert_array_equal(shuffled.data, M.data)
    D = M.toarray()
    err = _mirror_error(M.indptr, M.indices, M.data)
    if ((D != 0) != (D.T != 0)).any():
        assert err == -1.0
    else:
        assert err == np.abs(D - D.T).max()


def test_adjacency_arrays_in_place_is_the_copy():
    from graphclust.cluster._partition_quality import adjacency_arrays
    from graphclust.kernels import symmetric_permutation

    A, _ = cliques([5, 7, 9])
    o = np.random.default_rng(0).permutation(A.shape[0])
    P = symmetric_permutation(A, o)  # unsorted rows, int32 indices: the scan's input
    ref = adjacency_arrays(P.copy())
    got = adjacency_arrays(P, copy=False)
    for r, g in zip(ref[:3], got[:3]):
        np.testing.assert_array_equal(r, g)
    assert got[1] is P.indices and got[2] is P.data  # no second copy of the edges
    B = sp.csr_matrix(A, copy=True)
    B[0, 1] = 3.0
    with pytest.raises(ValueError, match=r"max \|A - A.T\| = 2"):
        adjacency_arrays(B, copy=False)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 100_000), n=st.integers(0, 300), span=st.integers(1, 2000),
       offset=st.sampled_from([0, -5, 10**12]),
       dtype=st.sampled_from([np.int64, np.int32, np.int16, np.uint8, np.uint64]))
def test_canonical_labels_one_pass_equals_the_ranking_by_sort(seed, n, span, offset, dtype):
    # labels in [0, 4 n) take the one-pass path, others the sort: both must give the ranks of
    # first appearance, as int64
    rng = np.random.default_rng(seed)
    x = rng.integers(0, span, size=n) + offset
    if np.iinfo(dtype).min > x.min(initial=0) or np.iinfo(dtype).max < x.max(initial=0):
        return
    x = x.astype(dtype)
    _, first, inverse = np.unique(x, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    got = canonical_labels(x)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, rank[inverse.ravel()])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 40), st.floats(0.0, 1.0), st.integers(0, 2**31 - 1),
       st.sampled_from([np.int32, np.int64]), st.sampled_from([np.float32, np.float64]))
def test_property_strength_is_the_bincount_of_row_numbers(n, density, seed, itype, ftype):
    # the weighted degrees are the numbers numpy's bincount of row numbers gives, bit for bit
    # (rows summed in order from 0.0), for either index width and weight precision; empty rows 0
    from graphclust.cluster._partition_quality import strength

    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=rng, format="csr")
    A.data = (A.data * 10.0 ** rng.integers(-8, 8, A.nnz)).astype(ftype)
    indptr, data = A.indptr.astype(itype), A.data
    rows = np.repeat(np.arange(n), np.diff(indptr))
    expected = np.bincount(rows, weights=data, minlength=n).astype(np.float64)
    got = strength(indptr, data, n)
    assert got.dtype == np.float64 and np.array_equal(got, expected)
