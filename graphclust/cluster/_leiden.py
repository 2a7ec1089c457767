"""Leiden and Louvain: modularity / Potts-model partition optimisation of sparse graphs.

`leiden` (Traag, Waltman & van Eck 2019) is the partition optimiser every graphclust clusterer
shares (communities of networks, clusters of points on their kNN graph). Numba kernels work on
the CSR arrays (indptr, indices, data) only; randomness comes in as arrays drawn from a numpy
Generator, so results do not depend on numba's global random state. The qualities being
optimised and the input gate are in ``_partition_quality.py``; `_leiden_reference.py`-style
dense checks live in the tests.
"""

from __future__ import annotations

import numbers
import warnings

import numba
import numpy as np

from .._prefetch import prefetch
from .._validation import check_random_state
from ._partition_quality import (adjacency_arrays, canonical_labels, check_labels,
                                 renumber_labels, strength)

__all__ = ["PARTITION_QUALITIES", "leiden", "louvain", "optimise_partition", "optimise_steps"]

#: The qualities `leiden` optimises.
PARTITION_QUALITIES = ("modularity", "cpm")
_MAX_ITERATIONS = 1000
#: How many visits ahead the local moves prefetch (`_move_nodes`): 2 to 8 measured alike at
#: 10^6 nodes, 16 less well (docs/scaling.md).
AHEAD = 4


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# numba kernels (CSR arrays only)
# ---------------------------------------------------------------------------------------------
@numba.njit(cache=True, nogil=True)
def _move_nodes(indptr, indices, data, nw, res, comm, order):
    """Fast local moving (Leiden's queue-based variant of Louvain's first phase).

    Every node starts in the queue in the given random order. A popped node moves to the
    neighbouring community (or an empty one) of largest gain
        g(C) = w(v, C) - res * nw[v] * NW(C \\ v)
    if it beats staying by more than a round-off tolerance; then its neighbours outside the new
    community that are not queued are appended. Ends when the queue is empty: no node can then
    improve the quality by a single move. `comm` (ids in [0, n)) is changed in place.
    Returns the number of moves.
    """
    n = indptr.size - 1
    cw = np.zeros(n)
    # memberships and scratch in int32 (numbers < 2^31): half the bytes of the random reads
    # at community numbers, a tenth off the runs at 10^6 nodes (docs/scaling.md)
    csize = np.zeros(n, dtype=np.int32)
    total_nw = 0.0
    for i in range(n):
        cw[comm[i]] += nw[i]
        csize[comm[i]] += 1
        total_nw += nw[i]
    empty = np.empty(n, dtype=np.int32)
    n_empty = 0
    for c in range(n - 1, -1, -1):
        if csize[c] == 0:
            empty[n_empty] = c
            n_empty += 1
    queue = order.astype(np.int32)
    in_queue = np.ones(n, dtype=np.bool_)
    head = 0
    count = n
    neigh_w = np.zeros(n)
    seen = np.zeros(n, dtype=np.bool_)
    neigh_c = np.empty(n, dtype=np.int32)
    n_moves = 0
    while count > 0:
        v = queue[head]
        if count > 2 * AHEAD:
            # the visit 2 AHEAD on: its row; the visit AHEAD on: its neighbours' communities
            # (read from the row asked for AHEAD visits ago). The hints overlap the cache misses
            # of the coming visits with this one (`graphclust._prefetch`)
            h = head + 2 * AHEAD
            w = queue[h - n if h >= n else h]
            prefetch(indptr, w)
            prefetch(indices, indptr[w])
            h = head + AHEAD
            w = queue[h - n if h >= n else h]
            for p in range(indptr[w], indptr[w + 1]):
                prefetch(comm, indices[p])
        head += 1
        if head == n:
            head = 0
        count -= 1
        in_queue[v] = False
        cv = comm[v]
        kv = nw[v]
        nn = 0
        wsum = 0.0
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if u == v:
                continue
            c = comm[u]
            w = data[p]
            wsum += w
            if not seen[c]:
                seen[c] = True
                neigh_c[nn] = c
                nn += 1
            neigh_w[c] += w
        # take v out of its community
        cw[cv] -= kv
        csize[cv] -= 1
        tol = 1e-12 * (wsum + res * kv * total_nw) + 1e-300
        best = cv
        best_gain = neigh_w[cv] - res * kv * cw[cv] + tol
        for j in range(nn):
            c = neigh_c[j]
            if c == cv:
                continue
            g = neigh_w[c] - res * kv * cw[c]
            if g > best_gain:
                best_gain = g
                best = c
        if csize[cv] > 0 and n_empty > 0 and 0.0 > best_gain:
            best = empty[n_empty - 1]
        for j in range(nn):
            c = neigh_c[j]
            neigh_w[c] = 0.0
            seen[c] = False
        # put v in its best community
        if best != cv and csize[best] == 0:
            n_empty -= 1  # best is the empty community on top of the stack
        cw[best] += kv
        csize[best] += 1
        if best != cv:
            if csize[cv] == 0:
                empty[n_empty] = cv
                n_empty += 1
            comm[v] = best
            n_moves += 1
            for p in range(indptr[v], indptr[v + 1]):
                u = indices[p]
                if u != v and not in_queue[u] and comm[u] != best:
                    in_queue[u] = True
                    tail = head + count
                    if tail >= n:
                        tail -= n
                    queue[tail] = u
                    count += 1
    return n_moves


@numba.njit(cache=True, nogil=True)
def _refine(indptr, indices, data, nw, res, comm, order, rand, theta):
    """Leiden refinement (MergeNodesToSubset of Traag et al. 2019, as in igraph's C code).

    Starts from singletons; nodes are visited once in the given random order. A node v of
    community S (of `comm`) is considered only if it is still a singleton and well connected,
        w(v, S - v) >= res * nw[v] * (NW(S) - nw[v]);
    it then joins a refined cluster C within S (its own singleton included) that is itself well
    connected, w(C, S - C) >= res * NW(C) * (NW(S) - NW(C)), chosen at random with probability
    proportional to exp(dH / theta) among those with dH = w(v, C) - res nw[v] NW(C) >= 0.
    Merges happen along edges only, so each refined cluster is connected.
    Returns (refined membership 0..r-1, r).
    """
    n = indptr.size - 1
    ref = np.arange(n, dtype=np.int32)
    rw = nw.copy()
    kp = np.zeros(n)
    for i in range(n):
        kp[comm[i]] += nw[i]
    ext = np.zeros(n)
    for i in range(n):
        ci = comm[i]
        s = 0.0
        for p in range(indptr[i], indptr[i + 1]):
            u = indices[p]
            if u != i and comm[u] == ci:
                s += data[p]
        ext[i] = s
    nonsingleton = np.zeros(n, dtype=np.bool_)
    neigh_w = np.zeros(n)
    seen = np.zeros(n, dtype=np.bool_)
    neigh_c = np.empty(n + 1, dtype=np.int32)
    diffs = np.empty(n + 1)
    cum = np.empty(n + 1)
    for idx in range(n):
        v = order[idx]
        if idx + 2 * AHEAD < n:  # the coming visits' rows and entries (as in `_move_nodes`)
            w = order[idx + 2 * AHEAD]
            prefetch(indptr, w)
            prefetch(ref, w)
            w = order[idx + AHEAD]
            prefetch(indices, indptr[w])
            prefetch(ext, ref[w])
            for p in range(indptr[w], indptr[w + 1]):
                prefetch(comm, indices[p])
        cv = ref[v]
        if nonsingleton[cv]:
            continue
        s_comm = comm[v]
        ks = kp[s_comm]
        kv = nw[v]
        if ext[cv] < rw[cv] * (ks - rw[cv]) * res:
            continue
        rw[cv] = 0.0
        neigh_c[0] = cv
        seen[cv] = True
        nn = 1
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if u == v or comm[u] != s_comm:
                continue
            c = ref[u]
            if not seen[c]:
                seen[c] = True
                neigh_c[nn] = c
                nn += 1
            neigh_w[c] += data[p]
        max_diff = 0.0
        for j in range(nn):
            c = neigh_c[j]
            d = -1.0
            if ext[c] >= rw[c] * (ks - rw[c]) * res:
                d = neigh_w[c] - kv * rw[c] * res
            diffs[j] = d
            if d > max_diff:
                max_diff = d
        total = 0.0
        for j in range(nn):
            if diffs[j] >= 0.0:
                total += np.exp((diffs[j] - max_diff) / theta)
            cum[j] = total
        r = rand[idx] * total
        chosen = cv
        for j in range(nn):
            if cum[j] > r and diffs[j] >= 0.0:
                chosen = neigh_c[j]
                break
        w_chosen = neigh_w[chosen]
        for j in range(nn):
            c = neigh_c[j]
            neigh_w[c] = 0.0
            seen[c] = False
        if chosen == cv:
            rw[cv] = kv
            continue
        rw[chosen] += kv
        ext[chosen] += ext[cv] - 2.0 * w_chosen
        ref[v] = chosen
        nonsingleton[chosen] = True
    return renumber_labels(ref, n)


@numba.njit(cache=True, nogil=True)
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@numba.njit(cache=True, nogil=True)
def _components_within(indptr, indices, comm):
    """Connected components of each community's induced subgraph (labels 0..r-1, r).

    `comm` is one labelling (n,) or several, one column each (n, k); with several, an edge
    joins only nodes that every labelling puts together (the parts of their common refinement).
    Components are numbered by their smallest node. Every stored edge joins, in either
    direction, so a pattern that is not symmetric counts as undirected.

    Union-find with the smaller root kept (so a root is its set's smallest node), the row's
    own root found once per row, and int32 parents (n < 2^31): on a graph in a random node
    order the parents are read at random, and at 10^6 nodes int64 parents found per edge took
    4.3 s against 0.75 s (docs/scaling.md).
    """
    n = indptr.size - 1
    return _union_components(indptr, indices, comm.reshape(n, -1))


@numba.njit(cache=True, nogil=True)
def _components(indptr, indices):
    """Connected components of the graph (`_components_within` without a labelling: no
    labels read at random per edge). Returns (labels 0..r-1 by smallest node, r)."""
    return _union_components(indptr, indices, np.empty((indptr.size - 1, 0), dtype=np.int64))


@numba.njit(cache=True, nogil=True)
def _union_components(indptr, indices, rows):
    n = indptr.size - 1
    parent = np.arange(n).astype(np.int32)
    for v in range(n):
        rv = _find(parent, v)
        for p in range(indptr[v], indptr[v + 1]):
            u = indices[p]
            if u == v:
                continue
            same = True
            for q in range(rows.shape[1]):
                if rows[u, q] != rows[v, q]:
                    same = False
                    break
            if same:
                a = _find(parent, u)
                if a != rv:
                    if a < rv:
                        parent[rv] = a
                        rv = a
                    else:
                        parent[a] = rv
    root = np.empty(n, dtype=np.int64)
    for v in range(n):
        root[v] = _find(parent, v)
    return renumber_labels(root, n)


@numba.njit(cache=True, nogil=True)
def _members(labels, k):
    """The nodes of each label 0..k-1 by a counting sort: ``members[start[c]:start[c + 1]]``
    are c's nodes in ascending order. Returns (start, members)."""
    start = np.zeros(k + 1, dtype=np.int64)
    for v in range(labels.size):
        start[labels[v] + 1] += 1
    for c in range(k):
        start[c + 1] += start[c]
    members = np.empty(labels.size, dtype=np.int64)
    fill = start[:k].copy()
    for v in range(labels.size):
        c = labels[v]
        members[fill[c]] = v
        fill[c] += 1
    return start, members


@numba.njit(cache=True, nogil=True)
def _aggregate(indptr, indices, data, nw, memb, k):
    """Graph of the k clusters of `memb`: summed edge weights between clusters (no self-loops,
    which no gain needs), summed node weights. Returns CSR arrays (the entries as views of
    buffers of the input's entry count, not trimmed copies) and node weights."""
    start, members = _members(memb, k)
    new_nw = np.zeros(k)
    # the input's index types at every level: one compiled variant of the kernels, and
    # int32 entries (half the bytes) whenever the graph has them
    out_ptr = np.zeros(k + 1, dtype=indptr.dtype)
    out_idx = np.empty(indices.size, dtype=indices.dtype)
    out_w = np.empty(indices.size)
    acc = np.zeros(k)
    seen = np.zeros(k, dtype=np.bool_)
    touched = np.empty(k, dtype=np.int64)
    pos = 0
    for c in range(k):
        nt = 0
        for q in range(start[c], start[c + 1]):
            v = members[q]
            if q + 2 * AHEAD < members.size:  # the coming members' rows and communities
                w = members[q + 2 * AHEAD]
                prefetch(indptr, w)
                prefetch(indices, indptr[w])
                w = members[q + AHEAD]
                for p in range(indptr[w], indptr[w + 1]):
                    prefetch(memb, indices[p])
            new_nw[c] += nw[v]
            for p in range(indptr[v], indptr[v + 1]):
                c2 = memb[indices[p]]
                if c2 == c:
                    continue
                if not seen[c2]:
                    seen[c2] = True
                    touched[nt] = c2
                    nt += 1
                acc[c2] += data[p]
        for j in range(nt):
            c2 = touched[j]
            out_idx[pos] = c2
            out_w[pos] = acc[c2]
            pos += 1
            acc[c2] = 0.0
            seen[c2] = False
        out_ptr[c + 1] = pos
    return out_ptr, out_idx[:pos], out_w[:pos], new_nw



# ---------------------------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------------------------
def _node_weights(indptr, data, n, quality):
    if quality == "modularity":
        return strength(indptr, data, n)
    return np.ones(n)


#: Nodes per block of the "blocks" visiting order (`optimise_partition`).
VISIT_BLOCK = 256


def _visit_order(rng, n, visit):
    """A random order of the n nodes: uniform ("random"), or ("blocks") blocks of VISIT_BLOCK
    consecutive nodes in random order, each block's nodes in random order within it."""
    if visit == "random" or n < 4 * VISIT_BLOCK:
        return rng.permutation(n).astype(np.int64)
    n_blocks = (n + VISIT_BLOCK - 1) // VISIT_BLOCK
    key = rng.permutation(n_blocks)[np.arange(n) // VISIT_BLOCK] + rng.random(n)
    return np.argsort(key, kind="stable").astype(np.int64)


def _one_pass(indptr, indices, data, nw, res, memb, rng, theta, refine, visit="random"):
    """One iteration of Leiden (refine=True) or Louvain (False) from partition `memb`.

    A generator that yields after each level (local moves, refinement, aggregation); its
    return value is (labels, number of levels). The levels are the units in which
    `_markov_selection` spreads several runs over the threads.
    """
    n = nw.size
    node_to_agg = np.arange(n, dtype=np.int64)
    g_ptr, g_idx, g_w, g_nw = indptr, indices, data, nw
    memb, _ = renumber_labels(memb.astype(np.int64), n)
    n_levels = 0
    while True:
        nl = g_nw.size
        _move_nodes(g_ptr, g_idx, g_w, g_nw, res, memb, _visit_order(rng, nl, visit))
        memb, k = renumber_labels(memb, nl)
        n_levels += 1
        if k == nl:
            break  # every community is one aggregate node: done
        if refine:
            order = _visit_order(rng, nl, visit)
            rand = rng.random(nl)
            ref, r = _refine(g_ptr, g_idx, g_w, g_nw, res, memb, order, rand, theta)
            if r == nl:  # no merge was possible: aggregate the connected parts of communities
                ref, r = _components_within(g_ptr, g_idx, memb)
                if r == nl:
                    break
            new_memb = np.empty(r, dtype=np.int32)
            new_memb[ref] = memb
        else:
            ref, r = memb, k
            new_memb = np.arange(r, dtype=np.int32)
        node_to_agg = ref[node_to_agg]
        g_ptr, g_idx, g_w, g_nw = _aggregate(g_ptr, g_idx, g_w, g_nw, ref, r)
        memb = new_memb
        yield
    return memb[node_to_agg], n_levels


def _optimise(A, resolution, initial, n_iterations, random_state, quality, theta, refine):
    if quality not in PARTITION_QUALITIES:
        raise ValueError(f"quality must be one of {PARTITION_QUALITIES}; got {_describe(quality)}.")
    if not (isinstance(resolution, numbers.Real) and np.isfinite(resolution) and resolution >= 0):
        raise ValueError(f"resolution must be a finite number >= 0; got {_describe(resolution)}.")
    if not (isinstance(theta, numbers.Real) and theta > 0 and np.isfinite(theta)):
        raise ValueError(f"theta must be a finite number > 0; got {_describe(theta)}.")
    if not isinstance(n_iterations, numbers.Integral) or n_iterations == 0:
        raise ValueError(
            f"n_iterations must be a positive int, or negative for 'until the partition is "
            f"stable'; got {_describe(n_iterations)}."
        )
    indptr, indices, data, n = adjacency_arrays(A)
    if initial is not None:
        initial = check_labels(initial, n, name="initial")
    return optimise_partition(
        indptr, indices, data, resolution=resolution, initial=initial,
        n_iterations=n_iterations, random_state=random_state, quality=quality, theta=theta,
        refine=refine,
    )


def optimise_partition(
    indptr, indices, data, *, resolution=1.0, initial=None, n_iterations=-1, random_state=None,
    quality="modularity", theta=0.01, refine=True, visit="random",
):
    """Leiden (refine=True) / Louvain on clean CSR arrays, without input validation.

    For callers that already hold a validated symmetric non-negative CSR matrix (int32 or
    int64 indptr/indices, float64 data, no explicit zeros): e.g. ``optimise_partition(
    G.indptr, G.indices, G.data, resolution=...)`` after `adjacency_arrays`. `initial`, if
    given, must be int64 labels 0..k-1.

    `visit` is the order in which the local moves and the refinement visit the nodes. "random"
    (Traag et al.) is a uniform permutation. "blocks" shuffles blocks of `VISIT_BLOCK`
    consecutive nodes and the nodes within each block: on a graph numbered so that neighbours
    have close numbers (reverse Cuthill-McKee), a block's neighbourhoods then share cache lines.
    On the 10^6-point benchmark graph (docs/scaling.md) a run took 8.2 s instead of 12.4 s, with
    a modularity as high (0.8976-0.8988 against 0.8944-0.8965 over three seeds) and runs as
    different from one another (pairwise ARI 0.78-0.83 against 0.77-0.80).
    """
    steps = optimise_steps(indptr, indices, data, resolution=resolution, initial=initial,
                           n_iterations=n_iterations, random_state=random_state,
                           quality=quality, theta=theta, refine=refine, visit=visit)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


def optimise_steps(
    indptr, indices, data, *, resolution=1.0, initial=None, n_iterations=-1, random_state=None,
    quality="modularity", theta=0.01, refine=True, visit="random",
):
    """`optimise_partition` as a generator that yields after each level of each iteration.

    Its return value (``StopIteration.value``) is the labels of `optimise_partition` with the
    same arguments. Several runs advanced level by level over a few threads fill them more
    evenly than whole iterations do (`_markov_selection._fine_partitions`).
    """
    if visit not in ("random", "blocks"):
        raise ValueError(f"visit must be 'random' or 'blocks'; got {_describe(visit)}.")
    n = indptr.size - 1
    rng = check_random_state(random_state)
    nw = _node_weights(indptr, data, n, quality)
    if quality == "modularity":
        two_m = float(data.sum())
        res = float(resolution) / two_m if two_m > 0 else 0.0
    else:
        res = float(resolution)
    # theta is in units of the mean edge weight (igraph's beta on unweighted graphs)
    theta_abs = float(theta) * (float(data.mean()) if data.size else 1.0)
    if initial is None:
        labels = np.arange(n, dtype=np.int64)
    else:
        labels = np.asarray(initial, dtype=np.int64)
    if data.size == 0:
        return np.arange(n, dtype=np.int64) if initial is None else labels
    max_iter = int(n_iterations) if n_iterations > 0 else _MAX_ITERATIONS
    stable = False
    for _ in range(max_iter):
        new, _levels = yield from _one_pass(indptr, indices, data, nw, res, labels, rng,
                                            theta_abs, refine, visit)
        new = canonical_labels(new)
        stable = np.array_equal(new, labels)
        labels = new
        if stable or not refine:
            break
    if n_iterations < 0 and refine and not stable:
        warnings.warn(
            f"leiden: the partition still changed after {_MAX_ITERATIONS} iterations; the "
            "result is returned as it is (its quality only ever increased).",
            RuntimeWarning,
            stacklevel=4,
        )
    # nodes without any edge (not even a self-loop) are on their own (modularity unchanged)
    if quality == "modularity":
        lonely = np.diff(indptr) == 0
        if lonely.any() and n > 1:
            k = labels.max() + 1
            labels = labels.copy()
            labels[lonely] = k + np.arange(int(lonely.sum()))
            labels = canonical_labels(labels)
    return labels


def leiden(
    A,
    *,
    resolution=1.0,
    initial=None,
    n_iterations=-1,
    random_state=None,
    quality="modularity",
    theta=0.01,
):
    """Partition a weighted graph by the Leiden algorithm (Traag, Waltman & van Eck 2019).

    Parameters
    ----------
    A : scipy sparse matrix / array, dense array or networkx graph, shape (n, n)
        Symmetric adjacency with non-negative weights; self-loops (diagonal entries) allowed.
    resolution : float >= 0, default 1.0
        gamma below. Larger values give more, smaller communities.
    initial : array of n ints, optional
        Starting partition (e.g. a spectral partition to refine). Default: singletons.
    n_iterations : int, default -1
        Number of Leiden iterations, each starting from the previous result; negative: iterate
        until an iteration leaves the partition unchanged (at most 1000).
    random_state : None, int, numpy Generator or RandomState
        Seed of the node orders and of the refinement's random merges. Same seed, same labels.
    quality : {"modularity", "cpm"}, default "modularity"
        "modularity": Q = (1/2m) sum_ij (A_ij - gamma k_i k_j / 2m) delta(c_i, c_j), with
        k_i = sum_j A_ij and 2m = sum_ij A_ij. "cpm" (constant Potts model):
        H = sum_ij (A_ij - gamma) delta(c_i, c_j) (up to a constant).
    theta : float > 0, default 0.01
        Randomness of the refinement's merges, in units of the mean edge weight (so igraph's
        beta = 0.01 on unweighted graphs, and the same behaviour after rescaling the weights).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Communities 0..k-1, numbered by first appearance.

    Notes
    -----
    Each iteration repeats, on ever coarser graphs: (1) fast local moving: a queue of nodes,
    each moved to the neighbouring (or an empty) community of largest quality gain, neighbours
    of a moved node re-queued, until the queue is empty; (2) refinement: within each community
    S, singletons are merged along edges into well-connected sub-clusters, each merge drawn at
    random with probability ~ exp(dH / theta) among the non-negative gains (igraph's
    `community_leiden`); (3) aggregation: the refined clusters become the nodes of the next
    graph, which starts from the unrefined partition. The iteration ends when every community
    is a single aggregate node.

    Guarantees (paper, Theorems 1-4; tested here): every community is connected (refined
    clusters grow along edges; when no merge is possible the connected parts of communities
    are aggregated instead); after the last iteration no single node can increase the quality
    by moving to another community or to a new one. The quality never decreases from
    `initial`. It is a heuristic: the optimum of modularity is NP-hard to find.

    Self-loops: A_ii enters k_i and 2m once, as in the matrix formula above. A networkx graph is
    converted with its loops doubled (a loop of weight w gives A_ii = 2 w), which is networkx's
    convention. Nodes with no edge at all are put in communities of their own.

    Examples
    --------
    >>> import networkx as nx
    >>> from graphclust.cluster import leiden
    >>> labels = leiden(nx.karate_club_graph(), random_state=0)
    >>> int(labels.max()) + 1
    4
    """
    return _optimise(A, resolution, initial, n_iterations, random_state, quality, theta, True)


def louvain(A, *, resolution=1.0, initial=None, random_state=None, quality="modularity"):
    """Louvain method (Blondel et al. 2008) with Leiden's queue-based local moving.

    Same kernels as `leiden` without the refinement: communities are aggregated as they are, so
    they may end up badly connected or disconnected (which `leiden` rules out). One pass of
    levels until a level moves no node. Kept for comparison; prefer `leiden`.
    """
    return _optimise(A, resolution, initial, 1, random_state, quality, 0.01, False)
