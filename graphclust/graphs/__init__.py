"""Proximity graphs: candidate edges, edge selection (MST ensembles) and edge weights."""

from ._affinity import AFFINITY_KINDS, affinity, default_sigma, local_scales
from ._graph import Graph
from ._knn import knn_graph

__all__ = sorted(["AFFINITY_KINDS", "Graph", "affinity", "default_sigma", "knn_graph", "local_scales"])
