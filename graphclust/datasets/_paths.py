"""Where the real benchmark data live: ``$GRAPHCLUST_DATA``, else ``../shared/datasets``."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["data_dir", "DataNotFoundError"]


class DataNotFoundError(FileNotFoundError):
    """The real data folder (or one file in it) is not on this machine."""


def data_dir(required=True):
    """Return the folder of real data sets.

    Looks at the environment variable ``GRAPHCLUST_DATA`` first, then at ``../shared/datasets``
    beside the repository root. Raises `DataNotFoundError` (or returns None when `required` is
    False) if neither exists.
    """
    env = os.environ.get("GRAPHCLUST_DATA")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[3] / "shared" / "datasets")
    for path in candidates:
        if path.is_dir():
            return path
    if not required:
        return None
    raise DataNotFoundError(
        "the real data sets were not found: set GRAPHCLUST_DATA to the folder holding them "
        f"(looked in {', '.join(str(p) for p in candidates)})."
    )


def data_file(*parts):
    path = data_dir().joinpath(*parts)
    if not path.exists():
        raise DataNotFoundError(f"data file {path} does not exist.")
    return path
