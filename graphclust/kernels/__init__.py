"""Normalised graph operators, truncated spectra and diffusion kernels."""

from ._cg import CGConvergenceWarning, CGInfo, deflated_cg, shifted_cg
from ._consistency import ColumnNorms, ConsistencyKernel
from ._spectrum import Spectrum, SpectrumConvergenceWarning, normalized_adjacency, top_eigenpairs
from ._laplacian import (
    NORMALIZATIONS,
    LaplacianSpectrum,
    SymmetricForm,
    laplacian,
    laplacian_eigenpairs,
    symmetric_form,
)
from ._heat import KERNELS, SpectralKernel, kernel_weights, spectral_kernel

__all__ = sorted(["Spectrum", "SpectrumConvergenceWarning", "normalized_adjacency", "top_eigenpairs"])
__all__ += [  # Laplacians and spectral kernels (AHK issue)
    "KERNELS",
    "LaplacianSpectrum",
    "NORMALIZATIONS",
    "SpectralKernel",
    "SymmetricForm",
    "kernel_weights",
    "laplacian",
    "laplacian_eigenpairs",
    "spectral_kernel",
    "symmetric_form",
]
__all__ = sorted(__all__)
__all__ += [  # consistency kernel (consistency issue)
    "CGConvergenceWarning",
    "CGInfo",
    "ColumnNorms",
    "ConsistencyKernel",
    "deflated_cg",
    "shifted_cg",
]
__all__ = sorted(__all__)
