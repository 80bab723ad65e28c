"""Diff rules for the events nodes catch and wait for (WF663-WF666, WF668): boundary
signals and messages, the correlation a message is waited for with, and what a ``wait``
waits for. A ``first``'s arms are WF667's (in ``policies``): there a changed correlation
is another arm.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from wflang.compiler.diff.pairing import Pairing
from wflang.compiler.diff.registry import diff_rule
from wflang.compiler.diff.rules.common import (
    BREAKING,
    CALLERS,
    INSTANCES,
    WARNING,
    changed,
    key,
    removed,
)
from wflang.compiler.meaning import same_expr
from wflang.compiler.registry import Finding
from wflang.dsl import spec as sp
from wflang.dsl.formatter import format_expr


def _events(node: sp.Node) -> dict[str, sp.OnEvent]:
    """A node's boundary events by what they catch: ``signal cancel``, ``message paid``."""
    return {f"{e.kind} {e.name.text}": e for e in getattr(node, "events", ())}


E = TypeVar("E")


def _kept(p: Pairing, of: Callable[[sp.Node], dict[str, E]]) -> Iterator[tuple[str, str, E, E]]:
    """What a node in both versions catches or waits for in both (``of`` a node, by what):
    the node's key, what, the old one and the new one, in the new version's order."""
    for x in p.nodes.both:
        old = of(x.old.node)
        for what, new in of(x.new.node).items():
            if what in old:
                yield x.key, what, old[what], new


@diff_rule(
    "WF663",
    "boundary-event-removed",
    level=BREAKING,
    category=CALLERS,
    summary="A node no longer catches a signal or message: senders no longer reach it.",
)
def boundary_event_removed(p: Pairing) -> Iterator[Finding]:
    """Whoever sends it to stop the node (or to start a side path beside it) is no
    longer heard there: the signal is buffered for a wait, or the message reaches nobody.

    Old:

        task pack: user "warehouse" { on signal cancel -> cancelled next ship }

    New:

        task pack: user "warehouse" { next ship }
    """
    for x in p.nodes.both:
        new = _events(x.new.node)
        for caught, event in _events(x.old.node).items():
            if caught not in new:
                yield removed(
                    p,
                    f"'{x.key}' no longer catches {caught}: senders of it no longer reach it",
                    was=event.span,
                    key=key(f"node:{x.key}/on {caught}"),
                )


@diff_rule(
    "WF664",
    "boundary-event-interrupting-changed",
    level=BREAKING,
    category=CALLERS,
    summary="A boundary signal or message now interrupts its node, or no longer does.",
)
def boundary_event_interrupting_changed(p: Pairing) -> Iterator[Finding]:
    """A sender that meant to nudge the node now cancels it, or one that meant to stop it
    now only starts a side path beside it.

    Old:

        task pack: user "warehouse" { on signal nudge non-interrupting -> remind next ship }

    New:

        task pack: user "warehouse" { on signal nudge -> remind next ship }
    """
    for node, caught, before, event in _kept(p, _events):
        if before.interrupting != event.interrupting:
            now = "interrupts" if event.interrupting else "no longer interrupts"
            yield changed(
                p,
                f"{caught} now {now} '{node}'",
                event.span,
                was=before.span,
                key=key(f"node:{node}/on {caught}", event.interrupting),
            )


@diff_rule(
    "WF665",
    "boundary-event-added",
    level=WARNING,
    category=CALLERS,
    summary="A node catches a signal or message it did not catch before.",
)
def boundary_event_added(p: Pairing) -> Iterator[Finding]:
    """A signal sent while the node is active was buffered for a wait (a message reached
    no one); now it stops the node or starts a side path: review who sends it. An
    instance already at the node does not catch it until it enters the node again.

    Old:

        task pack: user "warehouse" { next ship }

    New:

        task pack: user "warehouse" { on signal cancel -> cancelled next ship }
    """
    for x in p.nodes.both:
        old = _events(x.old.node)
        for caught, event in _events(x.new.node).items():
            if caught not in old:
                how = "" if event.interrupting else " (non-interrupting)"
                yield Finding(
                    f"'{x.key}' now catches {caught}{how}: review who sends it",
                    event.span,
                    key=key(f"node:{x.key}/on {caught}"),
                )


def _correlations(node: sp.Node) -> dict[str, sp.MessageTrigger]:
    """Where a node waits for a message, by what it waits for (``message paid`` for a
    wait, ``on message paid`` for a boundary event), with its correlation."""
    found: dict[str, sp.MessageTrigger] = {}
    if isinstance(node, sp.WaitNode) and isinstance(node.trigger, sp.MessageTrigger):
        found[f"message {node.trigger.message.text}"] = node.trigger
    for caught, event in _events(node).items():
        if isinstance(event.trigger, sp.MessageTrigger):
            found[f"on {caught}"] = event.trigger
    return found


@diff_rule(
    "WF666",
    "message-correlation-changed",
    level=BREAKING,
    category=CALLERS,
    summary="A wait or boundary event hears a message by another correlation.",
)
def message_correlation_changed(p: Pairing) -> Iterator[Finding]:
    """Publishers must now send the new key, or the message reaches no one (as a
    removed boundary event, WF663); and an instance already waiting keeps the
    subscription it made with the old expression's value, so a publisher sending the
    new key misses it. Raise the version, so that waiting instances keep theirs. The
    expressions are compared by their parsed form, not their text: ``(input.a)`` is
    ``input.a``, and ``string(input.at + 1d)`` is ``string(input.at + 24h)``. On a
    ``first``, another correlation is another arm (WF667).

    Old:

        wait paid: message payment correlate input.order_id { next ship }

    New:

        wait paid: message payment correlate input.invoice_id { next ship }
    """
    for node, waits, before, trigger in _kept(p, _correlations):
        if not same_expr(before.correlation, trigger.correlation):
            was, now = format_expr(before.correlation), format_expr(trigger.correlation)
            yield changed(
                p,
                f"'{node}' now correlates message {trigger.message.text} by {now} "
                f"(was {was}): publishers must send the new key, and instances already "
                "waiting keep the old one's value",
                trigger.correlation.span,
                was=before.correlation.span,
                key=key(f"node:{node}/{waits}/correlate", was, now),
            )


def _waited(trigger: sp.WaitTrigger) -> str:
    """What a wait waits for, as a finding's key holds it: ``signal approved``,
    ``message payment`` (its correlation is WF666's), ``until`` (its instant is not
    this rule's)."""
    if isinstance(trigger, sp.SignalTrigger):
        return f"signal {trigger.signal.text}"
    if isinstance(trigger, sp.MessageTrigger):
        return f"message {trigger.message.text}"
    return "until"


def _waits(trigger: sp.WaitTrigger) -> str:
    """``for signal approved``, ``until input.ship_by``: for a finding's message."""
    if isinstance(trigger, sp.UntilTrigger):
        return f"until {format_expr(trigger.at)}"
    return f"for {_waited(trigger)}"


@diff_rule(
    "WF668",
    "wait-event-changed",
    level=BREAKING,
    category=INSTANCES,
    summary="A wait waits for another event: instances parked there still wait for the old.",
)
def wait_event_changed(p: Pairing) -> Iterator[Finding]:
    """An instance parked at a ``wait`` waits on a token its version made when it
    entered: for the signal or message by its name (and correlation), or for a timer.
    Moved to the new version, it still waits for the old event, which senders may no
    longer send, and does not hear the new one; a timer it waited on still fires and it
    goes on without the event. Raise the version, so that parked instances keep theirs.
    A message's other correlation is WF666's; another instant (``until``) leaves a parked
    instance's timer as it was set, as another ``after`` on a ``first`` does (WF667).

    Old:

        wait approval: signal approved { next ship }

    New:

        wait approval: signal confirmed { next ship }
    """
    for x in p.nodes.both:
        old, new = x.old.node, x.new.node
        if not (isinstance(old, sp.WaitNode) and isinstance(new, sp.WaitNode)):
            continue
        was, now = _waited(old.trigger), _waited(new.trigger)
        if was == now:
            continue
        if isinstance(old.trigger, sp.UntilTrigger):
            parked = f"still wait for their timer, and go on when it fires without {now}"
        elif isinstance(new.trigger, sp.UntilTrigger):
            parked = f"still wait for {was}, and no timer is set for them"
        else:
            parked = f"still wait for {was}, and {now} does not reach them"
        yield changed(
            p,
            f"'{x.key}' now waits {_waits(new.trigger)}, not {_waits(old.trigger)}: "
            f"instances parked there {parked}",
            new.trigger.span,
            was=old.trigger.span,
            key=key(f"node:{x.key}/waits", was, now),
        )
