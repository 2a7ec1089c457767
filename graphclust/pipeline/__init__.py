"""`Pipeline`: graph -> kernel -> clusterer as one scikit-learn estimator, and its stage objects.

=============  ==========================================================================
stage          objects (all re-exported by ``graphclust``)
=============  ==========================================================================
graph          `KNNGraph`, `EpsilonGraph`, `MSTGraph`, `PMSTGraph`, `DMSTGraph` (or
               `graph_stage(name, ...)` for any type of `graphclust.graphs.GRAPH_TYPES`);
               ``None`` when `Pipeline.fit` receives a `Graph`
kernel         `ConsistencyStage` (U = beta (I - alpha S)^-1 on the Gaussian affinity),
               `AHKStage` (Aggregated Heat Kernel and the other spectral kernels),
               `NJWStage` (the normalised affinity S of NJW spectral clustering)
clusterer      `ConsistencySeeds` (seeds, labels, outliers and the Omega criterion),
               `SpectralKMeans` (k-means on the row-normalised top eigenvectors)
=============  ==========================================================================

Naming: the kernel *stages* are called ``...Stage`` because ``graphclust.ConsistencyKernel``
already names the computational object that applies U to blocks; a stage only holds parameters.
Which stages combine, and which estimator does the work, is in `graphclust.pipeline._pipeline`.
"""

from ._pipeline import Pipeline
from ._stages import (
    CLUSTERER_STAGES,
    GRAPH_STAGES,
    KERNEL_STAGES,
    STAGES,
    AHKStage,
    ConsistencySeeds,
    ConsistencyStage,
    DMSTGraph,
    EpsilonGraph,
    KNNGraph,
    MSTGraph,
    NJWStage,
    PMSTGraph,
    SpectralKMeans,
    graph_stage,
)

__all__ = [
    "AHKStage",
    "ConsistencySeeds",
    "ConsistencyStage",
    "DMSTGraph",
    "EpsilonGraph",
    "KNNGraph",
    "MSTGraph",
    "NJWStage",
    "PMSTGraph",
    "Pipeline",
    "SpectralKMeans",
]
