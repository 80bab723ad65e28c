"""The loop rule (WF212): a loop that neither waits nor makes progress spins.

A loop here is a cycle of the flow: a strongly connected part of the graph of
one scope. Its turns wait when a node on every cycle waits for the world; they
make progress when the exit test reads what the loop advances (see
``dataflow.derivations``).
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.dataflow import derivations, local_derivations, reads
from wflang.compiler.graphs import Digraph, reachable, strongly_connected_components
from wflang.compiler.model import Model
from wflang.compiler.registry import Finding, Pass, rule
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Severity

#: Node kinds that wait for the world: a loop through one of them cannot spin.
WAITING = (sp.WaitNode, sp.FirstNode, sp.SleepNode)
#: Task kinds that wait for a person.
HUMAN = (sp.UserWork, sp.ManualWork)


def _waits(m: Model, node: sp.Node, *, calls: bool = True) -> bool:
    """Whether a node waits for an event, a timer or a person: itself, through the
    branches its join waits for, its map body, or the workflow it calls."""
    if isinstance(node, WAITING) or isinstance(getattr(node, "work", None), HUMAN):
        return True
    if isinstance(node, sp.ParallelNode):
        waiting = [any(_waits(m, n, calls=calls) for n in b.nodes) for b in node.branches]
        every = node.join is not None and node.join.kind is not sp.JoinKind.ALL
        return bool(waiting) and (all(waiting) if every else any(waiting))
    if isinstance(node, sp.MapNode):
        return any(_waits(m, n, calls=calls) for n in node.nodes)
    if isinstance(node, sp.CallNode) and calls:
        callee = m.workflows.get(node.workflow.text)
        return callee is not None and any(_waits(m, n, calls=False) for n in callee.spec.nodes)
    return False


@rule(
    "WF212",
    "unbounded-loop",
    severity=Severity.WARNING,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that a loop that makes no progress waits (a wait, a sleep or a person).",
)
def unbounded_loop(m: Model) -> Iterator[Finding]:
    """A loop with an exit but no ``wait``, ``sleep`` or human task on some turn
    (in its nodes, the parallels and maps it runs, or the workflows it calls)
    spins as fast as its tasks run: a polling loop without a pause hammers the
    service it polls. A loop that makes progress on each turn is not reported:
    its exit test reads a field the loop advances from its own value, such as a
    counter (``page: context.page + 1``) or a page token handed to the service
    that returns the next one.

    Bad:

        task poll: service s.status { output { ready: result.ready } next check }
        choice check { when context.ready -> done else -> poll }

    Good:

        task poll: service s.status { output { ready: result.ready } next check }
        choice check { when context.ready -> done else -> pause }
        sleep pause 30s next poll
    """
    g = m.graph
    loops: dict[str, frozenset[str]] = {}
    for c in strongly_connected_components(g):
        loop = frozenset(c)  # one set per loop, shared by its nodes
        loops.update(dict.fromkeys(loop, loop))
    # A loop that does not wait is a cycle of the flow with the waiting nodes taken out.
    busy = g.subgraph(n for n in g if not _waits(m, m.nodes[n].node))
    for component in strongly_connected_components(busy):
        if len(component) == 1 and not any(busy.has_edge(n, n) for n in component):
            continue
        members = sorted(component, key=lambda n: (m.nodes[n].scope, m.positions[n]))
        head = members[0]
        if len(members) == 1 and not g.has_edge(head, head):
            continue
        loop = loops[head]
        exits = any(s not in loop for n in loop for s in g.successors(n))
        if not exits:
            continue  # a trap: cannot-complete says it
        if _progresses(m, component):
            continue
        shown = " → ".join(members[:6])
        yield Finding(
            f"the loop {shown} has no wait or sleep",
            m.nodes[head].node.name.span,
            hint="add a 'sleep' (a pause between turns) or a 'wait'",
        )


def _progresses(m: Model, cycle: frozenset[str]) -> bool:
    """Whether a cycle's exit test reads a context field (or an item variable) that changes from turn to turn
    because of the cycle itself (``_advanced``): a counter, a page token, a cursor, or
    what a service computes from one. A status polled from a service (computed from
    nothing the loop advances, even when passed on to the next call) makes no progress."""
    tested = {
        name
        for n in cycle
        if isinstance(node := m.nodes[n].node, sp.ChoiceNode)
        and any(arm.target.text not in cycle for arm in node.arms)
        for arm in node.arms
        if arm.guard is not None
        for name in _tested(arm.guard)
    }
    nodes = [m.nodes[n].node for n in cycle]
    derived = [d for n in nodes for d in (*derivations(n), *local_derivations(n))]
    return bool(tested & _advanced(derived))


def _tested(guard: ex.Expr) -> Iterator[str]:
    """The context fields (``page``) and map item variables (``local.tries``) a guard reads."""
    yield from (name for name, _ in reads(guard, "context"))
    yield from (f"local.{name}" for name, _ in reads(guard, "local"))


def _advanced(derived: list[tuple[str, frozenset[str]]]) -> set[str]:
    """The fields whose value a turn computes from their value on the turn before
    (through one write or a chain of them: ``page: context.page + 1``, a token passed
    to the service that returns the next), and the fields computed from those.
    Written alone is not enough: a status written from a poll, or a field written a
    value that does not change, is the same whatever the turn."""
    flow: Digraph[str] = Digraph()
    for name, sources in derived:
        flow.add_node(name)
        for source in sources:
            flow.add_edge(source, name)
    seeds = {
        f
        for part in strongly_connected_components(flow)
        for f in part
        if len(part) > 1 or flow.has_edge(f, f)
    }
    return reachable(flow, seeds)
