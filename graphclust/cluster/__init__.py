"""Clusterers built on graphs and kernels.

``_seeds.py`` reads any kernel by its columns (the consistency seeds, labels, inlierness and
Omega), ``_search.py`` searches scale, kernel parameter and c by a criterion for every kernel
the seeds can read, and the estimators wrap them: `ConsistencyClustering` (seeds),
`SpectralClustering` (NJW) and `AHKClustering` (AHK). ``_leiden.py`` optimises modularity /
Markov stability of a partition (`leiden`), the optimiser the clusterers share.
``_agglomerative.py`` merges adjacent nodes of a region graph greedily (Ward / Mumford-Shah,
`merge_hierarchy`) into a `Hierarchy`.
``_communities.py`` finds the communities of a graph and their number (`CommunityDetection`:
Leiden at the maximum-likelihood resolution, the Bethe Hessian, description length).
``_stability.py`` (flows of the resolvent walk between clusters, the exact Markov-stability
gain and its agglomeration), ``_markov_selection.py`` (the scan over walk lengths and the
three-tier choice; ``_markov_components.py`` settles the components whose walk has not relaxed
by the end of the scan) and ``_stability_clustering.py`` (`StabilityClustering`) choose c on real
data (``docs/model_selection.md``).
``_common.py`` holds what they share.
"""

from ._agglomerative import MERGE_CRITERIA, Hierarchy, absorb_thin_regions, merge_hierarchy
from ._ahk import AHKClustering
from ._background_noise import NoiseModelWarning, background_noise, clutter_posterior
from ._density_walk import density_weighted
from ._communities import (
    COMMUNITY_DETECTION_METHODS,
    CommunityDetection,
    community_representatives,
    description_length,
    leiden_ml,
    ml_resolution,
    model_belonging,
)
from ._consistency import SEED_KERNELS, ConsistencyClustering, ConsistencyWarning
from ._consistency_reference import consistency_reference
from ._search import (
    DEFAULT_ALPHAS,
    DEFAULT_SIGMA_FACTORS,
    ConsistencyFamily,
    SeedSearch,
    SpectralFamily,
    seed_search,
)
from ._common import relabel_by_first_appearance
from ._latent_classes import LatentClassClustering, LatentClassWarning
from ._multinomial_mixture import MultinomialMixtureClustering, MultinomialMixtureWarning
from ._leiden import PARTITION_QUALITIES, leiden, louvain
from ._partition_quality import markov_stability, modularity
from ._row_order import canonical_node_order, canonical_order
from ._seeds import best_by_n_clusters, consistency_path
from ._spectral import SpectralClustering, njw_embedding, njw_labels
from ._spectral_reference import ahk_reference, njw_reference
from ._markov_selection import DEFAULT_TAUS, markov_stability_scan, metastability, select_partition
from ._stability import (flow_matrix, merge_by_stability, resolvent_flows,
                         stability_gain_reference, variation_of_information)
from ._stability_clustering import STABILITY_AFFINITIES, StabilityClustering, StabilityWarning
from ._stability_tables import binary_table, binary_table_with_missing, count_table
from .._validation import FeatureScaleWarning  # StabilityClustering's warning about X's columns

__all__ = sorted([
    "canonical_node_order",
    "canonical_order",
    "COMMUNITY_DETECTION_METHODS",
    "CommunityDetection",
    "community_representatives",
    "description_length",
    "leiden_ml",
    "ml_resolution",
    "model_belonging",
    "AHKClustering",
    "NoiseModelWarning",
    "background_noise",
    "clutter_posterior",
    "density_weighted",
    "ConsistencyClustering",
    "ConsistencyWarning",
    "FeatureScaleWarning",
    "Hierarchy",
    "MERGE_CRITERIA",
    "STABILITY_AFFINITIES",
    "LatentClassClustering",
    "LatentClassWarning",
    "MultinomialMixtureClustering",
    "MultinomialMixtureWarning",
    "binary_table",
    "relabel_by_first_appearance",
    "binary_table_with_missing",
    "count_table",
    "SpectralClustering",
    "StabilityClustering",
    "StabilityWarning",
    "flow_matrix",
    "markov_stability_scan",
    "merge_by_stability",
    "metastability",
    "resolvent_flows",
    "select_partition",
    "stability_gain_reference",
    "variation_of_information",
    "ahk_reference",
    "consistency_path",
    "consistency_reference",
    "leiden",
    "louvain",
    "markov_stability",
    "merge_hierarchy",
    "absorb_thin_regions",
    "modularity",
    "njw_embedding",
    "njw_labels",
    "njw_reference",
])
