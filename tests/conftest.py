"""Shared test fixtures: the real-data gate and invariant helpers."""

import importlib.util
import os
from pathlib import Path

import pytest

from graphclust.datasets import DataNotFoundError, data_dir


def require_data():
    """Skip (or fail when GRAPHCLUST_REQUIRE_DATA=1) if the real data folder is absent."""
    try:
        return data_dir()
    except DataNotFoundError as err:
        if os.environ.get("GRAPHCLUST_REQUIRE_DATA") == "1":
            pytest.fail(f"GRAPHCLUST_REQUIRE_DATA=1 but {err}")
        pytest.skip(f"real data not available: {err}")


@pytest.fixture
def shared_data():
    """Path of the real data folder; skips the test when absent (fails under REQUIRE_DATA)."""
    return require_data()


@pytest.fixture(scope="module")
def one_blas_thread():
    """Limit BLAS/LAPACK to one thread for a module (``pytestmark = usefixtures(...)``).

    On the 2 shared cores of CI, threaded LAPACK is 10-50x slower under contention.
    """
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def load_script(name):
    """The module of ``scripts/<name>.py``, imported from its file (scripts are no package)."""
    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
