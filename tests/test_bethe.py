"""Bethe Hessian kernels (dense references, Sylvester count, non-backtracking radius, KPM) and
the community clusterer (ML-resolution Leiden, description length, belonging)."""

import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score, homogeneity_score

import graphclust.kernels._bethe as bethe_module
from graphclust.cluster import (
    CommunityDetection,
    community_representatives,
    description_length,
    leiden_ml,
    ml_resolution,
    model_belonging,
)
from graphclust.kernels import (
    bethe_count,
    bethe_embedding,
    bethe_hessian,
    bethe_hessian_reference,
    count_eigenvalues_above,
    nonbacktracking_matrix_reference,
    nonbacktracking_radius,
    regularized_adjacency,
    undirected_adjacency,
)


def planted(q, size, p_in, p_out, seed):
    G = nx.planted_partition_graph(q, size, p_in, p_out, seed=seed)
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(q * size), format="csr"),
                      dtype=float)
    return A, np.repeat(np.arange(q), size)


def random_weighted(n, p, seed):
    rng = np.random.default_rng(seed)
    M = sp.random(n, n, density=p, random_state=seed, data_rvs=lambda k: rng.uniform(0.1, 1.0, k))
    M = sp.triu(M, 1)
    return (M + M.T).tocsr()


def gnp(n, p, seed):
    return nx.to_scipy_sparse_array(nx.gnp_random_graph(n, p, seed=seed), format="csr").astype(float)


# ------------------------------------------------------------------ operators vs dense references


@pytest.mark.parametrize("r", [1.5, 2.0, 3.7])
@pytest.mark.parametrize("seed", [0, 1])
def test_bethe_hessian_binary_matches_reference(r, seed):
    A = gnp(40, 0.1, seed)
    np.testing.assert_allclose(bethe_hessian(A, r).toarray(), bethe_hessian_reference(A, r),
                               atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bethe_hessian_weighted_matches_reference(seed):
    A = random_weighted(30, 0.2, seed)
    np.testing.assert_allclose(bethe_hessian(A, 1.7, weighted=True).toarray(),
                               bethe_hessian_reference(A, 1.7, weighted=True), atol=1e-12)


def test_weighted_form_reduces_to_binary_when_all_weights_are_one():
    A = gnp(30, 0.15, 3)
    r = 2.3
    np.testing.assert_allclose(bethe_hessian(A, r, weighted=True).toarray() * (r * r - 1),
                               bethe_hessian(A, r, weighted=False).toarray(), atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
def test_count_of_regularized_operator_equals_negative_inertia_of_H(weighted):
    # Sylvester: H(r) = c (Delta - r W') has as many negative eigenvalues as S has above 1/r
    A = random_weighted(60, 0.1, 4) if weighted else planted(3, 20, 0.5, 0.05, 0)[0]
    r = 1.9
    H = bethe_hessian(A, r, weighted=weighted).toarray()
    S, delta, Wp = regularized_adjacency(A, r, weighted=weighted)
    n_neg = int((np.linalg.eigvalsh(H) < 0).sum())
    n_above = int((np.linalg.eigvalsh(S.toarray()) > 1 / r).sum())
    assert n_neg == n_above > 0
    scale = 1.0 if weighted else r * r - 1.0
    np.testing.assert_allclose(scale * (np.diag(delta) - r * Wp.toarray()), H, atol=1e-10)


def test_nonbacktracking_radius_exact_matches_dense_B():
    A = gnp(25, 0.2, 5)
    B = nonbacktracking_matrix_reference(A)
    rho_dense = float(np.max(np.abs(np.linalg.eigvals(B))))
    assert nonbacktracking_radius(A, "exact") == pytest.approx(rho_dense, rel=1e-5)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(4, 22), p=st.floats(0.1, 0.6), seed=st.integers(0, 2**31 - 1))
def test_property_nonbacktracking_radius_lies_between_the_row_sums_of_B(n, p, seed):
    # rho(B) of the dense B, within the Perron-Frobenius bounds min / max (d_j - 1) over
    # linked nodes that the exact method now uses to skip ARPACK where they meet
    A = gnp(n, p, seed % 1000)
    d = np.asarray(A.sum(axis=1)).ravel()
    if A.nnz == 0:
        return
    B = nonbacktracking_matrix_reference(A)
    rho = float(np.max(np.abs(np.linalg.eigvals(B)))) if B.size else 0.0
    assert d[d > 0].min() - 1 - 1e-9 <= rho <= d.max() - 1 + 1e-9
    assert nonbacktracking_radius(A, "exact") == pytest.approx(max(rho, 1.0), rel=1e-5)


@pytest.mark.parametrize("G", [nx.cycle_graph(1000), nx.path_graph(500),
                               nx.random_regular_graph(3, 600, seed=1)],
                         ids=["cycle", "path", "3-regular"])
def test_nonbacktracking_radius_of_regular_and_degree_two_graphs_is_exact_and_quiet(G):
    # a cycle's B has its whole spectrum on the unit circle: ARPACK did not converge and
    # `communities(nx.cycle_graph(1000))` warned; the bounds give these radii exactly
    A = nx.to_scipy_sparse_array(G, format="csr").astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rho = nonbacktracking_radius(A, "exact")
    assert rho == (2.0 if G.number_of_edges() == 900 else 1.0)


def test_nonbacktracking_radius_regular_graph():
    A = nx.to_scipy_sparse_array(nx.random_regular_graph(5, 100, seed=0), format="csr")
    assert nonbacktracking_radius(A, "moment") == pytest.approx(4.0)
    assert nonbacktracking_radius(A.astype(float), "exact") == pytest.approx(4.0, rel=1e-6)


def test_kpm_count_close_to_exact():
    A, _ = planted(4, 100, 0.15, 0.01, 1)
    r = np.sqrt(nonbacktracking_radius(A))
    S, _, _ = regularized_adjacency(A, r)
    exact = int((np.linalg.eigvalsh(S.toarray()) > 1 / r).sum())
    est, se = count_eigenvalues_above(S, 1 / r, method="kpm", degree=300, n_vectors=40)
    assert abs(est - exact) <= max(2.0, 4 * se)
    assert bethe_count(A, "kpm", n_vectors=40, degree=300) == pytest.approx(exact, abs=2)
    est, se = count_eigenvalues_above(S, 1 / r, n_vectors=40)
    assert abs(est - exact) <= max(2.0, 4 * se)
    assert bethe_count(A, "lanczos", n_vectors=40) == pytest.approx(exact, abs=2)


def _sbm_edges(n, q, c_in, c_out, seed):
    """Sparse SBM adjacency (q equal groups; mean degrees c_in / c_out inside / between)."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % q)
    m = int(n * max(c_in, c_out))          # 2 m / n^2 >= every pair probability
    i, j = rng.integers(0, n, m), rng.integers(0, n, m)
    p = np.where(labels[i] == labels[j], c_in, c_out) / n
    keep = (rng.random(m) < p / (m / n ** 2 * 2)) & (i != j)
    A = sp.coo_matrix((np.ones(keep.sum()), (i[keep], j[keep])), shape=(n, n)).tocsr()
    A = ((A + A.T) > 0).astype(float)
    return sp.csr_matrix(A)


def test_lanczos_count_at_moderate_n():
    # SBM of 5 000 nodes in 20 groups: the bulk edge of H(r) sits at the threshold, where the
    # KPM estimate leaks the bulk in; the Lanczos quadrature stays within 3 standard errors
    # (and 2) of the exact count (Lanczos eigenpairs)
    A = _sbm_edges(5000, 20, 150.0, 2.0, 0)
    exact = bethe_embedding(A, random_state=0).n_communities
    assert 15 <= exact <= 25
    assert abs(bethe_count(A) - exact) <= max(2, 3 * np.sqrt(2 * exact / 10))
    S, _, r, _, _ = bethe_module._bethe_operator(A, "auto", None, "auto", 0)
    est, se = count_eigenvalues_above(S, 1 / r, n_vectors=10)
    assert abs(est - exact) <= max(2.0, 3 * se)


# ------------------------------------------------------------------ number of communities


@pytest.mark.parametrize("q", [2, 3, 5])
@pytest.mark.parametrize("seed", [0, 1])
def test_k_estimate_on_sbm(q, seed):
    A, _ = planted(q, 150, 0.08, 0.005, seed)
    assert bethe_count(A) == q


def test_disconnected_graph_counts_each_component():
    A = sp.block_diag([planted(1, 40, 0.3, 0.0, s)[0] for s in range(3)]).tocsr()
    assert bethe_count(A) == 3


def test_dense_and_sparse_paths_agree(monkeypatch):
    A, _ = planted(3, 120, 0.1, 0.005, 2)
    dense = bethe_embedding(A, random_state=0)
    monkeypatch.setattr(bethe_module, "_DENSE_EIGH_MAX_NODES", 10)
    sparse_ = bethe_embedding(A, random_state=0, tol=1e-10)
    assert dense.n_communities == sparse_.n_communities == 3
    Qd, _ = np.linalg.qr(dense.vectors)
    Qs, _ = np.linalg.qr(sparse_.vectors)
    assert np.linalg.norm(Qd @ Qd.T - Qs @ Qs.T) < 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lanczos_count_equals_the_dense_count(monkeypatch, seed):
    # a connected graph above the dense limit: growing Lanczos blocks, no full spectrum, and the
    # count of eigenvalues of S above 1/r is the one of the dense spectrum (Sylvester)
    G = nx.LFR_benchmark_graph(600, 3, 1.5, 0.35, average_degree=12, max_degree=40,
                               min_community=20, max_community=60, seed=seed)
    G.remove_edges_from(nx.selfloop_edges(G))
    G = G.subgraph(max(nx.connected_components(G), key=len))
    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, format="csr"), dtype=float)
    methods = []
    real_top = bethe_module.top_eigenpairs

    def spy(S, m, **kwargs):
        methods.append(kwargs.get("method", "auto"))
        return real_top(S, m, **kwargs)

    monkeypatch.setattr(bethe_module, "top_eigenpairs", spy)
    emb = bethe_embedding(A, random_state=seed)
    S, _, _ = regularized_adjacency(A, emb.r)
    dense = int((np.linalg.eigvalsh(S.toarray()) > 1 / emb.r).sum())
    assert emb.n_communities == dense > 10
    assert methods and set(methods) == {"eigsh"}


@pytest.mark.parametrize("guess", [1, 12, 60])
def test_expected_communities_only_sizes_the_first_block(guess):
    A, _ = planted(12, 40, 0.3, 0.01, 4)
    plain = bethe_embedding(A, random_state=0)
    hinted = bethe_embedding(A, expected_communities=guess, random_state=0)
    assert hinted.n_communities == plain.n_communities == 12
    Qp, _ = np.linalg.qr(plain.vectors)
    Qh, _ = np.linalg.qr(hinted.vectors)
    assert np.linalg.norm(Qp @ Qp.T - Qh @ Qh.T) < 1e-5


def test_identical_components_are_all_counted():
    # 80 disjoint K5 (rho(B) = 3): each has one eigenvalue of S above 1/r, an 80-fold eigenvalue
    # whose copies Lanczos could miss; disconnected graphs up to BETHE_DENSE_MAX_NODES nodes use
    # the whole spectrum
    A = sp.block_diag([nx.to_scipy_sparse_array(nx.complete_graph(5))] * 80).tocsr().astype(float)
    assert bethe_count(A) == 80


def test_embedding_solves_the_generalised_problem():
    # H(r) X = Delta X diag(1 - r mu) up to the factor r^2 - 1 of the binary form
    A, _ = planted(3, 40, 0.3, 0.02, 3)
    emb = bethe_embedding(A, random_state=0)
    S, delta, _ = regularized_adjacency(A, emb.r)
    H = bethe_hessian(A, emb.r).toarray() / (emb.r ** 2 - 1)
    X = emb.vectors
    mu = emb.values[: X.shape[1]]
    np.testing.assert_allclose(H @ X, (delta[:, None] * X) * (1 - emb.r * mu), atol=1e-8)


# ------------------------------------------------------------------ recovery


@pytest.mark.parametrize("method", ["auto", "bethe", "bethe+leiden-ml", "leiden-ml"])
def test_exact_recovery_on_well_separated_sbm(method):
    A, truth = planted(4, 60, 0.5, 0.01, 7)
    model = CommunityDetection(method, random_state=0).fit(A)
    assert adjusted_rand_score(truth, model.labels_) == 1.0
    assert model.n_communities_ == 4


def test_auto_keeps_spectral_partition_on_sparse_sbm():
    # mean degree ~ 6, two groups: modularity shatters it, the description length keeps Bethe
    A, truth = planted(2, 1000, 10.0 / 1000, 2.0 / 1000, 0)
    model = CommunityDetection(random_state=0).fit(A)
    assert model.n_communities_ == 2 and model.chosen_method_.startswith("bethe")
    assert adjusted_rand_score(truth, model.labels_) > 0.8


def test_given_n_communities_is_used():
    A, _ = planted(3, 50, 0.4, 0.02, 0)
    assert CommunityDetection("bethe", 5, random_state=0).fit(A).n_communities_ == 5
    assert CommunityDetection("auto", 5, random_state=0).fit(A).n_communities_ == 5


def test_points_are_clustered_on_their_knn_graph():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.3, size=(60, 2)) for c in ((0, 0), (6, 0), (0, 6))])
    model = CommunityDetection(random_state=0, n_neighbors=8).fit(X)
    # a kNN graph is a discretised manifold: "auto" is Leiden at resolution 1 there
    assert model.graph_kind_ == "proximity" and model.chosen_method_ == "leiden"
    assert homogeneity_score(np.repeat(np.arange(3), 60), model.labels_) == pytest.approx(1.0)
    # the block-model selection, asked for, splits each blob but never joins two
    net = CommunityDetection(graph_kind="network", random_state=0, n_neighbors=8).fit(X)
    assert net.graph_kind_ == "network" and net.chosen_method_ != "leiden"
    assert homogeneity_score(np.repeat(np.arange(3), 60), net.labels_) == pytest.approx(1.0)


def test_graph_kind_of_graphs_built_from_points():
    from graphclust import Graph, knn_graph
    from graphclust.graphs import affinity

    rng = np.random.default_rng(1)
    X = np.vstack([rng.normal(c, 0.4, size=(50, 2)) for c in ((0, 0), (5, 0))])
    g = knn_graph(X, 6, random_state=0)
    W = sp.csr_matrix(affinity(g, kind="binary"))
    on_graph = CommunityDetection(random_state=0).fit(g)
    on_matrix = CommunityDetection(random_state=0).fit(W)
    told = CommunityDetection(graph_kind="proximity", random_state=0).fit(W)
    assert on_graph.graph_kind_ == told.graph_kind_ == "proximity"
    assert on_matrix.graph_kind_ == "network"
    assert np.array_equal(on_graph.labels_, told.labels_)
    assert CommunityDetection(random_state=0).fit(Graph.from_sparse(W)).graph_kind_ == "network"
    with pytest.raises(ValueError, match="graph_kind"):
        CommunityDetection(graph_kind="knn").fit(W)


def test_graph_and_networkx_inputs_agree():
    from graphclust import Graph

    G = nx.planted_partition_graph(3, 30, 0.4, 0.02, seed=4)
    a = CommunityDetection(random_state=0).fit(G).labels_
    b = CommunityDetection(random_state=0).fit(Graph.from_networkx(G)).labels_
    c = CommunityDetection(random_state=0).fit(nx.to_scipy_sparse_array(G)).labels_
    assert np.array_equal(a, b) and np.array_equal(a, c)


def test_seeded_determinism():
    A, _ = planted(5, 40, 0.3, 0.03, 9)
    a = CommunityDetection(random_state=3).fit(A)
    b = CommunityDetection(random_state=3).fit(A)
    assert np.array_equal(a.labels_, b.labels_) and a.chosen_method_ == b.chosen_method_


# ------------------------------------------------------------------ belonging, criteria


def test_belonging_probabilities_and_representatives():
    A, _ = planted(3, 50, 0.3, 0.02, 1)
    model = CommunityDetection(random_state=0).fit(A)
    assert np.all((model.belonging_ >= 0) & (model.belonging_ <= 1))
    assert model.representatives_.shape == (model.n_communities_,)
    assert np.array_equal(model.labels_[model.representatives_], np.arange(model.n_communities_))
    reps = model.representatives_
    for r in range(model.n_communities_):
        members = model.labels_ == r
        assert model.belonging_[reps[r]] == pytest.approx(model.belonging_[members].max())


def test_model_belonging_flags_a_planted_misfit():
    A, truth = planted(2, 40, 0.4, 0.02, 2)
    labels = truth.copy()
    labels[0] = 1  # node 0 is linked to group 0
    prob, margin = model_belonging(A, labels)
    assert prob[0] < 0.5 and margin[0] < 0
    assert np.median(prob[1:]) > 0.9


def test_model_belonging_matches_brute_force_log_likelihood():
    # the score of moving a node equals the change of the planted-partition log-likelihood
    # term beta * (k_ir - gamma d_i kappa_r / 2m) computed by hand
    A, truth = planted(3, 15, 0.5, 0.05, 6)
    d = np.asarray(A.sum(axis=1)).ravel()
    two_m = d.sum()
    gamma = ml_resolution(A, truth)
    prob, _ = model_belonging(A, truth, gamma)
    m_in2 = sum(A[i, j] for i, j in zip(*A.nonzero()) if truth[i] == truth[j])
    kappa = np.array([d[truth == r].sum() for r in range(3)])
    w_in = two_m * m_in2 / (kappa ** 2).sum()
    w_out = two_m * (two_m - m_in2) / (two_m ** 2 - (kappa ** 2).sum())
    beta = np.log(w_in / w_out)
    for i in (0, 17, 40):
        k_ir = np.array([A[i, truth == r].sum() for r in range(3)])
        kap = kappa - d[i] * (np.arange(3) == truth[i])
        sc = beta * (k_ir - gamma * d[i] * kap / two_m)
        linked = (k_ir > 0) | (np.arange(3) == truth[i])
        p = np.exp(sc[linked] - sc[linked].max())
        p /= p.sum()
        assert prob[i] == pytest.approx(p[np.flatnonzero(linked) == truth[i]][0], rel=1e-10)


def test_ml_resolution_and_description_length():
    A, truth = planted(4, 50, 0.3, 0.02, 3)
    assert ml_resolution(A, truth) > 1.0
    assert ml_resolution(A, np.zeros(200, int)) is None
    shuffled = np.random.default_rng(0).permutation(truth)
    assert description_length(A, truth) < description_length(A, shuffled)
    assert description_length(A, truth) < description_length(A, np.arange(A.shape[0]))
    assert description_length(A * 7.0, truth) == pytest.approx(description_length(A, truth))


def test_leiden_ml_fixed_point():
    A, truth = planted(6, 30, 0.4, 0.01, 5)
    labels, gamma = leiden_ml(A, random_state=0)
    assert adjusted_rand_score(truth, labels) == 1.0
    assert gamma == pytest.approx(ml_resolution(A, labels), rel=2e-2)


def test_community_representatives_ties():
    labels = np.array([0, 0, 1, 1])
    reps = community_representatives(np.ones(4), labels, tiebreak=np.array([0, 1, 1, 0]))
    assert reps.tolist() == [1, 2]


# ------------------------------------------------------------------ weights, input errors


def test_weighted_graph_recovery_and_scale_invariance():
    A, truth = planted(3, 60, 0.4, 0.02, 5)
    rng = np.random.default_rng(0)
    W = sp.triu(A, 1).tocoo()
    W.data = rng.uniform(0.5, 2.0, W.nnz)
    W = (W + W.T).tocsr()
    model = CommunityDetection(random_state=0).fit(W)
    assert adjusted_rand_score(truth, model.labels_) == 1.0
    again = CommunityDetection(random_state=0).fit(W * 100.0)
    assert np.array_equal(model.labels_, again.labels_)
    np.testing.assert_allclose(model.belonging_, again.belonging_, rtol=1e-9)


def test_networkx_weighted_input_uses_weight_attribute():
    G = nx.Graph()
    G.add_weighted_edges_from([(0, 1, 5.0), (1, 2, 5.0), (0, 2, 5.0), (3, 4, 5.0), (4, 5, 5.0),
                               (3, 5, 5.0), (2, 3, 0.1)])
    assert CommunityDetection(random_state=0).fit(G).n_communities_ == 2


def test_directed_adjacency_refused_with_advice():
    A = sp.csr_matrix(np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float))
    with pytest.raises(ValueError, match="symmetrize=True"):
        bethe_embedding(A)
    S = undirected_adjacency(A, symmetrize=True)
    assert (S != S.T).nnz == 0 and S[0, 1] == 0.5
    with pytest.raises(ValueError, match="to_undirected"):
        CommunityDetection().fit(nx.DiGraph([(0, 1), (1, 2)]))


def test_bad_input():
    with pytest.raises(ValueError, match="negative"):
        undirected_adjacency(np.array([[0, -1.0], [-1.0, 0]]))
    assert undirected_adjacency(np.array([[1.0, 1.0], [1.0, 0.0]])).diagonal().tolist() == [0, 0]
    A, _ = planted(2, 10, 0.5, 0.1, 0)
    with pytest.raises(ValueError, match="number of nodes"):
        CommunityDetection("bethe", 21).fit(A)
    with pytest.raises(ValueError, match="bethe"):
        CommunityDetection("spectral").fit(A)
    with pytest.raises(ValueError, match="chooses the number"):
        CommunityDetection("leiden", 3).fit(A)
    with pytest.raises(ValueError, match="no edge"):
        CommunityDetection(affinity="precomputed").fit(sp.csr_matrix((4, 4)))
    with pytest.raises(ValueError, match="r must be > 1"):
        bethe_hessian(A, 0.5)
    with pytest.raises(ValueError, match="method must be one of"):
        nonbacktracking_radius(A, "power")
    with pytest.raises(ValueError, match="expected_communities"):
        bethe_embedding(A, expected_communities=-1.0)


def test_bethe_partition_never_joins_components():
    # disjoint triangles: no informative eigenvalue (a cycle has rho(B) = 1), yet no community
    # may hold two components
    A = sp.block_diag([gnp(3, 1.0, 0)] * 30).tocsr()
    for method in ("auto", "bethe"):
        model = CommunityDetection(method, random_state=0).fit(A)
        assert model.n_communities_ == 30
    assert CommunityDetection("bethe", 2, random_state=0).fit(A).n_communities_ == 2
