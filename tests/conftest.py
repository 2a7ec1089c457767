"""Shared test fixtures: the real-data gate and invariant helpers."""

import os

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
