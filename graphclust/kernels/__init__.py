"""Normalised graph operators, truncated spectra and diffusion kernels."""

from ._spectrum import Spectrum, SpectrumConvergenceWarning, normalized_adjacency, top_eigenpairs

__all__ = sorted(["Spectrum", "SpectrumConvergenceWarning", "normalized_adjacency", "top_eigenpairs"])
