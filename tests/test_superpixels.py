"""Image features, superpixels, region adjacency and the agglomerative hierarchy: the kernels
against plain-Python references, and the invariants of the hierarchy."""

import numpy as np
import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from graphclust.cluster import Hierarchy, absorb_thin_regions, merge_hierarchy
from graphclust.graphs import (
    gaussian_smooth,
    graph_superpixels,
    local_contrast,
    refine_labels,
    region_adjacency,
    region_statistics,
    rgb_to_lab,
)
from graphclust.segmentation import image_hierarchy

from invariants import assert_is_partition


def two_tone(H=120, W=180, noise=0.02, seed=0):
    rng = np.random.default_rng(seed)
    img = np.full((H, W, 3), 0.2)
    img[:, W // 2:] = [0.8, 0.5, 0.3]
    return np.clip(img + rng.normal(0, noise, img.shape), 0, 1)


# ------------------------------------------------------------------------------------ features
def test_lab_matches_scikit_image():
    skcolor = pytest.importorskip("skimage.color")
    rgb = np.random.default_rng(1).random((7, 9, 3))
    np.testing.assert_allclose(rgb_to_lab(rgb), skcolor.rgb2lab(rgb), atol=0.05)


def test_lab_grey_has_no_chroma():
    lab = rgb_to_lab(np.linspace(0, 1, 12).reshape(3, 4))
    np.testing.assert_allclose(lab[..., 1:], 0, atol=1e-3)
    assert np.all(np.diff(lab[..., 0].ravel()) > 0)


def test_gaussian_smooth_matches_scipy():
    from scipy import ndimage

    # exact below sigma 4; above, the decimation error stated in the docstring
    x = ndimage.zoom(np.random.default_rng(0).random((12, 15)), 10, order=0)  # blocks in [0, 1]
    exact = ndimage.gaussian_filter(x, 1.5, truncate=3.0)
    assert np.abs(gaussian_smooth(x, 1.5) - exact).max() < 1e-6
    for sigma in (6.0, 12.0):
        err = np.abs(gaussian_smooth(x, sigma) - ndimage.gaussian_filter(x, sigma, truncate=3.0))
        assert err.max() < 0.08 and err.mean() < 0.02


def test_local_contrast_is_low_beside_a_step_edge():
    S = np.zeros((60, 60))
    S[:, 30:] = 50.0
    plain = local_contrast(S, 5.0, presmooth=0, edge_preserving=False)
    assert local_contrast(S, 5.0, presmooth=0).max() < 20.0 < plain.max()
    stripes = np.zeros((60, 60))
    stripes[:, ::2] = 20.0  # texture everywhere: deviation 10
    assert local_contrast(stripes, 5.0, presmooth=0)[30, 30] == pytest.approx(10.0, abs=0.1)


# --------------------------------------------------------------------------------- superpixels
def _felzenszwalb_reference(F, k, min_size):
    """Plain-Python Felzenszwalb-Huttenlocher on the 8-grid (same edge order: weight, then id)."""
    H, W, _ = F.shape
    edges = []
    for y in range(H):
        for x in range(W):
            for t, (dy, dx) in enumerate(((0, 1), (1, 0), (1, 1), (1, -1))):
                yy, xx = y + dy, x + dx
                if yy < H and 0 <= xx < W:
                    w = np.float32(np.sqrt(((F[y, x].astype(np.float32) - F[yy, xx]) ** 2).sum()))
                    edges.append((w, (y * W + x) * 4 + t, y * W + x, yy * W + xx))
    edges.sort(key=lambda e: (e[0], e[1]))
    parent = list(range(H * W))
    size = [1] * (H * W)
    internal = [0.0] * (H * W)

    def find(i):
        while parent[i] != i:
            i = parent[i]
        return i

    for w, _, p, q in edges:
        a, b = find(p), find(q)
        if a != b and w <= min(internal[a] + k / size[a], internal[b] + k / size[b]):
            if size[a] < size[b]:
                a, b = b, a
            parent[b] = a
            size[a] += size[b]
            internal[a] = w
    for w, _, p, q in edges:
        a, b = find(p), find(q)
        if a != b and (size[a] < min_size or size[b] < min_size):
            if size[a] < size[b]:
                a, b = b, a
            parent[b] = a
            size[a] += size[b]
    return np.array([find(i) for i in range(H * W)]).reshape(H, W)


@pytest.mark.parametrize("k, min_size", [(0.5, 1), (2.0, 3), (10.0, 5)])
def test_superpixels_equal_reference(k, min_size):
    F = np.random.default_rng(2).random((9, 11, 3)).astype(np.float32)
    labels, count = graph_superpixels(F, k, min_size)
    ref = _felzenszwalb_reference(F, np.float32(k), min_size)
    pairs = set(zip(labels.ravel().tolist(), ref.ravel().tolist()))  # same partition
    assert len(pairs) == count == np.unique(ref).size
    assert_is_partition(labels.ravel(), labels.size)


def test_superpixels_respect_a_step_and_check_arguments():
    F = np.zeros((20, 30, 1))
    F[:, 15:] = 10.0
    labels, count = graph_superpixels(F, 1.0, 5)
    assert count == 2 and np.unique(labels[:, :15]).size == 1
    with pytest.raises(ValueError, match="k must satisfy"):
        graph_superpixels(F, 0.0, 5)
    with pytest.raises(ValueError, match="min_size must satisfy"):
        graph_superpixels(F, 1.0, 0)
    with pytest.raises(ValueError, match="connectivity"):
        graph_superpixels(F, 1.0, 5, connectivity=6)


def test_refine_labels_moves_the_boundary_to_the_colour_edge():
    lab = np.zeros((8, 8, 1), np.float32)
    lab[:, 3:] = 1.0
    coarse = np.array([[0, 1, 1, 1]] * 4)
    out = refine_labels(lab, coarse, np.array([[0.0], [1.0]]))
    assert out[0].tolist() == [0, 0, 0, 1, 1, 1, 1, 1]


# ------------------------------------------------------------------------------ RAG and stats
def test_region_adjacency_against_brute_force():
    rng = np.random.default_rng(3)
    lab = rng.integers(0, 5, (8, 9))
    E = rng.random((8, 9))
    a, b, length, total = region_adjacency(lab, E, 5)
    ref = {}
    for y in range(8):
        for x in range(9):
            for yy, xx in ((y, x + 1), (y + 1, x)):
                if yy < 8 and xx < 9 and lab[y, x] != lab[yy, xx]:
                    key = (min(lab[y, x], lab[yy, xx]), max(lab[y, x], lab[yy, xx]))
                    n, s = ref.get(key, (0, 0.0))
                    ref[key] = (n + 1, s + max(E[y, x], E[yy, xx]))
    assert sorted(ref) == list(zip(a.tolist(), b.tolist()))
    for i, key in enumerate(zip(a.tolist(), b.tolist())):
        assert length[i] == ref[key][0]
        assert total[i] == pytest.approx(ref[key][1])
    assert np.array_equal(region_adjacency(lab)[2], length)  # no strength: same borders


def test_region_statistics():
    lab = np.array([[0, 0, 1], [2, 2, 1]])
    F = np.arange(12, dtype=float).reshape(2, 3, 2)
    size, sums, sq = region_statistics(lab, F)
    assert size.tolist() == [2, 2, 2]
    np.testing.assert_allclose(sums[0], F[0, 0] + F[0, 1])
    np.testing.assert_allclose(sq[1], F[0, 2] ** 2 + F[1, 2] ** 2)


# ----------------------------------------------------------------------- the greedy merge
def _greedy_reference(size, sums, edges, criterion, size_prior):
    """Plain greedy agglomeration: every step recomputes all adjacent pairs (O(L^2 m))."""
    parts = {i: ({i}, float(size[i]), np.array(sums[i], float)) for i in range(len(size))}
    border = {}
    for (x, y), ln in edges.items():
        border[frozenset((x, y))] = ln
    heights, nxt = [], len(size)
    while len(parts) > 1:
        best = None
        for key, ln in border.items():
            x, y = sorted(key)
            (_, sx, mx), (_, sy, my) = parts[x], parts[y]
            d2 = float(((mx / sx - my / sy) ** 2).sum())
            w = sx * sy / (sx + sy) * d2
            d = np.sqrt(w / ln) if criterion == "mumford-shah" else np.sqrt(w)
            if size_prior > 0:
                d *= min(1.0, min(sx, sy) / size_prior) ** 0.5
            if best is None or d < best[0]:
                best = (d, x, y)
        d, x, y = best
        parts[nxt] = tuple(u + v if i else u | v for i, (u, v) in enumerate(zip(parts[x], parts[y])))
        del parts[x], parts[y]
        new = {}
        for key, ln in border.items():
            k2 = frozenset(nxt if v in (x, y) else v for v in key)
            if len(k2) == 2:
                new[k2] = new.get(k2, 0.0) + ln
        border = new
        heights.append(max(d, heights[-1]) if heights else d)
        nxt += 1
    return np.array(heights)


@pytest.mark.parametrize("criterion, size_prior", [("mumford-shah", 0.0), ("mumford-shah", 6.0),
                                                   ("ward", 0.0)])
def test_merge_hierarchy_equals_the_plain_greedy_reference(criterion, size_prior):
    rng = np.random.default_rng(5)
    lab = np.repeat(np.repeat(np.arange(12).reshape(3, 4), 3, 0), 3, 1)  # 12 blocks of 9 px
    lab = (lab + (rng.random(lab.shape) < 0.1)) % 12  # ragged borders, random sizes
    F = rng.random(lab.shape + (2,)) + lab[..., None] % 3
    size, sums, _ = region_statistics(lab, F, 12)
    a, b, length, _ = region_adjacency(lab, None, 12)
    h = merge_hierarchy(size, sums, a, b, length, criterion=criterion, size_prior=size_prior)
    ref = _greedy_reference(size, sums, dict(zip(zip(a.tolist(), b.tolist()), length)),
                            criterion, size_prior)
    np.testing.assert_allclose(h.heights, ref, rtol=1e-10)


def test_mumford_shah_first_merge_is_the_smallest_lambda():
    lab = np.array([[0, 0, 1, 1, 2, 2]] * 3)
    F = np.zeros((3, 6, 1))
    F[:, 2:4] = 1.0
    F[:, 4:] = 5.0
    size, sums, _ = region_statistics(lab, F)
    a, b, length, _ = region_adjacency(lab)
    h = merge_hierarchy(size, sums, a, b, length)
    assert sorted(h.merges[0].tolist()) == [0, 1]
    assert h.heights[0] == pytest.approx(1.0)  # sqrt(6 * 6 / 12 * 1^2 / 3)


def test_disconnected_graph_joins_at_infinity_and_bad_input():
    h = merge_hierarchy([1.0, 1.0, 1.0], [[0.0], [1.0], [5.0]], [0], [1])
    assert np.isinf(h.heights[-1]) and h.leaf_labels(threshold=10).tolist() == [0, 0, 1]
    with pytest.raises(ValueError, match="criterion must be one of"):
        merge_hierarchy([1.0, 1.0], [[0.0], [1.0]], [0], [1], criterion="average")
    with pytest.raises(ValueError, match="two different nodes"):
        merge_hierarchy([1.0, 1.0], [[0.0], [1.0]], [0], [2])
    with pytest.raises(ValueError, match="given twice"):
        merge_hierarchy([1.0, 1.0], [[0.0], [1.0]], [0, 1], [1, 0])
    with pytest.raises(ValueError, match="non-decreasing"):
        Hierarchy([[0, 1], [2, 3]], [2.0, 1.0], [2, 3])
    with pytest.raises(ValueError, match="exactly one"):
        h.leaf_labels()


# ------------------------------------------------------------------------ thin regions of a cut
def _absorb_reference(groups, size, sums, edges, threshold, width):
    """Plain `absorb_thin_regions`: every step recomputes all regions' widths and pairs."""
    groups = np.asarray(groups).copy()
    while True:
        regions = np.unique(groups)
        sz = {r: size[groups == r].sum() for r in regions}
        mean = {r: sums[groups == r].sum(axis=0) / sz[r] for r in regions}
        border = {}
        for (x, y), ln in edges.items():
            gx, gy = groups[x], groups[y]
            if gx != gy:
                key = (min(gx, gy), max(gx, gy))
                border[key] = border.get(key, 0.0) + ln
        perim = {r: 0.0 for r in regions}
        for (x, y), ln in border.items():
            perim[x] += ln
            perim[y] += ln
        thin = {r: perim[r] > 0 and 2 * sz[r] / perim[r] < width for r in regions}
        best = None
        for (x, y), ln in border.items():
            if thin[x] or thin[y]:
                d2 = float(((mean[x] - mean[y]) ** 2).sum())
                h = np.sqrt(sz[x] * sz[y] / (sz[x] + sz[y]) * d2 / ln)
                if best is None or (h, x, y) < best:
                    best = (h, x, y)
        if best is None or best[0] > threshold:
            break
        groups[groups == best[2]] = best[1]
    _, first, inv = np.unique(groups, return_index=True, return_inverse=True)
    rank = np.empty_like(first)
    rank[np.argsort(first)] = np.arange(first.size)
    return rank[inv]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**6), coarse=st.integers(1, 4), width=st.floats(0.5, 6.0),
       threshold=st.floats(0.0, 3.0))
def test_property_absorb_thin_regions_equals_the_plain_reference(seed, coarse, width, threshold):
    rng = np.random.default_rng(seed)
    lab = np.repeat(np.repeat(np.arange(24).reshape(4, 6), 3, 0), 2, 1)  # 24 leaves of 6 px
    lab = (lab + (rng.random(lab.shape) < 0.15)) % 24  # ragged borders, random sizes
    F = rng.random(lab.shape + (2,)) + (lab[..., None] % 3)
    size, sums, _ = region_statistics(lab, F, 24)
    a, b, length, _ = region_adjacency(lab, None, 24)
    groups = rng.integers(0, max(1, 24 // coarse), 24)
    groups = np.unique(groups, return_inverse=True)[1]
    out = absorb_thin_regions(groups, size, sums, a, b, length, threshold=threshold, width=width)
    ref = _absorb_reference(groups, size, sums, dict(zip(zip(a.tolist(), b.tolist()), length)),
                            threshold, width)
    assert out.tolist() == ref.tolist()
    # a coarsening of the cut: leaves of one region stay together
    pairs = set(zip(groups.tolist(), out.tolist()))
    assert len(pairs) == np.unique(groups).size


def test_absorb_thin_regions_leaves_thick_regions_and_checks_its_input():
    # two 10 x 10 squares side by side: width 2 * 100 / 10 = 20, not thin below 20
    size, sums = np.array([100.0, 100.0]), np.array([[0.0], [100.0]])
    kw = dict(threshold=1e9)
    assert absorb_thin_regions([0, 1], size, sums, [0], [1], [10.0], width=20.0, **kw).tolist() \
        == [0, 1]
    assert absorb_thin_regions([0, 1], size, sums, [0], [1], [10.0], width=20.1, **kw).tolist() \
        == [0, 0]
    with pytest.raises(ValueError, match="each of the 2 nodes a region"):
        absorb_thin_regions([0, 1, 2], size, sums, [0], [1], [10.0], width=2.0, **kw)
    with pytest.raises(ValueError, match="one entry per adjacency"):
        absorb_thin_regions([0, 1], size, sums, [0], [2], [10.0], width=2.0, **kw)


@pytest.mark.parametrize("n", [30, 100, 300])
def test_clean_synthetic_images_get_their_regions(n):
    yy, xx = np.mgrid[:n, :n]
    halves = (xx >= n // 2).astype(float)
    disk = 0.2 + 0.6 * (((yy - n / 2) ** 2 + (xx - n / 2) ** 2) < (n / 4) ** 2)
    quadrants = 0.1 + 0.2 * ((yy < n / 2) * 1 + (xx < n / 2) * 2)
    for img, k in ((halves, 2), (0.3 + 0.4 * halves, 2), (disk, 2), (quadrants, 4)):
        labels = image_hierarchy(img).labels()
        assert labels.max() + 1 == k
        # the boundary within two pixels of the step: the regions' sizes are the truth's
        truth = np.unique(img, return_inverse=True)[1].reshape(img.shape)
        sizes = np.sort(np.bincount(labels.ravel()))
        assert np.abs(sizes - np.sort(np.bincount(truth.ravel()))).max() <= 2 * 2 * n


# ---------------------------------------------------------------------------------- hierarchy
@pytest.fixture(scope="module")
def hierarchy():
    return image_hierarchy(two_tone(noise=0.05, seed=4))


def test_hierarchy_invariants(hierarchy):
    t = hierarchy.tree
    L = t.n_leaves
    assert t.merges.shape == (L - 1, 2) and np.all(np.diff(t.heights) >= 0)
    assert t.sizes[-1] == hierarchy.superpixels.size
    assert np.array_equal(np.sort(t.merges.ravel()), np.arange(2 * L - 2))  # each node once


def test_levels_nest(hierarchy):
    t = hierarchy.tree
    prev = t.leaf_labels(t.n_leaves)
    for K in range(min(t.n_leaves, 12), 0, -1):
        cur = t.leaf_labels(K)
        assert_is_partition(cur, cur.size)
        assert cur.max() + 1 == K
        assert len(set(zip(prev.tolist(), cur.tolist()))) == np.unique(prev).size
        prev = cur


def test_linkage_is_scipy_valid_and_cuts_agree(hierarchy):
    from scipy.cluster.hierarchy import cophenet, fcluster, is_valid_linkage

    Z = hierarchy.linkage()
    assert is_valid_linkage(Z)
    for K in (2, 5):
        theirs = fcluster(Z, K, criterion="maxclust")
        if np.unique(theirs).size == K:  # ties can make maxclust give fewer
            ours = hierarchy.tree.leaf_labels(K)
            assert len(set(zip(ours.tolist(), theirs.tolist()))) == K
    L = hierarchy.n_leaves
    i, j = np.triu_indices(L, 1)
    np.testing.assert_allclose(hierarchy.tree.merge_height(i, j), cophenet(Z))


def test_ucm_thresholds_give_the_level_boundaries(hierarchy):
    u = hierarchy.ucm()
    t = hierarchy.heights[-3]
    lab = hierarchy.labels(threshold=t, absorb_thin=False)
    border = np.zeros(lab.shape, bool)
    border[:, :-1] |= lab[:, :-1] != lab[:, 1:]
    border[:-1, :] |= lab[:-1, :] != lab[1:, :]
    assert np.array_equal(border, u > t)
