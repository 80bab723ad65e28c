"""Expressions, and the events a ``first``'s arms wait for, by what they mean rather than
as they are written: ``1d`` is ``24h``, ``(input.id)`` is ``input.id``. One comparison
for ``wf check`` (WF366, an arm twice) and ``wf diff`` (WF666 and WF668, a correlation
changed; WF667, an arm added or removed), so that the two never disagree on whether two
arms are the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs

from wflang.dsl import expr as ex
from wflang.dsl import spec as sp

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def timestamp_ms(text: str) -> int:
    """Milliseconds since the epoch of an RFC 3339 timestamp literal, exactly (a float's
    ``timestamp() * 1000`` is a millisecond short for some instants); a finer fraction
    is cut off, towards the past. Here, not in ``lower`` (which writes it in the table),
    so that ``wf check`` compares instants without importing the lowering and the
    runtime's IR."""
    return (datetime.fromisoformat(text) - _EPOCH) // timedelta(milliseconds=1)


def same_expr(a: ex.Expr, b: ex.Expr) -> bool:
    """Whether two expressions are the same once parsed, however they are written:
    spans and parentheses take no part, and a literal is the value it stands for
    (``1d`` is ``24h``, an instant is the same in any offset). A decimal keeps its
    digits (``1.50`` is not ``1.5``): its text is what a string of it gives."""
    return parsed_form(a) == parsed_form(b)


def parsed_form(v: object) -> object:
    """An expression (or a part of one) as nested tuples of what it means, hashable: equal
    for two expressions ``same_expr`` finds the same."""
    if isinstance(v, ex.DurationLit):
        return ("duration", v.millis)
    if isinstance(v, ex.TimestampLit):
        try:  # as the table holds it (the parser took only a valid one)
            return ("timestamp", timestamp_ms(v.text))
        except ValueError:
            return ("timestamp", v.text)
    if isinstance(v, ex.DecimalLit):
        return ("decimal", str(v.value))
    if isinstance(v, tuple):
        return tuple(parsed_form(i) for i in v)
    cls = type(v)
    if attrs.has(cls):
        return (cls.__name__, *(parsed_form(getattr(v, f.name)) for f in attrs.fields(cls) if f.eq))
    return v


def arm_event(arm: sp.EventArm) -> object:
    """What an arm of a ``first`` waits for, hashable, equal for two arms that wait for the
    same event: a signal by its name, a message by its name and its correlation's parsed
    form, any ``after`` (the earlier timer always fires first, whatever the other's
    duration), and any ``until`` likewise (an ``after`` and an ``until`` may race: a
    delay against a deadline). ``model.arm_key`` says the same in words, for messages and
    fingerprints."""
    t = arm.trigger
    if isinstance(t, sp.SignalTrigger):
        return ("signal", t.signal.text)
    if isinstance(t, sp.MessageTrigger):
        return ("message", t.message.text, parsed_form(t.correlation))
    return ("until",) if isinstance(t, sp.UntilTrigger) else ("after",)
