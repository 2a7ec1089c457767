"""Clusterers built on graphs and kernels."""

__all__ = []
