"""`kneighbors_graph`: the symmetrised kNN `Graph` of a dask array, exact or by cells."""

from __future__ import annotations

import dask
import numpy as np

from .._validation import check_option
from ..graphs import knn_graph_from_neighbors
from ._cell_knn import kneighbors_lists_by_cells
from ._exact_knn import kneighbors_lists


def kneighbors_graph(X, n_neighbors=10, *, mode="union", merge_width=8, method="exact",
                     cell_size=50_000, probes=2, random_state=None):
    """The symmetrised k-nearest-neighbour `Graph` of a chunked dask array, exact or by cells.

    ``method="exact"``: each row chunk is a query block; each pair (query block, candidate
    block) is one task that keeps the k nearest candidates of every query row (BLAS distances
    with a proven error bound, then exact lengths for the candidates within it); the partial
    lists of a query block are merged by a tree of tasks (`merge_width` at a time). Each task
    holds two blocks and k lists, so X need not fit in memory; the result, n x k neighbours,
    is gathered on the client and symmetrised as `graphclust.knn_graph` does.

    ``method="cells"`` (`kneighbors_lists_by_cells`): approximate, for data past the exact
    search's quadratic cost. The rows are cut into about ``n / cell_size`` cells by k-means
    centroids of a seeded sample (64 rows per cell), each row goes to its `probes` nearest
    cells (each block is cut into its cells by one task, in one pass over X or in several when
    the cut blocks would crowd the workers' memory), the kNN lists inside each cell come from
    one task (exact up to 20 000 points, NN-descent above), and a row's lists from its cells
    are merged. A true neighbour is missed only when it shares none of the row's cells: the
    inverted-file search with multiple probes (Jegou, Douze & Schmid 2011), whose recall grows
    with `probes` (measured in ``docs/scaling.md``, "Dask"). The cells hold probes x n points
    in all, each searched within its cell: work linear in n at a fixed `cell_size`.

    Parameters
    ----------
    X : dask.array.Array (n, d)
        Row chunks of known sizes (``X.compute_chunk_sizes()`` otherwise); a chunked feature
        axis is rechunked into one. Finite values (a NaN names its chunk when computed).
    n_neighbors : int, default 10
        1 <= n_neighbors < n.
    mode : {"union", "mutual"}, default "union"
        As in `graphclust.knn_graph`.
    merge_width : int, default 8
        Partial lists merged per task (exact method).
    method : {"exact", "cells"}, default "exact"
        ``"exact"``: the guarantee under Returns, quadratic work. ``"cells"``: approximate
        (its recall is measured in ``docs/scaling.md``), linear work.
    cell_size : int, default 50 000
        Rows per cell on average (cells method): a cell task holds about ``probes x
        cell_size`` points. ``cell_size >= n`` gives one cell: the in-memory
        `graphclust.knn_graph` lists (exact up to 20 000 points).
    probes : int, default 2
        Cells per row (cells method), >= 1; as many as there are cells or more puts every row
        in every cell (the exact lists, at the cost of one search per cell over all points).
    random_state : int, Generator, RandomState or None
        Seed of the sample, the k-means and the cells' NN-descent (cells method): the same
        seed gives the same graph whatever the chunks and workers.

    Returns
    -------
    Graph
        Exact method: equal to ``graphclust.knn_graph(X.compute(), n_neighbors,
        method="exact", mode=mode)`` (same edges, lengths computed by the same formula) when
        no two candidates tie at the k-th distance; ties are broken by the smaller index here.

    Notes
    -----
    Exact: the guarantee holds for every input (no approximation, no sampling). Cost
    O(n^2 d) flops in B^2 tasks for B row chunks, communication O(B^2 (n/B) d) = O(B n d)
    floats (each block travels to the tasks of every other block) plus O(n k) for the lists.
    Past a few 10^6 points the quadratic cost rules (see ``docs/scaling.md``, "Dask").

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import graphclust as gc
    >>> from graphclust.dask import kneighbors_graph
    >>> X = np.random.default_rng(0).normal(size=(300, 5))
    >>> g = kneighbors_graph(da.from_array(X, chunks=(100, 5)), 5)
    >>> ref = gc.knn_graph(X, 5, method="exact")
    >>> bool(abs(g.distances - ref.distances).max() == 0)
    True
    """
    check_option(mode, "mode", {"union", "mutual"})
    check_option(method, "method", {"exact", "cells"})
    if method == "cells":
        idx, dist = kneighbors_lists_by_cells(X, n_neighbors, cell_size=cell_size,
                                              probes=probes, random_state=random_state)
    else:
        parts = dask.compute(*kneighbors_lists(X, n_neighbors, merge_width=merge_width))
        idx = np.concatenate([p[0] for p in parts])
        dist = np.concatenate([p[1] for p in parts])
    return knn_graph_from_neighbors(idx, dist, mode=mode, provenance={
        "builder": "graphclust.dask.kneighbors_graph", "n_neighbors": int(n_neighbors),
        "metric": "euclidean", "method": method, "mode": mode})
