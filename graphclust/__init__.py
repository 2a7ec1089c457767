"""graphclust: sparse proximity graphs, diffusion kernels and self-tuning graph clustering.

Three layers, each importing only those below it:

- ``graphclust.graphs``: proximity graphs (kNN, epsilon-ball, MST, PMST / DMST ensembles, pixel
  grids), the `Graph` type and edge affinities;
- ``graphclust.kernels``: normalised operators and truncated spectra;
- ``graphclust.cluster``: clusterers.

Every public name is importable from ``graphclust`` itself.
"""

from . import cluster, datasets, graphs, kernels, metrics
from .cluster import *  # noqa: F401,F403
from .graphs import *  # noqa: F401,F403
from .kernels import *  # noqa: F401,F403
from .communities import communities  # noqa: E402
from .manifold import isomap  # noqa: E402
from .segmentation import segment_image  # noqa: E402
from . import pipeline, plots  # noqa: E402  (pipeline issue)
from .pipeline import *  # noqa: F401,F403,E402

__version__ = "0.1.0"

__all__ = sorted(
    set(graphs.__all__) | set(kernels.__all__) | set(cluster.__all__)
    | {"communities", "isomap", "segment_image"}  # applications issue
    | set(pipeline.__all__)  # pipeline issue
)
