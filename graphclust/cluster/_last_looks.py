"""The fine tier's last looks of `StabilityClustering`: clusters that no one walk length holds.

When the scan of all the points finds no structure (the fine tier) and neither a background
of noise nor the density's valleys explain it (`_stability_looks`), three more looks follow,
in this order:

- clusters at walk lengths of their own (`_local_choice`, selection rule ``"multiscale"``;
  `_local_scales`): the scan's clusters that are metastable sets at some walk lengths, kept
  when each is escaped more slowly than the null's tiles and what they leave is
  structureless (small blobs touching a large one that mixes beyond the scan);
- the graph's connected components, when two or more have at least 2 n_neighbors points and
  the fine tier's tiling is chance (the null model does not pass it) or its seeds disagree
  (`_components_choice`, selection rule ``"components"``); where the graph has fewer, the
  large components of its mutual kNN graph (on a curve, first those of the kNN graph kept to
  the edges along their points' tangents: `_curve_tangents`), when they describe the data,
  each kept whole (`_large_components`, selection rule ``"mutual"``);
- the density's cluster tree (`_tree_choice`, selection rule ``"density tree"``;
  `_density_tree`): HDBSCAN*'s clusters of the kNN graph, in two or three features, kept
  when the null model passes them (a blob holding most of the mass beside small ones, which
  Markov stability's resolution limit hides at every walk length). A cluster whose own scan
  ends in the fine tier takes it too, after its other looks, and so does a plateau's cluster
  that the fit's own runs leave whole (`_stability_null.NullModelTests._own_split_choice`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graphs import knn_graph_from_neighbors
from ._background_noise import absorbed_labels
from ._curve_tangents import tangent_components
from ._density_tree import density_tree_labels
from ._density_walk import sees_density
from ._local_scales import metastable_clusters
from ._null_model import cluster_escapes, intrinsic_dimension
from ._partition_quality import cut_and_volume
from ._stability_null import NULL_MARGIN
from ._support_null import SUPPORT_DIP_DIMENSION
from ._valley_joins import edge_length_matrix

__all__ = ["LastLooks", "looks_floor"]


class LastLooks:
    """The fine tier's last looks (a mixin of `StabilityClustering` through `FineTierLooks`;
    see the module). They read `_kept_clusters`, `_passes_null` and `_null_reference`."""

    def _local_choice(self, W, scan, chosen, dist, d_hat=None):
        """The fine tier's look for clusters at scales of their own. Returns labels or None.

        The clusters of the scan's consensus partitions, at any walk length, that are
        metastable sets of their own (`metastable_clusters`: the walk mixes inside each one
        step of the scan before it leaves it; at least max(2 n_neighbors, n / 500) points; a
        cluster of the scan at two walk lengths or more), the most persistent first, while
        disjoint. Each connected component of what they leave is one more cluster, its
        fragments under the floor placed by the walk (`_kept_clusters`). A planar blob of
        thousands of points with small blobs touching it is so found: the small ones are
        metastable at every walk length, the large one mixes beyond the scan. Each cluster
        kept must be escaped more slowly than the null model's tiles, as `_weak_groups`
        asks of every cluster of a choice (`_null_reference`, moved to the data's size by
        the number of clusters), and each cluster they leave must be structureless: the
        fine tier's tiles (`chosen`, None when its seeds disagree) inside it do not pass the
        null model on its own subgraph (`_passes_null`).
        """
        k, n = dist.shape[1], W.shape[0]
        sel, kept = metastable_clusters(W, scan["pieces"], scan["consensus_groups"],
                                        min_size=looks_floor(n, k))
        if not kept:
            return None
        labels = sel.copy()
        rest = np.flatnonzero(sel < 0)
        if rest.size:  # what the clusters leave: its connected components
            labels[rest] = len(kept) + connected_components(W[rest][:, rest], directed=False)[1]
        labels, _ = self._kept_clusters(W, np.arange(n), labels, k)
        if labels is None:
            return None
        c = int(labels.max()) + 1
        escape = cluster_escapes(*cut_and_volume(W.indptr, W.indices, W.data, labels, c))
        local = np.unique(labels[sel >= 0])
        tested = escape[local][np.isfinite(escape[local])]  # whole components: their gaps
        if tested.size:
            d_hat = self.intrinsic_dimension_ if d_hat is None else d_hat  # a cluster's own
            found = self._null_reference(n, c, k, d_hat, float(tested.min()))
            if found is not None and tested.min() <= found[0] + NULL_MARGIN:
                return None
        # what they leave must be structureless: where the fine tier's tiles of a cluster
        # left pass the null model on its own (letters: 104 tiles, NMI 0.63, against 41
        # clusters, 0.33, with many letters left in one), the tiling describes it better
        for r in np.setdiff1d(np.arange(c), local):
            m = np.flatnonzero(labels == r)
            tiles = None if chosen is None else np.unique(chosen[m], return_inverse=True)[1]
            if tiles is not None and tiles.max() >= 1 and self._passes_null(
                    W[m][:, m], tiles, k, intrinsic_dimension(dist[m])):
                return None
        return labels

    def _tree_choice(self, W, dist, points, d_hat=None, background=None):
        """The fine tier's look at the density's cluster tree: HDBSCAN*'s clusters of the kNN
        graph's edges (`density_tree_labels`, core distance the k-th edge) of at least
        max(2 k, n / 500) points, the points that fall out of them placed by the walk
        (`_kept_clusters`), kept when the null model passes them. A blob holding most of the
        mass beside small ones is no partition of Markov stability at any walk length (the
        resolution limit), nor are the small ones metastable when the kNN graph joins one to
        the blob by a few dozen edges (`_local_choice`), but each is a mode of the density.
        Read where the density is (`sees_density`) and where the support test reads the
        clusters' shape (two or three features: in ten, UCI vowel's two tight groups of 24
        and 30 utterances beside 936 passed the null model, whose mean the large cluster
        carries, NMI 0.54 -> 0.04). The points of a `background` of noise (a mask, the fit's
        `noise_`) are left out of the tree and placed by the walk: uniform clutter has chance
        modes. Returns labels or None.
        """
        k, n = dist.shape[1], W.shape[0]
        d_hat = self.intrinsic_dimension_ if d_hat is None else d_hat  # a cluster's own
        if (points is None or not sees_density(d_hat)
                or not self._support_applies(points, d_hat, SUPPORT_DIP_DIMENSION)):
            return None
        keep = np.arange(n) if background is None else np.flatnonzero(~background)
        floor = looks_floor(n, k)
        if keep.size < 2 * floor:  # no two clusters of the floor's size (a cluster of clutter)
            return None
        # lengths of 0 (a point repeated more than k times keeps its copies) raised to a hair
        # above it, as the dip test's are: a sparse matrix's 0 is no edge, and 1 / 0 no level
        lengths = edge_length_matrix(points[keep], sp.csr_matrix(W)[keep][:, keep])
        tree = density_tree_labels(lengths, k, floor)
        if tree.max() < 1:
            return None
        labels, _ = self._kept_clusters(W, keep[tree >= 0], tree[tree >= 0], k)
        if labels is None or not self._passes_null(W, labels, k, d_hat):
            return None
        return labels

    def _components_choice(self, W, chosen, dist, points=None):
        """The fine tier's last look: the graph's connected components, or the mutual kNN
        graph's, when its tiling is chance. Returns ``(labels, rule)``, rule "components" or
        "mutual", or None.

        The walk never leaves a component, so the components partition is metastable at every
        walk length (Q = +inf) and is the scan's limit at tau = infinity. The scan reaches it
        only if every component relaxes within its last walk length; a component that relaxes
        more slowly, and whose consensus pieces keep its slow mode (a planar Gaussian blob of
        2 000-3 000 points beside two small ones: T_pieces ~ T_C, so no candidate makes it
        whole, `whole_unrelaxed_components`), stays in pieces in every candidate, and the tiers
        end in the fine tier. When that tier gives no partition (`chosen` None: its seeds
        disagree) or one whose tiles the null model does not pass (`_passes_null`: escaped
        no more slowly than tiles of structureless data), the components are the one
        structure the walk has found, if two or more of them have 2 n_neighbors points (a
        smaller one is not resolved by the graph: `_outlier_groups_choice`). The caller
        scans each on its own, as a metastable choice's clusters, and tests their gaps
        (`_null_test`), which joins chance ones. Where the graph has fewer, the mutual kNN
        graph's large components (`_large_components`; rule "mutual") are the clusters as
        they are: the walk's own scans cut curves and bands into arcs that outlast them.
        """
        _, comp = connected_components(W, directed=False)
        # a group of fewer than 2 k points is not resolved by the graph (`_own_split_choice`'s
        # floor): a dozen far near-duplicates beside structureless data are no structure
        k = dist.shape[1]
        found = ((comp.astype(np.int64), "components") if (np.bincount(comp) >= 2 * k).sum() >= 2
                 else (self._large_components(W, dist, points=points), "mutual"))
        if found[0] is None or chosen is not None and self._passes_null(
                W, np.asarray(chosen), k, self.intrinsic_dimension_):
            return None
        return found

    def _large_components(self, W, dist, mutual=True, points=None):
        """The large components of the mutual kNN graph (or, ``mutual=False``, of the graph W
        itself), the other points placed by the walk on W (`absorbed_labels`); None unless
        they describe the data as clusters. When the `points` are a curve (`_is_curve`), the
        kNN graph's edges along both their points' tangents (`tangent_components`) are read
        first, the mutual graph's if those do not describe the data: where a curve runs
        beside the next closer than a list reaches at a sparse spot, the lists cross to it,
        and mutual ones too (the demo's three spirals of 900 points at seed 4: 32 warned tiles;
        the arms, c = 3, by their tangents).

        The mutual graph keeps an edge only where each point is in the other's list, which drops
        the edges between touching clusters that the union graph W keeps and leaves noise points on
        their own (Maier, Hein & von Luxburg 2009, *Optimal construction of k-nearest-neighbor
        graphs for identifying noisy clusters*): three spiral arms whose union graph is one
        component are three mutual components. A component counts when it has max(2 k, n / 500)
        points (the looks' floor), and the large ones must describe the data: two or more, together
        at least half of the points, none of them more than half (two equal spiral arms are half
        each: the demo's two spirals of 400 points at seed 3 and of 1 000 at seed 4 were cut into
        tiles before). One component holding most of the points beside a few small ones is one
        cluster and some tight groups (UCI vowel: 888 of 990 utterances beside one of 24, NMI 0.54
        -> 0.03 had it been taken), and components holding a few per cent of the points are the
        cores of data the mutual graph leaves in pieces (20 newsgroups, euclidean: 153, 38 and 34
        of 11 202 documents, NMI 0.30 -> 0.02 had they been taken). Every component of W must hold
        a large one (the walk places no point outside its own).
        """
        idx, n, k = getattr(self, "_knn_lists", None), W.shape[0], dist.shape[1]
        if mutual and (idx is None or idx.shape[0] != n):
            return None
        _, wcomp = connected_components(W, directed=False)
        if not mutual:
            return _described(W, wcomp, wcomp, k)
        found = None
        if points is not None and self._is_curve(points):
            found = _described(W, wcomp, tangent_components(
                points, idx, keep=self._tangent_keep(points, idx)), k)
        return found if found is not None else _described(
            W, wcomp, knn_graph_from_neighbors(idx, dist, mode="mutual").component_labels, k)



def looks_floor(n, k):
    """The fewest points of a cluster that a look at `n` points on `k`-NN lists keeps: twice
    a list (a cluster's own split's floor: a group of at most k points holds none of its
    points' lists) and n / 500 (the scan's smallest consensus piece); smaller ones are
    fragments, placed by the walk (`FineTierLooks._kept_clusters`)."""
    return max(2 * int(k), int(n) // 500)


def _described(W, wcomp, comp, k):
    """Labels of the large components `comp` (of a graph on W's nodes; `wcomp` W's own
    components), the other points placed by the walk on W, or None unless they describe
    the data (`FineTierLooks._large_components`)."""
    n = W.shape[0]
    sizes = np.bincount(comp)
    big = sizes >= max(2 * k, n / 500)
    if big.sum() < 2 or sizes.max() > n / 2 or sizes[big].sum() < n / 2:
        return None
    known = big[comp]
    # each of W's components must hold a known point for the walk to place its others
    if not np.all(np.bincount(wcomp, weights=known) > 0):
        return None
    labels = np.where(known, np.searchsorted(np.flatnonzero(big), comp), -1)
    return absorbed_labels(W, labels, known).astype(np.int64)
