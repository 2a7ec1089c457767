"""Clusterers built on graphs and kernels.

``_seeds.py`` reads any kernel by its columns (the consistency seeds, labels, inlierness and
Omega), ``_search.py`` searches scale, kernel parameter and c by a criterion for every kernel
the seeds can read, and the estimators wrap them: `ConsistencyClustering` (seeds),
`SpectralClustering` (NJW) and `AHKClustering` (AHK). ``_leiden.py`` optimises modularity /
Markov stability of a partition (`leiden`), the optimiser the clusterers share.
``_common.py`` holds what they share.
"""

from ._ahk import AHKClustering
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
from ._leiden import PARTITION_QUALITIES, leiden, louvain
from ._partition_quality import markov_stability, modularity
from ._seeds import best_by_n_clusters, consistency_path
from ._spectral import SpectralClustering, njw_embedding, njw_labels
from ._spectral_reference import ahk_reference, njw_reference

__all__ = sorted([
    "AHKClustering",
    "ConsistencyClustering",
    "ConsistencyWarning",
    "SpectralClustering",
    "ahk_reference",
    "consistency_path",
    "consistency_reference",
    "leiden",
    "louvain",
    "markov_stability",
    "modularity",
    "njw_embedding",
    "njw_labels",
    "njw_reference",
])
