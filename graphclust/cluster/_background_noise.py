"""Points of a uniform background of noise: Byers & Raftery's nearest-neighbour clutter removal.

The fuzzy kNN graph under `StabilityClustering` gives every point the same total weight
(UMAP's local connectivity), so the walk does not see density. A background of noise points (a
sprinkle over the whole region, as in the chameleon sets) then bridges every pair of clusters
as firmly as the clusters hold together, and no walk length finds them metastable. Without the
noise points the same fit finds them (docs/battery.md, *Built: a background of noise*).

Byers & Raftery (1998, *Nearest-neighbor clutter removal for estimating features in spatial
point processes*, JASA 93:577-584) read the points as two homogeneous Poisson processes:
features of intensity lambda_f and clutter of lambda_c < lambda_f. In a Poisson process of
intensity lambda in d dimensions, lambda times the volume of the ball out to the k-th nearest
neighbour is Gamma(k, 1), so ``z = D_k^d`` is Gamma with shape k and rate proportional to
lambda. The mixture of the two Gammas (shape known, the weight and both rates free) has a
closed-form EM step; a point is clutter when the sparse component's posterior exceeds 1/2. d is
the intrinsic dimension of the same lists (Levina-Bickel), so points on a manifold are judged
in its dimension, not the ambient one.

The model always finds a sparser component, background or not (on data without noise it is
the fringe of the clusters: 17 % of the papers' two moons). `StabilityClustering` therefore
leaves it out only when its scan of all the points finds no structure, and keeps what the scan
of the rest finds only when the null model passes it (`FineTierLooks._background_choice`);
`background_noise` gives the mask to a user who knows the data has a background.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._validation import check_int, check_points, check_real, check_seed
from ..kernels import deflated_cg
from ._null_model import intrinsic_dimension

__all__ = ["BACKGROUND_MAX_DIMENSION", "BACKGROUND_MAX_ERROR", "BACKGROUND_MIN_SPREAD",
           "NoiseModelWarning", "absorbed_labels", "background_noise", "background_spread",
           "clutter_posterior", "mixture_modes", "noise_to_leave_out"]

#: `StabilityClustering` looks for a background of noise in data of at most this intrinsic
#: dimension: Byers & Raftery's model is of spatial point processes. In more dimensions the
#: k-th neighbour distances of real data carry discreteness and hubness more than a background
#: (letters, 16 integer features, d = 5.3: 39 % marked, and the rest fell into 72 fragments).
BACKGROUND_MAX_DIMENSION = 3.0

#: A background is a population of its own when the fitted mixture has two modes and tells
#: its points apart: the posterior's expected share of misclassified points (the Bayes error,
#: the mean of min(posterior, 1 - posterior)) is at most this. The battery's backgrounds
#: (chameleon t4-t8, ring_noisy, twosplashes, other/hdbscan) have 0.000-0.008; the fringes
#: of its blobs and the sparse stretches of shapes with no background (spiral arms, swiss
#: rolls, bands) 0.012-0.32. A sparser cluster is a population too (graves/dense: 0.002), and
#: the bound says nothing about it (docs/battery.md, *Built: a background is a second mode of
#: the density*).
BACKGROUND_MAX_ERROR = 0.01

#: A background that overrides the tiers' choice of clusters must also spread over the data's
#: window as a uniform sprinkle would (`background_spread`): its points' own intensity would
#: fill at least this share of the region where a background can lie. The clutter scenes'
#: backgrounds spread over 0.80-1.33 of it, the battery's 0.77-1.34 (chameleon t4-t8,
#: ring_noisy, hdbscan, dpc, zelnik2/4, long2); the sparser points that the model tells apart
#: in curves beside blobs (a sine's sparse stretch, blobs' fringes) over 0.04-0.58, and 0.15
#: where taking them lost a sine (docs/model_selection.md, *Built: a background spread over
#: the window*).
BACKGROUND_MIN_SPREAD = 0.5

#: `background_spread`'s uniform draws over the region where a background can lie.
SPREAD_DRAWS = 10

#: EM stops when no parameter (weight, log rates) moves by more than this.
EM_TOL = 1e-10
EM_MAX_ITER = 2000


class NoiseModelWarning(UserWarning):
    """The two-component model of `background_noise` did not converge or found no background."""


def clutter_posterior(kth_distance, k, dimension, *, max_iter=None, tol=None):
    """Posterior probability that each point is clutter, from its k-th neighbour distance.

    The EM of Byers & Raftery (1998) for ``z = (D_k / median)^d`` as a mixture of two
    Gamma(k, rate) laws: ``p Gamma(k, l_c) + (1 - p) Gamma(k, l_f)``, l_c < l_f. The term
    (k - 1) log z is common to both components, so a zero distance (k duplicates) is simply
    the densest point.

    Parameters
    ----------
    kth_distance : array (n,) of float >= 0
        Each point's distance to its k-th nearest other point.
    k : int >= 1
    dimension : float > 0
        The dimension d of the Poisson processes (the data's intrinsic dimension).
    max_iter : int, default `EM_MAX_ITER`
    tol : float, default `EM_TOL`
        EM stops when no parameter (p, log l_c, log l_f) moves by more than `tol`.

    Returns
    -------
    posterior : array (n,) in [0, 1]
        Probability of the sparse (clutter) component.
    info : dict
        ``weight`` (p), ``rate_ratio`` (l_f / l_c), ``n_iter``, ``converged``,
        ``log_likelihood_gain`` (per point, two components against one Gamma), ``modes``
        (of the fitted mixture's density of log z, `mixture_modes`: one, no background) and
        ``bayes_error`` (the mean of min(posterior, 1 - posterior)).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> # a Poisson process's k-th distances in 2-D: lambda pi D^2 ~ Gamma(k); 10 % at 1/16
    >>> lam = np.r_[np.full(900, 16.0), np.full(100, 1.0)]
    >>> D = np.sqrt(rng.gamma(10, 1, 1000) / (np.pi * lam))
    >>> post, info = clutter_posterior(D, 10, 2)
    >>> round(float((post > 0.5)[900:].mean()), 2), round(float((post > 0.5)[:900].mean()), 2)
    (1.0, 0.0)
    >>> round(info["rate_ratio"])
    16
    """
    max_iter = check_int(EM_MAX_ITER if max_iter is None else max_iter, "max_iter", low=1)
    tol = check_real(EM_TOL if tol is None else tol, "tol", low=0)
    k = check_int(k, "k", low=1)
    d = check_real(dimension, "dimension", low=0, low_inclusive=False)
    D = np.asarray(kth_distance, dtype=np.float64).ravel()
    if D.size == 0 or not (np.isfinite(D).all() and (D >= 0).all()):
        raise ValueError(f"kth_distance must be a non-empty array of finite distances >= 0; "
                         f"got {D.size} values, the smallest {np.min(D, initial=np.inf)!r}.")
    n, k = D.size, float(k)
    positive = D[D > 0]
    if positive.size == 0:  # every point has k duplicates: one density, no clutter
        return np.zeros(n), {"weight": 0.0, "rate_ratio": 1.0, "n_iter": 0, "converged": True,
                             "log_likelihood_gain": 0.0, "modes": 1,
                             "bayes_error": 0.0}
    # z in units of the median positive distance: scale-free, and finite for any d
    # (a power of two on every distance divides out exactly)
    logz = d * np.log(np.where(D > 0, D, 1.0) / np.median(positive))
    z = np.where(D > 0, np.exp(np.minimum(logz, 700.0)), 0.0)
    rate1 = k / z.mean()
    # start: the sparsest fifth is clutter
    post = (z > np.quantile(z, 0.8)).astype(np.float64) * 0.8 + 0.1
    params = np.full(3, np.inf)
    converged = False
    for it in range(1, max_iter + 1):
        p = float(np.clip(post.mean(), 1e-12, 1 - 1e-12))
        rate_c = k * post.sum() / max(float(post @ z), 1e-300)
        rate_f = k * (n - post.sum()) / max(float((1 - post) @ z), 1e-300)
        a = np.log(p) + k * np.log(rate_c) - rate_c * z
        b = np.log1p(-p) + k * np.log(rate_f) - rate_f * z
        post = 1.0 / (1.0 + np.exp(np.clip(b - a, -700.0, 700.0)))
        new = np.array([p, np.log(rate_c), np.log(rate_f)])
        if np.max(np.abs(new - params)) <= tol:
            converged = True
            break
        params = new
    top = np.maximum(a, b)
    ll2 = float(np.sum(top + np.log(np.exp(a - top) + np.exp(b - top))))
    ll1 = float(n * k * np.log(rate1) - rate1 * z.sum())
    if rate_c > rate_f:  # the components swapped: the sparse one is the second
        post, p, rate_c, rate_f = 1.0 - post, 1.0 - p, rate_f, rate_c
    ratio = float(rate_f / rate_c)
    return post, {"weight": p, "rate_ratio": ratio, "n_iter": it, "converged": converged,
                  "log_likelihood_gain": (ll2 - ll1) / n,
                  "modes": mixture_modes(p, ratio, k),
                  "bayes_error": float(np.mean(np.minimum(post, 1.0 - post)))}


def _separate(info):
    """Whether `clutter_posterior`'s sparser component is a population of its own: two modes,
    and its points told apart (`BACKGROUND_MAX_ERROR`)."""
    return info["modes"] >= 2 and info["bayes_error"] <= BACKGROUND_MAX_ERROR


def mixture_modes(weight, rate_ratio, k):
    """The number of modes of the fitted mixture ``p Gamma(k, l_c) + (1 - p) Gamma(k, l_f)``
    as a density of log z (log of the k-th neighbour's ball volume), with
    ``rate_ratio = l_f / l_c``.

    A background is a second population of points, sparser than the clusters: the density of
    log z then has a second mode, at the background's scale. The EM always finds a sparser
    component, and on data with none (a band whose sparse stretches and edges widen the law
    of z; the clusters' fringe) it splits one mode's skewed tail off: the two components
    overlap into one mode (a uniform annulus: rate ratio 1.6-1.9, the chameleon sets'
    backgrounds 7.5-13; docs/battery.md, *Built: a background is a second mode of the
    density*). The count reads
    the mixture's log density on a grid of log z wide enough for both components (each is
    log-Gamma, of standard deviation sqrt(psi'(k)) < 1.3).

    Examples
    --------
    >>> mixture_modes(0.1, 8.0, 10), mixture_modes(0.3, 1.6, 10)
    (2, 1)
    """
    k, r = float(k), float(rate_ratio)
    if not (0.0 < weight < 1.0) or not 1.0 < r < np.inf:  # one component is all there is
        return 1
    # l_c = 1, l_f = r: each component's log density in u = log z, up to log Gamma(k)
    u = np.linspace(np.log(k / r) - 6.0, np.log(k) + 6.0, 8001)
    a = np.log(weight) + k * u - np.exp(u)
    b = np.log1p(-weight) + k * np.log(r) + k * u - r * np.exp(u)
    slope = np.diff(np.logaddexp(a, b))
    return int(np.sum((slope[:-1] > 0) & (slope[1:] <= 0)))


def background_noise(X, *, n_neighbors=10, metric="euclidean", random_state=None,
                     return_posterior=False):
    """Points of a uniform background of noise (Byers & Raftery 1998), as a boolean mask.

    For data that holds clusters in a sprinkle of noise points. `StabilityClustering`'s walk
    does not see density, so such a background hides the clusters; the recipe is to fit the
    rest and place the noise points like unseen ones::

        noise = gc.background_noise(X)
        model = gc.StabilityClustering().fit(X[~noise])
        labels = np.empty(len(X), dtype=int)
        labels[~noise], labels[noise] = model.labels_, model.predict(X[noise])

    The model always finds a sparser component; on data without a background it is the
    clusters' fringe, and leaving it out can cut thin clusters into pieces (the papers' two
    moons: 17 % marked, c = 5). So use it when the data has a background of noise: measured
    in docs/battery.md, *Built: a background of noise*, against HDBSCAN.

    Parameters
    ----------
    X : array (n, d) or CSR matrix (``metric="cosine"``)
    n_neighbors : int >= 1, default 10
        k: the k-th nearest other point's distance is the density estimate.
    metric : {"euclidean", "cosine"}, default "euclidean"
    random_state : int, Generator, RandomState or None
        Seed of the approximate neighbour search (above 20 000 points).
    return_posterior : bool, default False
        Also return each point's posterior of the noise component and the model's numbers
        (`clutter_posterior`'s info, with ``dimension``).

    Returns
    -------
    noise : bool array (n,)
        True for the points that the sparse component more likely holds. All False (with a
        `NoiseModelWarning`) when that component holds more than half of the points: it is
        then no background.
    posterior, info : only with ``return_posterior=True``

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> rng = np.random.default_rng(0)
    >>> blobs = np.r_[rng.normal(0, 0.3, (300, 2)), rng.normal(4, 0.3, (300, 2))]
    >>> X = np.r_[blobs, rng.uniform(-3, 7, (60, 2))]  # 60 points of background
    >>> noise = gc.background_noise(X)
    >>> round(float(noise[600:].mean()), 1), round(float(noise[:600].mean()), 2)
    (1.0, 0.05)
    """
    if metric not in ("euclidean", "cosine"):
        raise ValueError(f"metric must be 'euclidean' or 'cosine'; got {metric!r}.")
    check_seed(random_state)
    X = check_points(X, accept_sparse=True)
    n = X.shape[0]
    k = check_int(n_neighbors, "n_neighbors", low=1, high=n, high_inclusive=False)
    from ..graphs import nearest_neighbors

    _, dist = nearest_neighbors(X, k, metric=metric, random_state=random_state)
    d = intrinsic_dimension(dist)
    post, info = clutter_posterior(np.max(dist, axis=1), k, d)
    info["dimension"] = d
    if not info["converged"]:
        warnings.warn(f"background_noise: the EM of the two-component model did not converge "
                      f"in {info['n_iter']} iterations (tolerance {EM_TOL:g}); noise weight "
                      f"{info['weight']:.3f}, rate ratio {info['rate_ratio']:.3g}.",
                      NoiseModelWarning, stacklevel=2)
    separate = _separate(info)
    noise = _marked(post) if separate else None
    if noise is None:
        share = float((post > 0.5).mean())
        if not separate and share > 0:
            why = ("overlap into one mode of the points' density" if info["modes"] < 2 else
                   f"overlap: the model would misclassify {info['bayes_error']:.1%} of the "
                   f"points (at most {BACKGROUND_MAX_ERROR:.0%} for a background)")
            warnings.warn(f"background_noise: the two components of the model {why} (noise "
                          f"weight {info['weight']:.3f}, rate ratio {info['rate_ratio']:.3g}), "
                          f"so the sparser one is no background; no point is marked.",
                          NoiseModelWarning, stacklevel=2)
        elif share > 0.5:
            warnings.warn(f"background_noise: the sparser component holds {share:.0%} of "
                          f"the {n} points, more than half, so it is no background; no point "
                          f"is marked.", NoiseModelWarning, stacklevel=2)
        noise = np.zeros(n, dtype=bool)
    return (noise, post, info) if return_posterior else noise


def _marked(post):
    """The background: points whose posterior exceeds 1/2; None when there are none or when
    they would be more than half of the points (then the sparser part is no background)."""
    noise = post > 0.5
    return noise if noise.any() and noise.mean() <= 0.5 else None


def noise_to_leave_out(dist, dimension):
    """The background noise of a fit's own kNN lists: `clutter_posterior` > 1/2, or None,
    and whether it is a population of its own (a second mode of the density, `mixture_modes`,
    whose points the model tells apart: `BACKGROUND_MAX_ERROR`).

    None when no point is noise or the noise would be more than half of the points (then it is
    no background). A sparser part that is no population of its own is the clusters' fringe
    or the sparse stretches of a band: the fit still leaves it out to look, but then judges
    what it finds as cuts of the data's shape (`NullModelTests._support_test`). The graph is the
    caller's: a component of the graph with no point left out of the noise is the caller's
    to settle (`absorbed_labels` needs a labelled point in every component).

    Parameters
    ----------
    dist : array (n, k)
        The kNN distances (each row's largest is its k-th).
    dimension : float > 0
        Their intrinsic dimension (the fit's `intrinsic_dimension_`).

    Returns
    -------
    noise : bool array (n,) or None
    separate : bool
        Whether the sparser component is a population of its own.
    """
    dist = np.asarray(dist, dtype=np.float64)
    post, info = clutter_posterior(dist.max(axis=1), dist.shape[1], dimension)
    return _marked(post), _separate(info)


def background_spread(points, noise, *, random_state=0, n_draws=SPREAD_DRAWS):
    """The share of the region where a background can lie that the points `noise` spread
    over: about 1 for a uniform sprinkle, near 0 for points gathered in a few places.

    Byers & Raftery's clutter is one homogeneous Poisson process over the data's window. The
    clusters' points hide it where they lie, so a background's points lie in the rest: the
    locations of the window (the points' bounding box) whose nearest point is one of `noise`,
    the union of their Voronoi cells. m points of intensity lambda in D dimensions lie a mean
    distance proportional to lambda^(-1/D) from their nearest neighbour, so with r the mean
    nearest-other-noise-point distance and r_u that of m points drawn uniformly over the
    region, (r / r_u)^D is the share of the region that the points' own intensity would
    fill: Clark & Evans' (1954) ratio, with the region's edges and holes in the reference
    draws instead of in a correction. Sparser points that gather (a curve's sparse stretch,
    the fringes of blobs) lie much closer to each other than a sprinkle over their cells.

    Parameters
    ----------
    points : array (n, D)
        Dense coordinates, a few features (the draws fill their bounding box).
    noise : bool array (n,)
    random_state : int or Generator, default 0
        Seed of the uniform draws.
    n_draws : int >= 1, default `SPREAD_DRAWS`
        Uniform samples of m points whose mean nearest-neighbour distances are averaged.

    Returns
    -------
    spread : float >= 0
        0 when fewer than two points are noise, or when their cells are too small a share
        of the window (under 1 / 64) for the draws to fill.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.r_[rng.normal(0, 0.3, (400, 2)), rng.normal(5, 0.3, (400, 2))]  # two blobs
    >>> centre = np.where(np.arange(800) < 400, 0.0, 5.0)
    >>> fringe = np.linalg.norm(X - centre[:, None], axis=1) > 0.6  # their sparse fringes
    >>> round(background_spread(X, fringe), 2)
    0.09
    >>> Y = np.r_[X, rng.uniform(-1, 6, (100, 2))]  # the blobs in a background of 100
    >>> round(background_spread(Y, np.arange(900) >= 800), 2)
    1.2
    """
    from scipy.spatial import cKDTree

    P = np.asarray(points, dtype=np.float64)
    noise = np.asarray(noise, dtype=bool)
    m, D = int(noise.sum()), P.shape[1]
    if m < 2:
        return 0.0
    rng = np.random.default_rng(random_state)
    lo, hi = P.min(axis=0), P.max(axis=0)
    whose = cKDTree(P)

    def mean_gap(Q):  # mean distance from each point of Q to its nearest other one
        return float(cKDTree(Q).query(Q, 2)[0][:, 1].mean())

    gaps = []
    for _ in range(int(n_draws)):
        kept, seen = [], 0
        while seen < m and len(kept) < 64:  # the region is at least 1/64 of the box
            U = rng.uniform(lo, hi, (4 * m, D))
            U = U[noise[whose.query(U)[1]]]
            kept.append(U)
            seen += len(U)
        if seen < m:
            return 0.0
        gaps.append(mean_gap(np.concatenate(kept)[:m]))
    reference = float(np.mean(gaps))
    return (mean_gap(P[noise]) / reference) ** D if reference > 0 else 0.0


def absorbed_labels(W, labels, known, *, rtol=1e-8):
    """Labels of the unknown nodes: the cluster the walk from each one enters first.

    The absorption probabilities of the random walk on W into the known nodes' clusters are
    the harmonic extension of their indicators (Zhu, Ghahramani & Lafferty 2003):
    ``(D_UU - W_UU) F = W_UK Y``, solved for all clusters at once by CG on the symmetrically
    scaled system ``(I - S_UU) D^1/2 F``. Each unknown node takes its most likely cluster.

    Parameters
    ----------
    W : sparse symmetric matrix (n, n), non-negative
    labels : int array (n,)
        Clusters 0..c-1 of the known nodes (other entries are ignored).
    known : bool array (n,)
        Every connected component of W must hold a known node.
    rtol : float
        CG's relative residual per cluster.

    Returns
    -------
    labels : int array (n,)
        `labels` on the known nodes, the absorbing cluster on the others.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> W = sp.diags([np.ones(5)], [1], shape=(6, 6))  # a path 0-1-2-3-4-5
    >>> known = np.array([True, False, False, False, False, True])
    >>> absorbed_labels(W + W.T, np.array([0, -1, -1, -1, -1, 1]), known).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    known = np.asarray(known, dtype=bool)
    out = np.array(labels, dtype=np.int64, copy=True)
    U, K = np.flatnonzero(~known), np.flatnonzero(known)
    if U.size == 0:
        return out
    n_comp, comp = connected_components(W, directed=False)
    if not np.isin(np.arange(n_comp), comp[K]).all():
        raise ValueError("absorbed_labels: a connected component of W holds no known node, "
                         "so the walk from it is never absorbed.")
    c = int(out[K].max()) + 1
    deg = np.asarray(W.sum(axis=1)).ravel()
    root = np.sqrt(deg[U])
    Wu = W[U]
    S = sp.diags(1.0 / root) @ Wu[:, U] @ sp.diags(1.0 / root)
    Y = sp.csr_matrix((np.ones(K.size), (np.arange(K.size), out[K])), shape=(K.size, c))
    B = np.asarray((Wu[:, K] @ Y).todense()) / root[:, None]
    G = deflated_cg(lambda P: P - S @ P, B, rtol=rtol, name="absorbed_labels")[0]
    out[U] = np.argmax(G / root[:, None], axis=1)
    return out
