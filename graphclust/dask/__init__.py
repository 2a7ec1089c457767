"""graphclust on Dask: predict, the kNN graph and fit-on-a-sample for arrays beyond one machine.

Dask (an existing engine: task graphs, a distributed scheduler, workers on many machines) runs
the work; this subpackage only writes the per-block functions and the task graphs:

- `predict`: a fitted model's out-of-sample rule over a `dask.array.Array`, block by block
  (``map_blocks``, as dask-ml's ``ParallelPostFit`` does). The model enters the task graph once,
  as one ``dask.delayed`` node every block depends on, so the distributed scheduler ships it to
  each worker once, not with every task.
- `kneighbors_graph`: the k-nearest-neighbour graph of a chunked array that need not fit in
  memory. Exact: every query block against every candidate block (block-vs-block top-k, then a
  merge), so each task holds two blocks only, at quadratic cost. By cells (approximate, linear):
  rows cut into k-means cells with multiple probes, NN-descent inside each cell. The gathered
  neighbour lists (n x k) must fit in memory, as the clusterers need the graph anyway.
- `fit_sample_extend`: fit an estimator on a seeded uniform sample, assign the other points by
  `predict` (as dask-ml's ``SpectralClustering`` fits on a Nystrom sample).

Install with ``pip install graphclust[dask]`` (``dask[array]`` and ``distributed``). Measured
throughput and the plan for 10^7 - 10^8 points: ``docs/scaling.md`` ("Dask").
"""

from __future__ import annotations

try:
    import dask  # noqa: F401
    import dask.array  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised without the extra installed
    raise ImportError(
        "graphclust.dask needs Dask, an optional dependency: pip install graphclust[dask] "
        "(installs dask[array] and distributed)."
    ) from err

from ._cell_knn import kneighbors_lists_by_cells
from ._exact_knn import kneighbors_lists
from ._knn_graph import kneighbors_graph
from ._predict import fit_sample_extend, load_model, predict

__all__ = ["fit_sample_extend", "kneighbors_graph", "kneighbors_lists", "kneighbors_lists_by_cells",
           "load_model", "predict"]
