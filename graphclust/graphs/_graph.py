"""The `Graph` type: one symmetric sparse edge set with edge lengths and ensemble weights."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .._validation import check_option, check_symmetric_adjacency

__all__ = ["Graph"]


def _edges_to_csr(n, u, v, values_list):
    """Symmetric CSR matrices sharing one pattern from undirected edges (u, v), u != v, unique.

    Builds indptr directly so explicit zeros (distance 0 between duplicate points) stay edges.
    """
    rows = np.concatenate([u, v]).astype(np.int64)
    cols = np.concatenate([v, u]).astype(np.int64)
    order = np.lexsort((cols, rows))
    rows, cols = rows[order], cols[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    index_dtype = np.int32 if max(n, rows.size) < 2**31 - 1 else np.int64
    indices = cols.astype(index_dtype)
    indptr = indptr.astype(index_dtype)
    mats = []
    for vals in values_list:
        data = np.concatenate([vals, vals]).astype(np.float64)[order]
        mats.append(sp.csr_matrix((data, indices.copy(), indptr.copy()), shape=(n, n)))
    return mats


def unique_edges(n, u, v, *values):
    """Canonicalise undirected edges: drop self-loops, order u < v, keep the first of duplicates.

    Returns (u, v, *values) sorted by (u, v).
    """
    u = np.asarray(u, dtype=np.int64)
    v = np.asarray(v, dtype=np.int64)
    keep = u != v
    lo = np.minimum(u, v)[keep]
    hi = np.maximum(u, v)[keep]
    key = lo * n + hi
    _, first = np.unique(key, return_index=True)
    out = [lo[first], hi[first]]
    out.extend(np.asarray(val)[keep][first] for val in values)
    return tuple(out)


def _edge_number(value, a, b, key, what):
    """A networkx edge attribute as a float; complex, strings and other objects are refused."""
    import numbers

    if not isinstance(value, (numbers.Real, np.bool_)):
        raise ValueError(
            f"edge ({a!r}, {b!r}) has {key}={value!r}; {what} must be real numbers (>= 0)."
        )
    return float(value)


class Graph:
    """A weighted undirected graph on `n_nodes` points.

    The edge set is the sparsity pattern shared by two symmetric CSR matrices:

    - ``distances``: the length d_ij of each edge (explicit zeros are kept: two duplicate points
      are joined by an edge of length 0);
    - ``multiplicity``: the ensemble weight e_ij in (0, 1] of each edge (the fraction of PMST trees
      containing it), 1 for graphs that are not ensembles; for a weighted network, its weights.

    Graphs are built by the builders (`knn_graph`, `epsilon_graph`, `mst_graph`, `pmst_graph`,
    `dmst_graph`, `grid_graph`) or from existing structures (`Graph.from_sparse`,
    `Graph.from_networkx`). Affinities are derived with `affinity(graph, sigma, kind=...)`.

    Parameters
    ----------
    distances : scipy.sparse matrix (or dense array), shape (n, n)
        Symmetric, finite, non-negative edge lengths: the stored off-diagonal pattern is the edge
        set (stored zeros are edges of length 0; for a dense array every nonzero is an edge).
        The diagonal is ignored. Checked as `Graph.from_sparse` checks: a ValueError names what
        is wrong.
    multiplicity : scipy.sparse matrix, shape (n, n), optional
        Symmetric positive edge weights with the same pattern; all ones when omitted.
    provenance : dict, optional
        How the graph was built (builder name and parameters), carried for reports.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> g = gc.knn_graph(X, n_neighbors=5)
    >>> g.n_nodes, g.n_components
    (100, 1)
    """

    def __init__(self, distances, multiplicity=None, *, provenance=None):
        # validated as Graph.from_sparse validates: square, symmetric (values and pattern),
        # finite, non-negative; the diagonal is dropped; stored zeros off it stay edges
        distances = check_symmetric_adjacency(distances, name="distances")
        distances.sort_indices()
        if multiplicity is None:
            multiplicity = sp.csr_matrix(
                (np.ones_like(distances.data), distances.indices.copy(), distances.indptr.copy()),
                shape=distances.shape,
            )
        else:
            multiplicity = check_symmetric_adjacency(multiplicity, name="multiplicity")
            multiplicity.sort_indices()
            if not (
                multiplicity.shape == distances.shape
                and np.array_equal(multiplicity.indptr, distances.indptr)
                and np.array_equal(multiplicity.indices, distances.indices)
            ):
                raise ValueError(
                    "multiplicity must have exactly the sparsity pattern of distances "
                    f"(got shape {multiplicity.shape} with {multiplicity.nnz} stored entries off "
                    f"the diagonal against shape {distances.shape} with {distances.nnz})."
                )
            if multiplicity.data.size and multiplicity.data.min() <= 0:
                raise ValueError(
                    "multiplicity must be > 0 on every edge; got minimum "
                    f"{multiplicity.data.min():.3g}."
                )
        self._set(distances, multiplicity, provenance)

    def _set(self, distances, multiplicity, provenance):
        self._distances = distances
        self._multiplicity = multiplicity
        self.provenance = dict(provenance or {})
        self._components = None

    @classmethod
    def _trusted(cls, distances, multiplicity, provenance=None):
        """Wrap matrices built by the library itself (symmetric by construction): no checks."""
        graph = cls.__new__(cls)
        graph._set(distances, multiplicity, provenance)
        return graph

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def _from_edges(cls, n, u, v, distance, multiplicity=None, provenance=None):
        """Build from undirected edge arrays (deduplicated here, u != v enforced)."""
        if multiplicity is None:
            multiplicity = np.ones(len(u))
        u, v, distance, multiplicity = unique_edges(n, u, v, distance, multiplicity)
        dist, mult = _edges_to_csr(n, u, v, [distance, multiplicity])
        return cls._trusted(dist, mult, provenance=provenance)

    @classmethod
    def from_sparse(cls, A, *, values="distances"):
        """Build a graph from a symmetric sparse (or dense) matrix.

        Parameters
        ----------
        A : array-like or scipy.sparse matrix, shape (n, n)
            Square, symmetric, non-negative. For sparse input every stored off-diagonal entry is
            an edge (stored zeros included); for dense input every nonzero is. The diagonal is
            ignored (no self-loops).
        values : {"distances", "weights"}
            What the entries are: edge lengths (``distances``; multiplicity 1), or edge weights
            such as a network's link strengths (``weights``, stored as ``multiplicity``, zero
            entries dropped; every edge gets length 1, a hop).

        Examples
        --------
        >>> import scipy.sparse as sp
        >>> import graphclust as gc
        >>> A = sp.csr_matrix([[0, 1.5, 0], [1.5, 0, 2.0], [0, 2.0, 0]])
        >>> gc.Graph.from_sparse(A).n_edges
        2
        """
        check_option(values, "values", {"distances", "weights"})
        A = check_symmetric_adjacency(A, name="A")
        n = A.shape[0]
        coo = sp.triu(A, k=1, format="coo")
        if values == "distances":
            return cls._from_edges(
                n, coo.row, coo.col, coo.data, provenance={"builder": "from_sparse"}
            )
        keep = coo.data > 0
        return cls._from_edges(
            n,
            coo.row[keep],
            coo.col[keep],
            np.ones(int(keep.sum())),
            coo.data[keep],
            provenance={"builder": "from_sparse", "values": "weights"},
        )

    @classmethod
    def from_networkx(cls, G, weight="weight", *, distance=None):
        """Build a graph from an undirected networkx graph.

        Nodes are numbered in ``G.nodes`` order (kept in ``provenance["nodes"]`` so that results
        can be mapped back). Edge attribute `weight` (default 1 when absent, or when `weight` is
        None) becomes the multiplicity (edge strength); attribute `distance`, when named, gives
        the edge lengths, otherwise every edge has length 1 (a hop).

        Examples
        --------
        >>> import networkx as nx
        >>> import graphclust as gc
        >>> g = gc.Graph.from_networkx(nx.karate_club_graph())
        >>> g.n_nodes, g.n_edges
        (34, 78)
        """
        import networkx as nx

        if not isinstance(G, (nx.Graph,)):
            raise TypeError(f"G must be a networkx Graph; got {type(G).__name__}.")
        if G.is_directed():
            raise ValueError(
                "G is directed; graphclust needs an undirected graph: use G.to_undirected()."
            )
        nodes = list(G.nodes)
        if not nodes:
            raise ValueError("G has no nodes; a graph needs at least 1 node.")
        index = {node: i for i, node in enumerate(nodes)}
        u, v, w, d = [], [], [], []
        for a, b, attrs in G.edges(data=True):
            if a == b:
                continue
            wt = 1.0 if weight is None else _edge_number(attrs.get(weight, 1.0), a, b, weight, "weights")
            if not np.isfinite(wt) or wt < 0:
                raise ValueError(f"edge ({a!r}, {b!r}) has {weight}={wt}; weights must be >= 0.")
            if wt == 0:
                continue
            dist = (
                1.0 if distance is None
                else _edge_number(attrs.get(distance, np.nan), a, b, distance, "distances")
            )
            if not np.isfinite(dist) or dist < 0:
                raise ValueError(
                    f"edge ({a!r}, {b!r}) has {distance}={dist}; distances must be finite, >= 0."
                )
            u.append(index[a])
            v.append(index[b])
            w.append(wt)
            d.append(dist)
        return cls._from_edges(
            len(nodes),
            np.array(u, dtype=np.int64),
            np.array(v, dtype=np.int64),
            np.array(d, dtype=np.float64),
            np.array(w, dtype=np.float64),
            provenance={"builder": "from_networkx", "nodes": nodes},
        )

    # ------------------------------------------------------------------ accessors
    @property
    def distances(self):
        """Symmetric CSR matrix of edge lengths (the pattern is the edge set)."""
        return self._distances

    @property
    def multiplicity(self):
        """Symmetric CSR matrix of ensemble weights e_ij (1 where not an ensemble)."""
        return self._multiplicity

    @property
    def n_nodes(self):
        return self._distances.shape[0]

    @property
    def n_edges(self):
        """Number of undirected edges."""
        return self._distances.nnz // 2

    @property
    def degrees(self):
        """Number of neighbours of each node (int array)."""
        return np.diff(self._distances.indptr).astype(np.int64)

    def _compute_components(self):
        if self._components is None:
            self._components = connected_components(self._distances_pattern(), directed=False)
        return self._components

    def _distances_pattern(self):
        return sp.csr_matrix(
            (np.ones(self._distances.nnz), self._distances.indices, self._distances.indptr),
            shape=self._distances.shape,
        )

    @property
    def n_components(self):
        """Number of connected components (isolated nodes count as components)."""
        return int(self._compute_components()[0])

    @property
    def component_labels(self):
        """Connected-component label of each node."""
        return self._compute_components()[1]

    def edges(self):
        """Undirected edges as arrays ``(u, v, distance, multiplicity)`` with u < v."""
        d = sp.triu(self._distances, k=1, format="coo")
        m = sp.triu(self._multiplicity, k=1, format="coo")
        # both share a pattern, so tocoo orders them identically
        return d.row.astype(np.int64), d.col.astype(np.int64), d.data, m.data

    def to_networkx(self):
        """Return a networkx Graph with edge attributes ``distance`` and ``multiplicity``.

        Node labels are 0..n-1, or the original labels for graphs built by `from_networkx`.
        """
        import networkx as nx

        G = nx.Graph()
        nodes = self.provenance.get("nodes")
        labels = nodes if nodes is not None else list(range(self.n_nodes))
        G.add_nodes_from(labels)
        u, v, d, m = self.edges()
        G.add_edges_from(
            (labels[a], labels[b], {"distance": float(x), "multiplicity": float(y)})
            for a, b, x, y in zip(u.tolist(), v.tolist(), d.tolist(), m.tolist())
        )
        return G

    def __repr__(self):
        builder = self.provenance.get("builder", "graph")
        return (
            f"Graph(builder={builder!r}, n_nodes={self.n_nodes}, n_edges={self.n_edges}, "
            f"n_components={self.n_components})"
        )
