"""Walking a spec: the one place that knows how nodes and expressions nest.

As Jinja's ``iter_child_nodes``/``find_all``: ``sub_flows`` gives the scopes a
node opens (a parallel's branches, a map's body), ``walk_nodes`` every node
with the scope it lives in, ``node_expressions`` the expressions a node
evaluates and ``subexpressions`` every expression inside one. Scope names are
built by ``scope_name`` only: the model, the diff pairing, the renderer and the
lowering all say the same ``parallel/branch`` or ``map``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import assert_never

from attrs import frozen

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp

TOP = ""  # the workflow's own scope


def scope_name(owner: sp.ParallelNode | sp.MapNode, branch: sp.Branch | None = None) -> str:
    """The scope a branch of a parallel (``parallel/branch``) or a map's body (``map``) is."""
    if branch is None:
        return owner.name.text
    return f"{owner.name.text}/{branch.name.text}"


def owner_of(scope: str) -> str | None:
    """The parallel or map node that opens a scope (None for the workflow's own)."""
    return None if scope == TOP else scope.split("/", maxsplit=1)[0]


def sub_flows(node: sp.Node) -> Iterator[tuple[str, tuple[sp.Node, ...]]]:
    """The scopes a node opens, each with its nodes: a parallel's branches, a map's body."""
    if isinstance(node, sp.ParallelNode):
        for branch in node.branches:
            yield scope_name(node, branch), branch.nodes
    elif isinstance(node, sp.MapNode):
        yield scope_name(node), node.nodes


def child_nodes(node: sp.Node) -> Iterator[sp.Node]:
    """The nodes directly inside a node's branches or body (none for other kinds)."""
    for _, nodes in sub_flows(node):
        yield from nodes


@frozen
class Placed:
    """A node with the scope it lives in and the parallel or map node that holds it."""

    node: sp.Node
    scope: str
    owner: str | None

    @property
    def name(self) -> str:
        return self.node.name.text


def walk_nodes(
    nodes: tuple[sp.Node, ...], scope: str = TOP, owner: str | None = None
) -> Iterator[Placed]:
    """Every node, nested ones right after the node that holds them (source order)."""
    for node in nodes:
        yield Placed(node, scope, owner)
        for inner, body in sub_flows(node):
            yield from walk_nodes(body, inner, node.name.text)


def all_nodes(nodes: tuple[sp.Node, ...]) -> Iterator[sp.Node]:
    """Every node, nested ones too, in the order of ``walk_nodes``."""
    for placed in walk_nodes(nodes):
        yield placed.node


def node_expressions(node: sp.Node) -> Iterator[ex.Expr]:
    """Every expression a node evaluates itself, outputs included (not its body's)."""
    if isinstance(node, sp.ChoiceNode):
        yield from (a.guard for a in node.arms if a.guard is not None)
    for entry in (*getattr(node, "args", ()), *getattr(node, "output", ())):
        yield entry.value
    for t in getattr(node, "timeouts", ()):
        yield t.after
    if isinstance(node, sp.TaskNode) and node.heartbeat is not None:
        yield node.heartbeat
    for event in getattr(node, "events", ()):
        if isinstance(event.trigger, sp.MessageTrigger):
            yield event.trigger.correlation  # (evaluated when the node is entered)
        yield from (entry.value for entry in event.output)
    if isinstance(node, sp.SleepNode):
        yield node.duration
    if isinstance(node, sp.TaskNode):
        who = getattr(node.work, "assignee", None)  # a user or manual task's
        if who is not None:
            yield who
        if isinstance(node.work, sp.SendWork):
            yield node.work.target
    if isinstance(node, sp.MapNode):
        yield node.items
        yield from (c.value for c in node.collects)  # (evaluated as each item completes)
    if isinstance(node, sp.WaitNode):
        trigger = node.trigger
        if isinstance(trigger, sp.MessageTrigger):
            yield trigger.correlation
        elif isinstance(trigger, sp.UntilTrigger):
            yield trigger.at
    if isinstance(node, sp.FirstNode):  # (the arms' outputs are the node's ``output``)
        for arm in node.arms:
            if isinstance(arm.trigger, sp.MessageTrigger):
                yield arm.trigger.correlation
            elif isinstance(arm.trigger, sp.AfterTrigger):
                yield arm.trigger.after
            elif isinstance(arm.trigger, sp.UntilTrigger):
                yield arm.trigger.at


def triggers(node: sp.Node) -> Iterator[sp.SignalTrigger | sp.MessageTrigger]:
    """The signals and messages a node waits for: a wait's, its boundary events', and
    the arms' of a ``first``."""
    if isinstance(node, sp.WaitNode) and not isinstance(node.trigger, sp.UntilTrigger):
        yield node.trigger
    for event in getattr(node, "events", ()):
        yield event.trigger
    if isinstance(node, sp.FirstNode):
        for arm in node.arms:
            if not isinstance(arm.trigger, sp.TimerTrigger):
                yield arm.trigger


def walk_expressions(nodes: tuple[sp.Node, ...]) -> Iterator[tuple[Placed, ex.Expr]]:
    """Every expression of every node (nested ones too), with the node it belongs to."""
    for placed in walk_nodes(nodes):
        for e in node_expressions(placed.node):
            yield placed, e


def child_expressions(e: ex.Expr) -> tuple[ex.Expr, ...]:
    """The expressions directly inside one. A tuple, and the commonest kinds first: the
    checker's flow analyses ask this of every part of every expression, many times."""
    match e:
        case ex.Member() | ex.Project():
            return (e.target,)
        case ex.Ref():
            return ()
        case ex.Binary():
            return (e.left, e.right)
        case ex.Call():
            return e.args
        case (
            ex.IntLit()
            | ex.DecimalLit()
            | ex.StringLit()
            | ex.BoolLit()
            | ex.NullLit()
            | ex.DurationLit()
            | ex.TimestampLit()
        ):
            return ()
        case ex.Lambda():
            return (e.body,)
        case ex.Index():
            return (e.target, e.index)
        case ex.Unary():
            return (e.operand,)
        case ex.ListLit():
            return e.items
        case _:
            assert_never(e)


def subexpressions(e: ex.Expr) -> Iterator[ex.Expr]:
    """An expression and every expression inside it."""
    stack = [e]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(child_expressions(cur))
