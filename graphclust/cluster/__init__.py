"""Clusterers built on graphs and kernels."""

from ._ahk import AHKClustering
from ._spectral import SpectralClustering
from ._consistency import ConsistencyClustering, ConsistencyWarning, consistency_path
from ._consistency_reference import consistency_reference
from ._spectral_reference import ahk_reference, njw_reference

__all__ = []
__all__ += ["AHKClustering", "SpectralClustering", "ahk_reference", "njw_reference"]  # AHK issue
__all__ += [  # consistency issue
    "ConsistencyClustering",
    "ConsistencyWarning",
    "consistency_path",
    "consistency_reference",
]
