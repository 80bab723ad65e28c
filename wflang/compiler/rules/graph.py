"""Graph rules (WF2xx): soundness of the flow, scope by scope.

Each scope (the workflow, a parallel branch, a map body) is a sub-flow with one
entry and its own ``end`` nodes. Without parallelism a workflow is a one-token
net, so soundness is reachability: every node reachable from the entry
(no dead transitions), an end reachable from every reachable node (option to
complete). Parallel scopes are checked branch by branch, and their joins
against what their branches can do.
"""

from __future__ import annotations

from collections.abc import Iterator

from wflang.compiler.graphs import Digraph, condensation
from wflang.compiler.guards import arm_values, covering_arms, shadowed_arms
from wflang.compiler.inference import type_env
from wflang.compiler.model import ABORTED, Model, outgoing
from wflang.compiler.registry import Finding, Pass, Preset, rule
from wflang.compiler.types import Inference, Record
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Related, Severity
from wflang.dsl.expr import Expr
from wflang.dsl.walk import TOP, scope_name


def _scope_label(scope: str) -> str:
    return "the workflow" if scope == TOP else f"'{scope}'"


def _scopes(m: Model) -> Iterator[str]:
    """The scopes whose flow is known: no broken name in them (see ``unsure_scopes``)."""
    return (scope for scope in m.scopes if scope not in m.unsure_scopes)


def _flow_nodes(m: Model, scope: str) -> list[str]:
    """Nodes of a scope that belong to its normal flow (not compensation handlers)."""
    return [n for n in m.scopes.get(scope, []) if n not in m.compensation_handlers]


def _disconnected(m: Model, name: str) -> bool:
    g = m.graph
    info = m.nodes[name]
    return (
        g.in_degree(name) == 0
        and g.out_degree(name) == 0
        and not isinstance(info.node, sp.EndNode)
        and m.entry(info.scope) != name
    )


@rule(
    "WF201",
    "unreachable-node",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that every node can be reached from the start.",
)
def unreachable_node(m: Model) -> Iterator[Finding]:
    """A node no path reaches is dead code: usually a missing ``next`` or a typo.
    (Compensation handlers are reached by ``compensate``, not by the flow.)

    Bad:

        start a
        task a: service s.a { next done }
        task b: service s.b { next done }
        end done: completed

    Good:

        start a
        task a: service s.a { next b }
        task b: service s.b { next done }
        end done: completed
    """
    for scope in _scopes(m):
        if m.entry(scope) is None:
            continue
        reached = m.reachable(scope)
        for name in _flow_nodes(m, scope):
            if name not in reached and not _disconnected(m, name):
                yield Finding(
                    f"node '{name}' cannot be reached from the start of {_scope_label(scope)}",
                    m.nodes[name].node.name.span,
                )


@rule(
    "WF206",
    "disconnected-node",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that no node stands alone, with no edge in or out.",
)
def disconnected_node(m: Model) -> Iterator[Finding]:
    """A node with no edge in and no edge out is reported once, as disconnected,
    instead of as both unreachable and a dead end.

    Bad:

        task orphan: service s.x {}

    Good:

        task a: service s.a { next orphan }
        task orphan: service s.x { next done }
    """
    for scope in _scopes(m):
        for name in _flow_nodes(m, scope):
            if _disconnected(m, name):
                yield Finding(
                    f"node '{name}' is not connected to anything", m.nodes[name].node.name.span
                )


@rule(
    "WF202",
    "no-end",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that an end node can be reached from the start.",
)
def no_end(m: Model) -> Iterator[Finding]:
    """A workflow (or a branch, or a map body) whose start reaches no ``end`` can
    never finish.

    Bad:

        start a
        task a: service s.a { next a }

    Good:

        start a
        task a: service s.a { next done }
        end done: completed
    """
    for scope in _scopes(m):
        entry = m.entry(scope)
        if entry is None:
            continue
        if not any(n in m.reachable(scope) for n in m.ends(scope)):
            yield Finding(
                f"no end node can be reached from the start of {_scope_label(scope)}",
                m.nodes[entry].node.name.span,
            )


@rule(
    "WF203",
    "dead-end",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that every node but an end says where to go next.",
)
def dead_end(m: Model) -> Iterator[Finding]:
    """A node that is not an ``end`` needs a successor, or instances stop there
    without an outcome. Error and timeout routes are not one: they are taken only
    when the node fails or times out, and a node that succeeds still needs its
    ``next``. Compensation handlers may stop: their outcome is recorded.

    Bad:

        task charge: service pay.charge { on Declined -> declined }

    Good:

        task charge: service pay.charge { next done }
    """
    for scope in m.scopes:
        for name in _flow_nodes(m, scope):
            node = m.nodes[name].node
            if isinstance(node, sp.EndNode) or _disconnected(m, name):
                continue
            edges = [e.kind for e in outgoing(node)]
            if all(kind in ABORTED for kind in edges):
                routes = " (its error and timeout routes are not a 'next')" if edges else ""
                yield Finding(
                    f"'{name}' has no successor{routes}",
                    node.name.span,
                    hint="add 'next …' (or make it an 'end' node)",
                )


@rule(
    "WF204",
    "cannot-complete",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that from every reachable node an end can still be reached.",
)
def cannot_complete(m: Model) -> Iterator[Finding]:
    """A trap: a set of nodes that can be entered but never left towards an end,
    such as a loop with no exit. Reported once per trap, with its nodes; in a flow
    that reaches no end at all (no-end says so at its start), every loop it can
    fall into but never leave is a trap.

    Bad:

        task poll: service s.poll { next check }
        choice check { when input.ready -> poll else -> poll }

    Good:

        task poll: service s.poll { next check }
        choice check { when context.ready -> done else -> poll }
    """
    g = m.graph
    stranded = frozenset().union(*(r.reach for r in m.stranded_routes))
    for scope in _scopes(m):
        reached = m.reachable(scope)
        ends = set(m.ends(scope)) & reached
        if not reached:
            continue
        stuck = reached - _backwards(g, ends, reached)
        if stranded:  # a side path that never ends is WF215's, at its route
            stuck -= stranded - m.plainly_reachable(scope)
        if not stuck:
            continue
        traps = condensation(g.subgraph(stuck))
        for comp in traps:
            members = sorted(comp, key=m.positions.__getitem__)
            head = members[0]
            node = m.nodes[head].node
            if ends and traps.in_degree(comp) != 0:
                continue  # report the first trap a path falls into
            if not ends and (
                traps.out_degree(comp) != 0
                or m.entry(scope) in members
                or (len(members) == 1 and not g.has_edge(head, head))
            ):
                continue  # no-end says it at the start: report the loops it cannot leave
            if len(members) == 1 and g.out_degree(head) == 0:
                continue  # a dead end, reported as such
            shown = " → ".join(members[:6]) + (" …" if len(members) > 6 else "")
            yield Finding(
                f"no end can be reached once the flow enters '{head}' ({shown})",
                node.name.span,
                hint="give the loop an exit towards an end",
            )


def _backwards(g: Digraph[str], targets: set[str], within: set[str]) -> set[str]:
    """Nodes of ``within`` from which one of ``targets`` can be reached: one search back."""
    seen = set(targets)
    stack = list(targets)
    while stack:
        for pred in g.predecessors(stack.pop()):
            if pred in within and pred not in seen:
                seen.add(pred)
                stack.append(pred)
    return seen


@rule(
    "WF205",
    "end-has-successor",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that an end node has no successor.",
)
def end_has_successor(m: Model) -> Iterator[Finding]:
    """An ``end`` finishes its flow: a ``next`` on it is never taken.

    Bad:

        end done: completed { next archive }

    Good:

        end done: completed
    """
    for node in m.all_nodes():
        if isinstance(node, sp.EndNode) and node.next is not None:
            yield Finding(f"end node '{node.name.text}' has a successor", node.next.span)


def _can_complete(m: Model, scope: str) -> bool:
    """Whether a sub-flow can reach an end that completes it (or reaches no end at
    all, which no-end reports)."""
    reached = m.reachable(scope)
    ends = [n for n in m.ends(scope) if n in reached]
    return not ends or any(
        m.nodes[n].node.outcome is sp.Outcome.COMPLETED  # type: ignore[union-attr]
        for n in ends
    )


@rule(
    "WF207",
    "branch-never-joins",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that every parallel branch and map body can complete.",
)
def branch_never_joins(m: Model) -> Iterator[Finding]:
    """A branch (or map body) whose flow can only end ``failed``, ``cancelled`` or
    ``compensated`` never arrives at its join. (One that reaches no end at all is
    reported as no-end.) An empty branch has nothing to do.

    Bad:

        parallel p { branch a { task t: service s.t { next f } end f: failed } join all -> done }

    Good:

        parallel p { branch a { task t: service s.t { next ok } end ok: completed } join all -> done }
    """
    for node in m.all_nodes():
        if isinstance(node, sp.ParallelNode):
            for b in node.branches:
                scope = scope_name(node, b)
                if scope in m.unsure_scopes:
                    continue
                if not b.nodes:
                    yield Finding(f"branch '{b.name.text}' is empty", b.name.span)
                elif m.entry(scope) and not _can_complete(m, scope):
                    yield Finding(
                        f"branch '{b.name.text}' of '{node.name.text}' can never complete",
                        b.name.span,
                        hint="give it a path to a 'completed' end",
                    )
        elif isinstance(node, sp.MapNode):
            if not node.nodes:
                yield Finding(f"map '{node.name.text}' has an empty body", node.name.span)
            elif node.name.text not in m.unsure_scopes and not _can_complete(m, node.name.text):
                yield Finding(
                    f"the body of map '{node.name.text}' can never complete", node.name.span
                )


@rule(
    "WF208",
    "join-deadlock",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that a join waits only for what its branches can deliver.",
)
def join_deadlock(m: Model) -> Iterator[Finding]:
    """``join all`` waits for every branch; ``join n`` for n of them. A join that
    waits for more branches than there are never fires. ``join n of m`` states
    the number of branches: it must match. (A branch that cannot complete is
    reported on the branch, as WF207.)

    Bad:

        parallel p { branch a { end a1: completed } join 2 -> done }

    Good:

        parallel p { branch a { end a1: completed } branch b { end b1: completed } join 2 -> done }
    """
    for node in m.all_nodes():
        if not isinstance(node, sp.ParallelNode):
            continue
        total = len(node.branches)
        join = node.join
        if join is not None and join.kind is sp.JoinKind.N_OF_M:
            count = join.count or 0
            if join.of is not None and join.of != total:
                yield Finding(
                    f"'join {count} of {join.of}' but '{node.name.text}' has {total} branches",
                    join.span,
                )
            elif count == 0:
                yield Finding("'join 0' fires before any branch has run", join.span)
            elif count > total:
                yield Finding(
                    f"the join waits for {count} branches; '{node.name.text}' has {total}",
                    join.span,
                )
        if total == 0:
            yield Finding(f"parallel '{node.name.text}' has no branches", node.name.span)


@rule(
    "WF209",
    "duplicate-edge",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that no error or guard is handled twice on one node.",
)
def duplicate_edge(m: Model) -> Iterator[Finding]:
    """The same error in two ``on`` handlers, or the same timeout twice: only the
    first is ever taken. A timer that an interrupting timeout always beats never
    fires either.

    Bad:

        task t: service s.t { on Declined -> retry_later on Declined -> failed next done }

    Good:

        task t: service s.t { on Declined -> retry_later next done }
    """
    for node in m.all_nodes():
        seen: dict[str, sp.Ident] = {}
        for h in getattr(node, "handlers", ()):
            for e in h.errors:
                if e.text in seen:
                    yield Finding(
                        f"error '{e.text}' is handled twice on '{node.name.text}'",
                        e.span,
                        related=(Related(seen[e.text].span, "first handled here"),),
                    )
                seen.setdefault(e.text, e)
        timeouts: tuple[sp.Timeout, ...] = getattr(node, "timeouts", ())
        # The interrupting timer that fires first cancels the node: later timers never fire.
        soonest = min((t for t in timeouts if t.interrupting), key=_millis, default=None)
        timers: dict[tuple[str, str], sp.Timeout] = {}
        for t in timeouts:
            from wflang.dsl.formatter import format_expr

            # Two interrupting timers of one length: only the first is taken, wherever
            # the second goes. Non-interrupting ones both fire, so their targets count.
            key = (format_expr(t.after), "" if t.interrupting else t.target.text)
            if key in timers:
                yield Finding(
                    "the same timeout is given twice",
                    t.span,
                    related=(Related(timers[key].span, "first given here"),),
                )
            elif (
                soonest is not None
                and t is not soonest
                and _millis(soonest) < _FOREVER
                and _millis(t) < _FOREVER
                and (_millis(soonest) < _millis(t) or t.interrupting)
            ):
                yield Finding(
                    f"this timeout never fires: the one after {format_expr(soonest.after)} "
                    "interrupts the node first",
                    t.span,
                    related=(Related(soonest.span, "fires first"),),
                )
            timers.setdefault(key, t)


_FOREVER = float("inf")


def _millis(t: sp.Timeout) -> float:
    """The length of a timer written as a literal; other timers are never compared."""
    from wflang.dsl import expr as ex

    return t.after.millis if isinstance(t.after, ex.DurationLit) else _FOREVER


@rule(
    "WF210",
    "shadowed-branch",
    severity=Severity.WARNING,
    category="graph",
    pass_=Pass.GRAPH,
    summary="Checks that every arm of a choice can be taken.",
)
def shadowed_branch(m: Model) -> Iterator[Finding]:
    """Guards are tried in order: an arm after ``else`` or after ``when true``, a
    second ``else``, a guard repeated, or ``when false`` is never taken; nor is an
    arm whose values the arms before it already take, on an ``int`` or
    ``decimal`` compared with constants, an enum or a boolean
    (``x >= 100`` before ``x >= 1000``), nor an ``else`` after arms that between
    them take every value of one subject (``x < 10`` and ``x >= 10``, every
    member of an enum, ``x`` and ``not x``).

    Bad:

        choice c { when input.amount >= 100 -> review when input.amount >= 1000 -> board else -> a }

    Good:

        choice c { when input.amount >= 1000 -> board when input.amount >= 100 -> review else -> a }
    """
    from wflang.dsl import expr as ex
    from wflang.dsl.formatter import format_expr

    inf = Inference(type_env(m), {"input": Record("input"), "context": Record("context")})
    for node in m.all_nodes():
        if not isinstance(node, sp.ChoiceNode):
            continue
        arms = arm_values(node, inf)
        shadowed = {id(s.arm): s.by for s in shadowed_arms(arms)}
        subject, covering = covering_arms(arms)
        catch_all: sp.ChoiceArm | None = None
        guards: dict[str, sp.ChoiceArm] = {}
        for arm in node.arms:
            if catch_all is not None:
                yield Finding(
                    "this arm is never taken: an earlier arm always matches",
                    arm.span,
                    related=(Related(catch_all.span, "this arm always matches"),),
                )
                continue
            if arm.guard is None or (isinstance(arm.guard, ex.BoolLit) and arm.guard.value):
                catch_all = arm
                if covering:
                    yield _covered(arm, subject, covering)
                continue
            if isinstance(arm.guard, ex.BoolLit):
                yield Finding("'when false' is never taken", arm.span)
                continue
            text = format_expr(arm.guard)
            if text in guards:
                yield Finding(
                    "this guard repeats an earlier one, so it is never taken",
                    arm.guard.span,
                    related=(Related(guards[text].span, "first tested here"),),
                )
            elif id(arm) in shadowed:
                yield _shadowed(arm.guard, shadowed[id(arm)])
            guards.setdefault(text, arm)


def _covered(arm: sp.ChoiceArm, subject: str, by: tuple[sp.ChoiceArm, ...]) -> Finding:
    from wflang.dsl.formatter import format_expr

    shown = [f"'when {format_expr(a.guard)}'" for a in by if a.guard is not None]
    if len(shown) > 4:
        shown = [*shown[:3], f"{len(shown) - 3} more"]
    listed = ", ".join(shown[:-1]) + f" and {shown[-1]}"
    what = "'else'" if arm.guard is None else "'when true'"
    return Finding(
        f"{what} is never taken: {listed} take every value of {subject}",
        arm.span,
        related=tuple(Related(a.span, f"takes some values of {subject}") for a in by),
    )


def _shadowed(guard: Expr, by: tuple[sp.ChoiceArm, ...]) -> Finding:
    from wflang.dsl.formatter import format_expr

    if not by:
        return Finding("this guard is never true, so its arm is never taken", guard.span)
    first = by[0].guard
    assert first is not None
    taken = f"'when {format_expr(first)}'" if len(by) == 1 else "the arms before it"
    return Finding(
        f"this arm is never taken: {taken} already match{'es' if len(by) == 1 else ''} "
        "every value it does",
        guard.span,
        related=tuple(Related(a.span, "takes its values first") for a in by),
    )


@rule(
    "WF213",
    "superfluous-node",
    severity=Severity.INFO,
    category="graph",
    pass_=Pass.GRAPH,
    preset=Preset.STRICT,
    summary="Checks for nodes that do nothing: a choice with only 'else', one-branch parallels.",
)
def superfluous_node(m: Model) -> Iterator[Finding]:
    """A choice whose only arm is ``else`` is a ``next``; a parallel with one
    branch is a sequence.

    Bad:

        choice c { else -> done }

    Good:

        task t: service s.t { next done }
    """
    for node in m.all_nodes():
        if isinstance(node, sp.ChoiceNode) and len(node.arms) == 1 and node.arms[0].guard is None:
            yield Finding(
                f"choice '{node.name.text}' always goes to '{node.arms[0].target.text}'",
                node.name.span,
            )
        if isinstance(node, sp.ParallelNode) and len(node.branches) == 1:
            yield Finding(f"parallel '{node.name.text}' has a single branch", node.name.span)
