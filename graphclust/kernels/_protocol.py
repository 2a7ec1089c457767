"""What a kernel object provides: the operator protocol every clusterer reads kernels through.

A *kernel operator* K is a symmetric positive semi-definite n x n matrix that is never formed.
Clusterers only ever ask it these questions:

===================  =========================================================================
member               contract
===================  =========================================================================
``n``                number of nodes
``apply(B)``         K @ B for an (n,) vector or an (n, b) block, same shape out
``column_norms()``   `ColumnNorms`: nu_j = ||K e_j|| for every j, exact or estimated, with the
                     estimated error stated (what the seeds' cosine geometry needs)
``spectrum``         optional: the `Spectrum` of the graph operator the kernel is a function
                     of (descending eigenvalues, orthonormal vectors), when it has one
===================  =========================================================================

`ConsistencyKernel` (U = beta (I - alpha S)^-1, solves) and `SpectralKernel` (Psi diag(w) Psi^T,
factors) implement it. `is_kernel_operator` checks an object against it, so a clusterer can
refuse what it cannot read with a message that says what is missing.

Which clusterer can read which kernel is a question the kernel answers (`readings`):

- ``"seeds"``: the consistency seeds, labels, outliers and criterion read the columns of K by
  their cosines; they need ``column_norms`` and a kernel with non-negative entries (an inverse
  M-matrix such as U, or a spectral kernel with its constant part);
- ``"embedding"``: k-means on the row-normalised top eigenvectors, which needs ``spectrum`` or
  ``top_eigenvectors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["ColumnNorms", "DENSE_KERNEL_MAX_NODES", "KernelOperator", "is_kernel_operator"]

#: Dense kernel modes (an n x n array) are refused above this many nodes.
DENSE_KERNEL_MAX_NODES = 5000


@dataclass
class ColumnNorms:
    """Column norms nu_j = ||K e_j|| and how accurately they are known.

    Attributes
    ----------
    nu : array (n,)
    method : str
        ``"dense"`` (closed form from the full spectrum, exact to rounding), ``"factors"`` (from
        the kernel's low-rank factors, exact to rounding), ``"solve"`` (one solve per column;
        accurate to the solver tolerance) or ``"estimate"`` (top-K exact + stochastic
        remainder).
    relative_error : array (n,)
        Estimated standard error of nu_j divided by nu_j (0 for exact methods). For
        ``"estimate"`` it is ``0.5 * se(remainder_j) / nu_j^2`` with se the sample standard error
        over the probes.
    top_fraction : array (n,) or None
        Share of nu_j^2 carried by the exactly computed top-K part (``"estimate"`` only).
    remainder_bound : float or None
        beta^2 / (1 - alpha lambda_K)^2, an upper bound of every remainder entry when the
        (K+1)-th eigenvalue is at most lambda_K (``"estimate"`` only).
    cg : CGInfo or None
        The solves behind it.
    """

    nu: np.ndarray
    method: str
    relative_error: np.ndarray
    top_fraction: np.ndarray | None = None
    remainder_bound: float | None = None
    cg: object | None = None

    @property
    def max_relative_error(self):
        return float(self.relative_error.max()) if self.relative_error.size else 0.0


@runtime_checkable
class KernelOperator(Protocol):
    """The members a kernel object must provide (module table)."""

    @property
    def n(self) -> int:  # pragma: no cover - protocol
        ...

    def apply(self, B):  # pragma: no cover - protocol
        ...

    def column_norms(self, method="auto", **options) -> ColumnNorms:  # pragma: no cover
        ...


def is_kernel_operator(obj):
    """True when `obj` provides ``n``, ``apply`` and ``column_norms`` (`KernelOperator`).

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.kernels import SpectralKernel, is_kernel_operator
    >>> is_kernel_operator(SpectralKernel(np.eye(3)[:, :2], np.ones(2)))
    True
    >>> is_kernel_operator(np.eye(3))
    False
    """
    return isinstance(obj, KernelOperator)
