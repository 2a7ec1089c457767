"""Tables of few-valued features: does any feature depend on another?

Binary answers, ratings on a scale and small counts make a lattice: every distance is one of a
few values, ties decide the kNN lists, and rows repeat. The structureless references of
`_null_model` (uniform and Gaussian points, no ties, no copies) are no null for such a table:
uniform binary data of 5 features and 200 rows got 2-4 metastable clusters with no warning.
Nor is the same fit on the table with each column permuted (measured, not built:
docs/model_selection.md, *Built: a table whose features are independent is warned about*):
rows repeated more than k times are atoms of the fit (`_row_order.fitted_rows`), whose escape
time is set by their copies, and the permuted tables have atoms too, so clean latent classes
were called chance on 12 of 36 draws.

The question such a table asks is the latent class model's (Lazarsfeld & Henry 1968): classes
exist only where the features depend on one another, since within a class they are
independent (local independence), and two classes whose profiles differ in features i and j
make those two dependent: ``cov(x_i, x_j) = pi_1 pi_2 (p_1i - p_2i)(p_1j - p_2j)``. So if no
pair of features is dependent, the table holds no classes for a clustering to find.
`feature_dependence` tests every pair by Pearson's chi-square test of independence of its
contingency table (Agresti 2013, section 3.2), each copy of a row counted, and holds the
smallest p-value at `INDEPENDENCE_LEVEL` over the number of pairs (Bonferroni). Pearson's
statistic, not the likelihood ratio G: on sparse tables G is far from its chi-square law
(independent uniform codes, 300 draws each: 10 values x 9 features x 300 rows called dependent
at the 0.05 level 35 % of the time by G, 3.7 % by Pearson; 16 x 16 x 2 000: 15 % and 4.7 %;
binary 5 x 300: 7.3 % by both).
`few_valued` says which tables it reads: every feature takes at most `FEW_VALUES` values, and
at most half as many as there are rows.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.stats import chi2

__all__ = ["FEW_VALUES", "INDEPENDENCE_LEVEL", "codes_dependence", "feature_dependence",
           "few_valued"]

#: A table is read as codes (binary answers, ratings, small counts) when every feature takes at
#: most this many values: the letters' 16 levels, wisc's 10 ratings, zoo's binary features and
#: its legs (6 values); every other table of the checks has a feature of 46 values or more.
FEW_VALUES = 16

#: Level of the pairwise tests over their number (Bonferroni).
INDEPENDENCE_LEVEL = 0.05

# rows read first to rule a table out cheaply (a continuous feature shows many values at once)
_PROBE = 1000


def few_valued(X):
    """Whether the dense array `X` has two or more features, each taking at most
    `FEW_VALUES` distinct values and at most half as many as there are rows: codes repeat
    (eleven continuous points take eleven values each; sparse input is never a table of codes
    here).

    Examples
    --------
    >>> import numpy as np
    >>> few_valued(np.array([[0, 1], [1, 1], [1, 0], [0, 0]]))
    True
    >>> few_valued(np.random.default_rng(0).normal(size=(50, 2)))
    False
    """
    if sp.issparse(X) or np.ndim(X) != 2 or X.shape[1] < 2:
        return False
    X = np.asarray(X)
    most = min(FEW_VALUES, X.shape[0] // 2)
    probe = X[:_PROBE]
    if any(np.unique(col).size > most for col in probe.T):  # a few rows rule most out
        return False
    return all(np.unique(col).size <= most for col in X.T)


def feature_dependence(X, stop=None):
    """(p, pairs): the smallest p-value of Pearson's chi-square test of independence over
    every pair of non-constant features of the table `X` (rows counted with their copies),
    times the number of pairs (Bonferroni, at most 1), and that number; (None, 0) with fewer
    than two non-constant features. At p >= `INDEPENDENCE_LEVEL` no pair of features is
    dependent for the test: the table has no latent classes (module docstring). With `stop`,
    the pairs are read until one's p times the number of pairs is below it, and that value
    is returned (a fit needs only the verdict: one pair of a real table's features usually
    settles it, where all 1 225 pairs of 50 binary features over 10^6 rows take 6-8 s).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> X = (rng.random((300, 5)) < 0.5).astype(float)   # five independent coins
    >>> p, pairs = feature_dependence(X)
    >>> pairs, round(p, 2)
    (10, 0.67)
    >>> z = rng.integers(2, size=300)                    # two classes: 0.9 against 0.1
    >>> Y = (rng.random((300, 5)) < np.where(z[:, None] == 1, 0.9, 0.1)).astype(float)
    >>> bool(feature_dependence(Y)[0] < 1e-6)
    True
    """
    X = np.asarray(X)
    varied = [j for j in range(X.shape[1]) if X[:, j].min() < X[:, j].max()]
    d = len(varied)
    if d < 2:
        return None, 0
    pairs = d * (d - 1) // 2
    codes = {}  # each feature's codes, made when a pair first reads it

    def coded(j):
        if j not in codes:
            values, code = np.unique(X[:, varied[j]], return_inverse=True)
            codes[j] = (code.ravel().astype(np.int64), values.size)
        return codes[j]

    p_min = 1.0
    for i in range(d):
        for j in range(i + 1, d):
            (a, na), (b, nb) = coded(i), coded(j)
            p_min = min(p_min, _pearson_test(a, b, na, nb))
            if stop is not None and p_min * pairs < stop:
                return p_min * pairs, pairs
    return min(1.0, p_min * pairs), pairs


def codes_dependence(X):
    """`feature_dependence` of `X` read until its verdict at `INDEPENDENCE_LEVEL` is known,
    when `few_valued` reads `X` as a table of codes; else None.

    Examples
    --------
    >>> import numpy as np
    >>> X = (np.random.default_rng(1).random((300, 5)) < 0.5).astype(float)
    >>> bool(codes_dependence(X)[0] >= INDEPENDENCE_LEVEL)
    True
    >>> codes_dependence(X + 0.01 * np.arange(300)[:, None]) is None   # no codes: 300 values
    True
    """
    return feature_dependence(X, stop=INDEPENDENCE_LEVEL) if few_valued(X) else None


def _pearson_test(a, b, na, nb):
    """p-value of Pearson's chi-square test of independence of the codes `a` (na values, each
    present) and `b` (nb values), no continuity correction."""
    table = np.bincount(a * nb + b, minlength=na * nb).reshape(na, nb).astype(np.float64)
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
    x2 = float(np.sum((table - expected) ** 2 / expected))
    return float(chi2.sf(x2, (na - 1) * (nb - 1)))
