"""The fine tier's looks of `StabilityClustering`: what may hide the clusters.

When the scan of all the points finds no structure (the fine tier) in data of at most 3
intrinsic dimensions, two causes are looked for, in this order (the second from 1.5 dimensions
on):

- a background of noise points that bridges the clusters (`_background_choice`: Byers &
  Raftery's clutter left out, the rest scanned; `_background_noise`);
- density valleys the kNN walk does not see (`_density_choice`: the walk on the weights
  ``W_ij (p_i p_j)^(g/2)``, whose metastable sets are the basins of the density;
  `_density_walk`); when that walk's tiers keep nothing (on a large sample its clusters are
  no longer metastable, or persist only beyond its horizon), its most persistent level with
  density valleys between its parts and none inside them (`_valley_choice`, the dip test).

Either look keeps what it finds only when it is a metastable or persistent partition into two
or more clusters of at least max(2 n_neighbors, n / 500) points (smaller ones are fragments,
placed by the walk: `absorbed_labels`), not all whole components of the graph, and passed by
the null model on the graph it was found on, the null samples weighted the same way.

When neither finds clusters, in any dimension, the last looks follow (`_last_looks`): clusters
at walk lengths of their own (selection rule ``"multiscale"``), the graph's or its mutual kNN
graph's large components (``"components"``, ``"mutual"``), and the density's cluster tree
(``"density tree"``).

A choice that the null model calls chance cuts of the data's shape (a metastable or plateau
partition of the kNN walk, or what a look found: "weak cluster structure") takes the density
looks it has not taken: the density walk's tiers, then its valleys with its tiers not asked,
then the graph's and the mutual kNN graph's large components, each kept whole (selection
rules "whole components" and "mutual"; `_past_chance_cuts`, `LOOKS_PAST_CHANCE`): the kNN walk
cuts two parallel bands across at every walk length, and the density walk's valleys part
them. What a look finds replaces the choice only when the rest of the fit on it gives no
warning and the geodesic dip test finds a density valley between every two adjacent
clusters (on a curve, unless only edges across the curves' direction join the clusters:
`_apart_on_curve`); otherwise the choice stays, warned about.

Groups of fewer than 2 n_neighbors points are no structure in either direction: when a
metastable choice is whole components of which all but one are such groups, and that one's
own scan found nothing, the fit answers with the fine tier, as for that component alone
(`_outlier_groups_choice`).

A cluster of the chosen partition whose own scan ends in the fine tier takes the background,
density and multiscale looks (`_fine_looks`, called by
`_stability_null.NullModelTests._own_split_choice`), in its own intrinsic dimension:
wut/labirynth's corridors, which its fringe bridges, are found so (docs/battery.md, *Built:
the fine tier's looks inside a cluster*), and small blobs touching a large one inside a
cluster (docs/model_selection.md, *Small blobs touching a large one*). A cluster found on the
density walk takes that walk's valley look on its own scan instead of the density look
(sipu/s4's twelve overlapping blobs, one cluster of four: docs/model_selection.md, *A
cluster of the density walk parted at its own valleys*).
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from ..graphs import prepare_metric
from ._background_noise import (BACKGROUND_MAX_DIMENSION, BACKGROUND_MIN_SPREAD, absorbed_labels,
                                background_spread, noise_to_leave_out)
from ._density_walk import density_exponent, density_weighted, log_density, sees_density
from ._last_looks import LastLooks, looks_floor
from ._markov_selection import (chosen_labels, markov_stability_scan, plateau_scores,
                                 relaxation_time)
from ._metastable_pairs import join_transient_pairs
from ._null_model import TEST_SEED
from ._partition_quality import cut_and_volume
from ._stability_hierarchy import StabilityWarning
from ._support_null import SUPPORT_DIP_DIMENSION
from ._valley_joins import join_unimodal_one_by_one, join_unimodal_pairs, unimodal_parts

__all__ = ["LONGEST_OCTAVE", "LOOKS_PAST_CHANCE", "VALLEY_PLATEAU_VI", "FineTierLooks",
           "looks_not_taken", "replay"]

#: The longest walk length, 2^17, to which `_valley_choice` scans the density walk again
#: when that walk relaxes beyond the default walk lengths (2^13).
LONGEST_OCTAVE = 17
#: `_valley_choice` tests a level whose plateau score is at most this many times `plateau_vi`:
#: the density valley, not the persistence, is its gate, and the seeds of two Gaussians 3
#: deviations apart (10 000 points) disagree on their boundary by 0.021 (docs/battery.md).
VALLEY_PLATEAU_VI = 2.0
#: The looks, in turn, that a metastable or plateau choice of the kNN walk takes when the null
#: model calls it chance cuts (`_past_chance_cuts`): the density walk's tiers, then its valleys.
#: Not the background's: its premise, a background that bridges the clusters so that no walk
#: length finds them, is not met by data whose walk found a partition (on the battery both
#: orders give the same fits; docs/battery.md, *Built: a choice of chance cuts takes the next
#: look*).
LOOKS_PAST_CHANCE = ("density", "valleys", "whole components", "mutual")


def looks_not_taken(looks):
    """The looks past chance cuts (`_past_chance_cuts`) not taken by the fine tier's `looks`
    (background, density; None when the tiers chose): after a background's choice all of
    them, after the density walk's tiers' choice its valleys and the graph's and the mutual
    graph's large components, after its valleys the last two, else none (the density look
    found nothing: the fine tier's last look read the components, `_components_choice`)."""
    if looks is None or looks[0] is not None:
        return LOOKS_PAST_CHANCE
    if looks[1] is not None:
        return LOOKS_PAST_CHANCE[2 if "valleys" in looks[1][5] else 1:]
    return ()


def replay(records):
    """Warn again the warnings `records` caught while a fit's choice could still change: a
    `StabilityWarning` at the caller of ``fit`` (the frame three above the caller of this
    function), any other where it was first raised."""
    for w in records:
        if issubclass(w.category, StabilityWarning):
            warnings.warn(w.message, stacklevel=4)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class FineTierLooks(LastLooks):
    """The fine tier's second looks (a mixin of `StabilityClustering`; see the module)."""

    def _second_looks(self, W, dist, seed, points, progress, rule):
        """The looks past the tiers' choice (``(background, density)`` or None): on the fine
        tier's tiles `_hidden_structure`; on a choice of clusters the background of noise
        spread over the window (`_background_beside`)."""
        if rule == "fine":
            return self._hidden_structure(W, dist, seed, points, progress)
        background = self._background_beside(W, dist, seed, points, progress)
        return None if background is None else (background, None)

    def _background_beside(self, W, dist, seed, points, progress):
        """`_background_choice` on a choice of clusters, when its noise is a background.

        The walk on the fuzzy graph does not see density, so a background of noise bridges
        clusters, and the tiers may choose among its chance cuts and the shapes' (rings and
        bands in 10-30 % uniform clutter: `scripts/check_shapes_in_clutter.py`). The fine
        tier's look for a background answers only when the tiers found nothing. Here it
        overrides clusters, so it asks more of the sparser points first: a population of
        their own (`noise_to_leave_out`'s second mode, told apart) that spreads over the
        window as a uniform sprinkle would (`background_spread` at least
        `BACKGROUND_MIN_SPREAD`), in 2-3 dense features where that is read. Without the
        spread a sine's sparse stretch among blobs was taken for a background and the sine
        cut in three, silently (docs/model_selection.md, *Built: a background spread over
        the window*).
        """
        d_hat = self.intrinsic_dimension_
        if (d_hat > BACKGROUND_MAX_DIMENSION
                or not self._support_applies(points, d_hat, SUPPORT_DIP_DIMENSION)):
            return None
        noise, separate = noise_to_leave_out(dist, d_hat)
        if (noise is None or not separate
                or background_spread(points, noise, random_state=TEST_SEED)
                < BACKGROUND_MIN_SPREAD):
            return None
        t0 = time.perf_counter()
        with progress.step("the clusters beside a background of noise"):
            found = self._background_choice(W, dist, seed, points=points, beside=noise)
        self.timings_["noise"] = time.perf_counter() - t0
        return found

    def _hidden_structure(self, W, dist, seed, points, progress, which=("noise", "density"),
                          scanned=None):
        """``(background, density)``: the look for a background of noise and, when it finds
        none, the look for valleys of the density (`_background_choice`, `_density_choice`;
        each None when it finds no clusters or is not in `which`). ``"valleys"`` in `which`
        instead of ``"density"``: the density look's valley look alone, its tiers not asked.
        `scanned`: a dict the density look's scan is kept in for the next look that asks."""
        background = density = None
        if "noise" in which:
            t0 = time.perf_counter()
            with progress.step("the points that are not a background of noise"):
                background = self._background_choice(W, dist, seed, points=points)
            self.timings_["noise"] = time.perf_counter() - t0
        if background is None and ("density" in which or "valleys" in which):
            t0 = time.perf_counter()
            with progress.step("a walk that sees density"):
                density = self._density_choice(W, dist, seed, points=points,
                                               tiers="density" in which, scanned=scanned)
            self.timings_["density"] = time.perf_counter() - t0
        return background, density

    def _past_chance_cuts(self, fit, said, W, dist, seed, points, progress, untried,
                          conclude):
        """A choice that the null model calls chance (`_weak`: escaped no more slowly than
        structureless tiles, or cut where the data's support is cut alike) takes the fine
        tier's looks it has not taken (`untried`: of `LOOKS_PAST_CHANCE`, "valleys" the
        density look's valley look with its tiers not asked, "whole components" and "mutual"
        the large components of the graph and of its mutual kNN graph, each kept whole,
        `_large_components`), one at a time: the kNN
        walk, or the scan of the points left when a background is left out, may have cut what
        hides the density's valleys (two parallel bands 0.4 apart: docs/battery.md, *Built: a
        choice of chance cuts takes the next look*), or cut curves into arcs (wut/trajectories:
        four random walks, each a component of the graph, cut into 14 arcs). What a look finds
        replaces ``(fit, said)``
        (`_concluded`'s labels and walk, and the warnings caught) when `conclude(looks,
        choice)` (the rest of the fit on the looks, or on a components look's choice
        ``(j, rule, labels, given)``) ends with no `StabilityWarning` and a density valley lies
        between every two adjacent clusters as the geodesic dip test sees them on the kNN
        graph W (`join_unimodal_pairs`): on structureless rings and swiss rolls the density
        walk's chance basins pass their own null model, and the dip test joins them. Curves
        that only edges across their direction join (`_apart_on_curve`: spiral arms whose
        ends' lists reach the next arm) are no two pieces of one curve, and no geodesic runs
        along them from one to the other: they are not asked for a valley.
        Otherwise the fit is left as it was."""
        kept = dict(self.__dict__)
        scanned = {}  # the density walk's scan, taken once for its tiers and its valleys
        for look in untried:
            if look == "valleys" and scanned.get("valleys"):
                continue  # the density look took it, on the same scan: the same answer
            if look in ("whole components", "mutual"):  # each component whole: no walk length
                whole = self._large_components(W, dist, mutual=look == "mutual",
                                               points=points)
                if whole is None:
                    continue
                looks, choice = None, (None, look, whole, None)
            else:
                looks, choice = self._hidden_structure(W, dist, seed, points, progress,
                                                       which=(look,), scanned=scanned), None
                if all(found is None for found in looks):
                    continue
            with warnings.catch_warnings(record=True) as again:
                warnings.simplefilter("always", StabilityWarning)
                found = conclude(looks, choice)
            got = found[0]
            # curves that only edges across their direction join are no pieces of one curve:
            # no geodesic runs along the curves from one to the next (`_apart_on_curve`)
            if (got.max() >= 1 and not any(issubclass(w.category, StabilityWarning)
                                           for w in again)
                    and (self._apart_on_curve(points, self._knn_lists, got)
                         or join_unimodal_pairs(prepare_metric(points, self.metric), got, W,
                                                random_state=TEST_SEED)[0].max() == got.max())):
                progress.note(f"the {int(fit[0].max()) + 1} clusters of the walk are chance "
                              f"cuts; a look past them finds {int(got.max()) + 1}")
                return found, again
            timings = self.timings_  # the look's time was spent
            self.__dict__.clear()
            self.__dict__.update(kept)
            self.timings_ = timings
        return fit, said

    def _background_choice(self, W, dist, seed, d_hat=None, points=None, beside=None):
        """The fine tier's look for a background of noise, which may hide the clusters.

        Byers & Raftery's clutter model on the fit's own k-th neighbour distances marks the
        points of a sparser background (`noise_to_leave_out`), in data of intrinsic dimension
        up to `BACKGROUND_MAX_DIMENSION`; so are the points whose neighbours are all noise. The
        rest is scanned on its own subgraph. Its clusters of fewer than 2 n_neighbors points
        (`_own_split_choice`'s floor) or n / 500 (the smallest consensus piece of the scan) are
        fragments that leaving the noise out cut off, and join the noise; what remains must be
        a metastable or persistent partition into 2 or more clusters. The noise points join the
        cluster the walk from them enters first (`absorbed_labels`; a component of the graph
        that holds no such cluster is a cluster of its own), and the partition of all the
        points must pass the null model on the whole graph as `_null_test` tests every choice
        (the mass-weighted mean log escape time against the null's tiles). Clusters that are
        all whole components of the graph are no news: the first scan had them and chose
        otherwise. With `beside`, the noise mask that `_background_beside` found told apart
        and spread over the window (not found again), the kept clusters are judged on their
        own points' graph instead, where the background no longer bridges them, and clusters
        that are whole components of it pass (the whole graph's walk, through the background,
        could not see them).
        Returns ``(labels, rule, tau, noise, whether the noise is a background of its own)``
        or None (`noise_to_leave_out`).

        A sparser part that the model does not tell apart as a population of its own is the
        clusters' fringe, not a background, and what leaving it out cuts must be judged as
        cuts of the data's shape. Inside a cluster's own looks (`points` None) every split's
        adjacent parts are joined where no density valley lies between them
        (`join_unimodal_pairs`). The fit's own choice (`points`: W's rows as those tests read
        them, `NullModelTests._shape_points`) has no such join; its judges are the dip test
        of a line (one feature) and the support test (two or three:
        `NullModelTests._shape_cuts_judged`). Beyond them nothing would judge those cuts,
        and the look is not taken: on UCI vowel (ten features) a fringe of 199 of 990
        points left out detached two speakers' tight groups of 24 and 30 utterances, and the
        fit answered with them beside one cluster of 936 points, silently (NMI 0.06, against
        0.54 for the fine tier's tiles; docs/battery.md, *Real tables outside the battery*).
        """
        k = dist.shape[1]
        d_hat = self.intrinsic_dimension_ if d_hat is None else d_hat  # a cluster's own
        if d_hat > BACKGROUND_MAX_DIMENSION:
            return None
        noise, separate = (noise_to_leave_out(dist, d_hat) if beside is None
                           else (beside.copy(), True))
        if noise is None or not (separate or points is None
                                 or self._shape_cuts_judged(points, d_hat)):
            return None
        W = sp.csr_matrix(W)
        # a point whose neighbours are all noise has no edge left: noise as well (a node of
        # degree 0 has no walk, and sends the scan's flows to a slow eigenbasis)
        noise |= np.asarray(W @ (~noise).astype(np.float64)).ravel() <= 0
        rest = np.flatnonzero(~noise)
        if rest.size < 4 * k:  # too few for two clusters above the floor
            return None
        Wr = W[rest][:, rest]
        sub, rule, tau, _ = self._scan_choice(Wr, seed)
        if sub is None or rule not in ("metastable", "plateau"):
            return None
        labels, known = self._kept_clusters(W, rest, sub, k)
        if labels is None:
            return None
        if beside is not None:  # on the kept points' own graph, not across the background
            on = np.flatnonzero(known)
            # whole components of it need no null: the walk through the background could not
            # see them
            if not self._passes_null(W[on][:, on], labels[on], k, d_hat, whole=True):
                return None
        elif not self._passes_null(W, labels, k, d_hat):
            return None
        return labels, rule, tau, ~known, separate

    def _density_choice(self, W, dist, seed, d_hat=None, points=None, tiers=True,
                        scanned=None):
        """The fine tier's look for density valleys, which the kNN walk does not see.

        In d dimensions the kNN walk's conductivity is rho^(1 - 2/d), 1 at d = 2: a valley
        slows it no more than a mode (`_density_walk`). The look scans the weights
        `density_weighted` (conductivity rho^2, a Gaussian kernel's, with g = 1 + 2/d), in data
        of intrinsic dimension `DENSITY_MIN_DIMENSION` to `DENSITY_MAX_DIMENSION`, and keeps its
        choice as `_background_choice` keeps its own: fragments placed by the walk, whole components
        refused, the null model passed, here with its samples weighted the same way. When the
        scan's tiers keep nothing there and `points` (the fit's, `_shape_points`) are given,
        its persistent levels are judged by the density valleys between their parts
        (`_valley_choice`; then the scan returned has ``scan["valleys"]``); without `tiers`,
        at once. Returns ``(labels, rule, tau, weighted W, (d, g), its scan)`` or None.
        `scanned` (a dict, or None): where the scan is kept for the next call and taken from
        (emptied but for ``"valleys"`` once the valley look was taken on it: its kept Krylov
        run, two n x b blocks, is then dropped).
        """
        k = dist.shape[1]
        d_hat = self.intrinsic_dimension_ if d_hat is None else d_hat  # a cluster's own
        if not sees_density(d_hat):
            return None
        walk = (float(d_hat), density_exponent(d_hat))
        Wd = density_weighted(W, dist[:, -1], *walk)
        valleys = points is not None
        with self._density_walk(walk):
            if scanned is not None and "scan" in scanned:
                sub, rule, tau, scan, quadrature = scanned["scan"]
                scan = dict(scan)
            else:  # the valley look scans longer walks of the default ones: it takes this run on
                sub, rule, tau, scan = self._scan_choice(
                    Wd, seed, keep_quadrature=valleys and self.taus is None)
                quadrature = scan.pop("quadrature", None)  # its n x b blocks: the look's alone
                if scanned is not None:
                    scanned["scan"] = (sub, rule, tau, dict(scan), quadrature)
            labels = None
            if tiers and sub is not None and rule in ("metastable", "plateau"):
                labels, _ = self._kept_clusters(Wd, np.arange(Wd.shape[0]), sub, k)
            if labels is not None:  # basins of the density, not cuts of an even stretch
                labels = join_transient_pairs(Wd, labels, log_density(dist[:, -1], walk[0]))
                labels = labels if labels.max() > 0 else None
            if labels is None and valleys:
                if scanned is not None:  # taken: no later look needs the scan or its run
                    scanned.clear()
                    scanned["valleys"] = True
                found = self._valley_choice(Wd, scan, points, k, seed, quadrature)
                if found is not None:  # its scan, past the relaxation time, is the hierarchy
                    (labels, tau, scan), rule = found, "plateau"
                    scan["valleys"] = True
            if labels is None or not self._passes_null(Wd, labels, k, d_hat):
                return None
        return labels, rule, tau, Wd, walk, scan

    def _outlier_groups_choice(self, W, labels, scan, k):
        """The fine tier's tiles when a metastable choice's only structure is small groups.

        Returns the tiles (point labels) or None. The choice must be whole components of
        which all but one have fewer than 2 k points (groups the graph does not resolve as
        clusters: far near-duplicates, rare values of a few features), and that one must have
        been kept whole by its own scan for want of structure (`cluster_splits_`: no
        metastable or persistent partition, rule "fine"; or one without density valleys,
        "unimodal"; or one the null model does not pass, "weak"). Then the fit answers as
        for that component's points alone: with the scan's fine tier (each small group one
        tile or more), judged and warned about as any fine tier is (`_null_test`), after a
        warning that names the groups. Without this, 12 far near-duplicates added to UCI
        ionosphere turned its tiles and the fine tier's warning into two clusters and no
        warning, and UCI yeast's 15-point component hid its other 1 469 points' tiling
        (docs/battery.md, *Built: small groups are no cluster structure*).
        """
        if self.selection_rule_ != "metastable" or self.density_exponent_ is not None:
            return None  # (a background's choice has no `cluster_splits_`)
        c = int(labels.max()) + 1
        sizes = np.bincount(labels, minlength=c)
        big = np.flatnonzero(sizes >= 2 * k)
        if c < 2 or big.size != 1 or not any(
                s["component"] and s["c"] == 1 and s["rule"] in ("fine", "unimodal", "weak")
                and s["size"] == sizes[big[0]] for s in self.cluster_splits_):
            return None
        cut, vol = cut_and_volume(W.indptr, W.indices, W.data, labels, c)
        if (cut > 1e-12 * vol).any():  # every cluster a whole component (or several)
            return None
        scan["fine_vi"] = float(scan["vi"][0])  # as `select_partition`'s fine tier sets it
        tiles = chosen_labels(scan, 0, "fine", self.fine_vi_max)
        if tiles is not None:
            rest, m = int(sizes[big[0]]), int(sizes.sum() - sizes[big[0]])
            warnings.warn(
                f"the only cluster structure found is {c - 1} group(s) of {m} points in all, "
                f"each a connected component of fewer than 2 n_neighbors = {2 * k} points "
                f"(far outliers or near-duplicates: the graph does not resolve groups that "
                f"small as clusters), apart from {rest} points with no cluster structure of "
                f"their own; answering for those as for data without the groups.",
                StabilityWarning, stacklevel=4)
        return tiles

    def _valley_choice(self, Wd, scan, points, k, seed, quadrature=None, whole=True):
        """A persistent level of the density walk's scan, its adjacent clusters joined while no
        density valley lies between them: ``(labels, tau, the scan it is a level of)`` or None.

        The tiers keep what the walk holds: a level at walk length tau only if the walk leaves
        its clusters no sooner (the plateau tier's horizon: at longer walks any blob has a
        persistent slowest cut), and on this walk only basins of the density
        (`join_transient_pairs`: each adjacent pair metastable, Q > 0, or parted by a
        valley an e-fold deep, `BASIN_MIN_DEPTH`). Neither is invariant
        to the sample's size. In the plane the walk inside a cluster relaxes in time
        ~ n^(2/d) = n while the walk across a valley is escaped in ~ vol / cut ~ n^(1/2):
        two unit Gaussians 3 deviations apart are metastable at 600 points (Q = 0.89) and
        no longer at 10 000, and at 20 000 the walk relaxes in 24 000 steps, beyond the
        scan's last walk length 8 192, where their persistent level lies (one Gaussian cut
        in two; spread 0.013, VI to the next octave 0). What tells such a level from a blob's
        slowest cut is a density valley between its parts, and the geodesic dip test reads
        it with a power that grows with n (dip-means: `join_unimodal_one_by_one`, the pieces
        of one mode joined before the valley's sides are compared).

        With the default walk lengths (`taus` None) the scan is taken again to the octave
        past the walk's relaxation time (at most 2^`LONGEST_OCTAVE`), so that its last levels
        have a next octave to persist to (the first scan's flows run, `quadrature`, taken
        further: `KrylovFlows`). One level is tested, the most persistent of those
        coarser than every fine run (the smallest plateau score, `plateau_scores`; the finest
        of equals), so that the test's level is not spent over many chances, and only if its
        score is at most `VALLEY_PLATEAU_VI` times `plateau_vi`: a tiling (the seeds' own
        partitions disagreeing) is no level, and joining its tens of tiles one pair at a time
        costs minutes (one Gaussian 1.5 deviations from another, 20 000 points: 76 tiles,
        370 s, all joined). It is the choice when two or more clusters of at least
        max(2 k, n / 500) points are left after the joins and no part holds a valley as its
        viewers see it (`unimodal_parts`; docs/battery.md, *Built: density valleys beyond the
        walk's reach*); without `whole` (a cluster's own look, `_fine_looks`, whose parts are
        then scanned in turn) a part may hold one.
        """
        if self.taus is None:  # the default walk lengths: scanned on past the relaxation time
            # to an octave (the scan's own resolution), or proved past the longest scan
            t_rel = relaxation_time(Wd, tol=1e-4, at_least=2.0 ** (LONGEST_OCTAVE - 2))
            top = (min(int(np.ceil(np.log2(t_rel))) + 1, LONGEST_OCTAVE) if np.isfinite(t_rel)
                   else 0)
            if 2.0 ** top > np.max(scan["taus"]):
                scan = markov_stability_scan(Wd, taus=2.0 ** np.arange(top + 1),
                                             random_state=seed, fine=scan["fine"],
                                             quadrature=quadrature)
        score = plateau_scores(scan)
        c_fine = min(int(f.max()) + 1 for f in scan["fine"])
        levels = [j for j in range(score.size) if score[j] <= VALLEY_PLATEAU_VI * self.plateau_vi
                  and 2 <= int(np.max(scan["consensus_groups"][j])) + 1 < c_fine]
        if not levels:
            return None
        j = min(levels, key=lambda i: (score[i], i))  # one test: no chance to pick a dip
        X = prepare_metric(points, self.metric)
        joined = join_unimodal_one_by_one(X, scan["consensus"][j], Wd, random_state=TEST_SEED)
        kept, _ = self._kept_clusters(Wd, np.arange(Wd.shape[0]), joined, k)
        if kept is None or (whole and not unimodal_parts(X, kept, Wd, random_state=TEST_SEED)):
            return None
        return kept, float(scan["taus"][j]), scan

    def _fine_looks(self, W, dist, seed, d_hat, scan=None, chosen=None, points=None,
                    background=None):
        """The looks in turn on a cluster's subgraph `W` whose own scan (`scan`, its fine
        tier's tiles `chosen`) ended in the fine tier (`_own_split_choice`), `dist` its
        points' kNN distances and `d_hat` their intrinsic dimension: the first look's answer
        that finds clusters (below), or None. On the density's walk (the data's clusters
        came from it) W already sees the density, and the second look is not taken: it would
        weight W twice, but its last step, the valley look, is taken on the cluster's own
        scan of that walk (a persistent level parted at density valleys, `_valley_choice`
        without ``whole``: the parts are scanned in turn) when the cluster's viewers see a
        valley inside it, and kept when the null model passes the parts. The third,
        clusters at walk lengths of their own, needs `scan`. The last, the density's
        cluster tree (`_tree_choice`, its points of a `background` of noise left out: a mask,
        the fit's `noise_` on the cluster), reads the cluster's `points` even where its
        viewers see no valley inside: beside a blob that holds most of the cluster's mass
        their dips have little power, and its parts are read on a balanced window too
        (`join_unimodal_pairs` with ``windows``).
        With the cluster's `points` (the fit's `_shape_points`, in the metric's geometry:
        `prepare_metric`) the density's look takes its valley look too, as at the fit's level
        (`_valley_choice`), when the cluster's viewers see a valley inside it
        (`unimodal_parts`, the test the look's answer must pass):
        two Gaussians 3.35 deviations apart, 6 667 points, a component beside a third, are no
        basins of the density walk at that size, and only their valley tells them apart. A
        single Gaussian has none, and the look's scan past the relaxation time is not paid
        for (three separated blobs, 20 000 points: 54 s with it, 23 s without).
        Returns ``(labels, rule, tau, graph, walk, joined)``: the graph whose walk found the
        clusters and its density weighting (`_density_walk`; W and the fit's own but for the
        density's look), for the tests that judge them alike, and whether its adjacent pairs
        are to be left as they are (`joined`): the valley look on the density walk's own
        scan leaves parts that may hold several modes (they are scanned in turn), and its
        dip-means joins (`join_unimodal_one_by_one`) are the test that is posed for them; a
        test of all pairs at once would join a chain of unimodal pairs around one valley
        (sipu/s4 at random_state 3: five parts into one). The density look's valley answer
        has unimodal parts, and the split's pair test still reads them (battery chameleon
        t4: left unjoined, one shape's two parts stayed apart, NMI 0.838 -> 0.800)."""
        walk, shape = getattr(self, "_walk_density", None), points
        found = self._background_choice(W, dist, seed, d_hat)
        # outside the density look's dimensions it needs no viewers' dips (infinite MNIST,
        # 500 000 points: 2.7 s of the 5.6 s its 8 clusters' own scans took)
        if (found is None and points is not None and (walk is not None or sees_density(d_hat))
                and unimodal_parts(points, np.zeros(W.shape[0], np.int64), W,
                                   random_state=TEST_SEED)):
            points = None  # no valley inside, as its viewers see it: none to look for
        if found is None and walk is not None and scan is not None and points is not None:
            # the density look's last step, on the walk the cluster was found on: its own
            # scan's persistent level parted at density valleys; the parts are scanned in
            # turn, so one may still hold a valley (sipu/s4: twelve overlapping blobs, one
            # cluster of the density walk's four at tau = 8 192, whose own seeds disagree)
            found = self._valley_choice(W, scan, points, dist.shape[1], seed, whole=False)
            if found is not None and self._passes_null(W, found[0], dist.shape[1], d_hat):
                return found[0], "plateau", found[1], W, walk, True
            found = None
        if found is None and walk is None:
            found = self._density_choice(W, dist, seed, d_hat, points=points)
            if found is not None:
                return (*found[:5], False)
        if found is None and scan is not None:
            labels = self._local_choice(W, scan, chosen, dist, d_hat)
            found = None if labels is None else (labels, "multiscale", None)
        if found is None:  # the density's modes (the viewers' dips of the
            # whole cluster have little power beside a blob that holds most of its mass)
            labels = self._tree_choice(W, dist, shape, d_hat, background)
            found = None if labels is None else (labels, "density tree", None)
        return None if found is None else (*found[:3], W, walk, False)

    @contextmanager
    def _density_walk(self, walk):
        """While open, `_weights` weights every graph it builds (the null samples') by density
        ``walk = (d, g)``, and the null model's cache tells those apart; None: no weighting."""
        before = getattr(self, "_walk_density", None)
        self._walk_density = walk
        try:
            yield
        finally:
            self._walk_density = before

    def _kept_clusters(self, W, rest, sub, k):
        """Labels of all of W's points from the clusters `sub` of the points `rest`: clusters of
        fewer than max(2 k, n / 500) points (under the floor of a cluster's own split, or the
        scan's smallest piece) are fragments; they and the points outside `rest` join the
        cluster the walk from them enters first, and a component of the graph with no cluster
        left is a cluster of its own. Returns (labels, the points placed before the walk), or
        (None, None) when fewer than two clusters remain."""
        n = W.shape[0]
        sub = np.asarray(sub)
        kept = np.bincount(sub)[sub] >= looks_floor(n, k)
        labels = np.full(n, -1, dtype=np.int64)
        labels[rest[kept]] = np.unique(sub[kept], return_inverse=True)[1]
        _, comp = connected_components(W, directed=False)
        bare = np.setdiff1d(comp, comp[labels >= 0])
        at = np.isin(comp, bare)
        labels[at] = labels.max() + 1 + np.searchsorted(bare, comp[at])
        known = labels >= 0
        if labels.max() < 1:
            return None, None
        return absorbed_labels(W, labels, known), known
