"""`StabilityClustering`: points -> clusters, c and scale chosen by Markov stability (issue 14).

Pipeline: kNN lists (above 20 000 points three NN-descent searches, merged) -> per-point-scale
affinity (UMAP's fuzzy union by default) -> `n_seeds` fine Leiden partitions -> their consensus
(the pieces every run agrees on) -> merged by the exact Markov-stability gains of the consistency
(resolvent) walk at every walk length tau = 2^0 .. 2^13 (one multi-shift solve; the best of
several local optima per tau) -> the partition chosen by three tiers (metastable, else persistent
and robust across seeds, else the modularity partition with a warning, or one cluster) -> each
of its clusters by its own scan, split where density valleys part its own choice
(`_cluster_splits`) -> a null model (uniform and Gaussian data of the same intrinsic dimension)
for the chosen partition (`_stability_null`); chance cuts take the looks of `_stability_looks`.
See ``docs/model_selection.md``.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClusterMixin

from .._progress import Progress
from .._validation import (check_flag, check_int, check_neighbors, check_option, check_real,
                           check_seed, float_sequence, warn_feature_scales)
from ..graphs import (EXACT_SEARCH_MAX_SAMPLES, fuzzy_affinity_from_lists, fuzzy_scales_of_lists,
                      jaccard_affinity_from_lists, knn_graph_from_neighbors, nearest_neighbors,
                      power_of_two_scale, prepare_metric, affinity as edge_affinity)
from ..threads import limit_threads
from ._boundary_refinement import refine_boundaries
from ._cluster_splits import SPLIT_RULES, split_outlasted_clusters
from ._markov_selection import chosen_labels, markov_stability_scan, select_partition
from ._null_model import intrinsic_dimension
from ._partition_quality import canonical_labels, strongest_members
from ._row_order import fitted_rows, lists_in_order, lists_order, rows_as_float64
from ._stability_hierarchy import COARSER_HINT, StabilityWarning, groups_for_c
from ._stability_io import StabilityFiles, scan_record
from ._density_walk import density_weighted
from ._feature_independence import codes_dependence
from ._stability_looks import FineTierLooks, looks_not_taken, replay
from ._stability_null import NullModelTests
from ._stability_predict import StabilityPredict
from ._stability_tables import BINARY_TABLES, COUNT_TABLES, LatentClassTables

__all__ = ["StabilityClustering", "StabilityWarning", "STABILITY_AFFINITIES"]

#: Affinities of the kNN lists `StabilityClustering` can use.
STABILITY_AFFINITIES = ("fuzzy", "jaccard", "local", "gaussian")


class StabilityClustering(FineTierLooks, NullModelTests, LatentClassTables, StabilityFiles,
                          StabilityPredict, ClusterMixin, BaseEstimator):
    """Clusters of points with c and scale chosen by Markov stability of the consistency walk.

    The number of clusters and the walk length are chosen from the data: the consensus of
    several fine Leiden partitions of the kNN graph (the pieces all runs agree on; disagreeing
    points absorbed) is merged by exact Markov-stability gains of the resolvent walk
    ``R_alpha = (1 - alpha)(I - alpha P)^-1`` (the papers' kernel U_alpha, read through its
    flows between clusters) at each mean walk length tau = alpha / (1 - alpha) = 1 .. 8192, and
    the partition is chosen in three tiers (`selection_rule_`):

    - ``"metastable"``: every cluster that splits a connected component mixes before the walk
      leaves it (t_esc > t_mix, Kannan-Vempala-Vetta); among those candidates the one that
      persists over the longest window of log tau wins, counted up to the walk's relaxation
      time (beyond it the optimum is the slowest modes' asymptotic split, found in any graph),
      ties to the most metastable;
    - ``"plateau"``: no metastable candidate (real classes often are not): the finest walk
      length whose partitions agree across seeds and persist over an octave, at a dip of that
      disagreement along the scan, and whose clusters hold the walk for that long (mean log
      escape time >= log tau);
    - ``"fine"``: neither; the partition at tau = 1 is returned with a warning, or one cluster
      (with a warning) when its seeds disagree. The warnings are `StabilityWarning`s.

    A connected component whose own walk has not relaxed by the last walk length (a spiral's
    arm) and that no consensus piece splits at a bottleneck is made whole in every candidate
    (`graphclust.cluster.select_partition`); a candidate of whole components is metastable.
    Every cluster of the chosen partition (of two or more consensus pieces) is scanned on its
    own subgraph, as if it were the data (a local choice of scale, as HDBSCAN's excess of mass
    makes it; a plateau's cluster that the walk leaves by the fit's own fine runs, no looks).
    Its own metastable or plateau choice splits it, unless the walk leaves the cluster within
    the scan and the metastable split does not outlast it whole (from its relaxation time
    until the walk leaves it) by one step of the scan. The split's adjacent
    parts are joined where Hartigan's dip test finds no density valley between them (along the
    graph's paths, or the line through their means where the paths are a few edges; the level
    is 0.05 over the number of clusters examined together, Bonferroni), and what remains must
    have parts of at least 2 n_neighbors points that the null model does not warn about. The
    parts of a split are examined in turn (`cluster_splits_`).

    When the scan finds no structure (the fine tier), it looks for what may hide the clusters
    (`_stability_looks`): in data of at most 3 intrinsic dimensions a background of noise that
    bridges them (Byers & Raftery's sparser background left out and scanned without, `noise_`;
    also on a choice of clusters when it spreads over the window, `_background_beside`), then,
    from 1.5 to 5 dimensions, density valleys, to which a kNN walk in few dimensions is
    nearly blind (the weights times (p_i p_j)^(g/2), g = 1 + 2/d: a Gaussian kernel's
    conductivity rho^2, `density_weighted`, `density_exponent_`; adjacent clusters that are no
    basins joined: `join_transient_pairs`). Either look's choice is kept only when the null
    model, its samples treated alike, passes it. When neither finds clusters, the clusters of
    the scan that are metastable sets at walk lengths of their own (``"multiscale"``: small
    blobs touching a large one that mixes beyond the scan) are kept, the rest being what they
    leave, if each is escaped more slowly than the null's tiles and what they leave is
    structureless (`_local_scales`). Else, when the fine tier's tiles are chance (the null model
    does not pass them) or its seeds disagree, a graph of two or more connected components
    returns them (``"components"``: the walk never leaves one, the scan's limit at tau =
    infinity, which it misses when a large component relaxes beyond its last walk length);
    both are a metastable choice's clusters, each scanned on its own, whole ones' gaps tested;
    a graph of one, its mutual kNN graph's large components, each whole (``"mutual"``; past
    chance cuts also the graph's, ``"whole components"``). Else, in two or three features,
    the density's cluster tree (``"density tree"``: HDBSCAN*'s clusters on the kNN graph's
    edges, `_density_tree`, if the null model passes them: a blob holding most of the mass
    beside small ones, which Markov stability's resolution limit hides at every walk
    length); a cluster whose own scan ends in the fine tier takes it too. Components of
    fewer than 2 n_neighbors points (far outliers, near-duplicates) are no structure: beside
    one component without any, the fit answers with the fine tier, as for that component
    alone, and warns.

    The returned partition is the consensus one at the chosen walk length, not one run's, so
    `random_state` does not decide c. The fit runs on the points in an order of their own
    (`canonical_order`; up to 20 000 points, `lists_order`: one for X, cX and X + b), maps
    every result back: permuting the rows of X permutes `labels_` and changes nothing else.
    Equal rows are one point of the fit, each copy labelled as its point (`fitted_rows`: but a
    point repeated more than n_neighbors times, a clique of its own in any kNN graph, keeps them).
    The chosen partition is tested against a null model (``null_model=True``): min(n, 1000) points
    uniform in the unit cube and as many Gaussian, in the data's intrinsic dimension
    (Levina-Bickel), through the same pipeline; clusters the walk does not escape 1.5 times as
    slowly as the stricter reference's tiles are named by a `StabilityWarning` (the partition is
    still returned). A cluster with no edge out (whole components of the graph) has no escape time;
    it is tested by the width of its gap instead, against the fifth widest gap of 99 structureless
    samples per reference in the dimension of the points it is measured in (`gap_ratio_`). One
    whose gap is not wider is joined to the cluster across its narrowest gap, with a warning (with
    `n_clusters` given, the warning only). Two- and three-feature euclidean clusters that pass,
    chosen without a background of noise, are tested again against points uniform on the data's own
    support, which keeps its shape (a band stays a band: support_agreement_). When they pass as a
    whole, each group of adjacent clusters that the walk escapes no more slowly than the support's
    partitions is tested alone, and joined into one cluster when it is chance cuts of its own shape
    with no density valley between its clusters (a ring beside a concentric ring cut into arcs). A
    warning also names a table of few-valued features (answers, ratings, counts) none of which
    depends on another (`_feature_independence`): independent features hold no classes.

    The default of `ConsistencyClustering` on points (``criterion="auto"``); see
    ``docs/model_selection.md`` for the measured table and the cases where it loses.

    Parameters
    ----------
    n_clusters : "auto" or int, 1 <= n_clusters <= n_samples, default "auto"
        "auto" chooses c; an int returns exactly that many clusters from the scan's hierarchy
        (`labels_at`'s rule: the scanned partition of that c, or the nearest finer one cut by
        the least-loss merges of Markov stability; more than the consensus pieces is out of
        reach, a warning then returns the pieces).
    n_neighbors : int >= 2, default 10
    affinity : {"fuzzy", "jaccard", "local", "gaussian"}, default "fuzzy"
        Edge weights of the kNN graph (`fuzzy_affinity`, `jaccard_affinity`, or
        `affinity(kind="local")` / ``kind="gaussian"`` at the median edge).
    metric : {"euclidean", "cosine"}, default "euclidean"
    n_seeds : int >= 1, default 3
        Fine Leiden partitions; their agreement is what the plateau tier measures.
    n_searches : int >= 1, default 3
        NN-descent searches merged point by point (above 20 000 points; below, exact lists).
    search_neighbors : int >= n_neighbors, optional
        Length of each searched list (the `n_neighbors` nearest kept), default n_neighbors.
        One search of 20 misses as few of MNIST's true 10 as three of 10, in two thirds of
        their time at 500 000 points, but moves more labels with the seed (docs/scaling.md).
    taus : sequence of float > 0, optional
        Mean walk lengths scanned (default 2^0 .. 2^13).
    plateau_vi : float >= 0, default 0.02
        Largest score (normalised VI of the seeds' merges to the consensus plus VI to the next
        octave) of a plateau; the plateau tier takes the finest local minimum of the scores
        along the scan at or below it.
    fine_vi_max : float >= 0, default 0.2
    outlier_threshold : float in (0, 1), default 0.01
        `predict` flags a new point whose outlier score (a p-value) is below it: 1 % of the
        training points would be flagged.
    settle_boundaries : bool, default False
        Move a plateau partition's boundary points by Markov-stability gains at 2 tau to a
        fixed point: steadier across `random_state`, at some NMI (USPS -0.004) and a cost
        that grows faster than n (10^6 points: 107 s; docs/model_selection.md).
    null_model : bool, default True
        The null-model tests above (two scans of at most 1 000 points, kept for later fits of
        the same size and dimension; the gap test's kNN graphs only when a cluster is a whole
        component).
    binary_tables, count_tables : {"latent_classes", "graph"}, {"multinomial", "graph"}
        A table whose every feature takes two values (answers, NaN missing; sparse presence /
        absence) is fitted by the latent class model (`LatentClassClustering`), sparse counts
        (documents x words) by a mixture of multinomials (`MultinomialMixtureClustering`), c
        by BIC, in `latent_classes_`; not by a graph: ahead on the development tables
        (docs/model_selection.md). "graph" fits them as points; `labels_at`, predict's tau
        and the scan are the graph's only.
    random_state : int, Generator or None
        Seeds the kNN searches (NN-descent above 20 000 points), the Leiden runs and the
        eigensolver; None draws fresh seeds (results may then differ between runs). The
        tests' reference draws (null model, gaps, dip tests, support samples) are a fixed
        table (`TEST_SEED`), which random_state does not move.
    verbose : bool, default False
        Progress lines on stderr.

    Attributes
    ----------
    labels_ : int array (n,)
        0..c-1 by first appearance in the fit's own order of the points: one partition is
        numbered alike for any row order of X and any thread count.
    n_clusters_ : int
    tau_, alpha_ : float or None
        The chosen mean walk length and alpha = tau / (1 + tau) (None for one cluster, for
        clusters at walk lengths of their own and for the graph's components).
    selection_rule_ : str
        The tier that chose: "metastable", "plateau", "fine", "multiscale", "components",
        "whole components", "mutual", "density tree", "none" (one cluster), "n_clusters" (c
        given) or "latent classes" (a binary table or counts, `binary_tables`,
        `count_tables`).
    metastability_ : float or None
        Largest metastability Q of the candidates.
    scan_ : dict
        ``taus``, ``alphas``, ``n_clusters`` and ``stability`` (n_taus x n_seeds: each run's own
        merge), ``vi`` (cross-seed VI per tau), ``consensus_n_clusters`` and
        ``consensus_stability`` (per tau, the partition returned), ``spread`` (mean VI of the runs
        to it), ``vi_next`` (its VI to the next tau's), ``metastability`` (per tau), ``groups``
        (n_taus x pieces: the cluster of each of `fine_labels_`' pieces per tau), ``flows`` (n_taus
        x pieces x pieces: the walk's flows between the pieces) and ``piece_mass`` (their
        stationary masses). `summary()` prints it as a table; `labels_at(tau=...)` or
        ``labels_at(n_clusters=...)`` returns any of its partitions without refitting.
    fine_labels_ : int array (n,)
        The consensus of the fine Leiden partitions (the pieces the scan merges).
    intrinsic_dimension_ : float
        Levina-Bickel estimate from the kNN distances.
    escape_time_, null_escape_time_ : float or None
        Mass-weighted mean of log(vol(C) / cut(C)) over the chosen clusters, and the null
        model's value for tiles of the same size, the stricter of its two references (None
        when not computed).
    gap_ratio_, null_gap_ratio_ : float or None
        For whole components of the graph (no escape time; a chance one is joined across its
        gap), or of a curve's kNN graph kept to the edges along the tangents: the gap nearest
        to its null, the bridge's length over the wider median k-th neighbour distance of
        the components it joins, and the fifth widest such ratio of 99 structureless samples
        per reference in its points' dimension (`cluster._gap_null`), or 1 for curves that
        edges across them join (`_tangent_gaps`). None when no cluster is judged so.
    dip_, dip_pvalue_ : float or None
        One-dimensional euclidean points only (None otherwise, and for one cluster):
        Hartigan's dip of the sample and its p-value against uniform samples
        (`cluster._dip_test`). At p >= 0.05 the sample is unimodal for the test and the
        clusters come with a StabilityWarning: a 1-D kNN walk splits at chance gaps, not at
        density valleys.
    support_agreement_ : float or None
        Adjusted Rand index of the clusters with a support sample's as slowly escaped partition
        (`cluster._support_null`). Below 0.75 they are chance cuts of the shape, with a
        warning, when the walk escapes them no more slowly than the support's partitions, or
        more slowly only by what a chance partition's sparse spots give and with no density
        valley between any two of them.
    representatives_ : int array (n_clusters_,)
        Each cluster's point of largest within-cluster degree (its largest stationary mass of
        the walk restricted to the cluster).
    training_scores_ : array (n,)
        Inlierness (fuzzy degree) of each training point, sorted, for the outlier p-values.
    n_features_in_ : int
    cluster_splits_ : list of dict
        One record per cluster scanned on its own (see above; clusters of one consensus piece
        are not): its ``size``, whether it is a whole connected ``component``, the ``rule``
        and ``tau`` of its own scan's choice, and ``c``, the clusters it was split into (1:
        kept whole). Rule "shorter": a metastable split that does not outlast the cluster
        whole, which the walk leaves within the scan (a component's: judged by its valleys);
        "unimodal": no density valley between any two adjacent parts; "small": a part of
        fewer than 2 n_neighbors points; "weak": the null model warns; "shape": the fine tier's
        looks cut 2-3-feature points where a uniform sample of their support is not cut;
        "agreement": a plateau's cluster's own plateau where its runs do not agree. Empty
        when none was scanned (the fine tier; clusters of the points left by a background).
    noise_ : bool array (n,)
        The points left out of the scan as a background of noise (all False unless the rest's
        scan found clusters where the whole data's found none or the noise is spread; above).
    density_exponent_ : float or None
        g when the clusters come from the walk weighted by density (see above; `scan_` and
        `fine_labels_` are then that walk's), else None.
    timings_ : dict of seconds per stage
    latent_classes_ : LatentClassClustering, MultinomialMixtureClustering or None
        The model of a binary table or of counts (the graph's attributes above are then None
        or trivial), else None.

    Examples
    --------
    >>> import graphclust as gc
    >>> X, y = gc.datasets.three_moons(600, random_state=0)
    >>> model = gc.StabilityClustering(random_state=0).fit(X)
    >>> model.n_clusters_, model.selection_rule_, gc.metrics.clustering_error(y, model.labels_)
    (3, 'metastable', 0.0)
    >>> labels, score = model.predict(X[:2] + 20.0, return_outlier_score=True)
    >>> bool((score < model.outlier_threshold).all())
    True
    """

    def __init__(self, n_clusters="auto", *, n_neighbors=10, affinity="fuzzy", metric="euclidean",
                 n_seeds=3, n_searches=3, search_neighbors=None, taus=None, plateau_vi=0.02,
                 fine_vi_max=0.2, outlier_threshold=0.01, settle_boundaries=False,
                 null_model=True, binary_tables="latent_classes", count_tables="multinomial",
                 random_state=None, verbose=False):
        self.n_clusters, self.n_neighbors, self.affinity = n_clusters, n_neighbors, affinity
        self.metric, self.n_seeds, self.n_searches, self.taus = metric, n_seeds, n_searches, taus
        self.search_neighbors = search_neighbors
        self.plateau_vi, self.fine_vi_max = plateau_vi, fine_vi_max
        self.outlier_threshold, self.settle_boundaries = outlier_threshold, settle_boundaries
        self.null_model, self.random_state, self.verbose = null_model, random_state, verbose
        self.binary_tables, self.count_tables = binary_tables, count_tables

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR input (text, metric="cosine")
        return tags

    # ------------------------------------------------------------------ validation
    def _check_params(self):
        if not (isinstance(self.n_clusters, str) and self.n_clusters == "auto"):
            check_int(self.n_clusters, "n_clusters", low=1)
        check_int(self.n_neighbors, "n_neighbors", low=2)
        check_option(self.affinity, "affinity", set(STABILITY_AFFINITIES))
        check_option(self.metric, "metric", {"euclidean", "cosine"})
        check_option(self.binary_tables, "binary_tables", set(BINARY_TABLES))
        check_option(self.count_tables, "count_tables", set(COUNT_TABLES))
        check_int(self.n_seeds, "n_seeds", low=1)
        check_int(self.n_searches, "n_searches", low=1)
        if self.search_neighbors is not None:
            check_int(self.search_neighbors, "search_neighbors", low=int(self.n_neighbors))
        if self.taus is not None:
            t = float_sequence(self.taus, "taus")
            if t.size == 0 or not np.all(np.isfinite(t)) or (t <= 0).any():
                raise ValueError(f"taus must be a non-empty sequence of finite numbers > 0; "
                                 f"got {self.taus!r}.")
        check_real(self.plateau_vi, "plateau_vi", low=0)
        check_real(self.fine_vi_max, "fine_vi_max", low=0)
        check_real(self.outlier_threshold, "outlier_threshold", low=0, high=1,
                   low_inclusive=False, high_inclusive=False)
        for name in ("null_model", "settle_boundaries", "verbose"):
            check_flag(getattr(self, name), name, levels=name == "verbose")
        check_seed(self.random_state)

    def _seed(self):
        rs = self.random_state
        if rs is None:
            return None
        if isinstance(rs, np.random.Generator):
            return int(rs.integers(2**31 - 1))
        return int(rs) if isinstance(rs, (int, np.integer)) else int(rs.randint(2**31 - 1))

    def fit(self, X, y=None):
        """Cluster the points `X` (n, d) (a CSR matrix with ``metric="cosine"``).

        Returns
        -------
        self
        """
        self._check_params()
        X, missing = self._checked_points(X)  # one copy below; NaN: a binary table's only
        n = X.shape[0]
        if not isinstance(self.n_clusters, str) and self.n_clusters > n:
            raise ValueError(f"n_clusters must satisfy 1 <= n_clusters <= n_samples = {n}; "
                             f"got {self.n_clusters}.")
        if n < 3:
            raise ValueError(f"StabilityClustering needs at least 3 samples (each point's "
                             f"n_neighbors >= 2 nearest others); got {n}.")
        k = check_neighbors(self, n, low=2)
        self.latent_classes_ = None
        kind = self._table_kind(X, missing)  # a table of codes or of counts: no graph
        if kind is not None:
            return self._fit_latent_classes(X, kind)
        c = None if isinstance(self.n_clusters, str) else self.n_clusters
        rows, owner = fitted_rows(X, k, c)  # in an order of their own; equal rows one point
        self._codes = codes_dependence(X) if self.null_model else None  # codes: dependent?
        Xo = X[rows] if sp.issparse(X) else rows_as_float64(X, rows)  # kept for predict
        if self.metric == "euclidean":  # cosine (text) weighs terms on purpose
            warn_feature_scales(Xo)
        with limit_threads(), self._density_walk(None):  # the walk's weighting ends here
            Xo, again = self._fit(Xo, k)  # in the exact lists' own order, if any
        self._tangents = None  # the fit's tangents (`_tangent_keep`), not the model's
        at = owner if again is None else np.argsort(again)[owner]  # each row's fitted point
        self._restore_order(rows if again is None else rows[again], at, Xo)
        return self

    def _restore_order(self, rows, at, Xo):
        """Every per-point result of a fit on ``Xo = X[rows]`` back in the rows' order of X:
        row i takes fitted point at[i]'s (equal rows share one).

        predict's training points and kNN lists stay in the fit's order, `_fit_order` (rows)
        maps the neighbours it finds back: no second copy of the points (400 MB at 10^6 x 50,
        whose fresh pages took 1.5 s), and predict's search too is the same for any row order.
        """
        self.labels_, self.fine_labels_, self.noise_ = (self.labels_[at], self.fine_labels_[at],
                                                        self.noise_[at])
        self.representatives_ = rows[self.representatives_]
        self.rho_, self.sigma_ = self.rho_[at], self.sigma_[at]
        # prepare_metric works row by row, the scale is the largest magnitude: X's numbers in
        # the fit's order. Xo is the fit's own copy (or prepare_metric's): scaled in place.
        Xm = prepare_metric(Xo, self.metric)
        self._scale = power_of_two_scale(Xm)
        values = Xm.data if sp.issparse(Xm) else Xm
        values /= self._scale  # in place
        self._X_fit, self._fit_order = Xm, rows
        self._index()

    def _fit(self, X, k):
        progress = Progress(bool(self.verbose))
        seed = self._seed()
        n = X.shape[0]
        self.n_features_in_ = X.shape[1]
        self.timings_, self.cluster_splits_ = {}, []
        t0 = time.perf_counter()
        with progress.step(f"{k}-NN lists of {n} points"):
            idx, dist = nearest_neighbors(X, k, metric=self.metric, random_state=seed,
                                          n_searches=int(self.n_searches),
                                          search_neighbors=self.search_neighbors)
        again = None if n > EXACT_SEARCH_MAX_SAMPLES else lists_order(idx, dist)
        X, idx, dist = (X, idx, dist) if again is None else lists_in_order(X, idx, dist, again)
        self.timings_["knn"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.rho_, self.sigma_ = fuzzy_scales_of_lists(dist)  # the fuzzy weights' and predict's
        W = self._weights(idx, dist, k, scales=(self.rho_, self.sigma_))
        self.timings_["affinity"] = time.perf_counter() - t0
        self._fit_predict_state(idx, dist)
        with progress.step("Markov-stability scan"):
            scan = markov_stability_scan(W, taus=self.taus, n_seeds=int(self.n_seeds),
                                         random_state=seed, progress=progress.note)
        self.timings_.update(scan["timings"])
        t0 = time.perf_counter()
        auto = isinstance(self.n_clusters, str)
        # a given n_clusters reads the scan's own hierarchy, not the one with whole components
        j, rule = select_partition(scan, W, plateau_vi=float(self.plateau_vi), coarsen=auto)
        self.timings_["select"] = time.perf_counter() - t0
        given = None
        if not auto:  # exactly c: the scan's partition, or the nearest finer one cut to c
            j, given = groups_for_c(scan["consensus_c"], scan["consensus_groups"],
                                    scan["flows"], scan["piece_mass"], int(self.n_clusters))
            rule = "n_clusters"
        self._store_scan(scan)
        chosen = chosen_labels(scan, j, rule, self.fine_vi_max) if given is None else None
        self.intrinsic_dimension_ = intrinsic_dimension(dist)  # the null model's and the noise's
        points = self._shape_points(X)  # what the tests of a shape read (an isometry of X)
        self.density_exponent_ = None
        # a background of noise or valleys of the density may hide the structure
        looks = self._second_looks(W, dist, seed, points, progress, rule) if auto else None
        untried = looks_not_taken(looks)  # those a choice of chance cuts takes
        choice = (j, rule, chosen, given)
        with warnings.catch_warnings(record=True) as said:  # told once the choice is final
            warnings.simplefilter("always", StabilityWarning)
            found = self._concluded(idx, dist, W, scan, choice, looks, points, seed, k, progress)
        if auto and untried and self._weak:  # chance cuts of the data's shape: look again
            found, said = self._past_chance_cuts(
                found, said, W, dist, seed, points, progress, untried,
                lambda found, other: self._concluded(idx, dist, W, scan, other or choice, found,
                                                     points, seed, k, progress))
        replay(said)
        labels, W = found  # W: the walk the clusters were found on (the density's, if so)
        self.labels_, self.n_clusters_ = labels, int(labels.max()) + 1
        self.representatives_ = strongest_members(W, labels)
        progress.note(f"{self.n_clusters_} clusters ({self.selection_rule_}, tau = {self.tau_})")
        return X, again

    def _concluded(self, idx, dist, W, scan, choice, looks, points, seed, k, progress):
        """``(labels, W)`` of the fit from the tiers' ``choice = (j, rule, chosen, given)`` or,
        where the `looks` (background, density) found clusters, from theirs; then each chosen
        cluster's own scan (`split_outlasted_clusters`) and the null model, which sets `_weak`
        when it calls the clusters chance. On the fine tier's tiles with no look finding
        anything: the multiscale and components choices. W is the graph of the walk the
        clusters were found on (the density walk's, when that look found them)."""
        (j, rule, chosen, given), n = choice, W.shape[0]
        background, density = (None, None) if looks is None else looks
        self.noise_, self._noise_separate, self.cluster_splits_ = np.zeros(n, bool), True, []
        local = components = tree = tau = None
        if looks is not None and rule == "fine" and background is None and density is None:
            with progress.step("clusters metastable at walk lengths of their own"):
                local = self._local_choice(W, scan, chosen, dist)
            if local is None:  # the graph's components, when the fine tier's tiles are chance
                components = self._components_choice(W, chosen, dist, points)
            if local is None and components is None:  # the modes of the density
                with progress.step("the density's cluster tree"):
                    tree = self._tree_choice(W, dist, points)
        if background is not None:  # their own scan's choice, the noise absorbed by the walk
            chosen, rule, tau, self.noise_, self._noise_separate = background
            progress.note(f"{int(self.noise_.sum())} points of a background of noise left out "
                          f"of the scan and placed by the walk")
        elif density is not None:  # the rest of the fit (splits, null model) on its walk
            chosen, rule, tau, W, walk, scan = density
            self.density_exponent_, self._walk_density = walk[1], walk  # reset by `fit`
            self._store_scan(scan)  # the hierarchy the clusters came from
            progress.note(f"the walk weighted by density (p_i p_j)^{walk[1] / 2:.2f} finds "
                          f"{int(chosen.max()) + 1} clusters")
        elif local is not None:  # each cluster at its own walk length: no one walk length
            chosen, rule, tau = local, "multiscale", None
        elif components is not None:  # the scan's limit at tau = infinity: no walk length
            (chosen, rule), tau = components, None
            progress.note(f"the fine tier's tiles are chance: {int(chosen.max()) + 1} connected "
                          f"components of the {'mutual kNN ' if rule == 'mutual' else ''}graph")
        elif tree is not None:  # the density's modes: no walk length
            chosen, rule, tau = tree, "density tree", None
            progress.note(f"the density's cluster tree has {int(chosen.max()) + 1} clusters")
        elif j is not None:
            tau = float(scan["taus"][j])
        if given is None and chosen is None:
            why = ("no partition into 2 or more internally connected clusters was found"
                   if j is None else
                   f"no walk length gives a metastable or persistent partition, and the "
                   f"modularity partitions of different seeds disagree (normalised VI "
                   f"{scan['fine_vi']:.2f} > fine_vi_max={self.fine_vi_max})")
            warnings.warn(f"no cluster structure found: {why}; returning one cluster.",
                          StabilityWarning)
            labels, self.tau_, self.alpha_ = np.zeros(n, dtype=np.int64), None, None
            self.selection_rule_ = "none"
        else:
            labels = np.asarray(chosen if given is None else given[scan["pieces"]], np.int64)
            self.tau_, self.alpha_ = tau, None if tau is None else tau / (1.0 + tau)
            self.selection_rule_ = rule
            if rule == "plateau" and self.settle_boundaries:  # the plateau holds to 2 tau
                t0 = time.perf_counter()
                with progress.step(f"boundaries at tau = {2 * self.tau_:g}"):
                    labels = refine_boundaries(W, labels, 2 * self.tau_ / (1 + 2 * self.tau_))[0]
                self.timings_["refine"] = time.perf_counter() - t0
            # each cluster by its own scan; a plateau's cluster that the walk leaves from the fine
            # runs restricted to it (runs of its own cost more than the fit: docs/battery.md)
            if rule in (*SPLIT_RULES, "components"):
                t0 = time.perf_counter()
                labels, self.cluster_splits_ = split_outlasted_clusters(
                    W, labels, scan["pieces"], lambda Wc, members, esc, level:
                    self._own_split_choice(Wc, members, points, dist, seed, esc, level, fine=(
                        [f[members] for f in scan["fine"]]
                        if rule == "plateau" and np.isfinite(esc) else None)))
                self.timings_["splits"] = time.perf_counter() - t0
            tiles = self._outlier_groups_choice(W, labels, scan, k)  # beside small groups
            if tiles is not None:  # and nothing else: the fine tier's answer, as if alone
                labels, self.tau_, self.alpha_, self.selection_rule_ = tiles, 1.0, 0.5, "fine"
        # by first appearance in the fit's own order, not the merges' (rounding moves those)
        labels = canonical_labels(labels)  # the support test's pairs are one-ended: i < j
        self._null_failed = self._weak = False  # below: `_null_test`'s, for 2 or more clusters
        self.escape_time_ = self.null_escape_time_ = self.support_agreement_ = None
        self.gap_ratio_ = self.null_gap_ratio_ = self.dip_ = self.dip_pvalue_ = None
        # every tier: on a small or low-dimensional sample one blob's chance gaps pass KVV's test
        if labels.max() >= 1:
            t0 = time.perf_counter()
            with progress.step("null model (uniform and Gaussian data of the same intrinsic "
                               "dimension)"):
                labels = self._null_test(points, idx, dist, W, labels, progress.note)
            self.timings_["null"] = time.perf_counter() - t0
        if self.selection_rule_ == "fine" and not getattr(self, "_null_failed", False):
            warnings.warn(
                f"no walk length gives a metastable or persistent partition; returning the "
                f"modularity partition of the graph merged at tau = 1 ({int(labels.max()) + 1} "
                f"clusters, normalised VI between seeds {scan['fine_vi']:.2f}): the data may "
                f"have no clear cluster structure at this number of neighbours. {COARSER_HINT}",
                StabilityWarning)
        return labels, W

    def _scan_choice(self, W0, seed, keep_quadrature=False, fine=None):
        """The fit's own scan and tiers on W0, (labels or None, rule, tau, scan); with `fine` (a
        plateau's check) it merges those runs instead of Leiden runs of its own."""
        scan = markov_stability_scan(W0, taus=self.taus, n_seeds=int(self.n_seeds),
                                     random_state=seed, keep_quadrature=keep_quadrature, fine=fine)
        j, rule = select_partition(scan, W0, plateau_vi=float(self.plateau_vi))
        tau = None if j is None else float(scan["taus"][j])
        return chosen_labels(scan, j, rule, self.fine_vi_max), rule, tau, scan

    def _weights(self, idx, dist, k, scales=None):
        W = self._affinity_weights(idx, dist, k, scales)
        walk = getattr(self, "_walk_density", None)  # inside `_density_walk`: the null samples
        return W if walk is None else density_weighted(W, dist[:, -1], *walk)

    def _affinity_weights(self, idx, dist, k, scales):
        # from the directed lists themselves: a Graph's rows cannot tell which of several
        # duplicates (distance 0, tied) were in a point's list
        if self.affinity == "fuzzy":
            return fuzzy_affinity_from_lists(idx, dist, scales=scales)
        if self.affinity == "jaccard":
            return jaccard_affinity_from_lists(idx)
        graph = knn_graph_from_neighbors(idx, dist, provenance={
            "builder": "knn_graph", "n_neighbors": k, "metric": self.metric})
        return edge_affinity(graph, kind=self.affinity)

    def _store_scan(self, scan):
        self.scan_, self.metastability_, self.fine_labels_ = scan_record(scan)

    # ------------------------------------------------------------------ the hierarchy
    def labels_at(self, *, tau=None, n_clusters=None):
        """The scanned partition at walk length `tau`, or exactly `n_clusters` clusters from it.

        The scan merges the same consensus pieces (`fine_labels_`) at every walk length, so
        each of its partitions is kept as a grouping of the pieces and read here without
        refitting: a coarser or finer view than the one chosen, e.g. when the number of
        classes is known roughly. At the chosen walk length `tau_` it is `labels_` itself
        (under the plateau tier the coarsest of the near-ties there), unless the gap test
        joined clusters across chance gaps (a warning says so) or, on the walk that sees
        density, adjacent clusters that are no basins of it. When a cluster was split by its
        own scan (`cluster_splits_`), `labels_` is not one of the scan's partitions, and
        `tau_` gives the scan's own partition there. `summary` prints the scan they come from.

        Parameters
        ----------
        tau : float, optional
            One of ``scan_["taus"]``.
        n_clusters : int >= 1, optional
            Exactly that many clusters: the scan's partition of that c (the shortest walk
            length among several), else the nearest finer one (fewest clusters above it) cut
            to c at its walk length by the merges that lose the least Markov stability, else
            (finer than every walk length) the pieces merged to c at the shortest. More than
            the pieces (`fine_labels_`) is out of reach: a `StabilityWarning`, and the pieces.
            Give exactly one of `tau` and `n_clusters`.

        Returns
        -------
        labels : int array (n,)
            Cluster of each training point, 0..c-1, in the rows' order of the X fitted.

        Examples
        --------
        >>> import graphclust as gc
        >>> X, y = gc.datasets.three_moons(600, random_state=0)
        >>> model = gc.StabilityClustering(random_state=0).fit(X)
        >>> bool((model.labels_at(tau=model.tau_) == model.labels_).all())
        True
        >>> int(model.labels_at(tau=1).max()) + 1 >= model.n_clusters_
        True
        """
        return self._scan_labels(tau=tau, n_clusters=n_clusters)

    def summary(self):
        """The scan as a table: per walk length, c and the numbers the tiers chose by.

        Columns: the mean walk length tau; the consensus partition's number of clusters c and
        its Markov stability; the mean normalised VI of the seeds' own merges to it and its VI
        to the next walk length's (the plateau tier's score is their sum; blank when that tier
        was not reached); its metastability Q (the first tier: finite when every cluster mixes
        before the walk leaves it, "inf" when every cluster is a whole connected component,
        "fails" when one does not mix first, "-" when not computed). The chosen row is marked.
        `labels_at` returns any row's partition. When clusters were scanned on their own
        (`cluster_splits_`), a second table lists them: their points, whether each was a whole
        component, its own scan's rule and tau, and the clusters it became.

        Returns
        -------
        str

        Examples
        --------
        >>> import graphclust as gc
        >>> X, y = gc.datasets.three_moons(600, random_state=0)
        >>> model = gc.StabilityClustering(random_state=0).fit(X)
        >>> print(model.summary().splitlines()[0])
        StabilityClustering: 3 clusters of 600 points (metastable tier, tau = 512)
        """
        return self._scan_summary()
