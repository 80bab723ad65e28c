"""What a step changed in the context: one record per field, with its old and new value.

A record is an RFC 6902 JSON Patch operation (``add``, ``replace`` or ``remove`` of
``/field``) that also carries the value it replaced (``old``), so that a history can
be read forwards (apply ``value``) and backwards (restore ``old``) without replaying
the workflow. The step function computes them once (``Step.changes``); the engine,
the test kit and both stores record what it gave, so they cannot disagree.

A step replaces the context, never changes it in place (``Run.follow``), so a step
that wrote nothing hands on the same dict and costs no comparison at all.
"""

from __future__ import annotations

from attrs import frozen

from wflang.runtime.ir import Value
from wflang.runtime.values import identical

ADD, REPLACE, REMOVE = "add", "replace", "remove"
_MISSING = object()
#: Values whose Python ``==`` is already the strict comparison (of the same type).
_PLAIN = frozenset((str, int, bool, type(None)))


@frozen(slots=False)
class Change:
    """A context field a step changed: ``op`` on ``path`` (``/field``, a JSON Pointer),
    from ``old`` (None when added) to ``value`` (None when removed)."""

    op: str
    path: str
    value: Value = None
    old: Value = None

    @property
    def field(self) -> str:
        return self.path[1:]


def context_changes(old: dict[str, Value], new: dict[str, Value]) -> tuple[Change, ...]:
    """The fields of ``new`` that differ from ``old``, in the new context's order (the
    fields ``old`` had and ``new`` has not after them). Values are compared strictly
    (``values.identical``): ``1`` replaced by ``true``, or ``1`` by ``1.0``, is a change.
    A field's name is an identifier, so its pointer needs no escaping (no ``/`` or ``~``)."""
    if new is old:
        return ()
    changes: list[Change] = []
    for name, value in new.items():
        before = old.get(name, _MISSING)
        if before is value:
            continue
        if before is _MISSING:
            changes.append(_change(ADD, "/" + name, value, None))
            continue
        kind = type(value)
        if before == value if kind is type(before) and kind in _PLAIN else identical(before, value):
            continue
        changes.append(_change(REPLACE, "/" + name, value, before))
    if len(old) > len(new) - sum(c.op == ADD for c in changes):
        changes.extend(_change(REMOVE, "/" + n, None, v) for n, v in old.items() if n not in new)
    return tuple(changes)


_new = object.__new__
_set_dict = object.__setattr__


def _change(op: str, path: str, value: object, old: object) -> Change:
    """A ``Change`` made from a dict of its fields, without the attrs constructor (about
    a third of the cost of a record; ``tests/test_records.py`` compares the two)."""
    made: Change = _new(Change)
    _set_dict(made, "__dict__", {"op": op, "path": path, "value": value, "old": old})
    return made
