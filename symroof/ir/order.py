"""A networkx DiGraph that counts its changes, and its topological order by node name.

A graph's order is asked for by every pass and by the cost interpreter; it changes only
when a node or an edge does, so :class:`Graph` keeps it per :attr:`TrackedDiGraph.version`
instead of sorting again on every call.

>>> g = TrackedDiGraph()
>>> g.add_edge("b", "a"); g.add_node("c")
>>> g.version, topological_order(g, key=str)
(2, ('b', 'a', 'c'))
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Hashable
from typing import Any

import networkx as nx

__all__ = ["TrackedDiGraph", "topological_order", "version"]

#: DiGraph methods that add or remove nodes or edges (attribute changes keep the order).
_CHANGES = ("add_node", "add_nodes_from", "remove_node", "remove_nodes_from", "add_edge",
            "add_edges_from", "add_weighted_edges_from", "remove_edge", "remove_edges_from",
            "update", "clear", "clear_edges")


class TrackedDiGraph(nx.DiGraph):
    """``nx.DiGraph`` whose ``version`` grows with every change of its nodes or edges
    (changes made through its methods; its private dicts are not watched)."""

    version: int = 0


def _counting(name: str) -> Callable[..., Any]:
    base = getattr(nx.DiGraph, name)

    @functools.wraps(base)
    def method(self: TrackedDiGraph, *args: Any, **kwargs: Any) -> Any:
        try:
            return base(self, *args, **kwargs)
        finally:
            self.version += 1

    return method


for _name in _CHANGES:
    setattr(TrackedDiGraph, _name, _counting(_name))


def version(g: nx.DiGraph) -> int | None:
    """``g``'s change count, or None for a graph that does not count its changes."""
    return g.version if isinstance(g, TrackedDiGraph) else None


def topological_order(g: nx.DiGraph, key: Callable[[Any], Any]) -> tuple[Hashable, ...] | None:
    """Every node of ``g`` in topological order, ties broken by ``key`` and then by
    insertion order (exactly networkx's ``lexicographical_topological_sort``), or None
    if ``g`` has a cycle."""
    succ = g._succ  # networkx's adjacency dicts: the public views cost a call per node
    nodeid = {n: i for i, n in enumerate(succ)}
    indegree = {n: len(p) for n, p in g._pred.items()}
    ready = [(key(n), nodeid[n], n) for n, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: list[Hashable] = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for child in succ[node]:
            indegree[child] -= 1
            if indegree[child] == 0:
                heapq.heappush(ready, (key(child), nodeid[child], child))
    return tuple(order) if len(order) == len(nodeid) else None
