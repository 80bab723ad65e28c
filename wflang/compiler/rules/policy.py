"""Policy rules: bounds of retries and timers (WF306, WF307), sagas (WF4xx),
waits without timeouts (WF402) and context fields read before any path writes
them (WF303)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from wflang.compiler.dataflow import (
    context_reads,
    must_analysis,
)
from wflang.compiler.model import ABORTED, Model
from wflang.compiler.registry import Finding, Pass, Preset, rule
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl import types as ty
from wflang.dsl.diagnostics import Related, Severity
from wflang.dsl.span import Span
from wflang.dsl.walk import TOP
from wflang.runtime.versions import MAX_VERSION


def _retry_budget_ms(r: sp.Retry) -> int | None:
    """Milliseconds spent waiting between all attempts, when the policy says enough."""
    if r.attempts is None or r.initial_delay is None:
        return None
    factor = r.factor if r.factor is not None else Decimal(2)
    delay, total = Decimal(r.initial_delay.millis), Decimal(0)
    cap = Decimal(r.max_delay.millis) if r.max_delay is not None else None
    for _ in range(max(0, min(r.attempts, 1000) - 1)):
        step = min(delay, cap) if cap is not None else delay
        total += step
        delay *= factor
    return int(total)


@rule(
    "WF306",
    "invalid-bound",
    severity=Severity.ERROR,
    category="bounds",
    pass_=Pass.TYPES,
    summary="Checks that durations, retries, concurrency and tolerances make sense.",
)
def invalid_bound(m: Model) -> Iterator[Finding]:
    """Durations are positive; a repeating timer fires at least once; a retry has at least one attempt, a factor of at
    least 1, a jitter between 0 and 1 and a maximum delay not below its initial
    delay, and its total backoff fits in the step's timeout; a map runs at least
    one item at a time and tolerates at most 100%; a version (of the workflow, or
    pinned by a ``call``) is between 1 and 2147483647, what every store holds.

    Bad:

        task t: service s.t { retry { attempts: 5, backoff: 1m..10s } timeout 30s -> late next done }

    Good:

        task t: service s.t { retry { attempts: 3, backoff: 1s..10s } timeout 1m -> late next done }
    """
    header = m.spec.header
    if header is not None:
        yield from _version_bound(header.version, header.span)
    for node in m.all_nodes():
        if isinstance(node, sp.CallNode) and node.version is not None:
            yield from _version_bound(node.version, node.span)
        for e in _duration_literals(node):
            if e.millis <= 0:
                yield Finding(f"the duration {e.text} is not positive", e.span)
        for text, span in _negated_durations(node):
            yield Finding(f"the duration -{text} is negative", span)
        for t in getattr(node, "timeouts", ()):
            if t.cycle is not None and t.cycle.times is not None and t.cycle.times < 1:
                yield Finding("a repeating timer fires at least once", t.cycle.span)
        retry: sp.Retry | None = getattr(node, "retry", None)
        if retry is not None:
            yield from _retry_bounds(retry, node)
        if isinstance(node, sp.MapNode):
            if node.concurrency is not None and node.concurrency < 1:
                yield Finding("concurrency must be at least 1", node.name.span)
            if node.tolerate is not None and node.tolerate.percent and node.tolerate.value > 100:
                yield Finding("a map cannot tolerate more than 100% failures", node.tolerate.span)


def _version_bound(version: int, span: Span) -> Iterator[Finding]:
    if not 1 <= version <= MAX_VERSION:
        yield Finding(f"version {version} is out of range: a version is 1 to {MAX_VERSION}", span)


def _duration_literals(node: sp.Node) -> Iterator[ex.DurationLit]:
    for t in getattr(node, "timeouts", ()):
        if isinstance(t.after, ex.DurationLit):
            yield t.after
    if isinstance(node, sp.SleepNode) and isinstance(node.duration, ex.DurationLit):
        yield node.duration
    retry = getattr(node, "retry", None)
    if retry is not None:
        yield from (d for d in (retry.initial_delay, retry.max_delay) if d is not None)


def _negated_durations(node: sp.Node) -> Iterator[tuple[str, Span]]:
    """``timeout -5s`` and ``sleep s -1m``: a minus in front of a duration literal."""
    exprs = [t.after for t in getattr(node, "timeouts", ())]
    if isinstance(node, sp.SleepNode):
        exprs.append(node.duration)
    for e in exprs:
        if isinstance(e, ex.Unary) and e.op == "-" and isinstance(e.operand, ex.DurationLit):
            yield e.operand.text, e.span


def _retry_bounds(r: sp.Retry, node: sp.Node) -> Iterator[Finding]:
    found: list[Finding] = []
    if r.attempts is not None and r.attempts < 1:
        found.append(Finding("a retry needs at least 1 attempt", r.span))
    if r.factor is not None and r.factor < 1:
        found.append(
            Finding(f"a backoff factor of {r.factor} shrinks the delay; use 1 or more", r.span)
        )
    if r.jitter is not None and not 0 <= r.jitter <= 1:
        found.append(
            Finding(f"jitter is a fraction of the delay; {r.jitter} is not in 0..1", r.span)
        )
    if r.initial_delay and r.max_delay and r.max_delay.millis < r.initial_delay.millis:
        found.append(
            Finding(
                f"the maximum delay {r.max_delay.text} is below the initial delay "
                f"{r.initial_delay.text}",
                r.max_delay.span,
            )
        )
    yield from found
    if found:
        return  # the budget of a policy that makes no sense would be noise
    budget = _retry_budget_ms(r)
    limits = [
        t.after.millis
        for t in getattr(node, "timeouts", ())
        if t.interrupting and isinstance(t.after, ex.DurationLit)
    ]
    if budget is not None and limits and budget > min(limits):
        yield Finding(
            f"the retries wait {budget / 1000:g}s in all, longer than the step's timeout "
            f"({min(limits) / 1000:g}s)",
            r.span,
            hint="the timeout fires before the last attempts: lower the attempts or raise it",
        )


@rule(
    "WF307",
    "catch-all-order",
    severity=Severity.ERROR,
    category="graph",
    pass_=Pass.NAMES,
    summary="Checks that 'on any' is the last error handler of a node.",
)
def catch_all_order(m: Model) -> Iterator[Finding]:
    """Handlers are tried in order; ``on any`` catches everything, so a handler
    after it is never used.

    Bad:

        task t: service s.t { on any -> failed on Declined -> retry_later next done }

    Good:

        task t: service s.t { on Declined -> retry_later on any -> failed next done }
    """
    for node in m.all_nodes():
        handlers = getattr(node, "handlers", ())
        for i, h in enumerate(handlers[:-1]):
            if h.catch_all:
                yield Finding(
                    "'on any' must be the last handler",
                    h.span,
                    related=(Related(handlers[i + 1].span, "never used: 'on any' caught it"),),
                )


_EFFECTS = (sp.ServiceWork,)


@rule(
    "WF401",
    "compensation-misuse",
    severity=Severity.ERROR,
    category="saga",
    pass_=Pass.GRAPH,
    summary="Checks that compensation handlers run only as compensation.",
)
def compensation_misuse(m: Model) -> Iterator[Finding]:
    """A node named by ``compensate`` undoes a step after a failure; reaching it
    through the normal flow would undo work that was never meant to be undone.

    Bad:

        task reserve: service inv.reserve { compensate release next release }
        task release: service inv.release {}

    Good:

        task reserve: service inv.reserve { compensate release next done }
        task release: service inv.release {}
    """
    handlers = {
        c.text: node
        for node in m.all_nodes()
        if (c := getattr(node, "compensate", None)) is not None and c.text in m.nodes
    }
    normal = _normal_flow(m)
    for scope in m.scopes:
        reached = m.reachable(scope)
        for name, owner in handlers.items():
            if owner.name.text not in normal:
                continue  # registered while compensating: nested-compensation says it
            if name in reached and m.nodes[name].scope == scope:
                yield Finding(
                    f"compensation handler '{name}' is also reached by the normal flow",
                    m.nodes[name].node.name.span,
                    related=(Related(owner.span, "registered as compensation here"),),
                )
    for name in handlers:
        node = m.nodes[name].node
        if not isinstance(node, sp.TaskNode | sp.CallNode):
            yield Finding(f"'{name}' is not a task or a call, so it cannot compensate", node.span)


def _normal_flow(m: Model) -> set[str]:
    """Nodes the flow reaches from the start of their scope (not as compensation)."""
    return set().union(*(m.reachable(scope) for scope in m.scopes))


@rule(
    "WF403",
    "compensation-without-effect",
    severity=Severity.ERROR,
    category="saga",
    pass_=Pass.NAMES,
    summary="Checks that only steps with an external effect register compensation.",
)
def compensation_without_effect(m: Model) -> Iterator[Finding]:
    """Compensation undoes an external effect: a service call or a sub-workflow.
    A script, a human task, a wait or a sleep has nothing to undo.

    Bad:

        task total: script { output { total: input.amount } compensate refund next done }

    Good:

        task charge: service pay.charge { compensate refund next done }
    """
    for node in m.all_nodes():
        c = getattr(node, "compensate", None)
        if c is None:
            continue
        effect = isinstance(node, sp.CallNode) or isinstance(getattr(node, "work", None), _EFFECTS)
        if not effect:
            handler = m.nodes.get(c.text)
            where = handler.node.name.span if handler is not None else c.span
            yield Finding(
                f"'{node.name.text}' has no external effect for '{c.text}' to undo",
                node.name.span,
                related=(Related(where, "the compensation it registers"),),
            )


@rule(
    "WF405",
    "compensating-read-only",
    severity=Severity.ERROR,
    category="saga",
    pass_=Pass.NAMES,
    summary="Checks that no step calling a read-only service registers compensation.",
)
def compensating_read_only(m: Model) -> Iterator[Finding]:
    """A service declared ``reads`` changes nothing outside (a price lookup, a score):
    a step calling it has nothing to undo, so the compensation it registers would
    undo what another step did, or nothing. Compensate the step with the effect; if
    the service does change something, it is not read-only: drop ``reads``.

    Bad:

        service risk.score(id: string) -> { score: int } reads
        task score: service risk.score { compensate forget next done }

    Good:

        service risk.score(id: string) -> { score: int } reads
        task score: service risk.score { next done }
    """
    for node in m.all_nodes():
        c = getattr(node, "compensate", None)
        work = getattr(node, "work", None)
        if c is None or not isinstance(work, sp.ServiceWork):
            continue
        service = m.services.get(work.service.text)
        if service is not None and service.read_only:
            yield Finding(
                f"'{node.name.text}' calls {service.name.text}, which only reads:"
                f" there is nothing for '{c.text}' to undo",
                c.span,
                hint="compensate the step that changes something, or drop 'reads' from "
                f"{service.name.text} if it does",
                related=(Related(service.span, "declared read-only (reads) here"),),
            )


@rule(
    "WF404",
    "nested-compensation",
    severity=Severity.ERROR,
    category="saga",
    pass_=Pass.NAMES,
    summary="Checks that a compensating step does not register compensation itself.",
)
def nested_compensation(m: Model) -> Iterator[Finding]:
    """Compensation is not recursive: a compensating step that registers its own
    compensation would need undoing while undoing.

    Bad:

        task charge: service pay.charge { compensate refund next done }
        task refund: service pay.refund { compensate charge }

    Good:

        task charge: service pay.charge { compensate refund next done }
        task refund: service pay.refund {}
    """
    names = {c.text for node in m.all_nodes() if (c := getattr(node, "compensate", None))}
    normal = _normal_flow(m)
    for name in sorted(names - normal):  # a step on the normal flow is compensation-misuse's
        info = m.nodes.get(name)
        c = getattr(info.node, "compensate", None) if info else None
        if c is not None:
            yield Finding(f"compensating step '{name}' registers compensation itself", c.span)


@rule(
    "WF402",
    "wait-without-timeout",
    severity=Severity.WARNING,
    category="graph",
    pass_=Pass.NAMES,
    preset=Preset.ALL,
    summary="Checks that every wait for a signal or message has a timeout.",
)
def wait_without_timeout(m: Model) -> Iterator[Finding]:
    """A wait without a timeout can hold an instance forever if the signal never
    comes. Off by default: some waits are meant to be open-ended.

    Bad:

        wait approval: signal approved { next ship }

    Good:

        wait approval: signal approved { timeout 48h -> escalate next ship }

    A ``first`` whose arms are all signals and messages is such a wait too: give it an
    ``after`` (or an ``until``) arm.
    """
    for node in m.all_nodes():
        if (
            isinstance(node, sp.WaitNode)
            and not isinstance(node.trigger, sp.UntilTrigger)
            and not any(t.interrupting for t in node.timeouts)
        ):
            yield Finding(f"wait '{node.name.text}' has no timeout", node.name.span)
        if isinstance(node, sp.FirstNode) and not any(
            isinstance(arm.trigger, sp.TimerTrigger) for arm in node.arms
        ):
            yield Finding(
                f"first '{node.name.text}' has no 'after' arm", node.name.span,
                hint="add one: after 2d -> NODE",
            )  # fmt: skip


# ---------------------------------------------------------------- usage and data flow


def _writes_towards(m: Model, source: str, target: str) -> frozenset[str]:
    """What a node has written when the flow goes on from it to ``target``: along a
    boundary event's route or an arm of a ``first``, what every one of them that leads
    there writes."""
    kinds = m.edge_kinds.get((source, target), frozenset())
    node = m.nodes[source].node
    routes: list[sp.OnEvent] | list[sp.EventArm] = []
    if kinds and kinds <= _EVENTS:
        routes = [e for e in getattr(node, "events", ()) if e.target.text == target]
    elif isinstance(node, sp.FirstNode):
        routes = [arm for arm in node.arms if arm.target.text == target]
    if routes:
        return frozenset.intersection(
            *(frozenset(x.name.text for x in r.output if not x.local) for r in routes)
        )
    if kinds & ABORTED:
        return frozenset()
    return m.writes(source)


#: The kinds of a boundary event's route (``on signal``, ``on message``).
_EVENTS = frozenset({"event", "event-side"})


@rule(
    "WF303",
    "read-before-write",
    severity=Severity.WARNING,
    category="dataflow",
    pass_=Pass.GRAPH,
    summary="Checks that a context field is written on every path before it is read.",
)
def read_before_write(m: Model) -> Iterator[Finding]:
    """Context fields that are neither optional nor defaulted start out unset.
    Reading one on a path where no earlier node wrote it fails at run time.
    (Optional fields start as null, which the type rules make you handle.)

    Bad:

        context { charge_id: string }
        start refund
        task refund: service pay.refund { args { id: context.charge_id } next done }

    Good:

        start charge
        task charge: service pay.charge { output { charge_id: result.id } next refund }
        task refund: service pay.refund { args { id: context.charge_id } next done }
    """
    initial = {
        name
        for name, f in m.context.items()
        if f.default is not None or isinstance(f.type, ty.OptionalType)  # null is a value
    }
    state_in: dict[str, set[str]] = {}
    for scope in m.scopes:
        entry = m.entry(scope)
        if entry is None:
            continue
        owner = m.nodes[entry].owner
        start = set(initial) if scope == TOP else set(state_in.get(owner or "", initial))
        yield from _flow(m, scope, entry, start, state_in)


def _flow(
    m: Model, scope: str, entry: str, start: set[str], state_in: dict[str, set[str]]
) -> Iterator[Finding]:
    g = m.graph  # edges stay inside their scope: a search from the entry stays too

    def transfer(source: str, target: str, written: frozenset[str]) -> frozenset[str]:
        return written | _writes_towards(m, source, target)

    ins = must_analysis(g, entry, frozenset(start), transfer)
    for n in sorted(ins, key=m.positions.__getitem__):
        state_in[n] = set(ins[n])
        node = m.nodes[n].node
        for name, where in context_reads(node):
            if name in m.context and name not in ins[n]:
                yield Finding(
                    f"'context.{name}' may be read before any step writes it",
                    where.span,
                    hint=f"write it on every path to '{n}', or give it a default",
                )
