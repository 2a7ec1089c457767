"""graphclust: sparse proximity graphs, diffusion kernels and self-tuning graph clustering.

Three core layers, each importing only those below it, and thin applications on top
(``docs/architecture.md``):

- ``graphclust.graphs``: proximity graphs (kNN, epsilon-ball, MST, PMST / DMST ensembles, pixel
  grids), the `Graph` type, edge affinities, the registry of graph types;
- ``graphclust.kernels``: normalised operators, truncated spectra, and the kernels (objects of
  the `KernelOperator` protocol);
- ``graphclust.cluster``: clusterers, the seeds, the search;
- applications: `Pipeline`, `segment_image`, `communities`, `isomap`, the command line.

Every public name is importable from ``graphclust`` itself.
"""

# first: the thread policy's first CPU sample starts the window that the first fit measures
from .threads import get_num_threads, set_num_threads
from . import cluster, datasets, graphs, io, kernels, metrics
from .cluster import *  # noqa: F401,F403
from .graphs import *  # noqa: F401,F403
from .kernels import *  # noqa: F401,F403
from .communities import communities  # noqa: E402
from .manifold import isomap  # noqa: E402
from .segmentation import segment_image  # noqa: E402
from . import pipeline, plots  # noqa: E402
from .pipeline import *  # noqa: F401,F403,E402

__version__ = "0.1.0"

from ._deprecation import moved_names as _moved_names  # noqa: E402

__getattr__ = _moved_names(__name__, {"KERNELS": "graphclust.kernels.SPECTRAL_KERNELS"})

__all__ = sorted(
    set(graphs.__all__) | set(kernels.__all__) | set(cluster.__all__)
    | {"communities", "get_num_threads", "isomap", "segment_image", "set_num_threads"}
    | set(pipeline.__all__)
)
