"""The tests of `StabilityClustering`'s partition that read the data as a curve.

`CurveTests` is a mixin of the estimator (a base of `NullModelTests`): its methods read the
estimator's parameters and set its fitted attributes (`escape_time_`, `gap_ratio_`,
`null_gap_ratio_`). On a curve (euclidean, dense, two or more features, an intrinsic dimension
rounding to 1: `_is_curve`) a kNN graph misleads the walk and the gap test in
three ways, each answered by reading the points along the curve:

- curves that only kNN edges across their direction join (spiral arms whose ends' lists reach
  the next arm) are left by the walk through those edges: they are judged by their gaps on the
  graph kept to the edges along both points' tangents (`_tangent_gaps`, `_curve_tangents`);
- a walk cuts a curve at chance sparse spots, valley or not: adjacent clusters with no density
  valley between them along the graph's paths are joined (`_curve_valleys`, the geodesic dip
  test of `_valley_joins`); in data of two or three features that are no curve as a whole
  (a zigzag beside blobs), the same test reads the pairs of clusters that are curves on their
  own, flatter than uniform scatter by their local PCA (`_curve_clusters`);
- a curve falls apart at chance gaps (the 10-NN graph of 2-4 % of uniform curves of 300
  points does), whose width the gap test, at its level of 5 / 100, can pass: two pieces that
  continue each other across their gap are read by the same dip test along paths through the
  gap (`_bridged_valleys`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..graphs import knn_graph_from_neighbors, nearest_neighbors
from ._curve_tangents import (along_tangents, apart_along_tangents, curve_tangents,
                              spread_null, spread_ratios, tangent_edges)
from ._gap_null import cluster_gaps, gap_test, line_spacing_null, pair_crossings
from ._null_model import TEST_SEED, log_escape_time
from ._valley_joins import cut_at_ends, join_unimodal_pairs

__all__ = ["CurveTests"]

#: Neighbours within a cluster of its local PCA (`_curve_clusters`), twice the lists' 10: a
#: curve's scatter across it weighs less against twenty points along it (graves'
#: zigzag_noisy, cut in two, read by Levina-Bickel: 1.63 and 1.56 from 10, 1.48 and 1.41 from
#: 20), and from 40 a small cluster is read whole rather than locally.
CLUSTER_SPREAD_NEIGHBORS = 20


def _edges_kept(paths, keep):
    """The CSR matrix of the edges of `paths` (any sparse format) for which `keep(row, col)`."""
    P = sp.coo_matrix(paths)
    on = keep(P.row, P.col)
    return sp.csr_matrix((P.data[on], (P.row[on], P.col[on])), shape=P.shape)


class CurveTests:
    """The curve tests of `StabilityClustering` (a mixin; see the module docstring)."""

    def _is_curve(self, X):
        """Whether the points `X` are a curve of two or more features: euclidean and dense,
        the data's intrinsic dimension rounding to 1 (one feature is a line,
        `NullModelTests._is_line`)."""
        return (self.metric == "euclidean" and not sp.issparse(X) and X.shape[1] >= 2
                and round(float(self.intrinsic_dimension_)) <= 1)

    def _tangent_keep(self, X, idx, lines=False):
        """`tangent_edges` of the fit's points and lists (`_knn_lists` or its `idx`), or with
        `lines` their `curve_tangents`, once per fit for every look and null test that reads
        them (`fit` drops them)."""
        got = getattr(self, "_tangents", None)
        if got is None or got[0] is not X or got[1].shape != idx.shape:
            T = curve_tangents(X, idx)
            self._tangents = got = (X, idx, tangent_edges(X, idx, tangents=T), T)
        return got[3] if lines else got[2]

    def _apart_on_curve(self, X, idx, labels):
        """Whether the data are a curve (`_is_curve`) and no kNN edge along both its points'
        tangents (`_tangent_keep`) joins two clusters (`apart_along_tangents`): curves that
        only edges across their direction join (lists reaching from an end to the next)."""
        return self._is_curve(X) and apart_along_tangents(labels, idx, self._tangent_keep(X, idx))

    def _tangent_gaps(self, X, idx, dist, W, labels, draws=True, note=None):
        """The labels when the clusters are curves apart (`_apart_on_curve`) whose gaps along
        the tangents are wider than chance (`gap_ratio_`, `null_gap_ratio_`), else None. The
        walk leaves such a curve through the few edges across (the demo's two spiral arms of
        150 points, whose ends' lists reach the next arm: mean log escape 5.07 against 6.31
        for two tiles of a line); on the kNN graph kept to the edges along the tangents they
        are components, judged by their gaps (`cluster_gaps`: narrowest distance over median
        list radius).

        When every cluster is joined to another by kNN edges (none is a component of the
        graph: `draws` False), those edges all run across the curves, and two pieces of one
        curve are joined along it by every list that reaches from one to the other: the
        clusters are no pieces of one curve cut at a chance gap; only a gap within the lists'
        reach, a ratio of 1, would make them touching pieces whose tangents the scatter turned
        (three spirals of 1 000 points: 1.62-1.81, which a line's chance gaps match, 1.82).
        Else the gap test's draws (`gap_test`), in the curve's dimension, and the clusters
        that pass are read along the kept graph across their gaps (`_bridged_valleys`): an
        arm's innermost 40 points, curled into a component of the kNN graph itself (two
        spirals of 600, seed 3: gap 1.39, which 4 of 198 draws reach), join their arm."""
        if not self._apart_on_curve(X, idx, labels):
            return None
        c = int(labels.max()) + 1
        graph = knn_graph_from_neighbors(idx, dist, keep=self._tangent_keep(X, idx))
        if draws:
            gaps, nulls, _, _, _, edges = gap_test(
                X, idx, dist, labels, np.arange(c), self.intrinsic_dimension_,
                metric=self.metric, random_state=TEST_SEED, graph=graph, return_edges=True)
        else:
            gaps = cluster_gaps(graph, X, dist, labels, np.arange(c), self.metric)
            nulls = np.ones(c)
        if gaps is None or not (gaps > nulls).all():
            return None
        near = int(np.argmin(gaps / nulls))
        self.gap_ratio_, self.null_gap_ratio_ = float(gaps[near]), float(nulls[near])
        if note is not None:
            note(f"the {c} clusters are curves that only kNN edges across their direction "
                 f"join, with gaps wider than chance (narrowest {self.gap_ratio_:.2f} against "
                 f"{self.null_gap_ratio_:.2f})")
        if not draws or self.selection_rule_ in ("fine", "n_clusters"):  # the tiers' cuts
            return labels
        kept = graph.distances.copy()
        kept.data[:] = 1.0  # the kept edges as paths (their lengths are measured anew)
        return self._bridged_valleys(X, idx, dist, W, labels, edges, kept, note)

    def _bridged_valleys(self, X, idx, dist, W, labels, edges, paths, note=None):
        """`labels` with the clusters (whole components past the gap test, whose crossings
        it read: `edges`, ``(u, v, g)`` from `gap_test`) read by `_curve_valleys` along
        `paths` and those bridges: a curve falls apart at chance gaps (two spirals of 600
        points: an arm's innermost 42 points at a gap of 1.72 median list radii, which 2 of
        the gap test's 198 draws of a line reach, 2.3 % of 4 000), and two pieces that
        continue each other across the gap with no density valley along them are one curve.
        In data that are no curve, the pairs of clusters that are curves on their own
        (`_curve_clusters`): an arc beside blobs that fell apart at a chance gap."""
        if int(labels.max()) < 1 or edges is None:
            return labels
        curves = self._curve_clusters(X, labels)
        if curves.sum() < 2:
            return labels
        u, v = np.asarray(edges[0]), np.asarray(edges[1])
        # a bridge across the curves' direction continues no curve (two rings side by side)
        along = along_tangents(X, self._tangent_keep(X, idx, lines=True), u, v)
        u, v = u[along], v[along]
        if not u.size:
            return labels
        paths = sp.csr_matrix(paths, dtype=np.float64)
        # a bridge weighs as the weakest path (the dip test's small parts join their
        # heaviest neighbour: `unresolved_parts`)
        weak = float(paths.data.min()) if paths.nnz else 1.0
        bridges = sp.coo_matrix((np.full(u.size, weak), (u, v)), shape=W.shape)
        paths = (paths + bridges + bridges.T).tocsr()
        return self._curve_valleys(X, dist, W, labels, note, paths=paths, curves=curves)

    def _curve_clusters(self, X, labels, pairs=True):
        """Which clusters of `labels` `_curve_valleys` reads as curves (a boolean per cluster):
        every one when the data are a curve (`_is_curve`); else none without `pairs`, and
        with it, in data that the support test reads (`_support_applies`: euclidean, dense,
        two or three features, an intrinsic dimension below 2.5), those flatter than scatter
        with no direction: the median over a cluster's points of the second over the first
        principal variance of each point and its `CLUSTER_SPREAD_NEIGHBORS` nearest within the
        cluster (`spread_ratios`) below the lowest of 19 uniform cubes' of its size and
        features (`spread_null`, a Monte Carlo test at level 1 / 20). An arc that a walk cut
        beside blobs reads 0.01-0.33, a blob 0.5-0.65, a uniform square's lowest of 19 0.41 at
        30 points and 0.58 at 1 000 (docs/model_selection.md, *Built: a curve told from a blob
        by its local PCA*). The dimension of Levina-Bickel from the same lists, rounded to 1,
        missed arcs of scatter 0.02-0.03 that read 1.47-1.72 (between a line and a plane at
        that scale), where a Gaussian blob of 41-60 points reads 1.59-1.84. A point's nearest
        are at most half the others of its cluster (none is read below 21 points): a ball
        that holds more spans the gap between a cluster's tight groups, which then read as a
        line (graves' ring_outliers: two groups of 10 outliers in one cluster, joined to a
        ring beside them when read from 19 nearest)."""
        c = int(labels.max()) + 1
        if self._is_curve(X):
            return np.ones(c, dtype=bool)
        curves = np.zeros(c, dtype=bool)
        if not pairs or not self._support_applies(X, self.intrinsic_dimension_):
            return curves
        for j in range(c):
            members = np.flatnonzero(labels == j)
            k = min(CLUSTER_SPREAD_NEIGHBORS, (members.size - 1) // 2)
            if k >= 10:
                idx = nearest_neighbors(X[members], k, method="exact")[0]
                spread = float(np.median(spread_ratios(X[members], idx)))
                curves[j] = spread < spread_null(members.size, X.shape[1], k, TEST_SEED)
        return curves

    def _curve_valleys(self, X, dist, W, labels, note=None, paths=None, pairs=False,
                       curves=None):
        """`labels` with each two adjacent clusters joined where no density valley lies between
        them along the graph's paths (`join_unimodal_pairs`; `paths`, default W), when both
        are curves (`_curve_clusters`: every cluster of data whose intrinsic dimension rounds
        to 1, of two or more features; with `pairs`, in two or three features, the clusters
        flatter than uniform scatter by their local PCA). On a curve a kNN walk cuts at chance
        sparse spots, valley or not (`_unimodal_line` says so of one feature), and its escape
        time there outlasts the null's tiles: an arm of a spiral, 500 points uniform along it,
        is cut 402 : 98 at its widest gap, 4.2 spacings where a uniform sample's widest is
        ln(500) + 0.58 = 6.8, escape 13.1 against the 1-D null's 8.4; the geodesic position
        along the curve is its own coordinate, and the dip test of it is the test of one
        feature's. A pair is tested only when it can be two pieces of one curve: its narrowest
        crossing no wider than a uniform line's widest spacing (`pair_crossings`,
        `line_spacing_null` of the curves' points; the dip test hardly sees one gap in a long
        curve) and at an end of both clusters (`cut_at_ends`). Clusters in different
        components of `paths` are no pair (`_bridged_valleys` adds the paths across gaps).
        `curves`: `_curve_clusters`' answer, when the caller has it. Sets `escape_time_` on W;
        `note` (the progress lines) is told of the joins."""
        c = int(labels.max()) + 1
        if curves is None:
            curves = self._curve_clusters(X, labels, pairs) if c > 1 else np.zeros(c, bool)
        if curves.sum() < 2:
            return labels
        paths = W if paths is None else paths
        if not curves.all():  # the paths between curves only (and inside them)
            paths = _edges_kept(paths, lambda r, q: curves[labels[r]] & curves[labels[q]])
        # a pair is two pieces of one curve cut at a chance spot only when its narrowest
        # crossing is no wider than a uniform line's widest spacing and lies at an end of
        # both (`cut_at_ends`: the tip of one moon beside the middle of the next is no
        # such cut); the other pairs' crossing edges are left out, so that they are no pair
        adjacent, ratios, u, v = pair_crossings(X, paths, labels, dist, return_edges=True)
        n = int(curves[labels].sum())
        one_curve = ratios <= line_spacing_null(n, dist.shape[1], TEST_SEED)
        one_curve[one_curve] = cut_at_ends(X, paths, labels, u[one_curve], v[one_curve])
        if not one_curve.any():  # no pair to test: the dip test would join nothing
            return labels
        gap = adjacent[~one_curve]
        if gap.size:
            gap = gap[:, 0] * c + gap[:, 1]
            paths = _edges_kept(paths, lambda r, q: ~np.isin(
                np.minimum(labels[r], labels[q]) * c + np.maximum(labels[r], labels[q]), gap))
        joined = join_unimodal_pairs(X, labels, paths, random_state=TEST_SEED)[0]
        c_new = int(joined.max()) + 1
        if c_new == c:
            return labels
        self.escape_time_ = log_escape_time(W, joined) if c_new > 1 else None
        if note is not None and self._is_curve(X):
            note(f"the data are a curve (intrinsic dimension {self.intrinsic_dimension_:.2f}), "
                 f"and no density valley lies along it between some adjacent clusters of the "
                 f"{c} found (geodesic dip test): joined, {c_new} clusters")
        elif note is not None:
            note(f"{int(curves.sum())} of the {c} clusters found are curves (each one flatter "
                 f"than uniform scatter by its local PCA), and no density valley lies along "
                 f"them between some adjacent ones (geodesic dip test): joined, {c_new} "
                 f"clusters")
        return joined
