"""Forward must-analysis over a scope's flow: what holds on every path into a node.

Used by the checks that follow data along the graph (a context field written
before it is read; a value checked for null before it is used). A worklist
ordered by reverse postorder settles an acyclic flow in one pass and a loop in
a few; facts only shrink, so it always ends.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable
from typing import TypeVar

import networkx as nx

F = TypeVar("F", bound=frozenset[Hashable])


def must_analysis(
    graph: nx.DiGraph,  # type: ignore[type-arg]
    entry: str,
    start: F,
    transfer: Callable[[str, str, F], F],
) -> dict[str, F]:
    """The facts holding when each node reachable from ``entry`` starts.

    ``transfer(source, target, facts)`` gives what holds on the edge from source
    to target when ``facts`` held at the start of source; facts meet by
    intersection where paths join.
    """
    order = {n: i for i, n in enumerate(reversed(list(nx.dfs_postorder_nodes(graph, entry))))}
    ins: dict[str, F] = {entry: start}
    queue = [(order[entry], entry)]
    queued = {entry}
    while queue:
        _, node = heapq.heappop(queue)
        queued.discard(node)
        facts = ins[node]
        for succ in graph.successors(node):
            if succ not in order:
                continue
            arriving = transfer(node, succ, facts)
            if succ == entry:
                arriving = arriving & start  # type: ignore[assignment]
            old = ins.get(succ)
            new = arriving if old is None else old & arriving
            if new != old:
                ins[succ] = new  # type: ignore[assignment]
                if succ not in queued:
                    queued.add(succ)
                    heapq.heappush(queue, (order[succ], succ))
    return ins
