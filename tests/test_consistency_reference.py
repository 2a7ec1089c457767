"""The matrix-free consistency clustering against the dense reference (explicit inverse).

Seeded data of 1 200 points with a fixed W, alpha and c:
- exact path (dense spectrum, or deflated CG with one solve per column norm): seeds and labels
  identical, inlierness, within-cluster inlierness and Omega within 1e-8 relative;
- scalable path (deflated CG, estimated column norms): same seeds, >= 99% identical labels,
  Omega within 1e-3.
"""

import numpy as np
import pytest

import graphclust as gc
from graphclust.cluster import consistency_path, consistency_reference
from graphclust.datasets import three_moons

N_CLUSTERS = 5


@pytest.fixture(scope="module")
def W():
    X, _ = three_moons(1200, noise=0.12, random_state=1)
    g = gc.knn_graph(X, 10)
    assert g.n_components == 1
    return gc.affinity(g)


@pytest.fixture(scope="module")
def reference(W):
    return {alpha: consistency_reference(W, alpha, N_CLUSTERS) for alpha in (0.99, 0.999)}


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("method,norms", [("dense", "exact"), ("cg", "exact")])
def test_exact_path_matches_reference(W, reference, method, norms):
    ref = reference[0.99]
    K = gc.ConsistencyKernel(W, 0.99, method=method, rtol=1e-12, random_state=0)
    nu = K.column_norms(norms, block_size=300).nu
    assert rel(nu, ref["nu"]) < 1e-10
    path = consistency_path(K, nu, [2, 3, N_CLUSTERS], cluster_inlierness_for=N_CLUSTERS)
    assert path["seeds"].tolist() == ref["seeds"].tolist()
    assert np.array_equal(path["labels"][N_CLUSTERS], ref["labels"])
    assert rel(path["inlierness"], ref["inlierness"]) < 1e-8
    assert rel(path["cluster_inlierness"], ref["cluster_inlierness"]) < 1e-8
    assert abs(path["omega"][N_CLUSTERS] - ref["omega"]) <= 1e-8 * abs(ref["omega"])
    assert np.allclose(path["between"][N_CLUSTERS], ref["between"], rtol=1e-8, atol=0)
    # nested seeds: the path for c = 3 is the reference for c = 3
    ref3 = consistency_reference(W, 0.99, 3)
    assert np.array_equal(path["labels"][3], ref3["labels"])
    assert abs(path["omega"][3] - ref3["omega"]) <= 1e-8 * abs(ref3["omega"])


def test_scalable_path_matches_reference(W, reference):
    ref = reference[0.999]
    K = gc.ConsistencyKernel(W, 0.999, method="cg", n_eigenpairs=64, rtol=1e-8, random_state=0)
    norms = K.column_norms("estimate", n_probes=64, random_state=0)
    assert norms.method == "estimate"
    path = consistency_path(K, norms.nu, [N_CLUSTERS])
    assert path["seeds"].tolist() == ref["seeds"].tolist()
    assert np.mean(path["labels"][N_CLUSTERS] == ref["labels"]) >= 0.99
    assert abs(path["omega"][N_CLUSTERS] - ref["omega"]) <= 1e-3


def test_estimator_exact_mode_matches_reference(W, reference):
    ref = reference[0.99]
    model = gc.ConsistencyClustering(
        N_CLUSTERS, alpha=0.99, affinity="precomputed", method="dense"
    ).fit(W)
    assert model.representatives_.tolist() == ref["seeds"].tolist()
    assert np.array_equal(model.labels_, ref["labels"])
    assert rel(model.inlierness_, ref["inlierness"]) < 1e-8
    assert rel(model.cluster_inlierness_, ref["cluster_inlierness"]) < 1e-8
    assert abs(model.omega_[0, 0, 0] - ref["omega"]) <= 1e-8 * abs(ref["omega"])


def test_reference_refuses_large_n():
    import scipy.sparse as sp

    with pytest.raises(ValueError, match="n = 5001 exceeds 5000"):
        consistency_reference(sp.identity(5001, format="csr"), 0.5, 2)
