"""Connectivity-constrained agglomeration of a region graph: Ward / Mumford-Shah greedy merging.

`merge_hierarchy` takes any graph whose nodes carry additive statistics (a size and feature sums)
and whose edges carry a border length (and optionally a summed border strength): superpixels and
their adjacency (`graphclust.graphs.region_adjacency`), or points and a kNN graph. Starting from
the nodes, the adjacent pair with the smallest dissimilarity is merged, statistics and borders of
the two are summed, and the process repeats until one node is left (nodes of different
components are joined last, at infinite height). The merge heights, made non-decreasing, are an
ultrametric: every threshold gives a partition, and the partitions nest (`Hierarchy`).

The default criterion is the piecewise-constant Mumford-Shah energy (Koepfler, Lopez & Morel
1994): E_lambda = sum_R sum_{x in R} ||f(x) - mu_R||^2 + lambda^2 |boundaries|. Merging A and B
raises the fit error by Ward's term W(A, B) = |A||B| / (|A| + |B|) ||mu_A - mu_B||^2 and removes
their common border l(A, B), so it lowers E_lambda exactly when lambda >= sqrt(W / l). Merging
the pair of smallest sqrt(W / l) first and cutting at a fixed lambda keeps a region iff splitting
it off pays for its border at that price.

Cost: m edges, L nodes: O((m + L) log m) heap operations times the average number of
neighbours of a merged node (Python dictionaries; ~0.1 s for 1000 superpixels).
"""

from __future__ import annotations

import heapq

import numpy as np

from .._validation import check_int, check_option, check_real
from ._partition_quality import canonical_labels

__all__ = ["Hierarchy", "merge_hierarchy", "absorb_thin_regions", "MERGE_CRITERIA"]

#: dissimilarities of `merge_hierarchy` (see its docstring)
MERGE_CRITERIA = ("mumford-shah", "ward", "boundary", "centroid")


class Hierarchy:
    """A binary merge tree over `n_leaves` leaves with non-decreasing heights (an ultrametric).

    Parameters
    ----------
    merges : int array (n_leaves - 1, 2)
        Row t joins nodes ``merges[t]`` into node ``n_leaves + t`` (scipy's linkage numbering:
        leaves are 0..n_leaves-1).
    heights : float array (n_leaves - 1,)
        Non-decreasing merge heights.
    sizes : array (n_leaves - 1,)
        Weight (e.g. pixels) of each merged node.

    Examples
    --------
    >>> import numpy as np
    >>> h = Hierarchy([[0, 1], [2, 3]], [1.0, 2.0], [2, 3])
    >>> h.leaf_labels(n_segments=2).tolist(), h.leaf_labels(threshold=0.5).tolist()
    ([0, 0, 1], [0, 1, 2])
    >>> h.merge_height([0, 0], [1, 2]).tolist()
    [1.0, 2.0]
    """

    def __init__(self, merges, heights, sizes):
        self.merges = np.asarray(merges, dtype=np.int64).reshape(-1, 2)
        self.heights = np.asarray(heights, dtype=np.float64)
        self.sizes = np.asarray(sizes)
        if self.heights.shape != (self.merges.shape[0],) or np.any(np.diff(self.heights) < 0):
            raise ValueError("heights must be one non-decreasing value per merge.")
        L = self.n_leaves
        self._parent = np.full(2 * L - 1, -1, dtype=np.int64)
        for t, (x, y) in enumerate(self.merges.tolist()):
            joins_roots = self._parent[x] < 0 and self._parent[y] < 0
            if not (0 <= x < L + t and 0 <= y < L + t and x != y) or not joins_roots:
                raise ValueError(f"merge {t} ({x}, {y}) does not join two existing roots.")
            self._parent[x] = self._parent[y] = L + t

    @property
    def n_leaves(self):
        """Number of leaves."""
        return int(self.merges.shape[0] + 1)

    def linkage(self):
        """The tree as a scipy linkage matrix (merged ids, height, leaves below): accepted by
        ``scipy.cluster.hierarchy`` (dendrogram, fcluster, cophenet)."""
        L = self.n_leaves
        count = np.ones(2 * L - 1)
        for t in range(L - 1):
            count[L + t] = count[self.merges[t, 0]] + count[self.merges[t, 1]]
        return np.column_stack([self.merges.astype(float), self.heights, count[L:]])

    def n_merges(self, n_segments=None, threshold=None):
        """Merges of a level: ``n_leaves - n_segments``, or all those of height <= threshold."""
        if (n_segments is None) == (threshold is None):
            raise ValueError("give exactly one of n_segments and threshold.")
        if n_segments is not None:
            k = check_int(n_segments, "n_segments", low=1)
            return self.n_leaves - min(k, self.n_leaves)
        t = check_real(threshold, "threshold", low=-np.inf)
        return int(np.searchsorted(self.heights, t, side="right"))

    def leaf_labels(self, n_segments=None, threshold=None):
        """Part of every leaf at a level (the first `n_leaves - n_segments` merges, or all merges
        of height <= `threshold`): int64 labels 0..K-1 in order of each part's smallest leaf."""
        L = self.n_leaves
        n = self.n_merges(n_segments, threshold)
        parent = np.arange(2 * L - 1)
        parent[self.merges[:n, 0]] = L + np.arange(n)
        parent[self.merges[:n, 1]] = L + np.arange(n)
        root = parent.copy()
        for i in range(2 * L - 2, -1, -1):  # ids grow towards the root
            root[i] = root[parent[i]]
        _, first, lab = np.unique(root[:L], return_index=True, return_inverse=True)
        rank = np.empty_like(first)
        rank[np.argsort(first)] = np.arange(first.size)
        return rank[lab].astype(np.int64)

    def merge_height(self, a, b):
        """Height at which leaves a[i] and b[i] first belong to one node (their ultrametric
        distance; 0 for a leaf with itself). Vectorised: O(len(a) x tree depth)."""
        x = np.asarray(a, dtype=np.int64).copy()
        y = np.asarray(b, dtype=np.int64).copy()
        L = self.n_leaves
        todo = np.flatnonzero(x != y)
        while todo.size:
            lo = np.minimum(x[todo], y[todo])
            hi = np.maximum(x[todo], y[todo])
            x[todo] = self._parent[lo]  # the smaller id is never the common ancestor
            y[todo] = hi
            todo = todo[x[todo] != y[todo]]
        out = np.zeros(x.shape)
        inner = x >= L
        out[inner] = self.heights[x[inner] - L]
        return out


def merge_hierarchy(size, sums, a, b, length=None, total=None, *, criterion="mumford-shah",
                    size_prior=0.0):
    """Greedy agglomeration of a graph with additive node statistics: smallest dissimilarity first.

    Dissimilarity of adjacent nodes A, B with means mu = sums / size, border l(A, B) (summed
    `length` of the edges between them) and mean border strength B(A, B) = total / l:

    - ``"mumford-shah"`` (default): sqrt(W(A, B) / l(A, B)), W = |A||B| / (|A| + |B|)
      ||mu_A - mu_B||^2 (the lambda at which merging lowers the Mumford-Shah energy);
    - ``"ward"``: sqrt(W(A, B)), connectivity-constrained Ward (borders ignored);
    - ``"boundary"``: B(A, B), the mean strength of the border (Arbelaez et al.'s OWT-UCM order);
    - ``"centroid"``: ||mu_A - mu_B||;

    each multiplied by sqrt(min(1, min(|A|, |B|) / size_prior)) when ``size_prior > 0``, so that
    nodes lighter than `size_prior` are absorbed before their contrast is judged.

    Parameters
    ----------
    size : float array (L,)
        Node weights (pixels of a region, 1 for a point), > 0.
    sums : float array (L, C)
        Feature sums of the nodes (mean = sums / size).
    a, b : int arrays (m,)
        Edges (a[i], b[i]), each pair once.
    length : float array (m,) or None
        Border length of each edge; None: 1.
    total : float array (m,) or None
        Summed border strength of each edge (``"boundary"`` only); None: 0.
    criterion : str, default "mumford-shah"
        One of `MERGE_CRITERIA`.
    size_prior : float >= 0, default 0

    Returns
    -------
    Hierarchy

    Examples
    --------
    >>> import numpy as np
    >>> size = np.array([10.0, 10.0, 10.0]); sums = np.array([[0.0], [10.0], [500.0]])
    >>> h = merge_hierarchy(size, sums, np.array([0, 1]), np.array([1, 2]))
    >>> h.merges.tolist(), np.round(h.heights, 3).tolist()   # sqrt(5), sqrt(20 * 10 / 30 * 49.5^2)
    ([[0, 1], [3, 2]], [2.236, 127.808])
    """
    check_option(criterion, "criterion", set(MERGE_CRITERIA))
    size_prior = check_real(size_prior, "size_prior", low=0.0)
    size = np.asarray(size, dtype=np.float64).ravel()
    sums = np.asarray(sums, dtype=np.float64)
    sums = sums.reshape(size.size, -1)
    a = np.asarray(a, dtype=np.int64).ravel()
    b = np.asarray(b, dtype=np.int64).ravel()
    length = np.ones(a.size) if length is None else np.asarray(length, dtype=np.float64).ravel()
    total = np.zeros(a.size) if total is None else np.asarray(total, dtype=np.float64).ravel()
    L = size.size
    if L < 1 or np.any(size <= 0) or not np.all(np.isfinite(sums)):
        raise ValueError("size must be > 0 for at least one node and sums finite.")
    if not (a.size == b.size == length.size == total.size):
        raise ValueError("a, b, length and total must have one entry per edge.")
    if a.size and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= L or np.any(a == b)):
        raise ValueError("edges must join two different nodes 0..L-1.")
    if np.any(length <= 0):
        raise ValueError("border lengths must be > 0.")
    N = 2 * L - 1
    sz = np.zeros(N)
    sz[:L] = size
    sm = np.zeros((N, sums.shape[1]))
    sm[:L] = sums
    alive = np.zeros(N, dtype=bool)
    alive[:L] = True
    nbrs = [dict() for _ in range(N)]
    for x, y, ln, tt in zip(a.tolist(), b.tolist(), length.tolist(), total.tolist()):
        if y in nbrs[x]:
            raise ValueError(f"the edge ({x}, {y}) is given twice.")
        nbrs[x][y] = nbrs[y][x] = (ln, tt)

    def dissimilarity(x, y, ln, tt):
        if criterion == "boundary":
            d = tt / ln
        else:
            diff = sm[x] / sz[x] - sm[y] / sz[y]
            d2 = float(diff @ diff)
            if criterion == "centroid":
                d = np.sqrt(d2)
            else:
                w = sz[x] * sz[y] / (sz[x] + sz[y]) * d2
                d = np.sqrt(w / ln if criterion == "mumford-shah" else w)
        if size_prior > 0:
            d *= min(1.0, min(sz[x], sz[y]) / size_prior) ** 0.5
        return d

    heap = [(dissimilarity(x, y, *v), x, y) for x in range(L) for y, v in nbrs[x].items() if x < y]
    heapq.heapify(heap)
    merges = np.zeros((L - 1, 2), dtype=np.int64)
    heights = np.zeros(L - 1)
    sizes = np.zeros(L - 1)
    last = -np.inf
    for t in range(L - 1):
        while heap and not (alive[heap[0][1]] and alive[heap[0][2]]):
            heapq.heappop(heap)
        if heap:
            d, x, y = heapq.heappop(heap)
        else:  # the graph is disconnected: what is left is joined at infinite height
            x, y = np.flatnonzero(alive)[:2].tolist()
            d = np.inf
        c = L + t
        alive[x] = alive[y] = False
        alive[c] = True
        sz[c] = sz[x] + sz[y]
        sm[c] = sm[x] + sm[y]
        nb = nbrs[x]
        for z, v in nbrs[y].items():
            nb[z] = (nb[z][0] + v[0], nb[z][1] + v[1]) if z in nb else v
        nb.pop(x, None)
        nb.pop(y, None)
        nbrs[c] = nb
        nbrs[x] = nbrs[y] = None
        for z, v in nb.items():
            nz = nbrs[z]
            nz.pop(x, None)
            nz.pop(y, None)
            nz[c] = v
            heapq.heappush(heap, (dissimilarity(c, z, *v), c, z))
        last = max(last, d)
        merges[t] = (x, y)
        heights[t] = last
        sizes[t] = sz[c]
    return Hierarchy(merges, heights, sizes)


def absorb_thin_regions(groups, size, sums, a, b, length, *, threshold, width):
    """Merge the regions of a cut that are thinner than `width` by their colour alone.

    A region's mean width is ``2 |R| / l(R)``, with l(R) its border with the other regions (a
    strip w pixels wide has width w). A texture feature measured in windows of diameter about
    `width` is not a region's own when the region is thinner than that: every window straddles
    its border, and a band along a strong edge gets a "texture" of its own (a step between two
    flat halves otherwise leaves one such strip on each side). Such a region is judged on
    `sums` (the colour channels, without the texture) by the Mumford-Shah height of
    `merge_hierarchy`, sqrt(W(A, B) / l(A, B)): the adjacent pair of a thin region with the
    smallest height merges while that height is at most `threshold`, and the merged region is
    judged again by its own width.

    Parameters
    ----------
    groups : int array (L,)
        The cut: node (superpixel) -> region, 0..K-1.
    size, sums : float arrays (L,), (L, C)
        Node weights and feature sums (the features the thin regions are judged on).
    a, b, length : arrays (m,)
        Node adjacencies, each pair once, and their border lengths.
    threshold : float
        The cut's height (the hierarchy's lambda).
    width : float
        Regions thinner than this are judged without the texture.

    Returns
    -------
    int64 array (L,): node -> region, 0..K'-1 (K' <= K) by first appearance.

    Examples
    --------
    >>> import numpy as np
    >>> # a 1-wide strip of 10 nodes between two halves of 100, the strip coloured as the left
    >>> size = np.array([100.0, 10.0, 100.0]); sums = np.array([[0.0], [0.0], [5000.0]])
    >>> absorb_thin_regions(np.arange(3), size, sums, [0, 1], [1, 2], [10.0, 10.0],
    ...                     threshold=20.0, width=4.0).tolist()
    [0, 0, 1]
    """
    groups = np.asarray(groups, dtype=np.int64).ravel()
    size = np.asarray(size, dtype=np.float64).ravel()
    sums = np.asarray(sums, dtype=np.float64).reshape(size.size, -1)
    a, b = np.asarray(a, dtype=np.int64).ravel(), np.asarray(b, dtype=np.int64).ravel()
    length = np.asarray(length, dtype=np.float64).ravel()
    if groups.size != size.size or (groups.size and groups.min() < 0):
        raise ValueError(f"groups must give each of the {size.size} nodes a region >= 0; got "
                         f"{groups.size} entries (smallest {groups.min() if groups.size else None}).")
    if not (a.size == b.size == length.size) or (a.size and (
            min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= size.size)):
        raise ValueError("a, b and length must have one entry per adjacency, joining nodes "
                         f"0..{size.size - 1}.")
    k = int(groups.max()) + 1 if groups.size else 0
    sz = np.bincount(groups, weights=size, minlength=k)
    sm = np.zeros((k, sums.shape[1]))
    np.add.at(sm, groups, sums)
    ga, gb = groups[a], groups[b]
    cross = ga != gb
    nbrs = [dict() for _ in range(k)]
    for x, y, ln in zip(ga[cross].tolist(), gb[cross].tolist(), length[cross].tolist()):
        nbrs[x][y] = nbrs[x].get(y, 0.0) + ln
        nbrs[y][x] = nbrs[y].get(x, 0.0) + ln
    perim = np.array([sum(nb.values()) for nb in nbrs])
    parent = np.arange(k)
    version = np.zeros(k, dtype=np.int64)  # a heap entry is stale once a side has changed

    def thin(x):
        return perim[x] > 0 and 2.0 * sz[x] / perim[x] < width

    def height(x, y, ln):
        diff = sm[x] / sz[x] - sm[y] / sz[y]
        return float(np.sqrt(sz[x] * sz[y] / (sz[x] + sz[y]) * float(diff @ diff) / ln))

    def push(heap, x):
        for y, ln in nbrs[x].items():
            if thin(x) or thin(y):
                heapq.heappush(heap, (height(x, y, ln), min(x, y), max(x, y),
                                      version[x] + version[y]))

    heap = []
    for x in range(k):
        if thin(x):
            push(heap, x)
    while heap:
        h, x, y, ver = heapq.heappop(heap)
        if h > threshold:
            break
        if parent[x] != x or parent[y] != y or ver != version[x] + version[y]:
            continue  # a stale entry: one side has merged since
        # y into x: its statistics, borders and perimeter
        parent[y] = x
        sz[x] += sz[y]
        sm[x] += sm[y]
        perim[x] += perim[y] - 2.0 * nbrs[x].pop(y)
        nbrs[y].pop(x)
        for z, ln in nbrs[y].items():
            nbrs[x][z] = nbrs[x].get(z, 0.0) + ln
            nz = nbrs[z]
            nz[x] = nz.get(x, 0.0) + nz.pop(y)
        nbrs[y] = {}
        # x's pairs are judged again (its mean and borders changed, and it may be thick now);
        # the pairs of y are dropped by parent[y] != y, the others are unchanged
        version[x] += 1
        push(heap, x)
    while True:  # path compression of the merges
        up = parent[parent]
        if np.array_equal(up, parent):
            break
        parent = up
    return canonical_labels(parent[groups])
