"""What nodes read and write, and a forward must-analysis over a scope's flow.

The checks that follow data share these: the expressions a node evaluates and
the context fields they read, what a written field is computed from, and what
holds on every path into a node (a context field written before it is read; a
value checked for null before it is used). The analysis is a worklist ordered
by reverse postorder: it settles an acyclic flow in one pass and a loop in a
few; facts only shrink, so it always ends.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from typing import TypeVar

from wflang.compiler.graphs import Digraph, dfs_postorder
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.walk import child_nodes, node_expressions, subexpressions

F = TypeVar("F", bound=frozenset[Hashable])


def must_analysis(
    graph: Digraph[str],
    entry: str,
    start: F,
    transfer: Callable[[str, str, F], F],
) -> dict[str, F]:
    """The facts holding when each node reachable from ``entry`` starts.

    ``transfer(source, target, facts)`` gives what holds on the edge from source
    to target when ``facts`` held at the start of source; facts meet by
    intersection where paths join.
    """
    order = {n: i for i, n in enumerate(reversed(dfs_postorder(graph, entry)))}
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


def reads(e: ex.Expr, root: str) -> Iterator[tuple[str, ex.Member]]:
    """The fields of ``root`` (``context``, ``result``…) an expression reads."""
    for sub in subexpressions(e):
        target = getattr(sub, "target", None)
        if isinstance(sub, ex.Member) and isinstance(target, ex.Ref) and target.name == root:
            yield sub.name, sub


def context_reads(node: sp.Node) -> Iterator[tuple[str, ex.Member]]:
    """The context fields a node reads, where."""
    for e in node_expressions(node):
        yield from reads(e, "context")


def derivations(node: sp.Node) -> Iterator[tuple[str, frozenset[str]]]:
    """Each context field a node writes, with the context fields its new value is
    computed from: those its ``output`` expression reads and, when that reads the
    ``result``, those the node passed in ``args`` (a page token given to the
    service that returns the next one); none for a field written its own value.
    A parallel or map writes what its body does."""
    yield from own_derivations(node)
    for n in child_nodes(node):
        yield from derivations(n)


def own_derivations(node: sp.Node) -> Iterator[tuple[str, frozenset[str]]]:
    """``derivations`` of a node's own clauses, not of its body's nodes."""
    if isinstance(node, sp.EndNode):
        return  # an end's output is the workflow's
    passed = frozenset(
        f for entry in getattr(node, "args", ()) for f, _ in reads(entry.value, "context")
    )
    events = getattr(node, "events", ())
    for entry in (*getattr(node, "output", ()), *(x for e in events for x in e.output)):
        if entry.local:
            continue  # a map item's own variable, not the context
        value = entry.value
        if _member_of(value, "context") == entry.name.text:
            yield entry.name.text, frozenset()  # ``x: context.x`` changes nothing
            continue
        sources = frozenset(f for f, _ in reads(value, "context"))
        if any(True for _ in reads(value, "result")):
            sources |= passed
        yield entry.name.text, sources
    if isinstance(node, sp.MapNode):
        for c in node.collects:  # what each item gives, gathered into the context
            yield c.target.text, frozenset(f for f, _ in reads(c.value, "context"))


def local_derivations(node: sp.Node) -> Iterator[tuple[str, frozenset[str]]]:
    """Each map item variable a node writes, as ``local.NAME``, with the variables
    (``local.X``) and context fields its new value is computed from."""
    for entry in getattr(node, "output", ()):
        if entry.local:
            value = entry.value
            mine = frozenset(f"local.{f}" for f, _ in reads(value, "local"))
            yield f"local.{entry.name.text}", mine | {f for f, _ in reads(value, "context")}


def _member_of(e: ex.Expr, root: str) -> str | None:
    """The field when the expression is ``root.field`` itself, else None."""
    target = getattr(e, "target", None)
    if isinstance(e, ex.Member) and isinstance(target, ex.Ref) and target.name == root:
        return e.name
    return None
