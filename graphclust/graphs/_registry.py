"""The graph types by name: one registry read by the estimators, the pipeline and the CLI.

Adding a graph type is one new module of ``graphclust.graphs`` with its builder function and one
line in `GRAPH_TYPES`: `ConsistencyClustering(graph=name)`, ``Pipeline(GraphStage(name, ...))``
and ``graphclust cluster --graph name`` then know it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from .._validation import check_option
from ._epsilon import epsilon_graph
from ._graph import Graph
from ._grid import grid_graph
from ._knn import knn_graph
from ._trees import dmst_graph, mst_graph, pmst_graph

__all__ = ["GRAPH_TYPES", "GraphType", "PrebuiltGraph", "graph_builder"]


@dataclass(frozen=True)
class GraphType:
    """A named graph builder and how callers may drive it.

    Attributes
    ----------
    name : str
    build : callable
        ``build(X, **params) -> Graph``.
    input : {"points", "image"}
        What ``build`` takes: an (n, d) array of points, or an (H, W[, C]) image.
    degree_parameter : bool
        True when the builder's ``n_neighbors`` is the graph's own degree (knn, mst): an
        estimator's ``n_neighbors`` is then passed on. For the ensembles it only sizes the
        candidate graph and keeps the builder's default.
    required : tuple of str
        Parameters without a default (epsilon: ``radius``): such a type cannot be chosen by name
        alone.
    """

    name: str
    build: Callable
    input: str = "points"
    degree_parameter: bool = False
    required: tuple = ()

    def accepts(self, parameter):
        """Whether ``build`` has a parameter of that name."""
        return parameter in inspect.signature(self.build).parameters


#: Every graph type, by the name users give it.
GRAPH_TYPES = {
    t.name: t
    for t in (
        GraphType("knn", knn_graph, degree_parameter=True),
        GraphType("epsilon", epsilon_graph, required=("radius",)),
        GraphType("mst", mst_graph, degree_parameter=True),
        GraphType("pmst", pmst_graph),
        GraphType("dmst", dmst_graph),
        GraphType("grid", grid_graph, input="image"),
    )
}


class PrebuiltGraph:
    """A graph "builder" that returns a `Graph` built beforehand (picklable, unlike a lambda).

    Lets a caller that already holds the graph of some points (a pipeline that searched over
    graphs) hand it to an estimator whose ``graph`` parameter takes a builder, so the estimator
    still sees the points (for `predict`) without building the graph again.

    Parameters
    ----------
    graph : Graph
    metric : {"euclidean", "cosine"}, default "euclidean"
        The metric of the graph's distances.

    Examples
    --------
    >>> import numpy as np
    >>> import graphclust as gc
    >>> X = np.random.default_rng(0).normal(size=(30, 2))
    >>> g = gc.knn_graph(X, 5)
    >>> gc.graphs.PrebuiltGraph(g)(X) is g
    True
    """

    def __init__(self, graph, metric="euclidean"):
        if not isinstance(graph, Graph):
            raise TypeError(f"PrebuiltGraph takes a Graph; got {type(graph).__name__}.")
        self.graph = graph
        self.metric = metric

    def __call__(self, X):
        n = X.shape[0]
        if n != self.graph.n_nodes:
            raise ValueError(f"the prebuilt graph has {self.graph.n_nodes} nodes; X has {n} rows.")
        return self.graph


def graph_builder(graph, *, n_neighbors=None, random_state=None, name="graph"):
    """A callable ``X -> Graph`` for a graph type's name, or the callable given.

    Parameters
    ----------
    graph : str or callable
        A name of `GRAPH_TYPES` whose builder takes points and has no required parameter, or a
        callable returned as is.
    n_neighbors : int, optional
        Passed to builders whose ``n_neighbors`` is the graph's degree (`GraphType`).
    random_state : int or None
        Passed to builders that take one.
    name : str
        The caller's parameter name, for error messages.

    Examples
    --------
    >>> import numpy as np
    >>> from graphclust.graphs import graph_builder
    >>> build = graph_builder("mst", n_neighbors=5)
    >>> build(np.random.default_rng(0).normal(size=(40, 2))).n_edges
    39
    """
    if callable(graph):
        return graph
    usable = {t.name for t in GRAPH_TYPES.values() if t.input == "points" and not t.required}
    check_option(graph, name, usable)
    spec = GRAPH_TYPES[graph]
    params = {}
    if spec.degree_parameter and n_neighbors is not None:
        params["n_neighbors"] = n_neighbors
    if spec.accepts("random_state"):
        params["random_state"] = random_state
    return _Bound(spec.build, params)


class _Bound:
    """``build(X, **params)`` as a picklable callable."""

    def __init__(self, build, params):
        self.build, self.params = build, params

    def __call__(self, X):
        return self.build(X, **self.params)
