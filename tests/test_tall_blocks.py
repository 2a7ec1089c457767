"""Row-split dense products of tall blocks (`graphclust.kernels.block_*`) against numpy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphclust.kernels import block_inner, block_triangular, block_update, block_update_inner
from graphclust.kernels._tall_blocks import CHUNK_ROWS
from graphclust.threads import limit_threads


def blocks(n, a, b, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, a)), rng.normal(size=(n, b)), rng.normal(size=(a, b))


# below two chunks one numpy call; above, the chunked path over the threads
SIZES = [0, 1, 17, 2 * CHUNK_ROWS + 5]


@pytest.mark.parametrize("n", SIZES)
def test_inner_products_match_numpy(n):
    X, Y, _ = blocks(n, 7, 5, 0)
    np.testing.assert_allclose(block_inner(X, Y), X.T @ Y, rtol=1e-12, atol=1e-9)
    G = block_inner(X)
    np.testing.assert_allclose(G, X.T @ X, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(G, G.T)


@pytest.mark.parametrize("n", SIZES)
def test_update_in_place_matches_numpy(n):
    X, Y, M = blocks(n, 7, 5, 1)
    Z = Y.copy()
    out = block_update(Z, X, M, -0.7)
    assert out is Z
    np.testing.assert_allclose(Z, Y - 0.7 * X @ M, rtol=1e-12, atol=1e-12)
    # a Fortran-ordered block takes numpy's path, with the same result
    F = np.array(Y, order="F")
    np.testing.assert_allclose(block_update(F, X, M, -0.7), Y - 0.7 * X @ M, rtol=1e-12,
                               atol=1e-12)


@pytest.mark.parametrize("n", SIZES)
def test_triangular_in_place_matches_numpy(n):
    X, _, _ = blocks(n, 6, 6, 2)
    U = np.triu(np.random.default_rng(3).normal(size=(6, 6)))
    Z = X.copy()
    assert block_triangular(Z, U) is Z
    np.testing.assert_allclose(Z, X @ U, rtol=1e-12, atol=1e-12)
    if n > 1:
        with pytest.raises(ValueError, match="C-contiguous float64"):
            block_triangular(np.asfortranarray(X), U)


def test_results_do_not_depend_on_the_thread_count():
    X, Y, M = blocks(2 * CHUNK_ROWS + 1000, 9, 9, 4)
    U = np.triu(M)
    out = []
    for t in (1, 2):
        with limit_threads(t):
            Z = Y.copy()
            block_update(Z, X, M, -1.0)
            F = Y.copy()
            G = block_update_inner(F, X, M)
            out.append((block_inner(X, Y), block_inner(X), Z, block_triangular(Y.copy(), U), F, G))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_results_do_not_depend_on_other_processes_load(monkeypatch):
    # a busy machine: limit_threads(2) leaves BLAS two threads, then the dynamic count falls
    # to one and the chunks run one after the other; each must still get one BLAS thread
    import graphclust.threads as threads

    X, Y, M = blocks(2 * CHUNK_ROWS + 1000, 9, 9, 4)
    with limit_threads(1):
        quiet = (block_inner(X, Y), block_inner(X), block_update_inner(Y.copy(), X, M))
    with limit_threads(2):
        monkeypatch.setattr(threads, "get_num_threads", lambda: 1)
        busy = (block_inner(X, Y), block_inner(X), block_update_inner(Y.copy(), X, M))
    for a, b in zip(quiet, busy):
        np.testing.assert_array_equal(a, b)


@given(n=st.integers(0, 300), a=st.integers(0, 6), b=st.integers(1, 6), seed=st.integers(0, 99))
@settings(max_examples=40, deadline=None)
def test_small_blocks_any_shape(n, a, b, seed):
    X, Y, M = blocks(n, a, b, seed)
    np.testing.assert_allclose(block_inner(X, Y), X.T @ Y, atol=1e-10)
    Z = Y.copy()
    np.testing.assert_allclose(block_update(Z, X, M, 2.0), Y + 2.0 * X @ M, atol=1e-10)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("with_z", [False, True])
def test_fused_update_and_inner_product_match_numpy(n, with_z):
    X, Y, M = blocks(n, 7, 5, 5)
    Z = np.random.default_rng(6).normal(size=(n, 4)) if with_z else None
    out = Y.copy()
    G = block_update_inner(out, X, M, Z, alpha=-0.3)
    expect = Y - 0.3 * X @ M
    np.testing.assert_allclose(out, expect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(G, (Z if with_z else expect).T @ expect, rtol=1e-11, atol=1e-9)
    if not with_z:
        np.testing.assert_array_equal(G, G.T)
