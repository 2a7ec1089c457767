"""Proximity graphs: candidate edges, edge selection (MST ensembles) and edge weights."""

from ._affinity import AFFINITY_KINDS, affinity, default_sigma, local_scales
from ._connect import component_bridges, join_components
from ._epsilon import EPSILON_MAX_EDGES, epsilon_graph
from ._fuzzy import (
    fuzzy_affinity,
    fuzzy_affinity_from_lists,
    fuzzy_scales,
    fuzzy_scales_of_lists,
    jaccard_affinity,
    jaccard_affinity_from_lists,
    knn_lists,
    smooth_knn,
)
from ._graph import Graph
from ._grid import ImageRangeWarning, check_image, grid_graph, pixel_features
from ._image_features import contour_map, default_scales, gaussian_smooth, local_contrast, rgb_to_lab
from ._knn import (
    EXACT_SEARCH_MAX_SAMPLES,
    METRICS,
    euclidean_to_metric,
    knn_graph,
    knn_graph_from_neighbors,
    nearest_neighbors,
    prepare_metric,
)
from ._lengths import edge_lengths
from ._row_keys import canonical_order, row_keys
from ._scale import largest_magnitude, power_of_two_scale, rescale
from ._search import EXACT_INDEX_MAX_SAMPLES, LazyNeighbourIndex, NeighbourIndex
from ._registry import GRAPH_TYPES, GraphType, PrebuiltGraph, graph_builder
from ._superpixels import (
    graph_superpixels,
    grid_edge_weights,
    refine_labels,
    region_adjacency,
    region_statistics,
)
from ._trees import ALL_PAIRS_MAX_SAMPLES, dmst_graph, mst_graph, pmst_graph, spanning_trees

__all__ = sorted(
    [
        "AFFINITY_KINDS",
        "ALL_PAIRS_MAX_SAMPLES",
        "EPSILON_MAX_EDGES",
        "EXACT_SEARCH_MAX_SAMPLES",
        "EXACT_INDEX_MAX_SAMPLES",
        "LazyNeighbourIndex",
        "NeighbourIndex",
        "GRAPH_TYPES",
        "Graph",
        "GraphType",
        "ImageRangeWarning",
        "PrebuiltGraph",
        "affinity",
        "check_image",
        "contour_map",
        "default_scales",
        "gaussian_smooth",
        "graph_superpixels",
        "grid_edge_weights",
        "local_contrast",
        "refine_labels",
        "region_adjacency",
        "region_statistics",
        "rgb_to_lab",
        "euclidean_to_metric",
        "knn_graph_from_neighbors",
        "prepare_metric",
        "default_sigma",
        "dmst_graph",
        "epsilon_graph",
        "fuzzy_affinity",
        "fuzzy_affinity_from_lists",
        "fuzzy_scales",
        "fuzzy_scales_of_lists",
        "jaccard_affinity",
        "jaccard_affinity_from_lists",
        "knn_lists",
        "smooth_knn",
        "graph_builder",
        "grid_graph",
        "component_bridges",
        "join_components",
        "knn_graph",
        "largest_magnitude",
        "power_of_two_scale",
        "canonical_order",
        "rescale",
        "row_keys",
        "edge_lengths",
        "local_scales",
        "mst_graph",
        "nearest_neighbors",
        "pixel_features",
        "pmst_graph",
        "spanning_trees",
    ]
)
