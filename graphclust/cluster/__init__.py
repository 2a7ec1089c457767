"""Clusterers built on graphs and kernels."""

from ._consistency import ConsistencyClustering, ConsistencyWarning, consistency_path
from ._consistency_reference import consistency_reference

__all__ = []
__all__ += [  # consistency issue
    "ConsistencyClustering",
    "ConsistencyWarning",
    "consistency_path",
    "consistency_reference",
]
