"""Proximity graphs: candidate edges, edge selection (MST ensembles) and edge weights."""

from ._affinity import AFFINITY_KINDS, affinity, default_sigma, local_scales
from ._connect import join_components
from ._epsilon import epsilon_graph
from ._graph import Graph
from ._grid import grid_graph, pixel_features
from ._knn import EXACT_SEARCH_MAX_SAMPLES, knn_graph, nearest_neighbors
from ._trees import ALL_PAIRS_MAX_SAMPLES, dmst_graph, mst_graph, pmst_graph, spanning_trees

__all__ = sorted(
    [
        "AFFINITY_KINDS",
        "ALL_PAIRS_MAX_SAMPLES",
        "EXACT_SEARCH_MAX_SAMPLES",
        "Graph",
        "affinity",
        "default_sigma",
        "dmst_graph",
        "epsilon_graph",
        "grid_graph",
        "join_components",
        "knn_graph",
        "local_scales",
        "mst_graph",
        "nearest_neighbors",
        "pixel_features",
        "pmst_graph",
        "spanning_trees",
    ]
)
