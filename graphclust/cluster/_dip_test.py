"""Hartigan's dip test of unimodality, for one-dimensional samples.

In one dimension a kNN graph's cuts do not depend on the density (the cut of a kNN graph
scales as p^(1 - 1/d), constant for d = 1; docs/model_selection.md, *Why a walk on a 1-D kNN
graph does not see density valleys*), so the walk's clusters of a 1-D sample are set by the
chance gaps of its order statistics, and a structureless sample passes the escape-time null
now and then (5 of 184 fits of Gaussian and uniform samples). One dimension has a test made
for the question: the dip (Hartigan & Hartigan 1985), the sup distance from the empirical
distribution function to the nearest unimodal one. It is consistent against every
multimodal distribution, and the uniform is its least favourable unimodal null
(asymptotically), so a p-value against uniform samples is valid for every unimodal density.

`dip_statistic` follows Hartigan's algorithm AS 217 (Applied Statistics 34, 1985): the
greatest convex minorant and least concave majorant of the empirical distribution function,
cycled over a shrinking modal interval; O(n) after the sort. `dip_test` takes its p-value
from seeded uniform samples, drawn at the data's size up to `DIP_NULL_MAX_SAMPLES` points and
compared by sqrt(n) dip above it (the statistic's scaling under the null). The draws of a size
and seed are one sequence, extended and read by prefix (`_null_dips`), whatever number of
draws a test's level asks for; a test that only asks whether p is below a level stops reading
once the answer is known (`dip_pvalue`'s `enough`).
"""

from __future__ import annotations

import collections
import math
import numbers
import threading

import numba
import numpy as np

from .._validation import check_random_state

__all__ = ["DIP_DRAWS", "DIP_LEVEL", "DIP_NULL_MAX_SAMPLES", "dip_draws", "dip_pvalue",
           "dip_statistic", "dip_test"]

#: Uniform samples of the p-value (its resolution is 1 / (DIP_DRAWS + 1)).
DIP_DRAWS = 200
#: Level below which a 1-D sample counts as multimodal.
DIP_LEVEL = 0.05
#: Largest size of a null draw; larger samples are compared by sqrt(n) dip.
DIP_NULL_MAX_SAMPLES = 5_000


def dip_draws(level):
    """Uniform samples for a test at `level`: `DIP_DRAWS`, or enough that the p-value's
    resolution 1 / (n_draws + 1) is at most half the level (a p-value that cannot fall below
    the level cannot reject)."""
    level = float(level)
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}.")
    return max(DIP_DRAWS, int(np.ceil(2.0 / level)) - 1)


@numba.njit(cache=True)
def _minorant_links(x):
    """mn[j]: the vertex before j on the greatest convex minorant of the points (x_i, i) for
    i <= j (the empirical distribution function counted in points).

    The minorant of the points up to j - 1 is held as a stack (its vertices and their x), so
    each test reads the stack's top two entries instead of chasing the links back through
    memory: the same comparisons on the same numbers, so the same links (the links are most
    of a dip's time; docs/battery.md, *Built: the dip test stops where its verdict is
    known*)."""
    n = x.size
    mn = np.empty(n, dtype=np.int64)
    vert = np.empty(n, dtype=np.int64)
    xv = np.empty(n)
    mn[0] = 0
    vert[0], xv[0], top = 0, x[0], 0
    for j in range(1, n):
        a, xa, xj = j - 1, x[j - 1], x[j]  # a: the stack's top, j - 1
        while a != 0:
            b, xb = vert[top - 1], xv[top - 1]  # a's predecessor
            # j sees b under a: a is no vertex of the minorant up to j
            if (xj - xa) * (a - b) < (xa - xb) * (j - a):
                break
            top -= 1
            a, xa = b, xb
        mn[j] = a
        top += 1
        vert[top], xv[top] = j, xj
    return mn


@numba.njit(cache=True)
def _majorant_links(x):
    """mj[k]: the vertex after k on the least concave majorant of the points i >= k (a stack,
    as `_minorant_links`)."""
    n = x.size
    mj = np.empty(n, dtype=np.int64)
    vert = np.empty(n, dtype=np.int64)
    xv = np.empty(n)
    mj[n - 1] = n - 1
    vert[0], xv[0], top = n - 1, x[n - 1], 0
    for k in range(n - 2, -1, -1):
        a, xa, xk = k + 1, x[k + 1], x[k]
        while a != n - 1:
            b, xb = vert[top - 1], xv[top - 1]
            if (xk - xa) * (a - b) < (xa - xb) * (k - a):
                break
            top -= 1
            a, xa = b, xb
        mj[k] = a
        top += 1
        vert[top], xv[top] = k, xk
    return mj


@numba.njit(cache=True)
def _largest_deviation(x, verts, first, last, below):
    """Largest distance (in points, at least 1) of the distribution function from the chords
    verts[j] -- verts[j + 1] for j in first..last-1: under them on the minorant (below), over
    them on the majorant."""
    out = 0.0
    for j in range(first, last):
        lo, hi = (verts[j + 1], verts[j]) if below else (verts[j], verts[j + 1])
        worst = 1.0
        if hi - lo > 1 and x[hi] != x[lo]:
            slope = (hi - lo) / (x[hi] - x[lo])
            for i in range(lo, hi + 1):
                t = ((i - lo + 1) - (x[i] - x[lo]) * slope if below
                     else (x[i] - x[lo]) * slope - (i - lo - 1))
                if t > worst:
                    worst = t
        if worst > out:
            out = worst
    return out


@numba.njit(cache=True)
def _twice_n_dip(x):
    """2 n times the dip of the sorted sample x (n >= 4, not all equal)."""
    n = x.size
    mn = _minorant_links(x)
    mj = _majorant_links(x)
    gcm = np.empty(n + 1, dtype=np.int64)
    lcm = np.empty(n + 1, dtype=np.int64)
    low, high, dip = 0, n - 1, 0.0
    while True:
        # the minorant's vertices from high down to low, the majorant's from low up to high
        gcm[0] = high
        lg = 0
        while gcm[lg] > low:
            gcm[lg + 1] = mn[gcm[lg]]
            lg += 1
        lcm[0] = low
        lm = 0
        while lcm[lm] < high:
            lcm[lm + 1] = mj[lcm[lm]]
            lm += 1
        # the widest vertical distance between the two, walking their vertices in x order
        ig, ih, ix, iv = lg, lm, lg - 1, 1
        d = 0.0
        if lg != 1 or lm != 1:
            while True:
                g, m = gcm[ix], lcm[iv]
                if g > m:  # the next vertex is the majorant's: distance to the minorant
                    g1 = gcm[ix + 1]
                    dx = (m - g1 + 1) - (x[m] - x[g1]) * (g - g1) / (x[g] - x[g1])
                    iv += 1
                    if dx >= d:
                        d, ig, ih = dx, ix + 1, iv - 1
                else:  # the minorant's: distance to the majorant
                    m1 = lcm[iv - 1]
                    dx = (x[g] - x[m1]) * (m - m1) / (x[m] - x[m1]) - (g - m1 - 1)
                    ix -= 1
                    if dx >= d:
                        d, ig, ih = dx, ix + 1, iv
                ix = max(ix, 0)
                iv = min(iv, lm)
                if gcm[ix] == lcm[iv]:
                    break
        if d < dip:  # the modal interval cannot give a larger dip any more
            break
        # the dips outside the new modal interval [gcm[ig], lcm[ih]]
        dip = max(dip, _largest_deviation(x, gcm, ig, lg, True),
                  _largest_deviation(x, lcm, ih, lm, False))
        if low == gcm[ig] and high == lcm[ih]:
            break
        low, high = gcm[ig], lcm[ih]
    return dip


def dip_statistic(x):
    """Hartigan's dip of a one-dimensional sample: the sup distance from its empirical
    distribution function to the nearest unimodal distribution function.

    At most 1 / 4 (two equal point masses); about 1 / (2 n) for a sample near an evenly
    spaced grid, the least a sample has; 0 for fewer than 4 points, all equal, or points
    exactly evenly spaced (as in R's diptest). Invariant under x -> a x + b for any a != 0.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> round(dip_statistic(rng.normal(size=500)), 3)
    0.01
    >>> dip_statistic(np.r_[np.zeros(50), np.ones(50)])
    0.25
    """
    x = np.sort(np.asarray(x, dtype=np.float64).ravel())
    if x.size < 4 or x[-1] == x[0]:
        return 0.0
    # scaled by a power of two (exact): differences and slopes neither over- nor underflow
    x = x * np.ldexp(1.0, -int(np.frexp(max(-x[0], x[-1]))[1]))
    return float(_twice_n_dip(x) / (2 * x.size))


#: Uniform numbers per batch of `_uniform_dips` (8 MB).
NULL_BATCH_NUMBERS = 2**20


def _uniform_dips(rng, m, k):
    """The dips of the next `k` uniform samples of size `m` from `rng`: the numbers of
    ``[dip_statistic(rng.random(m)) for _ in range(k)]``, drawn by batches of samples (one
    call of the generator fills them in the same order) and their dips over the threads
    (`_sorted_dips`). The null draws were most of some fits' time (wut/trajectories: 608
    p-values, 15 s of 37 s; docs/battery.md, *Built: the dip test's null over the threads*)."""
    per = max(1, NULL_BATCH_NUMBERS // max(m, 1))
    out = np.empty(k)
    for s in range(0, k, per):
        U = rng.random((min(per, k - s), m))
        _sort_uniform_rows(U)
        out[s:s + per] = _sorted_dips(U)
    return out


@numba.njit(cache=True, parallel=True)
def _sort_uniform_rows(U):
    """Sort each row of U (numbers in [0, 1)) in place, rows over the threads: a bucket sort,
    one bucket per 1/m of the interval, then an insertion pass (a bucket holds one number on
    average, so O(m) for uniform numbers). The rows numpy's sort gives, a fourth of its time
    on 2^20 numbers in rows of 5 000 (6.5 ms against 26.7 ms; the sort was half the null's
    cost: battery sipu/worms_2, 66 of 147 s of draws)."""
    k, m = U.shape
    for r in numba.prange(k):
        x = U[r]
        start = np.zeros(m + 1, dtype=np.int64)
        for v in x:
            start[min(int(v * m), m - 1) + 1] += 1
        for b in range(m):
            start[b + 1] += start[b]
        out = np.empty(m)
        for v in x:
            b = min(int(v * m), m - 1)
            out[start[b]] = v
            start[b] += 1
        for i in range(1, m):  # the buckets are in order: only their insides are not
            v = out[i]
            j = i - 1
            while j >= 0 and out[j] > v:
                out[j + 1] = out[j]
                j -= 1
            out[j + 1] = v
        x[:] = out


@numba.njit(cache=True, parallel=True)
def _sorted_dips(X):
    """`dip_statistic` of each sorted row of X, rows over the threads."""
    k, m = X.shape
    out = np.zeros(k)
    for r in numba.prange(k):
        x = X[r]
        if m < 4 or x[-1] == x[0]:
            continue
        # the power-of-two scaling of `dip_statistic` (exact)
        x = x * math.ldexp(1.0, -math.frexp(max(-x[0], x[-1]))[1])
        out[r] = _twice_n_dip(x) / (2 * m)
    return out


def dip_test(x, *, n_draws=DIP_DRAWS, random_state=0, enough=None):
    """Hartigan's dip test of unimodality: ``(dip, p)``.

    p is the share of `n_draws` seeded uniform samples whose dip is at least the data's,
    counted with the data ((1 + #) / (1 + n_draws), Monte Carlo). The uniform is the least
    favourable unimodal distribution, so p is valid for every unimodal null. Above
    `DIP_NULL_MAX_SAMPLES` points the draws have that size and are compared by sqrt(n) dip.
    With `enough`, the draws may stop early once p is known to be at least `enough`
    (`dip_pvalue`).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> dip_test(rng.normal(size=300))[1] > 0.05
    True
    >>> dip_test(np.r_[rng.normal(size=150), rng.normal(size=150) + 6])[1] < 0.01
    True
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    d = dip_statistic(x)
    return d, dip_pvalue(d, x.size, n_draws=n_draws, random_state=random_state, enough=enough)


#: Null draws read first by a test that may stop early (`dip_pvalue`'s `enough`); each
#: further read doubles the draws.
NULL_FIRST_READ = 64
#: Exceedances at which a test that may stop early stops (at least): the p-value it returns
#: then, (1 + h) / (1 + draws read), is read from this many of them.
NULL_STOP_EXCEEDANCES = 10


def dip_pvalue(dip, n, *, n_draws=DIP_DRAWS, random_state=0, enough=None):
    """`dip_test`'s p-value of a dip `dip` of `n` points, from the same seeded uniform
    samples: also the p-value of a dip that a sample could have at most (the largest dip of
    a minor mode, `_valley_joins.unresolved_parts`).

    `enough` is a p-value past which the caller's decision does not change (its level). With
    a seed, the draws are then read by prefixes (`NULL_FIRST_READ` of them, doubled each
    time) and stop once h of them, at least `NULL_STOP_EXCEEDANCES`, have a dip at least the
    data's and (1 + h) / (1 + n_draws) >= `enough`: the p-value of all `n_draws` draws could
    then not fall below `enough`, and the one returned is (1 + h) / (1 + draws read), also
    at least `enough` (a sequential Monte Carlo test, Besag & Clifford 1991, stopped where
    the fixed test's verdict is known). Below `enough` the p-value is the fixed test's, to
    the bit. A test of a unimodal sample stops after tens of draws where the fixed test
    reads thousands; only a test that rejects reads them all.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=300)
    >>> dip_pvalue(dip_statistic(x), 300) == dip_test(x)[1]
    True
    >>> dip_pvalue(dip_statistic(x), 300, n_draws=3999, enough=0.01) >= 0.01
    True
    """
    m = min(int(n), DIP_NULL_MAX_SAMPLES)
    n_draws = int(n_draws)
    if isinstance(random_state, numbers.Integral):  # the same draws for every sample of size m
        seed = int(random_state)

        def null(k):
            return _null_dips(m, k, seed)

        drawn = _null_drawn(m, seed)  # a prefix already drawn is read for free
    else:  # a generator's draws, all of them (its state moves as the fixed test's would)
        sequence = _uniform_dips(check_random_state(random_state), m, n_draws)

        def null(k):
            return sequence[:k]

        drawn = n_draws
    stop = n_draws + 1  # exceedances that end the reads: never, without `enough`
    if enough is not None:
        stop = max(_exceedances_past(float(enough), n_draws), NULL_STOP_EXCEEDANCES)
    read = n_draws if stop > n_draws else min(n_draws, max(NULL_FIRST_READ, drawn))
    observed = dip * np.sqrt(n)
    while True:
        count = int(np.sum(null(read) * np.sqrt(m) >= observed))
        if count >= stop or read == n_draws:
            return float((1 + count) / (1 + read))
        read = min(n_draws, 2 * read)


def _exceedances_past(enough, n_draws):
    """The fewest exceedances h with (1 + h) / (1 + n_draws) >= `enough` in floating point
    (the caller compares the p-value in floating point too)."""
    h = max(0, math.ceil(enough * (1 + n_draws) - 1))
    while (1 + h) / (1 + n_draws) < enough:
        h += 1
    while h > 0 and h / (1 + n_draws) >= enough:
        h -= 1
    return h


#: Seeded null sequences kept by `_null_dips`, one per (size, seed); the least recently used
#: goes first.
NULL_SEQUENCES = 256
_null_sequences = collections.OrderedDict()
_null_lock = threading.Lock()


def _null_drawn(m, seed):
    """How many draws of the seeded null sequence of size `m` are already drawn."""
    with _null_lock:
        held = _null_sequences.get((int(m), int(seed)))
    return 0 if held is None else held[1].size


def _null_dips(m, n_draws, seed):
    """The dips of the first `n_draws` uniform samples of size `m` from the seed `seed`
    (read-only), the same numbers as drawing them afresh.

    One seeded sequence per (m, seed), extended when a test asks for more draws than it holds
    and read by prefix: a test of many samples of one size (the pairs of a split) draws them
    once, and so do tests held at different levels (each round of the one-by-one joins, each
    count of viewers: their number of draws differs), which a cache keyed by the number of
    draws drew again for every level (docs/battery.md, *Built: the dip test's null draws
    shared across levels*).
    """
    key = (int(m), int(seed))
    with _null_lock:  # one extension at a time: a sequence's generator has one state
        rng, null = _null_sequences.pop(key, None) or (check_random_state(seed), np.empty(0))
        if null.size < n_draws:
            null = np.concatenate([null, _uniform_dips(rng, m, int(n_draws) - null.size)])
            null.flags.writeable = False
        _null_sequences[key] = (rng, null)
        while len(_null_sequences) > NULL_SEQUENCES:
            _null_sequences.popitem(last=False)
    return null[:n_draws]
