"""The null-model tests of `StabilityClustering`'s partition, and of a component's own split.

`NullModelTests` is a mixin of the estimator: its methods read the estimator's parameters and
set its fitted attributes (`escape_time_`, `null_escape_time_`, `gap_ratio_`, `dip_`, ...).
The chosen clusters are tested against tiles of structureless data of the same intrinsic
dimension (`_null_model`), whole components by the width of their gaps (`_gap_null`; on a
curve, also clusters that only kNN edges across the curves' direction join, and cuts of a curve
are read along it: `_stability_curves.CurveTests`), and a one-dimensional sample by Hartigan's
dip test (`_dip_test`); clusters of two- and three-feature data that pass are compared with
samples of the data's own support (`_support_null`: a thin band's arcs pass the planar tiles).
`_own_split_choice` applies the first test to a cluster's own scan before it splits the cluster
(`_cluster_splits`), and the support test to a split that the fine tier's looks find inside a
cluster (`_shape_cuts`); `_stability_looks` applies the first test to the fine tier's second
looks.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree
from sklearn.metrics import adjusted_rand_score

from ..graphs import nearest_neighbors, prepare_metric, rescale
from ._cluster_splits import SPLIT_RULES, outlasts_whole, scan_horizon
from ._dip_test import DIP_LEVEL, dip_test
from ._feature_independence import FEW_VALUES, INDEPENDENCE_LEVEL
from ._gap_null import gap_test, gap_warning
from ._null_model import (NULL_DRAWS, NULL_REFERENCES, TEST_SEED, cluster_escapes,
                          escape_at_size, escape_of_cuts, intrinsic_dimension, log_escape_time,
                          null_draws, null_escape_time)
from ._partition_quality import canonical_labels, cut_and_volume
from ._stability import indicator
from ._stability_curves import CurveTests
from ._stability_hierarchy import COARSER_HINT, StabilityWarning
from ._support_null import (SUPPORT_AGREEMENT, SUPPORT_DIP_DIMENSION, SUPPORT_MAX_DIMENSION,
                            SUPPORT_MAX_FEATURES, SUPPORT_SAMPLE, carried_labels, hull_coordinates,
                            support_sample)
from ._valley_joins import join_unimodal_pairs

__all__ = ["NULL_MARGIN", "NullModelTests"]

#: The clusters must be escaped this much more slowly (log of a factor 1.5) than the null's tiles.
NULL_MARGIN = float(np.log(1.5))


class NullModelTests(CurveTests):
    """The null-model methods of `StabilityClustering` (a mixin; see the module docstring)."""

    def _null_test(self, X, idx, dist, W, labels, note=None):
        """Set `escape_time_` and `null_escape_time_` (the strictest null sample: uniform and
        Gaussian, several draws each in one dimension, `_null_model`); warn, naming
        the clusters, unless they are escaped at least 1.5 times as slowly as the tiles that
        the same scan and choice make of every null sample. Clusters with no edge out are
        tested by their gaps instead (`_gap_null`: `gap_ratio_`, `null_gap_ratio_`), and so
        are curves that only edges across their direction join (`_tangent_gaps`). Returns
        the labels, with the joins of those tests, `_weak_groups`, `_support_test` and the
        curve tests (`_curve_valleys`: on a curve, and after a support test that did not
        warn, between clusters that are curves on their own); `note` (the progress lines)
        is told of the joins."""
        c, k = int(labels.max()) + 1, idx.shape[1]
        cut, vol = cut_and_volume(W.indptr, W.indices, W.data, labels, c)  # one pass
        self.escape_time_ = escape_of_cuts(cut, vol)
        if not self.null_model:
            return labels
        self._independent_features(c)
        whole = np.flatnonzero(cut <= 1e-12 * vol)  # the escape time cannot judge these
        if whole.size < c:
            got = self._tangent_gaps(X, idx, dist, W, labels, whole.size > 0, note)
            if got is not None:
                return got  # curves apart: only edges across their direction join them
        if whole.size:
            gaps, nulls, refs, joined, dims, edges = gap_test(
                X, idx, dist, labels, whole, self.intrinsic_dimension_, metric=self.metric,
                random_state=TEST_SEED, return_edges=True)
            if gaps is not None:
                near = int(np.argmin(gaps / nulls))  # the decisive cluster: nearest its null
                self.gap_ratio_, self.null_gap_ratio_ = float(gaps[near]), float(nulls[near])
                what = gap_warning(gaps, nulls, refs, whole, c, dims)
                if what and self.selection_rule_ == "n_clusters":  # a given c is kept
                    what += " The data may have no clusters at this number of neighbours."
                elif what:  # a chance gap is no boundary: joined across it, c falls
                    labels, c = joined, int(joined.max()) + 1
                    what += (f" Each is joined to the cluster across its narrowest gap: {c} "
                             f"cluster{'s' if c > 1 else ''}.")
                    self.escape_time_ = log_escape_time(W, labels) if c > 1 else None
                    if c == 1:
                        self.selection_rule_, self.tau_, self.alpha_ = "none", None, None
                if what:
                    warnings.warn(what, StabilityWarning, stacklevel=4)
                elif self.selection_rule_ not in ("fine", "n_clusters"):  # the tiers' cuts
                    labels = self._bridged_valleys(X, idx, dist, W, labels, edges, W, note)
                    c = int(labels.max()) + 1
        if c > 1 and self._unimodal_line(X, c) or self.escape_time_ is None:
            return labels

        found = self._null_reference(W.shape[0], c, k, self.intrinsic_dimension_,
                                     self.escape_time_)
        if found is None:
            return labels
        null, c0, ref = found
        self.null_escape_time_ = null
        if self.escape_time_ > null + NULL_MARGIN:
            if self.selection_rule_ not in ("fine", "n_clusters"):  # the tiles; a given c
                labels = self._weak_groups(dist, W, labels, null, k)
                labels = self._curve_valleys(X, dist, W, labels, note)
                if self.escape_time_ is None:  # every cluster left is a whole component
                    return labels
            grouped = self._support_test(X, dist, W, labels, note)
            tiers = self.selection_rule_ not in ("fine", "n_clusters")  # the tiers' cuts
            passed = not getattr(self, "_weak", False)  # the support test did not warn
            if tiers and passed and (grouped.max() < labels.max() or not self._is_curve(X)):
                # the support's groups may leave pieces of a curve apart; and in data that
                # are no curve, the pairs of clusters that are curves are read only in a
                # partition the support test passed (joining some chance cuts of a band
                # would let the rest outlast the support's partitions)
                grouped = self._curve_valleys(X, dist, W, grouped, note, pairs=True)
            return grouped
        what = (f"the {c} clusters found ({self.selection_rule_} tier, tau = {self.tau_}) are "
                f"escaped by the walk no more slowly than tiles of {ref} data of the same "
                f"intrinsic dimension ({self.intrinsic_dimension_:.1f}): mean log escape "
                f"time {self.escape_time_:.2f} vs {null:.2f} for the null ({c0} tiles)")
        if self.selection_rule_ == "fine":
            self._null_failed = True
            warnings.warn(f"no cluster structure found: no walk length gives a metastable or "
                          f"persistent partition, and {what}. Returning that modularity "
                          f"partition; treat it as a tiling, not as clusters. {COARSER_HINT}",
                          StabilityWarning, stacklevel=4)
            return labels
        self._weak = True  # `_past_chance_cuts` looks past them
        warnings.warn(f"weak cluster structure: {what}. The data may have no clusters at this "
                      f"number of neighbours.", StabilityWarning, stacklevel=4)
        return labels

    def _independent_features(self, c):
        """Warn when the fit's data are a table of few-valued features (`few_valued`) none of
        which depends on another (`codes_dependence`, which `fit` ran on every row as
        ``_codes``): such a table has no latent classes, and its `c` clusters are cuts of its
        lattice, which the structureless references cannot judge (ties and copies). The fine
        tier has warned already. The clusters are kept: the warning says what they are."""
        p, pairs = getattr(self, "_codes", None) or (None, 0)
        if p is None or p < INDEPENDENCE_LEVEL or self.selection_rule_ == "fine":
            return
        warnings.warn(
            f"weak cluster structure: every feature takes at most {FEW_VALUES} values, and no "
            f"two of them depend on each other (chi-square test of independence of each pair "
            f"of features, smallest p-value {p:.2f} >= {INDEPENDENCE_LEVEL} over {pairs} pairs, "
            f"Bonferroni): a table of independent features holds no classes, and the {c} "
            f"clusters found ({self.selection_rule_} tier, tau = {self.tau_}) are cuts of its "
            f"lattice of values.", StabilityWarning, stacklevel=5)

    def _weak_groups(self, dist, W, labels, null, k):
        """`labels` with each group of adjacent clusters that are escaped no more slowly than
        the null's tiles (`null`, plus the margin) joined into one, when the group's own
        partition fails the null model on its own subgraph (`_passes_null`, in the group's
        intrinsic dimension); a warning names them. The mean that `_null_test` compares is
        weighted by mass, so one cluster the walk hardly leaves (50 identical points beside
        50 Gaussian ones: the Gaussian cut into three tiles) passes a partition whose other
        clusters are chance tiles. Each such group is tested as the data would be."""
        def chance(members, sub, Wg):  # its own partition fails the null on its own
            return None if self._passes_null(Wg, sub, k, intrinsic_dimension(dist[members])) \
                else ""

        c = int(labels.max()) + 1
        labels, said = _joined_groups(W, labels, null, chance)
        if not said:
            return labels
        self.escape_time_ = log_escape_time(W, labels)
        warnings.warn(f"of the {c} clusters found ({self.selection_rule_} tier, tau = "
                      f"{self.tau_}), {'; '.join(said)} are escaped by the walk no more slowly "
                      f"than the null's tiles ({null:.2f}, plus the margin), and their own "
                      f"partition no more slowly than tiles of structureless data of their "
                      f"size and dimension: each group is joined into one cluster, "
                      f"{int(labels.max()) + 1} clusters.",
                      StabilityWarning, stacklevel=5)
        return labels

    def _null_reference(self, n, c, k, d_hat, escape):
        """(null, c0, reference) of the strictest null sample (uniform and Gaussian data of
        intrinsic dimension `d_hat`, `n` points, the same scan and choice) whose partition is
        compared with one of `c` clusters and mean log escape time `escape`; None when no
        null sample gives a partition with a cut."""
        def choose(W0):  # the fit's own scan and tiers, on the null sample
            chosen, _, _, scan = self._scan_choice(W0, TEST_SEED)
            return chosen, scan["consensus"]

        # on the density's walk the null varies between draws by more than the margin, as in
        # one dimension (2-D Gaussian samples of 300 points: 2.86-4.05; docs/battery.md)
        walk = getattr(self, "_walk_density", None)
        draws = NULL_DRAWS if walk is not None else null_draws(d_hat)
        key = ("chosen", self.affinity, walk,
               None if self.taus is None else tuple(np.ravel(self.taus)),
               int(self.n_seeds), float(self.plateau_vi), float(self.fine_vi_max))
        nulls = []  # draw r seeded TEST_SEED + r; both references, round by round
        for r in range(draws):
            for ref in NULL_REFERENCES:
                v, c0 = null_escape_time(n, d_hat, c, k, lambda i, d: self._weights(i, d, k),
                                         choose, random_state=TEST_SEED + r,
                                         reference=ref, key=key)
                if v is not None:
                    nulls.append((v, c0, ref))
            # sequential Monte Carlo (Besag & Clifford 1991): a draw matching the data settles it
            if nulls and escape <= max(nulls)[0] + NULL_MARGIN:
                break
        return max(nulls) if nulls else None

    def _support_test(self, X, dist, W, labels, note=None):
        """Two- and three-feature euclidean data of intrinsic dimension below 2.5, whose
        clusters passed `_null_test`: warn, naming them, when the partitions the fit's own
        scan makes of points uniform on the data's support cut elsewhere (`_support_draws`),
        and either the walk escapes the clusters no more slowly than those partitions, or
        the walk escapes them more slowly only by what chance sparse spots give (carried to
        the support, their escape time falls no more than a support sample's own partition's
        does when carried to a sample of that sample) and no density valley lies between any
        two adjacent clusters: the geodesic dip test (`join_unimodal_pairs` on W) joins them
        all into one. That second way is closed to clusters found by the walk that sees
        density (the null model weighted alike judged them). From 2.5 to 3.5 dimensions
        (`SUPPORT_DIP_DIMENSION`) the support's partitions tell Gaussian clusters from a
        tube's arcs no better than by chance, and the warning always needs the dip test's
        verdict. Returns `labels`; where the clusters pass as a whole, with the weak groups
        that are chance cuts of their own shape joined (`_support_groups`, told to `note`)."""
        d = self.intrinsic_dimension_
        if (not self._support_applies(X, d, SUPPORT_DIP_DIMENSION)
                # the fine tier has warned already; a given c asks for that many cuts
                or self.selection_rule_ in ("fine", "n_clusters")):
            return labels
        noise = getattr(self, "noise_", None)
        if noise is not None and noise.any() and getattr(self, "_noise_separate", True):
            # clusters found as denser than a background of noise (`_stability_looks`) have
            # passed that model's own test, which the walk cannot judge: with the background
            # the support is its box (a uniform sample of which is that model's null), and
            # without it the clusters are whole components, with no escape time. A sparser
            # part that is no population of its own (one mode of the density, or points the
            # model cannot tell apart: a band's sparse stretches, a blob's fringe) is no
            # background, and what leaving it out cut is judged like any cut of the shape.
            # The walk still cuts a band or a thick ring at its narrowest spots: the valleys
            # between the clusters, read without the background, decide
            return self._background_valleys(X, W, labels, noise, note)
        what, null, agree = self._support_verdict(X, dist, W, labels, d, self.escape_time_)
        if agree is not None:
            self.support_agreement_ = agree
        if what is not None:
            self._weak = True
            warnings.warn(
                f"weak cluster structure: the {int(labels.max()) + 1} clusters found "
                f"({self.selection_rule_} tier, tau = {self.tau_}) {what}: chance cuts of the "
                f"data's shape, as of a band or a ring, not clusters.", StabilityWarning,
                stacklevel=5)
        elif null is not None and self.escape_time_ > null + NULL_MARGIN:
            labels = self._support_groups(X, dist, W, labels, null, note)
        return labels

    def _background_valleys(self, X, W, labels, noise, note=None):
        """`labels` with each two adjacent clusters joined where no density valley lies
        between them on the points that are not the background of noise (`noise`): the
        geodesic dip test (`join_unimodal_pairs`, each pair from both its ends and from the
        cut, as a cluster's own split is read) on the kNN graph W restricted to those points.
        The walk on the points left when a background is left out cuts a band or a thick
        ring at its narrowest spots, valley or not (battery chameleon t5: its O in three
        arcs, its other letters apart; docs/model_selection.md, *Built: clusters found
        without a background joined where no valley lies between them*). The background's
        points follow their clusters; `note` (the progress lines) is told of a join."""
        keep = ~noise
        clusters, sub = np.unique(labels[keep], return_inverse=True)
        if clusters.size < 2:
            return labels
        Wk = sp.csr_matrix(W)[keep][:, keep]
        joined = join_unimodal_pairs(prepare_metric(X[keep], self.metric), sub, Wk,
                                     random_state=TEST_SEED, ends=2)[0]
        if joined.max() == sub.max():
            return labels
        c = int(labels.max()) + 1
        labels = _joined_through(labels, keep, joined)
        c_new = int(labels.max()) + 1
        self.escape_time_ = log_escape_time(W, labels) if c_new > 1 else None
        if c_new == 1:
            self.selection_rule_, self.tau_, self.alpha_ = "none", None, None
        if note is not None:
            note(f"of the {c} clusters found without the background, the adjacent ones with "
                 f"no density valley between them (geodesic dip test) joined: {c_new} "
                 f"cluster{'s' if c_new > 1 else ''}")
        return labels

    def _support_verdict(self, X, dist, W, labels, d, escape, valleys=False):
        """(what, null, agreement) of the support test (`_support_test`) of the clusters
        `labels` of the points X (distance lists `dist`, graph W of the walk that found them,
        intrinsic dimension `d`, mean log escape time `escape`): `what` the phrase saying why
        they are chance cuts of the shape, None when they are not; `null` the support samples'
        strictest escape time, None when the samples' partitions agree with `labels`; the
        median adjusted Rand index of that agreement (both None when no sample's partition
        has a cut). `valleys`: chance cuts need the geodesic dip test's verdict (no density
        valley between any two adjacent clusters) below 2.5 dimensions too."""
        nulls, agreements, records = self._support_draws(X, dist, labels, d, drops=True)
        if not nulls:
            return None, None, None
        # one draw's agreement varies by +-0.1 (wut/mk3: 0.72-0.93), hence the median
        agree = float(np.median(agreements))
        if agree >= SUPPORT_AGREEMENT:
            return None, None, agree
        null, c0 = max(nulls)
        outlasted = escape > null + NULL_MARGIN
        flat = self._support_applies(X, d)  # below 2.5 dimensions
        if outlasted:
            # escaped more slowly than the support's partitions. The same clusters carried to
            # the support samples, which keep the shape and lose the density, show why: at
            # chance sparse spots of one shape, their escape time falls by no more than the
            # samples' own partitions' falls when carried to samples of the samples (a noisy
            # spiral arm of 2 000 points cut in two: 1.59 against at most 1.58; a thin ring's
            # 7 arcs: 1.69 against 1.29); at density valleys, or gaps that the support's balls
            # bridge, by far more (the papers' moons and spirals: 3.07-6.44 against at most
            # 1.72-3.08; docs/battery.md, *Built: chance cuts at sparse spots*)
            # (the null's falls cost a support sample each: drawn only here)
            falls = ([] if getattr(self, "_walk_density", None) is not None
                     else self._carried_falls(records))
            if not falls:
                # clusters of the walk that sees density, escaped more slowly than the
                # support's partitions, are judged by the null model weighted alike (and were
                # kept only as basins: `join_transient_pairs`): the support fills their
                # valleys, and two unit Gaussians 3 deviations apart
                # (600 points) fall by 1.83 against a null of 1.49 plus the margin, with
                # no dip along a path (p = 0.45; tests/test_density_walk.py)
                return None, null, agree
            fall = escape - float(np.median([e for e, _ in falls]))
            null_fall = max(f for _, f in falls)
            if fall > null_fall + NULL_MARGIN:
                return None, null, agree
        if outlasted or not flat or valleys:
            # the clusters are chance cuts only if no density valley lies between any two
            # adjacent ones either (each adjacent pair at the dip test's level over their
            # number); from 2.5 to 3.5 dimensions the agreement does not tell Gaussian
            # clusters from a tube's arcs, and this decides
            joined = join_unimodal_pairs(prepare_metric(X, self.metric), labels, W,
                                         random_state=TEST_SEED)[0]
            if joined.max() > 0:  # a density valley between some clusters: not one shape
                return None, null, agree
        told = (f"mean log escape time {escape:.2f} vs {null:.2f} for the {c0} "
                f"clusters the same scan finds in points spread uniformly over the data's "
                f"own support")
        if outlasted:
            what = (f"are cut where the same scan does not cut points spread uniformly over "
                    f"the data's own support (median adjusted Rand index {agree:.2f} < "
                    f"{SUPPORT_AGREEMENT}), and no density valley lies between any two "
                    f"adjacent ones (geodesic dip test); the walk escapes them more slowly "
                    f"({told}) only at sparse spots of one shape: carried to that "
                    f"support, their escape time falls by {fall:.2f}, as a chance "
                    f"partition's does (at most {null_fall:.2f}, plus the margin)")
        else:
            what = (f"are escaped by the walk no more slowly than the support's partitions "
                    f"({told}), and those cut elsewhere (median adjusted Rand index "
                    f"{agree:.2f} < {SUPPORT_AGREEMENT})"
                    + ("" if flat and not valleys
                       else ", with no density valley between any two adjacent ones"))
        return what, null, agree

    def _support_groups(self, X, dist, W, labels, null, note=None):
        """`labels` with each group of adjacent clusters that the walk escapes no more slowly
        than the support samples' partitions (`null`, plus the margin) joined into one, when
        the support test finds the group's own partition chance cuts of the group's own shape
        (`_support_verdict` on its points alone) and the geodesic dip test finds no density
        valley between any two of its adjacent clusters (joining changes the answer, where
        the whole partition's test only warns: on battery wut/x3 three small clusters of 112
        points are chance by the support, with a valley between two of them); `note` (the
        progress lines) names them. As in `_weak_groups`, the mean that the test compares is
        weighted by mass: a ring that the walk hardly leaves carries a concentric ring cut
        into chance arcs past the support's partitions (circles, noise 0.08: the outer ring
        at 7.83, the arcs at 3.90-4.56, the mean 4.86 against 4.44 plus the margin). No
        warning: the clusters left have passed the test, and the answer is theirs (a look
        past chance cuts keeps only an unwarned answer). `support_agreement_` stays the whole
        partition's."""
        def chance(members, sub, Wg):  # chance cuts of its own shape, with no valley inside
            X_g, dist_g = X[members], dist[members]
            d_g, e_g = intrinsic_dimension(dist_g), log_escape_time(Wg, sub)
            if e_g is None or not self._support_applies(X_g, d_g, SUPPORT_DIP_DIMENSION):
                return None
            what = self._support_verdict(X_g, dist_g, Wg, sub, d_g, e_g, valleys=True)[0]
            return None if what is None else f", which {what}"

        c = int(labels.max()) + 1
        labels, said = _joined_groups(W, labels, null, chance)
        if not said:
            return labels
        self.escape_time_ = log_escape_time(W, labels)
        if note is not None:
            note(f"of the {c} clusters found, {'; '.join(said)}: chance cuts of a shape, each "
                 f"group joined into one cluster, {int(labels.max()) + 1} clusters")
        return labels

    def _support_applies(self, X, d_hat, bound=SUPPORT_MAX_DIMENSION):
        """Whether the support test reads `X`: euclidean, dense, 2-3 features, d < `bound`."""
        return (self.metric == "euclidean" and not sp.issparse(X)
                and 2 <= X.shape[1] <= SUPPORT_MAX_FEATURES and d_hat < bound)

    def _shape_points(self, X):
        """The points as the tests of a shape read them: euclidean dense X in orthonormal
        coordinates of its affine hull when that has at most three dimensions and fewer than
        X's features (`hull_coordinates`), so that planar data turned or padded into more
        features meet the dip test, the support test and the gap test as in the plane; else
        X. Every such test asks for an intrinsic dimension below `SUPPORT_DIP_DIMENSION`
        (the data's, `intrinsic_dimension_`), so above it X is read as it is and the hull is
        not sought (0.4-0.7 s at 10^6 x 50)."""
        if self.metric != "euclidean" or self.intrinsic_dimension_ >= SUPPORT_DIP_DIMENSION:
            return X
        return hull_coordinates(X)

    def _is_line(self, X):
        """Whether the points `X` are a line that Hartigan's dip test reads (`_unimodal_line`):
        one euclidean dense feature (cosine on one feature sees only the signs)."""
        return self.metric == "euclidean" and not sp.issparse(X) and X.shape[1] == 1

    def _shape_cuts_judged(self, X, d_hat):
        """Whether a test reads cuts of the shape of the points `X` (euclidean, dense): the
        dip test of a line (`_unimodal_line`, one feature) or the support test (two or three
        features, `_support_test`)."""
        return self._is_line(X) or self._support_applies(X, d_hat, SUPPORT_DIP_DIMENSION)

    def _support_draws(self, X, dist, labels, d_hat, drops=False):
        """The support test's samples (`_support_null`): `NULL_DRAWS` samples uniform on the
        support of `X`, each partitioned by the fit's own scan; per sample, the mean log
        escape time of its partition nearest the c of `labels`, moved to the data's cluster
        size, with that partition's c, and its adjusted Rand index with `labels` carried over.
        Returns (nulls, agreements, records); empty when the sample would hold at most 2 k
        points.

        The records, filled only with `drops`, are what `_carried_falls` reads: per sample
        where `labels` carried to it have a cut, their mean log escape time there (moved to
        the data's size), the sample, its distance lists, its own partition, that partition's
        escape time, the seed of the sample's own support sample and `d_hat`."""
        (n, k), c = dist.shape, int(labels.max()) + 1
        m, d0 = min(n, SUPPORT_SAMPLE), max(1, round(float(d_hat)))
        if m <= 2 * k:
            return [], [], []
        # in units of a power of two of X (exact): the trees' squared lengths overflow
        # beyond 1e154, and every draw and carried label is the same in these units
        X, s = rescale(np.asarray(X, dtype=np.float64))
        dist = dist / s
        tree, nulls, agreements = cKDTree(X), [], []  # one tree for every draw's queries
        records = []
        for r in range(NULL_DRAWS):
            Y = support_sample(X, dist, m, random_state=TEST_SEED + r,
                               tree=tree, dimension=d_hat)
            i0, d0_lists = nearest_neighbors(Y, k, method="exact")
            W0 = self._weights(i0, d0_lists, k)
            found = [(v, lab) for lab in self._scan_choice(W0, TEST_SEED)[3]["consensus"]
                     if lab.max() >= 1 and (v := log_escape_time(W0, lab)) is not None]
            if not found:
                continue
            # the scan's partition nearest the data's c (the first such), moved to its size
            v, lab = min(found, key=lambda vl: abs(int(vl[1].max()) + 1 - c))
            c0 = int(lab.max()) + 1
            nulls.append((escape_at_size(v, m / c0, n / c, d0), c0))
            mine = carried_labels(X, labels, Y, tree=tree)
            agreements.append(adjusted_rand_score(mine, lab))
            if drops and (e := log_escape_time(W0, np.unique(mine, return_inverse=True)[1])
                          ) is not None:
                records.append((escape_at_size(e, m, n, d0), Y, d0_lists, lab, v,
                                TEST_SEED + NULL_DRAWS + r, d_hat))
        return nulls, agreements, records

    def _carried_falls(self, records):
        """(the clusters' escape time carried to a support sample, the null's fall) per
        `_support_draws` record: the fall of the sample's own partition's escape time when
        it is carried to a support sample of that sample, of as many points (the fall its
        own sparse spots and the balls' widening make). Draws whose carried partition has
        no cut are left out."""
        out = []
        for escape, Y, dist, labels, v, seed, d_hat in records:
            k = dist.shape[1]
            Z = support_sample(Y, dist, Y.shape[0], random_state=seed, dimension=d_hat)
            i1, d1 = nearest_neighbors(Z, k, method="exact")
            carried = np.unique(carried_labels(Y, labels, Z), return_inverse=True)[1]
            w = log_escape_time(self._weights(i1, d1, k), carried) if carried.max() else None
            if w is not None:
                out.append((escape, v - w))
        return out

    def _shape_cuts(self, X, dist, labels, W, d_hat, walk=None):
        """Whether a split of a cluster's points `X` is chance cuts of their shape, as
        `_support_test` judges a fit's clusters (escaped no more slowly than the support
        samples' partitions, and not found again there); False where it does not apply.
        W is the graph of the walk that found the split and `walk` its density weighting
        (`_density_walk`): the support samples are weighted alike, as the null model's were.
        Read on the plain kNN walk, a density valley's split is escaped as a chance cut is
        (the walk is nearly blind to density in the plane): two unit Gaussians 3.6 deviations
        apart, 13 334 points, escaped at 6.13 against the support's 5.94 plus the margin."""
        if not self._support_applies(X, d_hat):
            return False
        escape = log_escape_time(W, labels)
        with self._density_walk(walk):
            nulls, agreements, _ = self._support_draws(X, dist, labels, d_hat)
        return bool(nulls and escape is not None and escape <= max(nulls)[0] + NULL_MARGIN
                    and np.median(agreements) < SUPPORT_AGREEMENT)

    def _own_split_choice(self, Wc, members, X, dist, seed, log_escape, level=DIP_LEVEL,
                          fine=None):
        """A cluster's own scan and tiers (`split_outlasted_clusters`). When they end in the
        fine tier, the fine tier's looks follow (`FineTierLooks._fine_looks`, in the cluster's own
        intrinsic dimension: a background of noise, density valleys, clusters at walk
        lengths of their own), as they would for the cluster alone. A split (of the
        metastable or plateau tier, its own or a look's) has its adjacent parts joined where
        no density valley lies between them (`join_unimodal_pairs`, on the points `X` of the
        fit, each pair seen from both its ends and, for parts of unequal sizes, on a
        balanced window too; not the parts of a valley look, joined one pair at a time
        already) and is reported as "shorter" when a metastable split of its own scan does
        not outlast the cluster whole that the walk leaves within the scan (one it does not
        leave, a whole component, has its window cut by the scan's end: the valleys decide),
        "unimodal" when every part is joined, "small" when a part has fewer than 2
        n_neighbors points, "shape" when a look's split of two- or three-feature points is
        chance cuts of their shape (`_shape_cuts`), "weak" when the null model would warn
        about its own scan's split; none of these splits the cluster. With `fine` (fine
        partitions of Wc's nodes: the fit's own runs restricted to a plateau's cluster) its
        scan merges those instead of Leiden runs of its own, a scan that ends in the fine
        tier takes only the density's cluster tree (`_tree_choice`: small blobs beside a
        large one, which the walk on the whole data had joined to it), and one that ends in
        the plateau tier splits it only where the runs' groupings of its pieces agree
        exactly there (else "agreement": `_runs_agree`)."""
        sub, rule, tau, scan = self._scan_choice(Wc, seed, fine=fine)
        if fine is not None and rule == "plateau" and not _runs_agree(scan, tau):
            # a plateau is the runs' near-agreement (their VI to it, plus the next octave's, at
            # most plateau_vi), set for the whole data's tens of pieces; a cluster has a
            # handful, and there it admits a whole piece placed apart by one run: on MNIST such
            # near-agreements (runs' VI 0.011-0.020) split the 2s, the 5s or another digit's
            # cluster in 7 of 32 random_states (c = 12-13 against 11; NMI 0.902-0.914 against
            # 0.912-0.918). A check's plateau needs its runs to agree on every piece.
            return sub, "agreement", tau
        looked = rule == "fine"
        dist_c = dist[members]
        d_c = intrinsic_dimension(dist_c)  # the looks', the null's and the support's
        points = prepare_metric(X[members], self.metric)  # as the looks and the tests read them
        joined = False  # True: the valley look's dip-means joins made every pair bimodal
        background = getattr(self, "noise_", None)  # the fit's background of noise, if any
        background = None if background is None else background[members]
        if looked and fine is not None:
            # the fit's own runs see nothing inside: a check of the fit's hierarchy within
            # the cluster, not a fresh look at it (pendigits: the look split its 8s by
            # stroke order at density valleys, 0.863 -> 0.852, and cost 3 s of 7.7); but
            # the density's modes beside a blob that holds most of the cluster's mass
            tree = self._tree_choice(Wc, dist_c, points, d_c, background)
            if tree is None:
                return sub, rule, tau
            sub, rule, tau, Wl, walk = (tree, "density tree", None, Wc,
                                        getattr(self, "_walk_density", None))
        elif looked:  # a look's choice has passed the null model, weighted as it was found
            sub, rule, tau, Wl, walk, joined = self._fine_looks(
                Wc, dist_c, seed, d_c, scan, sub, points=points, background=background) or (
                sub, rule, tau, Wc, getattr(self, "_walk_density", None), False)
        if sub is None or rule not in SPLIT_RULES or sub.max() < 1:
            return sub, rule, tau
        # a plateau's parts are left by the walk before they mix inside: they have no window
        # to outlast the cluster's by, and the valleys, the size floor and the null decide;
        # nor has a look's split (the cluster's own scan found nothing to compare it with)
        if rule == "metastable" and not looked and not outlasts_whole(scan, log_escape):
            # when the walk does not leave the cluster within the scan (a whole component),
            # the whole's window is cut at the scan's last walk length, an end of the grid
            # and not of the cluster: the windows tell nothing, and the valleys decide
            # (three touching blobs of sipu/a1, a component, are left by the walk as soon
            # as it mixes inside them, and only their valleys tell them from a blob's tiles)
            if log_escape < scan_horizon(scan["taus"])[0]:
                return sub, "shorter", tau
        if not joined:
            # a pair of unequal parts is read on a balanced window too (the whole pair's dip is
            # bounded by about half the smaller part's mass) where the walk leaves the cluster:
            # a whole component's split has only the valleys to judge it, and a window around
            # a cut chosen for being sparse reads chance clumps as valleys there (wut/
            # trajectories' random walks, each a component: 4 -> 18 clusters, NMI 1.0 -> 0.73)
            windows = rule == "density tree" or np.isfinite(log_escape)
            sub = join_unimodal_pairs(points, sub, Wc, level=level, random_state=TEST_SEED,
                                      ends=2, windows=windows)[0]
        if sub.max() < 1:
            return sub, "unimodal", tau
        # a group of at most k points cannot hold one of its points' k-NN lists, so the graph
        # does not resolve it; twice that leaves a list and its boundary (on UCI wine, raw, the
        # 60-point clusters' own scans gave parts of 6-17 points that the null model passed)
        k = dist.shape[1]
        if np.bincount(sub).min() < 2 * k:
            return sub, "small", tau
        if looked:
            # leaving a band's fringe out, or weighting it by its density, cuts the band where
            # its density dips: wut/stripes' bands into 2-3 parts that pass the null model
            if self._shape_cuts(points, dist_c, sub, Wl, d_c, walk):
                return sub, "shape", tau
            return sub, rule, tau
        if self.null_model and not self._passes_null(Wc, sub, k, d_c):
            rule = "weak"
        return sub, rule, tau

    def _passes_null(self, W, labels, k, d_hat, whole=False):
        """False when the clusters are all whole components of W (the walk never leaves them:
        nothing for the null to compare; True instead with `whole`) or when the null model's
        tiles are escaped as slowly, as `_null_test` judges every choice: the mass-weighted
        mean log escape time on W. Used for a cluster's own split and for the fine tier's
        looks (`_stability_looks`)."""
        escape = log_escape_time(W, labels)
        if escape is None:
            return whole
        if not self.null_model:
            return True
        found = self._null_reference(W.shape[0], int(labels.max()) + 1, k, d_hat, escape)
        return found is None or escape > found[0] + NULL_MARGIN

    def _unimodal_line(self, X, c):
        """One-dimensional points: Hartigan's dip test of the sample (`dip_`, `dip_pvalue_`);
        True, with a warning naming the clusters, when it finds the sample unimodal. (Cosine
        on one feature sees only the signs: no density to test.)"""
        if not self._is_line(X):
            return False
        self.dip_, self.dip_pvalue_ = dip_test(X[:, 0], random_state=TEST_SEED)
        if self.dip_pvalue_ < DIP_LEVEL:
            return False
        self._null_failed = True  # this warning replaces the fine tier's
        warnings.warn(
            f"no cluster structure found: the {c} clusters found ({self.selection_rule_} tier, "
            f"tau = {self.tau_}) split a one-dimensional sample that Hartigan's dip test finds "
            f"unimodal (dip {self.dip_:.4f}, p = {self.dip_pvalue_:.2f} >= {DIP_LEVEL} against "
            f"uniform samples); in one dimension a kNN walk splits at chance gaps, not at "
            f"density valleys.", StabilityWarning, stacklevel=4)
        return True


def _joined_through(labels, keep, joined):
    """Every point's cluster after the points `keep` were regrouped: `joined` (one group per
    kept point, the same for every kept point of a cluster) carried to each cluster of
    `labels`, and so to its points that are not kept; a cluster with no kept point stays a
    group of its own. Numbered by first appearance.

    Examples
    --------
    >>> import numpy as np
    >>> labels = np.array([0, 1, 1, 2, 3, 2])
    >>> keep = np.array([True, True, True, True, False, False])
    >>> _joined_through(labels, keep, np.array([0, 0, 0, 1])).tolist()
    [0, 0, 0, 1, 2, 1]
    """
    group = np.full(int(labels.max()) + 1, -1, dtype=np.int64)
    group[labels[keep]] = joined
    alone = np.flatnonzero(group < 0)  # clusters of background points only
    group[alone] = int(joined.max()) + 1 + np.arange(alone.size)
    return canonical_labels(group[labels])


def _runs_agree(scan, tau):
    """Whether every run of `scan` groups the pieces alike at walk length `tau` (their mean
    pairwise variation of information, ``scan["vi"]``, is zero to rounding)."""
    j = int(np.argmin(np.abs(np.asarray(scan["taus"], dtype=float) - float(tau))))
    return bool(scan["vi"][j] <= 1e-12)


def _weak_adjacent_groups(W, labels, weak):
    """(group, members) per connected group of at least two clusters among those flagged in
    `weak` (one bool per cluster of `labels`), adjacent where W has flow between them: the
    clusters' ids in increasing order and the indices of their points."""
    ids = np.flatnonzero(weak)
    if ids.size < 2:
        return []
    M = indicator(labels, int(labels.max()) + 1)
    touching = (M.T @ W @ M)[ids][:, ids]  # the weak clusters' flows between them
    n_groups, group_of = connected_components(touching > 0, directed=False)
    out = []
    for g in range(n_groups):
        group = ids[group_of == g]
        if group.size >= 2:
            out.append((group, np.flatnonzero(np.isin(labels, group))))
    return out


def _joined_groups(W, labels, null, chance):
    """(labels, said): each group of adjacent clusters escaped no more slowly than `null` plus
    the margin (`_weak_adjacent_groups`) joined into one where ``chance(members, sub, Wg)``
    (the group's points, their labels 0..g-1 and its subgraph) returns a phrase, not None;
    `said` names each joined group (its size, its clusters' log escape times, the phrase)."""
    c = int(labels.max()) + 1
    escape = cluster_escapes(*cut_and_volume(W.indptr, W.indices, W.data, labels, c))
    joined, said = labels.copy(), []
    for group, members in _weak_adjacent_groups(W, labels, escape <= null + NULL_MARGIN):
        what = chance(members, np.searchsorted(group, labels[members]), W[members][:, members])
        if what is None:
            continue
        joined[members] = group[0]
        said.append(f"{group.size} clusters of {members.size} points (log escape times "
                    f"{', '.join(f'{v:.2f}' for v in escape[group])}){what}")
    if not said:
        return labels, said
    return np.unique(joined, return_inverse=True)[1].astype(np.int64), said
