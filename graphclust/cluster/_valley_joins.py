"""Adjacent parts of a split joined where no density valley lies between them.

A walk on a kNN graph cuts a curve or a band at its narrowest or sparsest spots, valley or
not (docs/model_selection.md, *Why a walk on a 1-D kNN graph does not see density
valleys*): a moon's own scan cuts it into arcs that outlast the moon. Along a path through
the data two clusters give two modes and two arcs of one band one, so the parts of a split
(`_cluster_splits.split_outlasted_clusters`, a look's choice, the support test's clusters)
are read by Hartigan's dip test of their points' positions along the graph
(`join_unimodal_pairs`; the projected dip of dip-means, Kalogeratos & Likas 2012): each
adjacent pair from its far ends and from the cut between its parts (`_pair_pvalue`,
`_cut_positions`), on the line through the parts' means where the graph's paths are too
few edges long to lay the points out (`_pair_positions`), a part too small for the test to
see beside its heaviest neighbour joined first (`unresolved_parts`). The pairs are read
where the walk cut them, at spots chosen for being sparse, so the groups that join are
tested again as they came out (`_groups_retested`). `join_unimodal_one_by_one` joins the
most unimodal pair first (dip-means' order) and `unimodal_parts` asks whether any part is
multimodal from several viewers.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, dijkstra

from ..graphs import edge_lengths, rescale
from ._consensus import absorbed_parts, lumped_weights
from ._dip_test import DIP_LEVEL, dip_draws, dip_pvalue, dip_test
from ._partition_quality import adjacent_pairs, canonical_labels

__all__ = ["CURVE_END_SHARE", "DIP_VIEWERS", "cut_at_ends", "edge_length_matrix",
           "join_unimodal_one_by_one",
           "join_unimodal_pairs", "unimodal_parts", "unresolved_parts"]

# edges whose lengths `edge_length_matrix` computes at once (sparse rows: 2^16 of them)
_EDGE_BLOCK = 1 << 16

#: Random viewers of a part besides its far end (`unimodal_parts`).
DIP_VIEWERS = 10


def join_unimodal_pairs(X, sub, W, *, level=DIP_LEVEL, random_state=0, ends=1, windows=False):
    """`sub` with each two adjacent parts joined where no density valley lies between them.

    A walk on a kNN graph cuts a curve or a band at its narrowest or sparsest spots, valley or
    not: the cut of a kNN graph hardly depends on the density (docs/model_selection.md, *Why a
    walk on a 1-D kNN graph does not see density valleys*), and a moon's own scan cuts it into
    arcs that outlast the moon. Along a path through the data, two clusters give two modes and
    two arcs of one band one: Hartigan's dip test of each point's position on that path (the
    projected dip of dip-means, Kalogeratos & Likas 2012) joins the pairs it finds unimodal.
    The path is the graph's own (Isomap's geodesic; Tenenbaum, de Silva & Langford 2000): the
    shortest-path distance in the cluster's graph, edges weighted by their lengths, from the
    far end of the pair's union (its point farthest from the other part's centre: a double
    sweep). Between convex blobs it is the straight line between them; along a curve it is
    the arc length, where a straight projection piles up at the arc's ends (a semicircle
    projected on its chord has the arcsine density, bimodal) and splits the curve. Where the
    paths across a pair are too few edges long to lay its points out (in many dimensions a
    kNN edge is nearly as long as the cluster is wide), the pair is read on the line through
    its parts' means instead (`_pair_positions`). Each adjacent pair is one test, so each is
    held at `level` over their number (Bonferroni): a plateau's split of one band into five
    arcs makes four chances to find a chance dip. A part too small for the test to tell from
    its heaviest neighbour at that level joins it before any pair is tested
    (`unresolved_parts`): its "no valley" would be no evidence, and joining on it would join
    two parts with a valley between them through it. The groups that join are tested again
    as they came out, whole and on a balanced window, until no pair joins
    (`_groups_retested`): the pairs were read where the walk cut, at spots chosen for being
    sparse.

    Parameters
    ----------
    X : array or CSR matrix (m, d)
        The cluster's points in the metric's geometry (unit rows for cosine).
    sub : int array (m,)
        The split, 0..c-1.
    W : sparse matrix (m, m)
        The cluster's subgraph: parts with an edge between them are adjacent, and its edges
        are the paths the positions are measured along.
    level : float
        Dip-test level of the whole split; each pair's is `level` over the number of adjacent
        pairs (`_dip_test.dip_draws` uniform samples: enough to resolve it).
    random_state : int
        Seed of the dip test's uniform draws.
    ends : {1, 2}
        Each pair seen from its union's far end from the second part (1: the numbers choose
        the view, so callers number the parts canonically, a fit's clusters by first
        appearance in its own order), or from both ends and from the cut between the parts
        (2: the same verdict whichever part comes first; a cluster's own split,
        `NullModelTests._own_split_choice`; `_pair_pvalue`). The fit's
        support test keeps one end: there a valley between any two adjacent clusters clears
        the whole partition of being chance cuts, and with both ends sipu/jain's five cuts
        of two crescents were cleared (NMI 1.000 -> 0.305), with the cut's view its four
        (1.000 -> 0.614).
    windows : bool
        Each pair of unequal parts also read on a balanced window, as the groups that join
        are (`_groups_retested`: a valley in either view keeps the pair apart), where the
        whole pair's dip is bounded by about half the smaller part's mass: a cluster's own
        split where the walk leaves the cluster (`NullModelTests._own_split_choice`), which
        may cut a small blob off a large one (shapes:sizes3's blob of 111 points beside 669:
        p = 0.71 whole, 0.004 on the window), and the density tree's modes beside the blob
        that holds most of the mass (`FineTierLooks._tree_choice`).

    Returns
    -------
    joined : int array (m,)
        0..c'-1 in order of first appearance (c' = c when every adjacent pair is bimodal).
    pvalues : dict
        ``(i, j) -> p`` for each adjacent pair of parts i < j tested in the first round (a
        part joined by `unresolved_parts` has none; the part it joined keeps its number):
        exact below the pair's level, and at or above it the estimate of the draws read
        until the verdict was known (`_dip_test.dip_pvalue`'s `enough`).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, 200), rng.normal(6, 1, 200),  # two modes ...
    ...                     rng.uniform(12, 20, 400)])[:, None]           # ... and a band
    >>> order = np.argsort(X[:, 0])
    >>> sub = np.repeat([0, 1, 2, 3], 200)  # the band in two halves
    >>> W = sp.coo_matrix((np.ones(799), (order[:-1], order[1:])), shape=(800, 800))
    >>> joined, p = join_unimodal_pairs(X, sub, W + W.T)  # a chain: neighbours adjacent
    >>> np.unique(joined, return_counts=True)[1].tolist(), p[(2, 3)] >= 0.05
    ([200, 200, 400], True)
    """
    if ends not in (1, 2):
        raise ValueError(f"ends must be 1 (one end) or 2 (both ends); got {ends!r}.")
    parts = sub = np.asarray(sub, dtype=np.int64)
    c = int(sub.max()) + 1
    pairs = adjacent_pairs(W, sub)
    # parts the test cannot tell from their heaviest neighbour join it first, at the level of
    # every pair (`unresolved_parts`); the pairs left are the tests, each at the level over
    # their number
    sub = unresolved_parts(W, sub, level / max(len(pairs), 1) / ends, random_state)
    pairs = adjacent_pairs(W, sub)
    pair_level = level / max(len(pairs), 1)
    X = rescale(X)[0]  # exact: the means, norms and lengths below neither overflow nor underflow
    lengths = edge_length_matrix(X, W)
    edge = float(np.median(lengths.data)) if lengths.nnz else 0.0  # `_pair_positions`' unit
    groups = _grouped(sub, c)
    pvalues = {(i, j): (_viewed_pair_pvalue if windows else _pair_pvalue)(
        X, lengths, edge, groups[i], groups[j], pair_level, random_state, ends)
               for i, j in pairs.tolist()}
    joined = _joined_pairs(sub, pvalues, pair_level)
    while joined.max() > 0:  # the groups that joined, tested again as they came out
        again = _groups_retested(X, lengths, edge, W, parts, joined, level, random_state,
                                 ends)
        if again.max() == joined.max():
            break
        joined = again
    return joined, pvalues


def _joined_pairs(sub, pvalues, level):
    """`sub` with the pairs of parts whose p-value is at least `level` joined, and with
    the pairs they chain (0..c'-1 in order of first appearance)."""
    c = int(sub.max()) + 1
    joined = np.array([ij for ij, p in pvalues.items() if p >= level], dtype=np.int64)
    joined = joined.reshape(-1, 2)
    _, part = connected_components(
        sp.coo_matrix((np.ones(len(joined)), (joined[:, 0], joined[:, 1])), shape=(c, c)),
        directed=False)
    return canonical_labels(part[sub])


def _groups_retested(X, lengths, edge, W, parts, groups, level, random_state, ends):
    """`groups` (the parts `parts` after their unimodal pairs were joined) with each two
    adjacent groups joined where the dip test sees no valley between them, whole or on a
    balanced window (Bonferroni over the two views); only pairs of which a group holds two
    or more parts are tested (the others' verdict is the parts' own).

    A pair's verdict is read where the walk cut: a fine split cuts a band at its sparsest
    spots, so two small parts meet at a spot chosen for being sparse, and a chance gap of a
    uniform band is a valley in the few points around it (a moon of 200 points in 8 parts:
    the pair of 23 and 28 points at its widest gap, p = 0.0009; selection by the data
    before the test, the "double dipping" of Kriegeskorte et al. 2009). Once joined, the
    groups on either side are what the verdict is about, and tested whole the same gap is
    no valley (125 and 75 points, p = 0.58). Whole, a small group beside a large one would
    lose the test's power (the dip of a union is at most about half its smaller mode's
    mass: a blob of 110 points beside a ring of 1 019, p = 0.22), so the window is the
    smaller group whole and as many of the larger group's points nearest the cut along its
    own graph (an interval of the unimodal union is unimodal: the test stays valid), and
    the blob stays apart (p = 0.002). The window alone misses a valley away from the cut
    (UCI statlog: groups of 1 196 and 191 points, whole p = 0.004, window p = 0.98), so a
    valley in either view keeps the pair apart."""
    c = int(groups.max()) + 1
    merged = np.bincount(np.unique(np.c_[groups, parts], axis=0)[:, 0], minlength=c) > 1
    pairs = adjacent_pairs(W, groups)
    pair_level = level / max(len(pairs), 1)
    members = _grouped(groups, c)
    pvalues = {(i, j): _viewed_pair_pvalue(X, lengths, edge, members[i], members[j],
                                           pair_level, random_state, ends)
               for i, j in pairs.tolist() if merged[i] or merged[j]}
    return _joined_pairs(groups, pvalues, pair_level)


def _viewed_pair_pvalue(X, lengths, edge, first, second, level, random_state, ends):
    """`_pair_pvalue` of two parts whole and, when their sizes differ, on a balanced window
    (`_balanced_window`): either view's valley keeps the pair apart (Bonferroni over the
    views). The window is read only when the whole pair shows no valley at its half of
    `level`: the verdict is the same, and a window's dip test draws null samples of a size
    of its own."""
    if first.size == second.size:
        return _pair_pvalue(X, lengths, edge, first, second, level, random_state, ends)
    whole = _pair_pvalue(X, lengths, edge, first, second, level / 2, random_state, ends)
    if whole < level / 2:
        return 2.0 * whole
    a, b = _balanced_window(lengths, first, second)
    return min(1.0, 2.0 * min(whole, _pair_pvalue(X, lengths, edge, a, b, level / 2,
                                                  random_state, ends)))


def _balanced_window(lengths, first, second):
    """Two adjacent groups (row indices `first`, `second`, increasing) cut to as many
    points each as the smaller holds: the larger group's points nearest the cut between
    them along its own graph (`_cut_distances`; points no path reaches last, ties in index
    order)."""
    m = min(first.size, second.size)
    if first.size > m:
        first = np.sort(first[np.argsort(_cut_distances(lengths, first, second),
                                         kind="stable")[:m]])
    elif second.size > m:
        second = np.sort(second[np.argsort(_cut_distances(lengths, second, first),
                                           kind="stable")[:m]])
    return first, second


def unresolved_parts(W, sub, level, random_state=0):
    """`sub` with each part that the dip test cannot tell apart from its heaviest neighbour
    joined to it, smallest first; the parts keep their numbers (the neighbour's).

    A part of s points beside a part of t has at most mass w = s / (s + t) in their union,
    and the dip of a sample whose minor mode holds mass w is at most about w / 2 (two point
    masses: exactly; `dip_statistic`). When even that dip has a p-value of at least `level`
    among uniform samples of s + t points, the test has no power against the pair: its
    verdict "no valley" says nothing, yet `join_unimodal_pairs` would join on it, and a
    small part beside two parts with a valley between them joined all three (a noisy
    pocket of 40 points between two shapes of battery other/chameleon_t4_8k, 1 755 and 733
    points, p = 1.0 with both, the shapes' pair p = 0.002). Such a part is a piece of its
    heaviest neighbour as far as the test can tell (`_consensus.consensus_pieces` absorbs
    the pieces the runs disagree on alike).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(599), np.ones(599)], [-1, 1]).tocsr()  # a chain
    >>> sub = np.repeat([0, 1, 2], [295, 10, 295])  # a small part between two large ones
    >>> np.bincount(unresolved_parts(W, sub, 0.05 / 2)).tolist()  # joins the first (a tie)
    [305, 0, 295]
    >>> np.bincount(unresolved_parts(W, np.repeat([0, 1, 2], [290, 20, 290]), 0.05 / 2))
    array([290,  20, 290])
    """
    sub = np.asarray(sub, dtype=np.int64)
    c = int(sub.max()) + 1 if sub.size else 0
    if c < 2:
        return sub
    A = lumped_weights(sp.csr_matrix(W, dtype=np.float64), sub, c)
    size = np.bincount(sub, minlength=c).astype(np.int64)
    n_draws = dip_draws(level)

    def unresolved(q, t):  # even the largest dip of q beside t would not reach the level
        m = int(size[q] + size[t])
        return size[q] <= size[t] and dip_pvalue(0.5 * size[q] / m, m, n_draws=n_draws,
                                                 random_state=random_state,
                                                 enough=level) >= level

    return absorbed_parts(A, size, unresolved)[sub]


def join_unimodal_one_by_one(X, sub, W, *, level=DIP_LEVEL, viewers=DIP_VIEWERS,
                             random_state=0):
    """`sub` with adjacent parts joined one pair at a time while some pair is unimodal.

    `join_unimodal_pairs` joins every unimodal pair at once, so a chain of two unimodal
    pairs around one valley (a blob, its neighbour cut in two: the halves' pair and the half
    beside the blob both unimodal on their own path) joins all three. Here the pair whose
    union looks most unimodal joins first and the joined part's pairs are tested again: the
    pieces of one mode join before the valley's two sides are compared (dip-means'
    agglomeration, Kalogeratos & Likas 2012). A union is seen as `unimodal_parts` sees a
    part, from its far end and `viewers` of its points (its p-value the smallest of theirs,
    times their number: Bonferroni), and each round holds its pairs at `level` over their
    number, every pair read at that level (a p read at a stricter one is not this test's).
    From the far end alone, the distances across two Gaussians 3 deviations apart in the
    plane (6 600 points each) smear their valley, and two of three such Gaussians in a row
    joined.

    Returns
    -------
    joined : int array (m,)
        0..c'-1 in order of first appearance.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> X = np.sort(np.concatenate([rng.normal(0, 1, 300), rng.normal(5, 1, 300)]))[:, None]
    >>> sub = np.repeat([0, 1, 2], [280, 40, 280])  # two modes, a part across the valley
    >>> W = sp.diags([np.ones(599), np.ones(599)], [-1, 1])  # a chain
    >>> np.bincount(join_unimodal_pairs(X, sub, W)[0]).tolist()  # both pairs unimodal
    [600]
    >>> sorted(np.bincount(join_unimodal_one_by_one(X, sub, W)).tolist())  # the valley kept
    [280, 320]
    """
    joined = np.asarray(sub, dtype=np.int64).copy()  # each point's part: a number of `sub`'s
    X = rescale(X)[0]
    lengths = edge_length_matrix(X, W)
    members = {i: (i,) for i in np.unique(joined).tolist()}  # a part's parts of `sub`
    known = {}  # p of a pair of unions of `sub`'s parts at a level: paths, positions theirs
    while len(members) > 1:
        ids, part = np.unique(joined, return_inverse=True)
        pairs = adjacent_pairs(W, part).tolist()
        if not pairs:
            break
        groups = _grouped(part, ids.size)
        pair_level = level / len(pairs)
        pvalues = {}
        for a, b in pairs:
            # the parts by their first points, not their numbers: the far end is seen from
            # the second part (`_geodesic_positions`), and ties (p capped at 1) go to the
            # pair that comes first
            a, b = (a, b) if groups[a][0] < groups[b][0] else (b, a)
            key = (members[int(ids[a])], members[int(ids[b])])
            # read at this round's level: a p read at another is not this test's (the draws
            # resolve the level they are read at, and the sequential test stops once p is
            # known to be at or above it)
            if (key, pair_level) not in known:
                known[(key, pair_level)] = _viewed_pvalue(X, lengths, groups[a], groups[b],
                                                          pair_level, viewers, random_state)
            pvalues[(a, b)] = known[(key, pair_level)]
        (a, b), p = max(pvalues.items(), key=lambda ab_p: (ab_p[1], -groups[ab_p[0][0]][0],
                                                           -groups[ab_p[0][1]][0]))
        if p < pair_level:
            break
        keep, gone = int(ids[a]), int(ids[b])
        joined[groups[b]] = keep
        members[keep] = tuple(sorted(members[keep] + members.pop(gone)))
    return canonical_labels(joined)


def unimodal_parts(X, sub, W, *, level=DIP_LEVEL, viewers=DIP_VIEWERS, random_state=0):
    """Whether no part of `sub` holds a density valley along the graph, as its points see it.

    A valley between two adjacent parts says that their union is not one mode, not that the
    cut between them lies at it: two parts that each straddle several clusters differ by
    valleys too. Dip-means asks both (Kalogeratos & Likas 2012): a valley between parts and
    none inside one, read by the part's viewers: a viewer sees a valley when its distances
    to the part's points are multimodal (Hartigan's dip). Here the distances are shortest
    paths along the graph (edges weighted by their lengths), and the viewers of a part are
    its far end (the double sweep of `join_unimodal_pairs`) and `viewers` of its points
    drawn at random (seeded); each of the c (viewers + 1) tests is held at `level` over
    their number (Bonferroni). One viewer is not enough: from the far end of a part that
    straddles a spiral, a rectangle and a stripe (outside shapes, ds3c3sc6) the distances
    are unimodal (p = 0.11), while three of ten random viewers see p = 0.0005.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rng = np.random.default_rng(0)
    >>> X = np.sort(np.concatenate([rng.normal(0, 1, 300), rng.normal(6, 1, 300)]))[:, None]
    >>> W = sp.diags([np.ones(599), np.ones(599)], [-1, 1])  # a chain
    >>> unimodal_parts(X, np.repeat([0, 1], 300), W), unimodal_parts(X, np.zeros(600, int), W)
    (True, False)
    """
    sub = np.asarray(sub, dtype=np.int64)
    c = int(sub.max()) + 1
    X = rescale(X)[0]
    lengths = edge_length_matrix(X, W)
    return all(_viewed_pvalue(X, lengths, part[:0], part, level / c, viewers, random_state)
               >= level / c for part in _grouped(sub, c))


def _viewed_pvalue(X, lengths, first, second, level, viewers, random_state):
    """The dip test's p-value of the union of two parts (row indices `first`, `second`; one
    may be empty) as its viewers see it: the smallest over the far end (`_geodesic_positions`)
    and `viewers` of its points drawn at random, times their number (Bonferroni), at most 1.
    The viewers are drawn from a seed of `random_state` and the union's first point, so the
    parts' numbers do not matter."""
    union = np.concatenate([first, second])
    views = [_geodesic_positions(X, lengths, first, second)]
    rng = np.random.default_rng([int(random_state), int(union.min())])
    seen = rng.choice(np.sort(union), size=min(int(viewers), union.size), replace=False)
    if seen.size:
        views += list(dijkstra(lengths, directed=False, indices=seen)[:, union])
    n_views = len(views)
    p = min(_dip_pvalue(x[np.isfinite(x)], level / n_views, random_state) for x in views)
    # a view's p at or above its level is only known to be there (the sequential test stops
    # once it is): kept there, as p times n_views may round to just below `level`
    return min(1.0, p * n_views if p < level / n_views else max(p * n_views, level))


def _pair_pvalue(X, lengths, edge, first, second, level, random_state, ends=1):
    """The geodesic dip test's p-value of two parts (row indices `first`, `second`), at
    `level` (the draws that resolve it): seen from the union's far end from the second
    part's centre (``ends=1``); or from both ends, each part's far end from the other, and
    from the cut between them (``ends=2``: the same p whichever part comes first),
    combined by Simes's test: the views' p-values sorted, p_(1) <= ... <= p_(v), the
    least v p_(i) / i (Simes 1986; valid for views that depend positively on one another,
    as views of the same points do). It is Bonferroni's v p_(1) when one view alone sees
    the valley, and less conservative when several do: with the cut's view added,
    Bonferroni's 3 p_(1) joined pairs that two views saw a valley in (two blobs of
    make_blobs 10 000 / 5, seed 0: one end p = 0.0056, the cut 0.0083, the other end 0.24;
    Bonferroni 0.0167, Simes 0.0125, at the level 0.0167).

    One end sees the valley only from one side, and which side is the parts' order: from
    the far side of a part that holds two touching blobs, the distances across both smear
    the valley to the third beside them (make_blobs in the plane, 2 000 points: p = 0.16),
    while from the third blob's far side it is plain (p < 0.001). Where the graph's paths
    across the pair are too few `edge` lengths (the graph's median) long to lay its points
    out (`_pair_positions`), each end's view is the line through the parts' means instead.
    Neither end sees a valley that winds between interlocking parts: from the far end of
    an E and the U inside it (battery other/chameleon_t4_8k) the distances to the E's arms
    and to the U's overlap, and the empty band between the shapes does not show (p = 0.03
    where the level is 0.025), while the distances to the cut do (`_cut_positions`,
    p = 0.005); that view is taken where its paths span `PATH_EDGES` edges.

    The p-value is exact below `level`; at or above it, it is read from the views' draws
    up to the point where the verdict was known (`_dip_test.dip_pvalue`'s `enough`)."""
    views = [_pair_positions(X, lengths, a, b, edge)
             for a, b in ((first, second), (second, first))[:ends]]
    if ends == 2:
        x = _cut_positions(lengths, first, second)
        if x.size and np.ptp(x) >= PATH_EDGES * edge:
            views.append(x)
    n = len(views)
    # a view's p-value at or past `level` enters no term of Simes's below `level`, nor moves
    # the ranks of the views below it: its draws may stop there (`dip_pvalue`'s `enough`)
    p = np.sort([_dip_pvalue(x, level / n, random_state, enough=level) for x in views])
    return min(1.0, float(np.min(n * p / np.arange(1, n + 1))))


def _cut_positions(lengths, first, second):
    """Each point's signed distance to the cut between two parts (row indices `first`,
    `second`) along its own part's graph: negative in the first part, positive in the
    second; points that no path within their part reaches are left out.

    A valley between two parts is low density at the cut, whatever its shape, so the
    natural path through the pair is the distance to the cut (the normal coordinate; for a
    straight cut between two blobs, the projection on the line through them). The cut lies
    at the midpoints of the edges that cross it, and each part's points are laid out by
    their shortest paths within the part from those midpoints (each edge's half length).
    A point at the cut lies about half a spacing from it, but its nearest point across is a
    whole spacing away, so these distances start at half a spacing on each side: a hole of
    one spacing at the cut, which the dip test reads as a valley where the density is flat
    (the sparse shell of fcps/atom cut in halves: p = 0.005). Each side's distances are
    therefore taken less half the spacing of its points at the cut (their median distance
    to their nearest neighbour within the part), and at least 0.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(9), np.ones(9)], [-1, 1]).tocsr()  # a chain of unit edges
    >>> _cut_positions(W, np.arange(5), np.arange(5, 10)).tolist()
    [-4.0, -3.0, -2.0, -1.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    """
    positions = []
    for own, other, sign in ((first, second, -1.0), (second, first, 1.0)):
        d = _cut_distances(lengths, own, other, spaced=True)
        positions.append(sign * d[np.isfinite(d)] + 0.0)  # + 0.0: no -0.0 at the cut
    return np.concatenate(positions)


def _cut_distances(lengths, own, other, spaced=False):
    """The distance of each point of `own` (row indices) to the cut between it and `other`
    along `own`'s graph (`lengths`, CSR edge lengths), from the midpoints of the edges
    across; inf where no path within `own` reaches the cut. `spaced`: less half the
    spacing of `own`'s points at the cut, and at least 0 (`_cut_positions`)."""
    lengths = sp.csr_matrix(lengths)
    rows = lengths[own]
    inside = rows[:, own]
    half = 0.5 * _row_minima(rows[:, other])  # half the shortest edge across
    at_cut = np.flatnonzero(np.isfinite(half))
    if not at_cut.size:
        return np.full(own.size, np.inf)
    # the midpoints as one source, node m, joined to each point at the cut
    m = own.size
    coo = inside.tocoo()
    graph = sp.csr_matrix((np.concatenate([coo.data, half[at_cut]]),
                           (np.concatenate([coo.row, np.full(at_cut.size, m)]),
                            np.concatenate([coo.col, at_cut]))), shape=(m + 1, m + 1))
    d = dijkstra(graph, directed=False, indices=m)[:m]
    if spaced:
        spacing = _row_minima(inside[at_cut])
        spacing = spacing[np.isfinite(spacing)]
        if spacing.size:
            d = np.maximum(d - 0.5 * float(np.median(spacing)), 0.0)
    return d


def _row_minima(rows):
    """Each row's shortest edge (CSR rows of edge lengths); inf for a row without edges."""
    out = np.full(rows.shape[0], np.inf)
    has = np.diff(rows.indptr) > 0
    if has.any():
        out[has] = np.minimum.reduceat(rows.data, rows.indptr[:-1][has])
    return out


#: Fewest median edge lengths the geodesic across a pair must span for its shortest-path
#: positions to be read by the dip test (`_pair_positions`). Measured on one Gaussian of
#: 200 points cut in two halves (10-NN graph, three draws per dimension): the geodesic spans
#: 15-21 edges in the plane and 5.4-5.8 in 5 dimensions, where the dip finds no valley
#: (p 0.58-1.0), but 4.1-4.5 in 8-10 dimensions and 3.0-3.5 in 20-60, where it finds one
#: (p = 0.005 in 8 of 12 draws). Eight leaves a margin over both.
PATH_EDGES = 8.0


def _pair_positions(X, lengths, first, second, edge):
    """The positions of two parts' points (row indices `first`, `second`) along a path
    through them, for the dip test: their shortest-path distances from the union's far end
    (`_geodesic_positions`); or, when those span fewer than `PATH_EDGES` times `edge` (the
    graph's median edge length), their projections on the line through the parts' means.

    A shortest path of a kNN graph is a sum of edges: it measures the distance along the
    data only when it is many edges long (Isomap's graph distances converge to the
    manifold's as the edges shrink; Bernstein, de Silva, Langford & Tenenbaum 2000). In
    many dimensions a kNN edge is nearly as long as the cluster is wide (distances
    concentrate), the paths from the far end are one to four edges, and the positions are
    lumped by their hop counts: one Gaussian cut in two is then "bimodal" (in 20-60
    dimensions, every draw at the test's smallest p). There the graph sees no curve to
    follow anyway, and the line through the means is the projected dip of dip-means
    (Kalogeratos & Likas 2012)."""
    x = _geodesic_positions(X, lengths, first, second)
    if x.size and np.ptp(x) >= PATH_EDGES * edge:
        return x
    mean_first = np.asarray(X[first].mean(axis=0)).ravel()
    mean_second = np.asarray(X[second].mean(axis=0)).ravel()
    return np.asarray(X[np.concatenate([first, second])] @ (mean_second - mean_first)).ravel()


def _dip_pvalue(x, level, random_state, enough=None):
    """The dip test's p-value of positions `x` at `level` (the draws that resolve it), exact
    below `enough` and at least `enough` otherwise (`dip_pvalue`); 1 when nothing is laid out
    along a path."""
    if x.size < 4 or not np.ptp(x) > 0:  # nothing laid out along a path: nothing told apart
        return 1.0
    return float(dip_test(x, n_draws=dip_draws(level), random_state=random_state,
                          enough=enough)[1])


def edge_length_matrix(X, W):
    """W's pattern with each edge's Euclidean length in X (CSR); lengths of 0 (duplicate
    points) are raised to a hair above it, since a sparse graph's zero is no edge."""
    W = sp.csr_matrix(W).tocoo()  # one entry per edge: repeated entries would add lengths
    if not sp.issparse(X):  # edges over the threads, no (nnz, d) temporary (a cluster of
        # 95 000 points and 1.3 million edges at 10^6: 0.27 -> 0.06 s, docs/scaling.md)
        d = edge_lengths(X, W.row, W.col)
    else:
        X = sp.csr_matrix(X)
        sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
        d = np.empty(W.nnz)
        # in blocks of edges: the edges' end points as rows would take nnz x d numbers at once
        for s in range(0, W.nnz, _EDGE_BLOCK):
            a, b = W.row[s:s + _EDGE_BLOCK], W.col[s:s + _EDGE_BLOCK]
            dot = np.asarray(X[a].multiply(X[b]).sum(axis=1)).ravel()
            d[s:s + a.size] = np.sqrt(np.maximum(sq[a] + sq[b] - 2.0 * dot, 0.0))
    d = np.maximum(d, 1e-12 * (float(d.max()) if d.size and d.max() > 0 else 1.0))
    return sp.csr_matrix((d, (W.row, W.col)), shape=W.shape)


def _geodesic_positions(X, lengths, first, second):
    """The shortest-path distances along `lengths` (CSR, the cluster's graph) of the points of
    two parts (row indices `first`, `second`) from their union's point farthest from the
    second part's centre (its point nearest its mean); points no path reaches are left out.
    The paths may pass through the cluster's other parts: a part's points can be joined to
    one another only through a third."""
    points = X[second]
    mean = np.asarray(points.mean(axis=0)).ravel()
    if sp.issparse(points):  # |x - mean|^2 up to a constant
        gap = (np.asarray(points.multiply(points).sum(axis=1)).ravel()
               - 2.0 * np.asarray(points @ mean).ravel())
    else:
        gap = ((points - mean) ** 2).sum(axis=1)
    union = np.concatenate([first, second])
    from_centre = dijkstra(lengths, directed=False, indices=int(second[np.argmin(gap)]))[union]
    reached = np.isfinite(from_centre)
    end = int(union[np.argmax(np.where(reached, from_centre, -np.inf))])
    x = dijkstra(lengths, directed=False, indices=end)[union]
    return x[np.isfinite(x)]


#: A cut of one curve lies at an end of both parts: the point of a part on the cut must be
#: at least this share of the part's geodesic diameter from its farthest point (an end is
#: the whole length from the other end, less a few spacings; the middle of an arc half of
#: it, and the spot at 45 degrees where the demo's third moon touches the first, 0.75: at
#: 0.8 three moons of 150 and 200 points lost a moon, seeds 4 and 3).
CURVE_END_SHARE = 0.9


def cut_at_ends(X, W, labels, u, v, share=CURVE_END_SHARE):
    """Per edge (u_e, v_e) between two clusters of `labels`: whether each end lies at an end
    of its own cluster along the graph, as where a curve is cut in two. A point's farthest
    geodesic distance in its cluster (edges weighted by their lengths) is compared with the
    cluster's diameter (a double sweep from the point: a lower bound, exact on a path).
    Between the tip of one moon and the middle of the next the second end lies mid-arc
    (about half the diameter): the two are no pieces of one curve. A closed curve has no
    ends: every point of a ring is a diameter from its farthest, so the cluster must also
    have a middle, the point halfway along the diameter of a double sweep from its first
    point lying less than `share` of it from its farthest (an arc's middle: half; a ring's:
    all of it), where that diameter spans `PATH_EDGES` of its median edges or more. Two
    whole rings side by side, which every point's test would pass, are no pieces of one
    curve (make_circles' two rings at noise 0.08, both flatter than scatter by their local
    PCA, were joined).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = np.c_[np.arange(6.0)]
    >>> W = sp.diags([np.ones(5), np.ones(5)], [-1, 1]).tocsr()   # a path 0-1-2-3-4-5
    >>> cut_at_ends(X, W, np.array([0, 0, 0, 1, 1, 1]), [2], [3]).tolist()
    [True]
    >>> cut_at_ends(X, W, np.array([0, 0, 1, 1, 1, 0]), [1], [2]).tolist()  # 0-1 | 2-4 | 5
    [True]
    >>> T = sp.csr_matrix(([1.0] * 5, ([0, 1, 2, 3, 2], [1, 2, 3, 4, 5])), shape=(6, 6))
    >>> Y = np.array([[0, 0], [1, 0], [2, 0], [3, 0], [4, 0], [2, 1.0]])  # 5 above 2
    >>> cut_at_ends(Y, T + T.T, np.array([0, 0, 0, 0, 0, 1]), [2], [5]).tolist()  # 2 mid-path
    [False]
    >>> a = np.linspace(0, 2 * np.pi, 40, endpoint=False)         # two rings of 40 points
    >>> R = np.r_[np.c_[np.cos(a), np.sin(a)], 1.1 * np.c_[np.cos(a), np.sin(a)]]
    >>> ring = sp.diags([np.ones(39), np.ones(39)], [-1, 1]).tolil()
    >>> ring[0, 39] = ring[39, 0] = 1
    >>> C = sp.block_diag([ring, ring]).tolil()
    >>> C[0, 40] = C[40, 0] = 1
    >>> cut_at_ends(R, C.tocsr(), np.repeat([0, 1], 40), [0], [40]).tolist()
    [False]
    >>> C[0, 39] = C[39, 0] = 0                                     # the first ring cut open
    >>> cut_at_ends(R, C.tocsr(), np.repeat([0, 1], 40), [0], [40]).tolist()  # not the other
    [False]
    """
    labels = np.asarray(labels, dtype=np.int64)
    lengths = edge_length_matrix(X, W)
    groups = _grouped(labels, int(labels.max()) + 1)
    seen, subgraphs, open_ = {}, {}, {}

    def subgraph(j):
        if j not in subgraphs:  # each cluster's subgraph sliced once
            subgraphs[j] = lengths[groups[j]][:, groups[j]]
        return subgraphs[j]

    def farthest(sub, i):
        d = dijkstra(sub, directed=False, indices=int(i))
        d[~np.isfinite(d)] = -1.0  # its cluster's points outside its component
        return d

    def has_ends(j):
        if j not in open_:  # the middle of a sweep's diameter is nearer its farthest; the
            # sweep from the cluster's first point, so that the verdict is the cluster's own
            sub = subgraph(j)
            d1 = farthest(sub, np.argmax(farthest(sub, 0)))
            middle = int(np.argmin(np.abs(d1 - 0.5 * d1.max())))
            # a diameter of a few edges has no middle to read (a cluster of a few points)
            short = not sub.nnz or d1.max() < PATH_EDGES * float(np.median(sub.data))
            open_[j] = short or farthest(sub, middle).max() < share * d1.max()
        return open_[j]

    def at_end(p):
        if p not in seen:
            j = labels[p]
            sub = subgraph(j)
            d0 = farthest(sub, np.searchsorted(groups[j], p))
            d1 = farthest(sub, np.argmax(d0))
            seen[p] = d0.max() >= share * d1.max() and has_ends(j)
        return seen[p]

    return np.array([at_end(int(a)) and at_end(int(b)) for a, b in zip(u, v)], dtype=bool)


def _grouped(keys, k):
    """The members of each of the `k` groups of `keys` (0..k-1), each in increasing order."""
    order = np.argsort(keys, kind="stable")
    bounds = np.searchsorted(keys[order], np.arange(k + 1))
    return [order[bounds[i]:bounds[i + 1]] for i in range(k)]
