"""Whole components in the scan: the test is made once per component, on the consensus pieces."""

import numpy as np
import scipy.sparse as sp

from graphclust.cluster._markov_components import (BOTTLENECK_RATIO, _lumped_relaxation,
                                                   _whole_unrelaxed_scan)
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
    assert abs(mc._component_relaxation(A) * (1.0 - la) - 1.0) < 1e-8
    monkeypatch.setattr(mc, "RELAXATION_RESTARTS", 1)  # ARPACK gives up: top_eigenpairs' way
    assert abs(mc.relaxation_time(W) / exact - 1.0) < 1e-8
    assert abs(mc._component_relaxation(A) * (1.0 - la) - 1.0) < 1e-8
