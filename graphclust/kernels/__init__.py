"""Normalised graph operators, truncated spectra and diffusion kernels.

Kernel objects (`ConsistencyKernel`, `SpectralKernel`) implement the operator protocol of
`KernelOperator` (size, apply to a block, column norms, spectrum): the clusterers read every
kernel through it.
"""

from .._deprecation import moved_names as _moved_names
from ._bethe import (
    BETHE_DENSE_MAX_NODES,
    BetheEmbedding,
    bethe_count,
    bethe_embedding,
    bethe_hessian,
    count_eigenvalues_above,
    nonbacktracking_radius,
    regularized_adjacency,
    undirected_adjacency,
)
from ._bethe_reference import bethe_hessian_reference, nonbacktracking_matrix_reference
from ._cg import CGConvergenceWarning, CGInfo, deflated_cg, shifted_cg
from ._consistency import ConsistencyKernel
from ._laplacian import (
    NORMALIZATIONS,
    LaplacianSpectrum,
    SymmetricForm,
    laplacian,
    laplacian_eigenpairs,
    symmetric_form,
)
from ._resolvent import ResolventSpectrum, resolvent_eigenpairs
from ._protocol import DENSE_KERNEL_MAX_NODES, ColumnNorms, KernelOperator, is_kernel_operator
from ._local_push import push_resolvent
from ._spmm import chebyshev_step, dense_rows, shifted_product, symmetric_permutation
from ._tall_blocks import block_inner, block_triangular, block_update, block_update_inner
from ._spectral_kernels import SPECTRAL_KERNELS, SpectralKernel, kernel_weights, spectral_kernel
from ._spectrum import (
    DENSE_SPECTRUM_MAX_NODES,
    Spectrum,
    SpectrumConvergenceWarning,
    SpectrumPerformanceWarning,
    arpack_eigsh,
    diagonal_scaling,
    normalized_adjacency,
    top_eigenpairs,
)

__all__ = sorted([
    "arpack_eigsh",
    "DENSE_SPECTRUM_MAX_NODES",
    "BETHE_DENSE_MAX_NODES",
    "BetheEmbedding",
    "bethe_count",
    "block_inner",
    "block_triangular",
    "block_update",
    "block_update_inner",
    "bethe_embedding",
    "bethe_hessian",
    "bethe_hessian_reference",
    "count_eigenvalues_above",
    "nonbacktracking_matrix_reference",
    "nonbacktracking_radius",
    "regularized_adjacency",
    "ResolventSpectrum",
    "symmetric_permutation",
    "dense_rows",
    "resolvent_eigenpairs",
    "undirected_adjacency",
    "CGConvergenceWarning",
    "CGInfo",
    "ColumnNorms",
    "ConsistencyKernel",
    "KernelOperator",
    "LaplacianSpectrum",
    "NORMALIZATIONS",
    "SPECTRAL_KERNELS",
    "Spectrum",
    "SpectrumConvergenceWarning",
    "SpectrumPerformanceWarning",
    "SpectralKernel",
    "SymmetricForm",
    "deflated_cg",
    "push_resolvent",
    "diagonal_scaling",
    "chebyshev_step",
    "shifted_product",
    "is_kernel_operator",
    "kernel_weights",
    "laplacian",
    "laplacian_eigenpairs",
    "normalized_adjacency",
    "shifted_cg",
    "spectral_kernel",
    "symmetric_form",
    "top_eigenpairs",
])

__getattr__ = _moved_names(__name__, {"KERNELS": "graphclust.kernels.SPECTRAL_KERNELS"})
