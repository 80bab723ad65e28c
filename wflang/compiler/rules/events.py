"""Rules of events (WF36x, WF215): a send names a declared signal or message; a repeating
timer has a bound; an async task has a timeout; a non-interrupting route ends or rejoins; a
``first`` chooses between two arms or more, each waiting for something the others do not."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from wflang.compiler.meaning import arm_event
from wflang.compiler.model import Model, arm_label
from wflang.compiler.registry import Finding, Pass, rule
from wflang.compiler.symbols import did_you_mean
from wflang.dsl import spec as sp
from wflang.dsl.diagnostics import Related, Severity

event_rule = partial(rule, category="reference", pass_=Pass.NAMES)


@event_rule(
    "WF360",
    "undeclared-send",
    severity=Severity.ERROR,
    summary="Checks that a send task names a signal or message the file declares.",
)
def undeclared_send(m: Model) -> Iterator[Finding]:
    """A send task's payload is the declared payload of what it sends, and whoever
    waits for it reads that declaration: a signal or message sent must be declared
    (in the file, or a file it imports), with the payload its receivers expect.

    Bad:

        task tell: send message order_redy correlate input.order_id { next done }

    Good:

        message order_ready { order_id: string }

        task tell: send message order_ready correlate input.order_id {
            args { order_id: input.order_id }
            next done
        }
    """
    for node in m.all_nodes():
        work = getattr(node, "work", None)
        if not isinstance(work, sp.SendWork):
            continue
        declared = m.signals if work.kind is sp.SendKind.SIGNAL else m.messages
        if work.name.text not in declared:
            kind = work.kind.value
            yield Finding(
                f"'{node.name.text}' sends the {kind} '{work.name.text}', which is not declared",
                work.name.span,
                hint=did_you_mean(work.name.text, declared)
                or f"declare it: {kind} {work.name.text} {{ ... }}",
            )


@rule(
    "WF361",
    "unbounded-cycle",
    category="bounds",
    severity=Severity.ERROR,
    pass_=Pass.NAMES,
    summary="Checks that a repeating timer says how many times it fires at most.",
)
def unbounded_cycle(m: Model) -> Iterator[Finding]:
    """A repeating boundary timer starts its target at every firing, as long as its node
    waits: without a bound, a node that waits for long (a person on leave, a partner
    that never answers) fills the history with reminders. Say how many are enough, and
    route what comes after with an interrupting ``timeout``.

    Bad:

        wait approval: signal approved { every 1h -> remind next done }

    Good:

        wait approval: signal approved {
            every 1h, at most 8 -> remind
            timeout 1d -> escalate
            next done
        }

    BPMN's cycle notation counts its repetitions: ``every R8/PT1H`` is bounded,
    ``every R/PT1H`` is not.
    """
    for node in m.all_nodes():
        for t in getattr(node, "timeouts", ()):
            if t.cycle is not None and t.cycle.times is None:
                yield Finding(
                    f"the repeating timer '{t.when}' has no bound",
                    t.span,
                    hint="bound it: every 1h, at most 8 -> ... (or R8/PT1H)",
                )


@rule(
    "WF362",
    "async-without-timeout",
    category="graph",
    severity=Severity.ERROR,
    pass_=Pass.NAMES,
    summary="Checks that an async service task has a timeout that interrupts it.",
)
def async_without_timeout(m: Model) -> Iterator[Finding]:
    """An ``async`` task waits for someone outside to complete it with its token: if they
    never do (they lost the token, their system is down), the instance waits forever.
    Give it an interrupting ``timeout`` and a route for what comes after.

    Bad:

        task charge: service payments.charge async { next done }

    Good:

        task charge: service payments.charge async {
            timeout 1h -> charge_late
            next done
        }
    """
    for node in m.all_nodes():
        work = getattr(node, "work", None)
        if not (isinstance(work, sp.ServiceWork) and work.asynchronous):
            continue
        if not any(t.interrupting for t in getattr(node, "timeouts", ())):
            yield Finding(
                f"async task '{node.name.text}' has no timeout that interrupts it",
                node.name.span,
                hint="add one: timeout 1h -> NODE",
            )


@rule(
    "WF215",
    "side-route-never-rejoins",
    category="graph",
    severity=Severity.ERROR,
    pass_=Pass.GRAPH,
    summary="Checks that a non-interrupting route can end or rejoin a flow that ends.",
)
def side_route_never_rejoins(m: Model) -> Iterator[Finding]:
    """A non-interrupting route (a ``timeout … non-interrupting``, an ``every``, an
    ``on signal`` or ``on message`` … ``non-interrupting``) starts a side path beside its
    node. The side path must end, at an ``end`` of its own (which ends only the side
    path), or rejoin a flow that does; one that can do neither runs beside the instance
    forever, and a new one starts at every firing.

    Bad:

        task review: user "reviewers" {
            on signal nudge non-interrupting -> remind
            next done
        }
        sleep remind 1h next remind

    Good:

        task review: user "reviewers" {
            on signal nudge non-interrupting -> remind
            next done
        }
        sleep remind 1h next reminded
        end reminded: completed
    """
    for route in m.stranded_routes:
        target = route.clause.target.text
        yield Finding(
            f"the non-interrupting route of '{route.node}' to '{target}' can never rejoin: "
            f"no end can be reached from '{target}'",
            route.clause.span,
            hint=f"end the side path (next an 'end') or lead it back into the flow of '{route.node}'",
        )


@rule(
    "WF365",
    "first-too-few-arms",
    category="graph",
    severity=Severity.ERROR,
    pass_=Pass.NAMES,
    summary="Checks that a first chooses between two arms or more.",
)
def first_too_few_arms(m: Model) -> Iterator[Finding]:
    """A ``first`` goes on with whichever of its arms' events comes first: with one arm
    there is nothing to choose (write a ``wait`` with a ``timeout``), with none it would
    wait forever and go nowhere.

    Bad:

        first outcome {
            on signal approve -> ship
        }

    Good:

        first outcome {
            on signal approve -> ship
            after 2d -> escalate
        }
    """
    for node in m.all_nodes():
        if isinstance(node, sp.FirstNode) and len(node.arms) < 2:
            yield Finding(
                f"first '{node.name.text}' has {len(node.arms) or 'no'} "
                f"arm{'' if len(node.arms) == 1 else 's'}: it needs two or more",
                node.name.span,
                hint="a single event is a wait: wait NAME: signal S { timeout … next … }",
            )


@rule(
    "WF366",
    "duplicate-arm",
    category="graph",
    severity=Severity.ERROR,
    pass_=Pass.NAMES,
    summary="Checks that no two arms of a first wait for the same event.",
)
def duplicate_arm(m: Model) -> Iterator[Finding]:
    """Two arms for the same signal, for the same message with the same correlation, two
    ``after`` arms or two ``until`` arms: only the first of them could ever win (a signal
    is taken by one arm; the earlier timer fires first), so the other's route is dead.
    An ``after`` and an ``until`` may race: a delay against a deadline. Correlations are
    compared as parsed, as ``wf diff`` compares them: ``(input.id)`` is ``input.id``,
    ``1d`` is ``24h``.

    Bad:

        first outcome {
            on signal approve -> ship
            on signal approve -> review
            after 2d -> escalate
        }

    Good:

        first outcome {
            on signal approve -> ship
            on signal review -> review
            after 2d -> escalate
        }
    """
    for node in m.all_nodes():
        if not isinstance(node, sp.FirstNode):
            continue
        seen: dict[object, sp.EventArm] = {}
        for arm in node.arms:
            first = seen.setdefault(arm_event(arm), arm)
            if first is not arm:
                timer = isinstance(arm.trigger, sp.TimerTrigger)
                what = "a timer" if timer else arm_label(first)
                yield Finding(
                    f"first '{node.name.text}' waits for {what} twice: "
                    "only one of the arms could win",
                    arm.span,
                    related=(Related(first.span, "first waited for here"),),
                    hint="remove one, or merge their routes",
                )
