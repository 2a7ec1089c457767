"""ConsistencyClustering, SpectralClustering and AHKClustering fit inside `limit_threads()` (the
latter two by their base class's `fit`):
the whole fit runs with the thread count of `graphclust.set_num_threads` /
GRAPHCLUST_NUM_THREADS / the dynamic default, and the limits are restored afterwards."""

import importlib
from contextlib import contextmanager

import numpy as np
import pytest

import graphclust as gc

ESTIMATORS = [
    ("graphclust.cluster._consistency", gc.ConsistencyClustering, dict(alpha=0.99, sigma=1.0)),
    ("graphclust.cluster._spectral_base", gc.SpectralClustering, {}),
    ("graphclust.cluster._spectral_base", gc.AHKClustering, {}),
]


@pytest.fixture
def two_blobs():
    rng = np.random.default_rng(0)
    return np.vstack([rng.normal(0, 0.3, (30, 2)), rng.normal(4, 0.3, (30, 2))])


@pytest.mark.parametrize("module,cls,params", ESTIMATORS, ids=[e[1].__name__ for e in ESTIMATORS])
def test_fit_runs_inside_limit_threads(module, cls, params, two_blobs, monkeypatch):
    import numba
    from threadpoolctl import threadpool_info

    mod = importlib.import_module(module)
    active = []  # thread counts of the limit_threads blocks currently entered
    real = mod.limit_threads

    @contextmanager
    def recording(*a, **k):
        with real(*a, **k) as n:
            active.append(n)
            try:
                yield n
            finally:
                active.pop()

    seen = {}
    real_fit = cls._fit

    def fit_and_look(self, X):
        seen["active"] = list(active)
        seen["numba"] = numba.get_num_threads()
        seen["blas"] = [p["num_threads"] for p in threadpool_info()]
        return real_fit(self, X)

    monkeypatch.setattr(mod, "limit_threads", recording)
    monkeypatch.setattr(cls, "_fit", fit_and_look)
    numba_before = numba.get_num_threads()
    try:
        gc.set_num_threads(1)
        model = cls(2, random_state=0, **params).fit(two_blobs)
    finally:
        gc.set_num_threads(None)
    assert seen["active"] == [1], "fit did not run inside limit_threads()"
    assert seen["numba"] == 1
    assert all(t == 1 for t in seen["blas"])
    assert numba.get_num_threads() == numba_before  # restored
    assert model.labels_.shape == (60,)

