"""Multi-shift CG, the fused block kernels, and the column norms of several alphas at once."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from hypothesis import given, settings
from hypothesis import strategies as st

import graphclust as gc
from graphclust.datasets import three_moons
from graphclust.kernels import CGConvergenceWarning, ConsistencyKernel, deflated_cg
from graphclust.kernels._cg import shifted_cg
from graphclust.kernels._spmm import cg_direction, cg_update, shifted_product

pytestmark = pytest.mark.usefixtures("one_blas_thread")


@pytest.fixture(scope="module")
def spd():
    """A graph Laplacian plus 1e-3 I: SPD, condition number about 10^4."""
    M = sp.random(400, 400, density=0.02, random_state=1)
    M = M + M.T
    return (sp.diags(np.asarray(M.sum(axis=1)).ravel() + 1e-3) - M).tocsr()


def test_shifted_cg_matches_dense_solves(spd):
    B = np.random.default_rng(0).normal(size=(400, 5))
    shifts = [0.5, 0.0, 0.01, 3.0]  # any order; the smallest is the base system
    Xs, infos = shifted_cg(lambda P: spd @ P, B, shifts, rtol=1e-10)
    A = spd.toarray()
    for s, X, info in zip(shifts, Xs, infos):
        ref = np.linalg.solve(A + s * np.eye(400), B)
        assert info.converged.all() and info.residuals.max() <= 1e-10
        assert np.abs(X - ref).max() <= 1e-7 * np.abs(ref).max()
    # one Krylov run: the iteration count is that of plain CG on the base system
    _, plain = deflated_cg(lambda P: spd @ P, B, rtol=1e-10)
    assert abs(infos[0].n_iter - plain.n_iter) <= 2


def test_shifted_cg_warns_with_numbers(spd):
    B = np.random.default_rng(0).normal(size=(400, 2))
    with pytest.warns(CGConvergenceWarning, match=r"did not converge in 3 iterations; achieved"):
        shifted_cg(lambda P: spd @ P, B, [0.0, 1.0], rtol=1e-12, maxiter=3)
    with pytest.raises(ValueError, match="shifts is empty"):
        shifted_cg(lambda P: spd @ P, B, [])


def test_plain_cg_takes_textbook_iterations(spd):
    """Regression: without a basis the first direction aliased the residual updated in place,
    which broke conjugacy (77 iterations instead of scipy's 41 on this system)."""
    b = np.random.default_rng(0).normal(size=400)
    count = [0]
    spla.cg(spd, b, rtol=1e-10, callback=lambda xk: count.__setitem__(0, count[0] + 1))
    x, info = deflated_cg(lambda P: spd @ P, b, rtol=1e-10)
    assert info.converged.all()
    assert abs(info.n_iter - count[0]) <= 2


def test_deflated_cg_refines_from_a_start(spd):
    B = np.random.default_rng(0).normal(size=(400, 3))
    X, _ = deflated_cg(lambda P: spd @ P, B, rtol=1e-6)
    X2, info = deflated_cg(lambda P: spd @ P, B, rtol=1e-11, x0=X)
    ref = np.linalg.solve(spd.toarray(), B)
    assert info.converged.all()
    assert np.abs(X2 - ref).max() <= 1e-8 * np.abs(ref).max()


@pytest.mark.parametrize("b", [1, 3, 8, 33])
def test_fused_block_kernels_match_numpy(spd, b):
    rng = np.random.default_rng(b)
    P = rng.normal(size=(400, b))
    assert np.allclose(shifted_product(spd, P, 0.7), P - 0.7 * (spd @ P), rtol=1e-13, atol=1e-12)
    assert np.allclose(shifted_product(spd, P[:, 0], 0.7), P[:, 0] - 0.7 * (spd @ P[:, 0]))
    X, R, AP = (rng.normal(size=(400, b)) for _ in range(3))
    step = rng.normal(size=b)
    Xr, Rr = X + P * step, R - AP * step
    rr = cg_update(X, R, P, AP, step)
    assert np.allclose(X, Xr) and np.allclose(R, Rr) and np.allclose(rr, (Rr * Rr).sum(axis=0))
    beta = rng.normal(size=b)
    expect = P * beta + R
    assert np.allclose(cg_direction(P, R, beta), expect)
    # Fortran-ordered blocks (numpy's column selections) take the numpy path, same result
    F = np.asfortranarray(rng.normal(size=(400, b)))
    assert np.allclose(shifted_product(spd, F, 0.3), F - 0.3 * (spd @ F))
    # a given output block receives the same numbers (the Lanczos flows recycle their blocks)
    out = np.full((400, b), np.nan)
    got = shifted_product(spd, P, 0.7, out=out)
    np.testing.assert_array_equal(got, shifted_product(spd, P, 0.7))
    if b >= 8:  # the numba path writes into `out`
        assert got is out
        with pytest.raises(ValueError, match="out must be a C-contiguous float64 array"):
            shifted_product(spd, P, 0.7, out=np.empty((400, b + 1)))


def test_shifted_product_is_bitwise_the_same_on_any_thread_count():
    # several row chunks of the parallel loop; each row is summed in the same order on any
    # thread count, and in scipy's order
    import numba

    S = sp.random(9000, 9000, density=0.002, random_state=2, format="csr")
    P = np.random.default_rng(0).normal(size=(9000, 12))
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = shifted_product(S, P, 0.7)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = shifted_product(S, P, 0.7)
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(one, two)
    assert np.array_equal(one, P - 0.7 * (S @ P))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 400), b=st.integers(2, 14),
       density=st.floats(0.0, 0.1), alpha=st.floats(-2, 2))
def test_the_narrow_products_are_scipys_bit_for_bit(seed, n, b, density, alpha):
    # 2-4 columns summed in four registers, 5-8 in eight (the missing ones repeat the last),
    # wider ones in a row buffer: every path adds the same products in scipy's order
    from graphclust.kernels import chebyshev_step

    rng = np.random.default_rng(seed)
    S = sp.random(n, n, density=density, random_state=rng, format="csr")
    P, Y = rng.normal(size=(n, b)), rng.normal(size=(n, b))
    assert np.array_equal(shifted_product(S, P, alpha), P - alpha * (S @ P))
    seg, w = rng.integers(0, 3, size=n), rng.normal(size=n)
    expected = 2.0 * (S @ P) - Y
    chebyshev_step(S.indptr, S.indices, S.data, P, Y, 2.0, -1.0, seg, w, 3)
    assert np.array_equal(Y, expected)


def test_blocks_of_zero_and_one_columns_through_the_compiled_products():
    from graphclust.kernels import chebyshev_step
    from graphclust.kernels._spmm import csr_block_update

    S = sp.random(50, 50, density=0.1, random_state=0, format="csr")
    for b in (0, 1):
        P = np.random.default_rng(b).normal(size=(50, b))
        out = csr_block_update(S.indptr, S.indices, S.data, P, P, -0.7, np.empty_like(P))
        assert np.array_equal(out, P - 0.7 * (S @ P))
        Y = np.ones((50, b))
        sums = chebyshev_step(S.indptr, S.indices, S.data, P, Y, 2.0, -1.0,
                              np.zeros(50, np.int64), np.ones(50), 1)
        assert np.array_equal(Y, 2.0 * (S @ P) - 1.0) and sums.shape == (1, b)


@pytest.mark.parametrize("b", [3, 6, 12])
def test_blocks_beyond_the_cache_take_the_prefetching_path_with_the_same_numbers(b):
    # above PREFETCH_MIN_BYTES the product prefetches the rows it will gather: the same sums
    from graphclust.kernels._spmm import PREFETCH_MIN_BYTES

    rng = np.random.default_rng(b)
    n = PREFETCH_MIN_BYTES // (8 * b) + 1000
    rows = np.repeat(np.arange(n), 3)
    S = sp.csr_matrix((rng.normal(size=3 * n), (rows, rng.integers(0, n, size=3 * n))),
                      shape=(n, n))
    P = rng.normal(size=(n, b))
    assert P.nbytes > PREFETCH_MIN_BYTES
    assert np.array_equal(shifted_product(S, P, 0.7), P - 0.7 * (S @ P))


@pytest.fixture(scope="module")
def moons_W():
    X, _ = three_moons(2000, noise=0.1, random_state=3)
    return gc.affinity(gc.knn_graph(X, 8))


def test_column_norms_for_several_alphas_equal_one_at_a_time(moons_W):
    """n = 2000 > 1500: a Lanczos basis, accurate eigenpairs, so one multi-shift run."""
    alphas = [0.9, 0.99, 0.999]
    K = ConsistencyKernel(moons_W, 0.999, method="cg", rtol=1e-10, random_state=0)
    assert K._deflation == "init"
    together = K.column_norms_for(alphas, n_probes=16, random_state=5)
    for a, got in zip(alphas, together):
        alone = K.with_alpha(a).column_norms(n_probes=16, random_state=5)
        assert got.method == "estimate"
        assert np.allclose(got.nu, alone.nu, rtol=1e-7, atol=0)
        assert np.allclose(got.relative_error, alone.relative_error, rtol=1e-5, atol=1e-12)
        assert got.cg.converged.all()
    exact = K.column_norms_for([0.9, 0.99], "exact", block_size=1000)
    assert [e.method for e in exact] == ["solve", "solve"]
    assert np.allclose(exact[1].nu, K.with_alpha(0.99).column_norms("exact", block_size=1000).nu)


def test_components_head_the_deflation_basis():
    """A kNN graph in 4 components: eigenvalue 1 has multiplicity 4, which Lanczos alone does
    not resolve (it returned 3 of the 4 here); the component vectors sqrt(d) 1_comp are put in
    the basis exactly, and the solves still equal the dense kernel."""
    from graphclust.kernels._consistency import component_eigenvectors

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(400, 2)) * 0.3 + c for c in [(0, 0), (9, 0), (0, 9), (9, 9)]])
    W = gc.affinity(gc.knn_graph(X, 8))
    Z = component_eigenvectors(W)
    assert Z.shape == (1600, 4) and np.allclose(Z.T @ Z, np.eye(4))
    K = ConsistencyKernel(W, 0.9999, method="cg", rtol=1e-10, random_state=0)
    assert np.array_equal(K.spectrum.values[:4], np.ones(4))
    assert K.spectrum.values[4] < 1 - 1e-8 and K.spectrum.residuals.max() < 1e-6
    Phi = K.spectrum.vectors
    assert np.allclose(Phi.T @ Phi, np.eye(Phi.shape[1]), atol=1e-10)
    B = rng.normal(size=(1600, 3))
    dense = ConsistencyKernel(W, 0.9999, method="dense")
    assert np.allclose(K.apply(B), dense.apply(B), rtol=0, atol=1e-7 * np.abs(dense.apply(B)).max())
    assert component_eigenvectors(gc.affinity(gc.knn_graph(X[:400], 8))) is None


def test_lu_kernel_equals_the_dense_kernel_and_cg(moons_W):
    dense = ConsistencyKernel(moons_W, 0.999, method="dense")
    lu = ConsistencyKernel(moons_W, 0.999, method="lu", rtol=1e-12, random_state=0)
    cg = ConsistencyKernel(moons_W, 0.999, method="cg", rtol=1e-12, random_state=0)
    assert lu.method == "lu" and cg.method == "cg"
    B = np.random.default_rng(4).normal(size=(2000, 6))
    ref = dense.apply(B)
    assert np.allclose(lu.apply(B), ref, rtol=0, atol=1e-9 * np.abs(ref).max())
    assert lu.last_cg_.converged.all() and lu.last_cg_.residuals.max() <= 1e-12
    assert np.allclose(lu.apply(B[:, 0]), ref[:, 0], rtol=0, atol=1e-9 * np.abs(ref).max())
    # same basis and probes: the estimated norms agree with cg's to the solve accuracy
    a = lu.column_norms(n_probes=8, random_state=2)
    b = cg.column_norms(n_probes=8, random_state=2)
    assert np.allclose(a.nu, b.nu, rtol=1e-8)
    two = lu.column_norms_for([0.99, 0.999], n_probes=8, random_state=2)
    assert np.allclose(two[1].nu, a.nu, rtol=1e-12)
    # one factorisation per alpha, shared by every kernel on the basis (the last alpha kept)
    factor = lu._basis.lu
    assert factor[0] == 0.999
    lu.with_alpha(0.999).apply(B[:, :2])
    assert lu._basis.lu is factor
    lu.with_alpha(0.99).apply(B[:, :2])
    assert lu._basis.lu[0] == 0.99 and lu._basis.lu is not factor


def test_lu_clustering_on_a_pixel_grid_matches_cg():
    rng = np.random.default_rng(0)
    img = rng.random((40, 50))
    img[10:30, 15:40] += 2.0
    g = gc.graphs.grid_graph(img)
    fits = {m: gc.ConsistencyClustering(2, alpha=0.9999, sigma=0.5, method=m,
                                        eigen_solver="shift-invert", random_state=0).fit(g)
            for m in ("lu", "cg")}
    assert fits["lu"].kernel_method_ == "lu"
    assert np.array_equal(fits["lu"].representatives_, fits["cg"].representatives_)
    assert np.array_equal(fits["lu"].labels_, fits["cg"].labels_)
    inside = np.zeros(img.shape, bool)
    inside[10:30, 15:40] = True
    assert gc.metrics.clustering_error(inside.ravel().astype(int), fits["lu"].labels_) == 0


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 60), density=st.floats(0.0, 0.4), seed=st.integers(0, 2**31 - 1))
def test_property_symmetric_permutation_is_scipys_bit_for_bit(n, density, seed):
    # the threaded permutation of the flows and the Leiden runs against scipy's two indexings:
    # the same CSR arrays (each row's entries in the same order), not only the same matrix
    from graphclust.kernels import symmetric_permutation

    rng = np.random.default_rng(seed)
    W = sp.random(n, n, density=density, random_state=rng, format="csr")
    order = rng.permutation(n)
    ref = W[order][:, order].tocsr()
    out = symmetric_permutation(W, order)
    np.testing.assert_array_equal(out.indptr, ref.indptr)
    np.testing.assert_array_equal(out.indices, ref.indices)
    np.testing.assert_array_equal(out.data, ref.data)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(0, 300), b=st.integers(1, 12), density=st.floats(0.0, 0.5),
       seed=st.integers(0, 10**6), duplicates=st.booleans())
def test_property_dense_rows_is_scipys_toarray_bit_for_bit(n, b, density, seed, duplicates):
    # the flows' indicator block made dense over the threads: scipy's numbers, duplicate
    # entries of a row added in the same order
    from graphclust.kernels import dense_rows

    rng = np.random.default_rng(seed)
    A = sp.random(n, b, density=density, random_state=rng, format="csr")
    if duplicates:  # each row's entries twice, the second time with other values
        counts = np.diff(A.indptr)
        rows = np.repeat(np.arange(n), counts)
        order = np.argsort(np.r_[rows, rows], kind="stable")
        A = sp.csr_matrix((np.r_[A.data, rng.normal(size=A.nnz)][order],
                           np.r_[A.indices, A.indices][order], np.r_[0, np.cumsum(2 * counts)]),
                          shape=A.shape)
        assert A.nnz == 2 * counts.sum() and not A.has_canonical_format or A.nnz == 0
    out = dense_rows(A)
    assert out.flags.c_contiguous and out.dtype == np.float64
    np.testing.assert_array_equal(out, A.toarray())
