"""`push_resolvent`: Gauss-Southwell pushes against the dense solve of (I - alpha D^-1 W) X = B."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from graphclust.kernels import push_resolvent


def _graph(n, density, seed, loops=False):
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=density, random_state=rng, format="csr")
    A = A + A.T + sp.diags(np.full(n - 1, 0.5), 1) + sp.diags(np.full(n - 1, 0.5), -1)
    if loops:
        A = A + sp.diags(rng.uniform(0.1, 1.0, n))
    return sp.csr_matrix(A)


def _operator(W, alpha):
    A = W.toarray()
    return np.eye(W.shape[0]) - alpha * A / A.sum(axis=1, keepdims=True)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 40), seed=st.integers(0, 10**6), alpha=st.floats(0.05, 0.98),
       c=st.integers(1, 4), loops=st.booleans(), eps_exp=st.integers(3, 10))
def test_push_matches_the_dense_solve_within_its_bound(n, seed, alpha, c, loops, eps_exp):
    """The max-norm error is at most eps / (1 - alpha), and R stays B - A X (to 1e-12)."""
    W = _graph(n, 0.2, seed, loops)
    A = _operator(W, alpha)
    B = np.random.default_rng(seed + 1).normal(size=(n, c))
    eps = 10.0 ** -eps_exp
    X, R = np.zeros((n, c)), B.copy()
    done, pushes = push_resolvent(W, X, R, alpha, eps=eps)
    assert done and pushes >= 0
    assert np.abs(R).max() <= eps
    np.testing.assert_allclose(R, B - A @ X, rtol=0, atol=1e-12 * max(1.0, np.abs(B).max()))
    exact = np.linalg.solve(A, B)
    assert np.abs(X - exact).max() <= eps / (1 - alpha) * (1 + 1e-9) + 1e-12


def test_an_update_from_a_solution_is_local():
    """A changed entry of B on a path moves X only near it when eps is loose."""
    n, alpha = 400, 0.5
    W = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    A = _operator(W, alpha)
    B = np.zeros((n, 1))
    X = np.linalg.solve(A, B)
    R = np.zeros((n, 1))
    R[200, 0] += 1.0  # B[200] changes by one
    before = X.copy()
    done, pushes = push_resolvent(W, X, R, alpha, eps=1e-8)
    assert done and pushes < 1000  # the same rows pushed again as their residual returns
    touched = np.flatnonzero(X[:, 0] != before[:, 0])
    assert touched.min() > 150 and touched.max() < 250
    B[200, 0] = 1.0
    assert np.abs(X - np.linalg.solve(A, B)).max() <= 1e-8 / (1 - alpha)


def test_max_work_stops_early_and_leaves_a_consistent_state():
    W = _graph(300, 0.05, 3)
    A = _operator(W, 0.95)
    B = np.random.default_rng(0).normal(size=(300, 2))
    X, R = np.zeros((300, 2)), B.copy()
    done, pushes = push_resolvent(W, X, R, 0.95, eps=1e-10, max_work=W.nnz // 4)
    assert not done and 0 < pushes < 300
    np.testing.assert_allclose(R, B - A @ X, atol=1e-12)
    done, _ = push_resolvent(W, X, R, 0.95, eps=1e-10)  # the work resumes where it stopped
    assert done
    np.testing.assert_allclose(X, np.linalg.solve(A, B), atol=1e-10 / 0.05)


def test_the_pushes_are_deterministic_and_given_degrees_change_nothing():
    W = _graph(200, 0.05, 4)
    B = np.random.default_rng(1).normal(size=(200, 3))
    runs = []
    for degrees in (None, None, np.asarray(W.sum(axis=1)).ravel()):
        X, R = np.zeros((200, 3)), B.copy()
        push_resolvent(W, X, R, 0.9, eps=1e-9, degrees=degrees)
        runs.append(X)
    assert np.array_equal(runs[0], runs[1]) and np.array_equal(runs[0], runs[2])


@pytest.mark.parametrize("kwargs, match", [
    (dict(alpha=1.0), "alpha must lie in"),
    (dict(alpha=0.0), "alpha must lie in"),
    (dict(eps=0.0), "eps must be > 0"),
    (dict(X=np.zeros((5, 2), dtype=np.float32)), "X must be a C-contiguous float64"),
    (dict(R=np.zeros((4, 2))), "R must be a C-contiguous float64 array with 5 rows"),
    (dict(R=np.zeros((5, 3))), "X and R must have one shape"),
    (dict(X=np.zeros((2, 5)).T), "X must be a C-contiguous"),
    (dict(degrees=np.ones(4)), "degrees must hold 5 row sums of W"),
])
def test_bad_input_names_the_parameter(kwargs, match):
    args = dict(W=_graph(5, 0.3, 0), X=np.zeros((5, 2)), R=np.ones((5, 2)), alpha=0.5, eps=1e-6)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        push_resolvent(args.pop("W"), args.pop("X"), args.pop("R"), args.pop("alpha"), **args)


def test_a_node_without_weight_is_refused():
    W = sp.csr_matrix(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="positive degree"):
        push_resolvent(W, np.zeros((3, 1)), np.ones((3, 1)), 0.5, eps=1e-6)
