"""top_eigenpairs refuses what is not a real square matrix, before any work, with a message that
says what it takes (issue 13: a tuple used to fail with "'tuple' object has no attribute
'shape'")."""

import numpy as np
import pytest
import scipy.sparse as sp

import graphclust as gc

TAKES = r"S must be a symmetric matrix: a scipy.sparse matrix or a 2-D numpy array"


@pytest.mark.parametrize(
    "S,exc,match",
    [
        ((1.0, 2.0), TypeError, TAKES + r".*got tuple"),
        ([[1.0, 0.0], [0.0, 1.0]], TypeError, TAKES + r".*got list"),
        ("abc", TypeError, TAKES + r".*got str"),
        (None, TypeError, TAKES + r".*got NoneType"),
        (3.0, TypeError, TAKES + r".*got float"),
        (np.ones(4), ValueError, r"S must be a square \(n, n\) matrix.*shape \(4,\)"),
        (np.ones((3, 4)), ValueError, r"S must be a square \(n, n\) matrix.*shape \(3, 4\)"),
        (np.ones((0, 0)), ValueError, r"S must be a square \(n, n\) matrix.*shape \(0, 0\)"),
        (np.eye(3, dtype=complex), TypeError, r"S must hold real numbers; got complex"),
        (sp.identity(3, dtype=complex, format="csr"), TypeError, r"real numbers; got complex"),
        (np.array([["a", "b"], ["c", "d"]]), TypeError, r"real numbers; got non-numeric"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else "str",
)
def test_top_eigenpairs_refuses_non_matrices(S, exc, match):
    with pytest.raises(exc, match=match):
        gc.top_eigenpairs(S, 1)


@pytest.mark.parametrize("S", [np.diag([3.0, 2.0, 1.0]), sp.diags([3.0, 2.0, 1.0]).tocsr(),
                               np.diag([3, 2, 1])])
def test_top_eigenpairs_still_takes_dense_sparse_and_integer_matrices(S):
    spec = gc.top_eigenpairs(S, 2, method="dense")
    np.testing.assert_allclose(spec.values, [3.0, 2.0])
