"""Whole components in the scan: the test is made once per component, on the consensus pieces."""

import warnings

import numpy as np
import scipy.sparse as sp
import pytest
from hypothesis import given, settings, strategies as st

from graphclust.cluster._markov_components import (BOTTLENECK_RATIO, _lumped_relaxation,
                                                   _whole_unrelaxed_scan, bottleneck_split,
                                                   component_bottleneck)
from graphclust.metrics import nmi


def _clique(m):
    return np.ones((m, m)) - np.eye(m)


def _graph():
    """Three components: A = two 40-cliques joined by 20 edges plus a 10-clique hanging from
    the second by one faint edge (A relaxes in ~9 x 10^5 steps because of that edge); B = a
    30-clique; P = a chain of 300 nodes (relaxes in ~18 000 steps because of its length)."""
    rng = np.random.default_rng(0)
    A = sp.block_diag([_clique(40), _clique(40), _clique(10)]).tolil()
    for i, j in zip(rng.choice(40, 20, replace=False), 40 + rng.choice(40, 20, replace=False)):
        A[i, j] = A[j, i] = 1.0
    A[79, 80] = A[80, 79] = 1e-4
    path = sp.diags([np.ones(299), np.ones(299)], [-1, 1])
    W = sp.block_diag([A.tocsr(), _clique(30), path]).tocsr()
    # pieces: the three cliques of A, B, the chain in three
    pieces = np.concatenate([np.repeat([0, 1, 2], [40, 40, 10]), np.full(30, 3),
                             np.repeat([4, 5, 6], 100)])
    return W, pieces


def _scan(pieces, groupings):
    """The keys of a `markov_stability_scan` result that `_whole_unrelaxed_scan` reads."""
    groupings = [np.asarray(g) for g in groupings]
    taus = 8192.0 / 2.0 ** np.arange(len(groupings))[::-1]  # the scan ends at 8 192
    return {"taus": taus, "pieces": pieces,
            "consensus_groups": list(groupings), "consensus": [g[pieces] for g in groupings],
            "consensus_c": np.array([g.max() + 1 for g in groupings]),
            "labels": [[g[pieces]] for g in groupings],
            "c": np.array([[g.max() + 1] for g in groupings]),
            "vi": np.zeros(len(groupings)),
            "candidates": [[(0.0, g)] for g in groupings]}


def test_a_component_with_a_bottleneck_the_pieces_see_is_never_made_whole():
    W, pieces = _graph()
    fine = np.arange(7)                       # the pieces themselves
    coarse = np.array([0, 1, 1, 2, 3, 3, 4])  # the faint group merged away, the chain halved
    # per candidate, the coarse one would fail the bottleneck test inside A: its split relaxes
    # far faster than A, whose slowness is the faint edge the coarse split no longer cuts
    Wa = W[:90][:, :90]
    t_coarse = _lumped_relaxation(Wa, coarse[pieces[:90]])
    t_fine = _lumped_relaxation(Wa, pieces[:90])
    assert t_fine > 5e5 and BOTTLENECK_RATIO * t_coarse < t_fine
    scan = _scan(pieces, [fine, coarse])
    record = _whole_unrelaxed_scan(scan, W)
    made_whole = {C: merged for C, _, _, merged in record}
    assert made_whole == {0: False, 2: True}  # A kept, the chain made whole (B is not split)
    chain = pieces >= 4
    for j, g in enumerate([fine, coarse]):
        got = scan["consensus"][j]
        # A and B as in the candidate, the chain one cluster
        assert nmi(got[~chain], g[pieces][~chain]) == 1.0
        assert np.unique(got[chain]).size == 1 and not np.isin(got[chain], got[~chain]).any()
        assert scan["consensus_c"][j] == np.unique(g[pieces][~chain]).size + 1
        assert np.array_equal(scan["labels"][j][0], got)
        assert np.array_equal(scan["candidates"][j][0][1][pieces], got)


def test_a_relaxed_or_connected_graph_is_left_alone():
    W, pieces = _graph()
    scan = _scan(pieces, [np.arange(7)])
    scan["relaxation_time"] = 100.0  # every component relaxed within the scan
    assert _whole_unrelaxed_scan(scan, W) == []
    assert np.array_equal(scan["consensus"][0], pieces)
    path = sp.diags([np.ones(299), np.ones(299)], [-1, 1]).tocsr()  # one component
    chain = np.repeat([0, 1, 2], 100)
    scan = _scan(chain, [np.arange(3)])
    assert _whole_unrelaxed_scan(scan, path) == []
    assert np.array_equal(scan["consensus"][0], chain)


def _cycle(m, r):
    """The circulant graph of m nodes, each joined to its r nearest on either side, and the
    exact second eigenvalue of its normalised adjacency: (1 / r) sum_j cos(2 pi j / m)."""
    rows = np.repeat(np.arange(m), 2 * r)
    steps = np.tile(np.concatenate([np.arange(1, r + 1), -np.arange(1, r + 1)]), m)
    W = sp.csr_matrix((np.ones(rows.size), (rows, (rows + steps) % m)), shape=(m, m))
    return W, np.mean(np.cos(2 * np.pi * np.arange(1, r + 1) / m))


def test_the_slowest_relaxation_matches_the_exact_spectrum(monkeypatch):
    """ARPACK on the deflated operator (above the dense size) and its fallback give the
    slowest relaxation of the cycles' closed-form spectra to 1e-8, for the whole graph (two
    components) and for one component."""
    import graphclust.cluster._markov_components as mc

    (A, la), (B, lb) = _cycle(1200, 3), _cycle(900, 2)
    W = sp.block_diag([A, B]).tocsr()
    exact = 1.0 / (1.0 - max(la, lb))
    assert W.shape[0] > mc.DENSE_SPECTRUM_MAX_NODES
    assert abs(mc.relaxation_time(W) / exact - 1.0) < 1e-8
    t, solved = mc._component_relaxation(A)
    assert solved and abs(t * (1.0 - la) - 1.0) < 1e-8
    monkeypatch.setattr(mc, "RELAXATION_RESTARTS", 1)  # ARPACK gives up: top_eigenpairs' way
    assert abs(mc.relaxation_time(W) / exact - 1.0) < 1e-8
    t, solved = mc._component_relaxation(A)
    assert solved and abs(t * (1.0 - la) - 1.0) < 1e-8


@pytest.mark.parametrize("m, r, proves", [(1200, 3, True), (2000, 1, False), (700, 5, True)])
def test_a_proved_relaxation_is_a_lower_bound_above_the_threshold(m, r, proves):
    """With `at_least` under the exact time (the cycles' closed form), the time returned lies
    between the threshold and the exact time (the Ritz value bounds lambda_2 from below);
    with `at_least` above it, the time is solved to tolerance, as without one. The long
    2 000-cycle (T = 202 643) is not proved within the proof's steps: solved instead."""
    import graphclust.cluster._markov_components as mc

    A, lam = _cycle(m, r)
    exact = 1.0 / (1.0 - lam)
    for frac in (0.3, 0.6, 0.9):
        at_least = frac * exact
        t, solved = mc._component_relaxation(A, at_least)
        assert at_least < t <= exact * (1 + 1e-9)
        assert solved is not proves
        assert not solved or abs(t / exact - 1.0) < 1e-8
        t = mc.relaxation_time(A, at_least=at_least)
        assert at_least < t <= exact * (1 + 1e-9)
    for at_least in (1.5 * exact, None):
        t, solved = mc._component_relaxation(A, at_least)
        assert solved and abs(t / exact - 1.0) < 1e-8
        assert abs(mc.relaxation_time(A, at_least=at_least) / exact - 1.0) < 1e-8


def test_the_cached_component_times_answer_every_threshold():
    """`_components_relaxation`'s cache: a bound proved for one threshold answers a lower
    one, and a higher threshold than the bound is solved again (to a value above it or to
    tolerance)."""
    import graphclust.cluster._markov_components as mc

    (A, la), (B, lb) = _cycle(1200, 3), _cycle(900, 2)
    W = sp.block_diag([A, B]).tocsr()
    comp, t_comp = mc._components_relaxation(W)
    exact = 1.0 / (1.0 - la)
    first = t_comp(0, 0.5 * exact)
    assert 0.5 * exact < first <= exact * (1 + 1e-9)
    assert t_comp(0, 0.4 * exact) == first  # from the cache
    higher = t_comp(0, first * 1.01)
    assert first * 1.01 < higher <= exact * (1 + 1e-9)
    assert abs(t_comp(0) / exact - 1.0) < 1e-8  # no threshold: to tolerance
    assert abs(t_comp(1, 2.0 * exact) * (1.0 - lb) - 1.0) < 1e-8


def _component(kind, m, parts, rng):
    """A connected graph of m nodes and its split into `parts` contiguous arcs: a cycle (r =
    2), a chain, or two cliques of m / 2 joined by one faint edge (its split the bottleneck)."""
    if kind == "cycle":
        W = _cycle(m, 2)[0]
    elif kind == "chain":
        W = sp.diags([np.ones(m - 1), np.ones(m - 1)], [-1, 1]).tocsr()
    else:
        h = m // 2
        W = sp.block_diag([_clique(h), _clique(m - h)]).tolil()
        W[h - 1, h] = W[h, h - 1] = 1e-3
        W = W.tocsr()
    cuts = np.sort(rng.choice(np.arange(m // 10, m - m // 10), parts - 1, replace=False))
    return W, np.searchsorted(cuts, np.arange(m), side="right")


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["cycle", "chain", "dumbbell"]),
                          st.integers(320, 1400), st.integers(2, 4)), min_size=1, max_size=3),
       st.sampled_from([256.0, 8192.0, 65536.0]), st.integers(0, 2**31 - 1))
def test_proved_times_make_the_same_components_whole_as_solved_ones(parts, tau_max, seed):
    """`whole_unrelaxed_components` with the times proved above each decision's threshold
    (`_proved_relaxation`) against the same with every time solved to tolerance: the same
    labels and decisions, and every proved time at most the solved one."""
    import graphclust.cluster._markov_components as mc

    rng = np.random.default_rng(seed)
    blocks = [_component(kind, m, p, rng) for kind, m, p in parts + [("cycle", 60, 2)]]
    W = sp.block_diag([b[0] for b in blocks]).tocsr()
    offsets = np.cumsum([0] + [int(b[1].max()) + 1 for b in blocks])
    labels = np.concatenate([b[1] + o for b, o in zip(blocks, offsets)])
    proved, rec_p = mc.whole_unrelaxed_components(W, labels, tau_max)
    steps = mc.RELAXATION_PROOF_STEPS
    try:
        mc.RELAXATION_PROOF_STEPS = 0
        solved, rec_s = mc.whole_unrelaxed_components(W, labels, tau_max)
    finally:
        mc.RELAXATION_PROOF_STEPS = steps
    assert np.array_equal(proved, solved)
    assert [(C, merge) for C, _, _, merge in rec_p] == [(C, merge) for C, _, _, merge in rec_s]
    for (_, t_p, _, _), (_, t_s, _, _) in zip(rec_p, rec_s):
        # in the gaps 1 - lambda_2 = 1 / T, to the eigenvalues' rounding: a dumbbell joined
        # by a faint edge has T = 4.4e7, and its solved gap (2.3e-8) is good to 1e-15 only
        assert 1.0 / t_p >= 1.0 / t_s - 1e-14


def test_the_proofs_basis_is_held_to_its_memory(monkeypatch):
    """`RELAXATION_PROOF_BYTES` caps the proof's steps at bytes / (8 n): a budget of 20
    vectors is too short to prove the 1 200-cycle's time above 0.9 of itself, which is then
    solved to tolerance, where the default budget proves it."""
    import graphclust.cluster._markov_components as mc

    A, lam = _cycle(1200, 3)
    exact = 1.0 / (1.0 - lam)
    assert not mc._component_relaxation(A, 0.9 * exact)[1]
    monkeypatch.setattr(mc, "RELAXATION_PROOF_BYTES", 8 * 1200 * 20)
    t, solved = mc._component_relaxation(A, 0.9 * exact)
    assert solved and abs(t / exact - 1.0) < 1e-8


def _conductances(W, order):
    """Dense reference: the conductance of every prefix of `order` as a set (all but the
    empty and the whole), from the matrix itself."""
    A = W.toarray()
    d = A.sum(axis=1)
    out = []
    for i in range(1, len(order)):
        inside = np.zeros(len(order), bool)
        inside[order[:i]] = True
        out.append(A[inside][:, ~inside].sum() / min(d[inside].sum(), d[~inside].sum()))
    return np.array(out)


@settings(max_examples=40, deadline=None)
@given(st.integers(6, 40), st.floats(0.15, 0.9), st.integers(0, 2**31 - 1))
def test_the_bottleneck_split_is_the_sweep_of_least_conductance(m, density, seed):
    # against a dense reference: the split's conductance is the least over the prefixes of
    # the nodes ordered by the slowest mode (when lambda_2 is simple, so that the order is
    # defined), and within Cheeger's bound sqrt(2 (1 - lambda_2))
    rng = np.random.default_rng(seed)
    A = np.triu(rng.random((m, m)) < density, 1) * rng.uniform(0.5, 2.0, (m, m))
    A[np.arange(m - 1), np.arange(1, m)] = 1.0  # a path through every node: connected
    W = sp.csr_matrix(A + A.T)
    split = bottleneck_split(W)
    assert set(np.unique(split).tolist()) == {0, 1}
    dense = W.toarray()
    d = dense.sum(axis=1)
    vals, vecs = np.linalg.eigh(dense / np.sqrt(np.outer(d, d)))
    inside = split == 1
    phi = dense[inside][:, ~inside].sum() / min(d[inside].sum(), d[~inside].sum())
    if vals[-2] - vals[-3] > 1e-6:
        order = np.argsort(vecs[:, -2] / np.sqrt(d), kind="stable")
        assert phi == pytest.approx(_conductances(W, order).min(), rel=1e-9, abs=1e-12)
    assert phi <= np.sqrt(2 * (1 - vals[-2])) + 1e-9


def test_a_bridge_is_a_bottleneck_and_the_middle_of_a_chain_is_not():
    # two 30-cliques joined by one edge: the component's slowest mode is their exchange;
    # a chain of 200 nodes: its halves exchange far faster than the chain relaxes (the
    # field-of-view mode of a long chain), so its sweep cut is no bottleneck
    K = _clique(30)
    W = sp.block_diag([K, K]).tolil()
    W[29, 30] = W[30, 29] = 1.0
    split = component_bottleneck(W.tocsr())
    assert split is not None and sorted(np.bincount(split).tolist()) == [30, 30]
    assert split[:30].std() == 0 and split[30:].std() == 0
    chain = sp.diags([np.ones(199), np.ones(199)], [-1, 1]).tocsr()
    assert component_bottleneck(chain) is None


def test_two_touching_moons_beside_a_third_are_split():
    # three moons of 150 points: one a component alone, two touching in another; the scan
    # holds the three moons (tau 64-512) and, from tau 1 024 on, the two components. The
    # joined component's bottleneck split leaves two metastable moons, so its wholeness past
    # the relaxation time (389 steps) is no evidence; the code before chose c = 2, ARI 0.57.
    # Two moons of 400, each a component whose halves exchange faster than it relaxes, keep
    # their two components
    import graphclust as gc

    X, y = gc.datasets.three_moons(150, random_state=0)
    model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 3 and nmi(y, model.labels_) == pytest.approx(1.0)
    X, y = gc.datasets.two_moons(400, random_state=0)
    model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 2 and nmi(y, model.labels_) == pytest.approx(1.0)


def test_two_touching_blobs_are_split_and_a_curve_beside_them_is_not():
    # curves beside blobs, mixture 226: two blobs (283 and 92 points) touch in one component,
    # a sine of 382 points is another. The blobs' component is two metastable sets at its
    # bottleneck (T_C 3 032 vs 2 672 lumped); the sine is not (8 158 vs 3 995: its halves
    # exchange faster than it relaxes). With the components' window cut at the relaxation
    # time instead, a candidate that also cut the sine in two won (c = 6, ARI 0.861)
    from sklearn.metrics import adjusted_rand_score

    import graphclust as gc
    from conftest import load_script

    X, y = load_script("check_curve_mixtures").mixture(226)
    with warnings.catch_warnings():  # the null model calls the structure weak: 5 small clusters
        warnings.simplefilter("ignore", gc.StabilityWarning)
        model = gc.StabilityClustering(random_state=0).fit(X)
    assert model.n_clusters_ == 5 and adjusted_rand_score(y, model.labels_) > 0.99



def test_whole_components_give_way_only_to_splits_of_their_bottlenecks():
    # two 30-cliques joined by one edge (X) beside a 30-clique (Z): the scan holds X's two
    # cliques at tau 1-32 and the two components at tau 64-8 192. Counted to the scan's end
    # the components persist longest; but X is two metastable sets, so their window is cut at
    # the relaxation time, and X's cliques, a split of X alone, win
    from graphclust.cluster import select_partition

    K = _clique(30)
    W = sp.block_diag([K, K, K]).tolil()
    W[29, 30] = W[30, 29] = 1.0
    W = W.tocsr()
    pieces = np.repeat([0, 1, 2], 30)
    scan = _scan(pieces, [[0, 1, 2]] * 6 + [[0, 0, 1]] * 8)
    j, rule = select_partition(scan, W)
    assert rule == "metastable" and scan["consensus_c"][j] == 3


def test_a_rival_of_whole_components_splits_only_their_bottlenecks():
    from graphclust.cluster._markov_selection import _splits_only

    whole = np.array([0, 0, 1, 1, 2])
    assert _splits_only(np.array([0, 1, 2, 2, 3]), whole, [0])  # component 0 split
    assert _splits_only(whole, whole, [0])  # nothing split
    assert not _splits_only(np.array([0, 1, 2, 2, 3]), whole, [1])  # 0 is no bottleneck
    assert not _splits_only(np.array([0, 1, 2, 3, 4]), whole, [0])  # 1 split too
    assert not _splits_only(np.array([0, 0, 1, 1, 1]), whole, [0, 1, 2])  # 1 and 2 joined
