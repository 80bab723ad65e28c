"""Diff rules for the policies of the nodes instances are in (WF649-WF653, WF662, WF667):
retry, timeouts, compensation, the service called, the join, async, a first's arms.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import diff_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    INSTANCES,
    WARNING,
    changed,
    key,
)
from wflang.compiler.meaning import arm_event
from wflang.compiler.model import arm_key
from wflang.compiler.registry import Finding
from wflang.dsl import expr as ex
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr


@diff_rule(
    "WF649",
    "retry-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A node's retry policy changed.",
)
def retry_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        retry { attempts: 5, backoff: 1s..5m }

    New:

        retry { attempts: 2, backoff: 1s..5m }
    """
    for x in p.nodes.both:
        old, new = getattr(x.old.node, "retry", None), getattr(x.new.node, "retry", None)
        if old != new:
            span = new.span if new is not None else x.new.node.name.span
            related = p.was(old.span) if old is not None else ()
            what = "added" if old is None else "removed" if new is None else "changed"
            detail = f" ({_retry_changes(old, new)})" if old is not None and new is not None else ""
            yield Finding(
                f"the retry policy of '{x.key}' was {what}{detail}",
                span,
                related=related,
                key=key(f"node:{x.key}/retry", what),
            )


RETRY_FIELDS = ("attempts", "initial_delay", "max_delay", "factor", "jitter", "non_retryable")


def _retry_changes(old: sp.Retry, new: sp.Retry) -> str:
    """``attempts 3 -> 5, max_delay 1m -> 5m``."""
    out = []
    for name in RETRY_FIELDS:
        a, b = getattr(old, name), getattr(new, name)
        if a != b:
            out.append(f"{name} {_value(a)} -> {_value(b)}")
    return ", ".join(out)


def _value(v: object) -> str:
    if v is None:
        return "unset"
    if isinstance(v, tuple):
        return "[" + ", ".join(i.text for i in v if isinstance(i, sp.Ident)) + "]"
    if isinstance(v, int | Decimal):
        return str(v)
    return format_expr(v)  # type: ignore[arg-type]


@diff_rule(
    "WF650",
    "timeout-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A node's timeouts (or an async task's heartbeat) were added, removed, or fire "
    "at another time.",
)
def timeout_changed(p: Pairing) -> Iterator[Finding]:
    """Where a timeout leads is an edge (edge-retargeted); this rule is about when, and
    how often a repeating one (``every``) fires, and how long an async task may go
    without a heartbeat (``heartbeat``: it times out then).

    Old:

        timeout 30s -> failed

    New:

        timeout 10s -> failed
    """
    for x in p.nodes.both:
        old = getattr(x.old.node, "timeouts", ())
        new = getattr(x.new.node, "timeouts", ())
        before = [_firing(t) for t in old]
        after = [_firing(t) for t in new]
        if before != after:
            span = new[0].span if new else x.new.node.name.span
            related = p.was(old[0].span) if old else ()
            yield Finding(
                f"the timeouts of '{x.key}' changed from {_timeouts(old)} to {_timeouts(new)}",
                span,
                related=related,
                key=key(f"node:{x.key}/timeout", _timeouts(old), _timeouts(new)),
            )
        beat_old, beat_new = (getattr(n.node, "heartbeat", None) for n in (x.old, x.new))
        if _length(beat_old) != _length(beat_new):
            was, now = (_heartbeat(b) for b in (beat_old, beat_new))
            yield Finding(
                f"the heartbeat of '{x.key}' changed from {was} to {now}",
                beat_new.span if beat_new is not None else x.new.node.name.span,
                related=p.was(beat_old.span) if beat_old is not None else (),
                key=key(f"node:{x.key}/heartbeat", was, now),
            )


def _length(e: ex.Expr | None) -> object:
    """A duration by its length (``1h`` is ``60m``), any other expression as itself."""
    return e.millis if isinstance(e, ex.DurationLit) else e


def _heartbeat(e: ex.Expr | None) -> str:
    return "none" if e is None else format_expr(e)


def _firing(t: sp.Timeout) -> tuple[object, ...]:
    """When a timer fires: after what (a literal by its length: ``1h`` is ``PT60M``),
    whether it interrupts, how often it repeats."""
    return (_length(t.after), t.interrupting, t.cycle is not None, t.cycle and t.cycle.times)


def _timeouts(ts: tuple[sp.Timeout, ...]) -> str:
    if not ts:
        return "none"
    return ", ".join(
        ("" if t.interrupting or t.cycle else "non-interrupting ") + t.when for t in ts
    )


@diff_rule(
    "WF651",
    "compensation-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A step's compensation was added, removed or changed.",
)
def compensation_changed(p: Pairing) -> Iterator[Finding]:
    """Instances that registered the old compensation run it on failure.

    Old:

        compensate release

    New:

        compensate release_all
    """
    for x in p.nodes.both:
        old = getattr(x.old.node, "compensate", None)
        new = getattr(x.new.node, "compensate", None)
        if (old and old.text) != (new and new.text):
            yield Finding(
                f"the compensation of '{x.key}' changed from {_name(old)} to {_name(new)}",
                new.span if new is not None else x.new.node.name.span,
                related=p.was(old.span) if old is not None else (),
                key=key(f"node:{x.key}/compensate", _name(old), _name(new)),
            )


def _name(ident: sp.Ident | None) -> str:
    return "none" if ident is None else f"'{ident.text}'"


@diff_rule(
    "WF652",
    "service-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A service task calls another service.",
)
def service_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        task charge: service payments.charge { next done }

    New:

        task charge: service billing.charge { next done }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if (
            isinstance(old, sp.TaskNode)
            and isinstance(new, sp.TaskNode)
            and isinstance(old.work, sp.ServiceWork)
            and isinstance(new.work, sp.ServiceWork)
            and old.work.service.text != new.work.service.text
        ):
            yield changed(
                p,
                f"'{x.key}' now calls {new.work.service.text}, not {old.work.service.text}",
                new.work.service.span,
                was=old.work.service.span,
                key=key(f"node:{x.key}/service", old.work.service.text, new.work.service.text),
            )


@diff_rule(
    "WF662",
    "async-changed",
    level=BREAKING,
    category=INSTANCES,
    summary="A service task became async, or stopped being async: its handler answers otherwise.",
)
def async_changed(p: Pairing) -> Iterator[Finding]:
    """An async task's handler hands the work on and returns; the answer comes through
    the client with the task's token. A handler written for one way answers nothing, or
    is ignored, the other way: change the handler, or the system that answers, with it.

    Old:

        task charge: service payments.charge { next done }

    New:

        task charge: service payments.charge async { timeout 1h -> late next done }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if not (isinstance(old, sp.TaskNode) and isinstance(new, sp.TaskNode)):
            continue
        if not (isinstance(old.work, sp.ServiceWork) and isinstance(new.work, sp.ServiceWork)):
            continue
        if old.work.asynchronous != new.work.asynchronous:
            now = "async" if new.work.asynchronous else "no longer async"
            yield changed(
                p,
                f"'{x.key}' is {now}: its handler answers otherwise",
                new.work.span,
                was=old.work.span,
                key=key(f"node:{x.key}/async", str(old.work.asynchronous)),
            )


@diff_rule(
    "WF653",
    "join-changed",
    level=WARNING,
    category=INSTANCES,
    summary="A parallel waits for its branches in another way.",
)
def join_changed(p: Pairing) -> Iterator[Finding]:
    """Old:

        join all

    New:

        join any
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if (
            isinstance(old, sp.ParallelNode)
            and isinstance(new, sp.ParallelNode)
            and old.join != new.join
        ):
            yield changed(
                p,
                f"the join of '{x.key}' changed",
                new.join.span if new.join is not None else new.name.span,
                was=old.join.span if old.join is not None else old.name.span,
                key=key(f"node:{x.key}/join"),
            )


@diff_rule(
    "WF667",
    "first-arms-changed",
    level=BREAKING,
    category=INSTANCES,
    summary="A first waits for other events: an instance waiting there keeps the old arms.",
)
def first_arms_changed(p: Pairing) -> Iterator[Finding]:
    """An instance waiting at a ``first`` waits on a token per arm, with the
    subscriptions and timers its version made when it entered. Moved to the new
    version, it would never wait for an arm added there, and the token of an arm removed
    would wait for an event with no route. An arm is its event: a signal, a message with
    its correlation (by its parsed form: ``1d`` is ``24h``), an ``after`` or an ``until``
    (another route is WF643's business, and another duration or instant leaves a waiting
    instance's timer as it was set: the tokens still fit). Raise the version, so that
    waiting instances keep theirs.

    Old:

        first outcome { on signal approve -> ship  after 2d -> escalate }

    New:

        first outcome {
            on signal approve -> ship
            on signal reject -> cancelled
            after 2d -> escalate
        }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if not (isinstance(old, sp.FirstNode) and isinstance(new, sp.FirstNode)):
            continue
        before = {arm_event(a): a for a in old.arms}
        after = {arm_event(a): a for a in new.arms}
        for event, arm in after.items():
            if event not in before:
                yield changed(
                    p,
                    f"'{x.key}' now waits for {arm_key(arm)} too: instances waiting there do not",
                    arm.span,
                    was=old.name.span,
                    key=key(f"node:{x.key}/arm", arm_key(arm), "added"),
                )
        for event, arm in before.items():
            if event not in after:
                yield changed(
                    p,
                    f"'{x.key}' no longer waits for {arm_key(arm)}: instances waiting there "
                    "still do",
                    new.name.span,
                    was=arm.span,
                    key=key(f"node:{x.key}/arm", arm_key(arm), "removed"),
                )
