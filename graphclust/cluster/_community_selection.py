"""Choosing among candidate partitions of a graph by edge cross-validation.

`CommunityDetection(method="auto")` proposes several partitions (Leiden-ML, the Bethe Hessian's,
Leiden-ML started from it). Which is closest to the communities that generated the graph is a
question of *recovery*, not of compression: the description length (`description_length`)
prefers the partition that codes the graph in fewest nats, and where the communities are weak it
prefers a coarse partition whose few labels are cheap to write down (LFR n = 1 000, mu = 0.6: 4
groups, NMI 0.12, against Leiden-ML's 56 groups, NMI 0.34; docs/applications.md).

Edge cross-validation (Li, Levina & Zhu, Biometrika 107, 2020; Chen & Lei, JASA 113, 2018)
asks instead which *procedure* finds structure that generalises to links it has not seen. The
edges are split into `n_folds` folds; for each fold every candidate procedure is rerun on the
graph without the fold's edges (with its number of communities held at its value on the full
graph when the procedure is given one: the model is chosen, the fit is redone), and scored on the
held-out edges by its *held-out information* (`heldout_information`): the log-likelihood ratio,
on the held-out edges, of the planted-partition model against the configuration model, with the
two affinities w_in, w_out refitted to the held-out edges, i.e. m_test KL(f || s) with f the
fraction of held-out edge weight inside communities and s the fraction the configuration model
expects, sum_r kappa_r^2 / (2m)^2 (training degrees). It is 0 when f <= s. The affinities are
refitted because a partition tuned to its training edges always overstates w_in (in-sample), and
that overstatement, not the partition's correlation with unseen links, would otherwise decide.

`select_partition`: a candidate is eligible when its held-out information is more than a
partition without generalising structure gives (it finds structure at all): each fold's 2 I is
then a one-sided likelihood ratio, 0 or chi-squared with one degree of freedom with probability
1/2 each (chi-bar-squared; Self & Liang, JASA 82, 1987), and the folds' sum is tested against
the sum of as many (`heldout_pvalue`) at `ELIGIBLE_LEVEL`. The eligible candidate of largest total
held-out information wins; when none is eligible (no structure that generalises, e.g. a sparse
block model below its detectability threshold) the smallest description length decides. (A
z-test of the folds' mean, the rule before, took a non-negative statistic's positive mean for
signal: on a block model below its threshold, Leiden-ML's 430 groups with 0-0.1 nats a fold
passed it in 3 of 30 node orders; docs/applications.md.)

`CommunityDetection` calls this only when the smallest description length is the coarser (fewer
communities) of the best Leiden-ML and the best spectral candidate: the description length's
label cost (about ln K nats a node) biases it towards too few communities, never too many.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .._validation import check_int, check_random_state

__all__ = ["ELIGIBLE_LEVEL", "cross_validate_partitions", "edge_folds", "heldout_information",
           "heldout_pvalue", "select_partition"]

#: Level of the test that a candidate's held-out information is above what no structure gives
#: (one-sided; the z = 2 of the rule before).
ELIGIBLE_LEVEL = 0.025

#: Level of the same test in the race's stop (repeated after every fold: z = 3's level).
RACE_LEVEL = 0.00135


def edge_folds(A, n_folds, random_state=None):
    """The undirected edges of `A` split at random into `n_folds` folds of equal size (+-1).

    Returns
    -------
    rows, cols : int arrays (m,)
        Endpoints of each edge (i < j; self-loops are not held out).
    weights : float array (m,)
    fold : int array (m,)
        Fold of each edge, 0..n_folds-1.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from graphclust.cluster._community_selection import edge_folds
    >>> A = nx.to_scipy_sparse_array(nx.karate_club_graph(), weight=None)
    >>> rows, cols, w, fold = edge_folds(A, 10, random_state=0)
    >>> rows.size, np.bincount(fold).tolist()
    (78, [8, 8, 8, 8, 8, 8, 8, 8, 7, 7])
    """
    check_int(n_folds, "n_folds", low=2)
    upper = sp.triu(sp.csr_matrix(A, dtype=np.float64), 1).tocoo()
    rng = check_random_state(random_state)
    fold = rng.permutation(upper.nnz) % n_folds
    return upper.row.astype(np.int64), upper.col.astype(np.int64), upper.data, fold


def _without(A_upper, keep, n):
    """Symmetric CSR adjacency of the kept upper-triangle edges (plus `A`'s diagonal)."""
    rows, cols, w, diag = A_upper
    T = sp.coo_matrix((w[keep], (rows[keep], cols[keep])), shape=(n, n))
    return (T + T.T + diag).tocsr()


def heldout_information(train, labels, rows, cols, weights):
    """Held-out information (nats) of a partition fitted on `train` about held-out edges.

    I = m_test [f ln(f / s) + (1 - f) ln((1 - f) / (1 - s))] when f > s, else 0: the
    log-likelihood ratio on the held-out edges (rows[e], cols[e], weights[e]) of the
    degree-corrected planted partition (affinities refitted to them) against the configuration
    model, with f = the held-out weight inside communities / m_test, s = sum_r kappa_r^2 /
    (2m)^2 (kappa_r the total `train` degree of community r), m_test = weights.sum(). Under a
    partition independent of the held-out edges, 2 I is about chi-squared with one degree of
    freedom (half the time 0).

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from graphclust.cluster._community_selection import heldout_information
    >>> two_triangles = sp.csr_matrix(np.kron(np.eye(2), np.ones((3, 3))) - np.eye(6))
    >>> labels = np.array([0, 0, 0, 1, 1, 1])
    >>> round(heldout_information(two_triangles, labels, np.array([0, 3]), np.array([1, 4]),
    ...                           np.ones(2)), 4)  # 2 ln 2: both inside, half expected
    1.3863
    """
    labels = np.asarray(labels)
    weights = np.asarray(weights, dtype=np.float64)
    m_test = float(weights.sum())
    d = np.asarray(train.sum(axis=1)).ravel()
    two_m = float(d.sum())
    if m_test <= 0 or two_m <= 0:
        return 0.0
    kappa = np.bincount(labels, weights=d)
    s = float(kappa @ kappa) / (two_m * two_m)
    f = float(weights[labels[rows] == labels[cols]].sum()) / m_test
    if f <= s or s >= 1.0:
        return 0.0
    info = f * np.log(f / s)
    if f < 1.0:
        info += (1.0 - f) * np.log((1.0 - f) / (1.0 - s))
    return float(m_test * info)


def heldout_pvalue(info):
    """P-value of held-out information `info` (nats, one value per fold) under a partition with
    no structure that generalises.

    Each fold's 2 I is then 0 or chi-squared(1) with probability 1/2 each, the folds
    independent (their held-out edges are disjoint), so with T = 2 sum I over F folds
    ``P(T' >= T) = sum_k C(F, k) 2^-F P(chi2_k >= T)``. 1 when T <= 0.

    Examples
    --------
    >>> import numpy as np
    >>> round(heldout_pvalue(np.array([0.0, 0.1, 0.07, 0.0, 0.06])), 3)  # noise-sized
    0.8
    >>> heldout_pvalue(np.array([5.0, 6.0, 7.0])) < 1e-6
    True
    """
    from scipy.stats import binom, chi2

    info = np.asarray(info, dtype=np.float64)
    t, folds = 2.0 * float(info.sum()), info.size
    if t <= 0 or folds == 0:
        return 1.0
    k = np.arange(1, folds + 1)
    return float(np.sum(binom.pmf(k, folds, 0.5) * chi2.sf(t, k)))


def _settled(scores, z):
    """Whether the leader carries information (`heldout_pvalue` below `RACE_LEVEL`) and is
    ahead of every other candidate by `z` standard errors of the paired differences over
    the folds done."""
    names = list(scores)
    mean = {c: scores[c].mean() for c in names}
    lead = max(names, key=mean.get)

    def zscore(v):
        se = v.std(ddof=1) / np.sqrt(v.size)
        return np.inf if se == 0 and v.mean() > 0 else v.mean() / max(se, 1e-300)

    return heldout_pvalue(scores[lead]) < RACE_LEVEL and all(
        zscore(scores[lead] - scores[c]) > z for c in names if c != lead)


def cross_validate_partitions(A, procedures, n_folds=10, random_state=None, *,
                              early_stop=(3, 3.0)):
    """Held-out information of each partition procedure on each fold of the edges.

    Parameters
    ----------
    A : sparse matrix (n, n)
        Symmetric adjacency.
    procedures : dict name -> callable(train, seed, cache) -> labels
        Each procedure partitions a training adjacency; `cache` is a dict shared by the
        procedures within one fold (a procedure may reuse another's partition of the same
        training graph), `seed` an int.
    n_folds : int, default 10
    random_state : int, Generator or None
    early_stop : (int, float) or None, default (3, 3.0)
        (min_folds, z): after at least min_folds folds, stop when the candidate of largest mean
        is above zero and ahead of every other by more than z standard errors of the paired
        differences (a race, Maron & Moore 1994; z = 3 rather than 2 because the test is
        repeated after every fold). None: all folds.

    Returns
    -------
    dict name -> float array (folds done,)
        `heldout_information` of the procedure's partition of each fold's training graph.

    Examples
    --------
    >>> import networkx as nx, numpy as np
    >>> from graphclust.cluster import leiden
    >>> from graphclust.cluster._community_selection import cross_validate_partitions
    >>> A = nx.to_scipy_sparse_array(nx.planted_partition_graph(4, 30, 0.4, 0.02, seed=1))
    >>> info = cross_validate_partitions(A, {
    ...     "leiden": lambda train, seed, cache: leiden(train, random_state=seed),
    ...     "one group": lambda train, seed, cache: np.zeros(120, int)}, random_state=0)
    >>> bool(info["leiden"].min() > 0), float(info["one group"].max())
    (True, 0.0)
    """
    A = sp.csr_matrix(A, dtype=np.float64)
    n = A.shape[0]
    rng = check_random_state(random_state)
    rows, cols, w, fold = edge_folds(A, n_folds, rng)
    upper = (rows, cols, w, sp.diags(A.diagonal()))
    seeds = rng.integers(0, 2**31 - 1, size=n_folds)
    scores = {name: np.zeros(n_folds) for name in procedures}
    for f in range(n_folds):
        test = fold == f
        train = _without(upper, ~test, n)
        cache = {}
        for name, proc in procedures.items():
            labels = np.asarray(proc(train, int(seeds[f]), cache))
            scores[name][f] = heldout_information(train, labels, rows[test], cols[test],
                                                  w[test])
        if early_stop is not None and f + 1 >= max(2, early_stop[0]) and f + 1 < n_folds:
            done = {c: v[:f + 1] for c, v in scores.items()}
            if _settled(done, early_stop[1]):
                return done
    return scores


def select_partition(heldout, description_lengths, level=ELIGIBLE_LEVEL):
    """The candidate chosen from its held-out information (see the module notes).

    Eligible: `heldout_pvalue` of its folds below `level`. Among the eligible, the largest
    total held-out information wins (ties: smaller description length); none eligible: the
    smallest description length.

    Returns
    -------
    name : str
    eligible : list of str

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.cluster._community_selection import select_partition
    >>> heldout = {"a": np.array([5.0, 6, 7]), "b": np.array([1.0, -1, 0]), "c": np.zeros(3)}
    >>> select_partition(heldout, {"a": 30.0, "b": 10.0, "c": 20.0})
    ('a', ['a'])
    >>> select_partition({"b": heldout["b"], "c": heldout["c"]}, {"b": 10.0, "c": 20.0})
    ('b', [])
    """
    eligible = [name for name, v in heldout.items() if heldout_pvalue(v) < level]
    if not eligible:
        return min(description_lengths, key=description_lengths.get), eligible
    best = max(eligible, key=lambda c: (float(np.sum(heldout[c])), -description_lengths[c]))
    return best, eligible
