"""Directed graphs for the flow analyses: the few algorithms the rules use.

The compiler used networkx for these, and importing it cost about 15 times a
bare ``python -c pass`` on every ``wf check``. What the rules need is small:
successors and predecessors, what a search reaches, depth-first postorder, the
strongly connected components and the graph of those components. Nodes and
edges keep the order they were added in, so every walk and every component list
comes out in the same order from run to run (findings never depend on hashing).
Every search is iterative: a flow of thousands of nodes in a chain needs no
recursion limit. ``tests/test_graphs.py`` compares each function with networkx
on random graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Generic, TypeVar

N = TypeVar("N", bound=Hashable)


class Digraph(Generic[N]):
    """A directed graph without parallel edges; a node may have an edge to itself."""

    def __init__(self, nodes: Iterable[N] = (), edges: Iterable[tuple[N, N]] = ()) -> None:
        # dicts as ordered sets: insertion order is the order of every walk
        self._succ: dict[N, dict[N, None]] = {}
        self._pred: dict[N, dict[N, None]] = {}
        for node in nodes:
            self.add_node(node)
        for source, target in edges:
            self.add_edge(source, target)

    def add_node(self, node: N) -> None:
        if node not in self._succ:
            self._succ[node] = {}
            self._pred[node] = {}

    def add_edge(self, source: N, target: N) -> None:
        """Adds the edge, and its ends when they are new; adding it again changes nothing."""
        self.add_node(source)
        self.add_node(target)
        self._succ[source][target] = None
        self._pred[target][source] = None

    def __contains__(self, node: object) -> bool:
        return node in self._succ

    def __iter__(self) -> Iterator[N]:
        return iter(self._succ)

    def __len__(self) -> int:
        return len(self._succ)

    def successors(self, node: N) -> Iterable[N]:
        return self._succ[node].keys()

    def predecessors(self, node: N) -> Iterable[N]:
        return self._pred[node].keys()

    def has_edge(self, source: N, target: N) -> bool:
        return source in self._succ and target in self._succ[source]

    def in_degree(self, node: N) -> int:
        return len(self._pred[node])

    def out_degree(self, node: N) -> int:
        return len(self._succ[node])

    def edges(self) -> Iterator[tuple[N, N]]:
        return ((s, t) for s, targets in self._succ.items() for t in targets)

    def subgraph(self, nodes: Iterable[N]) -> Digraph[N]:
        """The given nodes (those of this graph, in this graph's order) and the edges among them."""
        keep = set(nodes)
        inside = [n for n in self._succ if n in keep]
        return Digraph(inside, ((s, t) for s in inside for t in self._succ[s] if t in keep))


def reachable(
    graph: Digraph[N], sources: Iterable[N], follow: Callable[[N, N], bool] | None = None
) -> set[N]:
    """The sources and every node a path from one of them reaches (through the edges
    ``follow`` accepts, when given)."""
    seen = set(sources)
    stack = list(seen)
    while stack:
        node = stack.pop()
        for succ in graph.successors(node):
            if succ not in seen and (follow is None or follow(node, succ)):
                seen.add(succ)
                stack.append(succ)
    return seen


def dfs_postorder(graph: Digraph[N], source: N) -> list[N]:
    """The nodes reached from ``source`` in depth-first postorder, successors taken in
    the order they were added (the order networkx's ``dfs_postorder_nodes`` gives)."""
    order: list[N] = []
    seen = {source}
    stack = [(source, iter(graph.successors(source)))]
    while stack:
        node, pending = stack[-1]
        for succ in pending:
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, iter(graph.successors(succ))))
                break
        else:
            stack.pop()
            order.append(node)
    return order


def strongly_connected_components(graph: Digraph[N]) -> list[frozenset[N]]:
    """The strongly connected components (Tarjan's algorithm, without recursion), each
    after every component it has an edge to: the reverse of a topological order."""
    index: dict[N, int] = {}  # the order a node was first reached in
    low: dict[N, int] = {}  # the smallest index reachable through its subtree and back edges
    on_stack: set[N] = set()
    stack: list[N] = []
    found: list[frozenset[N]] = []
    for root in graph:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(graph.successors(root)))]
        while work:
            node, pending = work[-1]
            for succ in pending:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(graph.successors(succ))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    found.append(frozenset(members))
    return found


def condensation(graph: Digraph[N]) -> Digraph[frozenset[N]]:
    """The graph of the strongly connected components: an edge from one component to
    another when an edge of ``graph`` goes between their members; it has no cycle."""
    components = strongly_connected_components(graph)
    owner = {node: c for c in components for node in c}
    condensed: Digraph[frozenset[N]] = Digraph(reversed(components))  # sources first
    for source, target in graph.edges():
        if owner[source] is not owner[target]:
            condensed.add_edge(owner[source], owner[target])
    return condensed
