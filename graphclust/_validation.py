"""Input gate shared by every public entry point.

Each check names the parameter, what came in and what is allowed, so that an error tells the user
how to fix the call. Kernels below the public API assume the cleaned arrays these return.
"""

from __future__ import annotations

import inspect
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

__all__ = [
    "check_points",
    "check_int",
    "check_neighbors",
    "check_real",
    "check_option",
    "check_random_state",
    "check_seed",
    "check_symmetric_adjacency",
    "check_not_complex",
    "FEATURE_SCALE_RATIO",
    "FeatureScaleWarning",
    "warn_feature_scales",
]

#: A column whose standard deviation exceeds the median column's by more than this factor makes
#: `warn_feature_scales` warn. The development sets stay under 3.4 (MNIST PCA-50 3.4, the pixel
#: and integer sets 1.2-1.6); scikit-learn's raw wine and breast cancer, whose columns are in
#: different units, reach 388 and 7 800 and cluster far better standardised (docs/reliability.md).
FEATURE_SCALE_RATIO = 100.0


class FeatureScaleWarning(UserWarning):
    """The columns of X are on very different scales, so a distance follows the widest ones."""


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_not_complex(X, name="X"):
    """Refuse complex arrays (dense or sparse): casting them to float drops the imaginary part.

    The one place graphclust decides this; every gate (points, adjacency matrices, images) calls it.
    """
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.issubdtype(dtype, np.complexfloating):
        raise ValueError(
            f"Complex data not supported: {name} has dtype {dtype}. graphclust needs real "
            f"coordinates; pass e.g. np.abs({name}), {name}.real, or stack real and imaginary "
            "parts as separate features."
        )


#: Rows per block of the passes over X (`_all_finite`, `warn_feature_scales`): their
#: temporaries stay in cache (at 10^6 x 50 one boolean mask of the whole array was 50 MB of
#: fresh memory, twice).
BLOCK_ROWS = 8192


def _all_finite(values):
    """Whether every entry is finite, a block of rows at a time (no temporary of X's size)."""
    if values.ndim < 2:
        return bool(np.isfinite(values).all())
    return all(np.isfinite(values[s:s + BLOCK_ROWS]).all()
               for s in range(0, values.shape[0], BLOCK_ROWS))


def check_points(X, *, name="X", min_samples=2, accept_sparse=False, dtype=np.float64,
                 keep_float=False, allow_nan=False):
    """Return `X` as a finite 2-D float array (or CSR matrix when `accept_sparse`).

    With ``keep_float=True`` a dense floating-point X keeps its own precision (no converted
    copy): for a caller that makes its own copy of the rows anyway (`rows_as_float64`). With
    ``allow_nan=True`` NaN entries pass (missing values, for a model that reads them so);
    infinite ones do not.

    Raises a ValueError naming `name` for complex input, wrong dimensions, too few rows, no
    columns, or NaN/inf.
    """
    if sp.issparse(X):
        if not accept_sparse:
            raise TypeError(
                f"{name} is a scipy sparse matrix; this function needs a dense (n_samples, "
                f"n_features) array: convert it with {name}.toarray()."
            )
        check_not_complex(X, name)
        X = sp.csr_matrix(X, dtype=dtype)
        values = X.data
    else:
        X = np.asarray(X)
        check_not_complex(X, name)
        if X.dtype == object:
            try:  # an object array of numbers is converted, as scikit-learn does
                X = X.astype(np.float64)
            except (TypeError, ValueError) as err:
                raise TypeError(
                    f"{name} must hold numbers; its object array has entries that are not ({err})."
                ) from None
        if not (np.issubdtype(X.dtype, np.number) or np.issubdtype(X.dtype, np.bool_)):
            raise TypeError(f"{name} must hold numbers; got an array of dtype {X.dtype}.")
        if X.ndim != 2:
            hint = (
                f" Reshape your data either using {name}.reshape(-1, 1) if it has a single "
                f"feature or {name}.reshape(1, -1) if it contains a single sample."
                if X.ndim == 1
                else ""
            )
            raise ValueError(
                f"{name} must be a 2-D array of shape (n_samples, n_features); got {X.ndim}-D "
                f"shape {X.shape}.{hint}"
            )
        keep = keep_float and np.issubdtype(X.dtype, np.floating)
        X = np.ascontiguousarray(X, dtype=X.dtype if keep else dtype)
        values = X
    n, d = X.shape
    if n < min_samples:
        raise ValueError(
            f"{name} has {n} sample(s); at least {min_samples} "
            f"{'is' if min_samples == 1 else 'are'} needed"
            f"{' to build a graph' if min_samples > 1 else ''}."
        )
    if d < 1:
        raise ValueError(
            f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    if not _all_finite(values) and not (allow_nan and not np.isinf(values).any()):
        bad = np.isinf(values) if allow_nan else ~np.isfinite(values)
        count = int(bad.sum())
        if sp.issparse(X):
            where = ""
        else:
            r, c = np.argwhere(bad)[0]
            where = f" (first at row {r}, column {c})"
        if allow_nan:
            raise ValueError(f"{name} contains {count} infinite value(s){where}; NaN marks a "
                             f"missing value, and infinite ones are not allowed.")
        raise ValueError(
            f"{name} contains {count} NaN or infinite value(s){where}; graphclust needs finite "
            f"coordinates: drop or impute those entries first."
        )
    return X


def check_int(value, name, *, low=None, high=None, high_inclusive=True, allow=()):
    """Return `value` as int, checking `low <= value <= high` (or `< high`)."""
    if value in allow:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {_describe(value)}.")
    value = int(value)
    ok_low = low is None or value >= low
    ok_high = high is None or (value <= high if high_inclusive else value < high)
    if not (ok_low and ok_high):
        lo = "" if low is None else f"{low} <= "
        hi = "" if high is None else (f" <= {high}" if high_inclusive else f" < {high}")
        raise ValueError(f"{name} must satisfy {lo}{name}{hi}; got {value}.")
    return value


def check_flag(value, name, *, levels=False):
    """Return `value` as a bool (or, with ``levels=True``, an int >= 0 such as a verbosity)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if levels and isinstance(value, numbers.Integral) and value >= 0:
        return int(value)
    allowed = "True, False or an integer >= 0" if levels else "True or False"
    raise TypeError(f"{name} must be {allowed}; got {_describe(value)}.")


def float_sequence(values, name):
    """A sequence of numbers as a 1-D float64 array, or a TypeError naming `name`."""
    try:
        return np.atleast_1d(np.asarray(values, dtype=np.float64)).ravel()
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers; got {_describe(values)}.") from None


def check_neighbors(estimator, n, *, low):
    """`estimator.n_neighbors` as int, checked ``low <= n_neighbors < n`` (each of `n` points
    lists that many others); the error says when the value is the estimator's default."""
    k = check_int(estimator.n_neighbors, "n_neighbors", low=low)
    if k >= n:
        default = inspect.signature(type(estimator)).parameters["n_neighbors"].default
        raise ValueError(f"n_neighbors must satisfy {low} <= n_neighbors < n_samples = {n}; got "
                         f"{k}{' (the default)' if k == default else ''}: pass a smaller "
                         f"n_neighbors for data of {n} points.")
    return k


def check_real(
    value, name, *, low=None, high=None, low_inclusive=True, high_inclusive=True, allow=()
):
    """Return `value` as float in the stated interval; NaN and inf are refused."""
    if isinstance(value, str) and value in allow:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {_describe(value)}.")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}.")
    ok_low = low is None or (value >= low if low_inclusive else value > low)
    ok_high = high is None or (value <= high if high_inclusive else value < high)
    if not (ok_low and ok_high):
        left = "" if low is None else ("[" if low_inclusive else "(") + f"{low}, "
        right = "" if high is None else f"{high}" + ("]" if high_inclusive else ")")
        if low is None:
            allowed = f"{name} {'<=' if high_inclusive else '<'} {high}"
        elif high is None:
            allowed = f"{name} {'>=' if low_inclusive else '>'} {low}"
        else:
            allowed = f"{name} in {left}{right}"
        raise ValueError(f"{name} must satisfy {allowed}; got {value}.")
    return value


def check_option(value, name, options):
    """Return `value` if it is one of `options`; otherwise list the valid ones."""
    if not isinstance(value, str) or value not in options:
        valid = ", ".join(repr(o) for o in sorted(options))
        raise ValueError(f"{name} must be one of {valid}; got {_describe(value)}.")
    return value


def check_random_state(random_state):
    """Return a numpy Generator from None, an int seed, a Generator or a RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0:
            raise ValueError(
                f"random_state must be a non-negative int seed (or None, a numpy Generator or "
                f"RandomState); got {random_state}."
            )
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, an int seed, a numpy Generator or RandomState; got "
        f"{_describe(random_state)}."
    )


def check_seed(random_state):
    """Validate `random_state` as `check_random_state` does, without drawing from it.

    For entry points that check every parameter before the expensive work but use the seed later
    (or only on some paths): a Generator or RandomState passed in is returned untouched.
    """
    if not isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        check_random_state(random_state)
    return random_state


def check_symmetric_adjacency(A, *, name="A", allow_negative=False, rtol=1e-10):
    """Return a square, exactly symmetric, finite CSR matrix (float64) with its diagonal removed.

    Values that differ from their mirror by at most `rtol` times the largest entry are replaced
    by the pair's mean; more is an error. Indices are sorted. Explicit zeros off the diagonal
    are kept: they are edges (e.g. distance 0 between duplicates).
    """
    if sp.issparse(A):
        check_not_complex(A, name)
        A = sp.csr_matrix(A, dtype=np.float64, copy=True)
    else:
        arr = np.asarray(A)
        check_not_complex(arr, name)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"{name} must be a numeric matrix; got dtype {arr.dtype}.")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be a square 2-D matrix; got shape {arr.shape}.")
        A = sp.csr_matrix(arr.astype(np.float64))
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be square (n_nodes, n_nodes); got shape {A.shape}.")
    if A.shape[0] < 1:
        raise ValueError(f"{name} is empty; a graph needs at least 1 node.")
    A.sum_duplicates()
    if not np.all(np.isfinite(A.data)):
        bad = int((~np.isfinite(A.data)).sum())
        raise ValueError(
            f"{name} contains NaN or infinite entries ({bad} of {A.nnz} stored); all entries must "
            "be finite."
        )
    if not allow_negative and A.data.size and A.data.min() < 0:
        raise ValueError(
            f"{name} has negative entries (minimum {A.data.min():.3g}); edge values must be >= 0."
        )
    # one transpose: with canonical (sorted) indices a symmetric pattern is equal index arrays,
    # and the values then compare entry by entry
    T = A.T.tocsr()
    T.sort_indices()
    same_pattern = np.array_equal(A.indptr, T.indptr) and np.array_equal(A.indices, T.indices)
    if same_pattern:
        diff = A.data - T.data
    else:
        diff = (A - T).data
    # relative to the largest entry, so that the check means the same at any scale
    scale = float(np.abs(A.data).max()) if A.nnz else 0.0
    err = float(np.abs(diff).max()) if diff.size else 0.0
    if err > rtol * scale:
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}.T| = {err:.3g}. Symmetrise it "
            f"first, e.g. {name}.maximum({name}.T)."
        )
    if not same_pattern:
        # the sparsity pattern must be symmetric too (explicit zeros are edges)
        pattern = sp.csr_matrix((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
        pdiff = pattern - pattern.T
        pdiff.eliminate_zeros()
        raise ValueError(
            f"{name} stores an entry (i, j) without (j, i) at {pdiff.nnz // 2 or 1} place(s): its "
            f"sparsity pattern must be symmetric."
        )
    if err > 0:  # within the tolerance: made exactly symmetric, as every caller assumes
        A.data = (A.data + T.data) * 0.5
    return _drop_diagonal(A)


def _drop_diagonal(A):
    # A is the caller's own CSR copy: returned as it is when it has no diagonal entry
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr))
    keep = A.indices != rows
    if keep.all():
        return A
    indptr = np.zeros(A.shape[0] + 1, dtype=A.indptr.dtype)
    np.cumsum(np.bincount(rows[keep], minlength=A.shape[0]), out=indptr[1:])
    return sp.csr_matrix((A.data[keep], A.indices[keep], indptr), shape=A.shape)


def warn_feature_scales(X, *, name="X", ratio=FEATURE_SCALE_RATIO, stacklevel=3,
                        chunk=BLOCK_ROWS):
    """Warn (`FeatureScaleWarning`) when one column of dense `X` spreads far more than the rest.

    For estimators that measure euclidean distances between the rows of X. The columns'
    standard deviations are computed over every row, in blocks of `chunk` rows (no copy of X),
    so the answer does not depend on the order of the rows (but for rounding); columns that do
    not vary are left out. Sparse X is not checked: its columns (term weights) are on one
    scale by construction.

    Returns
    -------
    spread : float or None
        Largest over median standard deviation; None when fewer than two columns vary or X
        is sparse.

    Examples
    --------
    >>> import numpy as np, warnings
    >>> X = np.random.default_rng(0).normal(size=(100, 3)) * [1.0, 1.0, 1e4]
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     spread = warn_feature_scales(X)
    >>> round(spread, -2) > 1000, w[0].category.__name__
    (True, 'FeatureScaleWarning')
    """
    if sp.issparse(X) or X.ndim != 2 or X.shape[1] < 2 or X.shape[0] < 2:
        return None
    n = X.shape[0]
    blocks = range(0, n, int(chunk))
    # each column divided by its largest magnitude first: no overflow in the squares below for
    # coordinates near 1e300, none lost for coordinates near 1e-300
    top = np.maximum(X.max(axis=0), -X.min(axis=0))
    top[top == 0] = 1.0
    mean = np.zeros(X.shape[1])
    for i in blocks:
        mean += np.sum(X[i:i + chunk] / top, axis=0)
    mean /= n
    var = np.zeros(X.shape[1])
    for i in blocks:
        Y = X[i:i + chunk] / top
        Y -= mean
        var += np.einsum("ij,ij->j", Y, Y)
    sd = np.sqrt(var / n) * top
    varying = np.flatnonzero(sd > 0)
    if varying.size < 2:
        return None
    j = int(varying[np.argmax(sd[varying])])
    median = float(np.median(sd[varying]))
    spread = float(sd[j] / median)
    if spread > ratio:
        warnings.warn(
            f"{name}'s columns are on very different scales: column {j} has standard deviation "
            f"{sd[j]:.3g}, {spread:.0f} times the median column's ({median:.3g}), so euclidean "
            f"distances, and the clusters, follow a few columns. If the columns are in "
            f"different units, standardise them first (e.g. "
            f"sklearn.preprocessing.StandardScaler); if their scales are meaningful, this "
            f"warning can be ignored.", FeatureScaleWarning, stacklevel=stacklevel)
    return spread
